package admission

import (
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
)

func set(name, value string) routev1.RouteHTTPHeader {
	return routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: value}}}
}

func del(name string) routev1.RouteHTTPHeader {
	return routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete}}
}

func TestHeaderActionsFollowRouteAPIRules(t *testing.T) {
	many := make([]routev1.RouteHTTPHeader, 21)
	for i := range many {
		many[i] = del("X-H" + strings.Repeat("a", i))
	}
	for _, tc := range []struct {
		name      string
		term      routev1.TLSTerminationType
		req, resp []routev1.RouteHTTPHeader
		wantErr   string // "" for valid
	}{
		{name: "plain values and deletes", req: []routev1.RouteHTTPHeader{set("X-A", "v a l"), del("X-B")}, resp: []routev1.RouteHTTPHeader{set("X-Frame-Options", "DENY")}},
		{name: "request sample fetch with converters", req: []routev1.RouteHTTPHeader{set("X-Host", "%[req.hdr(host),lower]"), set("X-Cert", "%{+Q}[ssl_c_der,base64]"), set("X-Pct", "100%%")}},
		{name: "response sample fetch", resp: []routev1.RouteHTTPHeader{set("X-Echo", "%[res.hdr(X-Target),lower]")}},
		{name: "quotes and backslashes are text", req: []routev1.RouteHTTPHeader{set("X-Q", `it's "x" \ y`)}},
		{name: "response fetch in a request", req: []routev1.RouteHTTPHeader{set("X-A", "%[res.hdr(x)]")}, wantErr: "actions.request[0].action.set.value"},
		{name: "other sample fetch", req: []routev1.RouteHTTPHeader{set("X-A", "%[env(SECRET)]")}, wantErr: "Sample fetchers allowed are req.hdr"},
		{name: "lone percent", req: []routev1.RouteHTTPHeader{set("X-A", "50%")}, wantErr: "action.set.value"},
		{name: "newline", req: []routev1.RouteHTTPHeader{set("X-A", "a\nhttp-request deny")}, wantErr: "action.set.value"},
		{name: "empty value", req: []routev1.RouteHTTPHeader{set("X-A", "")}, wantErr: "Required value"},
		{name: "too long value", req: []routev1.RouteHTTPHeader{set("X-A", strings.Repeat("a", 16385))}, wantErr: "Too long"},
		{name: "set without set", req: []routev1.RouteHTTPHeader{{Name: "X-A", Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set}}}, wantErr: "set is required when type is Set"},
		{name: "delete with set", req: []routev1.RouteHTTPHeader{{Name: "X-A", Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete, Set: &routev1.RouteSetHTTPHeader{Value: "x"}}}}, wantErr: "forbidden otherwise"},
		{name: "unknown type", req: []routev1.RouteHTTPHeader{{Name: "X-A", Action: routev1.RouteHTTPHeaderActionUnion{Type: "Add"}}}, wantErr: "Unsupported value"},
		{name: "bad name", req: []routev1.RouteHTTPHeader{del("X A")}, wantErr: "must be an HTTP header name"},
		{name: "long name", req: []routev1.RouteHTTPHeader{del(strings.Repeat("x", 256))}, wantErr: "Too long"},
		{name: "duplicate name", resp: []routev1.RouteHTTPHeader{del("X-A"), set("X-A", "b")}, wantErr: "Duplicate value"},
		{name: "reserved names", req: []routev1.RouteHTTPHeader{del("Cookie"), del("PROXY")}, resp: []routev1.RouteHTTPHeader{del("Set-Cookie"), set("strict-transport-security", "x")}, wantErr: "strict-transport-security header may not be modified"},
		{name: "too many", req: many, wantErr: "must have at most 20 items"},
		{name: "passthrough", term: routev1.TLSTerminationPassthrough, req: []routev1.RouteHTTPHeader{del("X-A")}, wantErr: "not permitted when tls termination is passthrough"},
		// As OpenShift: openshift-apiserver refuses header actions on a
		// passthrough route, not an httpHeaders without actions.
		{name: "passthrough without actions", term: routev1.TLSTerminationPassthrough},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := routev1.RouteSpec{HTTPHeaders: &routev1.RouteHTTPHeaders{Actions: routev1.RouteHTTPHeaderActions{Request: tc.req, Response: tc.resp}}}
			if tc.term != "" {
				spec.TLS = &routev1.TLSConfig{Termination: tc.term}
			}
			errs := validateHeaderActions(nil, &spec).ToAggregate()
			switch {
			case tc.wantErr == "" && errs != nil:
				t.Errorf("unexpected errors: %v", errs)
			case tc.wantErr != "" && errs == nil:
				t.Errorf("accepted, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(errs.Error(), tc.wantErr):
				t.Errorf("error %q does not contain %q", errs.Error(), tc.wantErr)
			}
		})
	}
}
