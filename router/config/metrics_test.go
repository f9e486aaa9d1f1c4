package config

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
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
		ListenNetwork:             "tcp",
		HAProxyServerThreshold:    500,
		HAProxyExported:           haproxy.DefaultColumns(),
		HAProxyBaseScrapeInterval: 5 * time.Second,
		HAProxyTimeout:            5 * time.Second,
		TLSMinVersion:             tls.VersionTLS12,
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", m, want)
	}
	// Nothing set: not metrics mode; HAProxy's stats listener on 1936
	// answers /healthz only, as OpenShift's template.
	if m.Enabled() {
		t.Error("metrics mode without ROUTER_METRICS_TYPE")
	}
	if port, user, pass := c.TemplateStats(); port != 0 || user != "" || pass != "" {
		t.Errorf("template stats %d %q %q, want 0 and no credentials", port, user, pass)
	}
	// OpenShift's router's default columns, 79 and 85 included.
	if got := fmt.Sprint(m.HAProxyExported); got != "[2 4 5 7 8 9 13 14 17 21 24 33 35 39 40 41 42 43 44 58 59 60 79 85]" {
		t.Errorf("default columns %s", got)
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
		"ROUTER_METRICS_HAPROXY_PID_FILE":             "/run/haproxy.pid",
		"ROUTER_METRICS_TLS_CERT_FILE":                "/etc/tls/tls.crt",
		"ROUTER_METRICS_TLS_KEY_FILE":                 "/etc/tls/tls.key",
		"ROUTER_METRICS_TLS_CIPHERS":                  "TLS_AES_128_GCM_SHA256:TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: TLS_RSA_WITH_AES_128_CBC_SHA",
		"ROUTER_METRICS_TLS_MIN_VERSION":              "VersionTLS13",
		"ROUTER_METRICS_TLS_CURVES":                   "X25519MLKEM768,secp256r1:X25519",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{
		ListenAddr:                "127.0.0.1:19360",
		ListenNetwork:             "tcp",
		Type:                      MetricsTypeNone,
		HAProxyServerThreshold:    20,
		HAProxyExported:           []int{4, 7, 40},
		HAProxyBaseScrapeInterval: 2 * time.Second,
		HAProxyTimeout:            1500 * time.Millisecond,
		HAProxyPIDFile:            "/run/haproxy.pid",
		TLSCertFile:               "/etc/tls/tls.crt",
		TLSKeyFile:                "/etc/tls/tls.key",
		TLSCipherSuites:           []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_CBC_SHA},
		TLSMinVersion:             tls.VersionTLS13,
		TLSCurves:                 []tls.CurveID{tls.X25519MLKEM768, tls.CurveP256, tls.X25519},
	}
	if !reflect.DeepEqual(c.Metrics, want) {
		t.Fatalf("\n got %+v\nwant %+v", c.Metrics, want)
	}
	for _, v := range []string{"VersionTLS10", "VersionTLS11", "VersionTLS12"} {
		if _, err := FromEnv(env(map[string]string{"ROUTER_METRICS_TLS_MIN_VERSION": v})); err != nil {
			t.Errorf("ROUTER_METRICS_TLS_MIN_VERSION=%s: %v", v, err)
		}
	}
}

// TestStatsPortAndListenAddrDerivation: OpenShift's rules for the stats
// port, the metrics server's address and metrics mode.
func TestStatsPortAndListenAddrDerivation(t *testing.T) {
	cases := []struct {
		name         string
		env          map[string]string
		statsPort    int
		addr, netw   string
		enabled      bool
		templatePort int
	}{
		{"nothing set: HAProxy's listener on 1936 for /healthz", nil, 0, "", "tcp", false, 0},
		{"STATS_PORT alone is HAProxy's stats port", map[string]string{"STATS_PORT": "1937"}, 1937, "0.0.0.0:1937", "tcp", false, 1937},
		{"metrics type without a port: no metrics server", map[string]string{"ROUTER_METRICS_TYPE": "haproxy"}, 0, "", "tcp", false, 0},
		{"STATS_PORT=0 with metrics type: none", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "0"}, 0, "", "tcp", false, 0},
		{"ingress operator: metrics on 0.0.0.0:STATS_PORT", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936"}, 1936, "0.0.0.0:1936", "tcp", true, -1},
		{"ROUTER_LISTEN_ADDR's port wins over STATS_PORT", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "127.0.0.1:9936"}, 9936, "127.0.0.1:9936", "tcp", true, -1},
		{"oc adm router: same port in both", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936"}, 1936, "0.0.0.0:1936", "tcp", true, -1},
		{"ROUTER_LISTEN_ADDR port 0: no metrics server", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "127.0.0.1:0"}, 0, "", "tcp", false, 0},
		{"ROUTER_LISTEN_ADDR without metrics type: HAProxy on its port", map[string]string{"ROUTER_LISTEN_ADDR": "0.0.0.0:1940"}, 1940, "0.0.0.0:1940", "tcp", false, 1940},
		{"none extension behaves like metrics mode", map[string]string{"ROUTER_METRICS_TYPE": "none", "STATS_PORT": "1936"}, 1936, "0.0.0.0:1936", "tcp", true, -1},
		{"v6: IPv6 only", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936", "ROUTER_IP_V4_V6_MODE": "v6"}, 1936, "[::]:1936", "tcp6", true, -1},
		{"v4v6: both stacks", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1936", "ROUTER_IP_V4_V6_MODE": "v4v6"}, 1936, ":1936", "tcp", true, -1},
		{"empty host follows the IP mode", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "ROUTER_LISTEN_ADDR": ":1936", "ROUTER_IP_V4_V6_MODE": "v6"}, 1936, "[::]:1936", "tcp6", true, -1},
		{"explicit host kept in v6 mode", map[string]string{"ROUTER_METRICS_TYPE": "haproxy", "ROUTER_LISTEN_ADDR": "[::1]:1936", "ROUTER_IP_V4_V6_MODE": "v6"}, 1936, "[::1]:1936", "tcp", true, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.StatsPort != tc.statsPort || c.Metrics.ListenAddr != tc.addr || c.Metrics.ListenNetwork != tc.netw || c.Metrics.Enabled() != tc.enabled {
				t.Errorf("stats port %d, addr %q %s, metrics mode %v; want %d, %q %s, %v",
					c.StatsPort, c.Metrics.ListenAddr, c.Metrics.ListenNetwork, c.Metrics.Enabled(), tc.statsPort, tc.addr, tc.netw, tc.enabled)
			}
			if port, _, _ := c.TemplateStats(); port != tc.templatePort {
				t.Errorf("template StatsPort %d, want %d", port, tc.templatePort)
			}
		})
	}
	// Malformed: fatal as in OpenShift's router, naming the variable.
	for _, e := range []map[string]string{
		{"STATS_PORT": "abc"},
		{"STATS_PORT": "abc", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936"},
		{"STATS_PORT": "70000"},
	} {
		if _, err := FromEnv(env(e)); err == nil || !strings.Contains(err.Error(), "STATS_PORT") {
			t.Errorf("%v: error %v", e, err)
		}
	}
}

// TestStatsCredentials: files win when both are set (one trailing newline
// stripped), a file that cannot be read is fatal, credentials are
// optional, and credentials that cannot be one haproxy.config word are not
// given to the template.
func TestStatsCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	userFile, passFile := write("user", "dXNlcmFiYw==\n"), write("pass", "cGFzc3h5eg==\r\n")
	base := map[string]string{"STATS_PORT": "1937", "STATS_USERNAME": "plain", "STATS_PASSWORD": "plainpw"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name       string
		env        map[string]string
		user, pass string
		warn       bool
	}{
		{"plain variables", base, "plain", "plainpw", false},
		{"both files win", with("STATS_USERNAME_FILE", userFile, "STATS_PASSWORD_FILE", passFile), "dXNlcmFiYw==", "cGFzc3h5eg==", false},
		{"one file alone is ignored", with("STATS_USERNAME_FILE", userFile), "plain", "plainpw", true},
		{"files without plain variables", map[string]string{"STATS_PORT": "1937", "STATS_USERNAME_FILE": userFile, "STATS_PASSWORD_FILE": passFile}, "dXNlcmFiYw==", "cGFzc3h5eg==", false},
		{"no credentials at all", map[string]string{"STATS_PORT": "1937"}, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.StatsUser != tc.user || c.StatsPassword != tc.pass {
				t.Errorf("credentials %q %q, want %q %q", c.StatsUser, c.StatsPassword, tc.user, tc.pass)
			}
			if got := len(c.Warnings) > 0; got != tc.warn {
				t.Errorf("warnings %q, want some: %v", c.Warnings, tc.warn)
			}
			if port, u, p := c.TemplateStats(); port != 1937 || u != tc.user || p != tc.pass {
				t.Errorf("template stats %d %q %q", port, u, p)
			}
		})
	}
	if _, err := FromEnv(env(with("STATS_USERNAME_FILE", filepath.Join(dir, "missing"), "STATS_PASSWORD_FILE", passFile))); err == nil || !strings.Contains(err.Error(), "STATS_USERNAME_FILE") {
		t.Errorf("unreadable file: %v", err)
	}
	// Unsafe for haproxy.config: accepted (the metrics server can still
	// use them), warned about, and not rendered.
	for _, bad := range [][2]string{{"a b", "pw"}, {"user", "p#w"}, {"us:er", "pw"}, {"user", "p\"w"}, {"user", "pw\nglobal"}} {
		c, err := FromEnv(env(map[string]string{"STATS_PORT": "1937", "STATS_USERNAME": bad[0], "STATS_PASSWORD": bad[1]}))
		if err != nil {
			t.Fatalf("%q: %v", bad, err)
		}
		if len(c.Warnings) == 0 {
			t.Errorf("%q: no warning", bad)
		}
		if port, u, p := c.TemplateStats(); port != 1937 || u != "" || p != "" {
			t.Errorf("%q: template gets %d %q %q", bad, port, u, p)
		}
	}
	// A password with ':' is fine (HAProxy splits at the first one).
	if c, err := FromEnv(env(map[string]string{"STATS_PORT": "1937", "STATS_USERNAME": "u", "STATS_PASSWORD": "p:w+/="})); err != nil || len(c.Warnings) != 0 {
		t.Errorf("password with ':': %v %q", err, c.Warnings)
	}
}

func TestMetricsMalformedValuesNameTheVariable(t *testing.T) {
	cases := []struct{ name, value, mention string }{
		{"ROUTER_LISTEN_ADDR", "1936", "host:port"},
		{"ROUTER_LISTEN_ADDR", "0.0.0.0:http", "host:port"},
		{"ROUTER_LISTEN_ADDR", "0.0.0.0:70000", "host:port"},
		{"ROUTER_METRICS_TYPE", "statsd", "supported metrics types are"},
		{"ROUTER_METRICS_TLS_CIPHERS", "TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
		{"ROUTER_METRICS_TLS_MIN_VERSION", "TLSv1.2", "VersionTLS12"},
		{"ROUTER_METRICS_TLS_CURVES", "X25519,P-256", "P-256"},
		{"ROUTER_METRICS_TLS_CURVES", ", :", "no valid curves"},
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

func TestScrapeURIAndReadyHTTPURLAreCheckedAndABadOneIsAWarning(t *testing.T) {
	tests := []struct {
		name, value string
		want        string
	}{
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "", ""},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "unix:///var/lib/haproxy/run/haproxy.sock", "unix:///var/lib/haproxy/run/haproxy.sock"},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "http://admin:pw@127.0.0.1:1936/;csv", "http://admin:pw@127.0.0.1:1936/;csv"},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "https://stats.example.com/haproxy?stats;csv", "https://stats.example.com/haproxy?stats;csv"},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "/var/lib/haproxy/run/haproxy.sock", ""},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "unix://relative.sock", ""},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "file:///tmp/stats.csv", ""},
		{"ROUTER_METRICS_HAPROXY_SCRAPE_URI", "http://%zz", ""},
		{"ROUTER_METRICS_READY_HTTP_URL", "", ""},
		{"ROUTER_METRICS_READY_HTTP_URL", "http://localhost:80/_______internal_router_healthz", "http://localhost:80/_______internal_router_healthz"},
		{"ROUTER_METRICS_READY_HTTP_URL", "localhost:80/healthz", ""},
		{"ROUTER_METRICS_READY_HTTP_URL", "ftp://localhost/x", ""},
	}
	for _, tc := range tests {
		c, err := FromEnv(env(map[string]string{tc.name: tc.value}))
		if err != nil {
			t.Fatalf("%s=%q: refused: %v", tc.name, tc.value, err)
		}
		got := c.Metrics.HAProxyScrapeURI
		if tc.name == "ROUTER_METRICS_READY_HTTP_URL" {
			got = c.Metrics.ReadyHTTPURL
		}
		if got != tc.want {
			t.Errorf("%s=%q: %q, want %q", tc.name, tc.value, got, tc.want)
		}
		warned := false
		for _, w := range c.Warnings {
			warned = warned || strings.HasPrefix(w, tc.name+"=")
		}
		if wantWarn := tc.value != "" && tc.want == ""; warned != wantWarn {
			t.Errorf("%s=%q: warned %v, want %v (%q)", tc.name, tc.value, warned, wantWarn, c.Warnings)
		}
	}
}
