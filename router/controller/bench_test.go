package controller

import (
	"context"
	"fmt"
	"testing"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/admission"
)

// BenchmarkRouteAddedOrDeleted10000: one route deleted, then added again,
// again and again, among 10,000 routes in 10 namespaces, each commit applied
// through the (fake) runtime API: the controller's whole work per route
// change (admission, model, render, files, runtime diff), the sources'
// excepted.
func BenchmarkRouteAddedOrDeleted10000(b *testing.B) {
	routes := make([]*routev1.Route, 0, 10000)
	for i := 0; i < 10000; i++ {
		routes = append(routes, plainRoute(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("r%d", i)))
	}
	extra := plainRoute("ns0", "added")
	st := tenantStore(append(routes, extra)...)
	o := tenantOptions(b, st, b.TempDir())
	o.Process, o.Runtime = newFakeProcess(), &fakeRuntime{}
	o.Admission.Memo = admission.NewValidationMemo() // as the router runs
	c := New(o)
	ctx := context.Background()
	if _, err := c.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			st.Delete(extra) // its backend left an orphan
		} else {
			st.Upsert(extra) // back in its orphan
		}
		if out, err := c.commit(ctx, true, false); err != nil || !out.runtime {
			b.Fatalf("change %d: %+v %v", i, out, err)
		}
	}
}
