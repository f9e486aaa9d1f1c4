package e2e

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// TestRoutesDeletedAndCreatedAgainNeedNoReload: routes of every type —
// unsecured with a path, edge with its own certificate and with the
// default one, passthrough, re-encrypt — deleted and created again are
// applied through the runtime API: deleted, their map entries and
// certificates go ("del map", "del ssl crt-list", "del ssl cert") and
// the host is no longer served; created again, each takes its own
// backend back (HAProxy keeps it until the next reload) with its map
// entries and certificate ("new ssl cert", "add ssl crt-list"). No
// reload, no new haproxy process. A route of a new name whose backend no
// removed one can stand for (a balance no other route has) still
// reloads, counted with reason "backends"; after that reload every route
// answers as before.
func TestRoutesDeletedAndCreatedAgainNeedNoReload(t *testing.T) {
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	edgeCert, err := routeCA.Issue("edge.rr.example.com", []string{"edge.rr.example.com"}, time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"pt.rr.example.com"}, time.Hour)
	must(t, err)
	plain := []*backend{startBackend(t, "rr-1"), startBackend(t, "rr-2")}
	secure := startTLSBackend(t, "rr-secure", backendCert.CertPEM, backendCert.KeyPEM)
	pt := startTLSBackend(t, "rr-pt", ptCert.CertPEM, ptCert.KeyPEM)

	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rr", "plain", plain...)+"---\n"+serviceYAML("rr", "secure", secure)+"---\n"+serviceYAML("rr", "pt", pt))
	type check struct {
		name string
		// served checks the route is served as created; gone that it is
		// not served any more.
		served, gone func() error
	}
	wantBackend := func(get func() (response, error), want ...string) func() error {
		return func() error {
			resp, err := get()
			if err != nil {
				return err
			}
			for _, w := range want {
				if resp.backend() == w {
					return nil
				}
			}
			return fmt.Errorf("status %d from %q, want %v", resp.Status, resp.backend(), want)
		}
	}
	wantStatus := func(get func() (response, error), status int) func() error {
		return func() error {
			resp, err := get()
			if err != nil {
				return err
			}
			if resp.Status != status || resp.backend() != "" {
				return fmt.Errorf("status %d from %q, want %d from the router", resp.Status, resp.backend(), status)
			}
			return nil
		}
	}
	routes := map[string]string{
		// Anchors: routes that stay (the changes are worked out against
		// the routes' text around them).
		"anchor-a":  routeYAML("rr", "anchor-a", "a.rr.example.com", "", "plain", ""),
		"anchor-z":  routeYAML("rr", "anchor-z", "z.rr.example.com", "", "plain", ""),
		"unsecured": routeYAML("rr", "unsecured", "u.rr.example.com", "/app", "plain", ""),
		"edge": routeYAML("rr", "edge", "edge.rr.example.com", "", "plain", tlsYAML("edge", "", map[string]string{
			"certificate": edgeCert.CertPEM, "key": edgeCert.KeyPEM, "caCertificate": routeCA.CertPEM})),
		"edge-default": routeYAML("rr", "edge-default", "edge-default.rr.example.com", "", "plain", tlsYAML("edge", "", nil)),
		"passthrough":  routeYAML("rr", "passthrough", "pt.rr.example.com", "", "pt", tlsYAML("passthrough", "", nil)),
		"reencrypt":    routeYAML("rr", "reencrypt", "re.rr.example.com", "", "secure", tlsYAML("reencrypt", "", nil)),
	}
	for name, y := range routes {
		m.Write(name+".yaml", y)
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	plainNames := backendNames(plain)
	edgeCN := func(want bool) func() error {
		return func() error {
			resp, err := r.httpsGet("edge.rr.example.com", "/")
			if err != nil {
				return err
			}
			got := resp.PeerCert != nil && resp.PeerCert.Subject.CommonName == "edge.rr.example.com"
			if got != want {
				return fmt.Errorf("edge certificate shown: %v, want %v (status %d from %q)", got, want, resp.Status, resp.backend())
			}
			if want && resp.backend() != "rr-1" && resp.backend() != "rr-2" {
				return fmt.Errorf("status %d from %q", resp.Status, resp.backend())
			}
			return nil
		}
	}
	checks := []check{
		{"unsecured",
			wantBackend(func() (response, error) { return r.httpGet("u.rr.example.com", "/app/x") }, plainNames...),
			wantStatus(func() (response, error) { return r.httpGet("u.rr.example.com", "/app/x") }, 503)},
		{"edge", edgeCN(true), edgeCN(false)},
		{"edge-default",
			wantBackend(func() (response, error) { return r.httpsGet("edge-default.rr.example.com", "/") }, plainNames...),
			wantStatus(func() (response, error) { return r.httpsGet("edge-default.rr.example.com", "/") }, 503)},
		{"passthrough",
			wantBackend(func() (response, error) { return r.httpsGet("pt.rr.example.com", "/") }, "rr-pt"),
			wantStatus(func() (response, error) { return r.httpsGet("pt.rr.example.com", "/") }, 503)},
		{"reencrypt",
			wantBackend(func() (response, error) { return r.httpsGet("re.rr.example.com", "/") }, "rr-secure"),
			wantStatus(func() (response, error) { return r.httpsGet("re.rr.example.com", "/") }, 503)},
	}
	for _, c := range checks {
		eventually(t, loadTimeout, c.name+" served", c.served)
	}
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)
	for _, c := range checks {
		m.Remove(c.name + ".yaml")
		eventually(t, 30*time.Second, c.name+" no longer served once deleted", c.gone)
		noReload(c.name + " deleted")
		m.Write(c.name+".yaml", routes[c.name])
		eventually(t, 30*time.Second, c.name+" served again once created again", c.served)
		noReload(c.name + " created again")
	}
	// The others are untouched throughout.
	for _, c := range checks {
		eventually(t, 5*time.Second, c.name+" served", c.served)
	}
	if v := ms.mustValue(t, "template_router_reloads_avoided_total", map[string]string{"kind": "routes"}); v < float64(2*len(checks)) {
		t.Errorf("reloads avoided for routes: %v, want at least %d", v, 2*len(checks))
	}

	// A route of a new name and a balance no other route has: no removed
	// backend can stand for it.
	backends := map[string]string{"reason": "backends"}
	backends0 := ms.mustValue(t, "template_router_reloads_total", backends)
	m.Write("new.yaml", annotatedRouteYAML("rr", "new", "new.rr.example.com", "", "plain", "",
		map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}))
	expectExactly(t, 30*time.Second, r, "new.rr.example.com", plainNames...)
	eventually(t, 30*time.Second, "one reload for the backend", func() error {
		if v := ms.mustValue(t, "template_router_reloads_total", backends); v != backends0+1 {
			return fmt.Errorf("reloads for backends: %v (%s), want %v", v, ms.reloadReasons(), backends0+1)
		}
		return nil
	})
	// After that reload (every backend laid out afresh, the orphans gone)
	// every route answers as before.
	for _, c := range checks {
		eventually(t, 30*time.Second, c.name+" served after the reload", c.served)
	}
}

// TestARouteOfAnotherNameTakesOverADeletedRoutesBackend: with sticky
// cookies off (no cookie name of its own in its backend), a route created
// after another was deleted runs in that route's backend, which HAProxy
// keeps: no reload. The metrics report its traffic under its own route,
// and nothing under the deleted one; the next reload (compaction) changes
// no answer.
func TestARouteOfAnotherNameTakesOverADeletedRoutesBackend(t *testing.T) {
	bes := []*backend{startBackend(t, "to-1"), startBackend(t, "to-2")}
	noCookies := "  annotations:\n    haproxy.router.openshift.io/disable_cookies: \"true\"\n"
	route := func(name, host string) string {
		return strings.Replace(routeYAML("to", name, host, "", "web", ""), "  namespace: to\n", "  namespace: to\n"+noCookies, 1)
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("to", "web", bes...))
	for _, n := range []string{"anchor-a", "old", "anchor-z"} {
		m.Write(n+".yaml", route(n, n+".to.example.com"))
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	names := backendNames(bes)
	expectExactly(t, loadTimeout, r, "old.to.example.com", names...)
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)

	m.Remove("old.yaml")
	m.Write("fresh.yaml", route("fresh", "fresh.to.example.com"))
	expectExactly(t, 30*time.Second, r, "fresh.to.example.com", names...)
	expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet("old.to.example.com", "/") }, 503)
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: the new route should take the deleted one's backend", reloads, ms.reloadReasons(), reloads0)
	}
	// Its traffic is counted under its own route; the deleted one is gone.
	eventually(t, 30*time.Second, "metrics under the new route", func() error {
		if _, err := r.httpGet("fresh.to.example.com", "/"); err != nil {
			return err
		}
		s, err := ms.get()
		if err != nil {
			return err
		}
		v, err := s.value("haproxy_backend_connections_total", map[string]string{"backend": "http", "namespace": "to", "route": "fresh"})
		if err != nil || v < 1 {
			return fmt.Errorf("route fresh: %v %v", v, err)
		}
		if _, err := s.value("haproxy_backend_connections_total", map[string]string{"backend": "http", "namespace": "to", "route": "old"}); err == nil {
			return fmt.Errorf("the deleted route old is still reported")
		}
		return nil
	})
	// A reload (a route added that needs one: a balance no backend has)
	// changes no answer.
	m.Write("lc.yaml", annotatedRouteYAML("to", "lc", "lc.to.example.com", "", "web", "",
		map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}))
	expectExactly(t, 30*time.Second, r, "lc.to.example.com", names...)
	eventually(t, 30*time.Second, "a reload for a route of a balance of its own", func() error {
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads == reloads0 {
			return fmt.Errorf("reloads %v", reloads)
		}
		return nil
	})
	expectExactly(t, 30*time.Second, r, "fresh.to.example.com", names...)
	expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet("old.to.example.com", "/") }, 503)
}

// TestRoutesOfSharedShapesAreAddedInSpareBackends: HAProxy loads spare
// backends of the shapes several routes share (ROUTER_SPARE_BACKENDS):
// passthrough routes and routes without a sticky cookie of their own
// of new names are then added without a reload, and reported under their
// own routes.
func TestRoutesOfSharedShapesAreAddedInSpareBackends(t *testing.T) {
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"*.sp.example.com"}, time.Hour)
	must(t, err)
	pt := startTLSBackend(t, "sp-pt", ptCert.CertPEM, ptCert.KeyPEM)
	plain := []*backend{startBackend(t, "sp-1"), startBackend(t, "sp-2")}
	noCookies := "  annotations:\n    haproxy.router.openshift.io/disable_cookies: \"true\"\n"
	unsecured := func(name string) string {
		return strings.Replace(routeYAML("sp", name, name+".sp.example.com", "", "plain", ""), "  namespace: sp\n", "  namespace: sp\n"+noCookies, 1)
	}
	passthrough := func(name string) string {
		return routeYAML("sp", name, name+".sp.example.com", "", "pt", tlsYAML("passthrough", "", nil))
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("sp", "plain", plain...)+"---\n"+serviceYAML("sp", "pt", pt))
	m.Write("anchor-a.yaml", routeYAML("sp", "anchor-a", "anchor-a.sp.example.com", "", "plain", ""))
	m.Write("anchor-z.yaml", routeYAML("sp", "anchor-z", "anchor-z.sp.example.com", "", "plain", ""))
	for _, n := range []string{"nc-a", "nc-b"} {
		m.Write(n+".yaml", unsecured(n))
	}
	for _, n := range []string{"pt-a", "pt-b"} {
		m.Write(n+".yaml", passthrough(n))
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	names := backendNames(plain)
	expectExactly(t, loadTimeout, r, "nc-b.sp.example.com", names...)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("pt-b.sp.example.com", "/") }, "sp-pt")
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)
	if cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "spare-backends.cfg")); err != nil || !strings.Contains(string(cfg), "backend be_spare:") {
		t.Fatalf("no spare backend loaded (%v)", err)
	}
	if cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config")); err != nil || strings.Contains(string(cfg), "be_spare:") {
		t.Fatalf("spare backends in haproxy.config, which is what a render writes (%v)", err)
	}

	for i := 0; i < 3; i++ {
		nc, ptn := fmt.Sprintf("nc-new%d", i), fmt.Sprintf("pt-new%d", i)
		m.Write(nc+".yaml", unsecured(nc))
		m.Write(ptn+".yaml", passthrough(ptn))
		expectExactly(t, 30*time.Second, r, nc+".sp.example.com", names...)
		expectBackend(t, 30*time.Second, func() (response, error) { return r.httpsGet(ptn+".sp.example.com", "/") }, "sp-pt")
	}
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: routes of shared shapes should run in spare backends", reloads, ms.reloadReasons(), reloads0)
	}
	eventually(t, 30*time.Second, "metrics under the new route", func() error {
		if _, err := r.httpGet("nc-new0.sp.example.com", "/"); err != nil {
			return err
		}
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("haproxy_backend_connections_total", map[string]string{"backend": "http", "namespace": "sp", "route": "nc-new0"}); err != nil || v < 1 {
			return fmt.Errorf("route nc-new0: %v %v", v, err)
		}
		for _, f := range s.families["haproxy_backend_connections_total"].GetMetric() {
			for _, l := range f.GetLabel() {
				if strings.Contains(l.GetValue(), "be_spare") {
					return fmt.Errorf("a spare backend is reported: %v", f.GetLabel())
				}
			}
		}
		return nil
	})
}

// forwardedHostSeen returns a check that host's backend (an echoBackend)
// eventually reports want for a request whose client sent X-Forwarded-Host
// client.example ("xfh=[client.example]": passed through untouched).
func forwardedHostSeen(t *testing.T, r *router) func(host, want string) {
	in := http.Header{"X-Forwarded-Host": {"client.example"}}
	return func(host, want string) {
		t.Helper()
		eventually(t, 30*time.Second, host, func() error {
			resp, err := annRequest(r, false, host, "/", in)
			if err != nil || !strings.Contains(resp.Body, want) {
				return fmt.Errorf("backend saw %q (%v), want %q", resp.Body, err, want)
			}
			return nil
		})
	}
}

// TestARouteThatTakesOverABackendKeepsItsForwardedHeadersPolicy: the
// frontends set X-Forwarded-* for every backend not named in
// forwarded_headers.map; a route of the never policy that takes over a
// deleted route's backend (no reload) gets its map entry under the name
// HAProxy runs that backend as, so the client's headers still reach its
// backend untouched.
func TestARouteThatTakesOverABackendKeepsItsForwardedHeadersPolicy(t *testing.T) {
	be := echoBackend(t, "fw-echo")
	ann := map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
	never := map[string]string{"haproxy.router.openshift.io/disable_cookies": "true", "haproxy.router.openshift.io/set-forwarded-headers": "never"}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("fw", "web", be))
	m.Write("default.yaml", annotatedRouteYAML("fw", "default", "default.fw.example.com", "", "web", "", ann))
	for _, n := range []string{"never-anchor", "never-old"} {
		m.Write(n+".yaml", annotatedRouteYAML("fw", n, n+".fw.example.com", "", "web", "", never))
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expect := forwardedHostSeen(t, r)
	expect("never-old.fw.example.com", "xfh=[client.example]")
	expect("default.fw.example.com", "xfh=[default.fw.example.com]")
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)

	m.Remove("never-old.yaml")
	m.Write("never-new.yaml", annotatedRouteYAML("fw", "never-new", "never-new.fw.example.com", "", "web", "", never))
	expect("never-new.fw.example.com", "xfh=[client.example]")
	expect("default.fw.example.com", "xfh=[default.fw.example.com]")
	expect("never-anchor.fw.example.com", "xfh=[client.example]")
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: the new route should take the deleted one's backend", reloads, ms.reloadReasons(), reloads0)
	}
}

// TestTheFirstRouteOfAnotherForwardedHeadersPolicyReloadsOnce: while no
// route's set-forwarded-headers policy differs from the router-wide one,
// the frontends set X-Forwarded-* for every request without looking
// forwarded_headers.map up; the first route of the never policy makes them
// look it up (one reload), another that takes over its backend needs none,
// and the last going — a deletion, which alone needs no reload — takes the
// lookup away again (one reload). Every route gets its policy's headers
// throughout.
func TestTheFirstRouteOfAnotherForwardedHeadersPolicyReloadsOnce(t *testing.T) {
	be := echoBackend(t, "fl-echo")
	ann := map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
	never := map[string]string{"haproxy.router.openshift.io/disable_cookies": "true", "haproxy.router.openshift.io/set-forwarded-headers": "never"}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("fl", "web", be))
	m.Write("default.yaml", annotatedRouteYAML("fl", "default", "default.fl.example.com", "", "web", "", ann))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expect := forwardedHostSeen(t, r)
	lookups := func() int {
		cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
		must(t, err)
		return strings.Count(string(cfg), "set-var(txn.fwd_other)")
	}
	expect("default.fl.example.com", "xfh=[default.fl.example.com]")
	waitReady(t, ms)
	if n := lookups(); n != 0 {
		t.Fatalf("no route of another policy, yet %d frontends look forwarded_headers.map up", n)
	}
	steps := []struct {
		name    string
		change  func()
		reloads float64
		lookups bool
	}{
		{"the first route of the never policy", func() {
			m.Write("never-1.yaml", annotatedRouteYAML("fl", "never-1", "never-1.fl.example.com", "", "web", "", never))
		}, 1, true},
		{"another in its place (its backend taken over)", func() {
			// One file: the deletion and the addition in one change.
			m.Write("never-1.yaml", annotatedRouteYAML("fl", "never-2", "never-2.fl.example.com", "", "web", "", never))
		}, 0, true},
		{"the last deleted", func() { m.Remove("never-1.yaml") }, 1, false},
	}
	for _, s := range steps {
		before := ms.settledReloads(t)
		s.change()
		if b, err := os.ReadFile(filepath.Join(m.Dir, "never-1.yaml")); err == nil {
			name := map[bool]string{false: "never-1", true: "never-2"}[strings.Contains(string(b), "never-2")]
			expect(name+".fl.example.com", "xfh=[client.example]")
		}
		expect("default.fl.example.com", "xfh=[default.fl.example.com]")
		if got := ms.settledReloads(t) - before; got != s.reloads {
			t.Errorf("%s: %v reloads (%s), want %v", s.name, got, ms.reloadReasons(), s.reloads)
		}
		if n := lookups(); (n == 3) != s.lookups || n != 0 && n != 3 {
			t.Errorf("%s: %d frontends look forwarded_headers.map up, want it in all 3: %v", s.name, n, s.lookups)
		}
	}
}

// timeoutRouteYAML is route name of namespace ns, host NAME.NS.example.com,
// on service slow, with the timeout annotation (none for "").
func timeoutRouteYAML(ns, name, timeout string) string {
	ann := map[string]string{}
	if timeout != "" {
		ann["haproxy.router.openshift.io/timeout"] = timeout
	}
	return annotatedRouteYAML(ns, name, name+"."+ns+".example.com", "", "slow", "", ann)
}

// TestARouteTimeoutChangesWithoutAReload: an HTTP route's timeout
// annotation is a map entry the defaults section reads by backend name
// (http-request set-timeout): while another route has a timeout (the
// lookup is rendered), a timeout set, changed and removed goes through
// the runtime API, each taking effect on the next request, without a
// reload.
func TestARouteTimeoutChangesWithoutAReload(t *testing.T) {
	slow := startSlowBackend(t, "tmo-slow", 2*time.Second)
	route := func(name, timeout string) string { return timeoutRouteYAML("tmo", name, timeout) }
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("tmo", "slow", slow.backend))
	m.Write("keep.yaml", route("keep", "30s"))
	m.Write("route.yaml", route("slow", ""))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("slow.tmo.example.com", "/") }, 200)
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)

	for _, step := range []struct {
		timeout string
		want    int
	}{{"1s", 504}, {"5s", 200}, {"500ms", 504}, {"", 200}} {
		m.Write("route.yaml", route("slow", step.timeout))
		expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet("slow.tmo.example.com", "/") }, step.want)
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
			t.Fatalf("timeout %q: reloads %v (%s), were %v", step.timeout, reloads, ms.reloadReasons(), reloads0)
		}
	}
}

// TestTheFirstRouteTimeoutReloadsOnce: the defaults section looks
// timeout_server.map up (a lookup on every request) only while a route has
// a timeout: the first such route reloads HAProxy once, more of them and
// their changes need none, and the last going reloads once again; each
// route's timeout holds throughout.
func TestTheFirstRouteTimeoutReloadsOnce(t *testing.T) {
	slow := startSlowBackend(t, "tf-slow", 2*time.Second)
	route := func(name, timeout string) string { return timeoutRouteYAML("tf", name, timeout) }
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("tf", "slow", slow.backend))
	// (b is there from the start: a route added to a namespace of one
	// route finds no spare of its own, and reloads whatever its settings.)
	m.Write("a.yaml", route("a", ""))
	m.Write("b.yaml", route("b", ""))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	status := func(name string, want int) {
		t.Helper()
		expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet(name+".tf.example.com", "/") }, want)
	}
	lookups := func() int {
		cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
		must(t, err)
		return strings.Count(string(cfg), "http-request set-timeout server be_name,map_str_int(")
	}
	status("a", 200)
	status("b", 200)
	waitReady(t, ms)
	if n := lookups(); n != 0 {
		t.Fatalf("no route has a timeout, yet %d lookups of timeout_server.map", n)
	}
	steps := []struct {
		name    string
		change  func()
		want    map[string]int
		reloads float64
		lookup  bool
	}{
		{"the first route with a timeout", func() { m.Write("a.yaml", route("a", "1s")) }, map[string]int{"a": 504, "b": 200}, 1, true},
		{"a second one", func() { m.Write("b.yaml", route("b", "5s")) }, map[string]int{"a": 504, "b": 200}, 0, true},
		{"the first one's timeout removed: the second keeps the lookup", func() { m.Write("a.yaml", route("a", "")) }, map[string]int{"a": 200, "b": 200}, 0, true},
		{"the second one's timeout shortened", func() { m.Write("b.yaml", route("b", "500ms")) }, map[string]int{"a": 200, "b": 504}, 0, true},
		{"the last one removed", func() { m.Write("b.yaml", route("b", "")) }, map[string]int{"a": 200, "b": 200}, 1, false},
	}
	for _, s := range steps {
		before := ms.settledReloads(t)
		s.change()
		for _, name := range []string{"a", "b"} {
			if want, ok := s.want[name]; ok {
				status(name, want)
			}
		}
		if got := ms.settledReloads(t) - before; got != s.reloads {
			t.Errorf("%s: %v reloads (%s), want %v", s.name, got, ms.reloadReasons(), s.reloads)
		}
		if n := lookups(); (n == 1) != s.lookup || n > 1 {
			t.Errorf("%s: %d lookups of timeout_server.map, want one: %v", s.name, n, s.lookup)
		}
	}
}

// TestARouteAllowlistChangesWithoutAReload: the default template reads
// every allowlist from its file (acl allowlist src -f): a changed list is
// "add acl" / "del acl" through the runtime API, taking effect on the next
// connection, without a reload.
func TestARouteAllowlistChangesWithoutAReload(t *testing.T) {
	be := startBackend(t, "al-ref")
	route := func(list string) string {
		return annotatedRouteYAML("alrt", "web", "web.alrt.example.com", "", "web", "",
			map[string]string{"haproxy.router.openshift.io/ip_allowlist": list})
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("alrt", "web", be))
	m.Write("route.yaml", route("10.0.0.0/8 127.0.0.1"))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	get := func() (response, error) { return r.httpGet("web.alrt.example.com", "/") }
	expectBackend(t, loadTimeout, get, "al-ref")
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)
	refused := func(what string) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			if resp, err := get(); err == nil {
				return fmt.Errorf("client 127.0.0.1 still served: %d %q", resp.Status, resp.backend())
			}
			return nil
		})
	}

	m.Write("route.yaml", route("10.0.0.0/8 192.168.0.0/16"))
	refused("127.0.0.1 removed from the list")
	m.Write("route.yaml", route("192.168.0.0/16 127.0.0.0/8"))
	expectBackend(t, 30*time.Second, get, "al-ref")
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: allowlist changes should not reload", reloads, ms.reloadReasons(), reloads0)
	}
}

// TestARouteHSTSHeaderChangesWithoutAReload: the default template keeps
// hsts_header values in hsts.map, read by the defaults section while a
// route has one: a value set, changed (with ';', escaped for the runtime
// API) and removed is sent over TLS from the next response on, without a
// reload.
func TestARouteHSTSHeaderChangesWithoutAReload(t *testing.T) {
	be := startBackend(t, "hsts-ref")
	ca, err := testcerts.NewCA("hsts CA", time.Hour)
	must(t, err)
	leaf, err := ca.Issue("hsts.rt.example.com", []string{"hsts.rt.example.com"}, time.Hour)
	must(t, err)
	route := func(hsts string) string {
		ann := map[string]string{}
		if hsts != "" {
			ann["haproxy.router.openshift.io/hsts_header"] = hsts
		}
		return annotatedRouteYAML("hstsrt", "web", "hsts.rt.example.com", "", "web",
			tlsYAML("edge", "", map[string]string{"certificate": leaf.CertPEM, "key": leaf.KeyPEM}), ann)
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("hstsrt", "web", be))
	// Another route with an HSTS header: hsts.map is looked up while a
	// route has one (the first, or the last going, reloads once).
	keeper, err := ca.Issue("keep.hsts.rt.example.com", []string{"keep.hsts.rt.example.com"}, time.Hour)
	must(t, err)
	m.Write("keep.yaml", annotatedRouteYAML("hstsrt", "keep", "keep.hsts.rt.example.com", "", "web",
		tlsYAML("edge", "", map[string]string{"certificate": keeper.CertPEM, "key": keeper.KeyPEM}),
		map[string]string{"haproxy.router.openshift.io/hsts_header": "max-age=1"}))
	m.Write("route.yaml", route(""))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return annRequest(r, true, "hsts.rt.example.com", "/", nil) }, "hsts-ref")
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)
	for _, want := range []string{"max-age=600", "max-age=31536000;includeSubDomains;preload", ""} {
		m.Write("route.yaml", route(want))
		eventually(t, 30*time.Second, "Strict-Transport-Security "+want, func() error {
			resp, err := annRequest(r, true, "hsts.rt.example.com", "/", nil)
			if err != nil {
				return err
			}
			if got := resp.Header.Get("Strict-Transport-Security"); got != want {
				return fmt.Errorf("Strict-Transport-Security %q", got)
			}
			return nil
		})
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
			t.Fatalf("hsts_header %q: reloads %v (%s), were %v", want, reloads, ms.reloadReasons(), reloads0)
		}
	}
}

// TestARouteRateLimitChangesWithoutAReload: a rate-limited route's
// backend reads its limits from maps by backend name: a changed limit is
// "set map", taking effect on the next request, without a reload — for an
// HTTP route (rate-http) and a passthrough one (rate-tcp, TCP mode).
func TestARouteRateLimitChangesWithoutAReload(t *testing.T) {
	be := startBackend(t, "rl-ref")
	route := func(rate string) string {
		return annotatedRouteYAML("rlrt", "web", "web.rlrt.example.com", "", "web", "", map[string]string{
			"haproxy.router.openshift.io/rate-limit-connections":           "true",
			"haproxy.router.openshift.io/rate-limit-connections.rate-http": rate,
		})
	}
	ca, err := testcerts.NewCA("rl backend CA", time.Hour)
	must(t, err)
	ptCert, err := ca.Issue("pt.rlrt.example.com", []string{"pt.rlrt.example.com"}, time.Hour)
	must(t, err)
	pt := startTLSBackend(t, "rl-pt", ptCert.CertPEM, ptCert.KeyPEM)
	ptRoute := func(rate string) string {
		return annotatedRouteYAML("rlrt", "pt", "pt.rlrt.example.com", "", "pt", tlsYAML("passthrough", "", nil), map[string]string{
			"haproxy.router.openshift.io/rate-limit-connections":          "true",
			"haproxy.router.openshift.io/rate-limit-connections.rate-tcp": rate,
		})
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rlrt", "web", be)+"---\n"+serviceYAML("rlrt", "pt", pt))
	m.Write("route.yaml", route("1000"))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	get := func() (response, error) { return r.httpGet("web.rlrt.example.com", "/") }
	expectBackend(t, loadTimeout, get, "rl-ref")
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)
	served := func(n int) int { return answered(n, get, "rl-ref") }

	// A limit below what the client already sent in the window (10 s):
	// refused.
	m.Write("route.yaml", route("1"))
	eventually(t, 30*time.Second, "requests beyond rate-http 1 refused", func() error {
		if n := served(3); n != 0 {
			return fmt.Errorf("%d of 3 served", n)
		}
		return nil
	})
	m.Write("route.yaml", route("100000"))
	eventually(t, 30*time.Second, "requests served under rate-http 100000", func() error {
		if n := served(3); n != 3 {
			return fmt.Errorf("%d of 3 served", n)
		}
		return nil
	})
	// A passthrough route (TCP mode): its connection rate limit.
	m.Write("pt.yaml", ptRoute("1"))
	getPT := func() (response, error) { return r.httpsGet("pt.rlrt.example.com", "/") }
	expectBackend(t, 30*time.Second, getPT, "rl-pt")
	reloads0 = ms.settledReloads(t)
	servedPT := func(n int) int { return answered(n, getPT, "rl-pt") }
	eventually(t, 30*time.Second, "connections beyond rate-tcp 1 refused", func() error {
		if n := servedPT(3); n == 3 {
			return fmt.Errorf("%d of 3 served", n)
		}
		return nil
	})
	m.Write("pt.yaml", ptRoute("100000"))
	eventually(t, 30*time.Second, "connections served under rate-tcp 100000", func() error {
		if n := servedPT(3); n != 3 {
			return fmt.Errorf("%d of 3 served", n)
		}
		return nil
	})
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: rate limit changes should not reload", reloads, ms.reloadReasons(), reloads0)
	}
}

// answered is how many of n requests (get) backend answered.
func answered(n int, get func() (response, error), backend string) int {
	ok := 0
	for i := 0; i < n; i++ {
		if resp, err := get(); err == nil && resp.backend() == backend {
			ok++
		}
	}
	return ok
}

// TestARouteOfANewNameWithTheDefaultStickyCookieNeedsNoReload: a backend
// HAProxy runs with another sticky cookie name than its route's is renamed
// by the defaults section "routes" (sticky_renames.map, filled at
// runtime), so a route with the default cookie created after another was
// deleted — a route of a new name, unsecured or edge — takes the deleted
// route's backend without a reload. Clients see the cookie OpenShift would set:
// named after the new route (md5 of " namespace:name"), Secure and
// SameSite=None over TLS, pinning them to their endpoint, removed from the
// request the endpoint gets (the other cookies kept), the application's
// own cookies untouched; a cookie of the deleted route pins nothing. A
// reload later changes none of it. A changed cookie_name needs none either.
func TestARouteOfANewNameWithTheDefaultStickyCookieNeedsNoReload(t *testing.T) {
	start := func(name string) *backend {
		srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/app" {
				http.SetCookie(w, &http.Cookie{Name: "app", Value: "v1"})
			}
			fmt.Fprintf(w, "backend=%s cookie=[%s]\n", name, r.Header.Get("Cookie"))
		}))
		return newBackend(t, name, srv)
	}
	bes := []*backend{start("ck-1"), start("ck-2")}
	names := backendNames(bes)
	cookieName := func(route string) string {
		sum := md5.Sum([]byte(" ck:" + route))
		return hex.EncodeToString(sum[:])
	}
	unsecured := func(name string) string { return routeYAML("ck", name, name+".ck.example.com", "", "web", "") }
	edge := func(name string) string {
		return routeYAML("ck", name, name+".ck.example.com", "", "web", tlsYAML("edge", "", nil))
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("ck", "web", bes...))
	m.Write("anchor-a.yaml", unsecured("anchor-a"))
	m.Write("old.yaml", unsecured("old"))
	m.Write("e-old.yaml", edge("e-old"))
	m.Write("anchor-z.yaml", unsecured("anchor-z"))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expectExactly(t, loadTimeout, r, "old.ck.example.com", names...)
	oldCookies := stickyCookies(t, r, "old.ck.example.com", names...)
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)

	m.Remove("old.yaml")
	m.Remove("e-old.yaml")
	m.Write("fresh.yaml", unsecured("fresh"))
	m.Write("e-fresh.yaml", edge("e-fresh"))
	expectExactly(t, 30*time.Second, r, "fresh.ck.example.com", names...)
	expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet("old.ck.example.com", "/") }, 503)
	expectBackend(t, 30*time.Second, func() (response, error) { return annRequest(r, true, "e-fresh.ck.example.com", "/", nil) }, names[0])
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: the new routes should take the deleted ones' backends", reloads, ms.reloadReasons(), reloads0)
	}

	check := func(when string) {
		t.Helper()
		cookies := stickyCookies(t, r, "fresh.ck.example.com", names...)
		for be, c := range cookies {
			if !strings.HasPrefix(c, cookieName("fresh")+"=") {
				t.Errorf("%s: fresh's cookie for %s is %q, want it named %s", when, be, c, cookieName("fresh"))
			}
			// The sticky cookie pins and goes; the others reach the endpoint.
			resp, err := doRequestWithCookie(r, "fresh.ck.example.com", "a=1; "+c+"; b=2")
			if err != nil || resp.backend() != be || !strings.Contains(resp.Body, "cookie=[a=1; b=2]") || resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s: with %q: %q, Set-Cookie %q (%v); want %s, cookie=[a=1; b=2], no new cookie", when, c, resp.Body, resp.Header.Get("Set-Cookie"), err, be)
			}
		}
		// A cookie of the deleted route is another route's: not honoured,
		// a cookie of fresh's own set. (HAProxy, running fresh in the
		// deleted route's backend, takes the cookie for its own until a
		// reload: it pins nothing, its values being of the deleted route's
		// key, but does not reach the endpoint.)
		for _, c := range oldCookies {
			resp, err := doRequestWithCookie(r, "fresh.ck.example.com", c)
			if err != nil || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), cookieName("fresh")+"=") {
				t.Errorf("%s: with the deleted route's cookie %q: %q, Set-Cookie %q (%v)", when, c, resp.Body, resp.Header.Get("Set-Cookie"), err)
			}
		}
		// The application's own cookie is left as it is, next to the
		// sticky cookie renamed in the same response.
		resp, err := annRequest(r, false, "fresh.ck.example.com", "/app", nil)
		if all := strings.Join(resp.Header.Values("Set-Cookie"), "\n"); err != nil || !strings.Contains(all, "app=v1") ||
			!strings.Contains(all, "\n"+cookieName("fresh")+"=") {
			t.Errorf("%s: the application's cookie and the sticky one: %v (%v)", when, resp.Header.Values("Set-Cookie"), err)
		}
		// Over TLS: the edge route's name, Secure and SameSite=None.
		seen := map[string]bool{}
		eventually(t, 30*time.Second, when+": e-fresh's cookie for every endpoint", func() error {
			resp, err := annRequest(r, true, "e-fresh.ck.example.com", "/", nil)
			if err != nil {
				return err
			}
			c := resp.Header.Get("Set-Cookie")
			if !strings.HasPrefix(c, cookieName("e-fresh")+"=") || !strings.Contains(c, "; Secure") || !strings.Contains(c, "SameSite=None") {
				return fmt.Errorf("Set-Cookie %q", c)
			}
			v, _, _ := strings.Cut(c, ";")
			again, err := annRequest(r, true, "e-fresh.ck.example.com", "/", http.Header{"Cookie": {v}})
			if err != nil || again.backend() != resp.backend() {
				return fmt.Errorf("cookie %q reached %q (%v), want %s", v, again.backend(), err, resp.backend())
			}
			seen[resp.backend()] = true
			if len(seen) < len(names) {
				return fmt.Errorf("seen %v", seen)
			}
			return nil
		})
	}
	check("taken over at runtime")
	// A cookie_name annotation added: a map entry changed, no reload.
	m.Write("named.yaml", annotatedRouteYAML("ck", "named", "named.ck.example.com", "", "web", "", nil))
	expectExactly(t, 30*time.Second, r, "named.ck.example.com", names...)
	reloads1 := ms.settledReloads(t)
	m.Write("named.yaml", annotatedRouteYAML("ck", "named", "named.ck.example.com", "", "web", "",
		map[string]string{"router.openshift.io/cookie_name": "mine"}))
	eventually(t, 30*time.Second, "the cookie named mine", func() error {
		resp, err := doRequestWithCookie(r, "named.ck.example.com", "")
		if err != nil || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "mine=") {
			return fmt.Errorf("Set-Cookie %q (%v)", resp.Header.Get("Set-Cookie"), err)
		}
		return nil
	})
	stickyCookies(t, r, "named.ck.example.com", names...)
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads1 {
		t.Fatalf("reloads %v (%s), were %v: a changed cookie name should need none", reloads, ms.reloadReasons(), reloads1)
	}

	// A reload (a route of a balance no backend has) changes none of it.
	m.Write("lc.yaml", annotatedRouteYAML("ck", "lc", "lc.ck.example.com", "", "web", "",
		map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}))
	expectExactly(t, 30*time.Second, r, "lc.ck.example.com", names...)
	eventually(t, 30*time.Second, "a reload", func() error {
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads == reloads0 {
			return fmt.Errorf("reloads %v", reloads)
		}
		return nil
	})
	check("after a reload")
}

// TestAReencryptRouteWithItsOwnDestinationCAIsAddedWithoutAReload: a
// re-encrypt route of a new name with a destinationCACertificate of its
// own is added through the runtime API — its CA file loaded ("new ssl
// ca-file", "set ssl ca-file", "commit ssl ca-file") before its server
// is added with it — and HAProxy verifies the backend with that CA: a
// route whose CA did not sign the backend's certificate is not served.
// Deleted and created again, it needs no reload either (HAProxy keeps the
// file). A route whose CA changes moves to a free backend (servers keep
// the CA they were created with; those added after the file is committed
// read the new one) and is served with the new CA: no reload. A route that
// starts or stops verifying with a CA of its own moves to a free backend:
// no reload.
func TestAReencryptRouteWithItsOwnDestinationCAIsAddedWithoutAReload(t *testing.T) {
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	otherCA, err := testcerts.NewCA("another CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	secure := startTLSBackend(t, "ca-secure", backendCert.CertPEM, backendCert.KeyPEM)
	route := func(name string, ca *testcerts.Pair) string {
		return routeYAML("ca", name, name+".ca.example.com", "", "secure",
			tlsYAML("reencrypt", "", map[string]string{"destinationCACertificate": ca.CertPEM}))
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("ca", "secure", secure))
	// Two routes of the kind loaded: spare backends of their shape.
	m.Write("anchor-a.yaml", route("anchor-a", backendCA))
	m.Write("anchor-z.yaml", route("anchor-z", backendCA))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	// answers checks that route name answers over TLS with status, from
	// backend ("": from the router itself).
	answers := func(name string, status int, backend string) func() error {
		return func() error {
			resp, err := r.httpsGet(name+".ca.example.com", "/")
			if err != nil {
				return err
			}
			if resp.Status != status || resp.backend() != backend {
				return fmt.Errorf("%s: status %d from %q, want %d from %q", name, resp.Status, resp.backend(), status, backend)
			}
			return nil
		}
	}
	served := func(name string) func() error { return answers(name, http.StatusOK, "ca-secure") }
	notServed := func(name string) func() error { return answers(name, http.StatusServiceUnavailable, "") }
	eventually(t, loadTimeout, "anchor-a served", served("anchor-a"))
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)

	m.Write("re-ca.yaml", route("re-ca", backendCA))
	eventually(t, 30*time.Second, "re-ca served once created", served("re-ca"))
	noReload("re-ca created")
	m.Write("re-wrong.yaml", route("re-wrong", otherCA))
	// Its map entries are there (no 503 for want of a route would tell
	// this apart), so wait until the route itself is applied.
	eventually(t, 30*time.Second, "re-wrong applied", func() error {
		if v := ms.mustValue(t, "template_router_reloads_avoided_total", map[string]string{"kind": "routes"}); v < 2 {
			return fmt.Errorf("reloads avoided for routes: %v", v)
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		if err := notServed("re-wrong")(); err != nil {
			t.Fatalf("a backend its CA did not sign: %v", err)
		}
	}
	noReload("re-wrong created")

	m.Remove("re-ca.yaml")
	eventually(t, 30*time.Second, "re-ca no longer served once deleted", notServed("re-ca"))
	noReload("re-ca deleted")
	m.Write("re-ca.yaml", route("re-ca", backendCA))
	eventually(t, 30*time.Second, "re-ca served once created again", served("re-ca"))
	noReload("re-ca created again")

	// A route whose CA changes: the file is set and committed, and the
	// route moves to a free backend, its servers added anew (HAProxy's
	// servers keep the CA they were created with): served with the new
	// CA, either way, without a reload.
	m.Write("re-wrong.yaml", route("re-wrong", backendCA))
	eventually(t, 30*time.Second, "re-wrong served once its CA signed the backend", served("re-wrong"))
	noReload("re-wrong's destination CA changed to the one that signed the backend")
	m.Write("re-ca.yaml", route("re-ca", otherCA))
	eventually(t, 30*time.Second, "re-ca no longer served once its CA did not sign the backend", notServed("re-ca"))
	noReload("re-ca's destination CA changed to another")
	m.Write("re-ca.yaml", route("re-ca", backendCA))
	eventually(t, 30*time.Second, "re-ca served again with its first CA", served("re-ca"))
	noReload("re-ca's destination CA changed back")
	for _, n := range []string{"anchor-a", "anchor-z", "re-wrong"} {
		if err := served(n)(); err != nil {
			t.Errorf("after the CA changes: %v", err)
		}
	}

	// A route that starts to verify its backend, or stops: its servers'
	// TLS options change, which the runtime API cannot do in place; the
	// route moves to a free backend of its shape, its servers added there
	// with their new lines — and they verify with the new CA (a CA that
	// did not sign the backend: not served).
	plain := routeYAML("ca", "re-plain", "re-plain.ca.example.com", "", "secure", tlsYAML("reencrypt", "", nil))
	m.Write("re-plain.yaml", plain)
	eventually(t, 30*time.Second, "re-plain served without verifying", served("re-plain"))
	noReload("re-plain created")
	m.Write("re-plain.yaml", route("re-plain", otherCA))
	eventually(t, 30*time.Second, "re-plain no longer served once it verifies with a CA that did not sign the backend", notServed("re-plain"))
	noReload("re-plain given a destination CA")
	m.Write("re-plain.yaml", plain)
	eventually(t, 30*time.Second, "re-plain served again once it no longer verifies", served("re-plain"))
	noReload("re-plain's destination CA removed")
	for _, n := range []string{"anchor-a", "re-ca", "re-wrong"} {
		if err := served(n)(); err != nil {
			t.Errorf("after re-plain's moves: %v", err)
		}
	}
}

// steadyLoad sends get one request after another (a connection each) until
// the function it returns is called, which returns how many were sent and
// the first failures (an error or a status other than 200).
func steadyLoad(get func() (response, error)) func() (int, []string) {
	var n int
	var failed []string
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := get()
			n++
			if (err != nil || resp.Status != http.StatusOK) && len(failed) < 5 {
				failed = append(failed, fmt.Sprintf("%d %v", resp.Status, err))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() (int, []string) {
		close(stop)
		<-done
		return n, failed
	}
}

// TestAnnotationChangesThatRewriteABackendMoveItWithoutAReload: a route
// whose annotations change lines of its backend HAProxy cannot change at
// runtime — sticky cookies turned off and on again, another balance —
// moves to a free backend of its new shape (a spare: other routes share
// that shape) with its servers and map entries: no reload, and the new
// lines take effect (no cookie once turned off, a cookie again once
// turned on). A balance no other route has, no free backend: a reload
// (reason "backends"), after which the route is served as annotated.
func TestAnnotationChangesThatRewriteABackendMoveItWithoutAReload(t *testing.T) {
	bes := []*backend{startBackend(t, "mv-1"), startBackend(t, "mv-2")}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("mv", "web", bes...))
	noCookies := map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
	leastconn := map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}
	route := func(name string, ann map[string]string) string {
		return annotatedRouteYAML("mv", name, name+".mv.example.com", "", "web", "", ann)
	}
	// Two routes of each shape: spares of each.
	for i, ann := range []map[string]string{nil, nil, noCookies, noCookies, leastconn, leastconn} {
		name := fmt.Sprintf("anchor-%d", i)
		m.Write(name+".yaml", route(name, ann))
	}
	m.Write("r.yaml", route("r", nil))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	names := backendNames(bes)
	// cookie checks that r is served from its backends, with a sticky
	// cookie or without, every time of a few.
	cookie := func(want bool) func() error {
		return func() error {
			for i := 0; i < 4; i++ {
				resp, err := r.httpGet("r.mv.example.com", "/")
				if err != nil {
					return err
				}
				if resp.Status != http.StatusOK || (resp.backend() != "mv-1" && resp.backend() != "mv-2") {
					return fmt.Errorf("status %d from %q, want 200 from %v", resp.Status, resp.backend(), names)
				}
				if got := len(resp.Header.Values("Set-Cookie")) > 0; got != want {
					return fmt.Errorf("sticky cookie set: %v, want %v (%q)", got, want, resp.Header.Values("Set-Cookie"))
				}
			}
			return nil
		}
	}
	eventually(t, loadTimeout, "r served with a cookie", cookie(true))
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)
	// Requests to r throughout its moves: the backend it leaves goes out
	// of service only once its host leads to the new one.
	stopLoad := steadyLoad(func() (response, error) { return r.httpGet("r.mv.example.com", "/") })

	m.Write("r.yaml", route("r", noCookies))
	eventually(t, 30*time.Second, "r served without a cookie once turned off", cookie(false))
	noReload("cookies turned off")
	m.Write("r.yaml", route("r", nil))
	eventually(t, 30*time.Second, "r served with a cookie once turned on again", cookie(true))
	noReload("cookies turned on again")
	m.Write("r.yaml", route("r", leastconn))
	// HAProxy cannot change a backend's balance: r's host now leads to a
	// spare of the leastconn shape.
	eventually(t, 30*time.Second, "r moved to a spare", func() error {
		out := runtimeShow(t, r, "map "+filepath.Join(r.WorkingDir, "conf", "route_http.map"))
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 3 && strings.HasPrefix(f[1], "r.mv.example.com") {
				if !strings.HasPrefix(f[2], "be_spare:") {
					return fmt.Errorf("r runs in %s, want a spare", f[2])
				}
				return nil
			}
		}
		return fmt.Errorf("no entry of r in %q", out)
	})
	must(t, cookie(true)())
	noReload("balance changed")
	if n, failed := stopLoad(); len(failed) > 0 || n < 10 {
		t.Errorf("requests to r that failed during its moves (%d requests): %v", n, failed)
	}
	// The other routes are served as before.
	for i := 0; i < 6; i++ {
		expectExactly(t, 5*time.Second, r, fmt.Sprintf("anchor-%d.mv.example.com", i), names...)
	}

	m.Write("r.yaml", route("r", map[string]string{"haproxy.router.openshift.io/balance": "source"}))
	eventually(t, 30*time.Second, "one reload for a balance no other route has", func() error {
		if !strings.Contains(ms.reloadReasons(), "backends=1") {
			return fmt.Errorf("reloads: %s, want backends=1", ms.reloadReasons())
		}
		return nil
	})
	eventually(t, 30*time.Second, "r served after the reload", cookie(true))
}

// noReloadSince waits until r's reload count settles and notes it and
// HAProxy's processes (one worker); the function it returns fails the
// test, saying when, if either changed since.
func noReloadSince(t *testing.T, ms *metricsClient, r *router) func(when string) {
	t.Helper()
	reloads0 := ms.settledReloads(t)
	pids0 := oneWorker(t, r)
	return func(when string) {
		t.Helper()
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
			t.Fatalf("%s: reloads %v (%s), were %v", when, reloads, ms.reloadReasons(), reloads0)
		}
		if pids := haproxyPIDSet(r); fmt.Sprint(pids) != fmt.Sprint(pids0) {
			t.Fatalf("%s: haproxy processes %v, were %v", when, pids, pids0)
		}
	}
}
