package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	"github.com/openshift-router-go/router/test/testcerts"
)

// TestRandomRouteChangesServeWhatAFreshStartServes: after a random
// sequence of routes created and deleted — names that come back, with
// another type or the same, unsecured (with and without sticky cookies,
// with a path, a timeout, a rate limit, an allowlist that admits or
// refuses the client), edge (default and own certificate, two HSTS values),
// re-encrypt and passthrough — applied through the runtime API where
// HAProxy can take them (a deleted route's backend taken over, map
// entries, allowlist patterns, crt-list lines) and reloaded where it
// cannot, at whatever moment that falls,
// HAProxy answers every host as a router started afresh on the same
// manifests does: the same status, the same endpoints, the same
// certificate. Requests to a route that stays never fail meanwhile.
func TestRandomRouteChangesServeWhatAFreshStartServes(t *testing.T) {
	rng := seededRand(t)

	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"*.rq.example.com"}, time.Hour)
	must(t, err)
	plain := []*backend{startBackend(t, "rq-1"), startBackend(t, "rq-2")}
	secure := startTLSBackend(t, "rq-secure", backendCert.CertPEM, backendCert.KeyPEM)
	pt := startTLSBackend(t, "rq-pt", ptCert.CertPEM, ptCert.KeyPEM)

	const names = 6
	host := func(i int) string { return fmt.Sprintf("r%d.rq.example.com", i) }
	certs := map[int][2]string{}
	for i := 0; i < names; i++ {
		c, err := routeCA.Issue(host(i), []string{host(i)}, time.Hour)
		must(t, err)
		certs[i] = [2]string{c.CertPEM, c.KeyPEM}
	}
	noCookies := "  annotations:\n    haproxy.router.openshift.io/disable_cookies: \"true\"\n"
	kinds := []string{"unsecured", "unsecured-no-cookies", "unsecured-path", "edge", "edge-own", "reencrypt", "passthrough",
		"unsecured-timeout", "unsecured-allowed", "unsecured-denied", "edge-hsts", "edge-hsts-preload", "unsecured-rate-limited"}
	p := "haproxy.router.openshift.io/"
	yaml := func(i int, kind string) string {
		name := fmt.Sprintf("r%d", i)
		switch kind {
		case "unsecured-rate-limited":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", "", map[string]string{p + "rate-limit-connections": "true", p + "rate-limit-connections.rate-http": "100000"})
		case "unsecured-timeout":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", "", map[string]string{p + "timeout": "20s"})
		case "unsecured-allowed":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 127.0.0.1"})
		case "unsecured-denied":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 192.168.0.0/16"})
		case "edge-hsts":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", tlsYAML("edge", "", nil), map[string]string{p + "hsts_header": "max-age=600"})
		case "edge-hsts-preload":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", tlsYAML("edge", "", nil), map[string]string{p + "hsts_header": "max-age=31536000;includeSubDomains;preload"})
		case "unsecured":
			return routeYAML("rq", name, host(i), "", "plain", "")
		case "unsecured-no-cookies":
			return strings.Replace(routeYAML("rq", name, host(i), "", "plain", ""), "  namespace: rq\n", "  namespace: rq\n"+noCookies, 1)
		case "unsecured-path":
			return routeYAML("rq", name, host(i), "/p", "plain", "")
		case "edge":
			return routeYAML("rq", name, host(i), "", "plain", tlsYAML("edge", "", nil))
		case "edge-own":
			return routeYAML("rq", name, host(i), "", "plain", tlsYAML("edge", "", map[string]string{"certificate": certs[i][0], "key": certs[i][1]}))
		case "reencrypt":
			return routeYAML("rq", name, host(i), "", "secure", tlsYAML("reencrypt", "", nil))
		case "passthrough":
			return routeYAML("rq", name, host(i), "", "pt", tlsYAML("passthrough", "", nil))
		}
		panic(kind)
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rq", "plain", plain...)+"---\n"+serviceYAML("rq", "secure", secure)+"---\n"+serviceYAML("rq", "pt", pt))
	// Anchors that stay: the changes are worked out against the text
	// around the routes' sections.
	m.Write("anchor-a.yaml", routeYAML("rq", "anchor-a", "a.anchor.example.com", "", "plain", ""))
	m.Write("anchor-z.yaml", routeYAML("rq", "anchor-z", "z.anchor.example.com", "", "plain", ""))
	current := map[int]string{} // name index -> kind
	for i := 0; i < names; i += 2 {
		current[i] = kinds[rng.Intn(len(kinds))]
		m.Write(fmt.Sprintf("r%d.yaml", i), yaml(i, current[i]))
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "2s"
	r := startRouter(t, m.Dir, env)
	expectExactly(t, loadTimeout, r, "a.anchor.example.com", backendNames(plain)...)
	waitReady(t, ms)
	reloads0 := ms.settledReloads(t)

	// Steady traffic to a route that stays, on a connection per request,
	// throughout the changes: none may fail, reloads included.
	var loadFailures []string
	var loadRequests int
	loadDone := make(chan struct{})
	stopLoad := make(chan struct{})
	go func() {
		defer close(loadDone)
		for {
			select {
			case <-stopLoad:
				return
			default:
			}
			resp, err := r.httpGet("z.anchor.example.com", "/")
			loadRequests++
			if err != nil || resp.Status != 200 {
				if len(loadFailures) < 5 {
					loadFailures = append(loadFailures, fmt.Sprintf("%d %v", resp.Status, err))
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wantAnswer := func(i int) string {
		kind, ok := current[i]
		if !ok {
			kind = "none"
		}
		return expectedAnswer(kind, host(i))
	}
	for step := 0; step < 24; step++ {
		i := rng.Intn(names)
		if _, ok := current[i]; ok && rng.Intn(2) == 0 {
			delete(current, i)
			m.Remove(fmt.Sprintf("r%d.yaml", i))
			t.Logf("step %d: r%d deleted", step, i)
		} else {
			current[i] = kinds[rng.Intn(len(kinds))]
			m.Write(fmt.Sprintf("r%d.yaml", i), yaml(i, current[i]))
			t.Logf("step %d: r%d is %s", step, i, current[i])
		}
		want := wantAnswer(i)
		eventually(t, 30*time.Second, fmt.Sprintf("step %d: r%d answers %s", step, i, want), func() error {
			if got := answerOf(r, host(i)); got != want {
				return fmt.Errorf("answers %s", got)
			}
			return nil
		})
	}
	// Last, a route of a new name (without a cookie of its own, with a
	// timeout) takes a deleted one's backend without a reload: the maps
	// compared below then name a backend HAProxy runs under another name,
	// keys of the backend-keyed maps included.
	takeover := func(name string) string {
		return annotatedRouteYAML("rq", name, name+".rq.example.com", "", "plain", "",
			map[string]string{p + "disable_cookies": "true", p + "timeout": "20s"})
	}
	m.Write("x-old.yaml", takeover("x-old"))
	expectExactly(t, 30*time.Second, r, "x-old.rq.example.com", backendNames(plain)...)
	reloadsBefore := ms.reloadsQuietFor(t, 5*time.Second) // RELOAD_INTERVAL is 2s
	m.Remove("x-old.yaml")
	m.Write("x-new.yaml", takeover("x-new"))
	expectExactly(t, 30*time.Second, r, "x-new.rq.example.com", backendNames(plain)...)
	if got := ms.mustValue(t, "template_router_reload_seconds_count", nil); got != reloadsBefore {
		t.Errorf("the route taking a deleted one's backend reloaded: %v (%s), were %v", got, ms.reloadReasons(), reloadsBefore)
	}
	close(stopLoad)
	<-loadDone
	reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	t.Logf("reloads during the changes: %v (%s); steady requests to another route: %d", reloads-reloads0, ms.reloadReasons(), loadRequests)
	if len(loadFailures) > 0 || loadRequests < 10 {
		t.Errorf("requests to a route that stayed failed during the changes (%d requests): %v", loadRequests, loadFailures)
	}

	fresh := startRouter(t, m.Dir, nil)
	expectExactly(t, loadTimeout, fresh, "a.anchor.example.com", backendNames(plain)...)
	for i := 0; i < names; i++ {
		want := wantAnswer(i)
		eventually(t, 30*time.Second, fmt.Sprintf("r%d answers %s after a fresh start", i, want), func() error {
			if got := answerOf(fresh, host(i)); got != want {
				return fmt.Errorf("answers %s", got)
			}
			return nil
		})
		if got := answerOf(r, host(i)); got != want {
			t.Errorf("r%d (%s) answers %s after the changes, %s after a fresh start", i, current[i], got, want)
		}
	}
	sameMaps(t, r, fresh)
	// (A reload since x-new took x-old's backend renames it back: the map
	// comparison then had no name to translate. The reload tests of
	// routesruntime_test.go assert that takeovers need none.)
	if got := ms.mustValue(t, "template_router_reload_seconds_count", nil); got != reloadsBefore {
		t.Logf("reloaded since the route of a new name took a deleted one's backend: %v (%s), were %v", got, ms.reloadReasons(), reloadsBefore)
	}
}

// expectedAnswer is what answerOf returns for a route of kind (or "none")
// at host, with the test's backends.
func expectedAnswer(kind, host string) string {
	plain, none := "200 rq-1,rq-2", "503 -"
	switch kind {
	case "unsecured", "unsecured-no-cookies", "unsecured-timeout", "unsecured-allowed", "unsecured-rate-limited":
		return "http " + plain + " | http /p " + plain + " | https " + none + " default"
	case "unsecured-denied":
		return "http refused | http /p refused | https " + none + " default"
	case "edge-hsts":
		return "http " + none + " | http /p " + none + " | https " + plain + " default hsts=max-age=600"
	case "edge-hsts-preload":
		return "http " + none + " | http /p " + none + " | https " + plain + " default hsts=max-age=31536000;includeSubDomains;preload"
	case "unsecured-path":
		return "http " + none + " | http /p " + plain + " | https " + none + " default"
	case "edge":
		return "http " + none + " | http /p " + none + " | https " + plain + " default"
	case "edge-own":
		return "http " + none + " | http /p " + none + " | https " + plain + " " + host
	case "reencrypt":
		return "http " + none + " | http /p " + none + " | https 200 rq-secure default"
	case "passthrough":
		return "http " + none + " | http /p " + none + " | https 200 rq-pt passthrough backend"
	}
	return "http " + none + " | http /p " + none + " | https " + none + " default"
}

// answerOf is how the router answers host: over HTTP at / and /p/x, and
// over HTTPS with SNI host at / (the status, the endpoints reached in a
// few requests, the certificate shown: "default" for any not issued for
// a route, and the Strict-Transport-Security header); "refused" when the
// connection is closed without an answer (an allowlist).
func answerOf(r *router, host string) string {
	hsts := ""
	part := func(get func() (response, error)) (string, string) {
		status, cn := "", ""
		seen := map[string]bool{}
		for n := 0; n < 16; n++ {
			resp, err := get()
			if err != nil {
				return "refused", ""
			}
			if v := resp.Header.Get("Strict-Transport-Security"); v != "" {
				hsts = " hsts=" + v
			}
			status = strconv.Itoa(resp.Status)
			b := resp.backend()
			if b == "" {
				b = "-"
			}
			seen[b] = true
			if resp.PeerCert != nil {
				cn = resp.PeerCert.Subject.CommonName
			}
		}
		var bs []string
		for b := range seen {
			bs = append(bs, b)
		}
		sort.Strings(bs)
		if cn != "" && cn != host && cn != "passthrough backend" {
			cn = "default"
		}
		return status + " " + strings.Join(bs, ","), cn
	}
	h, _ := part(func() (response, error) { return r.httpGet(host, "/") })
	hp, _ := part(func() (response, error) { return r.httpGet(host, "/p/x") })
	s, cn := part(func() (response, error) { return r.httpsGet(host, "/") })
	return "http " + h + " | http /p " + hp + " | https " + s + " " + cn + hsts
}

// sameMaps compares the maps and allowlist ACLs HAProxy runs in changed
// (after runtime changes) with fresh's (a fresh start on the same
// manifests): "show map" of every map file and "show acl" of every
// allowlist file must hold the same entries, but for the names of
// backends taken over at runtime (a route running in an orphan or a
// spare): the route maps (keyed by host and path) pair each such name
// with the route's own, and the maps keyed by backend must agree under
// that pairing.
func sameMaps(t *testing.T, changed, fresh *router) {
	t.Helper()
	show := func(r *router, what, path string) map[string]string {
		c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
		out, err := c.Exec(context.Background(), "show "+what+" "+path)
		must(t, err)
		entries := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 3:
				entries[f[1]] = f[2]
			case len(f) == 2:
				entries[f[1]] = ""
			}
		}
		return entries
	}
	files := func(r *router, dir, suffix string) []string {
		ents, err := os.ReadDir(filepath.Join(r.WorkingDir, dir))
		if !os.IsNotExist(err) {
			must(t, err)
		}
		var out []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), suffix) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	rename := map[string]string{} // runtime backend name -> the route's backend
	compared := 0
	defer func() {
		t.Logf("maps and allowlists compared with a fresh start: %d entries; backends running under another name: %d", compared, len(rename))
	}()
	for _, m := range []string{"route_http.map", "route_https.map", "route_sni_passthrough.map"} {
		got := show(changed, "map", filepath.Join(changed.WorkingDir, "conf", m))
		want := show(fresh, "map", filepath.Join(fresh.WorkingDir, "conf", m))
		compared += len(want)
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("%s: %s missing after the changes (fresh: %s)", m, k, w)
			case g != w && (!strings.Contains(w, ":") || (rename[g] != "" && rename[g] != w)):
				t.Errorf("%s: %s -> %s after the changes, %s after a fresh start", m, k, g, w)
			case g != w:
				rename[g] = w
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s -> %s after the changes, not after a fresh start", m, k, g)
			}
		}
	}
	as := func(name string) string {
		if c, ok := rename[name]; ok {
			return c
		}
		return name
	}
	for _, m := range files(fresh, "conf", ".map") {
		if strings.HasPrefix(m, "route_") {
			continue
		}
		got := show(changed, "map", filepath.Join(changed.WorkingDir, "conf", m))
		want := show(fresh, "map", filepath.Join(fresh.WorkingDir, "conf", m))
		renamed := map[string]string{}
		for k, v := range got {
			renamed[as(k)] = v
		}
		compared += len(want)
		if fmt.Sprint(renamed) != fmt.Sprint(want) {
			t.Errorf("%s after the changes %v (as the routes' backends), after a fresh start %v", m, renamed, want)
		}
	}
	for _, a := range files(fresh, "router/allowlists", ".txt") {
		got := show(changed, "acl", filepath.Join(changed.WorkingDir, "router", "allowlists", a))
		want := show(fresh, "acl", filepath.Join(fresh.WorkingDir, "router", "allowlists", a))
		compared += len(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("allowlist %s after the changes %v, after a fresh start %v", a, got, want)
		}
	}
}
