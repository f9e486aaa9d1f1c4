package headeractions

import (
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
)

func action(name string, typ routev1.RouteHTTPHeaderActionType, value *string) routev1.RouteHTTPHeader {
	a := routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: typ}}
	if value != nil {
		a.Action.Set = &routev1.RouteSetHTTPHeader{Value: *value}
	}
	return a
}

func str(s string) *string { return &s }

// TestCheckReportsEachFault: each rule of the Route API shows in the
// fault it names, and only there.
func TestCheckReportsEachFault(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Direction
		a    routev1.RouteHTTPHeader
		want Item
	}{
		{"set", Request, action("X-A", routev1.Set, str("%[req.hdr(host),lower] %% %{+Q}[ssl_c_der,base64]")), Item{}},
		{"delete", Response, action("X-A", routev1.Delete, nil), Item{}},
		{"response fetch", Response, action("X-A", routev1.Set, str("%[res.hdr(a)]")), Item{}},
		{"request fetch in response", Response, action("X-A", routev1.Set, str("%[req.hdr(a)]")), Item{BadValue: true}},
		{"control character", Request, action("X-A", routev1.Set, str("a\rb")), Item{BadValue: true}},
		{"empty name", Request, action("", routev1.Delete, nil), Item{Name: NameMissing}},
		{"long name", Request, action(strings.Repeat("a", MaxNameLength+1), routev1.Delete, nil), Item{Name: NameTooLong}},
		{"not a token", Request, action("a(b)", routev1.Delete, nil), Item{Name: NameNotToken}},
		{"reserved", Request, action("Set-Cookie", routev1.Delete, nil), Item{Reserved: "set-cookie"}},
		{"no type", Request, action("X-A", "", nil), Item{Type: TypeMissing, BadValue: true}},
		{"unknown type", Request, action("X-A", "Add", str("x")), Item{Type: TypeUnknown, SetMismatch: true}},
		{"set without value", Request, action("X-A", routev1.Set, nil), Item{SetMismatch: true, BadValue: true}},
		{"delete with value", Request, action("X-A", routev1.Delete, str("")), Item{SetMismatch: true, Value: ValueMissing}},
		{"empty value", Request, action("X-A", routev1.Set, str("")), Item{Value: ValueMissing, BadValue: true}},
		{"long value", Request, action("X-A", routev1.Set, str(strings.Repeat("a", MaxValueLength+1))), Item{Value: ValueTooLong}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.d, []routev1.RouteHTTPHeader{tc.a})
			if got := r.Items[0]; got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if r.OK() != (tc.want == Item{}) {
				t.Errorf("OK() = %v", r.OK())
			}
		})
	}
}

func TestCheckCountsAndDuplicates(t *testing.T) {
	list := make([]routev1.RouteHTTPHeader, MaxActions)
	for i := range list {
		list[i] = action("X-"+strings.Repeat("a", i+1), routev1.Delete, nil)
	}
	if r := Check(Request, list); !r.OK() {
		t.Errorf("%d actions refused: %+v", MaxActions, r)
	}
	if r := Check(Request, append(list, action("X-Z", routev1.Delete, nil))); !r.TooMany || r.OK() {
		t.Errorf("%d actions: TooMany = %v", MaxActions+1, r.TooMany)
	}
	r := Check(Response, []routev1.RouteHTTPHeader{action("X-A", routev1.Delete, nil), action("x-a", routev1.Delete, nil), action("X-A", routev1.Delete, nil)})
	if r.Items[0].Duplicate || r.Items[1].Duplicate || !r.Items[2].Duplicate {
		t.Errorf("duplicates (exact names): %+v", r.Items)
	}
}

func TestPassthroughRules(t *testing.T) {
	pt := &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
	empty := &routev1.RouteHTTPHeaders{}
	withAction := &routev1.RouteHTTPHeaders{Actions: routev1.RouteHTTPHeaderActions{Response: []routev1.RouteHTTPHeader{action("X-A", routev1.Delete, nil)}}}
	for _, tc := range []struct {
		name                string
		spec                routev1.RouteSpec
		actions, anyHeaders bool
	}{
		{"passthrough with actions", routev1.RouteSpec{TLS: pt, HTTPHeaders: withAction}, true, true},
		{"passthrough with empty httpHeaders", routev1.RouteSpec{TLS: pt, HTTPHeaders: empty}, false, true},
		{"passthrough without httpHeaders", routev1.RouteSpec{TLS: pt}, false, false},
		{"edge with actions", routev1.RouteSpec{TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}, HTTPHeaders: withAction}, false, false},
		{"plain HTTP with actions", routev1.RouteSpec{HTTPHeaders: withAction}, false, false},
	} {
		if got := ActionsOnPassthrough(&tc.spec); got != tc.actions {
			t.Errorf("%s: ActionsOnPassthrough = %v", tc.name, got)
		}
		if got := HeadersOnPassthrough(&tc.spec); got != tc.anyHeaders {
			t.Errorf("%s: HeadersOnPassthrough = %v", tc.name, got)
		}
	}
}
