package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/metrics/haproxy"
)

func TestMetricsDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Metrics
	want := Metrics{
		ListenAddr:                "0.0.0.0:1936",
		Type:                      MetricsTypeHAProxy,
		HAProxyServerThreshold:    500,
		HAProxyExported:           haproxy.DefaultColumns(),
		HAProxyBaseScrapeInterval: 5 * time.Second,
		HAProxyTimeout:            5 * time.Second,
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", m, want)
	}
	// The documented list (table 5.2) is part of the default.
	for _, i := range []int{2, 4, 5, 7, 8, 9, 13, 14, 17, 21, 24, 33, 35, 40, 43, 60} {
		found := false
		for _, j := range m.HAProxyExported {
			found = found || i == j
		}
		if !found {
			t.Errorf("default columns %v lack %d", m.HAProxyExported, i)
		}
	}
}

func TestMetricsValuesAreParsed(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"ROUTER_LISTEN_ADDR":                          "127.0.0.1:19360",
		"ROUTER_METRICS_TYPE":                         "none",
		"ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD":     "20",
		"ROUTER_METRICS_HAPROXY_EXPORTED":             " 4, 7,40 ",
		"ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL": "2",
		"ROUTER_METRICS_HAPROXY_TIMEOUT":              "1500ms",
		"ROUTER_METRICS_TLS_CERT_FILE":                "/etc/tls/tls.crt",
		"ROUTER_METRICS_TLS_KEY_FILE":                 "/etc/tls/tls.key",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{
		ListenAddr:                "127.0.0.1:19360",
		Type:                      MetricsTypeNone,
		HAProxyServerThreshold:    20,
		HAProxyExported:           []int{4, 7, 40},
		HAProxyBaseScrapeInterval: 2 * time.Second,
		HAProxyTimeout:            1500 * time.Millisecond,
		TLSCertFile:               "/etc/tls/tls.crt",
		TLSKeyFile:                "/etc/tls/tls.key",
	}
	if !reflect.DeepEqual(c.Metrics, want) {
		t.Fatalf("\n got %+v\nwant %+v", c.Metrics, want)
	}
	for _, addr := range []string{":1936", "[::1]:1936", "localhost:0"} {
		c, err := FromEnv(env(map[string]string{"ROUTER_LISTEN_ADDR": addr}))
		if err != nil || c.Metrics.ListenAddr != addr {
			t.Errorf("ROUTER_LISTEN_ADDR=%q: %v %+v", addr, err, c)
		}
	}
	if c, err := FromEnv(env(map[string]string{"ROUTER_METRICS_TYPE": "haproxy"})); err != nil || c.Metrics.Type != MetricsTypeHAProxy {
		t.Errorf("ROUTER_METRICS_TYPE=haproxy: %v", err)
	}
}

func TestMetricsMalformedValuesNameTheVariable(t *testing.T) {
	cases := []struct{ name, value, mention string }{
		{"ROUTER_LISTEN_ADDR", "1936", "host:port"},
		{"ROUTER_LISTEN_ADDR", "0.0.0.0:http", "host:port"},
		{"ROUTER_LISTEN_ADDR", "0.0.0.0:70000", "host:port"},
		{"ROUTER_METRICS_TYPE", "statsd", "none"},
		{"ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD", "many", "positive"},
		{"ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD", "0", "positive"},
		{"ROUTER_METRICS_HAPROXY_EXPORTED", "2,four", `"four" is not a number`},
		{"ROUTER_METRICS_HAPROXY_EXPORTED", "2,1", "column 1 is not an exportable"},
		{"ROUTER_METRICS_HAPROXY_EXPORTED", "2,200", "column 200"},
		{"ROUTER_METRICS_HAPROXY_EXPORTED", "7,7", "twice"},
		{"ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL", "0s", "positive"},
		{"ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL", "often", "duration"},
		{"ROUTER_METRICS_HAPROXY_TIMEOUT", "0", "positive"},
		{"ROUTER_METRICS_HAPROXY_TIMEOUT", "-1s", "duration"},
		{"ROUTER_METRICS_TLS_CERT_FILE", "/etc/tls/tls.crt", "ROUTER_METRICS_TLS_KEY_FILE"},
		{"ROUTER_METRICS_TLS_KEY_FILE", "/etc/tls/tls.key", "ROUTER_METRICS_TLS_CERT_FILE"},
	}
	for _, c := range cases {
		_, err := FromEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s=%q: error %v does not name the variable and say %q", c.name, c.value, err, c.mention)
		}
	}
	// All problems are reported together.
	_, err := FromEnv(env(map[string]string{"ROUTER_METRICS_TYPE": "x", "ROUTER_METRICS_HAPROXY_TIMEOUT": "y"}))
	if err == nil || !strings.Contains(err.Error(), "ROUTER_METRICS_TYPE") || !strings.Contains(err.Error(), "ROUTER_METRICS_HAPROXY_TIMEOUT") {
		t.Errorf("errors not reported together: %v", err)
	}
}
