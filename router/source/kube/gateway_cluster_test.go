package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/kubetest"
)

// kindCountingSink counts the upserts of each type it forwards.
type kindCountingSink struct {
	*store.Store
	mu      sync.Mutex
	upserts map[string]int
}

func (s *kindCountingSink) Upsert(o runtime.Object) {
	s.mu.Lock()
	s.upserts[fmt.Sprintf("%T", o)]++
	s.mu.Unlock()
	s.Store.Upsert(o)
}

func (s *kindCountingSink) count(o runtime.Object) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upserts[fmt.Sprintf("%T", o)]
}

// createGatewayObjects creates a GatewayClass, two Gateways (labelled shard=a
// and shard=b), an HTTPRoute, a TLSRoute, a ReferenceGrant and a Route in
// namespace ns.
func createGatewayObjects(t *testing.T, ctx context.Context, c *kubetest.Cluster, gc gatewayclient.Interface, ns string) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	create := metav1.CreateOptions{}
	must(gc.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "haproxy"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "haproxy.router.openshift.io/gateway-controller"}}, create))
	for name, shard := range map[string]string{"gw": "a", "other": "b"} {
		must(gc.GatewayV1().Gateways(ns).Create(ctx, &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"shard": shard}},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "haproxy",
				Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}}, create))
	}
	backend := gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptr.To[gatewayv1.PortNumber](80)}}
	parents := gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	must(gc.GatewayV1().HTTPRoutes(ns).Create(ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: parents, Hostnames: []gatewayv1.Hostname{"a.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: backend}}}}}}, create))
	must(gc.GatewayV1().TLSRoutes(ns).Create(ctx, &gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: parents, Hostnames: []gatewayv1.Hostname{"t.example.com"},
			Rules: []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{backend}}}}}, create))
	must(gc.GatewayV1().ReferenceGrants(ns).Create(ctx, &gatewayv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: gatewayv1.ReferenceGrantSpec{From: []gatewayv1.ReferenceGrantFrom{{Group: GatewayGroup, Kind: "HTTPRoute", Namespace: "elsewhere"}},
			To: []gatewayv1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}, create))
	must(c.Routes.RouteV1().Routes(ns).Create(ctx, &routev1.Route{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"shard": "a"}},
		Spec: routev1.RouteSpec{Host: "r.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}, create))
}

// runSource runs a source acting with cfg into sink until the test ends,
// and waits until it has synced.
func runSource(t *testing.T, ctx context.Context, cfg *rest.Config, sink *kindCountingSink, log *lines) {
	t.Helper()
	src := New(Options{Kube: kubernetes.NewForConfigOrDie(cfg), Routes: routeclient.NewForConfigOrDie(cfg),
		Gateway: gatewayclient.NewForConfigOrDie(cfg), Sink: sink, Logger: log.logger(),
		RouteLabels: labels.SelectorFromSet(labels.Set{"shard": "a"}), RouteFields: fields.Everything(),
		GatewayReprobe: 200 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for !sink.HasSynced(SourceName) {
		if ctx.Err() != nil {
			t.Fatalf("the source did not sync; log:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tlsRoutesServed is the store's View.TLSRoutesServed.
func tlsRoutesServed(s *store.Store) bool {
	served := false
	_ = s.Read(func(v store.View) error { served = v.TLSRoutesServed(); return nil })
	return served
}

// gatewayNames lists the Gateway API objects of the store, and its routes.
func gatewayNames(s *store.Store) string {
	var out []string
	_ = s.Read(func(v store.View) error {
		for _, o := range v.GatewayClasses() {
			out = append(out, "class "+o.Name)
		}
		for _, o := range v.Gateways() {
			out = append(out, "gateway "+o.Name)
		}
		for _, o := range v.HTTPRoutes() {
			out = append(out, fmt.Sprintf("httproute %s %v", o.Name, o.Spec.Hostnames))
		}
		for _, o := range v.TLSRoutes() {
			out = append(out, "tlsroute "+o.Name)
		}
		for _, o := range v.ReferenceGrants() {
			out = append(out, "grant "+o.Name)
		}
		for _, o := range v.Routes() {
			out = append(out, "route "+o.Name)
		}
		return nil
	})
	return fmt.Sprint(out)
}

// TestSourceWatchesTheGatewayAPIWithTheRoutersClusterRole: against a real
// API server with the Gateway API's CRDs, a router bound to adm router's
// ClusterRole stores every Gateway API kind (Gateways selected by
// ROUTE_LABELS, as Routes), follows spec and label changes and deletions,
// and ignores status-only changes (its own status writes); a router whose
// ClusterRole has no Gateway API rules (OpenShift's) syncs and serves its
// Routes, says in its log why the Gateway API is not watched, and stores
// none of it.
func TestSourceWatchesTheGatewayAPIWithTheRoutersClusterRole(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithGatewayCRDs("standard"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := gatewayclient.NewForConfigOrDie(c.RESTConfig)
	ns := c.CreateNamespace(t, "gw", nil).Name
	createGatewayObjects(t, ctx, c, admin, ns)

	t.Run("without Gateway API rules", func(t *testing.T) {
		var rules []rbacv1.PolicyRule
		for _, r := range deploy.ClusterRoleRules() {
			if r.APIGroups[0] != GatewayGroup {
				rules = append(rules, r)
			}
		}
		sink := &kindCountingSink{Store: store.New(), upserts: map[string]int{}}
		log := &lines{}
		runSource(t, ctx, c.ConfigAs(t, "router-without-gateway", rules), sink, log)
		if got := gatewayNames(sink.Store); got != "[route web]" {
			t.Errorf("stored %s, want the route alone", got)
		}
		_ = sink.Read(func(v store.View) error {
			if v.Namespace(ns) != nil {
				t.Error("namespaces stored without the Gateway API")
			}
			return nil
		})
		if want := "v1/gatewayclasses the router may not list them"; !strings.Contains(log.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, log)
		}

		// The router's ClusterRole gets the Gateway API's rules: the
		// router looks again and watches it, without a restart.
		role, err := c.Kube.RbacV1().ClusterRoles().Get(ctx, "router-without-gateway", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules = deploy.ClusterRoleRules()
		if _, err := c.Kube.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := "[class haproxy gateway gw httproute web [a.example.com] tlsroute t grant g route web]"
		for gatewayNames(sink.Store) != want {
			if ctx.Err() != nil {
				t.Fatalf("after the grant: stored %s, want %s; log:\n%s", gatewayNames(sink.Store), want, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := strings.Count(log.String(), "Gateway API objects are not watched"); n != 1 {
			t.Errorf("said %d times that the Gateway API is not watched", n)
		}
		if !tlsRoutesServed(sink.Store) {
			t.Error("TLSRoutes watched since the grant, not said to the store")
		}
	})

	t.Run("without TLSRoutes", func(t *testing.T) {
		// A ClusterRole without tlsroutes (as where the API server does
		// not serve them): the rest is watched, the store told that
		// TLSRoutes are not (GatewayClasses then claim no TLSRoute).
		var rules []rbacv1.PolicyRule
		for _, r := range deploy.ClusterRoleRules() {
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool { return strings.HasPrefix(res, "tlsroutes") })
			rules = append(rules, r)
		}
		sink := &kindCountingSink{Store: store.New(), upserts: map[string]int{}}
		runSource(t, ctx, c.ConfigAs(t, "router-without-tlsroutes", rules), sink, &lines{})
		if got, want := gatewayNames(sink.Store), "[class haproxy gateway gw httproute web [a.example.com] grant g route web]"; got != want {
			t.Errorf("stored %s, want %s", got, want)
		}
		if tlsRoutesServed(sink.Store) {
			t.Error("TLSRoutes said to be served")
		}
	})

	sink := &kindCountingSink{Store: store.New(), upserts: map[string]int{}}
	log := &lines{}
	runSource(t, ctx, c.ConfigAs(t, "router", deploy.ClusterRoleRules()), sink, log)
	want := "[class haproxy gateway gw httproute web [a.example.com] tlsroute t grant g route web]"
	if got := gatewayNames(sink.Store); got != want {
		t.Fatalf("stored %s, want %s; log:\n%s", got, want, log)
	}
	if !tlsRoutesServed(sink.Store) {
		t.Error("TLSRoutes watched, not said to the store")
	}
	// Every namespace, with its labels: listeners select routes' namespaces by them.
	_ = sink.Read(func(v store.View) error {
		if n := v.Namespace(ns); n == nil || n.Labels["kubernetes.io/metadata.name"] != ns {
			t.Errorf("namespace %s not stored with its labels: %+v", ns, n)
		}
		if v.Namespace("kube-system") == nil {
			t.Error("namespace kube-system not stored")
		}
		return nil
	})
	waitFor := func(what, want string) {
		t.Helper()
		for gatewayNames(sink.Store) != want {
			if ctx.Err() != nil {
				t.Fatalf("%s: stored %s, want %s", what, gatewayNames(sink.Store), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// A status write, then a spec change, of one HTTPRoute: the spec
	// change alone reaches the store.
	before := sink.count(&gatewayv1.HTTPRoute{})
	hr, err := admin.GatewayV1().HTTPRoutes(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hr.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"},
		ControllerName: "haproxy.router.openshift.io/gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
			LastTransitionTime: metav1.Now(), ObservedGeneration: hr.Generation}}}}
	if hr, err = admin.GatewayV1().HTTPRoutes(ns).UpdateStatus(ctx, hr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "b.example.com")
	if _, err = admin.GatewayV1().HTTPRoutes(ns).Update(ctx, hr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want = "[class haproxy gateway gw httproute web [a.example.com b.example.com] tlsroute t grant g route web]"
	waitFor("the HTTPRoute's new hostname", want)
	if got := sink.count(&gatewayv1.HTTPRoute{}); got != before+1 {
		t.Errorf("%d HTTPRoute upserts for a status write and a spec change, want 1", got-before)
	}

	// The other Gateway joins the shard; the TLSRoute is deleted.
	other, err := admin.GatewayV1().Gateways(ns).Get(ctx, "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Labels["shard"] = "a"
	if _, err := admin.GatewayV1().Gateways(ns).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.GatewayV1().TLSRoutes(ns).Delete(ctx, "t", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the relabelled Gateway and the deleted TLSRoute",
		"[class haproxy gateway gw gateway other httproute web [a.example.com b.example.com] grant g route web]")
}
