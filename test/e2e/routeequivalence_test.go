package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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
// certificate — and its runtime state is the fresh start's: `show map` of
// every map, `show acl` of every allowlist, the servers in service of each
// backend (`show servers state`; the backend of a route deleted last, left
// until the next reload, serves nothing), the certificates and SNI filters
// of the crt-list (`show ssl crt-list`, `show ssl cert`). Requests to a
// route that stays never fail meanwhile.
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
		"unsecured-timeout", "unsecured-allowed", "unsecured-denied", "edge-hsts", "edge-hsts-preload", "unsecured-rate-limited",
		"unsecured-leastconn", "reencrypt-ca", "reencrypt-wrong-ca"}
	otherCA, err := testcerts.NewCA("another CA", time.Hour)
	must(t, err)
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
		case "reencrypt-ca":
			return routeYAML("rq", name, host(i), "", "secure", tlsYAML("reencrypt", "", map[string]string{"destinationCACertificate": backendCA.CertPEM}))
		case "reencrypt-wrong-ca":
			return routeYAML("rq", name, host(i), "", "secure", tlsYAML("reencrypt", "", map[string]string{"destinationCACertificate": otherCA.CertPEM}))
		case "unsecured-leastconn":
			return annotatedRouteYAML("rq", name, host(i), "", "plain", "", map[string]string{p + "balance": "leastconn"})
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
	t.Cleanup(func() { logRuntimeOnFailure(t, r) })
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
	// Last, a route of a new name (with the default sticky cookie and a
	// timeout) takes a deleted one's backend without a reload: the maps
	// compared below then name a backend HAProxy runs under another name,
	// keys of the backend-keyed maps (timeouts) included, and its sticky
	// cookie is renamed (sticky_renames.map) to its own name.
	takeover := func(name string) string {
		return annotatedRouteYAML("rq", name, name+".rq.example.com", "", "plain", "",
			map[string]string{p + "timeout": "20s"})
	}
	m.Write("x-old.yaml", takeover("x-old"))
	// (x-gone has a timeout too: timeout_server.map keeps a key while
	// x-old goes and x-new comes, so its lookup, rendered while it has
	// keys, stays whatever the random routes left.)
	m.Write("x-gone.yaml", annotatedRouteYAML("rq", "x-gone", "x-gone.rq.example.com", "", "plain", "",
		map[string]string{p + "timeout": "20s"}))
	xCert, err := routeCA.Issue("x-cert.rq.example.com", []string{"x-cert.rq.example.com"}, time.Hour)
	must(t, err)
	xCertYAML := func(tls map[string]string) string {
		return annotatedRouteYAML("rq", "x-cert", "x-cert.rq.example.com", "", "plain", tlsYAML("edge", "", tls),
			map[string]string{p + "disable_cookies": "true"})
	}
	m.Write("x-cert.yaml", xCertYAML(nil))
	expectExactly(t, 30*time.Second, r, "x-old.rq.example.com", backendNames(plain)...)
	expectExactly(t, 30*time.Second, r, "x-gone.rq.example.com", backendNames(plain)...)
	reloadsBefore := ms.reloadsQuietFor(t, 5*time.Second) // RELOAD_INTERVAL is 2s
	m.Remove("x-old.yaml")
	m.Write("x-new.yaml", takeover("x-new"))
	expectExactly(t, 30*time.Second, r, "x-new.rq.example.com", backendNames(plain)...)
	if got := ms.mustValue(t, "template_router_reload_seconds_count", nil); got != reloadsBefore {
		t.Errorf("the route taking a deleted one's backend reloaded: %v (%s), were %v", got, ms.reloadReasons(), reloadsBefore)
	}
	// An edge route given its own certificate: a crt-list line added at
	// runtime (sameCertificates).
	m.Write("x-cert.yaml", xCertYAML(map[string]string{"certificate": xCert.CertPEM, "key": xCert.KeyPEM}))
	eventually(t, 30*time.Second, "x-cert serves its own certificate", func() error {
		if got, want := answerOf(r, "x-cert.rq.example.com"), expectedAnswer("edge-own", "x-cert.rq.example.com"); got != want {
			return fmt.Errorf("answers %s, not %s", got, want)
		}
		return nil
	})
	// And a route deleted last (created with x-old): its backend stays
	// until the next reload, an orphan whose servers must be out of
	// service (sameServers).
	m.Remove("x-gone.yaml")
	eventually(t, 30*time.Second, "x-gone answers none", func() error {
		if got, want := answerOf(r, "x-gone.rq.example.com"), expectedAnswer("none", "x-gone.rq.example.com"); got != want {
			return fmt.Errorf("answers %s, not %s", got, want)
		}
		return nil
	})
	close(stopLoad)
	<-loadDone
	reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	t.Logf("reloads during the changes: %v (%s); steady requests to another route: %d", reloads-reloads0, ms.reloadReasons(), loadRequests)
	// A command HAProxy refused is a change worked out wrong (the reload
	// that follows hides it from the answers).
	if v, err := ms.get(); err == nil {
		if n, err := v.value("template_router_reloads_total", map[string]string{"reason": "runtime-error"}); err == nil && n > 0 {
			t.Errorf("%v reloads after a runtime API command HAProxy refused (%s)", n, ms.reloadReasons())
		}
	}
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
	for _, h := range []string{"x-new.rq.example.com", "x-cert.rq.example.com", "x-gone.rq.example.com"} {
		if got, want := answerOf(r, h), answerOf(fresh, h); got != want {
			t.Errorf("%s answers %s after the changes, %s after a fresh start", h, got, want)
		}
	}
	rename := sameMaps(t, r, fresh)
	hosts := []string{"x-new.rq.example.com", "x-cert.rq.example.com"}
	for i := 0; i < names; i++ {
		hosts = append(hosts, host(i))
	}
	sameStickyCookies(t, r, fresh, hosts)
	sameServers(t, r, fresh, rename)
	sameCertificates(t, r, fresh)
	// (A reload since x-new took x-old's backend renames it back: the map
	// comparison then had no name to translate. The reload tests of
	// routesruntime_test.go assert that takeovers need none.)
	if got := ms.mustValue(t, "template_router_reload_seconds_count", nil); got != reloadsBefore {
		t.Logf("reloaded since the route of a new name took a deleted one's backend: %v (%s), were %v", got, ms.reloadReasons(), reloadsBefore)
	} else if renames := runtimeShow(t, r, "map "+filepath.Join(r.WorkingDir, "conf", "sticky_renames.map")); !strings.Contains(renames, "|") {
		// x-new runs in x-old's backend, which inserts x-old's cookie
		// name: the sticky cookies compared above went through the rename.
		t.Errorf("x-new took x-old's backend without a reload, yet sticky_renames.map has no entry:\n%s", renames)
	}
}

// logRuntimeOnFailure logs, when t failed, what the running HAProxy of r
// routes by (its route maps) and to (the servers of every backend), and
// its processes (`show proc`: an old worker still serving?), the
// evidence a failed step needs (run before the router stops: cleanups
// run last registered first).
func logRuntimeOnFailure(t *testing.T, r *router) {
	if !t.Failed() {
		return
	}
	c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
	var cmds []string
	for _, m := range []string{"route_http.map", "route_https.map", "route_sni_passthrough.map"} {
		cmds = append(cmds, "show map "+filepath.Join(r.WorkingDir, "conf", m))
	}
	for _, cmd := range append(cmds, "show servers state") {
		out, err := c.Exec(context.Background(), cmd)
		t.Logf("%s (after the failure): %v\n%s", cmd, err, out)
	}
	// Workers of earlier generations still listening would answer with
	// the configuration they loaded.
	master := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "master.sock")}
	out, err := master.Exec(context.Background(), "show proc")
	t.Logf("show proc (after the failure): %v\n%s", err, out)
	// Which processes listen on the router's ports (HAProxy binds with
	// SO_REUSEPORT: another process's socket would take part of the
	// connections silently).
	for _, port := range []int{r.HTTPPort, r.HTTPSPort} {
		ss, err := exec.Command("ss", "-ltnp", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
		t.Logf("ss -ltnp sport = :%d (after the failure): %v\n%s", port, err, ss)
	}
}

// expectedAnswer is what answerOf returns for a route of kind (or "none")
// at host, with the test's backends.
func expectedAnswer(kind, host string) string {
	plain, none := "200 rq-1,rq-2", "503 -"
	switch kind {
	case "unsecured", "unsecured-no-cookies", "unsecured-timeout", "unsecured-allowed", "unsecured-rate-limited", "unsecured-leastconn":
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
	case "reencrypt", "reencrypt-ca":
		return "http " + none + " | http /p " + none + " | https 200 rq-secure default"
	case "reencrypt-wrong-ca":
		return "http " + none + " | http /p " + none + " | https " + none + " default"
	case "passthrough":
		return "http " + none + " | http /p " + none + " | https 200 rq-pt passthrough backend"
	}
	return "http " + none + " | http /p " + none + " | https " + none + " default"
}

// answerOf is how the router answers host: over HTTP at / and /p/x, and
// over HTTPS with SNI host at / (the last status, the endpoints reached in
// a few requests, the certificates shown: "default" for any not issued for
// a route, and the Strict-Transport-Security header); "refused" when the
// connection is closed without an answer (an allowlist).
func answerOf(r *router, host string) string {
	hsts := ""
	part := func(get func() (response, error)) (string, string) {
		// Sent at once: a request HAProxy retries (a re-encrypt route
		// whose backend's certificate it refuses: four connection
		// attempts, three seconds) would otherwise make one answer
		// take most of a step's wait, judged on what its first requests
		// saw before a reload.
		resps, errs := make([]response, 16), make([]error, 16)
		var wg sync.WaitGroup
		for n := range resps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resps[n], errs[n] = get()
			}()
		}
		wg.Wait()
		status := ""
		seen, cns := map[string]bool{}, map[string]bool{}
		for n, resp := range resps {
			if errs[n] != nil {
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
				cn := resp.PeerCert.Subject.CommonName
				if cn != host && cn != "passthrough backend" {
					cn = "default"
				}
				cns[cn] = true
			}
		}
		// Every endpoint and certificate seen: a host answered two ways
		// shows both.
		return status + " " + strings.Join(slices.Sorted(maps.Keys(seen)), ","), strings.Join(slices.Sorted(maps.Keys(cns)), ",")
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
func sameMaps(t *testing.T, changed, fresh *router) (rename map[string]string) {
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
	rename = map[string]string{} // runtime backend name -> the route's backend
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
		if strings.HasPrefix(m, "route_") || m == "sticky_renames.map" {
			// sticky_renames.map: empty after a start, its entries are
			// the cookie names HAProxy runs (sameStickyCookies).
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
	return rename
}

// sameStickyCookies compares the Set-Cookie headers of each host but for
// the cookies' values (over HTTP and HTTPS) after the changes with a fresh
// start's: a backend HAProxy runs with another sticky cookie name (taken
// over at runtime, its entry in sticky_renames.map) shows clients the
// route's own name, as a fresh start's does.
func sameStickyCookies(t *testing.T, changed, fresh *router, hosts []string) {
	t.Helper()
	cookies := func(r *router, host string) string {
		var out []string
		for _, get := range []func() (response, error){
			func() (response, error) { return r.httpGet(host, "/") },
			func() (response, error) { return r.httpsGet(host, "/") },
		} {
			resp, err := get()
			if err != nil {
				out = append(out, "refused")
				continue
			}
			var cs []string
			for _, c := range resp.Header.Values("Set-Cookie") {
				name, rest, _ := strings.Cut(c, "=")
				_, attrs, _ := strings.Cut(rest, ";")
				cs = append(cs, name+"=...;"+attrs)
			}
			out = append(out, strings.Join(cs, ", "))
		}
		return strings.Join(out, " | ")
	}
	sticky := 0
	for _, h := range hosts {
		got, want := cookies(changed, h), cookies(fresh, h)
		if got != want {
			t.Errorf("%s: Set-Cookie %q after the changes, %q after a fresh start", h, got, want)
		}
		if strings.Contains(want, "HttpOnly") {
			sticky++
		}
	}
	t.Logf("sticky cookies compared with a fresh start: %d of %d hosts set one", sticky, len(hosts))
}

// runtimeShow runs "show ..." on r's HAProxy.
func runtimeShow(t *testing.T, r *router, what string) string {
	t.Helper()
	c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
	out, err := c.Exec(context.Background(), "show "+what)
	must(t, err)
	return out
}

// servingServers reads `show servers state` of r: for each backend, the
// servers in service (admin state 0: neither in maintenance nor
// draining), each as address, port, weight, TLS and check state, sorted.
// Names and IDs are left out: servers added at runtime are named apart
// from a fresh render's by design.
func servingServers(t *testing.T, r *router) map[string][]string {
	t.Helper()
	var cols map[string]int
	out := map[string][]string{}
	for _, l := range strings.Split(runtimeShow(t, r, "servers state"), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[0] == "#":
			cols = map[string]int{}
			for i, name := range f[1:] {
				cols[name] = i
			}
			continue
		case cols == nil || len(f) < len(cols):
			continue
		}
		get := func(name string) string {
			i, ok := cols[name]
			if !ok {
				t.Fatalf("show servers state: no column %s in %v", name, cols)
			}
			return f[i]
		}
		if get("srv_admin_state") != "0" {
			continue
		}
		be := get("be_name")
		out[be] = append(out[be], fmt.Sprintf("%s:%s weight %s ssl %s check %s", get("srv_addr"), get("srv_port"),
			get("srv_uweight"), get("srv_use_ssl"), get("srv_check_state")))
	}
	if cols == nil {
		t.Fatalf("show servers state: no header")
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// sameServers compares the servers in service after the changes with a
// fresh start's (`show servers state`), backend by backend: a backend
// running under another name (rename, from sameMaps) counts as the
// route's. Backends serving nothing after the changes (orphans, spares)
// must serve nothing in the fresh start either.
func sameServers(t *testing.T, changed, fresh *router, rename map[string]string) {
	t.Helper()
	want := servingServers(t, fresh)
	got := map[string][]string{}
	for be, l := range servingServers(t, changed) {
		if c, ok := rename[be]; ok {
			be = c
		}
		got[be] = l
	}
	servers := 0
	for be, w := range want {
		servers += len(w)
		if g := got[be]; fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("servers state: %s in service after the changes %v, after a fresh start %v", be, g, w)
		}
	}
	for be, g := range got {
		if _, ok := want[be]; !ok {
			t.Errorf("servers state: %s has servers in service after the changes %v, none after a fresh start", be, g)
		}
	}
	t.Logf("servers in service compared with a fresh start: %d in %d backends", servers, len(want))
}

// servedCertificates reads the crt-list of r's TLS frontend through the
// runtime API: each line as the SHA-1 fingerprint of its certificate
// (`show ssl cert`) and its options and SNI filters, sorted. Runtime
// certificate names differ from a fresh render's by design.
func servedCertificates(t *testing.T, r *router) []string {
	t.Helper()
	list := filepath.Join(r.WorkingDir, "conf", "cert_config.map")
	var out []string
	for _, l := range strings.Split(runtimeShow(t, r, "ssl crt-list "+list), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		fingerprint := ""
		for _, cl := range strings.Split(runtimeShow(t, r, "ssl cert "+f[0]), "\n") {
			if v, ok := strings.CutPrefix(cl, "SHA1 FingerPrint: "); ok {
				fingerprint = v
			}
		}
		if fingerprint == "" {
			t.Errorf("show ssl cert %s: no fingerprint", f[0])
		}
		out = append(out, strings.Join(append([]string{fingerprint}, f[1:]...), " "))
	}
	sort.Strings(out)
	return out
}

// sameCertificates compares the certificates the TLS frontend serves,
// with their SNI filters, after the changes with a fresh start's.
func sameCertificates(t *testing.T, changed, fresh *router) {
	t.Helper()
	want := servedCertificates(t, fresh)
	if got := servedCertificates(t, changed); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("crt-list after the changes:\n%s\nafter a fresh start:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("crt-list lines compared with a fresh start: %d", len(want))
}
