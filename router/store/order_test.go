package store

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRoutesAreInKeyOrderWhateverTheChanges: View.Routes lists every route
// sorted by namespace, then name — each once, the version last upserted —
// after any mix of routes added, replaced and deleted between asks: one at
// a time (the cached order changed in place), many at once (the cache
// dropped and sorted again), deletions of routes never added, and namespaces
// that are prefixes of others ("a", "a-", "ab"). The slice returned is the
// caller's: changing it changes nothing.
func TestRoutesAreInKeyOrderWhateverTheChanges(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	namespaces := []string{"a", "a-", "ab", "b", "b0"}
	s := New()
	want := map[string]*routev1.Route{}
	inPlace, resorted := 0, 0
	for round := 0; round < 400; round++ {
		edits := 1 + rng.Intn(3)
		if rng.Intn(8) == 0 {
			edits = 3*maxOrderEdits + rng.Intn(100)
		}
		for e := 0; e < edits; e++ {
			r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{
				Namespace: namespaces[rng.Intn(len(namespaces))], Name: fmt.Sprintf("r%d", rng.Intn(60)),
				ResourceVersion: fmt.Sprint(round*1000 + e)}}
			k := r.Namespace + "/" + r.Name
			if rng.Intn(3) == 0 {
				s.Delete(r)
				delete(want, k)
			} else {
				s.Upsert(r)
				want[k] = r
			}
		}
		if s.routeOrder.known {
			inPlace++
		} else {
			resorted++
		}
		var got []*routev1.Route
		_ = s.Read(func(v View) error { got = v.Routes(); return nil })
		exp := make([]*routev1.Route, 0, len(want))
		for _, r := range want {
			exp = append(exp, r)
		}
		sort.Slice(exp, func(i, j int) bool {
			if exp[i].Namespace != exp[j].Namespace {
				return exp[i].Namespace < exp[j].Namespace
			}
			return exp[i].Name < exp[j].Name
		})
		if !slices.Equal(got, exp) {
			t.Fatalf("round %d: Routes() = %v, want %v", round, names(got), names(exp))
		}
		if len(got) > 1 {
			got[0], got[1] = got[1], got[0] // the caller's own
		}
	}
	if inPlace < 100 || resorted < 20 {
		t.Fatalf("the cached order was changed in place before %d asks and sorted again before %d of 400", inPlace, resorted)
	}
}

func names(rs []*routev1.Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Namespace + "/" + r.Name + "@" + r.ResourceVersion
	}
	return out
}

// TestHTTPRoutesAreInKeyOrderWhateverTheChanges: View.HTTPRoutes lists every
// HTTPRoute in the order of its key, "namespace/name" ("a-/x" before "a/x"),
// each once, the version last upserted, after any mix of changes between
// asks (in place, or sorted again after many); the slice is the caller's.
func TestHTTPRoutesAreInKeyOrderWhateverTheChanges(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	namespaces := []string{"a", "a-", "a.b", "ab", "b"}
	s := New()
	want := map[string]*gatewayv1.HTTPRoute{}
	inPlace, resorted := 0, 0
	for round := 0; round < 300; round++ {
		edits := 1 + rng.Intn(3)
		if rng.Intn(8) == 0 {
			edits = 3*maxOrderEdits + rng.Intn(100)
		}
		for e := 0; e < edits; e++ {
			hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{
				Namespace: namespaces[rng.Intn(len(namespaces))], Name: fmt.Sprintf("r%d", rng.Intn(40)),
				ResourceVersion: fmt.Sprint(round*1000 + e)}}
			k := hr.Namespace + "/" + hr.Name
			if rng.Intn(3) == 0 {
				s.Delete(hr)
				delete(want, k)
			} else {
				s.Upsert(hr)
				want[k] = hr
			}
		}
		if s.httpRouteOrder.known {
			inPlace++
		} else {
			resorted++
		}
		var got []*gatewayv1.HTTPRoute
		_ = s.Read(func(v View) error { got = v.HTTPRoutes(); return nil })
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		exp := make([]*gatewayv1.HTTPRoute, len(keys))
		for i, k := range keys {
			exp[i] = want[k]
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("round %d: HTTPRoutes() has %d, want %d in key order %v", round, len(got), len(exp), keys)
		}
		if len(got) > 1 {
			got[0], got[1] = got[1], got[0] // the caller's own
		}
	}
	if inPlace < 100 || resorted < 15 {
		t.Fatalf("the cached order was changed in place before %d asks and sorted again before %d of 300", inPlace, resorted)
	}
}

// TestCompareKeysIsTheKeysOrder: CompareKeys orders as the keys'
// strings do, namespaces that start others included.
func TestCompareKeysIsTheKeysOrder(t *testing.T) {
	parts := []string{"", "a", "a-", "a/", "a.b", "ab", "b", "a-b"}
	for _, ans := range parts {
		for _, an := range parts {
			for _, bns := range parts {
				for _, bn := range parts {
					want := strings.Compare(ans+"/"+an, bns+"/"+bn)
					if got := CompareKeys(ans, an, bns, bn); got != want {
						t.Errorf("CompareKeys(%q, %q, %q, %q) = %d, want %d", ans, an, bns, bn, got, want)
					}
				}
			}
		}
	}
}
