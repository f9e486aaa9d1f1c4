package kube

import (
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// countingSink counts what reaches the store.
type countingSink struct{ upserts, deletes int }

func (s *countingSink) Upsert(runtime.Object) { s.upserts++ }
func (s *countingSink) Delete(runtime.Object) { s.deletes++ }
func (s *countingSink) MarkSynced(string)     {}

func route(rv string, mutate func(r *routev1.Route)) *routev1.Route {
	r := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: rv, Generation: 1,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "1"}},
		Spec: routev1.RouteSpec{Host: "web.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"},
			TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// routeUpdate is a new version of route("1", nil) and whether the router
// reads what changed (wantUpserts 1).
type routeUpdate struct {
	name        string
	next        *routev1.Route
	wantUpserts int
}

func routeUpdates() []routeUpdate {
	return []routeUpdate{
		{name: "resync (same resourceVersion)", next: route("1", nil), wantUpserts: 0},
		{name: "status only", next: route("2", func(r *routev1.Route) {
			r.Status.Ingress = []routev1.RouteIngress{{RouterName: "default", Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue}}}}
		}), wantUpserts: 0},
		{name: "managed fields only", next: route("2", func(r *routev1.Route) {
			r.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "openshift-router"}}
		}), wantUpserts: 0},
		{name: "spec", next: route("2", func(r *routev1.Route) { r.Spec.Path = "/x"; r.Generation = 2 }), wantUpserts: 1},
		{name: "spec without a generation bump", next: route("2", func(r *routev1.Route) { r.Spec.Path = "/x" }), wantUpserts: 1},
		{name: "label", next: route("2", func(r *routev1.Route) { r.Labels["shard"] = "a" }), wantUpserts: 1},
		{name: "annotation", next: route("2", func(r *routev1.Route) { r.Annotations["haproxy.router.openshift.io/timeout"] = "5s" }), wantUpserts: 1},
		{name: "deletion started", next: route("2", func(r *routev1.Route) { now := metav1.Now(); r.DeletionTimestamp = &now }), wantUpserts: 1},
		{name: "tls", next: route("2", func(r *routev1.Route) { r.Spec.TLS.Termination = routev1.TLSTerminationReencrypt }), wantUpserts: 1},
	}
}

func TestRouteUpdatesReachTheStoreOnlyWhenTheRouterReadsWhatChanged(t *testing.T) {
	for _, tc := range routeUpdates() {
		t.Run(tc.name, func(t *testing.T) {
			sink := &countingSink{}
			var rechecked []string
			s := &Source{o: Options{Sink: sink, Logger: logr.Discard(),
				StatusChanged: func(ns, name string) { rechecked = append(rechecked, ns+"/"+name) }}}
			s.routeHandler().OnUpdate(route("1", nil), tc.next)
			if sink.upserts != tc.wantUpserts {
				t.Errorf("upserts to the store: %d, want %d", sink.upserts, tc.wantUpserts)
			}
			wantRechecks := 1
			if tc.next.ResourceVersion == "1" {
				wantRechecks = 0
			}
			if len(rechecked) != wantRechecks {
				t.Errorf("status rechecks %v, want %d", rechecked, wantRechecks)
			}
		})
	}
}

func TestAddedRouteReachesTheStoreAndItsStatusIsChecked(t *testing.T) {
	sink := &countingSink{}
	var rechecked []string
	s := &Source{o: Options{Sink: sink, Logger: logr.Discard(),
		StatusChanged: func(ns, name string) { rechecked = append(rechecked, ns+"/"+name) }}}
	s.routeHandler().OnAdd(route("1", nil), false)
	if sink.upserts != 1 || len(rechecked) != 1 || rechecked[0] != "ns/web" {
		t.Fatalf("upserts %d, rechecks %v; want 1, [ns/web]", sink.upserts, rechecked)
	}
}

func TestServiceAndEndpointResyncsDoNotReachTheStore(t *testing.T) {
	sink := &countingSink{}
	s := &Source{o: Options{Sink: sink, Logger: logr.Discard()}}
	svc := func(rv string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: rv}}
	}
	h := s.passThrough()
	h.OnUpdate(svc("1"), svc("1"))
	if sink.upserts != 0 {
		t.Fatalf("a resync reached the store (%d upserts)", sink.upserts)
	}
	h.OnUpdate(svc("1"), svc("2"))
	if sink.upserts != 1 {
		t.Fatalf("a change did not reach the store (%d upserts)", sink.upserts)
	}
}

// A version of a cached route that differs in nothing the router reads (a
// status write) shares the cached version's spec, labels and annotations
// once through the informer's transform (the store keeps the version it
// was given: the route is not held twice); any other version keeps its
// own, and the cached version is left as it was.
func TestAStatusWriteSharesTheCachedRoutesInputs(t *testing.T) {
	for _, tc := range routeUpdates() {
		t.Run(tc.name, func(t *testing.T) {
			cached := route("1", nil)
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := idx.Add(cached); err != nil {
				t.Fatal(err)
			}
			s := &Source{o: Options{Logger: logr.Discard()}, routes: idx}
			next := tc.next
			nextTLS, nextLabels := next.Spec.TLS, reflect.ValueOf(next.Labels).Pointer()
			got, err := s.shareUnchangedInputs(next)
			if err != nil {
				t.Fatal(err)
			}
			n := got.(*routev1.Route)
			shared := n.Spec.TLS == cached.Spec.TLS && reflect.ValueOf(n.Labels).Pointer() == reflect.ValueOf(cached.Labels).Pointer() &&
				reflect.ValueOf(n.Annotations).Pointer() == reflect.ValueOf(cached.Annotations).Pointer()
			if want := tc.wantUpserts == 0; shared != want {
				t.Errorf("inputs shared with the cached version: %v, want %v", shared, want)
			}
			if !shared && (n.Spec.TLS != nextTLS || reflect.ValueOf(n.Labels).Pointer() != nextLabels) {
				t.Errorf("a version the router reads lost its own inputs")
			}
			if n.ResourceVersion != next.ResourceVersion || !equality.Semantic.DeepEqual(n.Status, next.Status) || n.ManagedFields != nil {
				t.Errorf("version %s, status %v, managed fields %v: want %s, the new status, none", n.ResourceVersion, n.Status, n.ManagedFields, next.ResourceVersion)
			}
			if !equality.Semantic.DeepEqual(cached, route("1", nil)) {
				t.Errorf("the cached version changed: %+v", cached)
			}
		})
	}
	t.Run("not cached", func(t *testing.T) {
		s := &Source{o: Options{Logger: logr.Discard()}, routes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
		r := route("1", nil)
		tls := r.Spec.TLS
		got, err := s.shareUnchangedInputs(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.(*routev1.Route).Spec.TLS != tls {
			t.Errorf("a route not cached yet lost its own inputs")
		}
	})
}
