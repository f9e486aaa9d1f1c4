package kube

import (
	"testing"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		Spec: routev1.RouteSpec{Host: "web.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

func TestRouteUpdatesReachTheStoreOnlyWhenTheRouterReadsWhatChanged(t *testing.T) {
	for _, tc := range []struct {
		name        string
		next        *routev1.Route
		wantUpserts int
	}{
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
	} {
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
