package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// claimChange is how soon a change of the manifests must be served
// (RELOAD_INTERVAL=1s in startRouter, plus slack).
const claimChange = 5 * time.Second

// createdAt returns YAML with metadata.creationTimestamp set to day days
// after 2024-01-01 (the manifests source keeps an explicit timestamp), so
// that which route is older does not depend on file times.
func createdAt(yaml string, day int) string {
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(day) * 24 * time.Hour).Format(time.RFC3339)
	if !strings.HasPrefix(yaml, "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n") {
		panic("createdAt: not a routeYAML route")
	}
	return strings.Replace(yaml, "metadata:\n", "metadata:\n  creationTimestamp: \""+ts+"\"\n", 1)
}

// wildcardYAML is routeYAML with wildcardPolicy: Subdomain.
func wildcardYAML(ns, name, host, path, service, extra string) string {
	return routeYAML(ns, name, host, path, service, "  wildcardPolicy: Subdomain\n"+extra)
}

// expectLogLine waits until one line of the router's log has all parts.
func expectLogLine(t *testing.T, r *router, parts ...string) {
	t.Helper()
	expectLogLineWithin(t, r, 5*time.Second, parts...)
}

// expectLogLineWithin waits up to timeout until one line of the router's
// log has all parts.
func expectLogLineWithin(t *testing.T, r *router, timeout time.Duration, parts ...string) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("a log line with %q", parts), func() error {
		if logLine(r, parts...) == "" {
			return errString("not logged")
		}
		return nil
	})
}

// logLine returns the first line of the router's log with all parts, or "".
func logLine(r *router, parts ...string) string {
	for _, line := range strings.Split(r.Log(), "\n") {
		ok := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				ok = false
				break
			}
		}
		if ok {
			return line
		}
	}
	return ""
}

// alwaysBackend sends requests for d and fails on any answer that does not
// come from want (admitted routes keep serving while others are rejected).
func alwaysBackend(t *testing.T, d time.Duration, get func() (response, error), want string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for n := 0; time.Now().Before(deadline); n++ {
		resp, err := get()
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		if resp.Status != 200 || resp.backend() != want {
			t.Fatalf("request %d: got %d from %q, want %s", n, resp.Status, resp.backend(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOldestRouteWinsTheHost: of two routes for one host the older serves
// and the younger is rejected HostAlreadyClaimed; when the older goes, the
// younger is served; another namespace cannot take a path on the owned host.
func TestOldestRouteWinsTheHost(t *testing.T) {
	oldBE, youngBE, otherBE := startBackend(t, "old"), startBackend(t, "young"), startBackend(t, "other")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{serviceYAML("claims", "old", oldBE), serviceYAML("claims", "young", youngBE), serviceYAML("intruder", "other", otherBE)}, "---\n"))
	// The younger route is in the file written first: age is the
	// creationTimestamp, not the file order.
	m.Write("a-young.yaml", createdAt(routeYAML("claims", "young", "claim.example.com", "", "young", ""), 2))
	m.Write("b-old.yaml", createdAt(routeYAML("claims", "old", "claim.example.com", "", "old", ""), 1))
	r := startRouter(t, m.Dir, nil)
	get := func() (response, error) { return r.httpGet("claim.example.com", "/") }
	expectBackend(t, loadTimeout, get, "old")

	t.Run("the younger route is rejected and never serves", func(t *testing.T) {
		expectLogLine(t, r, `"route rejected"`, `route="claims/young"`, `reason="HostAlreadyClaimed"`, `route old already exposes claim.example.com and is older`)
		alwaysBackend(t, time.Second, get, "old")
	})
	t.Run("another namespace cannot take a path on the owned host", func(t *testing.T) {
		m.Write("intruder.yaml", createdAt(routeYAML("intruder", "steal", "claim.example.com", "/steal", "other", ""), 3))
		expectLogLine(t, r, `route="intruder/steal"`, `reason="HostAlreadyClaimed"`, `a route in another namespace holds claim.example.com and is older than steal`, `holder="claims/old"`)
		alwaysBackend(t, 2*time.Second, func() (response, error) { return r.httpGet("claim.example.com", "/steal") }, "old")
	})
	t.Run("deleting the older route serves the younger one", func(t *testing.T) {
		m.Remove("b-old.yaml")
		expectBackend(t, claimChange, get, "young")
		// The intruder is still refused: the host passed to claims/young.
		resp, err := r.httpGet("claim.example.com", "/steal")
		must(t, err)
		if resp.backend() != "young" {
			t.Fatalf("/steal answered by %q (%d), want young", resp.backend(), resp.Status)
		}
	})
	t.Run("the older route back takes the host back", func(t *testing.T) {
		m.Write("b-old.yaml", createdAt(routeYAML("claims", "old", "claim.example.com", "", "old", ""), 1))
		expectBackend(t, claimChange, get, "old")
	})
}

// TestNamespaceOwnershipCheckDisabled: with
// ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK=true another namespace may serve
// another path of an owned host; an identical host+path is still refused.
func TestNamespaceOwnershipCheckDisabled(t *testing.T) {
	ownerBE, otherBE, dupBE := startBackend(t, "owner"), startBackend(t, "other"), startBackend(t, "dup")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{serviceYAML("ns1", "owner", ownerBE), serviceYAML("ns2", "other", otherBE), serviceYAML("ns3", "dup", dupBE)}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		createdAt(routeYAML("ns1", "r1", "www.abc.xyz", "", "owner", ""), 1),
		createdAt(routeYAML("ns2", "r2", "www.abc.xyz", "/p1/p2", "other", ""), 2),
		createdAt(routeYAML("ns3", "rx", "www.abc.xyz", "/p1/p2", "dup", ""), 3),
	}, "---\n"))

	t.Run("with the check, ns1 owns every path", func(t *testing.T) {
		r := startRouter(t, m.Dir, nil)
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.abc.xyz", "/") }, "owner")
		resp, err := r.httpGet("www.abc.xyz", "/p1/p2/x")
		must(t, err)
		if resp.backend() != "owner" {
			t.Fatalf("/p1/p2/x answered by %q (%d), want owner", resp.backend(), resp.Status)
		}
		expectLogLine(t, r, `route="ns2/r2"`, `reason="HostAlreadyClaimed"`, "a route in another namespace holds www.abc.xyz")
	})
	t.Run("without the check, another namespace serves its path", func(t *testing.T) {
		r := startRouter(t, m.Dir, map[string]string{"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "true"})
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.abc.xyz", "/p1/p2/x") }, "other")
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.abc.xyz", "/p1") }, "owner")
		expectLogLine(t, r, `route="ns3/rx"`, `reason="HostAlreadyClaimed"`, `holder="ns2/r2"`)
		alwaysBackend(t, time.Second, func() (response, error) { return r.httpGet("www.abc.xyz", "/p1/p2") }, "other")
	})
}

// TestWildcardRoutes: with ROUTER_ALLOW_WILDCARD_ROUTES=true a wildcard
// route serves any host of its subdomain (HTTP, edge with a wildcard
// certificate, passthrough by SNI) while specific routes win for their
// hosts; without it the wildcard route is rejected.
func TestWildcardRoutes(t *testing.T) {
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	wildEdgeCert, err := routeCA.Issue("*.edge.test", []string{"*.edge.test"}, time.Hour)
	must(t, err)
	specEdgeCert, err := routeCA.Issue("spec.edge.test", []string{"spec.edge.test"}, time.Hour)
	must(t, err)
	ptCert, err := routeCA.Issue("passthrough backend", []string{"*.pass.test"}, time.Hour)
	must(t, err)

	wild, specific, pt := startBackend(t, "wild"), startBackend(t, "specific"), startTLSBackend(t, "pt", ptCert.CertPEM, ptCert.KeyPEM)
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{serviceYAML("w", "wild", wild), serviceYAML("w", "specific", specific), serviceYAML("w", "pt", pt)}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		wildcardYAML("w", "wild", "wildcard.example.com", "", "wild", ""),
		routeYAML("w", "specific", "specific.example.com", "", "specific", ""),
		wildcardYAML("w", "wild-edge", "www.edge.test", "", "wild", tlsYAML("edge", "", map[string]string{"certificate": wildEdgeCert.CertPEM, "key": wildEdgeCert.KeyPEM})),
		routeYAML("w", "spec-edge", "spec.edge.test", "", "specific", tlsYAML("edge", "", map[string]string{"certificate": specEdgeCert.CertPEM, "key": specEdgeCert.KeyPEM})),
		wildcardYAML("w", "wild-pt", "any.pass.test", "", "pt", tlsYAML("passthrough", "", nil)),
		routeYAML("w", "spec-terminated", "edge.pass.test", "", "specific", tlsYAML("edge", "", nil)),
	}, "---\n"))

	t.Run("allowed", func(t *testing.T) {
		r := startRouter(t, m.Dir, map[string]string{"ROUTER_ALLOW_WILDCARD_ROUTES": "true"})
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("anything.example.com", "/") }, "wild")
		cases := []struct{ host, want string }{
			{"anything.example.com", "wild"},
			{"ANOTHER.example.com:80", "wild"},
			{"wildcard.example.com", "wild"},
			{"specific.example.com", "specific"},
			{"a.b.example.com", ""}, // one label only
			{"example.com", ""},
			{"anything.example.org", ""},
		}
		for _, c := range cases {
			resp, err := r.httpGet(c.host, "/x")
			must(t, err)
			switch {
			case c.want == "" && resp.Status != 503:
				t.Errorf("http %s: got %d from %q, want 503", c.host, resp.Status, resp.backend())
			case c.want != "" && (resp.Status != 200 || resp.backend() != c.want):
				t.Errorf("http %s: got %d from %q, want %s", c.host, resp.Status, resp.backend(), c.want)
			}
		}
		t.Run("edge: the wildcard certificate for any host, the specific route for its own", func(t *testing.T) {
			resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("foo.edge.test", "/") }, "wild")
			if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "*.edge.test" {
				t.Errorf("foo.edge.test: client saw %v, want the wildcard route's certificate", subject(resp))
			}
			resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("spec.edge.test", "/") }, "specific")
			if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "spec.edge.test" {
				t.Errorf("spec.edge.test: client saw %v, want the specific route's certificate", subject(resp))
			}
		})
		t.Run("passthrough by SNI suffix, a specific terminated route wins", func(t *testing.T) {
			resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("foo.pass.test", "/") }, "pt")
			if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "passthrough backend" || !strings.Contains(resp.Body, "tls=true") {
				t.Errorf("foo.pass.test: client saw %v (%q), want the backend's own TLS", subject(resp), resp.Body)
			}
			resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.pass.test", "/") }, "specific")
			if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
				t.Errorf("edge.pass.test: client saw %v, want the router's default certificate (TLS terminated here)", subject(resp))
			}
			// One label only: not passthrough, terminated here, no route.
			resp, err := r.httpsGet("x.y.pass.test", "/")
			must(t, err)
			if resp.Status != 503 || resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
				t.Errorf("x.y.pass.test: got %d with %v, want 503 from the router itself", resp.Status, subject(resp))
			}
		})
	})
	t.Run("not allowed", func(t *testing.T) {
		r := startRouter(t, m.Dir, nil)
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("specific.example.com", "/") }, "specific")
		expectLogLine(t, r, `route="w/wild"`, `reason="RouteNotAdmitted"`, `message="wildcard routes are not allowed"`)
		for _, host := range []string{"anything.example.com", "wildcard.example.com"} {
			resp, err := r.httpGet(host, "/")
			must(t, err)
			if resp.Status != 503 {
				t.Errorf("%s: got %d from %q, want 503 (wildcard route rejected)", host, resp.Status, resp.backend())
			}
		}
		resp, err := r.httpsGet("foo.pass.test", "/")
		must(t, err)
		if resp.Status != 503 || resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
			t.Errorf("foo.pass.test: got %d with %v, want 503 from the router itself", resp.Status, subject(resp))
		}
	})
}

// TestWildcardSubdomainOwnership: the namespace of a wildcard route owns
// its subdomain; a specific host of another namespace in it is rejected.
func TestWildcardSubdomainOwnership(t *testing.T) {
	wild, theirs := startBackend(t, "wild"), startBackend(t, "theirs")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("ns1", "wild", wild)+"---\n"+serviceYAML("ns2", "theirs", theirs))
	m.Write("routes.yaml", strings.Join([]string{
		createdAt(wildcardYAML("ns1", "w", "w.abc.xyz", "", "wild", ""), 1),
		createdAt(routeYAML("ns2", "z", "z.abc.xyz", "", "theirs", ""), 2),
	}, "---\n"))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_ALLOW_WILDCARD_ROUTES": "true"})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("any.abc.xyz", "/") }, "wild")
	expectLogLine(t, r, `route="ns2/z"`, `reason="HostAlreadyClaimed"`, "a route in another namespace holds host z.abc.xyz", `holder="ns1/w"`)
	alwaysBackend(t, time.Second, func() (response, error) { return r.httpGet("z.abc.xyz", "/") }, "wild")
}

// TestAllowedAndDeniedDomains is §5.7.17's combined example with real
// requests: allowed hosts are served, the others refused (RouteNotAdmitted).
func TestAllowedAndDeniedDomains(t *testing.T) {
	be := startBackend(t, "be")
	allowed := []string{"openshift.org", "api.openshift.org", "m.api.openshift.org", "kates.net", "api.kates.net"}
	denied := []string{"www.open.header.test", "ops.openshift.org", "log.ops.openshift.org", "www.block.it", "metrics.kates.net", "int.metrics.kates.net"}
	m := newManifests(t)
	docs := []string{serviceYAML("d", "be", be)}
	for i, h := range append(append([]string{}, allowed...), denied...) {
		docs = append(docs, routeYAML("d", fmt.Sprintf("r%d", i), h, "", "be", ""))
	}
	m.Write("all.yaml", strings.Join(docs, "---\n"))
	r := startRouter(t, m.Dir, map[string]string{
		"ROUTER_ALLOWED_DOMAINS": "openshift.org, kates.net",
		"ROUTER_DENIED_DOMAINS":  " ops.openshift.org,metrics.kates.net ",
	})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(allowed[0], "/") }, "be")
	for _, h := range allowed {
		resp, err := r.httpGet(h, "/")
		must(t, err)
		if resp.Status != 200 || resp.backend() != "be" {
			t.Errorf("allowed %s: got %d from %q", h, resp.Status, resp.backend())
		}
	}
	for _, h := range denied {
		resp, err := r.httpGet(h, "/")
		must(t, err)
		if resp.Status != 503 {
			t.Errorf("denied %s: got %d from %q, want 503", h, resp.Status, resp.backend())
		}
	}
	expectLogLine(t, r, `host="log.ops.openshift.org"`, `reason="RouteNotAdmitted"`, `message="host in list of denied domains"`)
	expectLogLine(t, r, `host="www.block.it"`, `reason="RouteNotAdmitted"`, `message="host not in the allowed list of domains"`)
}

// TestMalformedAdmissionSettingsAreIgnoredWithAWarning: a malformed domain
// list entry or flag is ignored as OpenShift's router ignores it, with a
// warning naming the variable.
func TestMalformedAdmissionSettingsAreIgnoredWithAWarning(t *testing.T) {
	be := startBackend(t, "adm")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("adm", "web", be))
	m.Write("route.yaml", routeYAML("adm", "web", "web.example.com", "", "web", ""))
	// As OpenShift's router: malformed entries never match a host, and a
	// malformed boolean reads as false. The router starts, serves and
	// names each variable in a warning.
	env := map[string]string{
		"ROUTER_ALLOWED_DOMAINS":                   "example.com, not a domain",
		"ROUTER_DENIED_DOMAINS":                    "*.example.com",
		"ROUTER_ALLOW_WILDCARD_ROUTES":             "sometimes",
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "perhaps",
	}
	r := startRouter(t, m.Dir, env)
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("web.example.com", "/") }, "adm")
	for name := range env {
		if !strings.Contains(r.Log(), "configuration warning: "+name) {
			t.Errorf("no configuration warning naming %s:\n%s", name, r.Log())
		}
	}
}
