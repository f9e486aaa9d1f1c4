package store

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// TestGatewayObjectsAreKeptSortedAndChangesAreLogged: the store keeps each
// Gateway API kind by namespace/name, returns it sorted, forgets it on
// delete; an HTTPRoute change is a route change (ChangesSince ok, named by
// HTTPRouteChangesSince and not as a Route), a change to any other makes
// the next pass look at everything (ChangesSince is not ok).
func TestGatewayObjectsAreKeptSortedAndChangesAreLogged(t *testing.T) {
	s := New()
	objs := []any{
		&gatewayv1.GatewayClass{ObjectMeta: meta("", "b")},
		&gatewayv1.GatewayClass{ObjectMeta: meta("", "a")},
		&gatewayv1.Gateway{ObjectMeta: meta("ns2", "gw")},
		&gatewayv1.Gateway{ObjectMeta: meta("ns1", "gw")},
		&gatewayv1.HTTPRoute{ObjectMeta: meta("ns1", "r2")},
		&gatewayv1.HTTPRoute{ObjectMeta: meta("ns1", "r1")},
		&gatewayv1.TLSRoute{ObjectMeta: meta("ns1", "t")},
		&gatewayv1.ReferenceGrant{ObjectMeta: meta("ns3", "g")},
	}
	for _, o := range objs {
		gen := s.Generation()
		s.Upsert(o.(runtime.Object).DeepCopyObject())
		_ = s.Read(func(v View) error {
			routes, _, ok := v.ChangesSince(gen)
			hr, isHTTPRoute := o.(*gatewayv1.HTTPRoute)
			switch {
			case !isHTTPRoute && ok:
				t.Errorf("upsert of %T: ChangesSince is ok, want a full pass", o)
			case isHTTPRoute && (!ok || len(routes) != 0 || fmt.Sprint(v.HTTPRouteChangesSince(gen)) != "["+hr.Namespace+"/"+hr.Name+"]"):
				t.Errorf("upsert of HTTPRoute %s: ChangesSince %v %v, HTTPRouteChangesSince %v", hr.Name, routes, ok, v.HTTPRouteChangesSince(gen))
			}
			if _, ok := v.EndpointChangesSince(gen); ok {
				t.Errorf("upsert of %T: EndpointChangesSince is ok", o)
			}
			return nil
		})
	}
	names := func(v View) (out []string) {
		for _, c := range v.GatewayClasses() {
			out = append(out, c.Name)
		}
		for _, g := range v.Gateways() {
			out = append(out, g.Namespace+"/"+g.Name)
		}
		for _, r := range v.HTTPRoutes() {
			out = append(out, r.Namespace+"/"+r.Name)
		}
		for _, r := range v.TLSRoutes() {
			out = append(out, r.Namespace+"/"+r.Name)
		}
		for _, r := range v.ReferenceGrants() {
			out = append(out, r.Namespace+"/"+r.Name)
		}
		return out
	}
	want := "[a b ns1/gw ns2/gw ns1/r1 ns1/r2 ns1/t ns3/g]"
	_ = s.Read(func(v View) error {
		if got := fmt.Sprint(names(v)); got != want {
			t.Errorf("stored: %s, want %s", got, want)
		}
		return nil
	})
	s.Delete(&gatewayv1.Gateway{ObjectMeta: meta("ns1", "gw")})
	s.Delete(&gatewayv1.GatewayClass{ObjectMeta: meta("", "b")})
	want = "[a ns2/gw ns1/r1 ns1/r2 ns1/t ns3/g]"
	_ = s.Read(func(v View) error {
		if got := fmt.Sprint(names(v)); got != want {
			t.Errorf("after deletes: %s, want %s", got, want)
		}
		return nil
	})
}
