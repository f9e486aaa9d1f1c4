package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// TestOpenShiftStyleTemplateServesEveryRouteType gives the router, with
// --template, a template written in the style of OpenShift's (every
// helper and field of its data model, settings read with env, OpenShift's
// map files, one server line per endpoint) and checks that it serves every
// route type, annotations, allowlists inline and in a file,
// rewrite-target and header actions; that render writes the same files as
// the running router; and that scaling a service goes through the
// runtime API, without a reload.
func TestOpenShiftStyleTemplateServesEveryRouteType(t *testing.T) {
	tmpl, err := filepath.Abs("testdata/openshift-style.template")
	must(t, err)
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	edgeCert, err := routeCA.Issue("edge.example.com", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"passthrough.example.com"}, time.Hour)
	must(t, err)

	var web []*backend
	for i := 1; i <= 3; i++ {
		web = append(web, startBackend(t, fmt.Sprintf("web-%d", i)))
	}
	webPods := func(n int) []pod {
		var out []pod
		for i := 0; i < n; i++ {
			out = append(out, pod{name: web[i].Name, be: web[i]})
		}
		return out
	}
	plain := startBackend(t, "plain")
	secure := startTLSBackend(t, "secure", backendCert.CertPEM, backendCert.KeyPEM)
	pt := startTLSBackend(t, "passthrough", ptCert.CertPEM, ptCert.KeyPEM)
	hdr := startHeaderBackend(t, "hdr")

	var long []string
	for i := 0; i < 70; i++ {
		long = append(long, fmt.Sprintf("10.9.%d.1", i))
	}
	allowFile := strings.Join(append(long, "127.0.0.0/8"), " ")
	denyFile := strings.Join(long, " ")
	annotated := func(name, host, path, svc string, ann map[string]string, extra string) string {
		y := routeYAML("apps", name, host, path, svc, extra)
		var b strings.Builder
		b.WriteString("  annotations:\n")
		for k, v := range ann {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
		return strings.Replace(y, "  namespace: apps\n", "  namespace: apps\n"+b.String(), 1)
	}
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		podServiceYAML("apps", "web", webPods(2)...), serviceYAML("apps", "plain", plain),
		serviceYAML("apps", "secure", secure), serviceYAML("apps", "pt", pt), serviceYAML("apps", "hdr", hdr),
	}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("apps", "web", "web.example.com", "", "web", ""),
		routeYAML("apps", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "Redirect", map[string]string{
			"certificate": edgeCert.CertPEM, "key": edgeCert.KeyPEM, "caCertificate": routeCA.CertPEM})),
		routeYAML("apps", "passthrough", "passthrough.example.com", "", "pt", tlsYAML("passthrough", "", nil)),
		routeYAML("apps", "reencrypt", "reencrypt.example.com", "", "secure", tlsYAML("reencrypt", "", map[string]string{
			"destinationCACertificate": backendCA.CertPEM})),
		annotated("rewrite", "rewrite.example.com", "/app", "plain", map[string]string{"haproxy.router.openshift.io/rewrite-target": "/"}, ""),
		annotated("allow-inline", "allow-inline.example.com", "", "plain", map[string]string{"haproxy.router.openshift.io/ip_allowlist": "127.0.0.1 10.0.0.0/8"}, ""),
		annotated("deny-inline", "deny-inline.example.com", "", "plain", map[string]string{"haproxy.router.openshift.io/ip_allowlist": "10.0.0.1"}, ""),
		annotated("allow-file", "allow-file.example.com", "", "plain", map[string]string{"haproxy.router.openshift.io/ip_allowlist": allowFile}, ""),
		annotated("deny-file", "deny-file.example.com", "", "plain", map[string]string{"haproxy.router.openshift.io/ip_allowlist": denyFile}, ""),
		annotated("hsts", "hsts.example.com", "", "plain", map[string]string{"haproxy.router.openshift.io/hsts_header": "max-age=3600"},
			tlsYAML("edge", "", nil)),
		routeYAML("apps", "headers", "headers.example.com", "", "hdr", headerActionsYAML(
			setAction("X-Req-Host", "%[req.hdr(host)]")+deleteAction("X-Drop"), setAction("X-Frame-Options", "DENY"))),
	}, "---\n"))
	env := map[string]string{
		"ROUTER_HTTP_REQUEST_HEADERS": "X-Wide:wide:Set",
		"RELOAD_INTERVAL":             "60s", // anything faster than a minute is the runtime API
	}
	r := startRouter(t, m.Dir, env, "--template", tmpl)

	expectExactly(t, loadTimeout, r, "web.example.com", "web-1", "web-2")
	t.Run("edge with its certificate, HTTP redirected", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.example.com", "/") }, "plain")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "edge.example.com" {
			t.Errorf("edge served %v", resp.PeerCert)
		}
		got := expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("edge.example.com", "/p") }, 302)
		if loc := got.Header.Get("Location"); loc != "https://edge.example.com/p" {
			t.Errorf("redirect to %q", loc)
		}
	})
	t.Run("passthrough", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("passthrough.example.com", "/") }, "passthrough")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "passthrough backend" {
			t.Errorf("passthrough served %v", resp.PeerCert)
		}
	})
	t.Run("reencrypt verified against the destination CA", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("reencrypt.example.com", "/") }, "secure")
		if !strings.Contains(resp.Body, "tls=true") {
			t.Errorf("backend not reached over TLS: %s", resp.Body)
		}
	})
	t.Run("rewrite-target", func(t *testing.T) {
		for path, want := range map[string]string{"/app": "path=/ ", "/app/x/y": "path=/x/y "} {
			resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("rewrite.example.com", path) }, "plain")
			if !strings.Contains(resp.Body, want) {
				t.Errorf("%s: backend saw %s, want %q", path, resp.Body, want)
			}
		}
	})
	t.Run("allowlists inline and in a file", func(t *testing.T) {
		for _, host := range []string{"allow-inline.example.com", "allow-file.example.com"} {
			expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(host, "/") }, "plain")
		}
		for _, host := range []string{"deny-inline.example.com", "deny-file.example.com"} {
			if resp, err := r.httpGet(host, "/"); err == nil && resp.Status == 200 {
				t.Errorf("%s: client outside the allowlist served", host)
			}
		}
		data, err := os.ReadFile(filepath.Join(r.WorkingDir, "router", "allowlists", "apps:allow-file.txt"))
		must(t, err)
		if !strings.HasSuffix(string(data), "10.9.69.1\n127.0.0.0/8\n") {
			t.Errorf("allowlist file: %q", data)
		}
	})
	t.Run("hsts and header actions", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("hsts.example.com", "/") }, "plain")
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=3600" {
			t.Errorf("HSTS %q", got)
		}
		got, body, err := r.getWithHeaders("headers.example.com", map[string]string{"X-Drop": "x"})
		must(t, err)
		for _, want := range []string{"X-Req-Host=headers.example.com;", "X-Drop=;", "X-Wide=wide;"} {
			if !strings.Contains(body, want) {
				t.Errorf("backend saw no %q: %s", want, body)
			}
		}
		if got.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("X-Frame-Options %q", got.Header.Get("X-Frame-Options"))
		}
	})

	t.Run("render writes what the running router wrote", func(t *testing.T) {
		out := t.TempDir()
		cmd := exec.Command(routerBin, "render", "--manifests", m.Dir, "--template", tmpl, "--working-dir", r.WorkingDir, "--output-dir", out)
		cmd.Env = append(kubetest.WithoutEnv(os.Environ(), "KUBECONFIG"),
			fmt.Sprintf("ROUTER_SERVICE_HTTP_PORT=%d", r.HTTPPort), fmt.Sprintf("ROUTER_SERVICE_HTTPS_PORT=%d", r.HTTPSPort),
			"ROUTER_METRICS_TYPE=haproxy", "ROUTER_LISTEN_ADDR="+metricsListenDefault(t))
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("render: %v\n%s", err, stderr.String())
		}
		for _, rel := range []string{"conf/haproxy.config", "conf/os_http_be.map", "conf/os_edge_reencrypt_be.map",
			"conf/os_route_http_redirect.map", "conf/os_tcp_be.map", "conf/os_sni_passthrough.map", "conf/cert_config.map",
			"conf/os_wildcard_domain.map", "router/allowlists/apps:allow-file.txt"} {
			running, err := os.ReadFile(filepath.Join(r.WorkingDir, rel))
			must(t, err)
			rendered, err := os.ReadFile(filepath.Join(out, rel))
			must(t, err)
			if !bytes.Equal(running, rendered) {
				t.Errorf("%s: render differs from the running router's\nrender:\n%s\nrunning:\n%s", rel, rendered, running)
			}
		}
		running, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
		must(t, err)
		if !bytes.Equal(stdout, running) {
			t.Errorf("render's stdout differs from the running haproxy.config")
		}
		for _, want := range []string{"dynamic-cookie-key ", " dynamic\n", "server pod:web-1:web:web:127.0.0.1:"} {
			if !strings.Contains(string(running), want) {
				t.Errorf("haproxy.config lacks %q", want)
			}
		}
	})

	t.Run("scaling goes through the runtime API", func(t *testing.T) {
		pids0 := haproxyPIDSet(r)
		for step, n := range []int{3, 2} {
			m.Write("svc.yaml", strings.Join([]string{
				podServiceYAML("apps", "web", webPods(n)...), serviceYAML("apps", "plain", plain),
				serviceYAML("apps", "secure", secure), serviceYAML("apps", "pt", pt), serviceYAML("apps", "hdr", hdr),
			}, "---\n"))
			var names []string
			for i := 0; i < n; i++ {
				names = append(names, web[i].Name)
			}
			expectExactly(t, 30*time.Second, r, "web.example.com", names...)
			if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
				t.Fatalf("step %d: haproxy processes %v, were %v (a reload happened)", step, pids, pids0)
			}
		}
		if !strings.Contains(r.Log(), "changes applied without a reload") {
			t.Errorf("no runtime change logged")
		}
	})
}
