package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openshift-router-go/router/metrics/haproxy"
)

// Metrics types accepted in ROUTER_METRICS_TYPE.
const (
	// MetricsTypeHAProxy is OpenShift's metrics mode: the router's own
	// metrics and health server, exporting HAProxy's statistics.
	MetricsTypeHAProxy = "haproxy"
	// MetricsTypeNone is this router's extension: the metrics and health
	// server with the router's own metrics only.
	MetricsTypeNone = "none"
)

// DefaultStatsPort is the port of HAProxy's stats listener when no stats
// port is configured (as OpenShift's template).
const DefaultStatsPort = 1936

// Metrics holds the settings of the metrics and health server.
type Metrics struct {
	// ListenAddr is where the metrics and health server listens in metrics
	// mode: ROUTER_LISTEN_ADDR, else 0.0.0.0:$STATS_PORT ([::]:$STATS_PORT
	// with ROUTER_IP_V4_V6_MODE=v6, :$STATS_PORT on both stacks with v4v6);
	// "" when neither is set.
	ListenAddr string
	// ListenNetwork is the network of ListenAddr: "tcp", or "tcp6" for
	// IPv6 only.
	ListenNetwork string
	// Type is ROUTER_METRICS_TYPE: "" (unset), "haproxy" or "none".
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
	// HAProxyScrapeURI is ROUTER_METRICS_HAPROXY_SCRAPE_URI: where HAProxy's
	// statistics are read, "unix:///path/to/stats.sock" (the runtime API's
	// "show stat") or an http(s) URL answering HAProxy's CSV (a stats page
	// with ";csv"); "" is the router's own runtime socket (OpenShift's
	// default, unix:///var/lib/haproxy/run/haproxy.sock).
	HAProxyScrapeURI string
	// ReadyHTTPURL is ROUTER_METRICS_READY_HTTP_URL: when set, readiness
	// also GETs this URL ("backend-http", 2 s, any 2xx or 3xx answer is
	// ready; with ROUTER_USE_PROXY_PROTOCOL a PROXY header first, as
	// OpenShift's "backend-proxy-http"). "": no such check.
	ReadyHTTPURL string
	// HAProxyPIDFile is ROUTER_METRICS_HAPROXY_PID_FILE: HAProxy's pid file
	// for the haproxy_process_* metrics; "" means <working dir>/run/haproxy.pid.
	HAProxyPIDFile string
	// TLSCertFile and TLSKeyFile are ROUTER_METRICS_TLS_CERT_FILE and
	// ROUTER_METRICS_TLS_KEY_FILE: HTTPS for the server (both or neither).
	TLSCertFile string
	TLSKeyFile  string
	// TLSCipherSuites is ROUTER_METRICS_TLS_CIPHERS (IANA names, ':'
	// separated); nil: Go's defaults.
	TLSCipherSuites []uint16
	// TLSMinVersion is ROUTER_METRICS_TLS_MIN_VERSION (default TLS 1.2).
	TLSMinVersion uint16
	// TLSCurves is ROUTER_METRICS_TLS_CURVES; nil: Go's defaults.
	TLSCurves []tls.CurveID
}

// Enabled reports metrics mode: the router's metrics and health server
// runs (and HAProxy's own stats listener is not rendered) when
// ROUTER_METRICS_TYPE is haproxy (or this router's none) and the stats
// port is not 0, as in OpenShift's router.
func (m Metrics) Enabled() bool {
	return (m.Type == MetricsTypeHAProxy || m.Type == MetricsTypeNone) && m.ListenAddr != ""
}

// metrics reads the settings of the metrics and health server, except the
// listen address, which stats() derives.
func (p *parser) metrics() Metrics {
	m := Metrics{
		Type:                      p.metricsType("ROUTER_METRICS_TYPE"),
		HAProxyServerThreshold:    p.positive("ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD", haproxy.DefaultServerThreshold),
		HAProxyExported:           p.columns("ROUTER_METRICS_HAPROXY_EXPORTED"),
		HAProxyBaseScrapeInterval: p.positiveDuration("ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL", haproxy.DefaultBaseScrapeInterval),
		HAProxyTimeout:            p.positiveDuration("ROUTER_METRICS_HAPROXY_TIMEOUT", haproxy.DefaultTimeout),
		HAProxyPIDFile:            p.str("ROUTER_METRICS_HAPROXY_PID_FILE", ""),
		HAProxyScrapeURI:          p.scrapeURI("ROUTER_METRICS_HAPROXY_SCRAPE_URI"),
		ReadyHTTPURL:              p.httpURL("ROUTER_METRICS_READY_HTTP_URL"),
		TLSCertFile:               p.str("ROUTER_METRICS_TLS_CERT_FILE", ""),
		TLSKeyFile:                p.str("ROUTER_METRICS_TLS_KEY_FILE", ""),
		TLSCipherSuites:           p.tlsCipherSuites("ROUTER_METRICS_TLS_CIPHERS"),
		TLSMinVersion:             p.tlsVersion("ROUTER_METRICS_TLS_MIN_VERSION", tls.VersionTLS12),
		TLSCurves:                 p.tlsCurves("ROUTER_METRICS_TLS_CURVES"),
	}
	if (m.TLSCertFile == "") != (m.TLSKeyFile == "") {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_METRICS_TLS_CERT_FILE and ROUTER_METRICS_TLS_KEY_FILE must be set together"))
	}
	return m
}

// stats derives the stats port, the metrics server's address and the stats
// credentials as OpenShift's router does:
//
//   - STATS_PORT must be a number (0 or unset: none);
//   - ROUTER_LISTEN_ADDR (host:port), if set, is the metrics server's
//     address and its port is the stats port, whatever STATS_PORT says;
//   - otherwise a non-zero STATS_PORT gives 0.0.0.0:$STATS_PORT
//     (IPv6 and dual-stack variants by ROUTER_IP_V4_V6_MODE);
//   - STATS_USERNAME_FILE and STATS_PASSWORD_FILE, when both are set, are
//     read (one trailing newline stripped) and win over STATS_USERNAME and
//     STATS_PASSWORD; a file that cannot be read is a start-up error.
//
// It runs after metrics() and haproxy() (it needs the IP mode).
func (p *parser) stats(c *Config) {
	statsPort := 0
	if v, ok := p.getenv("STATS_PORT"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 65535 {
			p.errs = append(p.errs, fmt.Errorf("STATS_PORT=%q: want a port number (0 for none)", v))
		} else {
			statsPort = n
		}
	}
	m := &c.Metrics
	m.ListenNetwork = "tcp"
	if v, ok := p.getenv("ROUTER_LISTEN_ADDR"); ok && strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		host, port, err := net.SplitHostPort(v)
		n := 0
		if err == nil {
			n, err = strconv.Atoi(port)
			if err == nil && (n < 0 || n > 65535) {
				err = fmt.Errorf("port out of range")
			}
		}
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("ROUTER_LISTEN_ADDR=%q: want host:port such as 0.0.0.0:1936 or 127.0.0.1:1936", v))
		} else {
			statsPort = n
			if n != 0 {
				m.ListenAddr = v
				if host == "" {
					m.ListenAddr, m.ListenNetwork = wildcardAddr(c.HAProxy.IPMode, n)
				}
			}
		}
	} else if statsPort != 0 {
		m.ListenAddr, m.ListenNetwork = wildcardAddr(c.HAProxy.IPMode, statsPort)
	}
	c.StatsPort = statsPort

	c.StatsUser, c.StatsPassword = p.str("STATS_USERNAME", ""), p.str("STATS_PASSWORD", "")
	userFile, passFile := p.str("STATS_USERNAME_FILE", ""), p.str("STATS_PASSWORD_FILE", "")
	if userFile != "" && passFile != "" {
		c.StatsUser = p.secretFile("STATS_USERNAME_FILE", userFile)
		c.StatsPassword = p.secretFile("STATS_PASSWORD_FILE", passFile)
	} else if userFile != "" || passFile != "" {
		p.warnings = append(p.warnings, "STATS_USERNAME_FILE and STATS_PASSWORD_FILE are only read together (as OpenShift's router); using STATS_USERNAME and STATS_PASSWORD")
	}
	if !m.Enabled() && c.StatsUser != "" && c.StatsPassword != "" && c.StatsPort > 0 && !StatsCredentialsRenderable(c.StatsUser, c.StatsPassword) {
		p.warnings = append(p.warnings, "the stats user name or password contains characters that cannot be written into haproxy.config as one word (spaces, quotes, '#', '\\', '$', control characters, or ':' in the user name); HAProxy's stats page is not rendered")
	}
	// Outside metrics mode HAProxy's stats listener binds 1936 when no
	// stats port is given: that port must not be the HTTP/HTTPS port
	// either (HAProxy would bind it twice and split the connections).
	effective := c.StatsPort
	if effective == 0 && !m.Enabled() {
		effective = DefaultStatsPort
	}
	if effective > 0 && (effective == c.HTTPPort || effective == c.HTTPSPort) {
		p.errs = append(p.errs, fmt.Errorf("stats port %d (STATS_PORT or ROUTER_LISTEN_ADDR; 1936 without them) collides with ROUTER_SERVICE_HTTP_PORT or ROUTER_SERVICE_HTTPS_PORT", effective))
	}
}

// wildcardAddr is the all-interfaces address of port for an IP mode.
func wildcardAddr(ipMode string, port int) (addr, network string) {
	switch ipMode {
	case "v6":
		return fmt.Sprintf("[::]:%d", port), "tcp6"
	case "v4v6":
		return fmt.Sprintf(":%d", port), "tcp" // dual stack
	default:
		return fmt.Sprintf("0.0.0.0:%d", port), "tcp"
	}
}

// secretFile reads a credential file; one trailing newline ("\n" or
// "\r\n") is stripped, as editors and `echo` add one.
func (p *parser) secretFile(name, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %w", name, err))
		return ""
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r")
}

// StatsCredentialsRenderable reports whether user and password can be
// written as the single word user:password of HAProxy's "stats auth".
func StatsCredentialsRenderable(user, password string) bool {
	ok := func(s string) bool {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c <= ' ' || c == 0x7f || strings.IndexByte("\"'#\\$", c) >= 0 {
				return false
			}
		}
		return s != ""
	}
	return ok(user) && ok(password) && !strings.Contains(user, ":")
}

// TemplateStats returns what the template's stats listener gets, as in
// OpenShift's router: port -1 in metrics mode (no HAProxy stats listener),
// else the stats port (0: the template binds 1936 for /healthz only); the
// credentials are empty when they cannot be rendered safely.
func (c *Config) TemplateStats() (port int, user, password string) {
	if c.Metrics.Enabled() {
		return -1, "", ""
	}
	if !StatsCredentialsRenderable(c.StatsUser, c.StatsPassword) {
		return c.StatsPort, "", ""
	}
	return c.StatsPort, c.StatsUser, c.StatsPassword
}

func (p *parser) metricsType(name string) string {
	v, _ := p.getenv(name)
	switch strings.TrimSpace(v) {
	case "":
		return ""
	case MetricsTypeHAProxy:
		return MetricsTypeHAProxy
	case MetricsTypeNone:
		return MetricsTypeNone
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: supported metrics types are %q (and this router's %q)", name, v, MetricsTypeHAProxy, MetricsTypeNone))
	return ""
}

// positiveDuration reads a positive duration; a malformed one is a
// start-up error, as in OpenShift's router (ROUTER_METRICS_HAPROXY_*).
func (p *parser) positiveDuration(name string, def time.Duration) time.Duration {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	d, err := parseSecondsOrDuration(strings.TrimSpace(v))
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

// tlsCipherSuites parses ':'-separated IANA cipher suite names (Go's names
// of TLS 1.0-1.3 suites, the insecure ones included, as OpenShift's
// library accepts them). TLS 1.3 suites are accepted but not configurable
// in Go: they are always enabled with TLS 1.3.
func (p *parser) tlsCipherSuites(name string) []uint16 {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		known[s.Name] = s.ID
	}
	var out []uint16
	var unknown []string
	for _, f := range strings.Split(v, ":") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, ok := known[f]
		if !ok {
			unknown = append(unknown, f)
			continue
		}
		out = append(out, id)
	}
	if len(unknown) > 0 {
		p.errs = append(p.errs, fmt.Errorf("%s: unknown cipher suites %q (want IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ':' separated)", name, unknown))
		return nil
	}
	return out
}

// tlsVersion parses VersionTLS10 … VersionTLS13.
func (p *parser) tlsVersion(name string, def uint16) uint16 {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	switch strings.TrimSpace(v) {
	case "VersionTLS10":
		return tls.VersionTLS10
	case "VersionTLS11":
		return tls.VersionTLS11
	case "VersionTLS12":
		return tls.VersionTLS12
	case "VersionTLS13":
		return tls.VersionTLS13
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: want VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", name, v))
	return def
}

// tlsCurveNames are the names OpenShift's TLS profile uses for groups.
var tlsCurveNames = map[string]tls.CurveID{
	"X25519":         tls.X25519,
	"secp256r1":      tls.CurveP256,
	"secp384r1":      tls.CurveP384,
	"secp521r1":      tls.CurveP521,
	"X25519MLKEM768": tls.X25519MLKEM768,
}

// tlsCurves parses curve names separated by ',' or ':'.
func (p *parser) tlsCurves(name string) []tls.CurveID {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	var out []tls.CurveID
	var unknown []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ':' }) {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, ok := tlsCurveNames[f]
		if !ok {
			unknown = append(unknown, f)
			continue
		}
		out = append(out, id)
	}
	switch {
	case len(unknown) > 0:
		p.errs = append(p.errs, fmt.Errorf("%s: some curves are not supported: %q (want X25519, secp256r1, secp384r1, secp521r1, X25519MLKEM768)", name, unknown))
		return nil
	case len(out) == 0:
		p.errs = append(p.errs, fmt.Errorf("%s=%q: no valid curves found", name, v))
		return nil
	}
	return out
}

// scrapeURI reads a statistics source as OpenShift's collector accepts it:
// unix://<absolute path> or an http(s) URL with a host. OpenShift refuses to
// start on anything else; here it is a warning and the router's own socket.
func (p *parser) scrapeURI(name string) string {
	v, ok := p.getenv(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return ""
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
	case u.Scheme == "unix" && strings.HasPrefix(u.Path, "/") && u.Host == "":
		return v
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		return v
	}
	p.ignore(name, v, "unix:///<absolute socket path> or an http(s) URL of HAProxy's CSV statistics", "the router's runtime socket")
	return ""
}

// httpURL reads an http(s) URL with a host; anything else is a warning and
// none (OpenShift refuses to start on a URL that does not parse).
func (p *parser) httpURL(name string) string {
	v, ok := p.getenv(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return ""
	}
	if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return v
	}
	p.ignore(name, v, "an http(s) URL", "no HTTP readiness check")
	return ""
}
