package admission

import (
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/openshift-router-go/router/test/testcerts"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type routeOpt func(*routev1.Route)

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

func admittedNames(d Decision) []string {
	var out []string
	for _, r := range d.Admitted {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func TestHostClaims(t *testing.T) {
	tests := []struct {
		name         string
		routes       []*routev1.Route
		disableOwner bool
		admitted     []string
		rejected     map[string]string // key -> message substring
	}{
		{
			name:     "oldest route wins the host",
			routes:   []*routev1.Route{route("a", "new", "www.example.com", "", 2), route("a", "old", "www.example.com", "", 1)},
			admitted: []string{"a/old"},
			rejected: map[string]string{"a/new": "route a/old already exposes www.example.com/ and is older"},
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
			rejected: map[string]string{"b/test": "a route in another namespace holds host www.example.com"},
		},
		{
			name:         "ownership check disabled: other namespaces may use other paths",
			routes:       []*routev1.Route{route("a", "root", "www.example.com", "", 1), route("b", "test", "www.example.com", "/test", 2), route("c", "dup", "www.example.com", "/test", 3)},
			disableOwner: true,
			admitted:     []string{"a/root", "b/test"},
			rejected:     map[string]string{"c/dup": "route b/test already exposes www.example.com/test"},
		},
		{
			name:     "equal timestamps: namespace then name break the tie",
			routes:   []*routev1.Route{route("b", "x", "h.example.com", "", 1), route("a", "y", "h.example.com", "", 1)},
			admitted: []string{"a/y"},
			rejected: map[string]string{"b/x": "a route in another namespace"},
		},
		{
			name:     "host is case-insensitive",
			routes:   []*routev1.Route{route("a", "old", "WWW.example.com", "", 1), route("a", "new", "www.example.com", "", 2)},
			admitted: []string{"a/old"},
			rejected: map[string]string{"a/new": "already exposes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Admit(tt.routes, Options{DisableNamespaceOwnershipCheck: tt.disableOwner})
			got := admittedNames(d)
			if strings.Join(got, ",") != strings.Join(tt.admitted, ",") {
				t.Fatalf("admitted %v, want %v", got, tt.admitted)
			}
			for k, sub := range tt.rejected {
				res := d.Results[Key(k)]
				if res.Admitted || res.Reason != ReasonHostAlreadyClaimed || !strings.Contains(res.Message, sub) {
					t.Errorf("%s: got %+v, want HostAlreadyClaimed containing %q", k, res, sub)
				}
			}
		})
	}
}

func TestClaimPassesToNextOldestWhenWinnerGoes(t *testing.T) {
	old := route("a", "old", "www.example.com", "", 1)
	mid := route("a", "mid", "www.example.com", "", 2)
	young := route("a", "young", "www.example.com", "", 3)
	if got := admittedNames(Admit([]*routev1.Route{young, old, mid}, Options{})); strings.Join(got, ",") != "a/old" {
		t.Fatalf("admitted %v, want a/old", got)
	}
	if got := admittedNames(Admit([]*routev1.Route{young, mid}, Options{})); strings.Join(got, ",") != "a/mid" {
		t.Fatalf("after deleting the winner admitted %v, want a/mid", got)
	}
}

func TestValidationRejectsBadRoutes(t *testing.T) {
	ca, err := testcerts.NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("www.example.com", []string{"www.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Issue("other", []string{"other.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w := func(n int32) *int32 { return &n }
	tests := []struct {
		name     string
		mutate   func(*routev1.Route)
		extended bool
		field    string // expected substring of the message; "" = valid
	}{
		{"valid unsecured route", func(r *routev1.Route) {}, true, ""},
		{"missing host", func(r *routev1.Route) { r.Spec.Host = "" }, true, "spec.host"},
		{"host with space", func(r *routev1.Route) { r.Spec.Host = "a b.example.com" }, true, "spec.host"},
		{"host label over 63", func(r *routev1.Route) { r.Spec.Host = strings.Repeat("a", 64) + ".example.com" }, true, "spec.host"},
		{"path without slash", func(r *routev1.Route) { r.Spec.Path = "test" }, true, "spec.path"},
		{"path with space injects nothing", func(r *routev1.Route) { r.Spec.Path = "/a b" }, true, "spec.path"},
		{"path with newline", func(r *routev1.Route) { r.Spec.Path = "/a\nbackend x" }, true, "spec.path"},
		{"path with hash", func(r *routev1.Route) { r.Spec.Path = "/a#b" }, true, "spec.path"},
		{"passthrough with path", func(r *routev1.Route) {
			r.Spec.Path = "/x"
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
		}, true, "passthrough termination does not support paths"},
		{"passthrough with Allow", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, InsecureEdgeTerminationPolicy: "Allow"}
		}, true, "insecureEdgeTerminationPolicy"},
		{"passthrough with certificate", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, Certificate: leaf.CertPEM, Key: leaf.KeyPEM}
		}, true, "spec.tls.certificate"},
		{"edge with unknown policy", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, InsecureEdgeTerminationPolicy: "Sometimes"}
		}, true, "insecureEdgeTerminationPolicy"},
		{"unknown termination", func(r *routev1.Route) { r.Spec.TLS = &routev1.TLSConfig{Termination: "magic"} }, true, "spec.tls.termination"},
		{"edge with destination CA", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, DestinationCACertificate: ca.CertPEM}
		}, true, "destinationCACertificate"},
		{"edge with valid cert and key", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: leaf.CertPEM, Key: leaf.KeyPEM, CACertificate: ca.CertPEM}
		}, true, ""},
		{"edge with key of another cert", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: leaf.CertPEM, Key: other.KeyPEM}
		}, true, "private key does not match"},
		{"mismatched key passes without extended validation", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: leaf.CertPEM, Key: other.KeyPEM}
		}, false, ""},
		{"garbage certificate", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: "nope", Key: leaf.KeyPEM}
		}, true, "spec.tls.certificate"},
		{"chain in wrong order", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: ca.CertPEM + leaf.CertPEM, Key: leaf.KeyPEM}
		}, true, "leaf-to-root"},
		{"bad destination CA", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, DestinationCACertificate: "junk"}
		}, true, "destinationCACertificate"},
		{"weight above 256", func(r *routev1.Route) { r.Spec.To.Weight = w(257) }, true, "spec.to.weight"},
		{"four alternate backends", func(r *routev1.Route) {
			for _, n := range []string{"b", "c", "d", "e"} {
				r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, routev1.RouteTargetReference{Kind: "Service", Name: n})
			}
		}, true, "spec.alternateBackends"},
		{"target kind other than Service", func(r *routev1.Route) { r.Spec.To.Kind = "Pod" }, true, "spec.to.kind"},
		{"service name with quote", func(r *routev1.Route) { r.Spec.To.Name = `svc"x` }, true, "spec.to.name"},
		{"target port with space", func(r *routev1.Route) {
			r.Spec.Port = &routev1.RoutePort{TargetPort: intstr.FromString("http x")}
		}, true, "spec.port.targetPort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := route("ns", "r", "www.example.com", "", 1)
			tt.mutate(r)
			d := Admit([]*routev1.Route{r}, Options{ExtendedValidation: tt.extended})
			res := d.Results["ns/r"]
			if tt.field == "" {
				if !res.Admitted {
					t.Fatalf("rejected: %s", res.Message)
				}
				return
			}
			if res.Admitted || res.Reason != ReasonExtendedValidationFailed || !strings.Contains(res.Message, tt.field) {
				t.Fatalf("got %+v, want ExtendedValidationFailed mentioning %q", res, tt.field)
			}
		})
	}
}

func TestRejectedRouteDoesNotHoldClaim(t *testing.T) {
	bad := route("a", "old-bad", "www.example.com", "/a b", 1)
	good := route("b", "young-good", "www.example.com", "", 2)
	d := Admit([]*routev1.Route{bad, good}, Options{})
	if got := admittedNames(d); strings.Join(got, ",") != "b/young-good" {
		t.Fatalf("admitted %v, want the valid route", got)
	}
}

func TestExcludedRoutesAreRejectedWithTheirResult(t *testing.T) {
	r := route("a", "r", "www.example.com", "", 1)
	d := Admit([]*routev1.Route{r}, Options{Excluded: map[Key]Result{"a/r": {Reason: ReasonConfigCheckFailed, Message: "m"}}})
	if len(d.Admitted) != 0 || d.Results["a/r"].Reason != ReasonConfigCheckFailed {
		t.Fatalf("got %+v", d.Results["a/r"])
	}
}
