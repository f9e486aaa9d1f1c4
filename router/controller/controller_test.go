package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/testcerts"
)

// fakeSetup is a controller on fakes: HAProxy (fakeProcess), its runtime
// API (fakeRuntime) and the metrics (fakeObserver), writing into a
// temporary working directory.
type fakeSetup struct {
	st   *store.Store
	proc *fakeProcess
	rt   *fakeRuntime
	obs  *fakeObserver
	dir  string
	c    *Controller
}

func newFakeSetup(t *testing.T, routes ...*routev1.Route) *fakeSetup {
	t.Helper()
	f := &fakeSetup{st: tenantStore(routes...), proc: newFakeProcess(), rt: &fakeRuntime{}, obs: &fakeObserver{}, dir: t.TempDir()}
	o := tenantOptions(t, f.st, f.dir)
	o.Process, o.Runtime, o.Observer = f.proc, f.rt, f.obs
	o.Logger = testr.New(t)
	f.c = New(o)
	return f
}

func (f *fakeSetup) config(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "conf", "haproxy.config"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *fakeSetup) commit(t *testing.T) bool {
	t.Helper()
	reloaded, err := f.c.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return reloaded
}

// TestRuntimeApplicationAndReloadFallback: an endpoint change is applied
// through the runtime API without a reload; when the runtime API cannot
// be reached (no culprit), or there is none, or a route changes, the
// change is reloaded instead, with the reason; endpoints that find no free
// spare slot are added as servers at runtime.
func TestRuntimeApplicationAndReloadFallback(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"), plainRoute("b", "web"))
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	if !f.c.Ready() || f.obs.lastReason() != ReasonInitial {
		t.Fatalf("ready %v, reason %q", f.c.Ready(), f.obs.lastReason())
	}
	steps := []struct {
		name       string
		change     func()
		wantReload bool
		reason     string
		check      func(t *testing.T)
	}{
		{name: "endpoint change through the runtime API", change: func() { setEndpoints(f.st, "a", "svc", "10.50.0.1", "10.50.0.2") },
			check: func(t *testing.T) {
				if f.obs.runtime("endpoints") != 1 || !strings.Contains(strings.Join(f.rt.sent(), "\n"), "10.50.0.1") {
					t.Fatalf("runtime changes %v, commands %v", f.obs.runtimeChanges, f.rt.sent())
				}
				slot := ""
				for _, s := range f.c.layouts["a:web"] {
					if s.Dynamic && s.Endpoint.ID != "" {
						slot = s.Name
					}
				}
				if id, ok := f.c.DynamicServer("a", "web", slot); !ok || id == "" {
					t.Fatalf("slot %q serves nothing", slot)
				}
				if _, ok := f.c.DynamicServer("a", "web", "no-such-slot"); ok {
					t.Fatal("an unknown slot serves something")
				}
			}},
		{name: "nothing changed", change: func() { f.st.Poke() }},
		{name: "runtime API unreachable: reload", change: func() {
			f.rt.set("", true)
			setEndpoints(f.st, "a", "svc", "10.50.0.3", "10.50.0.4")
		}, wantReload: true, reason: ReasonRuntimeError, check: func(t *testing.T) {
			if f.obs.runtimeErrors != 1 {
				t.Fatalf("runtime errors %d", f.obs.runtimeErrors)
			}
			f.rt.set("", false)
		}},
		{name: "out of spare slots: servers added at runtime", change: func() {
			setEndpoints(f.st, "b", "svc", "10.60.0.1", "10.60.0.2", "10.60.0.3", "10.60.0.4", "10.60.0.5", "10.60.0.6", "10.60.0.7", "10.60.0.8", "10.60.0.9")
		}, check: func(t *testing.T) {
			sent := strings.Join(f.rt.sent(), "\n")
			if !strings.Contains(sent, "add server be_http:b:web/") || !strings.Contains(sent, " 10.60.0.9:8080 weight ") {
				t.Fatalf("no add server for the endpoint without a slot; sent %q", sent)
			}
		}},
		{name: "a new route: reload", change: func() { f.st.Upsert(plainRoute("c", "web")) }, wantReload: true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			_, before := f.proc.counts()
			s.change()
			f.commit(t)
			_, after := f.proc.counts()
			if (after > before) != s.wantReload {
				t.Fatalf("reloads %d → %d, want a reload: %v", before, after, s.wantReload)
			}
			if s.reason != "" && f.obs.lastReason() != s.reason {
				t.Fatalf("reason %q, want %q", f.obs.lastReason(), s.reason)
			}
			if s.check != nil {
				s.check(t)
			}
			if !f.c.Ready() {
				t.Fatal("not ready")
			}
		})
	}
}

// TestWithoutRuntimeAPIEveryChangeReloads: Runtime nil turns changes
// without reload off.
func TestWithoutRuntimeAPIEveryChangeReloads(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.c.o.Runtime = nil
	f.commit(t)
	setEndpoints(f.st, "a", "svc", "10.50.0.1", "10.50.0.2")
	if !f.commit(t) || f.obs.lastReason() != ReasonNoRuntimeAPI {
		t.Fatalf("reason %q", f.obs.lastReason())
	}
}

// TestARefusedRuntimeCommandReloadsItsRoute: HAProxy's runtime API
// refuses a command for one route's backend; that route falls back to a
// reload (logged with the route, counted as a runtime API error, reason
// runtime-error) and is not rejected: nothing is lost, and every route's
// changes of the same pass are in the reloaded configuration (issue 25;
// a configuration HAProxy's check refuses still rejects its route alone,
// see exclusion_test.go).
func TestARefusedRuntimeCommandReloadsItsRoute(t *testing.T) {
	bad, good := plainRoute("bad", "web"), plainRoute("good", "web")
	f, logs := startedWithLogs(t, bad, good)
	f.rt.set("be_http:bad:web/", false)
	setEndpoints(f.st, "bad", "svc", "10.70.0.1", "10.70.0.2")
	setEndpoints(f.st, "good", "svc", "10.80.0.1", "10.80.0.2")
	if !f.commit(t) || f.obs.lastReason() != ReasonRuntimeError {
		t.Fatalf("the refused change was not reloaded: reason %q", f.obs.lastReason())
	}
	for k, r := range f.c.Results() {
		if !r.Admitted {
			t.Fatalf("%s rejected for a refused runtime command: %+v", k, r)
		}
	}
	cfg := f.config(t)
	if !strings.Contains(cfg, "10.70.0.1:8080") || !strings.Contains(cfg, "10.80.0.1:8080") {
		t.Fatal("the reloaded configuration should have both routes' new endpoints")
	}
	if f.obs.runtimeErrors != 1 {
		t.Fatalf("runtime errors %d, want 1", f.obs.runtimeErrors)
	}
	if logs.count("runtime API change refused for one route; reloading instead", `"route"="bad/web"`) != 1 {
		t.Fatal("the refusal is not logged once with its route")
	}
	f.rt.set("", false)

	// A refused command of no route: reload, nobody rejected.
	f.rt.set("be_http:good:web/", false)
	f.c.o.Runtime = &namelessRefusal{f.rt}
	setEndpoints(f.st, "good", "svc", "10.80.0.3", "10.80.0.4")
	if !f.commit(t) || f.obs.lastReason() != ReasonRuntimeError {
		t.Fatalf("reason %q", f.obs.lastReason())
	}
	for k, r := range f.c.Results() {
		if !r.Admitted {
			t.Fatalf("%s rejected for a refusal that names no route: %+v", k, r)
		}
	}
}

// namelessRefusal refuses every command it sends as HAProxy refuses a
// malformed one, without naming a backend.
type namelessRefusal struct{ *fakeRuntime }

func (n *namelessRefusal) Exec(ctx context.Context, cmd string) (string, error) {
	_, _ = n.fakeRuntime.Exec(ctx, cmd)
	return "Unknown command.\n", nil
}

// edgeIssuer returns a CA and a function that returns route as an edge
// route with a new certificate of that CA each time it is called.
func edgeIssuer(t *testing.T, route *routev1.Route) (*testcerts.Pair, func() *routev1.Route) {
	t.Helper()
	ca, err := testcerts.NewCA("tenant CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, func() *routev1.Route {
		pair, err := ca.Issue(route.Spec.Host, []string{route.Spec.Host}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := route.DeepCopy()
		r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: pair.CertPEM, Key: pair.KeyPEM}
		return r
	}
}

// TestACertificateRotationIsAppliedThroughTheRuntimeAPI: a new
// certificate of an edge route replaces the old one in place (set/commit
// ssl cert), without a reload.
func TestACertificateRotationIsAppliedThroughTheRuntimeAPI(t *testing.T) {
	ca, issue := edgeIssuer(t, plainRoute("a", "edge"))
	f := newFakeSetup(t, issue())
	f.commit(t)
	f.st.Upsert(issue())
	if f.commit(t) {
		t.Fatal("a certificate rotation reloaded")
	}
	if f.obs.runtime("certificate") != 1 || !strings.Contains(strings.Join(f.rt.sent(), "\n"), "commit ssl cert") {
		t.Fatalf("runtime changes %v, commands %v", f.obs.runtimeChanges, f.rt.sent())
	}

	// A certificate larger than the runtime API takes (HAProxy would drop
	// it unanswered) is reloaded, not sent, and its route stays.
	var chain strings.Builder
	chain.WriteString(ca.CertPEM)
	for chain.Len() <= 20000 {
		extra, err := testcerts.NewCA("chain", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		chain.WriteString(extra.CertPEM)
	}
	withChain := func() *routev1.Route {
		r := issue()
		r.Spec.TLS.CACertificate = chain.String()
		return r
	}
	f.st.Upsert(withChain())
	f.commit(t)
	f.st.Upsert(withChain())
	sent := len(f.rt.sent())
	if !f.commit(t) || f.obs.lastReason() != ReasonFiles || len(f.rt.sent()) != sent {
		t.Fatalf("a certificate over the runtime API's payload limit: reason %q, commands %v", f.obs.lastReason(), f.rt.sent()[sent:])
	}
	if r := f.c.Results()["a/edge"]; !r.Admitted {
		t.Fatalf("a/edge: %+v", r)
	}

	// A certificate the runtime API refuses is reloaded instead (the
	// route is not rejected: a certificate HAProxy's check refuses is).
	f.rt.set("set ssl cert", false)
	f.st.Upsert(issue())
	if !f.commit(t) || f.obs.lastReason() != ReasonRuntimeError {
		t.Fatalf("a refused certificate: reason %q", f.obs.lastReason())
	}
	if r := f.c.Results()["a/edge"]; !r.Admitted {
		t.Fatalf("a/edge: %+v", r)
	}
}

// runController runs c until the test ends.
func runController(t *testing.T, c *Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestRouteChangesAreCoalescedAndEndpointChangesAreNot: route changes that
// come within the reload interval are loaded together by one reload;
// an endpoint change meanwhile is applied at once, without one.
func TestRouteChangesAreCoalescedAndEndpointChangesAreNot(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.c.o.ReloadInterval = 700 * time.Millisecond
	runController(t, f.c)
	waitFor(t, "ready", f.c.Ready)
	time.Sleep(f.c.o.ReloadInterval)

	setEndpoints(f.st, "a", "svc", "10.50.0.1", "10.50.0.2")
	waitFor(t, "the endpoint change applied at once", func() bool { return f.obs.runtime("endpoints") == 1 })
	if _, reloads := f.proc.counts(); reloads != 0 {
		t.Fatalf("%d reloads for an endpoint change", reloads)
	}

	for _, ns := range []string{"b", "c", "d", "e", "f"} {
		f.st.Upsert(plainRoute(ns, "web"))
		setEndpoints(f.st, ns, "svc", "10.90.0.1", "10.90.0.2")
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, "all routes loaded", func() bool {
		_, reloads := f.proc.counts()
		return reloads > 0 && len(f.c.Results()) == 6
	})
	time.Sleep(f.c.o.ReloadInterval + 200*time.Millisecond)
	if _, reloads := f.proc.counts(); reloads > 2 {
		t.Fatalf("%d reloads for five route changes within the interval, want at most 2", reloads)
	}
	if !strings.Contains(f.config(t), "be_http:f:web") {
		t.Fatal("the last route is not in the configuration")
	}
}

// TestHAProxyIsRestartedWithBackoffAfterItExits: when HAProxy exits the
// router is not ready and reports restarting until HAProxy was started
// again, after the restart backoff.
func TestHAProxyIsRestartedWithBackoffAfterItExits(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	runController(t, f.c)
	waitFor(t, "ready", f.c.Ready)
	exitedAt := time.Now()
	f.proc.exit(errors.New("signal: killed"))
	waitFor(t, "restarting", func() bool { return f.c.Restarting() && !f.c.Ready() })
	waitFor(t, "started again and ready", func() bool {
		starts, _ := f.proc.counts()
		return starts == 2 && f.c.Ready() && !f.c.Restarting()
	})
	if waited := time.Since(exitedAt); waited < restartBackoffMin {
		t.Fatalf("restarted after %v, before the backoff of %v", waited, restartBackoffMin)
	}
	if f.c.Restarts() != 1 || f.obs.restarts != 1 || f.obs.lastReason() != ReasonRestart {
		t.Fatalf("restarts %d, observed %d, reason %q", f.c.Restarts(), f.obs.restarts, f.obs.lastReason())
	}
}

// TestBindEarlyServesNoRoutesUntilTheSourcesSynced: with BindEarly HAProxy
// starts with no route before the sources have synced, the router is not
// ready, and the routes are loaded once they have.
func TestBindEarlyServesNoRoutesUntilTheSourcesSynced(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.c.o.BindEarly, f.c.o.Sources = true, []string{"test"}
	f.c.o.ReloadInterval = 50 * time.Millisecond
	runController(t, f.c)
	waitFor(t, "started before the sync", func() bool { s, _ := f.proc.counts(); return s == 1 })
	if f.c.Ready() || strings.Contains(f.config(t), "be_http:a:web") {
		t.Fatal("ready, or routes served, before the sources synced")
	}
	f.st.MarkSynced("test")
	waitFor(t, "ready with the routes", func() bool { return f.c.Ready() && f.c.Results()["a/web"].Admitted })
	if !strings.Contains(f.config(t), "be_http:a:web") {
		t.Fatal("route not loaded after the sync")
	}
}

// TestAFailedFirstStartIsFatal: a configuration HAProxy cannot start with
// when it never ran ends Run with the error.
func TestAFailedFirstStartIsFatal(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.proc.startErr = errors.New("cannot bind socket")
	err := f.c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot bind socket") {
		t.Fatalf("Run: %v", err)
	}
}

// TestAFailedPreflightWithoutCulpritFailsThePass: a maxconn that does not
// fit the open-files limit, with no route to blame, fails the pass and
// leaves the files HAProxy runs.
func TestAFailedPreflightWithoutCulpritFailsThePass(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.commit(t)
	before := f.config(t)
	f.c.o.FDLimit = 1000
	f.st.Upsert(plainRoute("b", "web"))
	if _, err := f.c.Commit(context.Background()); err == nil || !strings.Contains(err.Error(), "open-files limit") {
		t.Fatalf("commit: %v", err)
	}
	if f.config(t) != before {
		t.Fatal("the files are not the ones haproxy runs")
	}
}

// logLines records what a logger logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 2})
}

func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// TestDecisionsAreLoggedOnceWhenTheyChange: an ignored annotation, a
// route rejected for another namespace's claim (the holder in the log,
// not in the status) and the open-files budget's decisions are logged
// once, not on every pass.
func TestDecisionsAreLoggedOnceWhenTheyChange(t *testing.T) {
	older := plainRoute("x", "shop")
	older.Spec.Host = "shop.example.com"
	newer := plainRoute("y", "shop")
	newer.Spec.Host = "shop.example.com"
	odd := plainRoute("a", "web")
	odd.Annotations = map[string]string{"haproxy.router.openshift.io/timeout": "soon"}
	f := newFakeSetup(t, older, newer, odd)
	setEndpoints(f.st, "big", "svc", "10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4")
	f.st.Upsert(plainRoute("big", "web"))
	var logs logLines
	f.c.o.Logger = logs.logger()
	// maxconn 20000 leaves 6 health-checked servers: x's 2 and a's 2
	// endpoints fit, big's 4 do not: big/web is served unchecked.
	f.c.o.FDLimit = 1000 + 2*20000 + 6
	f.commit(t)
	f.st.Poke()
	f.commit(t)

	if r := f.c.Results()["y/shop"]; r.Reason != "HostAlreadyClaimed" || strings.Contains(r.Message, "x/shop") {
		t.Fatalf("y/shop: %+v", r)
	}
	if r := f.c.Results()["big/web"]; !r.Admitted {
		t.Fatalf("big/web: %+v", r)
	}
	if cfg := f.config(t); strings.Count(cfg, " check inter ") > 6 || !strings.Contains(cfg, " 10.1.0.1:8080 weight ") {
		t.Fatalf("more checks than the budget, or big/web's endpoints not served:\n%s", cfg)
	}
	for _, want := range [][]string{
		{"ignoring invalid route annotation", "a:web"},
		{"route rejected", "y/shop", `"holder"="x/shop"`},
		{"health checks of server lines shared within the open files budget", `"routesWithUncheckedEndpoints"=1`},
	} {
		if n := logs.count(want...); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, strings.Join(logs.lines, "\n"))
		}
	}
}
