package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/router/model"
)

func TestHAProxyDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := model.HAProxySettings{
		Ciphers: cipherProfiles["intermediate"], CipherSuites: DefaultCipherSuites, SSLMinVersion: "TLSv1.2",
		ConnectTimeout: "5s", ClientTimeout: "30s", ClientFinTimeout: "1s", ServerTimeout: "30s", ServerFinTimeout: "1s",
		TunnelTimeout: "1h", HTTPRequestTimeout: "10s", HTTPKeepAliveTimeout: "300s", InspectDelay: "5s",
		BackendCheckInterval: "5000ms", CompressionMIME: DefaultCompressionMIME,
		LoadBalanceAlgorithm: "leastconn", TCPBalanceScheme: "source", LogFacility: "local1", LogLevel: "warning",
		ForwardedHeaders: "append", MutualTLSAuth: "none",
	}
	if c.HAProxy != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", c.HAProxy, want)
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings %q", c.Warnings)
	}
}

func TestHAProxyValues(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"ROUTER_STRICT_SNI": "true", "ROUTER_CIPHERS": "old", "ROUTER_CIPHERSUITES": "TLS_AES_256_GCM_SHA384",
		"SSL_MIN_VERSION": "TLSv1.0", "SSL_MAX_VERSION": "TLSv1.2",
		"ROUTER_DEFAULT_SERVER_TIMEOUT": "1s", "ROUTER_DEFAULT_TUNNEL_TIMEOUT": "100d", "ROUTER_HARD_STOP_AFTER": "1h",
		"ROUTER_USE_PROXY_PROTOCOL": "true", "ROUTER_ENABLE_COMPRESSION": "true", "ROUTER_COMPRESSION_MIME": " text/html   application/json ",
		"ROUTER_LOAD_BALANCE_ALGORITHM": "random", "ROUTER_TCP_BALANCE_SCHEME": "roundrobin", "ROUTER_THREADS": "4",
		"ROUTER_SYSLOG_ADDRESS": "127.0.0.1:1514", "ROUTER_LOG_FACILITY": "local3", "ROUTER_LOG_LEVEL": "info",
		"ROUTER_SYSLOG_FORMAT": `%ci "x" $HOME #`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HAProxy
	if !h.StrictSNI || !strings.Contains(h.Ciphers, ":AES128-SHA:") || h.CipherSuites != "TLS_AES_256_GCM_SHA384" ||
		h.SSLMinVersion != "TLSv1.0" || h.SSLMaxVersion != "TLSv1.2" || h.ServerTimeout != "1s" || h.HardStopAfter != "1h" ||
		!h.UseProxyProtocol || !h.EnableCompression || h.CompressionMIME != "text/html application/json" ||
		h.LoadBalanceAlgorithm != "random" || h.TCPBalanceScheme != "roundrobin" || h.Threads != 4 ||
		h.SyslogAddress != "127.0.0.1:1514" || h.LogFacility != "local3" || h.LogLevel != "info" {
		t.Fatalf("%+v", h)
	}
	if h.SyslogFormat != `"%ci \"x\" \$HOME \#"` {
		t.Errorf("log format not quoted: %s", h.SyslogFormat)
	}
	if c, err := FromEnv(env(map[string]string{"ROUTER_SYSLOG_FORMAT": `"%ci %ST"`})); err != nil || c.HAProxy.SyslogFormat != `"%ci %ST"` {
		t.Errorf("quoted log format: %v %s", err, c.HAProxy.SyslogFormat)
	}
	if h.TunnelTimeout != "2147483647ms" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "ROUTER_DEFAULT_TUNNEL_TIMEOUT") {
		t.Errorf("100d not clipped with a warning: %s %q", h.TunnelTimeout, c.Warnings)
	}
	for profile, absent := range map[string]string{"modern": "DHE-RSA-AES128-GCM-SHA256", "intermediate": "AES128-SHA"} {
		c, err := FromEnv(env(map[string]string{"ROUTER_CIPHERS": profile}))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(":"+c.HAProxy.Ciphers+":", ":"+absent+":") || !strings.Contains(c.HAProxy.Ciphers, "ECDHE-RSA-AES128-GCM-SHA256") {
			t.Errorf("%s profile: %s", profile, c.HAProxy.Ciphers)
		}
	}
	c, err = FromEnv(env(map[string]string{"ROUTER_CIPHERS": "ECDHE-RSA-AES256-GCM-SHA384:!aNULL:kEDH+AESGCM:@SECLEVEL=1", "ROUTER_SYSLOG_ADDRESS": "/var/lib/rsyslog/rsyslog.sock"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HAProxy.Ciphers != "ECDHE-RSA-AES256-GCM-SHA384:!aNULL:kEDH+AESGCM:@SECLEVEL=1" || c.HAProxy.SyslogAddress != "/var/lib/rsyslog/rsyslog.sock" {
		t.Errorf("explicit list / socket path: %+v", c.HAProxy)
	}
}

func TestHAProxyMalformedValuesNameTheVariable(t *testing.T) {
	cases := []struct{ name, value, form string }{
		{"ROUTER_STRICT_SNI", "yes please", "true or false"},
		{"ROUTER_CIPHERS", "ECDHE-RSA-AES128-GCM-SHA256 AES128-SHA", "modern, intermediate, old"},
		{"ROUTER_CIPHERS", "modern\n  bind :1", "cipher list"},
		{"ROUTER_CIPHERSUITES", "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384", "TLS 1.3 cipher suites"},
		{"SSL_MIN_VERSION", "TLSv1.4", "TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3"},
		{"SSL_MAX_VERSION", "SSLv3", "TLSv1.0"},
		{"ROUTER_DEFAULT_CONNECT_TIMEOUT", "5 s", "HAProxy time value"},
		{"ROUTER_DEFAULT_CLIENT_TIMEOUT", "-1s", "HAProxy time value"},
		{"ROUTER_CLIENT_FIN_TIMEOUT", "0", "HAProxy time value"},
		{"ROUTER_DEFAULT_SERVER_TIMEOUT", "1.5s", "HAProxy time value"},
		{"ROUTER_DEFAULT_SERVER_FIN_TIMEOUT", "1sec", "HAProxy time value"},
		{"ROUTER_DEFAULT_TUNNEL_TIMEOUT", "1h\n  server x 1.2.3.4:80", "HAProxy time value"},
		{"ROUTER_SLOWLORIS_TIMEOUT", "soon", "HAProxy time value"},
		{"ROUTER_SLOWLORIS_HTTP_KEEPALIVE", "05s", "HAProxy time value"},
		{"ROUTER_INSPECT_DELAY", "5S", "HAProxy time value"},
		{"ROUTER_BACKEND_CHECK_INTERVAL", "5000 ms", "HAProxy time value"},
		{"ROUTER_HARD_STOP_AFTER", "1w", "HAProxy time value"},
		{"ROUTER_USE_PROXY_PROTOCOL", "v2", "true or false"},
		{"ROUTER_ENABLE_COMPRESSION", "gzip", "true or false"},
		{"ROUTER_COMPRESSION_MIME", "text/html #comment", "MIME types"},
		{"ROUTER_LOAD_BALANCE_ALGORITHM", "first", "roundrobin, leastconn, source, random"},
		{"ROUTER_TCP_BALANCE_SCHEME", "uri", "roundrobin, leastconn, source, random"},
		{"ROUTER_THREADS", "0", "1 to 64"},
		{"ROUTER_THREADS", "many", "1 to 64"},
		{"ROUTER_SYSLOG_ADDRESS", "127.0.0.1:99999", "host[:port]"},
		{"ROUTER_SYSLOG_ADDRESS", "/dev/log local0", "unix socket path"},
		{"ROUTER_SYSLOG_ADDRESS", "bad host:514", "host[:port]"},
		{"ROUTER_LOG_FACILITY", "local9", "local7"},
		{"ROUTER_LOG_LEVEL", "verbose", "debug"},
		{"ROUTER_SYSLOG_FORMAT", "%ci\nglobal", "control characters"},
	}
	for _, c := range cases {
		_, err := FromEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.form) {
			t.Errorf("%s=%q: error %v does not name the variable and %q", c.name, c.value, err, c.form)
		}
	}
	if _, err := FromEnv(env(map[string]string{"SSL_MIN_VERSION": "TLSv1.3", "SSL_MAX_VERSION": "TLSv1.2"})); err == nil || !strings.Contains(err.Error(), "SSL_MAX_VERSION") {
		t.Errorf("max below min: %v", err)
	}
}

func TestHAProxyFilesCookieForwardedAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	page := write("503.http", "HTTP/1.0 503 Service Unavailable\r\n\r\nsorry\n")
	notHTTP := write("page.html", "<html>sorry</html>")
	ca := write("ca.pem", "-----BEGIN CERTIFICATE-----\nMAo=\n-----END CERTIFICATE-----\n")
	crl := write("crl.pem", "-----BEGIN X509 CRL-----\nMAo=\n-----END X509 CRL-----\n")
	c, err := FromEnv(env(map[string]string{
		"ROUTER_ERRORFILE_503": page, "ROUTER_COOKIE_NAME": "sticky_1", "ROUTER_SET_FORWARDED_HEADERS": "if-none",
		"ROUTER_MUTUAL_TLS_AUTH": "optional", "ROUTER_MUTUAL_TLS_AUTH_CA": ca, "ROUTER_MUTUAL_TLS_AUTH_CRL": crl,
		"ROUTER_MUTUAL_TLS_AUTH_FILTER": `CN=client\d+`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HAProxy
	if h.ErrorFile503 != page || h.ErrorFile404 != "" || h.CookieName != "sticky_1" || h.ForwardedHeaders != "if-none" ||
		h.MutualTLSAuth != "optional" || h.MutualTLSCA != ca || h.MutualTLSCRL != crl || h.MutualTLSFilter != `"CN=client\\d+"` {
		t.Fatalf("%+v", h)
	}
	for _, c := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"ROUTER_ERRORFILE_503": notHTTP}, "ROUTER_ERRORFILE_503"},
		{map[string]string{"ROUTER_ERRORFILE_404": filepath.Join(dir, "missing")}, "ROUTER_ERRORFILE_404"},
		{map[string]string{"ROUTER_ERRORFILE_404": "relative/404.http"}, "ROUTER_ERRORFILE_404"},
		{map[string]string{"ROUTER_COOKIE_NAME": "a;b"}, "ROUTER_COOKIE_NAME"},
		{map[string]string{"ROUTER_SET_FORWARDED_HEADERS": "sometimes"}, "ROUTER_SET_FORWARDED_HEADERS"},
		{map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "yes"}, "ROUTER_MUTUAL_TLS_AUTH"},
		{map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "required"}, "ROUTER_MUTUAL_TLS_AUTH_CA"},
		{map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "required", "ROUTER_MUTUAL_TLS_AUTH_CA": crl}, "ROUTER_MUTUAL_TLS_AUTH_CA"},
		{map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "required", "ROUTER_MUTUAL_TLS_AUTH_CA": ca, "ROUTER_MUTUAL_TLS_AUTH_CRL": ca}, "ROUTER_MUTUAL_TLS_AUTH_CRL"},
		{map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "required", "ROUTER_MUTUAL_TLS_AUTH_CA": ca, "ROUTER_MUTUAL_TLS_AUTH_FILTER": "CN=(a"}, "ROUTER_MUTUAL_TLS_AUTH_FILTER"},
	} {
		if _, err := FromEnv(env(c.env)); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: error %v does not name %s", c.env, err, c.name)
		}
	}
}

func TestH1CaseAdjust(t *testing.T) {
	for v, want := range map[string]string{
		"":                               "",
		" X-Custom-Header , Content-MD5": "X-Custom-Header,Content-MD5",
		"X-A,,x-a,X-B":                   "X-A,X-B",
		"X_Weird.Name~1":                 "X_Weird.Name~1",
	} {
		c, err := FromEnv(env(map[string]string{"ROUTER_H1_CASE_ADJUST": v}))
		if err != nil || c.HAProxy.H1CaseAdjust != want {
			t.Errorf("%q: got %q, %v; want %q", v, c.HAProxy.H1CaseAdjust, err, want)
		}
	}
	for _, v := range []string{"X-A,X B", "X-A\n  option x", "X#1", "X:Y", `X"`, "$HOME", "X'", "X%", "X\\Y", strings.Repeat("a", 257)} {
		_, err := FromEnv(env(map[string]string{"ROUTER_H1_CASE_ADJUST": v}))
		if err == nil || !strings.Contains(err.Error(), "ROUTER_H1_CASE_ADJUST") {
			t.Errorf("%q: want an error naming ROUTER_H1_CASE_ADJUST, got %v", v, err)
		}
	}
	h := model.HAProxySettings{H1CaseAdjust: "X-A,Content-MD5"}
	if got := h.H1CaseAdjustPairs(); len(got) != 2 || got[0] != [2]string{"x-a", "X-A"} || got[1] != [2]string{"content-md5", "Content-MD5"} {
		t.Errorf("pairs %v", got)
	}
}
