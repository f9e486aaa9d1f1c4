package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/test/prereq"
)

// renderExamples renders examples/ with the current environment and
// returns haproxy.config.
func renderExamples(t *testing.T) string {
	t.Helper()
	var out, errOut bytes.Buffer
	f := renderFlags{manifests: "../../examples", haproxy: "haproxy", env: registerEnvFlags(pflag.NewFlagSet("render", pflag.ContinueOnError))}
	if err := runRender(&out, &errOut, f); err != nil {
		t.Fatalf("render: %v\n%s", err, errOut.String())
	}
	return out.String()
}

// TestIngressOperatorVariablesChangeTheConfiguration: every variable the
// ingress operator of OpenShift 4 sets for an IngressController that acts
// on haproxy.config is accepted (no error, no warning) and changes the
// rendered configuration as docs/env.md says. A name accepted with no
// effect fails here. (Variables acting elsewhere — metrics, status,
// selectors, the sidecar socket — are tested where they act; the ones that
// need nothing here are in TestAcceptedVariablesWithoutEffectAreNoticed.)
func TestIngressOperatorVariablesChangeTheConfiguration(t *testing.T) {
	prereq.NeedBinary(t, "haproxy") // ROUTER_CURVES is checked against it
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	page := write("503.http", "HTTP/1.0 503 Service Unavailable\r\n\r\nsorry\n")
	base := renderExamples(t)
	cases := []struct {
		env     map[string]string
		want    []string // in the rendered configuration
		notWant []string
	}{
		{env: map[string]string{"ROUTER_MAX_CONNECTIONS": "auto"}, notWant: []string{"\n  maxconn "}},
		{env: map[string]string{"ROUTER_MAX_CONNECTIONS": "2000"}, want: []string{"global\n  maxconn 2000\n", "\n  mode http\n  maxconn 2000\n"}},
		{env: map[string]string{"ROUTER_LOAD_BALANCE_ALGORITHM": "leastconn"}, want: []string{"\n  balance leastconn\n"}, notWant: []string{"balance random"}},
		{env: map[string]string{"ROUTER_TCP_BALANCE_SCHEME": "roundrobin"}, want: []string{"backend be_tcp:demo:passthrough\n  mode tcp\n  balance roundrobin\n"}},
		{env: map[string]string{"ROUTER_THREADS": "4"}, want: []string{"\n  nbthread 4\n"}},
		{env: map[string]string{"ROUTER_DEFAULT_TUNNEL_TIMEOUT": "349s"}, want: []string{"\n  timeout tunnel 349s\n"}},
		{env: map[string]string{"ROUTER_DEFAULT_CLIENT_TIMEOUT": "40s"}, want: []string{"\n  timeout client 40s\n"}},
		{env: map[string]string{"ROUTER_CLIENT_FIN_TIMEOUT": "2s"}, want: []string{"\n  timeout client-fin 2s\n"}},
		{env: map[string]string{"ROUTER_DEFAULT_SERVER_TIMEOUT": "41s"}, want: []string{"\n  timeout server 41s\n"}},
		{env: map[string]string{"ROUTER_DEFAULT_SERVER_FIN_TIMEOUT": "3s"}, want: []string{"\n  timeout server-fin 3s\n"}},
		{env: map[string]string{"ROUTER_DEFAULT_CONNECT_TIMEOUT": "6s"}, want: []string{"\n  timeout connect 6s\n"}},
		{env: map[string]string{"ROUTER_SLOWLORIS_HTTP_KEEPALIVE": "301s"}, want: []string{"\n  timeout http-keep-alive 301s\n"}},
		{env: map[string]string{"ROUTER_INSPECT_DELAY": "6s"}, want: []string{"\n  tcp-request inspect-delay 6s\n"}},
		{env: map[string]string{"ROUTER_BACKEND_CHECK_INTERVAL": "7s"}, want: []string{" check inter 7s"}},
		{env: map[string]string{"ROUTER_HTTP_REQUEST_HEADERS": "X-Frame-Options:DENY:Set,Accept-Encoding:Delete"},
			want: []string{"\n  http-request set-header X-Frame-Options DENY\n  http-request del-header Accept-Encoding\n"}},
		{env: map[string]string{"ROUTER_HTTP_RESPONSE_HEADERS": "X-XSS-Protection:1%3Bmode%3Dblock:Set,Server:Delete"},
			want: []string{"\n  http-response set-header X-XSS-Protection \"1;mode=block\"\n  http-response del-header Server\n"}},
		{env: map[string]string{"ROUTER_SERVICE_HTTP_PORT": "8080", "ROUTER_SERVICE_HTTPS_PORT": "8443"}, want: []string{"\n  bind :8080\n", "\n  bind :8443\n"}},
		{env: map[string]string{"ROUTER_SYSLOG_ADDRESS": "127.0.0.1:514", "ROUTER_LOG_LEVEL": "info", "ROUTER_LOG_FACILITY": "local2", "ROUTER_LOG_MAX_LENGTH": "2048"},
			want: []string{"\n  log 127.0.0.1:514 len 2048 local2 info\n"}},
		{env: map[string]string{"ROUTER_SYSLOG_ADDRESS": "127.0.0.1:514", "ROUTER_SYSLOG_FORMAT": `"%ci:%cp [%t] %ft %b/%s"`}, want: []string{"\n  log-format \"%ci:%cp [%t] %ft %b/%s\"\n"}},
		{env: map[string]string{"ROUTER_CAPTURE_HTTP_REQUEST_HEADERS": "Host:90", "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS": "Content-Type:40"},
			want: []string{"\n  capture request header Host len 90\n  capture response header Content-Type len 40\n"}},
		{env: map[string]string{"ROUTER_CAPTURE_HTTP_COOKIE": "session=:100"}, want: []string{"\n  capture cookie session= len 100\n", "\n  tune.http.cookielen 100\n"}},
		{env: map[string]string{"ROUTER_DONT_LOG_NULL": "true"}, want: []string{"\n  option dontlognull\n"}},
		{env: map[string]string{"ROUTER_CIPHERS": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"}, want: []string{"\n  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256\n"}},
		{env: map[string]string{"ROUTER_CIPHERSUITES": "TLS_AES_128_GCM_SHA256"}, want: []string{"\n  ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256\n"}},
		{env: map[string]string{"ROUTER_CURVES": "X25519MLKEM768:X25519:secp256r1:secp384r1"}, want: []string{"\n  ssl-default-bind-curves "}, notWant: []string{"made-up"}},
		{env: map[string]string{"SSL_MIN_VERSION": "TLSv1.3"}, want: []string{"ssl-min-ver TLSv1.3"}},
		{env: map[string]string{"ROUTER_IP_V4_V6_MODE": "v4v6"}, want: []string{"\n  bind :80\n  bind :::80 v6only\n", "\n  bind :443\n  bind :::443 v6only\n"}},
		{env: map[string]string{"ROUTER_IP_V4_V6_MODE": "v6"}, want: []string{"\n  bind :::80 v6only\n"}, notWant: []string{"\n  bind :80\n"}},
		// No example route of another policy: no forwarded header anywhere.
		{env: map[string]string{"ROUTER_SET_FORWARDED_HEADERS": "never"}, notWant: []string{"X-Forwarded-Host %[req.hdr(host)]", "fwd_other", "\n  option forwardfor\n"}},
		{env: map[string]string{"ROUTER_UNIQUE_ID_HEADER_NAME": "X-Unique-Id", "ROUTER_UNIQUE_ID_FORMAT": `"%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid"`},
			want: []string{"\n  unique-id-format \"%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid\"\n  unique-id-header X-Unique-Id\n"}},
		{env: map[string]string{"ROUTER_H1_CASE_ADJUST": "Host,Cache-Control"}, want: []string{"\n  h1-case-adjust cache-control Cache-Control\n"}},
		{env: map[string]string{"ROUTER_HTTP_IGNORE_PROBES": "true"}, want: []string{"\n  option http-ignore-probes\n"}},
		{env: map[string]string{"ROUTER_DISABLE_HTTP2": "true"}, notWant: []string{"alpn h2"}},
		{env: map[string]string{"ROUTER_HARD_STOP_AFTER": "1h"}, want: []string{"\n  hard-stop-after 1h\n"}},
		{env: map[string]string{"ROUTER_BUF_SIZE": "65536", "ROUTER_MAX_REWRITE_SIZE": "16384"}, want: []string{"\n  tune.bufsize 65536\n  tune.maxrewrite 16384\n"}},
		{env: map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "optional"}, want: []string{" verify optional", "\n  http-request set-header X-SSL-Client-DER %{+Q}[ssl_c_der,base64]\n"}},
		{env: map[string]string{"ROUTER_MUTUAL_TLS_AUTH": "required", "ROUTER_MUTUAL_TLS_AUTH_FILTER": "CN=client"},
			want: []string{" verify required", "\n  http-request deny unless cert_cn_matches\n"}},
		{env: map[string]string{"ROUTER_MUTUAL_TLS_HEADER_FILTER": "false"}, notWant: []string{"del-header X-SSL-Client-Verify"}},
		{env: map[string]string{"ROUTER_ENABLE_COMPRESSION": "true", "ROUTER_COMPRESSION_MIME": "text/html application/json"},
			want: []string{"\n  compression algo gzip\n  compression type text/html application/json\n"}},
		{env: map[string]string{"ROUTER_IDLE_CLOSE_ON_RESPONSE": "true"}, want: []string{"\n  option idle-close-on-response\n"}},
		{env: map[string]string{"ROUTER_ABORT_ON_CLOSE": "true"}, want: []string{"\n  option abortonclose\n"}},
		{env: map[string]string{"ROUTER_HAPROXY_CONTSTATS": "true"}, want: []string{"\n  option contstats\n"}},
		{env: map[string]string{"ROUTER_USE_PROXY_PROTOCOL": "true"}, want: []string{"\n  bind :80 accept-proxy\n"}},
		{env: map[string]string{"ROUTER_ERRORFILE_503": page}, want: []string{"\n  errorfile 503 " + page + "\n"}},
		{env: map[string]string{"ROUTER_MAX_DYNAMIC_SERVERS": "1"}, want: []string{"server _dynamic-pod-1 "}, notWant: []string{"server _dynamic-pod-2 "}},
	}
	for _, c := range cases {
		var names []string
		for k, v := range c.env {
			t.Setenv(k, v)
			names = append(names, k)
		}
		if cfg, err := config.FromEnv(nil); err != nil {
			t.Errorf("%v: refused: %v", c.env, err)
		} else if len(cfg.Warnings) > 0 {
			t.Errorf("%v: not accepted as is: %q", c.env, cfg.Warnings)
		}
		got := renderExamples(t)
		if got == base {
			t.Errorf("%v: the rendered configuration did not change", c.env)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: configuration lacks %q", c.env, w)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%v: configuration still has %q", c.env, w)
			}
		}
		for _, k := range names {
			os.Unsetenv(k)
		}
	}
}
