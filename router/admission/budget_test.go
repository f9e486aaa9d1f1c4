package admission

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/headeractions"
)

// headerActions gives a route n request and response Set actions (20 of
// each at most, as the API allows) with values of size bytes.
func headerActions(n, size int) routeOpt {
	return func(r *routev1.Route) {
		h := &routev1.RouteHTTPHeaders{}
		for i := 0; i < n; i++ {
			a := routev1.RouteHTTPHeader{Name: fmt.Sprintf("X-Big-%02d", i%headeractions.MaxActions),
				Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: strings.Repeat("v", size)}}}
			if i < headeractions.MaxActions {
				h.Actions.Request = append(h.Actions.Request, a)
			} else {
				h.Actions.Response = append(h.Actions.Response, a)
			}
		}
		r.Spec.HTTPHeaders = h
	}
}

// bigNamespace returns n routes of ns (created in name order) with
// actions header actions of size bytes each.
func bigNamespace(ns string, n, actions, size int) []*routev1.Route {
	var out []*routev1.Route
	for i := 0; i < n; i++ {
		out = append(out, route(ns, fmt.Sprintf("r%02d", i), fmt.Sprintf("r%02d.%s.example.com", i, ns), "", i, headerActions(actions, size)))
	}
	return out
}

// normalNamespace returns n routes of ns with two small header actions
// and a timeout annotation.
func normalNamespace(ns string, n int) []*routev1.Route {
	var out []*routev1.Route
	for i := 0; i < n; i++ {
		r := route(ns, fmt.Sprintf("app%d", i), fmt.Sprintf("app%d.%s.example.com", i, ns), "/", i, headerActions(2, 40))
		r.Annotations = map[string]string{"haproxy.router.openshift.io/timeout": "30s"}
		out = append(out, r)
	}
	return out
}

func keys(rs []*routev1.Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(KeyOf(r)))
	}
	return out
}

func rejectedFor(d Decision, reason string) []string {
	out := []string{}
	for k, res := range d.Results {
		if !res.Admitted && res.Reason == reason {
			out = append(out, string(k))
		}
	}
	return sorted(out...)
}

func TestConfigBudget(t *testing.T) {
	const maxValues = 40 * (headeractions.MaxValueLength + 100) // about one route of 40 16 KiB values
	big := ConfigBytes(bigNamespace("x", 1, 40, headeractions.MaxValueLength)[0], nil)
	tests := []struct {
		name     string
		routes   []*routev1.Route
		budget   int
		rejected []string
	}{
		{
			name:   "everything fits",
			routes: append(bigNamespace("big", 3, 40, headeractions.MaxValueLength), normalNamespace("small", 3)...),
			budget: 10 * maxValues,
		},
		{
			name:   "no budget",
			routes: bigNamespace("big", 20, 40, headeractions.MaxValueLength),
			budget: 0,
		},
		{
			// 20 routes of 40 16 KiB values (13 MB) in a 4 MiB budget: the
			// small namespace takes what it asks, the big one keeps what
			// fits in the rest (6 routes), its youngest routes go.
			name:     "the big namespace loses its largest routes, the other keeps all",
			routes:   append(bigNamespace("big", 20, 40, headeractions.MaxValueLength), normalNamespace("small", 5)...),
			budget:   4 << 20,
			rejected: keys(bigNamespace("big", 20, 40, headeractions.MaxValueLength)[6:]),
		},
		{
			name: "the largest route of the namespace goes first",
			routes: []*routev1.Route{
				route("ns", "a", "a.example.com", "", 0, headerActions(10, 10000)),
				route("ns", "b", "b.example.com", "", 1, headerActions(30, 10000)),
				route("ns", "c", "c.example.com", "", 2, headerActions(20, 10000)),
			},
			budget:   350000,
			rejected: []string{"ns/b"},
		},
		{
			// Two namespaces asking for more than half share it equally;
			// one asking for less gets it all.
			name: "max-min fair between namespaces",
			routes: append(append(bigNamespace("one", 4, 40, headeractions.MaxValueLength), bigNamespace("two", 4, 40, headeractions.MaxValueLength)...),
				bigNamespace("three", 1, 40, headeractions.MaxValueLength)...),
			budget:   5*big + big/2,
			rejected: []string{"one/r02", "one/r03", "two/r02", "two/r03"},
		},
		{
			name:   "routes of a normal size are never rejected, whatever the budget",
			routes: append(normalNamespace("a", 50), normalNamespace("b", 10)...),
			budget: 1,
		},
		{
			// The floor is RouteConfigBytesFloor a route: a route above it
			// takes the budget's share.
			name:     "the floor: routes above it share the budget",
			routes:   append(normalNamespace("a", 3), route("a", "huge", "huge.example.com", "", 9, headerActions(40, headeractions.MaxValueLength))),
			budget:   1,
			rejected: []string{"a/huge"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Admit(tt.routes, Options{MaxConfigBytes: tt.budget})
			want := sorted(tt.rejected...)
			if got := rejectedFor(d, ReasonConfigBudgetExceeded); !reflect.DeepEqual(got, want) {
				t.Fatalf("rejected %v, want %v", got, want)
			}
			if len(d.Admitted)+len(want) != len(tt.routes) {
				t.Fatalf("%d admitted, %d rejected of %d routes: every other route is admitted", len(d.Admitted), len(want), len(tt.routes))
			}
			for _, k := range want {
				expectRejected(t, d, k, ReasonConfigBudgetExceeded, "does not fit in the router's configuration size budget for its namespace")
			}
		})
	}
}

// TestConfigBudgetDoesNotDependOnOrder: the same routes in any order get
// the same results.
func TestConfigBudgetDoesNotDependOnOrder(t *testing.T) {
	routes := append(append(bigNamespace("one", 7, 40, 2000), bigNamespace("two", 5, 33, 3000)...), normalNamespace("three", 4)...)
	routes = append(routes, route("one", "mid", "mid.example.com", "", 3, headerActions(12, 1500)))
	opts := Options{MaxConfigBytes: 600 << 10}
	want := Admit(routes, opts)
	if len(rejectedFor(want, ReasonConfigBudgetExceeded)) == 0 {
		t.Fatal("the budget rejects nothing: the test shows nothing")
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		shuffled := append([]*routev1.Route(nil), routes...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		if got := Admit(shuffled, opts); !reflect.DeepEqual(got.Results, want.Results) {
			t.Fatalf("order %d: results differ:\n got %v\nwant %v", i, rejectedFor(got, ReasonConfigBudgetExceeded), rejectedFor(want, ReasonConfigBudgetExceeded))
		}
	}
}

// TestConfigBytesIsQuoted: a value of quotes costs four bytes a quote, as
// model.QuoteHeaderWord writes it.
func TestConfigBytesCountsQuoting(t *testing.T) {
	plain := route("ns", "a", "a.example.com", "", 0, headerActions(1, 100))
	quoted := route("ns", "a", "a.example.com", "", 0, headerActions(1, 100))
	quoted.Spec.HTTPHeaders.Actions.Request[0].Action.Set.Value = strings.Repeat("'", 100)
	if got, want := ConfigBytes(quoted, nil)-ConfigBytes(plain, nil), 300; got != want {
		t.Fatalf("100 quotes cost %d bytes more than 100 letters, want %d", got, want)
	}
}

// normalMaximum is a route at the top of a normal size: an edge route
// with a certificate chain of four 4096-bit certificates, a key and a CA
// certificate, a destination CA, ten header actions, a long host and path,
// and a dozen router annotations (an allowlist of 30 addresses among
// them).
func normalMaximum() *routev1.Route {
	pem := func(n int) string { return strings.Repeat("A", n) }
	r := route(strings.Repeat("n", 63), strings.Repeat("r", 253), strings.Repeat("h", 253), "/"+strings.Repeat("p", 200), 0, headerActions(10, 200))
	r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt,
		Certificate: pem(4 * 2200), Key: pem(3300), CACertificate: pem(2200), DestinationCACertificate: pem(2200)}
	r.Annotations = map[string]string{"haproxy.router.openshift.io/ip_allowlist": strings.Repeat("203.0.113.100/32 ", 30)}
	for i := 0; i < 11; i++ {
		r.Annotations[fmt.Sprintf("haproxy.router.openshift.io/setting-%d", i)] = strings.Repeat("s", 64)
	}
	return r
}

// TestNormalRoutesAreNeverAffected: a route of a normal size is under the
// floor, so no number of them is ever rejected (the arithmetic), and
// 10,000 of them in 1,000 namespaces with a budget of one byte are all
// admitted (the run).
func TestNormalRoutesAreNeverAffected(t *testing.T) {
	if n := ConfigBytes(normalMaximum(), nil); n > RouteConfigBytesFloor {
		t.Fatalf("a route at the top of a normal size takes %d bytes: want it under the floor (%d)", n, RouteConfigBytesFloor)
	}
	var routes []*routev1.Route
	for i := 0; i < 1000; i++ {
		routes = append(routes, normalNamespace(fmt.Sprintf("ns%04d", i), 10)...)
	}
	d := Admit(routes, Options{MaxConfigBytes: 1})
	if len(d.Admitted) != len(routes) {
		t.Fatalf("%d of %d normal routes admitted under a tiny budget; rejected: %v", len(d.Admitted), len(routes), rejectedFor(d, ReasonConfigBudgetExceeded)[:5])
	}
}
