package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
)

// describeResult is everything a pass takes from a translation, finished
// with every route admitted.
func describeResult(res *Result) string {
	res.Finish(admitAll(res.Routes))
	out := fmt.Sprintf("routes %v\n", routes(res.Routes))
	for _, r := range res.Routes {
		spec, _ := json.Marshal(r.Spec)
		out += fmt.Sprintf("%s %s %+v\n", r.Name, spec, res.Origins[admission.KeyOf(r)])
	}
	for _, k := range slices.Sorted(maps.Keys(res.HTTPRoutes)) {
		rs := res.HTTPRoutes[k]
		out += fmt.Sprintf("%s %+v %v\n", k, rs.Parents, rs.unserved)
	}
	for _, k := range slices.Sorted(maps.Keys(res.Gateways)) {
		for _, l := range res.Gateways[k].Listeners {
			out += fmt.Sprintf("%s %s %d %s\n", k, l.Name, l.AttachedRoutes, conditions(l.Conditions))
		}
	}
	return out
}

// TestTheMemoTranslatesAsWithout: through a series of changes to the
// objects (replaced, as the store replaces them), a translation with the
// memo is the same as one without; with nothing changed, it hands on the
// same route objects.
func TestTheMemoTranslatesAsWithout(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("r1", "a.example.com, b.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r2}
spec:
  parentRefs: [{name: gw}]
  hostnames: [c.example.com]
  rules: [{backendRefs: [{name: later, port: 8080}]}]`)
	memo := NewMemo()
	svc := func(name string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: fmt.Sprintf("p%d", port), Port: port}}}}
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"nothing", func() {}},
		{"the missing Service comes", func() { v.services["default/later"] = svc("later", 8080) }},
		{"an HTTPRoute gets a rule", func() {
			r1 := v.httpRoutes[0].DeepCopy()
			p := "/x"
			r1.Spec.Rules = append(r1.Spec.Rules, gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: &p}}},
				BackendRefs: r1.Spec.Rules[0].BackendRefs})
			v.httpRoutes[0] = r1
		}},
		{"a Route takes a made route's name", func() {
			n := routeName("r1", "a.example.com", "/x")
			v.routes["default/"+n] = &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n}}
		}},
		{"a Service's port changes", func() { v.services["default/later"] = svc("later", 9090) }},
		{"the Gateway's listener changes", func() {
			g := v.gateways[0].DeepCopy()
			h := gatewayv1.Hostname("a.example.com")
			g.Spec.Listeners[0].Hostname = &h
			v.gateways[0] = g
		}},
		{"a Service goes", func() { delete(v.services, "default/web") }},
		{"nothing again", func() {}},
	}
	var last *Result
	for _, s := range steps {
		s.change()
		withMemo, without := Translate(v, Options{Memo: memo}), Translate(v, Options{})
		if s.name == "nothing" || s.name == "nothing again" {
			if last != nil && len(last.Routes) == len(withMemo.Routes) {
				for i := range last.Routes {
					if last.Routes[i] != withMemo.Routes[i] {
						t.Errorf("%s: route %s is a new object", s.name, withMemo.Routes[i].Name)
					}
				}
			}
		}
		last = withMemo
		if a, b := describeResult(withMemo), describeResult(without); a != b {
			t.Errorf("%s: with the memo\n%s\nwithout\n%s", s.name, a, b)
		}
	}
	if len(memo.last) != 2 {
		t.Errorf("memo keeps %d entries, want 2 (one per HTTPRoute)", len(memo.last))
	}
}

// TestFinishLeavesTheRememberedTranslationAsItWas: a pass's Finish changes
// its own statuses, never the memo's: after a pass in which admission
// refused all, then one of, an HTTPRoute's routes (Accepted False, then
// PartiallyInvalid), a pass with every route admitted and nothing changed
// gives the HTTPRoute the status a translation without the memo gives.
func TestFinishLeavesTheRememberedTranslationAsItWas(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("r1", "a.example.com, b.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`)
	memo := NewMemo()
	refuse := func(rs []*routev1.Route, n int) map[admission.Key]admission.Result {
		out := admitAll(rs)
		for _, r := range rs[:n] {
			out[admission.KeyOf(r)] = admission.Result{Host: r.Spec.Host, Reason: admission.ReasonHostAlreadyClaimed,
				Message: "a route in another namespace holds host " + r.Spec.Host, Holder: "other/route"}
		}
		return out
	}
	for _, refused := range []int{2, 1} {
		res := Translate(v, Options{Memo: memo})
		if len(res.Routes) != 2 {
			t.Fatalf("made %d routes, want 2", len(res.Routes))
		}
		res.Finish(refuse(res.Routes, refused))
		if got := conditions(res.HTTPRoutes["default/r1"].Parents[0].Conditions); got == "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
			t.Fatalf("%d of 2 routes refused: status %s, want it to say so", refused, got)
		}
	}
	withMemo, without := Translate(v, Options{Memo: memo}), Translate(v, Options{})
	if a, b := describeResult(withMemo), describeResult(without); a != b {
		t.Errorf("after passes that refused routes, with the memo\n%s\nwithout\n%s", a, b)
	}
	if got := conditions(withMemo.HTTPRoutes["default/r1"].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
		t.Errorf("every route admitted: status %s", got)
	}
}

// TestFinishIsTheSameWhateverTheOrder: Finish walks the HTTPRoutes in map
// order (each status is its own, the attached counts are sums): over many
// passes, with and without the memo, some routes refused, shadowed or
// partly unserved, the statuses and the listeners' counts are the same.
func TestFinishIsTheSameWhateverTheOrder(t *testing.T) {
	doc := onGateway
	for i := 0; i < 12; i++ {
		hosts := fmt.Sprintf("h%d.example.com, shared.example.com", i%4)
		doc += httpRouteHead(fmt.Sprintf("r%02d", i), hosts) + ` [{backendRefs: [{name: web, port: 8080}]}, {backendRefs: [{name: missing, port: 80}], matches: [{path: {value: /gone}}]}]`
	}
	v := view(t, doc)
	memo := NewMemo()
	describe := func(res *Result) string {
		results := admitAll(res.Routes)
		for i, r := range res.Routes {
			switch {
			case strings.HasPrefix(r.Name, "r00") || i%3 == 0:
				// (r00's routes all refused: not Accepted.)
				results[admission.KeyOf(r)] = admission.Result{Host: r.Spec.Host, Reason: admission.ReasonHostAlreadyClaimed,
					Message: "held", Holder: "other/route"}
			case i%5 == 0:
				// Shadowed: held by another HTTPRoute's route.
				results[admission.KeyOf(r)] = admission.Result{Host: r.Spec.Host, Reason: admission.ReasonHostAlreadyClaimed,
					Message: "held", Holder: admission.KeyOf(res.Routes[(i+4)%len(res.Routes)])}
			}
		}
		res.Finish(results)
		var out string
		for _, k := range slices.Sorted(maps.Keys(res.HTTPRoutes)) {
			out += fmt.Sprintf("%s %+v\n", k, res.HTTPRoutes[k].Parents)
		}
		for _, k := range slices.Sorted(maps.Keys(res.Gateways)) {
			for _, l := range res.Gateways[k].Listeners {
				out += fmt.Sprintf("%s %s %d\n", k, l.Name, l.AttachedRoutes)
			}
		}
		return out
	}
	want := describe(Translate(v, Options{}))
	if !strings.Contains(want, "PartiallyInvalid") || !strings.Contains(want, "HostAlreadyClaimed") {
		t.Fatalf("the case has no refused or partly served route:\n%s", want)
	}
	for i := 0; i < 30; i++ {
		o := Options{}
		if i%2 == 1 {
			o.Memo = memo
		}
		if got := describe(Translate(v, o)); got != want {
			t.Fatalf("pass %d (memo %v):\n%s\nwant\n%s", i, o.Memo != nil, got, want)
		}
	}
}
