package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

const loadTimeout = 15 * time.Second

// TestRouteTypesAnswerFromTheRightBackend covers unsecured, edge (own and
// default certificate), passthrough and re-encrypt routes.
func TestRouteTypesAnswerFromTheRightBackend(t *testing.T) {
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	edgeCert, err := routeCA.Issue("edge.example.com", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	reencCert, err := routeCA.Issue("reencrypt.example.com", []string{"reencrypt.example.com"}, time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"passthrough.example.com"}, time.Hour)
	must(t, err)
	otherCA, err := testcerts.NewCA("unrelated CA", time.Hour)
	must(t, err)

	plain := startBackend(t, "plain")
	secure := startTLSBackend(t, "secure", backendCert.CertPEM, backendCert.KeyPEM)
	pt := startTLSBackend(t, "passthrough", ptCert.CertPEM, ptCert.KeyPEM)

	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "plain", plain)+"---\n"+serviceYAML("apps", "secure", secure)+"---\n"+serviceYAML("apps", "pt", pt))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("apps", "unsecured", "www.example.com", "", "plain", ""),
		routeYAML("apps", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "", map[string]string{
			"certificate": edgeCert.CertPEM, "key": edgeCert.KeyPEM, "caCertificate": routeCA.CertPEM})),
		routeYAML("apps", "edge-default", "edge-default.example.com", "", "plain", tlsYAML("edge", "", nil)),
		routeYAML("apps", "passthrough", "passthrough.example.com", "", "pt", tlsYAML("passthrough", "", nil)),
		routeYAML("apps", "reencrypt", "reencrypt.example.com", "", "secure", tlsYAML("reencrypt", "", map[string]string{
			"certificate": reencCert.CertPEM, "key": reencCert.KeyPEM, "destinationCACertificate": backendCA.CertPEM})),
		routeYAML("apps", "reencrypt-bad", "reencrypt-bad.example.com", "", "secure", tlsYAML("reencrypt", "", map[string]string{
			"destinationCACertificate": otherCA.CertPEM})),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)

	t.Run("unsecured route over HTTP", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.example.com", "/x") }, "plain")
		if !strings.Contains(resp.Body, "x-forwarded-proto=http ") {
			t.Errorf("backend did not see X-Forwarded-Proto http: %s", resp.Body)
		}
	})
	t.Run("unsecured route is not served over HTTPS", func(t *testing.T) {
		expectStatus(t, loadTimeout, func() (response, error) { return r.httpsGet("www.example.com", "/") }, 503)
	})
	t.Run("edge route terminates TLS with its own certificate", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.example.com", "/") }, "plain")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "edge.example.com" {
			t.Fatalf("client saw %v, want the route's certificate", subject(resp))
		}
		if !strings.Contains(resp.Body, "x-forwarded-proto=https") || !strings.Contains(resp.Body, "tls=false") {
			t.Errorf("backend should get plain HTTP with X-Forwarded-Proto https: %s", resp.Body)
		}
	})
	t.Run("edge route without certificate uses the default certificate", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge-default.example.com", "/") }, "plain")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
			t.Fatalf("client saw %v, want the generated default certificate", subject(resp))
		}
	})
	t.Run("unknown host over TLS gets the default certificate and 503", func(t *testing.T) {
		resp := expectStatus(t, loadTimeout, func() (response, error) { return r.httpsGet("nobody.example.com", "/") }, 503)
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
			t.Fatalf("client saw %v, want the default certificate", subject(resp))
		}
	})
	t.Run("TLS without SNI gets the default certificate", func(t *testing.T) {
		resp, err := r.httpsGetSNI("", "edge.example.com", "/")
		must(t, err)
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
			t.Fatalf("client saw %v, want the default certificate", subject(resp))
		}
	})
	t.Run("passthrough reaches the TLS backend untouched", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("passthrough.example.com", "/") }, "passthrough")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "passthrough backend" {
			t.Fatalf("client saw %v, want the backend's own certificate", subject(resp))
		}
		if !strings.Contains(resp.Body, "tls=true") {
			t.Errorf("backend did not terminate TLS itself: %s", resp.Body)
		}
	})
	t.Run("reencrypt verifies the backend with the destination CA", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("reencrypt.example.com", "/") }, "secure")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "reencrypt.example.com" {
			t.Fatalf("client saw %v, want the route's certificate", subject(resp))
		}
		if !strings.Contains(resp.Body, "tls=true") {
			t.Errorf("router did not re-encrypt to the backend: %s", resp.Body)
		}
	})
	t.Run("reencrypt refuses a backend whose certificate does not verify", func(t *testing.T) {
		resp := expectStatus(t, loadTimeout, func() (response, error) { return r.httpsGet("reencrypt-bad.example.com", "/") }, 503)
		if resp.backend() != "" {
			t.Fatalf("request reached the backend: %s", resp.Body)
		}
	})
}

func subject(resp response) string {
	if resp.PeerCert == nil {
		return errNoCert.Error()
	}
	return resp.PeerCert.Subject.String()
}

// TestPathBasedRoutingTable54 checks the reference's table 5.4 and the
// most-specific-path-first rule.
func TestPathBasedRoutingTable54(t *testing.T) {
	root := startBackend(t, "root")
	test := startBackend(t, "test")
	deep := startBackend(t, "deep")
	only := startBackend(t, "only")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{serviceYAML("p", "root", root), serviceYAML("p", "test", test), serviceYAML("p", "deep", deep), serviceYAML("p", "only", only)}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		// host with /test and / (row 2 of table 5.4)
		routeYAML("p", "both-root", "www.example.com", "", "root", ""),
		routeYAML("p", "both-test", "www.example.com", "/test", "test", ""),
		routeYAML("p", "both-deep", "www.example.com", "/test/deeper", "deep", ""),
		// host with only /test (row 1)
		routeYAML("p", "only-test", "only.example.com", "/test", "only", ""),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.example.com", "/") }, "root")

	cases := []struct {
		host, path string
		want       string // backend, or "" for 503
	}{
		{"only.example.com", "/test", "only"},
		{"only.example.com", "/test/sub", "only"},
		{"only.example.com", "/", ""},
		{"only.example.com", "/testing", ""},
		{"www.example.com", "/test", "test"},
		{"www.example.com", "/test/", "test"},
		{"www.example.com", "/test/x?q=1", "test"},
		{"www.example.com", "/testing", "root"},
		{"www.example.com", "/test/deeper/still", "deep"},
		{"www.example.com", "/test/deeperx", "test"},
		{"www.example.com", "/", "root"},
		{"www.example.com", "/other", "root"},
		{"WWW.EXAMPLE.COM:80", "/test", "test"},
	}
	for _, c := range cases {
		resp, err := r.httpGet(c.host, c.path)
		must(t, err)
		switch {
		case c.want == "" && resp.Status != 503:
			t.Errorf("%s%s: got %d from %q, want 503", c.host, c.path, resp.Status, resp.backend())
		case c.want != "" && (resp.Status != 200 || resp.backend() != c.want):
			t.Errorf("%s%s: got %d from %q, want %s", c.host, c.path, resp.Status, resp.backend(), c.want)
		}
	}
}

// TestInsecureEdgeTerminationPolicies covers None, Allow and Redirect for
// edge and passthrough routes.
func TestInsecureEdgeTerminationPolicies(t *testing.T) {
	plain := startBackend(t, "plain")
	ca, err := testcerts.NewCA("ca", time.Hour)
	must(t, err)
	ptCert, err := ca.Issue("pt", []string{"pt-redirect.example.com"}, time.Hour)
	must(t, err)
	pt := startTLSBackend(t, "pt", ptCert.CertPEM, ptCert.KeyPEM)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("ns", "plain", plain)+"---\n"+serviceYAML("ns", "pt", pt))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("ns", "none", "none.example.com", "", "plain", tlsYAML("edge", "None", nil)),
		routeYAML("ns", "empty", "empty.example.com", "", "plain", tlsYAML("edge", "", nil)),
		routeYAML("ns", "allow", "allow.example.com", "", "plain", tlsYAML("edge", "Allow", nil)),
		routeYAML("ns", "redirect", "redirect.example.com", "", "plain", tlsYAML("edge", "Redirect", nil)),
		routeYAML("ns", "pt-redirect", "pt-redirect.example.com", "", "pt", tlsYAML("passthrough", "Redirect", nil)),
		routeYAML("ns", "pt-none", "pt-none.example.com", "", "pt", tlsYAML("passthrough", "", nil)),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("allow.example.com", "/") }, "plain")

	t.Run("Allow serves plain HTTP", func(t *testing.T) {
		resp, err := r.httpGet("allow.example.com", "/a")
		must(t, err)
		if resp.Status != 200 || resp.backend() != "plain" {
			t.Fatalf("got %d %q", resp.Status, resp.Body)
		}
	})
	for _, host := range []string{"none.example.com", "empty.example.com", "pt-none.example.com"} {
		t.Run("no HTTP for "+host, func(t *testing.T) {
			resp, err := r.httpGet(host, "/")
			must(t, err)
			if resp.Status != 503 {
				t.Fatalf("got %d %q, want 503", resp.Status, resp.Body)
			}
		})
	}
	for _, host := range []string{"redirect.example.com", "pt-redirect.example.com"} {
		// As OpenShift's template: https on the host without a port (443).
		// A Host naming a port (the client reached the router's HTTP port
		// directly) is sent to the HTTPS port served, never to the HTTP port
		// with https.
		for _, c := range []struct{ hostHeader, want string }{
			{host, "https://" + host + "/some/path?x=1"},
			{fmt.Sprintf("%s:%d", host, r.HTTPPort), fmt.Sprintf("https://%s:%d/some/path?x=1", host, r.HTTPSPort)},
		} {
			t.Run("Redirect answers 302 to https for Host "+c.hostHeader, func(t *testing.T) {
				resp, err := r.httpGet(c.hostHeader, "/some/path?x=1")
				must(t, err)
				loc := resp.Header.Get("Location")
				if resp.Status != 302 || loc != c.want {
					t.Fatalf("got %d Location %q, want %q", resp.Status, loc, c.want)
				}
			})
		}
	}
	t.Run("edge routes still serve HTTPS", func(t *testing.T) {
		for _, host := range []string{"none.example.com", "redirect.example.com"} {
			resp, err := r.httpsGet(host, "/")
			must(t, err)
			if resp.Status != 200 || resp.backend() != "plain" {
				t.Errorf("%s: got %d %q", host, resp.Status, resp.Body)
			}
		}
	})
}

// TestAlternateBackendWeights checks §5.7.12: traffic split by weight over
// roundrobin, weight 0 gets nothing, all-zero and no-endpoints give 503.
func TestAlternateBackendWeights(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		serviceYAML("w", "a", a), serviceYAML("w", "b", b), serviceYAML("w", "c", c),
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: empty\n  namespace: w\nspec:\n  ports:\n  - port: 80\n",
	}, "---\n"))
	alt := func(svc string, w int) string {
		return fmt.Sprintf("  - kind: Service\n    name: %s\n    weight: %d\n", svc, w)
	}
	weighted := func(name, host, to string, w int, alts ...string) string {
		return fmt.Sprintf("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: %s\n  namespace: w\n  annotations:\n    haproxy.router.openshift.io/balance: roundrobin\nspec:\n  host: %s\n  to:\n    kind: Service\n    name: %s\n    weight: %d\n  alternateBackends:\n%s",
			name, host, to, w, strings.Join(alts, ""))
	}
	m.Write("routes.yaml", strings.Join([]string{
		weighted("split", "split.example.com", "a", 2, alt("b", 1), alt("c", 1)),
		weighted("zero", "zero.example.com", "a", 1, alt("b", 0)),
		weighted("allzero", "allzero.example.com", "a", 0, alt("b", 0)),
		weighted("noeps", "noeps.example.com", "empty", 5, alt("c", 1)),
		routeYAML("w", "onlyempty", "onlyempty.example.com", "", "empty", ""),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("split.example.com", "/") }, 200)

	count := func(host string, n int) map[string]int {
		got := map[string]int{}
		for i := 0; i < n; i++ {
			resp, err := r.httpGet(host, "/")
			must(t, err)
			if resp.Status != 200 {
				got[fmt.Sprint(resp.Status)]++
				continue
			}
			got[resp.backend()]++
		}
		return got
	}
	t.Run("2:1:1 within 10 percent over 400 requests", func(t *testing.T) {
		got := count("split.example.com", 400)
		for name, want := range map[string]int{"a": 200, "b": 100, "c": 100} {
			if d := got[name] - want; d < -40 || d > 40 {
				t.Errorf("%s got %d of 400, want %d±40 (all: %v)", name, got[name], want, got)
			}
		}
	})
	t.Run("weight 0 gets no traffic", func(t *testing.T) {
		if got := count("zero.example.com", 40); got["a"] != 40 {
			t.Fatalf("got %v, want all 40 on a", got)
		}
	})
	t.Run("all weights 0 answer 503", func(t *testing.T) {
		if got := count("allzero.example.com", 10); got["503"] != 10 {
			t.Fatalf("got %v, want 503s", got)
		}
	})
	t.Run("service without endpoints has effective weight 0", func(t *testing.T) {
		if got := count("noeps.example.com", 20); got["c"] != 20 {
			t.Fatalf("got %v, want all 20 on c", got)
		}
	})
	t.Run("route without endpoints answers 503 with the error page", func(t *testing.T) {
		resp, err := r.httpGet("onlyempty.example.com", "/")
		must(t, err)
		if resp.Status != 503 || !strings.Contains(resp.Body, "Application is not available") {
			t.Fatalf("got %d %q", resp.Status, resp.Body)
		}
	})
	t.Run("no route matched answers 503 with the error page", func(t *testing.T) {
		resp, err := r.httpGet("unknown.example.com", "/")
		must(t, err)
		if resp.Status != 503 || !strings.Contains(resp.Body, "Application is not available") {
			t.Fatalf("got %d %q", resp.Status, resp.Body)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
