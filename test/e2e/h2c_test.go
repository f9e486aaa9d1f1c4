package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// startH2CBackend starts a backend that speaks only HTTP/2 without TLS
// (prior knowledge: an HTTP/1 request gets no answer) and tells which
// protocol each request came with.
func startH2CBackend(t *testing.T, name string) *backend {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend=%s proto=%s protomajor=%d\n", name, r.Proto, r.ProtoMajor)
	}))
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// appProtocolServiceYAML is a Service whose port has the given appProtocol
// ("" for none), with an EndpointSlice for be carrying it too (as the
// EndpointSlice controller copies it).
func appProtocolServiceYAML(ns, name, appProtocol string, be *backend) string {
	ap := ""
	if appProtocol != "" {
		ap = "\n    appProtocol: " + appProtocol
	}
	slice := ""
	if appProtocol != "" {
		slice = "\n  appProtocol: " + appProtocol
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  ports:
  - name: web
    port: 80%[3]s
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[2]s-0
  namespace: %[1]s
  labels:
    kubernetes.io/service-name: %[2]s
addressType: IPv4
ports:
- name: web
  port: %[5]d%[4]s
endpoints:
- addresses: ["%[6]s"]
`, ns, name, ap, slice, be.Port, be.IP)
}

// A service port with `appProtocol: h2c` (or kubernetes.io/h2c) gets HTTP/2
// without TLS from the router, as OpenShift's does: an HTTP/2 client on an
// edge route (ALPN h2) and an HTTP/1.1 client on a plain route both reach
// an h2c-only backend, which sees HTTP/2. The same backend behind a port
// without the appProtocol gets HTTP/1.1, which it does not speak.
func TestH2CBackendReachedOverHTTP2(t *testing.T) {
	ca, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("h2.example.com", []string{"h2.example.com"}, time.Hour)
	must(t, err)
	be := startH2CBackend(t, "h2c")

	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		appProtocolServiceYAML("h2", "h2c", "h2c", be),
		appProtocolServiceYAML("h2", "k8s-h2c", "kubernetes.io/h2c", be),
		appProtocolServiceYAML("h2", "plain", "", be),
	}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("h2", "edge", "h2.example.com", "", "h2c", tlsYAML("edge", "", map[string]string{
			"certificate": cert.CertPEM, "key": cert.KeyPEM})),
		routeYAML("h2", "plain-h2c", "plain-h2c.example.com", "", "h2c", ""),
		routeYAML("h2", "k8s-h2c", "k8s-h2c.example.com", "", "k8s-h2c", ""),
		routeYAML("h2", "no-app-protocol", "no-app-protocol.example.com", "", "plain", ""),
	}, "---\n"))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_DISABLE_HTTP2": "false"})

	t.Run("HTTP/2 client on an edge route", func(t *testing.T) {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{ServerName: "h2.example.com", InsecureSkipVerify: true},
			ForceAttemptHTTP2: true,
			DisableKeepAlives: true,
		}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		eventually(t, loadTimeout, "HTTP/2 end to end", func() error {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", r.HTTPSPort), nil)
			if err != nil {
				return err
			}
			req.Host = "h2.example.com"
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(string(body), "backend=h2c proto=HTTP/2.0 protomajor=2") {
				return fmt.Errorf("client got %d over %s: %.200s", resp.StatusCode, resp.Proto, body)
			}
			return nil
		})
	})
	for _, host := range []string{"plain-h2c.example.com", "k8s-h2c.example.com"} {
		t.Run("HTTP/1.1 client on a plain route "+host, func(t *testing.T) {
			resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(host, "/") }, "h2c")
			if !strings.Contains(resp.Body, "protomajor=2") {
				t.Errorf("backend did not get HTTP/2: %s", resp.Body)
			}
		})
	}
	t.Run("without appProtocol the backend gets HTTP/1.1", func(t *testing.T) {
		// The h2c-only backend cannot answer an HTTP/1.1 request.
		resp := expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("no-app-protocol.example.com", "/") }, 502)
		if resp.backend() != "" {
			t.Errorf("answered by %q: %s", resp.backend(), resp.Body)
		}
	})
}
