package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/openshift-router-go/router/metrics/haproxy"
)

// Metrics types accepted in ROUTER_METRICS_TYPE.
const (
	MetricsTypeHAProxy = "haproxy"
	MetricsTypeNone    = "none"
)

// Metrics holds the settings of the metrics and health server.
type Metrics struct {
	// ListenAddr is ROUTER_LISTEN_ADDR (host:port) of the metrics and
	// health server; default 0.0.0.0:1936.
	ListenAddr string
	// Type is ROUTER_METRICS_TYPE: "haproxy" (default) exports HAProxy's
	// statistics, "none" only the router's own metrics.
	Type string
	// HAProxyServerThreshold is ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD:
	// above this many servers, backends are reported instead of servers.
	HAProxyServerThreshold int
	// HAProxyExported is ROUTER_METRICS_HAPROXY_EXPORTED: the CSV column
	// indices to export (default haproxy.DefaultColumns()).
	HAProxyExported []int
	// HAProxyBaseScrapeInterval is ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL.
	HAProxyBaseScrapeInterval time.Duration
	// HAProxyTimeout is ROUTER_METRICS_HAPROXY_TIMEOUT: the bound on one
	// request for statistics.
	HAProxyTimeout time.Duration
	// TLSCertFile and TLSKeyFile are ROUTER_METRICS_TLS_CERT_FILE and
	// ROUTER_METRICS_TLS_KEY_FILE: HTTPS for the server (both or neither).
	TLSCertFile string
	TLSKeyFile  string
}

// metrics reads the settings of the metrics and health server.
func (p *parser) metrics() Metrics {
	m := Metrics{
		ListenAddr:                p.listenAddr("ROUTER_LISTEN_ADDR", "0.0.0.0:1936"),
		Type:                      p.metricsType("ROUTER_METRICS_TYPE"),
		HAProxyServerThreshold:    p.positive("ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD", haproxy.DefaultServerThreshold),
		HAProxyExported:           p.columns("ROUTER_METRICS_HAPROXY_EXPORTED"),
		HAProxyBaseScrapeInterval: p.positiveDuration("ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL", haproxy.DefaultBaseScrapeInterval),
		HAProxyTimeout:            p.positiveDuration("ROUTER_METRICS_HAPROXY_TIMEOUT", haproxy.DefaultTimeout),
		TLSCertFile:               p.str("ROUTER_METRICS_TLS_CERT_FILE", ""),
		TLSKeyFile:                p.str("ROUTER_METRICS_TLS_KEY_FILE", ""),
	}
	if (m.TLSCertFile == "") != (m.TLSKeyFile == "") {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_METRICS_TLS_CERT_FILE and ROUTER_METRICS_TLS_KEY_FILE must be set together"))
	}
	return m
}

func (p *parser) metricsType(name string) string {
	v, _ := p.getenv(name)
	switch strings.TrimSpace(v) {
	case "", MetricsTypeHAProxy:
		return MetricsTypeHAProxy
	case MetricsTypeNone:
		return MetricsTypeNone
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: want %q or %q", name, v, MetricsTypeHAProxy, MetricsTypeNone))
	return MetricsTypeHAProxy
}

// listenAddr parses host:port (host may be empty for all interfaces).
func (p *parser) listenAddr(name, def string) string {
	v, ok := p.getenv(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return def
	}
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port out of range")
		}
	}
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want host:port such as 0.0.0.0:1936 or 127.0.0.1:1936", name, v))
		return def
	}
	return v
}

// positiveDuration reads a positive duration; a malformed one is a
// start-up error, as in OpenShift's router (ROUTER_METRICS_HAPROXY_*).
func (p *parser) positiveDuration(name string, def time.Duration) time.Duration {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if n, aerr := strconv.Atoi(strings.TrimSpace(v)); aerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d <= 0 {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a positive duration such as 5s", name, v))
		return def
	}
	return d
}

// columns parses a comma-separated list of HAProxy CSV column indices.
func (p *parser) columns(name string) []int {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return haproxy.DefaultColumns()
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want comma-separated column indices such as 2,4,5,7 (%q is not a number)", name, v, f))
			return haproxy.DefaultColumns()
		}
		out = append(out, n)
	}
	if err := haproxy.ValidateColumns(out); err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: %v", name, v, err))
		return haproxy.DefaultColumns()
	}
	return out
}
