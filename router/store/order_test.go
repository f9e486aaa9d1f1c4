package store

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		if s.orderKnown {
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
