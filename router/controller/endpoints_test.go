package controller

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// Log messages of the controller's route changes.
const (
	logWorked   = "route changes worked out without a full render"
	logFullPass = "route change needs a full pass"
)

// startedWithLogs is newFakeSetup(routes...) with the controller's log
// recorded, after a first commit that started HAProxy.
func startedWithLogs(t *testing.T, routes ...*routev1.Route) (*fakeSetup, *logLines) {
	t.Helper()
	f := newFakeSetup(t, routes...)
	logs := &logLines{}
	f.c.o.Logger = logs.logger()
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	return f, logs
}

// setSlice replaces the EndpointSlice of service svc of ns (an endpoint
// change alone: the service is left as it is).
func setSlice(st *store.Store, ns, svc string, ips ...string) {
	port, portName := int32(8080), "web"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	st.Upsert(slice)
}

// fullRender is the haproxy.config a full pass renders for the store with
// the controller's running layouts.
func (f *fakeSetup) fullRender(t *testing.T) []byte {
	t.Helper()
	f.c.mu.RLock()
	layouts := f.c.layouts
	f.c.mu.RUnlock()
	out, err := pipeline.Pass(f.st, f.c.o.Inputs, pipeline.State{Layouts: layouts})
	if err != nil {
		t.Fatal(err)
	}
	return out.Config
}

// TestEndpointChangesAreAppliedWithoutAFullPass: an endpoint change alone
// is worked out from the last full pass (the same pass output, updated),
// sent through the runtime API, and haproxy.config on disk becomes what a
// full pass renders — at once while writing it is cheap, at the coalesced
// write otherwise; any other change runs a full pass, which finds nothing
// left to send.
func TestEndpointChangesAreAppliedWithoutAFullPass(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"), plainRoute("b", "web"))
	ctx := context.Background()
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	base := f.c.last
	if base == nil {
		t.Fatal("no pass output kept after the first start")
	}
	steps := []struct {
		name   string
		change func()
		// slowWrite makes the file seem large and its last write slow:
		// the file waits.
		slowWrite bool
		full      bool
		sent      string
	}{
		{name: "an endpoint added", change: func() { setSlice(f.st, "a", "svc", "10.99.0.1", "10.99.0.2", "10.50.0.1") }, sent: "10.50.0.1"},
		{name: "an endpoint of another namespace replaced", change: func() { setSlice(f.st, "b", "svc", "10.99.1.1", "10.50.1.2") }, sent: "10.50.1.2"},
		{name: "a large configuration is written later", change: func() { setSlice(f.st, "a", "svc", "10.50.0.1") }, slowWrite: true, sent: "state maint"},
		{name: "a service change runs a full pass", change: func() { setEndpoints(f.st, "b", "svc", "10.99.1.1", "10.50.1.2") }, full: true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := len(f.rt.sent())
			disk := f.config(t)
			if s.slowWrite {
				f.c.mu.Lock()
				f.c.lastWriteTook, f.c.syncWriteMax = time.Second, 0
				f.c.mu.Unlock()
				defer func() {
					f.c.mu.Lock()
					f.c.syncWriteMax = syncWriteMax
					f.c.mu.Unlock()
				}()
			}
			s.change()
			out, err := f.c.commit(ctx, false, true)
			if err != nil || out.deferred || out.reloaded {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			if s.full != (f.c.last != base) {
				t.Fatalf("full pass %v, want %v", f.c.last != base, s.full)
			}
			sent := strings.Join(f.rt.sent()[before:], "\n")
			if s.full {
				if sent != "" {
					t.Fatalf("the full pass after endpoint changes sent %q", sent)
				}
			} else if !strings.Contains(sent, s.sent) {
				t.Fatalf("sent %q, want %q among them", sent, s.sent)
			}
			if s.slowWrite {
				if f.config(t) != disk {
					t.Fatal("a configuration slow to write was written at once")
				}
				if stale, unwritten := f.c.lagging(); stale || !unwritten {
					t.Fatalf("stale %v, unwritten %v", stale, unwritten)
				}
				if d := f.c.flushDelay(); d != writeFactor*time.Second {
					t.Fatalf("write in %v", d)
				}
				f.c.writeText()
			}
			if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
				t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
			}
			if stale, unwritten := f.c.lagging(); stale || unwritten {
				t.Fatalf("stale %v, unwritten %v after the write", stale, unwritten)
			}
		})
	}
	if starts, reloads := f.proc.counts(); starts != 1 || reloads != 0 {
		t.Fatalf("starts %d, reloads %d", starts, reloads)
	}
}

func firstDifference(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines, %d lines", len(al), len(bl))
}

// TestALargeConfigurationIsWrittenCoalescedAfterEndpointChanges: when
// haproxy.config is too large to write at every endpoint change, the
// running controller applies the changes at once and writes the file
// later, once for several changes, as a full pass would render it.
func TestALargeConfigurationIsWrittenCoalescedAfterEndpointChanges(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"), plainRoute("b", "web"))
	f.c.syncWriteMax = 0
	runController(t, f.c)
	waitFor(t, "ready", f.c.Ready)
	waitFor(t, "pass output kept", func() bool {
		f.c.mu.RLock()
		defer f.c.mu.RUnlock()
		return f.c.last != nil
	})
	before := f.config(t)
	setSlice(f.st, "a", "svc", "10.99.0.1", "10.99.0.2", "10.50.0.1")
	setSlice(f.st, "b", "svc", "10.50.1.1")
	waitFor(t, "both changes sent", func() bool {
		sent := strings.Join(f.rt.sent(), "\n")
		return strings.Contains(sent, "10.50.0.1") && strings.Contains(sent, "10.50.1.1")
	})
	if f.config(t) != before {
		t.Fatal("the configuration was written at once")
	}
	waitFor(t, "the configuration written as a full pass renders it", func() bool {
		stale, unwritten := f.c.lagging()
		return !stale && !unwritten && bytes.Equal([]byte(f.config(t)), f.fullRender(t))
	})
	if starts, reloads := f.proc.counts(); starts != 1 || reloads != 0 {
		t.Fatalf("starts %d, reloads %d", starts, reloads)
	}
}

// TestScaleUpsIntoUncheckedSlotsAvoidReloads: under an open-files budget
// that checks one spare slot per route, a scale-up by two endpoints is
// applied through the runtime API (the second endpoint takes an unchecked
// slot, counted by the gauge) without a reload, and the next reload lays
// the backend out afresh: every endpoint on its own line, none counted.
func TestScaleUpsIntoUncheckedSlotsAvoidReloads(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"), plainRoute("b", "web"))
	// maxconn 20000 leaves 8 health-checked servers: the routes' 2 + 2
	// endpoints, then 2 of the slots' checks each.
	f.c.o.FDLimit = 1000 + 2*20000 + 8
	ctx := context.Background()
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	if cfg := f.config(t); strings.Count(cfg, " check inter ") != 8 || strings.Count(cfg, "server _dynamic-pod-") != 10 {
		t.Fatalf("want 8 checked lines and 10 slots:\n%s", cfg)
	}
	setSlice(f.st, "a", "svc", "10.99.0.1", "10.99.0.2", "10.50.0.1", "10.50.0.2", "10.50.0.3")
	out, err := f.c.commit(ctx, false, true)
	if err != nil || out.deferred || out.reloaded || !out.runtime {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	sent := strings.Join(f.rt.sent(), "\n")
	for _, ip := range []string{"10.50.0.1", "10.50.0.2", "10.50.0.3"} {
		if !strings.Contains(sent, "addr "+ip+" ") {
			t.Fatalf("%s not sent:\n%s", ip, sent)
		}
	}
	if strings.Contains(sent, "health") {
		t.Fatalf("health check commands sent:\n%s", sent)
	}
	if n := f.obs.uncheckedEndpoints(); n != 1 {
		t.Fatalf("unchecked endpoints %d, want 1", n)
	}
	if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
		t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
	}
	// A route change reloads: laid out afresh, the endpoints have lines of
	// their own and no slot is occupied.
	f.st.Upsert(plainRoute("a", "shop"))
	if !f.commit(t) {
		t.Fatal("the route change did not reload")
	}
	if n := f.obs.uncheckedEndpoints(); n != 0 {
		t.Fatalf("unchecked endpoints %d after the reload, want 0", n)
	}
	if cfg := f.config(t); !strings.Contains(cfg, " 10.50.0.3:8080 weight ") || strings.Contains(cfg, "server _dynamic-pod-1 10.50.") {
		t.Fatalf("not laid out afresh:\n%s", cfg)
	}
	if starts, reloads := f.proc.counts(); starts != 1 || reloads != 1 {
		t.Fatalf("starts %d, reloads %d", starts, reloads)
	}
}

// TestRouteAdditionsAreWorkedOutWithoutAFullRender: a route added that
// needs a reload (no backend HAProxy runs can stand for it) is worked out
// from the last pass (pipeline.UpdateRoutes), and haproxy.config on disk
// is what a full pass renders — also after endpoint changes moved
// endpoints into spare slots; a change that admits or drops no route
// follows what runs, at runtime.
func TestRouteAdditionsAreWorkedOutWithoutAFullRender(t *testing.T) {
	// More than two routes: UpdateRoutes probes the text around the
	// routes' sections with an unchanged route that is neither the first
	// nor the last.
	f, logs := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"), plainRoute("d", "web"))
	ctx := context.Background()
	fresh := func(t *testing.T) {
		t.Helper()
		out, err := pipeline.Pass(f.st, f.c.o.Inputs, pipeline.State{})
		if err != nil {
			t.Fatal(err)
		}
		if got := []byte(f.config(t)); !bytes.Equal(got, out.Config) {
			t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, out.Config))
		}
	}
	setSlice(f.st, "a", "svc", "10.99.0.1", "10.99.0.2", "10.50.0.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("endpoint change: %+v %v", out, err)
	}
	// A route added that no backend HAProxy runs can stand for: worked
	// out following what runs, then afresh for the reload it needs.
	before := logs.count(logWorked)
	f.st.Upsert(plainRoute("a", "shop"))
	if out, err := f.c.commit(ctx, true, false); err != nil || !out.reloaded {
		t.Fatalf("route added: %+v %v", out, err)
	}
	if logs.count(logWorked) != before+2 || logs.count(`"reason"="backends"`) == 0 {
		t.Fatalf("the route added was not worked out without a full render:\n%s", strings.Join(logs.lines, "\n"))
	}
	fresh(t)
	// A change that admits or drops no route (here a service's endpoints,
	// the endpoint path not asked for) is worked out following what runs
	// (pipeline.UpdateRoutesFollowing) and applied at runtime: on disk is
	// what a full pass on the running layouts renders.
	running := servers.Of(f.c.last.Model)
	before = logs.count(logWorked, `"for"="runtime"`)
	setEndpoints(f.st, "a", "svc", "10.99.0.1")
	out, err := f.c.commit(ctx, true, false)
	if err != nil || out.reloaded || !out.runtime {
		t.Fatalf("endpoints of a route's service: %+v %v", out, err)
	}
	if logs.count(logWorked, `"for"="runtime"`) != before+1 {
		t.Fatalf("the change was not worked out following what runs:\n%s", strings.Join(logs.lines, "\n"))
	}
	want, err := pipeline.Pass(f.st, f.c.o.Inputs, pipeline.State{Layouts: running})
	if err != nil {
		t.Fatal(err)
	}
	if got := []byte(f.config(t)); !bytes.Equal(got, want.Config) {
		t.Fatalf("haproxy.config on disk is not what a full pass on the running layouts renders:\n%s", firstDifference(got, want.Config))
	}
}

// TestRouteAdditionsWaitForTheReloadWithoutAFullPass: a route added while
// reloads must wait (the reload interval), that no backend HAProxy runs
// can stand for, is deferred, and the reload that follows is worked out
// from the last pass: neither runs a full render.
func TestRouteAdditionsWaitForTheReloadWithoutAFullPass(t *testing.T) {
	// More than two routes: UpdateRoutes probes the text around the
	// routes' sections with an unchanged route that is neither the first
	// nor the last.
	f, logs := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"))
	ctx := context.Background()
	f.st.Upsert(plainRoute("a", "shop"))
	out, err := f.c.commit(ctx, false, false)
	if err != nil || !out.deferred {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if logs.count("change needs a reload; waiting", `"reason"="backends"`) != 1 {
		t.Fatalf("not deferred for the backend:\n%s", strings.Join(logs.lines, "\n"))
	}
	out, err = f.c.commit(ctx, true, false)
	if err != nil || !out.reloaded {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if logs.count(logWorked) != 2 {
		t.Fatalf("the reload was not worked out from the last pass:\n%s", strings.Join(logs.lines, "\n"))
	}
}

// TestRouteAdditionsWithATemplateThatListsTheRoutesRunTheFullPass: with a
// template whose text around the routes' backends depends on the routes
// (a comment counting them in the global section), routes added run the
// full pass, the reason is logged once, and haproxy.config is a full
// render.
func TestRouteAdditionsWithATemplateThatListsTheRoutesRunTheFullPass(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"), plainRoute("d", "web"))
	const anchor = "\nglobal\n"
	src := templates.Default()
	if !strings.Contains(src, anchor) {
		t.Fatalf("the default template has no %q", anchor)
	}
	counting, err := templates.Parse("counting", strings.Replace(src, anchor, "\n# {{ len .State }} routes\nglobal\n", 1), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	f.c.o.Inputs.Renderer = counting
	var logs logLines
	f.c.o.Logger = logs.logger()
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	for _, name := range []string{"shop", "cart"} {
		f.st.Upsert(plainRoute("a", name))
		out, err := f.c.commit(context.Background(), true, false)
		if err != nil || !out.reloaded {
			t.Fatalf("route a/%s added: %+v %v", name, out, err)
		}
	}
	if logs.count(logWorked) != 0 {
		t.Fatalf("a route change was worked out without a full pass:\n%s", strings.Join(logs.lines, "\n"))
	}
	if logs.count(logFullPass, pipeline.FullNotPerRoute) != 1 {
		t.Fatalf("the full-pass reason %q is not logged once:\n%s", pipeline.FullNotPerRoute, strings.Join(logs.lines, "\n"))
	}
	full, err := pipeline.Pass(f.st, f.c.o.Inputs, pipeline.State{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []byte(f.config(t)); !bytes.Equal(got, full.Config) {
		t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, full.Config))
	}
	if !strings.Contains(f.config(t), "# 6 routes\n") {
		t.Fatal("haproxy.config does not count the added route")
	}
}

// TestRouteUpdatesWithoutAFullRender: a route update that admits or drops
// no route is worked out following what runs
// (pipeline.UpdateRoutesFollowing), not by a full pass: a certificate
// rotation is applied at runtime (no reload); an annotation that changes
// the route's backend section needs the reload, which, since endpoints
// sit in spare slots, is worked out afresh (pipeline.UpdateRoutesFresh),
// still without a full pass, and what is on disk is then what a full pass
// renders; while reloads wait, the same change is deferred and the files
// stay as they were.
func TestRouteUpdatesWithoutAFullRender(t *testing.T) {
	_, issue := edgeIssuer(t, plainRoute("d", "edge"))
	withBalance := func(ns, name, balance string) *routev1.Route {
		r := plainRoute(ns, name)
		r.Annotations = map[string]string{"haproxy.router.openshift.io/balance": balance}
		return r
	}
	f, logs := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"), issue())
	ctx := context.Background()
	setSlice(f.st, "a", "svc", "10.99.0.1", "10.99.0.2", "10.50.0.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("endpoint change: %+v %v", out, err)
	}

	// A certificate rotation: at runtime.
	runtime, reload := logs.count(logWorked, `"for"="runtime"`), logs.count(logWorked, `"for"="reload"`)
	f.st.Upsert(issue())
	out, err := f.c.commit(ctx, true, false)
	if err != nil || out.reloaded || !out.runtime {
		t.Fatalf("certificate rotation: %+v %v", out, err)
	}
	if logs.count(logWorked, `"for"="runtime"`) != runtime+1 || logs.count(logFullPass) != 0 {
		t.Fatalf("the rotation was not worked out following what runs:\n%s", strings.Join(logs.lines, "\n"))
	}
	if !strings.Contains(strings.Join(f.rt.sent(), "\n"), "commit ssl cert") {
		t.Fatalf("no certificate command sent: %v", f.rt.sent())
	}

	// While reloads wait: deferred, nothing written.
	onDisk := f.config(t)
	f.st.Upsert(withBalance("b", "web", "leastconn"))
	out, err = f.c.commit(ctx, false, false)
	if err != nil || !out.deferred {
		t.Fatalf("annotation change while reloads wait: %+v %v", out, err)
	}
	if f.config(t) != onDisk {
		t.Fatal("a deferred change was written")
	}

	// The reload: worked out afresh, not by a full pass.
	runtime, reload = logs.count(logWorked, `"for"="runtime"`), logs.count(logWorked, `"for"="reload"`)
	f.st.Upsert(withBalance("a", "web", "roundrobin"))
	out, err = f.c.commit(ctx, true, false)
	if err != nil || !out.reloaded {
		t.Fatalf("annotation change: %+v %v", out, err)
	}
	if logs.count(logWorked, `"for"="runtime"`) != runtime+1 || logs.count(logWorked, `"for"="reload"`) != reload+1 || logs.count(logFullPass) != 0 {
		t.Fatalf("the annotation change was not worked out without a full pass:\n%s", strings.Join(logs.lines, "\n"))
	}
	if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
		t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
	}
	if !strings.Contains(f.config(t), "\n  balance roundrobin\n") {
		t.Fatal("the annotation has no effect in haproxy.config")
	}
}

// TestRouteTimeoutChangesAreAppliedAtRuntime: the default template keeps
// an HTTP route's timeout annotations in timeout_server.map and
// timeout_tunnel.map, which the defaults section reads by backend name
// while a route has a timeout (route b here): a timeout set, changed or
// removed is a map entry added, set or deleted through the runtime API,
// no reload.
func TestRouteTimeoutChangesAreAppliedAtRuntime(t *testing.T) {
	withTimeout := func(ns, name, timeout string) *routev1.Route {
		r := plainRoute(ns, name)
		r.Annotations = map[string]string{"haproxy.router.openshift.io/timeout": timeout}
		return r
	}
	f, logs := startedWithLogs(t, plainRoute("a", "web"), withTimeout("b", "web", "30s"))
	ctx := context.Background()
	m := filepath.Join(f.dir, "conf", "timeout_server.map")
	for _, c := range []struct {
		route *routev1.Route
		want  string
	}{
		{withTimeout("a", "web", "7s"), "add map " + m + " be_http:a:web 7000"},
		{withTimeout("a", "web", "90s"), "set map " + m + " be_http:a:web 90000"},
		{plainRoute("a", "web"), "del map " + m + " be_http:a:web"},
	} {
		f.st.Upsert(c.route)
		out, err := f.c.commit(ctx, true, false)
		if err != nil || out.reloaded || !out.runtime {
			t.Fatalf("%s: %+v %v\n%s", c.want, out, err, strings.Join(logs.lines, "\n"))
		}
		if sent := f.rt.sent(); !slices.Contains(sent, c.want) {
			t.Fatalf("commands %q, want %q", sent, c.want)
		}
		if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
			t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
		}
	}
}

// TestRouteAllowlistChangesAreAppliedAtRuntime: the default template reads
// every allowlist from its file: a route that gets one reloads (its
// backend gets the acl), a change of the list is "add acl" / "del acl".
func TestRouteAllowlistChangesAreAppliedAtRuntime(t *testing.T) {
	withAllowlist := func(list string) *routev1.Route {
		r := plainRoute("a", "web")
		r.Annotations = map[string]string{"haproxy.router.openshift.io/ip_allowlist": list}
		return r
	}
	f, logs := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"))
	ctx := context.Background()
	f.st.Upsert(withAllowlist("10.0.0.0/8"))
	if out, err := f.c.commit(ctx, true, false); err != nil || !out.reloaded {
		t.Fatalf("allowlist set: %+v %v", out, err)
	}
	file := filepath.Join(f.dir, "router", "allowlists", "a:web.txt")
	f.st.Upsert(withAllowlist("192.168.0.0/16 10.0.0.0/8"))
	out, err := f.c.commit(ctx, true, false)
	if err != nil || out.reloaded || !out.runtime {
		t.Fatalf("allowlist changed: %+v %v\n%s", out, err, strings.Join(logs.lines, "\n"))
	}
	if want := "add acl " + file + " 192.168.0.0/16"; !slices.Contains(f.rt.sent(), want) {
		t.Fatalf("commands %q, want %q", f.rt.sent(), want)
	}
	f.st.Upsert(withAllowlist("192.168.0.0/16"))
	if out, err := f.c.commit(ctx, true, false); err != nil || out.reloaded || !out.runtime {
		t.Fatalf("allowlist shortened: %+v %v", out, err)
	}
	if want := "del acl " + file + " 10.0.0.0/8"; !slices.Contains(f.rt.sent(), want) {
		t.Fatalf("commands %q, want %q", f.rt.sent(), want)
	}
}

// TestRoutesDeletedAndCreatedAgainAreAppliedAtRuntime: a route deleted is
// applied through the runtime API — its map entry deleted, its servers in
// maintenance (HAProxy keeps its backend) — and created again it takes
// its backend back, also at runtime; neither reloads, and what runs then
// is what a reload would load.
func TestRoutesDeletedAndCreatedAgainAreAppliedAtRuntime(t *testing.T) {
	f, _ := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"), plainRoute("d", "web"))
	ctx := context.Background()
	setSlice(f.st, "b", "svc", "10.99.0.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("endpoint change: %+v %v", out, err)
	}
	_, reloads0 := f.proc.counts()
	sentSince := func(n int) string { return strings.Join(f.rt.sent()[n:], "\n") }

	n := len(f.rt.sent())
	f.st.Delete(plainRoute("b", "web"))
	if out, err := f.c.commit(ctx, true, false); err != nil || !out.runtime {
		t.Fatalf("route deleted: %+v %v", out, err)
	}
	sent := sentSince(n)
	for _, want := range []string{"del map ", " web.b.example.com/", "set server be_http:b:web/", " state maint"} {
		if !strings.Contains(sent, want) {
			t.Fatalf("route deleted: no %q among the commands:\n%s", want, sent)
		}
	}

	n = len(f.rt.sent())
	f.st.Upsert(plainRoute("b", "web"))
	if out, err := f.c.commit(ctx, true, false); err != nil || !out.runtime {
		t.Fatalf("route created again: %+v %v", out, err)
	}
	sent = sentSince(n)
	for _, want := range []string{"add map ", "web.b.example.com/ be_http:b:web", "server be_http:b:web/", "enable server be_http:b:web/"} {
		if !strings.Contains(sent, want) {
			t.Fatalf("route created again: no %q among the commands:\n%s", want, sent)
		}
	}
	if _, reloads := f.proc.counts(); reloads != reloads0 {
		t.Fatalf("reloads %d, were %d", reloads, reloads0)
	}
	if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
		t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
	}
}

// TestChangesNoRouteUsesApplyNothing: the Service and EndpointSlice of a
// route deleted in an earlier commit go: no route uses them, so nothing is
// rendered, written or sent (no full pass either), the last output moves
// on to the store's generation, and the changes after it are worked out
// from it as before, the file on disk ending as a full pass renders it.
func TestChangesNoRouteUsesApplyNothing(t *testing.T) {
	f, logs := startedWithLogs(t, plainRoute("a", "web"), plainRoute("b", "web"), plainRoute("c", "web"), plainRoute("d", "web"), plainRoute("e", "web"))
	ctx := context.Background()
	generation := func() uint64 {
		var g uint64
		_ = f.st.Read(func(v store.View) error { g = v.Generation(); return nil })
		return g
	}
	// An endpoint change first: the last output's files lag behind what
	// runs for that route (the text written has it).
	setSlice(f.st, "a", "svc", "10.99.0.1", "10.50.0.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("endpoint change: %+v %v", out, err)
	}
	f.st.Delete(plainRoute("b", "web"))
	if out, err := f.c.commit(ctx, true, false); err != nil || !out.runtime {
		t.Fatalf("route deleted: %+v %v", out, err)
	}
	_, reloads0 := f.proc.counts()
	disk, sent0, worked0 := f.config(t), len(f.rt.sent()), logs.count(logWorked)

	f.st.Delete(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "svc-1"}})
	f.st.Delete(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "svc"}})
	if out, err := f.c.commit(ctx, true, true); err != nil || out != (outcome{}) {
		t.Fatalf("service of a deleted route deleted: %+v %v", out, err)
	}
	if sent := f.rt.sent()[sent0:]; len(sent) > 0 {
		t.Errorf("commands sent: %q", sent)
	}
	if f.config(t) != disk {
		t.Error("haproxy.config was written again")
	}
	if logs.count("changes affect no route") != 1 || logs.count(logWorked) != worked0+1 {
		t.Errorf("not worked out as a change that affects no route (%d logged)", logs.count("changes affect no route"))
	}
	if f.c.last == nil || f.c.last.Generation != generation() {
		t.Fatal("the last output did not move on to the store's generation")
	}

	// What follows is worked out from it: an endpoint change, a route.
	setSlice(f.st, "c", "svc", "10.99.2.1", "10.50.2.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("endpoint change after: %+v %v", out, err)
	}
	f.st.Upsert(plainRoute("b2", "web"))
	setEndpoints(f.st, "b2", "svc", "10.99.4.1")
	if out, err := f.c.commit(ctx, true, true); err != nil || !out.runtime {
		t.Fatalf("route added after: %+v %v", out, err)
	}
	if logs.count(logFullPass) != 0 {
		t.Errorf("%d full passes: %q", logs.count(logFullPass), logs.lines)
	}
	if _, reloads := f.proc.counts(); reloads != reloads0 {
		t.Errorf("reloads %d, were %d", reloads, reloads0)
	}
	if got, want := []byte(f.config(t)), f.fullRender(t); !bytes.Equal(got, want) {
		t.Fatalf("haproxy.config on disk is not what a full pass renders:\n%s", firstDifference(got, want))
	}
}
