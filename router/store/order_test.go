package store

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestListsAreInOrderWhateverTheChanges: View.Routes lists every route
// sorted by namespace, then name, and View.HTTPRoutes every HTTPRoute in
// the order of its key, "namespace/name" ("a-/x" before "a/x") — each
// once, the version last upserted — after any mix of objects added,
// replaced and deleted between asks: one at a time (the cached order
// changed in place), many at once (the cache dropped and sorted again),
// deletions of objects never added, and namespaces that are prefixes of
// others ("a", "a-", "ab"). The slice returned is the caller's: changing it
// changes nothing.
func TestListsAreInOrderWhateverTheChanges(t *testing.T) {
	byNamespaceThenName := func(a, b metav1.Object) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	}
	byKey := func(a, b metav1.Object) bool {
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	}
	tests := []struct {
		name  string
		make  func(meta metav1.ObjectMeta) runtime.Object
		list  func(v View) []metav1.Object
		known func(s *Store) bool
		less  func(a, b metav1.Object) bool
	}{
		{"Routes", func(meta metav1.ObjectMeta) runtime.Object { return &routev1.Route{ObjectMeta: meta} },
			func(v View) []metav1.Object { return objects(v.Routes()) },
			func(s *Store) bool { return s.routeOrder.known }, byNamespaceThenName},
		{"HTTPRoutes", func(meta metav1.ObjectMeta) runtime.Object { return &gatewayv1.HTTPRoute{ObjectMeta: meta} },
			func(v View) []metav1.Object { return objects(v.HTTPRoutes()) },
			func(s *Store) bool { return s.httpRouteOrder.known }, byKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			namespaces := []string{"a", "a-", "a.b", "ab", "b", "b0"}
			s := New()
			want := map[string]metav1.Object{}
			inPlace, resorted := 0, 0
			for round := 0; round < 400; round++ {
				edits := 1 + rng.Intn(3)
				if rng.Intn(8) == 0 {
					edits = 3*maxOrderEdits + rng.Intn(100)
				}
				for e := 0; e < edits; e++ {
					obj := tt.make(metav1.ObjectMeta{Namespace: namespaces[rng.Intn(len(namespaces))],
						Name: fmt.Sprintf("r%d", rng.Intn(60)), ResourceVersion: fmt.Sprint(round*1000 + e)})
					meta := obj.(metav1.Object)
					k := meta.GetNamespace() + "/" + meta.GetName()
					if rng.Intn(3) == 0 {
						s.Delete(obj)
						delete(want, k)
					} else {
						s.Upsert(obj)
						want[k] = meta
					}
				}
				if tt.known(s) {
					inPlace++
				} else {
					resorted++
				}
				var got []metav1.Object
				_ = s.Read(func(v View) error { got = tt.list(v); return nil })
				exp := slices.Collect(maps.Values(want))
				sort.Slice(exp, func(i, j int) bool { return tt.less(exp[i], exp[j]) })
				if !slices.Equal(got, exp) {
					t.Fatalf("round %d: %v, want %v", round, names(got), names(exp))
				}
				_ = s.Read(func(v View) error {
					if l := tt.list(v); len(l) > 1 {
						l[0], l[1] = l[1], l[0] // the caller's own
					}
					return nil
				})
			}
			if inPlace < 100 || resorted < 20 {
				t.Fatalf("the cached order was changed in place before %d asks and sorted again before %d of 400", inPlace, resorted)
			}
		})
	}
}

// objects are os as metav1.Objects.
func objects[T any, P interface {
	*T
	metav1.Object
}](os []P) []metav1.Object {
	out := make([]metav1.Object, len(os))
	for i, o := range os {
		out[i] = o
	}
	return out
}

func names(os []metav1.Object) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.GetNamespace() + "/" + o.GetName() + "@" + o.GetResourceVersion()
	}
	return out
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
