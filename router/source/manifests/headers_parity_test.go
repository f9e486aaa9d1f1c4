package manifests

import (
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/admission"
)

func hset(name, value string) routev1.RouteHTTPHeader {
	return routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: value}}}
}

func hdel(name string) routev1.RouteHTTPHeader {
	return routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete}}
}

func hact(name string, typ routev1.RouteHTTPHeaderActionType, set *routev1.RouteSetHTTPHeader) routev1.RouteHTTPHeader {
	return routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: typ, Set: set}}
}

func hdels(n int) []routev1.RouteHTTPHeader {
	l := make([]routev1.RouteHTTPHeader, n)
	for i := range l {
		l[i] = hdel("X-H" + strings.Repeat("a", i))
	}
	return l
}

// TestHeaderActionsSameVerdictInAdmissionAndManifests: the manifests
// directory's stand-in for the API server (validateObject) and route
// admission (admission.Validate, every mode) accept and refuse the same
// spec.httpHeaders.actions, so the two cannot drift apart. The one
// deliberate difference is the passthrough rule: the CRD refuses any
// httpHeaders on a passthrough route, OpenShift (openshift-apiserver and
// its router) only one with actions.
func TestHeaderActionsSameVerdictInAdmissionAndManifests(t *testing.T) {
	sv := func(v string) *routev1.RouteSetHTTPHeader { return &routev1.RouteSetHTTPHeader{Value: v} }
	tests := []struct {
		name      string
		term      routev1.TLSTerminationType
		empty     bool // httpHeaders without actions
		req, resp []routev1.RouteHTTPHeader
		valid     bool
		// admissionValid, when set, is admission's verdict where it
		// deliberately differs from the CRD's.
		admissionValid *bool
	}{
		{name: "plain set and delete", req: []routev1.RouteHTTPHeader{hset("X-A", "v a l"), hdel("X-B")}, resp: []routev1.RouteHTTPHeader{hset("X-Frame-Options", "DENY")}, valid: true},
		{name: "request fetches and converters", req: []routev1.RouteHTTPHeader{hset("X-Host", "%[req.hdr(host),lower]"), hset("X-Cert", "%{+Q}[ssl_c_der,base64]"), hset("X-Pct", "100%%"), hset("X-Two", "%[req.hdr(A-b),base64,lower]x")}, valid: true},
		{name: "response fetch", resp: []routev1.RouteHTTPHeader{hset("X-Echo", "%[res.hdr(X-Target),lower]")}, valid: true},
		{name: "flags", req: []routev1.RouteHTTPHeader{hset("X-F", "%{-Q,+X,E}[ssl_c_der]")}, valid: true},
		{name: "quotes, backslash, non-ASCII text", req: []routev1.RouteHTTPHeader{hset("X-Q", `it's "x" \ y é`)}, valid: true},
		{name: "response fetch in request", req: []routev1.RouteHTTPHeader{hset("X-A", "%[res.hdr(x)]")}},
		{name: "request fetch in response", resp: []routev1.RouteHTTPHeader{hset("X-A", "%[req.hdr(x)]")}},
		{name: "other fetch", req: []routev1.RouteHTTPHeader{hset("X-A", "%[env(HOME)]")}},
		{name: "other converter", req: []routev1.RouteHTTPHeader{hset("X-A", "%[req.hdr(host),upper]")}},
		{name: "fetch name with dot", req: []routev1.RouteHTTPHeader{hset("X-A", "%[req.hdr(a.b)]")}},
		{name: "unknown flag", req: []routev1.RouteHTTPHeader{hset("X-A", "%{+Z}[ssl_c_der]")}},
		{name: "lone percent", req: []routev1.RouteHTTPHeader{hset("X-A", "50%")}},
		{name: "newline", req: []routev1.RouteHTTPHeader{hset("X-A", "a\nhttp-request deny")}},
		{name: "tab", resp: []routev1.RouteHTTPHeader{hset("X-A", "a\tb")}},
		{name: "DEL", req: []routev1.RouteHTTPHeader{hset("X-A", "a\x7fb")}},
		{name: "empty value", req: []routev1.RouteHTTPHeader{hset("X-A", "")}},
		{name: "longest value", req: []routev1.RouteHTTPHeader{hset("X-A", strings.Repeat("a", 16384))}, valid: true},
		{name: "too long value", req: []routev1.RouteHTTPHeader{hset("X-A", strings.Repeat("a", 16385))}},
		{name: "set without set", req: []routev1.RouteHTTPHeader{hact("X-A", routev1.Set, nil)}},
		{name: "delete with set", req: []routev1.RouteHTTPHeader{hact("X-A", routev1.Delete, sv("x"))}},
		{name: "delete with empty set", resp: []routev1.RouteHTTPHeader{hact("X-A", routev1.Delete, sv(""))}},
		{name: "no type", req: []routev1.RouteHTTPHeader{hact("X-A", "", nil)}},
		{name: "no type with set", req: []routev1.RouteHTTPHeader{hact("X-A", "", sv("x"))}},
		{name: "unknown type", req: []routev1.RouteHTTPHeader{hact("X-A", "Append", sv("x"))}},
		{name: "lower-case type", req: []routev1.RouteHTTPHeader{hact("X-A", "delete", nil)}},
		{name: "name with space", req: []routev1.RouteHTTPHeader{hdel("X A")}},
		{name: "name with colon", resp: []routev1.RouteHTTPHeader{hdel("X:A")}},
		{name: "name with non-ASCII", req: []routev1.RouteHTTPHeader{hdel("X-é")}},
		{name: "token punctuation name", req: []routev1.RouteHTTPHeader{hdel("!#$%&'*+.^_`|~-0")}, valid: true},
		{name: "empty name", req: []routev1.RouteHTTPHeader{hdel("")}},
		{name: "longest name", req: []routev1.RouteHTTPHeader{hdel(strings.Repeat("x", 255))}, valid: true},
		{name: "too long name", req: []routev1.RouteHTTPHeader{hdel(strings.Repeat("x", 256))}},
		{name: "duplicate name", resp: []routev1.RouteHTTPHeader{hdel("X-A"), hset("X-A", "b")}},
		{name: "duplicate invalid name", resp: []routev1.RouteHTTPHeader{hdel("X A"), hdel("X A")}},
		{name: "names differing in case", req: []routev1.RouteHTTPHeader{hdel("X-A"), hdel("x-a")}, valid: true},
		{name: "same name in both lists", req: []routev1.RouteHTTPHeader{hdel("X-A")}, resp: []routev1.RouteHTTPHeader{hdel("X-A")}, valid: true},
		{name: "reserved Cookie", req: []routev1.RouteHTTPHeader{hdel("Cookie")}},
		{name: "reserved PROXY", req: []routev1.RouteHTTPHeader{hdel("PROXY")}},
		{name: "reserved set-cookie", resp: []routev1.RouteHTTPHeader{hset("Set-Cookie", "a=b")}},
		{name: "reserved HSTS", resp: []routev1.RouteHTTPHeader{hset("strict-transport-security", "max-age=1")}},
		{name: "not reserved Set-Cookie2", resp: []routev1.RouteHTTPHeader{hdel("Set-Cookie2")}, valid: true},
		{name: "twenty actions", req: hdels(20), resp: hdels(20), valid: true},
		{name: "too many requests", req: hdels(21)},
		{name: "too many responses", resp: hdels(21)},
		{name: "edge with actions", term: routev1.TLSTerminationEdge, req: []routev1.RouteHTTPHeader{hdel("X-A")}, valid: true},
		{name: "passthrough with actions", term: routev1.TLSTerminationPassthrough, resp: []routev1.RouteHTTPHeader{hdel("X-A")}},
		{name: "passthrough without httpHeaders", term: routev1.TLSTerminationPassthrough, valid: true},
		{name: "empty httpHeaders", empty: true, valid: true},
		{name: "passthrough with empty httpHeaders", term: routev1.TLSTerminationPassthrough, empty: true, admissionValid: ptrTo(true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &routev1.Route{
				TypeMeta:   metav1.TypeMeta{APIVersion: "route.openshift.io/v1", Kind: "Route"},
				ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
				Spec: routev1.RouteSpec{
					Host: "r.example.com",
					To:   routev1.RouteTargetReference{Kind: "Service", Name: "svc"},
				},
			}
			if tc.term != "" {
				r.Spec.TLS = &routev1.TLSConfig{Termination: tc.term}
			}
			if tc.req != nil || tc.resp != nil || tc.empty {
				r.Spec.HTTPHeaders = &routev1.RouteHTTPHeaders{Actions: routev1.RouteHTTPHeaderActions{Request: tc.req, Response: tc.resp}}
			}
			apiErr := validateObject(r)
			admErrs := admission.Validate(r.DeepCopy(), false)
			wantAdm := tc.valid
			if tc.admissionValid != nil {
				wantAdm = *tc.admissionValid
			}
			if (apiErr == nil) != tc.valid {
				t.Errorf("manifests (API server rules): valid = %v, want %v (%v)", apiErr == nil, tc.valid, apiErr)
			}
			if (len(admErrs) == 0) != wantAdm {
				t.Errorf("admission: valid = %v, want %v (%v)", len(admErrs) == 0, wantAdm, admErrs.ToAggregate())
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
