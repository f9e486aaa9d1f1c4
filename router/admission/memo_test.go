package admission

import (
	"reflect"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
)

// TestAValidationMemoChangesNoDecision: Admit with a memo decides what it
// decides without one, pass after pass: a route object seen before is not
// validated again (its entry is reused), an object replaced by one with
// another key is validated afresh (and rejected), and the objects a pass
// no longer has are forgotten.
func TestAValidationMemoChangesNoDecision(t *testing.T) {
	f := newPKI(t)
	edge := func(name, cert, key string) *routev1.Route {
		r := route("ns", name, name+".example.com", "", 1, tls(routev1.TLSTerminationEdge, ""))
		r.Spec.TLS.Certificate, r.Spec.TLS.Key, r.Spec.TLS.CACertificate = cert, key, f.inter
		return r
	}
	good := edge("good", f.rsaLeaf, f.rsaKey)
	other := edge("other", f.ecLeaf, f.ecKey)
	plain := route("ns", "plain", "plain.example.com", "", 1)
	memo := NewValidationMemo()
	with := Options{ExtendedValidation: true, Memo: memo}
	without := Options{ExtendedValidation: true}

	pass := func(routes ...*routev1.Route) Decision {
		t.Helper()
		got, want := Admit(routes, with), Admit(routes, without)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("with a memo:\n%+v\nwithout:\n%+v", got, want)
		}
		return got
	}
	expectAdmitted(t, pass(good, other, plain), "ns/good", "ns/other", "ns/plain")
	entry := memo.last[memoKey{good, true, false}]
	if entry.tls == nil {
		t.Fatal("the edge route's validation is not remembered")
	}
	expectAdmitted(t, pass(good, other, plain), "ns/good", "ns/other", "ns/plain")
	if again := memo.last[memoKey{good, true, false}]; again.tls != entry.tls {
		t.Fatal("a route object seen before was validated again")
	}

	// The same route, another object: its key no longer matches.
	broken := edge("good", f.rsaLeaf, f.otherKey)
	d := pass(broken, plain)
	expectAdmitted(t, d, "ns/plain")
	if d.Results["ns/good"].Admitted {
		t.Fatalf("the replaced object was not validated again: %+v", d.Results["ns/good"])
	}
	if _, kept := memo.last[memoKey{other, true, false}]; kept {
		t.Fatal("a route the pass did not have is still remembered")
	}
	if _, kept := memo.last[memoKey{good, true, false}]; kept {
		t.Fatal("the replaced object is still remembered")
	}
	// Another setting, another entry.
	Admit([]*routev1.Route{broken}, Options{Memo: memo})
	if _, ok := memo.last[memoKey{broken, false, false}]; !ok {
		t.Fatal("validation without EXTENDED_VALIDATION is not remembered apart")
	}
}
