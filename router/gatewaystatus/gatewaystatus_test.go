package gatewaystatus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/store"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
)

func cond(typ string, status metav1.ConditionStatus, reason string, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: at, ObservedGeneration: 1}
}

func TestSetConditionsKeepsTransitionTimesWhileTheStatusHolds(t *testing.T) {
	have := []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", t0), cond("Stale", metav1.ConditionTrue, "X", t0)}
	want := []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{}), cond("Programmed", metav1.ConditionFalse, "Invalid", metav1.Time{})}
	if !setConditions(&have, want, t1) {
		t.Fatal("no change reported")
	}
	if len(have) != 2 || have[0].LastTransitionTime != t0 || have[1].Type != "Programmed" || have[1].LastTransitionTime != t1 {
		t.Errorf("conditions %+v: want Accepted since t0, Programmed since t1, Stale gone", have)
	}
	if setConditions(&have, want, t1.Rfc3339Copy()) {
		t.Error("the same conditions again reported as a change")
	}
	want[0].Status = metav1.ConditionFalse
	setConditions(&have, want, t1)
	if have[0].LastTransitionTime != t1 {
		t.Errorf("a status change kept its old transition time: %+v", have[0])
	}
}

func TestRouteParentsTouchOnlyThisRoutersEntries(t *testing.T) {
	ours, other := "haproxy.router.openshift.io/gateway-controller", "example.com/other"
	ref := func(name string) gatewayv1.ParentReference {
		return gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	}
	entry := func(name, controller string) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ParentRef: ref(name), ControllerName: gatewayv1.GatewayController(controller),
			Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", t0)}}
	}
	have := []gatewayv1.RouteParentStatus{entry("theirs", other), entry("gone", ours), entry("gw", ours), entry("shard-b", ours)}
	want := []gatewayv1.RouteParentStatus{{ParentRef: ref("gw"), ControllerName: gatewayv1.GatewayController(ours),
		Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{}), cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", metav1.Time{})}},
		{ParentRef: ref("new"), ControllerName: gatewayv1.GatewayController(ours),
			Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{})}}}
	// This router serves gw, gone and new; shard-b is another shard's.
	mine := func(r gatewayv1.ParentReference) bool { return r.Name != "shard-b" }
	if !routeParents(&have, want, ours, mine, t1) {
		t.Fatal("no change reported")
	}
	var got []string
	for _, p := range have {
		got = append(got, string(p.ParentRef.Name))
	}
	if fmt.Sprint(got) != "[theirs gw shard-b new]" || have[1].Conditions[0].LastTransitionTime != t0 || have[1].Conditions[1].LastTransitionTime != t1 {
		t.Errorf("parents %v (%+v): want theirs and shard-b kept, gw updated in place (Accepted since t0), gone dropped, new appended", got, have)
	}
	if routeParents(&have, want, ours, mine, t1) {
		t.Error("the same entries again reported as a change")
	}
	if !routeParents(&have, nil, ours, mine, t1) || len(have) != 2 || have[0].ParentRef.Name != "theirs" || have[1].ParentRef.Name != "shard-b" {
		t.Errorf("a route that left: parents %+v, want theirs and shard-b", have)
	}
}

// fakeCache reads the fake clientset (the informers' copies stand-in).
type fakeCache struct{ c *gatewayfake.Clientset }

func (f fakeCache) GatewayClass(name string) *gatewayv1.GatewayClass {
	o, _ := f.c.GatewayV1().GatewayClasses().Get(context.Background(), name, metav1.GetOptions{})
	return o
}
func (f fakeCache) Gateway(ns, name string) *gatewayv1.Gateway {
	o, _ := f.c.GatewayV1().Gateways(ns).Get(context.Background(), name, metav1.GetOptions{})
	return o
}
func (f fakeCache) HTTPRoutes() []*gatewayv1.HTTPRoute {
	l, _ := f.c.GatewayV1().HTTPRoutes("").List(context.Background(), metav1.ListOptions{})
	var out []*gatewayv1.HTTPRoute
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out
}
func (f fakeCache) HTTPRoute(ns, name string) *gatewayv1.HTTPRoute {
	o, _ := f.c.GatewayV1().HTTPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
	return o
}
func (f fakeCache) TLSRoutes() []*gatewayv1.TLSRoute {
	l, _ := f.c.GatewayV1().TLSRoutes("").List(context.Background(), metav1.ListOptions{})
	var out []*gatewayv1.TLSRoute
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out
}
func (f fakeCache) TLSRoute(ns, name string) *gatewayv1.TLSRoute {
	o, _ := f.c.GatewayV1().TLSRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
	return o
}

// drain runs the queue's items synchronously.
func (w *Writer) drain(t *testing.T) {
	t.Helper()
	for w.queue.Len() > 0 {
		if !w.processNext(context.Background()) {
			return
		}
	}
}

// TestWriterWritesWhatChangedAndForgetsRoutesThatLeave: the writer writes
// each object whose wanted status is new, nothing when a pass wants the
// same again, and takes its entry out of an HTTPRoute that left.
func TestWriterWritesWhatChangedAndForgetsRoutesThatLeave(t *testing.T) {
	c := gatewayfake.NewSimpleClientset(
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "haproxy", Generation: 1}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "r", Generation: 1}},
	)
	w := New(Options{Client: c, Cache: fakeCache{c}, Logger: logr.Discard(), Now: func() time.Time { return t1.Time }})
	res := &gateway.Result{
		Classes: map[string]gateway.ClassStatus{"haproxy": {Generation: 1, Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{})},
			SupportedFeatures: []gatewayv1.SupportedFeature{{Name: "Gateway"}, {Name: "HTTPRoute"}}}},
		HTTPRoutes: map[store.Key]*gateway.RouteStatus{"app/r": {Generation: 1, Parents: []gatewayv1.RouteParentStatus{{
			ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: gateway.DefaultControllerName,
			Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{})}}}}},
	}
	w.Update(res)
	w.drain(t)
	if w.Writes() != 2 {
		t.Fatalf("%d writes, want 2 (class, route)", w.Writes())
	}
	class := fakeCache{c}.GatewayClass("haproxy")
	if len(class.Status.Conditions) != 1 || class.Status.Conditions[0].LastTransitionTime.Time != t1.Time || len(class.Status.SupportedFeatures) != 2 {
		t.Errorf("class status %+v", class.Status)
	}
	w.Update(res)
	w.Recheck(GatewayClasses, "", "haproxy")
	w.drain(t)
	if w.Writes() != 2 {
		t.Errorf("%d writes after the same status again, want 2", w.Writes())
	}
	w.Update(&gateway.Result{Classes: res.Classes})
	w.drain(t)
	if r := (fakeCache{c}).HTTPRoute("app", "r"); len(r.Status.Parents) != 0 || w.Writes() != 3 {
		t.Errorf("route that left: parents %+v, %d writes, want none and 3", r.Status.Parents, w.Writes())
	}
	if len(w.dropped[HTTPRoutes]) != 0 {
		t.Errorf("dropped %v kept after the entry went", w.dropped)
	}
}

// TestTLSRouteEntriesAreWrittenAndRemoved: a TLSRoute's entry is written
// as an HTTPRoute's is, taken out when the route leaves, and one left
// behind while the router was down goes at the first update.
func TestTLSRouteEntriesAreWrittenAndRemoved(t *testing.T) {
	entry := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: gateway.DefaultControllerName,
		Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", metav1.Time{})}}
	c := gatewayfake.NewSimpleClientset(
		&gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1}},
		&gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "old", Generation: 1},
			Status: gatewayv1.TLSRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{entry}}}},
	)
	w := New(Options{Client: c, Cache: fakeCache{c}, Logger: logr.Discard(), Now: func() time.Time { return t1.Time }})
	res := &gateway.Result{Gateways: map[store.Key]*gateway.GatewayStatus{"app/gw": {Generation: 1}},
		TLSRoutes: map[store.Key]*gateway.RouteStatus{"app/db": {Generation: 1, Parents: []gatewayv1.RouteParentStatus{entry}}}}
	w.Update(res)
	w.drain(t)
	if r := (fakeCache{c}).TLSRoute("app", "db"); len(r.Status.Parents) != 1 || r.Status.Parents[0].Conditions[0].LastTransitionTime.Time != t1.Time {
		t.Errorf("the TLSRoute's entry: %+v", r.Status.Parents)
	}
	if r := (fakeCache{c}).TLSRoute("app", "old"); len(r.Status.Parents) != 0 {
		t.Errorf("an entry left behind: %+v, want none", r.Status.Parents)
	}
	w.Update(&gateway.Result{Gateways: res.Gateways})
	w.drain(t)
	if r := (fakeCache{c}).TLSRoute("app", "db"); len(r.Status.Parents) != 0 || len(w.dropped[TLSRoutes]) != 0 {
		t.Errorf("a TLSRoute that left: %+v, dropped %v", r.Status.Parents, w.dropped)
	}
}

// TestEntriesLeftBehindAreRemovedAtTheFirstUpdate: after a restart, an
// HTTPRoute that still has this router's entry for a Gateway it serves,
// but no longer attaches there, loses it; an entry for a Gateway another
// shard serves (same controller name) stays.
func TestEntriesLeftBehindAreRemovedAtTheFirstUpdate(t *testing.T) {
	entry := func(gw string) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)},
			ControllerName: gateway.DefaultControllerName, Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", t0)}}
	}
	route := func(name, gw string) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Generation: 1},
			Spec:   gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw)}}}},
			Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{entry(gw)}}}}
	}
	c := gatewayfake.NewSimpleClientset(route("left", "ours"), route("shard-b", "theirs"))
	w := New(Options{Client: c, Cache: fakeCache{c}, Logger: logr.Discard(), Now: func() time.Time { return t1.Time }})
	w.Update(&gateway.Result{Gateways: map[store.Key]*gateway.GatewayStatus{"app/ours": {Generation: 1}}})
	w.drain(t)
	if r := (fakeCache{c}).HTTPRoute("app", "left"); len(r.Status.Parents) != 0 {
		t.Errorf("left behind: parents %+v, want none", r.Status.Parents)
	}
	if r := (fakeCache{c}).HTTPRoute("app", "shard-b"); len(r.Status.Parents) != 1 {
		t.Errorf("another shard's: parents %+v, want its entry", r.Status.Parents)
	}
}
