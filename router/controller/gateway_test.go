package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/store"
)

// TestAnHTTPRouteThatMakesNoRouteGetsItsStatus: an HTTPRoute whose
// parentRef names no listener of the Gateway makes no route (nothing to
// render or apply), yet its status (NoMatchingParent) is published, as for
// every change of the translation.
func TestAnHTTPRouteThatMakesNoRouteGetsItsStatus(t *testing.T) {
	f := newFakeSetup(t, plainRoute("a", "web"))
	f.c.o.Inputs.Gateway = &gateway.Options{}
	var last *gateway.Result
	f.c.o.OnResults = func(_ map[admission.Key]admission.Result, gw *gateway.Result) { last = gw }
	f.st.Upsert(&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName}})
	f.st.Upsert(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}})
	if !f.commit(t) {
		t.Fatal("the first commit did not start haproxy")
	}
	section := gatewayv1.SectionName("nosuch")
	f.st.Upsert(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "hr", Generation: 1},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", SectionName: &section}}}}})
	if _, err := f.c.commit(context.Background(), true, false); err != nil {
		t.Fatal(err)
	}
	rs := last.HTTPRoutes[store.KeyOf("a", "hr")]
	if rs == nil || rs.Parents[0].Conditions[0].Reason != string(gatewayv1.RouteReasonNoMatchingParent) {
		t.Fatalf("the HTTPRoute's status was not published: %+v", rs)
	}
}
