package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// Log messages of the controller (passRoutes) for route changes worked out
// without a full render: "for" says whether the result is for the runtime
// API (following what runs) or for a reload (laid out afresh, "reload").
const logRuntimeSplice = `for="runtime"`

// TestRouteUpdatesAreWorkedOutWithoutAFullRender: with enough routes for
// the router to render one alone, route updates that admit or drop no
// route are worked out following what HAProxy runs
// (pipeline.UpdateRoutesFollowing), not by a full render:
//   - an edge route's new certificate is served without a reload (same
//     HAProxy processes, reload count unchanged);
//   - a balance annotation changes a backend section: worked out for the
//     runtime API first, which finds the reload it needs; the route still
//     answers and what is on disk is what `render` writes.
//
// Each log assertion would fail if the full pass had served the change:
// it logs no "route changes worked out without a full render" line.
func TestRouteUpdatesAreWorkedOutWithoutAFullRender(t *testing.T) {
	const ns = "update"
	be := startBackend(t, "b")
	host := func(name string) string { return name + "." + ns + ".example.com" }
	pairs := issuePairs(t, host("edge"), "first", "second")
	edgeYAML := func(p *testcerts.Pair) string {
		return routeYAML(ns, "edge", host("edge"), "", "svc",
			tlsYAML("edge", "", map[string]string{"certificate": p.CertPEM, "key": p.KeyPEM}))
	}
	plainYAML := func(name, balance string) string {
		y := routeYAML(ns, name, host(name), "", "svc", "")
		if balance != "" {
			y = strings.Replace(y, "metadata:\n", "metadata:\n  annotations:\n    haproxy.router.openshift.io/balance: "+balance+"\n", 1)
		}
		return y
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML(ns, "svc", be))
	m.Write("edge.yaml", edgeYAML(pairs[0]))
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("r-%d", i)
		m.Write(name+".yaml", plainYAML(name, ""))
	}
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("r-%d", i)
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(host(name), "/") }, "b")
	}
	expectCN(t, r, host("edge"), "first")
	waitReady(t, ms)

	// A certificate rotation: at runtime.
	mark := len(r.Log())
	reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	pids := r.haproxyPIDs()
	m.Write("edge.yaml", edgeYAML(pairs[1]))
	expectCN(t, r, host("edge"), "second")
	if got := ms.mustValue(t, "template_router_reload_seconds_count", nil); got != reloads {
		t.Errorf("the certificate rotation reloaded HAProxy: reloads %v, before %v", got, reloads)
	}
	if got := r.haproxyPIDs(); !slices.Equal(got, pids) {
		t.Errorf("HAProxy processes %v, before the rotation %v", got, pids)
	}
	expectLogSince(t, r, mark, "the rotation worked out following what runs", logRuntimeSplice)

	// A balance annotation no other route has (no free backend of its
	// shape to move to): a reload, worked out without a full render.
	mark = len(r.Log())
	m.Write("r-1.yaml", plainYAML("r-1", "leastconn"))
	eventually(t, 30*time.Second, "the reload of the annotation change", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if got, err := s.value("template_router_reload_seconds_count", nil); err != nil || got < reloads+1 {
			return fmt.Errorf("reloads %v (before %v) %v", got, reloads, err)
		}
		return nil
	})
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet(host("r-1"), "/") }, "b")
	onDisk := expectRenderWritesTheSame(t, r, m.Dir, env)
	if !strings.Contains(string(onDisk), "\n  balance leastconn\n") {
		t.Errorf("haproxy.config has no balance leastconn")
	}
	// Every backend is laid out as a fresh layout would have it (no
	// endpoint moved into a spare slot): the configuration worked out for
	// the runtime API is the one reloaded (with endpoints in slots it is
	// worked out again afresh: router/controller's
	// TestRouteUpdatesWithoutAFullRender).
	expectLogSince(t, r, mark, "the annotation change worked out following what runs, then reloaded", logRuntimeSplice, `"configuration loaded" logger="router.controller" started=false reason="backends"`)
}

// expectLogSince waits until r's log since mark has every one of lines
// (its lines reach the log a little after the router acts), and fails
// if it says a route change needed the full pass.
func expectLogSince(t *testing.T, r *router, mark int, what string, lines ...string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() error {
		since := r.Log()[mark:]
		if strings.Contains(since, logFullPass) {
			t.Fatalf("a route change needed the full pass; log since the change:\n%s", since)
		}
		for _, l := range lines {
			if !strings.Contains(since, l) {
				return fmt.Errorf("no %s in the log since the change:\n%s", l, since)
			}
		}
		return nil
	})
}
