package store

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func slice(ns, name, svc string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}}}
}

func (s *Store) changesSince(gen uint64) ([]Key, bool) {
	var out []Key
	var ok bool
	_ = s.Read(func(v View) error {
		out, ok = v.EndpointChangesSince(gen)
		return nil
	})
	return out, ok
}

// TestEndpointChangesSinceNamesTheServicesOfEndpointChangesOnly: the
// services whose Endpoints or EndpointSlices changed since a generation,
// each once; anything else changed since (or a log that no longer
// reaches back) is not an endpoint change alone.
func TestEndpointChangesSinceNamesTheServicesOfEndpointChangesOnly(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Store)
		want   []Key
		ok     bool
	}{
		{"a slice added", func(s *Store) { s.Upsert(slice("ns", "a-2", "a")) }, []Key{"ns/a"}, true},
		{"slices of two services, one twice", func(s *Store) {
			s.Upsert(slice("ns", "b-1", "b"))
			s.Upsert(slice("ns", "a-1", "a"))
			s.Upsert(slice("ns", "b-1", "b"))
		}, []Key{"ns/b", "ns/a"}, true},
		{"a slice moved to another service: both", func(s *Store) { s.Upsert(slice("ns", "a-1", "c")) }, []Key{"ns/c", "ns/a"}, true},
		{"a slice deleted", func(s *Store) { s.Delete(slice("ns", "a-1", "")) }, []Key{"ns/a"}, true},
		{"an Endpoints object", func(s *Store) {
			s.Upsert(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}})
		}, []Key{"ns/e"}, true},
		{"a route changed too", func(s *Store) {
			s.Upsert(slice("ns", "a-2", "a"))
			s.Upsert(&routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}})
		}, nil, false},
		{"a service changed", func(s *Store) {
			s.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
		}, nil, false},
		{"a poke", func(s *Store) { s.Poke() }, nil, false},
		{"nothing", func(s *Store) {}, nil, true},
		{"more changes than the log keeps", func(s *Store) {
			for i := 0; i <= maxEndpointLog; i++ {
				s.Upsert(slice("ns", fmt.Sprintf("x-%d", i), "x"))
			}
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			s.Upsert(slice("ns", "a-1", "a"))
			gen := s.Generation()
			tt.change(s)
			got, ok := s.changesSince(gen)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("EndpointChangesSince = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
			if got, ok := s.changesSince(s.Generation()); !ok || len(got) != 0 {
				t.Fatalf("since now: %v, %v", got, ok)
			}
		})
	}
}

// TestChangesSinceNamesRoutesAndServices: route changes (added, updated,
// deleted) and endpoint changes since a generation, each once; any other
// change since is not one of them alone.
func TestChangesSinceNamesRoutesAndServices(t *testing.T) {
	route := func(name string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	tests := []struct {
		name           string
		change         func(s *Store)
		routes, states []Key
		ok             bool
	}{
		{"routes added, updated and deleted, with an endpoint change", func(s *Store) {
			s.Upsert(route("new"))
			s.Upsert(slice("ns", "a-2", "a"))
			s.Upsert(route("old"))
			s.Delete(route("gone"))
			s.Upsert(route("new"))
		}, []Key{"ns/new", "ns/old", "ns/gone"}, []Key{"ns/a"}, true},
		{"a service changed: named with the services", func(s *Store) {
			s.Upsert(route("new"))
			s.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}})
		}, []Key{"ns/new"}, []Key{"ns/svc"}, true},
		{"a namespace changed too", func(s *Store) {
			s.Upsert(route("new"))
			s.Upsert(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
		}, nil, nil, false},
		{"nothing", func(s *Store) {}, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			s.Upsert(route("old"))
			s.Upsert(route("gone"))
			gen := s.Generation()
			tt.change(s)
			var routes, services []Key
			var ok bool
			_ = s.Read(func(v View) error {
				routes, services, ok = v.ChangesSince(gen)
				return nil
			})
			if ok != tt.ok || !reflect.DeepEqual(routes, tt.routes) || !reflect.DeepEqual(services, tt.states) {
				t.Fatalf("ChangesSince = %v, %v, %v; want %v, %v, %v", routes, services, ok, tt.routes, tt.states, tt.ok)
			}
		})
	}
}

// TestEndpointSlicesOfAServiceAreItsOwnSortedByName: a service's
// EndpointSlices, by name, follow upserts (also of a slice that moves to
// another service) and deletes.
func TestEndpointSlicesOfAServiceAreItsOwnSortedByName(t *testing.T) {
	s := New()
	names := func(ns, svc string) []string {
		var out []string
		_ = s.Read(func(v View) error {
			for _, es := range v.EndpointSlices(ns, svc) {
				out = append(out, es.Name)
			}
			return nil
		})
		return out
	}
	for _, n := range []string{"web-c", "web-a", "web-b", "web-a"} {
		s.Upsert(slice("ns", n, "web"))
	}
	s.Upsert(slice("other", "web-0", "web"))
	if got, want := names("ns", "web"), []string{"web-a", "web-b", "web-c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after upserts: %v, want %v", got, want)
	}
	s.Upsert(slice("ns", "web-b", "api")) // moved to another service
	s.Delete(slice("ns", "web-a", "web"))
	if got, want := names("ns", "web"), []string{"web-c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a move and a delete: %v, want %v", got, want)
	}
	if got, want := names("ns", "api"), []string{"web-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the moved slice: %v, want %v", got, want)
	}
	s.Delete(slice("ns", "web-c", "web"))
	if got := names("ns", "web"); len(got) != 0 {
		t.Errorf("after deleting every slice: %v", got)
	}
	if got, want := names("other", "web"), []string{"web-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("another namespace's service: %v, want %v", got, want)
	}
}

// TestApplyIsOneChange: Apply's deletions and upserts are seen together —
// a reader meanwhile finds the renamed route under one name or the other,
// never under neither (a manifest file renaming a route).
func TestApplyIsOneChange(t *testing.T) {
	s := New()
	named := func(name string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: routev1.RouteSpec{Host: "h.example.com"}}
	}
	s.Upsert(named("r0"))
	done := make(chan struct{})
	var bad atomic.Int32
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			_ = s.Read(func(v View) error {
				if len(v.Routes()) != 1 {
					bad.Add(1)
				}
				return nil
			})
		}
	}()
	for i := 1; i <= 2000; i++ {
		s.Apply([]runtime.Object{named(fmt.Sprintf("r%d", i-1))}, []runtime.Object{named(fmt.Sprintf("r%d", i))})
	}
	<-done
	if n := bad.Load(); n > 0 {
		t.Errorf("%d reads saw the store between a deletion and the upsert of its change", n)
	}
	_ = s.Read(func(v View) error {
		if rs := v.Routes(); len(rs) != 1 || rs[0].Name != "r2000" {
			t.Errorf("after the changes: %d routes", len(rs))
		}
		return nil
	})
}
