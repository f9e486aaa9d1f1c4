package status

import (
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/admission"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func writer(name string, now time.Time) *Writer {
	return &Writer{o: Options{RouterName: name, CanonicalHostname: "router.example.com", Now: func() time.Time { return now }}}
}

func ingress(router, host string, status corev1.ConditionStatus, reason string, at time.Time) routev1.RouteIngress {
	ts := metav1.NewTime(at)
	return routev1.RouteIngress{Host: host, RouterName: router, WildcardPolicy: routev1.WildcardPolicyNone, RouterCanonicalHostname: "router.example.com",
		Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: status, Reason: reason, LastTransitionTime: &ts}}}
}

func TestApplyTouchesOnlyThisRoutersEntry(t *testing.T) {
	r := &routev1.Route{Status: routev1.RouteStatus{Ingress: []routev1.RouteIngress{ingress("other", "h", corev1.ConditionTrue, "", t0)}}}
	out, changed := writer("public", t1).apply(r, admission.Result{Admitted: true, Host: "h"})
	if !changed || len(out.Status.Ingress) != 2 {
		t.Fatalf("changed=%v ingress=%+v", changed, out.Status.Ingress)
	}
	if out.Status.Ingress[0].RouterName != "other" || out.Status.Ingress[1].RouterName != "public" {
		t.Fatalf("entries %+v", out.Status.Ingress)
	}
	if len(r.Status.Ingress) != 1 {
		t.Fatal("input route modified")
	}
}

func TestApplyWritesNothingWhenStatusIsAlreadyRight(t *testing.T) {
	r := &routev1.Route{Status: routev1.RouteStatus{Ingress: []routev1.RouteIngress{ingress("public", "h", corev1.ConditionTrue, "", t0)}}}
	if _, changed := writer("public", t1).apply(r, admission.Result{Admitted: true, Host: "h"}); changed {
		t.Fatal("an unchanged status would be written again (write storm on resync)")
	}
}

func TestApplyRejectionKeepsTransitionTimeOnlyWhileStatusHolds(t *testing.T) {
	r := &routev1.Route{Status: routev1.RouteStatus{Ingress: []routev1.RouteIngress{ingress("public", "h", corev1.ConditionFalse, "HostAlreadyClaimed", t0)}}}
	out, changed := writer("public", t1).apply(r, admission.Result{Host: "h", Reason: "ExtendedValidationFailed", Message: "m"})
	c := out.Status.Ingress[0].Conditions[0]
	if !changed || c.Reason != "ExtendedValidationFailed" || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("reason change: %+v", c)
	}
	out, _ = writer("public", t1).apply(r, admission.Result{Admitted: true, Host: "h"})
	c = out.Status.Ingress[0].Conditions[0]
	if c.Status != corev1.ConditionTrue || c.Reason != "" || !c.LastTransitionTime.Time.Equal(t1) {
		t.Fatalf("admission: %+v", c)
	}
}

func TestApplyReportsHostAndWildcardPolicy(t *testing.T) {
	r := &routev1.Route{Spec: routev1.RouteSpec{WildcardPolicy: routev1.WildcardPolicySubdomain}}
	out, _ := writer("public", t1).apply(r, admission.Result{Admitted: true, Host: "gen-ns.apps.example.com"})
	ing := out.Status.Ingress[0]
	if ing.Host != "gen-ns.apps.example.com" || ing.WildcardPolicy != routev1.WildcardPolicySubdomain || ing.RouterCanonicalHostname != "router.example.com" {
		t.Fatalf("%+v", ing)
	}
}

// TestUpdateLeavesOutWhatIsNotARoute: results of routes made from the
// Gateway API's objects are not written into any Route (a Route may have,
// or later take, such a name).
func TestUpdateLeavesOutWhatIsNotARoute(t *testing.T) {
	w := New(Options{RouterName: "public"})
	made := func(k admission.Key) bool { return k == "ns/r.gw-1" }
	w.Update(map[admission.Key]admission.Result{"ns/web": {Admitted: true}, "ns/r.gw-1": {Admitted: true}}, made)
	if _, ok := w.desired["ns/r.gw-1"]; ok || len(w.desired) != 1 || w.queue.Len() != 1 {
		t.Errorf("desired %v, %d queued: want ns/web alone", w.desired, w.queue.Len())
	}
	w.Update(map[admission.Key]admission.Result{"ns/r.gw-1": {Admitted: true}}, made)
	if len(w.desired) != 0 {
		t.Errorf("desired %v after ns/web went, want none", w.desired)
	}
}
