package admission

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type routeOpt func(*routev1.Route)

// route returns a route created age minutes after epoch.
func route(ns, name, host, path string, age int, opts ...routeOpt) *routev1.Route {
	r := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Minute))},
		Spec:       routev1.RouteSpec{Host: host, Path: path, To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func tls(term routev1.TLSTerminationType, policy routev1.InsecureEdgeTerminationPolicyType) routeOpt {
	return func(r *routev1.Route) {
		r.Spec.TLS = &routev1.TLSConfig{Termination: term, InsecureEdgeTerminationPolicy: policy}
	}
}

func wildcard(r *routev1.Route) { r.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain }

func admittedNames(d Decision) []string {
	out := []string{}
	for _, r := range d.Admitted {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func sorted(keys ...string) []string {
	out := append([]string{}, keys...)
	sort.Strings(out)
	return out
}

// expectAdmitted fails unless exactly want (keys) are admitted.
func expectAdmitted(t *testing.T, d Decision, want ...string) {
	t.Helper()
	if got, w := admittedNames(d), sorted(want...); !reflect.DeepEqual(got, w) {
		t.Fatalf("admitted %v, want %v", got, w)
	}
}

// expectRejected fails unless key is rejected with reason and a message
// containing msg.
func expectRejected(t *testing.T, d Decision, key, reason, msg string) {
	t.Helper()
	res, ok := d.Results[Key(key)]
	if !ok || res.Admitted || res.Reason != reason || !strings.Contains(res.Message, msg) {
		t.Errorf("%s: got %+v, want %s with a message containing %q", key, res, reason, msg)
	}
}

func TestHostClaims(t *testing.T) {
	tests := []struct {
		name         string
		routes       []*routev1.Route
		disableOwner bool
		admitted     []string
		rejected     map[string]string // key -> message substring (HostAlreadyClaimed)
		holders      map[string]Key
	}{
		{
			name:     "oldest route wins the host",
			routes:   []*routev1.Route{route("a", "new", "www.example.com", "", 2), route("a", "old", "www.example.com", "", 1)},
			admitted: []string{"a/old"},
			rejected: map[string]string{"a/new": "route old already exposes www.example.com and is older"},
			holders:  map[string]Key{"a/new": "a/old"},
		},
		{
			name:     "same namespace, other paths are added",
			routes:   []*routev1.Route{route("a", "root", "www.example.com", "", 1), route("a", "test", "www.example.com", "/test", 2)},
			admitted: []string{"a/root", "a/test"},
		},
		{
			name:     "another namespace is refused even for another path",
			routes:   []*routev1.Route{route("a", "root", "www.example.com", "", 1), route("b", "test", "www.example.com", "/test", 2)},
			admitted: []string{"a/root"},
			rejected: map[string]string{"b/test": "a route in another namespace holds www.example.com and is older than test"},
			holders:  map[string]Key{"b/test": "a/root"},
		},
		{
			name:         "ownership check disabled: other namespaces may use other paths",
			routes:       []*routev1.Route{route("a", "root", "www.example.com", "", 1), route("b", "test", "www.example.com", "/test", 2), route("c", "dup", "www.example.com", "/test", 3)},
			disableOwner: true,
			admitted:     []string{"a/root", "b/test"},
			rejected:     map[string]string{"c/dup": "a route in another namespace holds www.example.com and is older than dup"},
			holders:      map[string]Key{"c/dup": "b/test"},
		},
		{
			name:     "equal timestamps: UID breaks the tie",
			routes:   []*routev1.Route{route("a", "x", "h.example.com", "", 1, withUID("2")), route("b", "y", "h.example.com", "", 1, withUID("1"))},
			admitted: []string{"b/y"},
			rejected: map[string]string{"a/x": "a route in another namespace"},
		},
		{
			name:     "equal timestamps without UIDs: namespace then name break the tie",
			routes:   []*routev1.Route{route("b", "x", "h.example.com", "", 1), route("a", "z", "h.example.com", "", 1), route("a", "y", "h.example.com", "", 1)},
			admitted: []string{"a/y"},
			rejected: map[string]string{"b/x": "a route in another namespace", "a/z": "route y already exposes"},
		},
		{
			name:     "host is case-insensitive",
			routes:   []*routev1.Route{route("a", "old", "WWW.example.com", "", 1), route("a", "new", "www.example.com", "", 2)},
			admitted: []string{"a/old"},
			rejected: map[string]string{"a/new": "already exposes"},
		},
		{
			name:     `"" and "/" are the same path, and so are "/a" and "/a/"`,
			routes:   []*routev1.Route{route("a", "empty", "h.example.com", "", 1), route("a", "slash", "h.example.com", "/", 2), route("a", "p", "h.example.com", "/p", 3), route("a", "p-slash", "h.example.com", "/p/", 4)},
			admitted: []string{"a/empty", "a/p"},
			rejected: map[string]string{"a/slash": "route empty already exposes", "a/p-slash": "route p already exposes"},
		},
		{
			name: "a passthrough route keeps younger TLS routes off its host",
			routes: []*routev1.Route{
				route("a", "pt", "h.example.com", "", 1, tls(routev1.TLSTerminationPassthrough, "")),
				route("a", "edge", "h.example.com", "/x", 2, tls(routev1.TLSTerminationEdge, "")),
				route("a", "plain", "h.example.com", "/y", 3),
			},
			admitted: []string{"a/pt", "a/plain"},
			rejected: map[string]string{"a/edge": "route pt already exposes h.example.com"},
		},
		{
			name: "an older edge route with a path keeps a younger passthrough route off its host",
			routes: []*routev1.Route{
				route("a", "edge", "h.example.com", "/x", 1, tls(routev1.TLSTerminationEdge, "")),
				route("a", "pt", "h.example.com", "", 2, tls(routev1.TLSTerminationPassthrough, "")),
				route("a", "plain", "h.example.com", "/y", 3),
			},
			admitted: []string{"a/edge", "a/plain"},
			rejected: map[string]string{"a/pt": "route edge already exposes h.example.com"},
			holders:  map[string]Key{"a/pt": "a/edge"},
		},
		{
			name: "an older re-encrypt route keeps a younger passthrough route off its host",
			routes: []*routev1.Route{
				route("a", "plain", "h.example.com", "/y", 1),
				route("a", "re", "h.example.com", "/api", 2, tls(routev1.TLSTerminationReencrypt, "")),
				route("a", "pt", "h.example.com", "", 3, tls(routev1.TLSTerminationPassthrough, "")),
			},
			admitted: []string{"a/plain", "a/re"},
			rejected: map[string]string{"a/pt": "route re already exposes h.example.com"},
			holders:  map[string]Key{"a/pt": "a/re"},
		},
		{
			name: "an older passthrough route keeps a younger re-encrypt route with a path off its host",
			routes: []*routev1.Route{
				route("a", "pt", "h.example.com", "", 1, tls(routev1.TLSTerminationPassthrough, "")),
				route("a", "re", "h.example.com", "/api", 2, tls(routev1.TLSTerminationReencrypt, "")),
			},
			admitted: []string{"a/pt"},
			rejected: map[string]string{"a/re": "route pt already exposes h.example.com"},
		},
		{
			name: "edge routes of one host share it by path",
			routes: []*routev1.Route{
				route("a", "e1", "h.example.com", "", 1, tls(routev1.TLSTerminationEdge, "")),
				route("a", "e2", "h.example.com", "/x", 2, tls(routev1.TLSTerminationReencrypt, "")),
			},
			admitted: []string{"a/e1", "a/e2"},
		},
		{
			name: "secure and insecure routes of one host share it by path",
			routes: []*routev1.Route{
				route("a", "edge", "h.example.com", "", 1, tls(routev1.TLSTerminationEdge, "")),
				route("a", "plain", "h.example.com", "/y", 2),
			},
			admitted: []string{"a/edge", "a/plain"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Admit(tt.routes, Options{DisableNamespaceOwnershipCheck: tt.disableOwner})
			expectAdmitted(t, d, tt.admitted...)
			for k, sub := range tt.rejected {
				expectRejected(t, d, k, ReasonHostAlreadyClaimed, sub)
			}
			for k, h := range tt.holders {
				if got := d.Results[Key(k)].Holder; got != h {
					t.Errorf("%s: holder %q, want %q", k, got, h)
				}
			}
		})
	}
}

func withUID(uid string) routeOpt { return func(r *routev1.Route) { r.UID = types.UID("uid-" + uid) } }

// TestDeletionPromotesInactiveRoutes follows one set of routes through
// deletions: each time the holder of a claim goes, the next oldest claimant
// is admitted (OpenShift's "deletion promotes inactive routes").
func TestDeletionPromotesInactiveRoutes(t *testing.T) {
	all := map[string]*routev1.Route{
		"a": route("ns", "a", "example.com", "", 1),
		"b": route("ns", "b", "example.com", "/foo", 2),
		"c": route("ns", "c", "example.com", "/foo", 3),
		"d": route("ns", "d", "example.com", "/foo", 4),
		"e": route("ns", "e", "example.com", "/bar", 5),
	}
	steps := []struct {
		remove   string
		admitted []string
		rejected []string
	}{
		{"", []string{"ns/a", "ns/b", "ns/e"}, []string{"ns/c", "ns/d"}},
		{"b", []string{"ns/a", "ns/c", "ns/e"}, []string{"ns/d"}},
		{"c", []string{"ns/a", "ns/d", "ns/e"}, nil},
		{"a", []string{"ns/d", "ns/e"}, nil},
	}
	for _, s := range steps {
		delete(all, s.remove)
		routes := make([]*routev1.Route, 0, len(all))
		for _, r := range all {
			routes = append(routes, r)
		}
		d := Admit(routes, Options{})
		expectAdmitted(t, d, s.admitted...)
		for _, k := range s.rejected {
			expectRejected(t, d, k, ReasonHostAlreadyClaimed, "already exposes example.com")
		}
	}
}

// TestClaimLostToAnotherNamespace is §5.7.9's consequence: ns1 has an older
// and a newer route for a host, ns2 a route created between them; deleting
// ns1's older route gives the host to ns2, and ns1's newer route loses it.
func TestClaimLostToAnotherNamespace(t *testing.T) {
	older := route("ns1", "older", "www.example.com", "", 1)
	between := route("ns2", "between", "www.example.com", "/other", 2)
	newer := route("ns1", "newer", "www.example.com", "/newer", 3)
	d := Admit([]*routev1.Route{newer, between, older}, Options{})
	expectAdmitted(t, d, "ns1/older", "ns1/newer")
	expectRejected(t, d, "ns2/between", ReasonHostAlreadyClaimed, "a route in another namespace holds www.example.com")

	d = Admit([]*routev1.Route{newer, between}, Options{})
	expectAdmitted(t, d, "ns2/between")
	expectRejected(t, d, "ns1/newer", ReasonHostAlreadyClaimed, "a route in another namespace holds www.example.com")
	if h := d.Results["ns1/newer"].Holder; h != "ns2/between" {
		t.Errorf("holder %q, want ns2/between", h)
	}
}

// TestRejectionMessagesNameNoRouteOfAnotherNamespace: a rejection message
// goes into the rejected route's status, which its tenant reads; it names
// no route of another namespace (the holder is only in Result.Holder, for
// the router's log).
func TestRejectionMessagesNameNoRouteOfAnotherNamespace(t *testing.T) {
	const holderNS, holderName = "holder-secret-ns", "holder-secret-route"
	edge := tls(routev1.TLSTerminationEdge, "")
	pass := tls(routev1.TLSTerminationPassthrough, "")
	tests := []struct {
		name      string
		holder    *routev1.Route
		intruder  *routev1.Route
		disableNS bool
	}{
		{"same host and path", route(holderNS, holderName, "h.example.com", "", 1), route("intruder", "r", "h.example.com", "", 2), false},
		{"same host, another path", route(holderNS, holderName, "h.example.com", "/a", 1), route("intruder", "r", "h.example.com", "/b", 2), false},
		{"same host and path without the ownership check", route(holderNS, holderName, "h.example.com", "/a", 1), route("intruder", "r", "h.example.com", "/a", 2), true},
		{"passthrough holds the host against edge", route(holderNS, holderName, "h.example.com", "", 1, pass), route("intruder", "r", "h.example.com", "/x", 2, edge), true},
		{"edge holds the host against passthrough", route(holderNS, holderName, "h.example.com", "/x", 1, edge), route("intruder", "r", "h.example.com", "", 2, pass), true},
		{"a wildcard holds the subdomain", route(holderNS, holderName, "w.example.com", "", 1, wildcard), route("intruder", "r", "s.example.com", "", 2), false},
		{"a specific host blocks a wildcard", route(holderNS, holderName, "s.example.com", "", 1), route("intruder", "r", "w.example.com", "", 2, wildcard), false},
		{"a wildcard holds the subdomain against a wildcard", route(holderNS, holderName, "w.example.com", "", 1, wildcard), route("intruder", "r", "v.example.com", "", 2, wildcard), false},
		{"one wildcard per path without the ownership check", route(holderNS, holderName, "w.example.com", "", 1, wildcard), route("intruder", "r", "v.example.com", "", 2, wildcard), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Admit([]*routev1.Route{tt.intruder, tt.holder}, Options{AllowWildcardRoutes: true, DisableNamespaceOwnershipCheck: tt.disableNS})
			res := d.Results["intruder/r"]
			if res.Admitted || res.Reason != ReasonHostAlreadyClaimed {
				t.Fatalf("intruder: %+v, want HostAlreadyClaimed", res)
			}
			if res.Holder != Key(holderNS+"/"+holderName) {
				t.Errorf("holder %q, want %s/%s", res.Holder, holderNS, holderName)
			}
			for _, secret := range []string{holderNS, holderName} {
				if strings.Contains(res.Message, secret) {
					t.Errorf("message %q names the other namespace's route (%s)", res.Message, secret)
				}
			}
		})
	}
}

// TestNamespaceOwnership519 is §5.7.19's scenario, with the namespace
// ownership check (default) and without it.
func TestNamespaceOwnership519(t *testing.T) {
	r1 := route("ns1", "r1", "www.abc.xyz", "", 1)
	r2 := route("ns2", "r2", "www.abc.xyz", "/p1/p2", 2)
	wild := route("ns3", "wildthing", "wildthing.abc.xyz", "", 3, wildcard)
	others := []*routev1.Route{
		route("ns4", "foo", "foo.abc.xyz", "", 4),
		route("ns5", "bar", "bar.abc.xyz", "", 5),
		route("ns6", "baz", "baz.abc.xyz", "", 6),
	}
	rxSame := route("ns2", "rx", "www.abc.xyz", "/p1/p2", 7)
	rxOther := route("ns7", "rx", "www.abc.xyz", "/p1/p2", 8)
	ns2Deep := route("ns2", "deep", "www.abc.xyz", "/path1/path2", 9)
	z := route("ns2", "z", "z.abc.xyz", "", 10)
	all := append([]*routev1.Route{r1, r2, wild, rxSame, rxOther, ns2Deep, z}, others...)

	t.Run("with the ownership check", func(t *testing.T) {
		d := Admit(all, Options{AllowWildcardRoutes: true})
		// ns1 owns www.abc.xyz (all paths) and, for wildcard routes, abc.xyz.
		// Specific hosts of other namespaces in abc.xyz are not wildcard
		// claims and stay admitted, as in OpenShift.
		expectAdmitted(t, d, "ns1/r1", "ns4/foo", "ns5/bar", "ns6/baz", "ns2/z")
		expectRejected(t, d, "ns2/r2", ReasonHostAlreadyClaimed, "a route in another namespace holds www.abc.xyz and is older than r2")
		expectRejected(t, d, "ns2/deep", ReasonHostAlreadyClaimed, "a route in another namespace holds www.abc.xyz")
		expectRejected(t, d, "ns3/wildthing", ReasonHostAlreadyClaimed, "a route in another namespace holds host wildthing.abc.xyz")
		expectRejected(t, d, "ns2/rx", ReasonHostAlreadyClaimed, "a route in another namespace holds www.abc.xyz")
		expectRejected(t, d, "ns7/rx", ReasonHostAlreadyClaimed, "a route in another namespace holds www.abc.xyz")
	})
	t.Run("with the ownership check, a subdomain owned by a wildcard route", func(t *testing.T) {
		w := route("ns1", "w", "w.abc.xyz", "", 0, wildcard)
		d := Admit(append([]*routev1.Route{w}, all...), Options{AllowWildcardRoutes: true})
		// ns1 owns the subdomain: no other namespace may claim z.abc.xyz.
		expectAdmitted(t, d, "ns1/w", "ns1/r1")
		for _, k := range []string{"ns4/foo", "ns5/bar", "ns6/baz", "ns2/z"} {
			expectRejected(t, d, k, ReasonHostAlreadyClaimed, "a route in another namespace holds host")
		}
		if h := d.Results["ns2/z"].Holder; h != "ns1/w" {
			t.Errorf("ns2/z holder %q, want ns1/w", h)
		}
	})
	t.Run("without the ownership check", func(t *testing.T) {
		d := Admit(all, Options{AllowWildcardRoutes: true, DisableNamespaceOwnershipCheck: true})
		// Only an identical host+path is refused, whatever the namespace.
		expectAdmitted(t, d, "ns1/r1", "ns2/r2", "ns3/wildthing", "ns4/foo", "ns5/bar", "ns6/baz", "ns2/deep", "ns2/z")
		expectRejected(t, d, "ns2/rx", ReasonHostAlreadyClaimed, "route r2 already exposes www.abc.xyz and is older")
		expectRejected(t, d, "ns7/rx", ReasonHostAlreadyClaimed, "a route in another namespace holds www.abc.xyz and is older than rx")
	})
}

func TestWildcardRoutes(t *testing.T) {
	tests := []struct {
		name      string
		routes    []*routev1.Route
		allow     bool
		disableNS bool
		admitted  []string
		rejected  map[string][2]string // key -> reason, message substring
	}{
		{
			name:     "wildcard routes are refused unless allowed",
			routes:   []*routev1.Route{route("a", "w", "wildcard.example.com", "", 1, wildcard), route("a", "s", "specific.example.com", "", 2)},
			admitted: []string{"a/s"},
			rejected: map[string][2]string{"a/w": {ReasonRouteNotAdmitted, "wildcard routes are not allowed"}},
		},
		{
			name:     "unknown wildcard policy",
			routes:   []*routev1.Route{route("a", "w", "w.example.com", "", 1, func(r *routev1.Route) { r.Spec.WildcardPolicy = "Everything" })},
			allow:    true,
			rejected: map[string][2]string{"a/w": {ReasonRouteNotAdmitted, "unknown wildcard policy Everything"}},
		},
		{
			name:     "a wildcard route and specific routes of its namespace coexist",
			routes:   []*routev1.Route{route("a", "w", "wildcard.example.com", "", 1, wildcard), route("a", "s", "specific.example.com", "", 2), route("a", "s2", "other.example.com", "/x", 3)},
			allow:    true,
			admitted: []string{"a/w", "a/s", "a/s2"},
		},
		{
			name:     "an older specific route of another namespace blocks the wildcard",
			routes:   []*routev1.Route{route("b", "s", "specific.example.com", "", 1), route("a", "w", "wildcard.example.com", "", 2, wildcard)},
			allow:    true,
			admitted: []string{"b/s"},
			rejected: map[string][2]string{"a/w": {ReasonHostAlreadyClaimed, "a route in another namespace holds host wildcard.example.com"}},
		},
		{
			name:     "an older wildcard blocks specific hosts of other namespaces in its subdomain",
			routes:   []*routev1.Route{route("a", "w", "wildcard.example.com", "", 1, wildcard), route("b", "s", "specific.example.com", "", 2), route("b", "deeper", "x.specific.example.com", "", 3)},
			allow:    true,
			admitted: []string{"a/w", "b/deeper"},
			rejected: map[string][2]string{"b/s": {ReasonHostAlreadyClaimed, "a route in another namespace holds host specific.example.com"}},
		},
		{
			name: "an older specific route of another namespace blocks the wildcard even behind one of its own namespace",
			routes: []*routev1.Route{
				route("a", "mine", "mine.example.com", "", 1),
				route("b", "theirs", "theirs.example.com", "", 2),
				route("a", "w", "wildcard.example.com", "", 3, wildcard),
			},
			allow:    true,
			admitted: []string{"a/mine", "b/theirs"},
			rejected: map[string][2]string{"a/w": {ReasonHostAlreadyClaimed, "a route in another namespace holds host wildcard.example.com"}},
		},
		{
			name: "two wildcard routes of one namespace: one per path",
			routes: []*routev1.Route{
				route("a", "w1", "one.example.com", "", 1, wildcard),
				route("a", "w2", "two.example.com", "/api", 2, wildcard),
				route("a", "w3", "three.example.com", "", 3, wildcard),
			},
			allow:    true,
			admitted: []string{"a/w1", "a/w2"},
			rejected: map[string][2]string{"a/w3": {ReasonHostAlreadyClaimed, "wildcard route a/w1 has host *.example.com, blocking three.example.com"}},
		},
		{
			name:     "wildcard routes of two namespaces for one subdomain",
			routes:   []*routev1.Route{route("a", "w1", "one.example.com", "", 1, wildcard), route("b", "w2", "two.example.com", "/api", 2, wildcard)},
			allow:    true,
			admitted: []string{"a/w1"},
			rejected: map[string][2]string{"b/w2": {ReasonHostAlreadyClaimed, "a route in another namespace holds host two.example.com"}},
		},
		{
			name:      "without the ownership check other namespaces share the subdomain, one wildcard per path",
			routes:    []*routev1.Route{route("b", "s", "specific.example.com", "", 1), route("a", "w1", "one.example.com", "", 2, wildcard), route("c", "w2", "two.example.com", "/api", 3, wildcard), route("d", "w3", "three.example.com", "", 4, wildcard)},
			allow:     true,
			disableNS: true,
			admitted:  []string{"b/s", "a/w1", "c/w2"},
			rejected:  map[string][2]string{"d/w3": {ReasonHostAlreadyClaimed, "a route in another namespace holds host three.example.com"}},
		},
		{
			name:     "a wildcard route also holds its own host",
			routes:   []*routev1.Route{route("a", "w", "wildcard.example.com", "", 1, wildcard), route("a", "same", "wildcard.example.com", "", 2)},
			allow:    true,
			admitted: []string{"a/w"},
			rejected: map[string][2]string{"a/same": {ReasonHostAlreadyClaimed, "route w already exposes wildcard.example.com"}},
		},
		{
			name:     "subdomains are one level deep",
			routes:   []*routev1.Route{route("a", "w", "w.example.com", "", 1, wildcard), route("b", "w", "w.sub.example.com", "", 2, wildcard)},
			allow:    true,
			admitted: []string{"a/w", "b/w"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Admit(tt.routes, Options{AllowWildcardRoutes: tt.allow, DisableNamespaceOwnershipCheck: tt.disableNS})
			expectAdmitted(t, d, tt.admitted...)
			for k, want := range tt.rejected {
				expectRejected(t, d, k, want[0], want[1])
			}
		})
	}
}

// TestWildcardClaimPassesOn: when the wildcard route that owns a subdomain
// goes, the specific routes it kept out are admitted again.
func TestWildcardClaimPassesOn(t *testing.T) {
	w := route("a", "w", "w.example.com", "", 1, wildcard)
	s := route("b", "s", "s.example.com", "", 2)
	w2 := route("b", "w2", "x.example.com", "", 3, wildcard)
	opts := Options{AllowWildcardRoutes: true}
	expectAdmitted(t, Admit([]*routev1.Route{w, s, w2}, opts), "a/w")
	d := Admit([]*routev1.Route{s, w2}, opts)
	expectAdmitted(t, d, "b/s", "b/w2")
}

// TestDomains519Examples are the worked examples of §5.7.17, verbatim.
func TestDomains519Examples(t *testing.T) {
	tests := []struct {
		name            string
		allowed, denied string
		admitted        []string
		denies          []string
	}{
		{
			name:     "denied domains",
			denied:   "open.header.test, openshift.org, block.it",
			admitted: []string{"foo.header.test", "www.allow.it", "www.openshift.test"},
			denies:   []string{"open.header.test", "www.open.header.test", "block.it", "franco.baresi.block.it", "openshift.org", "api.openshift.org"},
		},
		{
			name:     "allowed domains",
			allowed:  "stickshift.org, kates.net",
			admitted: []string{"stickshift.org", "www.stickshift.org", "kates.net", "api.kates.net", "erno.r.kube.kates.net"},
			denies:   []string{"www.open.header.test", "drive.ottomatic.org", "www.wayless.com", "www.deny.it"},
		},
		{
			name:     "both",
			allowed:  "openshift.org, kates.net",
			denied:   "ops.openshift.org, metrics.kates.net",
			admitted: []string{"openshift.org", "api.openshift.org", "m.api.openshift.org", "kates.net", "api.kates.net"},
			denies:   []string{"www.open.header.test", "ops.openshift.org", "log.ops.openshift.org", "www.block.it", "metrics.kates.net", "int.metrics.kates.net"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var routes []*routev1.Route
			for i, h := range append(append([]string{}, tt.admitted...), tt.denies...) {
				routes = append(routes, route("ns", fmt.Sprintf("r%d", i), h, "", i))
			}
			d := Admit(routes, Options{AllowedDomains: splitList(tt.allowed), DeniedDomains: splitList(tt.denied)})
			for _, r := range routes {
				res := d.Results[KeyOf(r)]
				wantAdmitted := contains(tt.admitted, r.Spec.Host)
				if res.Admitted != wantAdmitted {
					t.Errorf("%s: admitted=%v (%s: %s), want %v", r.Spec.Host, res.Admitted, res.Reason, res.Message, wantAdmitted)
				}
				if !wantAdmitted && res.Reason != ReasonRouteNotAdmitted {
					t.Errorf("%s: reason %q, want RouteNotAdmitted", r.Spec.Host, res.Reason)
				}
			}
		})
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestDomainMessagesAndWildcards(t *testing.T) {
	opts := Options{AllowWildcardRoutes: true, AllowedDomains: []string{"Example.com."}, DeniedDomains: []string{" ops.example.com "}}
	routes := []*routev1.Route{
		route("a", "denied", "x.ops.example.com", "", 1),
		route("a", "outside", "www.example.org", "", 2),
		route("a", "lookalike", "badexample.com", "", 3),
		route("a", "ok", "www.example.com", "", 4),
		route("b", "wild-tld", "example.com", "", 5, wildcard),
		route("c", "wild-covers-denied", "w.example.com", "", 6, wildcard),
		route("d", "wild-ok", "w.apps.example.com", "", 7, wildcard),
	}
	d := Admit(routes, opts)
	expectAdmitted(t, d, "a/ok", "d/wild-ok")
	expectRejected(t, d, "a/denied", ReasonRouteNotAdmitted, "host in list of denied domains")
	expectRejected(t, d, "a/outside", ReasonRouteNotAdmitted, "host not in the allowed list of domains")
	expectRejected(t, d, "a/lookalike", ReasonRouteNotAdmitted, "host not in the allowed list of domains")
	expectRejected(t, d, "b/wild-tld", ReasonRouteNotAdmitted, "host not in the allowed list of domains (wildcard *.com would serve hosts outside it)")
	expectRejected(t, d, "c/wild-covers-denied", ReasonRouteNotAdmitted, "host in list of denied domains (wildcard *.example.com would serve denied ops.example.com)")
}

func TestReasonPrecedence(t *testing.T) {
	// Checks run in OpenShift's order: domains, wildcard policy, host, validation.
	bad := func(r *routev1.Route) { r.Spec.Path = "no-slash" }
	d := Admit([]*routev1.Route{
		route("a", "denied-and-wild", "x.bad.com", "", 1, wildcard, bad),
		route("a", "wild-and-bad", "x.example.com", "", 2, wildcard, bad),
		route("a", "nohost-and-bad", "", "", 3, bad),
	}, Options{DeniedDomains: []string{"bad.com"}})
	expectRejected(t, d, "a/denied-and-wild", ReasonRouteNotAdmitted, "host in list of denied domains")
	expectRejected(t, d, "a/wild-and-bad", ReasonRouteNotAdmitted, "wildcard routes are not allowed")
	expectRejected(t, d, "a/nohost-and-bad", ReasonNoHostValue, "no host value was defined for the route")
}

func TestRejectedRoutesDoNotHoldClaims(t *testing.T) {
	opts := Options{ExtendedValidation: true, DeniedDomains: []string{"denied.example.com"}}
	for name, bad := range map[string]*routev1.Route{
		"invalid path":     route("a", "old-bad", "www.example.com", "/a b", 1),
		"invalid target":   route("a", "old-bad", "www.example.com", "", 1, func(r *routev1.Route) { r.Spec.To.Kind = "Pod" }),
		"wildcard refused": route("a", "old-bad", "www.example.com", "", 1, wildcard),
		"excluded":         route("a", "old-bad", "www.example.com", "", 1, func(r *routev1.Route) { r.Name = "excluded" }),
	} {
		t.Run(name, func(t *testing.T) {
			good := route("b", "young-good", "www.example.com", "", 2)
			o := opts
			o.Excluded = map[Key]Result{"a/excluded": {Reason: ReasonConfigCheckFailed, Message: "m"}}
			d := Admit([]*routev1.Route{bad, good}, o)
			expectAdmitted(t, d, "b/young-good")
			if res := d.Results[KeyOf(bad)]; res.Admitted || res.Reason == "" || res.Reason == ReasonHostAlreadyClaimed {
				t.Fatalf("bad route: %+v", res)
			}
		})
	}
}

// TestRejectionsDoNotDisturbAdmittedRoutes adds younger conflicting and
// invalid routes to an admitted set: the admitted routes stay admitted.
func TestRejectionsDoNotDisturbAdmittedRoutes(t *testing.T) {
	base := []*routev1.Route{
		route("a", "root", "www.example.com", "", 1),
		route("a", "api", "www.example.com", "/api", 2),
		route("a", "w", "w.apps.example.com", "", 3, wildcard),
		route("b", "other", "other.example.com", "", 4, tls(routev1.TLSTerminationPassthrough, "")),
	}
	opts := Options{AllowWildcardRoutes: true}
	before := Admit(base, opts)
	expectAdmitted(t, before, "a/root", "a/api", "a/w", "b/other")
	intruders := []*routev1.Route{
		route("c", "steal", "www.example.com", "/api", 5),
		route("c", "steal-sub", "x.apps.example.com", "", 6),
		route("c", "steal-wild", "y.apps.example.com", "", 7, wildcard),
		route("a", "dup", "www.example.com", "/api/", 8),
		route("b", "tls-on-pt", "other.example.com", "/x", 9, tls(routev1.TLSTerminationEdge, "")),
		route("c", "invalid", "www.example.com", "/x y", 10),
		route("c", "nohost", "", "", 11),
	}
	after := Admit(append(append([]*routev1.Route{}, intruders...), base...), opts)
	expectAdmitted(t, after, "a/root", "a/api", "a/w", "b/other")
	for _, r := range intruders {
		if after.Results[KeyOf(r)].Admitted {
			t.Errorf("%s admitted", KeyOf(r))
		}
	}
}

// TestDecisionDoesNotDependOnInputOrder shuffles the input.
func TestDecisionDoesNotDependOnInputOrder(t *testing.T) {
	var routes []*routev1.Route
	for i := 0; i < 60; i++ {
		opts := []routeOpt{}
		if i%7 == 0 {
			opts = append(opts, wildcard)
		}
		routes = append(routes, route(fmt.Sprintf("ns%d", i%4), fmt.Sprintf("r%d", i), fmt.Sprintf("h%d.d%d.example.com", i%5, i%3), fmt.Sprintf("/p%d", i%2), i%9, opts...))
	}
	opts := Options{AllowWildcardRoutes: true}
	want := Admit(routes, opts)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		shuffled := append([]*routev1.Route{}, routes...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		if got := Admit(shuffled, opts); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: decision depends on input order", i)
		}
	}
}

// TestAdmissionScales admits many routes competing for few hosts and
// subdomains; a chain that compared every route with every other route
// (O(n²)) would not finish in time.
func TestAdmissionScales(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 200000
	routes := make([]*routev1.Route, 0, n)
	for i := 0; i < n; i++ {
		opts := []routeOpt{}
		if i%2 == 0 {
			opts = append(opts, wildcard)
		}
		routes = append(routes, route(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("r%d", i), fmt.Sprintf("h%d.example.com", i%2), fmt.Sprintf("/p%d", i), i, opts...))
	}
	began := time.Now()
	d := Admit(routes, Options{AllowWildcardRoutes: true})
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("admitting %d routes took %s", n, took)
	}
	if len(d.Results) != n {
		t.Fatalf("%d results for %d routes", len(d.Results), n)
	}
}

func TestExcludedRoutesAreRejectedWithTheirResult(t *testing.T) {
	r := route("a", "r", "www.example.com", "", 1)
	d := Admit([]*routev1.Route{r}, Options{Excluded: map[Key]Result{"a/r": {Reason: ReasonConfigCheckFailed, Message: "m"}}})
	if len(d.Admitted) != 0 || d.Results["a/r"].Reason != ReasonConfigCheckFailed || d.Results["a/r"].Host != "www.example.com" {
		t.Fatalf("got %+v", d.Results["a/r"])
	}
}

// TestPendingRoutesHoldTheirClaims: a pending route is neither admitted
// nor given a result, yet a newer route of another namespace for its host
// is refused.
func TestPendingRoutesHoldTheirClaims(t *testing.T) {
	old := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "owner", Name: "r", CreationTimestamp: metav1.NewTime(time.Unix(1, 0))},
		Spec: routev1.RouteSpec{Host: "shop.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}
	newer := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "thief", Name: "r", CreationTimestamp: metav1.NewTime(time.Unix(2, 0))},
		Spec: routev1.RouteSpec{Host: "shop.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}
	other := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "thief", Name: "other", CreationTimestamp: metav1.NewTime(time.Unix(2, 0))},
		Spec: routev1.RouteSpec{Host: "other.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}
	d := Admit([]*routev1.Route{old, newer, other}, Options{Pending: map[Key]bool{"owner/r": true}})
	if res, ok := d.Results["owner/r"]; ok {
		t.Errorf("pending route has a result: %+v", res)
	}
	if res := d.Results["thief/r"]; res.Admitted || res.Reason != ReasonHostAlreadyClaimed || res.Holder != "owner/r" {
		t.Errorf("thief/r: %+v", res)
	}
	if len(d.Admitted) != 1 || d.Admitted[0].Name != "other" {
		t.Errorf("admitted %v", d.Admitted)
	}
}

func TestKeyLessOrdersRoutesAsTheirKeys(t *testing.T) {
	names := [][2]string{{"a", "x"}, {"a", "y"}, {"a-b", "x"}, {"ab", "x"}, {"a", "b/c"}, {"a/b", "c"}, {"a.b", "x"}, {"b", ""}, {"", "z"}, {"a", "a"}, {"a0", "x"}}
	for _, p := range names {
		for _, q := range names {
			a := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: p[0], Name: p[1]}}
			b := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: q[0], Name: q[1]}}
			if got, want := keyLess(a, b), KeyOf(a) < KeyOf(b); got != want {
				t.Errorf("keyLess(%s, %s) = %v, want %v", KeyOf(a), KeyOf(b), got, want)
			}
		}
	}
}

// TestOnlyMadeRoutesServeEveryHost: the host "*" (AnyHost) is admitted for
// the routes the router made alone, shared by every namespace, one route
// per path (the oldest); a Route with that host is an invalid host, and
// ROUTER_ALLOWED_DOMAINS keeps every-host routes out.
func TestOnlyMadeRoutesServeEveryHost(t *testing.T) {
	routes := []*routev1.Route{
		route("a", "made", AnyHost, "", 1),
		route("b", "made", AnyHost, "/b", 2),
		route("b", "made-later", AnyHost, "/", 3),
		route("c", "own", AnyHost, "/c", 0),
	}
	made := func(k Key) bool { return strings.Contains(string(k), "/made") }
	d := Admit(routes, Options{Made: made})
	expectAdmitted(t, d, "a/made", "b/made")
	expectRejected(t, d, "b/made-later", ReasonHostAlreadyClaimed, "holds * and is older")
	expectRejected(t, d, "c/own", ReasonInvalidHost, "")

	d = Admit(routes[:1], Options{Made: made, AllowedDomains: []string{"example.com"}})
	expectAdmitted(t, d)
}

// TestMadeRoutesTakeUpToSixteenBackendsOfRepeatedNames: a made route
// (the Gateway API's backendRefs of a rule) has up to MaxMadeBackends
// backends, names repeated (Services of other namespaces); a Route keeps
// OpenShift's three alternate backends of other names.
func TestMadeRoutesTakeUpToSixteenBackendsOfRepeatedNames(t *testing.T) {
	backends := func(n int) routeOpt {
		return func(r *routev1.Route) {
			for i := 1; i < n; i++ {
				r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, routev1.RouteTargetReference{Kind: "Service", Name: fmt.Sprintf("svc%d", i%3)})
			}
		}
	}
	routes := []*routev1.Route{
		route("ns", "made-16", "a.example.com", "", 1, backends(16)),
		route("ns", "made-17", "b.example.com", "", 1, backends(17)),
		route("ns", "route-5", "c.example.com", "", 1, backends(5)),
		route("ns", "route-3", "d.example.com", "", 1, func(r *routev1.Route) {
			r.Spec.AlternateBackends = []routev1.RouteTargetReference{{Kind: "Service", Name: "svc"}}
		}),
	}
	made := func(k Key) bool { return strings.Contains(string(k), "/made") }
	d := Admit(routes, Options{Made: made, Memo: NewValidationMemo()})
	expectAdmitted(t, d, "ns/made-16")
	expectRejected(t, d, "ns/made-17", ReasonExtendedValidationFailed, "must have at most 15 items")
	expectRejected(t, d, "ns/route-5", ReasonExtendedValidationFailed, "cannot specify more than 3 alternate backends")
	expectRejected(t, d, "ns/route-3", ReasonExtendedValidationFailed, "Duplicate value")
}

// TestAnExactPathClaimsApartFromItsPrefix: a made route matching its path
// exactly (Options.ClaimPath) shares the host with the prefix of the same
// path; two exact ones of a path do not.
func TestAnExactPathClaimsApartFromItsPrefix(t *testing.T) {
	routes := []*routev1.Route{
		route("ns", "prefix", "a.example.com", "/x", 1),
		route("ns", "exact", "a.example.com", "/x", 2),
		route("ns", "exact-later", "a.example.com", "/x", 3),
	}
	exact := func(k Key) string {
		if strings.HasPrefix(string(k), "ns/exact") {
			return "=/x"
		}
		return ""
	}
	d := Admit(routes, Options{ClaimPath: exact})
	expectAdmitted(t, d, "ns/prefix", "ns/exact")
	expectRejected(t, d, "ns/exact-later", ReasonHostAlreadyClaimed, "already exposes a.example.com")
	d = Admit(routes, Options{})
	expectAdmitted(t, d, "ns/prefix")
}

// TestMadeRoutesOfOneClaimGroupShareAHost: made routes of one group
// (Options.ClaimGroup: the same Gateways) share a host across namespaces,
// one per path; a route of another group or a Route of another namespace
// is refused.
func TestMadeRoutesOfOneClaimGroupShareAHost(t *testing.T) {
	routes := []*routev1.Route{
		route("a", "gw-1", "h.example.com", "/a", 1),
		route("b", "gw-1", "h.example.com", "/b", 2),
		route("c", "gw-1-same-path", "h.example.com", "/b", 3),
		route("d", "gw-2", "h.example.com", "/d", 4),
		route("e", "route", "h.example.com", "/e", 5),
	}
	group := func(k Key) string {
		switch {
		case strings.Contains(string(k), "/gw-1"):
			return "infra/gw"
		case strings.Contains(string(k), "/gw-2"):
			return "other/gw"
		}
		return ""
	}
	d := Admit(routes, Options{ClaimGroup: group})
	expectAdmitted(t, d, "a/gw-1", "b/gw-1")
	expectRejected(t, d, "c/gw-1-same-path", ReasonHostAlreadyClaimed, "holds h.example.com")
	expectRejected(t, d, "d/gw-2", ReasonHostAlreadyClaimed, "holds h.example.com")
	expectRejected(t, d, "e/route", ReasonHostAlreadyClaimed, "holds h.example.com")
}

// TestMadeRoutesOnOneSideEachShareAHostAndPath: made routes of one host
// and path served on different ports alone (Options.ClaimSide: an HTTP
// redirect and the HTTPS backends) are both admitted; a third on either
// side, or one on both sides, is refused, and so are Routes of the path
// (they are on both sides, as OpenShift claims them).
func TestMadeRoutesOnOneSideEachShareAHostAndPath(t *testing.T) {
	routes := []*routev1.Route{
		route("a", "http-redirect", "h.example.com", "/app", 1),
		route("a", "https-backends", "h.example.com", "/app", 2),
		route("a", "http-late", "h.example.com", "/app", 3),
		route("a", "both-late", "h.example.com", "/app", 4),
		route("a", "route-late", "h.example.com", "/app", 5),
		route("a", "both-early", "b.example.com", "/", 6),
		route("a", "https-late", "b.example.com", "/", 7),
	}
	side := func(k Key) string {
		switch {
		case strings.Contains(string(k), "/http-"):
			return SideHTTP
		case strings.Contains(string(k), "/https-"):
			return SideHTTPS
		}
		return ""
	}
	d := Admit(routes, Options{ClaimSide: side})
	expectAdmitted(t, d, "a/http-redirect", "a/https-backends", "a/both-early")
	for _, k := range []string{"a/http-late", "a/both-late", "a/route-late", "a/https-late"} {
		expectRejected(t, d, k, ReasonHostAlreadyClaimed, "already exposes")
	}
}

// TestANamespaceGetsAtMostMaxHeaderMatchRoutes: routes with header matches
// beyond MaxHeaderMatchRoutes in a namespace are refused, the oldest kept;
// other namespaces and routes without header matches are not affected.
func TestANamespaceGetsAtMostMaxHeaderMatchRoutes(t *testing.T) {
	var routes []*routev1.Route
	for i := 0; i <= MaxHeaderMatchRoutes; i++ {
		routes = append(routes, route("a", fmt.Sprintf("hm-%03d", i), "a.example.com", fmt.Sprintf("/%d", i), i))
	}
	routes = append(routes, route("a", "plain", "a.example.com", "/plain", 1000), route("b", "hm-b", "b.example.com", "", 1001))
	matched := func(k Key) bool { return strings.Contains(string(k), "/hm-") }
	d := Admit(routes, Options{HeaderMatched: matched})
	last := fmt.Sprintf("a/hm-%03d", MaxHeaderMatchRoutes)
	expectRejected(t, d, last, ReasonHeaderMatchesExceeded, "routes with header matches")
	if len(d.Admitted) != MaxHeaderMatchRoutes+2 {
		t.Errorf("admitted %d, want %d", len(d.Admitted), MaxHeaderMatchRoutes+2)
	}
}

// TestTheRouterServesAtMostMaxHeaderMatchRoutesTotal: beyond
// MaxHeaderMatchRoutesTotal routes with header matches of all namespaces,
// the younger ones are refused, whatever their namespace's count.
func TestTheRouterServesAtMostMaxHeaderMatchRoutesTotal(t *testing.T) {
	var routes []*routev1.Route
	n := 0
	for ns := 0; n <= MaxHeaderMatchRoutesTotal; ns++ {
		for i := 0; i < MaxHeaderMatchRoutes && n <= MaxHeaderMatchRoutesTotal; i++ {
			routes = append(routes, route(fmt.Sprintf("ns-%02d", ns), fmt.Sprintf("hm-%02d", i), fmt.Sprintf("h%d.example.com", n), "", n))
			n++
		}
	}
	matched := func(k Key) bool { return strings.Contains(string(k), "/hm-") }
	d := Admit(routes, Options{HeaderMatched: matched})
	youngest := routes[len(routes)-1]
	expectRejected(t, d, string(KeyOf(youngest)), ReasonHeaderMatchesExceeded, "the router serves")
	if len(d.Admitted) != MaxHeaderMatchRoutesTotal {
		t.Errorf("admitted %d, want %d", len(d.Admitted), MaxHeaderMatchRoutesTotal)
	}
}

// TestMadeRoutesForEveryHostOrSubdomainRespectDeniedDomains: with denied
// domains, a made route for every host is refused, and one for the
// subdomains of a domain at any depth when a denied domain is under it.
func TestMadeRoutesForEveryHostOrSubdomainRespectDeniedDomains(t *testing.T) {
	routes := []*routev1.Route{
		route("a", "any", AnyHost, "", 1),
		route("a", "deep", "*.example.com", "", 2, wildcard),
		route("a", "other", "*.other.com", "", 3, wildcard),
	}
	made := func(Key) bool { return true }
	d := Admit(routes, Options{Made: made, DeniedDomains: []string{"secret.corp.example.com"}})
	expectAdmitted(t, d, "a/other")
	expectRejected(t, d, "a/any", ReasonRouteNotAdmitted, "would serve denied secret.corp.example.com")
	expectRejected(t, d, "a/deep", ReasonRouteNotAdmitted, "would serve denied secret.corp.example.com")
	expectAdmitted(t, Admit(routes, Options{Made: made}), "a/any", "a/deep", "a/other")
}
