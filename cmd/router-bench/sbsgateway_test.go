package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/test/kubetest"
)

// The HTTPRoutes of BenchmarkDataPlaneSideBySide with
// ROUTER_BENCH_SIDEBYSIDE_HTTPROUTES set: our router measured on HTTPRoutes
// next to our router on Routes, in one run, the same way (cluster mode,
// status writes on). A namespace of its own holds, for i in 0..N-1,
// Service s<i>, its EndpointSlice (the backend Route r<i> has) and
// HTTPRoute r<i> (hostname r<i>.bench.test, one rule to s<i>:80) on
// Gateway "all" (an HTTP listener on port 80 without a hostname) of
// GatewayClass sbsGatewayClassAll, of this router's default controller
// name; HTTPRoute r0 is on Gateway "one" of class sbsGatewayClassOne too,
// whose controller name (ROUTER_GATEWAY_CONTROLLER_NAME) the 1-route
// router has: "gw-1" serves r0 alone, "gw-N" every HTTPRoute, each
// writing its own status.parents entries. The routers on HTTPRoutes are
// started with --namespace of that namespace, those on Routes with the
// Routes' one.
const (
	sbsGatewayClassAll   = "bench-all"
	sbsGatewayClassOne   = "bench-one"
	sbsGatewayControlAll = "haproxy.router.openshift.io/gateway-controller"
	sbsGatewayControlOne = "bench.test/gateway-one"
)

// sbsGateway is what a router on HTTPRoutes has of the fixture: the
// client that makes them, its controller name, the Gateway churned
// HTTPRoutes attach to.
type sbsGateway struct {
	client     gatewayclient.Interface
	controller string
}

// createGatewayFixture creates in ns the GatewayClasses, the Gateways and
// the HTTPRoutes r0 … r<n-1> with their Services and EndpointSlices.
func createGatewayFixture(b *testing.B, ctx context.Context, c *kubetest.Cluster, gc gatewayclient.Interface, ns string, n int, ips []string) {
	b.Helper()
	for class, controller := range map[string]string{sbsGatewayClassAll: sbsGatewayControlAll, sbsGatewayClassOne: sbsGatewayControlOne} {
		if _, err := gc.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}, metav1.CreateOptions{}); err != nil {
			b.Fatalf("GatewayClass %s: %v", class, err)
		}
	}
	for name, class := range map[string]string{"all": sbsGatewayClassAll, "one": sbsGatewayClassOne} {
		if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: []gatewayv1.Listener{
				{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatalf("Gateway %s: %v", name, err)
		}
	}
	createInParallel(b, ctx, n, "HTTPRoutes", func(i int) error {
		parents := []string{"all"}
		if i == 0 {
			parents = append(parents, "one")
		}
		_, err := createHTTPRouteObjects(ctx, c, gc, ns, routeName(i), fmt.Sprintf("s%d", i), ips[i%len(ips)], parents)
		return err
	})
}

// createHTTPRouteObjects creates in ns Service svcName, its EndpointSlice
// and HTTPRoute name (hostname name.bench.test) on the Gateways parents,
// and returns when the HTTPRoute's create was sent.
func createHTTPRouteObjects(ctx context.Context, c *kubetest.Cluster, gc gatewayclient.Interface, ns, name, svcName, ip string, parents []string) (time.Time, error) {
	if err := createServiceObjects(ctx, c, ns, svcName, ip); err != nil {
		return time.Time{}, err
	}
	hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gatewayv1.HTTPRouteSpec{
		Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(name + ".bench.test")},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svcName), Port: ptr.To[gatewayv1.PortNumber](80)}}}}}},
	}}
	for _, p := range parents {
		hr.Spec.ParentRefs = append(hr.Spec.ParentRefs, gatewayv1.ParentReference{Name: gatewayv1.ObjectName(p)})
	}
	t0 := time.Now()
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, hr, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("HTTPRoute %s: %w", name, err)
	}
	return t0, nil
}

// createServiceObjects creates in ns Service svcName and its EndpointSlice
// (one ready endpoint, ip:sbsBackendPort).
func createServiceObjects(ctx context.Context, c *kubetest.Cluster, ns, svcName, ip string) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svcName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(sbsBackendPort)}}}}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service %s: %w", svcName, err)
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svcName + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](sbsBackendPort)}},
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpoint slice %s: %w", eps.Name, err)
	}
	return nil
}

// acceptedByController counts, per controller name, the HTTPRoutes of ns
// whose status has a parent entry of that controller with Accepted=True.
func acceptedByController(ctx context.Context, gc gatewayclient.Interface, ns string) (map[string]int, error) {
	out := map[string]int{}
	opts := metav1.ListOptions{Limit: 2000}
	for {
		list, err := gc.GatewayV1().HTTPRoutes(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, hr := range list.Items {
			seen := map[string]bool{}
			for _, p := range hr.Status.Parents {
				c := string(p.ControllerName)
				if !seen[c] && metaConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) {
					seen[c] = true
					out[c]++
				}
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func metaConditionTrue(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// createChurnObjects creates churn route c<j> of r's kind in r's namespace
// (sbsRouteChurn), and returns when the route's create was sent.
func createChurnObjects(ctx context.Context, c *kubetest.Cluster, r *sbsRouter, j int, ip string) (time.Time, error) {
	if r.gateway == nil {
		return createChurnRoute(ctx, c, r.ns, j, ip)
	}
	return createHTTPRouteObjects(ctx, c, r.gateway.client, r.ns, churnRouteName(j), churnRouteName(j), ip, []string{"all"})
}

// deleteChurnObjects deletes churn route c<j> of r's kind, then its Service
// and EndpointSlice, and returns when the route's delete was sent.
func deleteChurnObjects(ctx context.Context, c *kubetest.Cluster, r *sbsRouter, j int) (time.Time, error) {
	if r.gateway == nil {
		return deleteChurnRoute(ctx, c, r.ns, j)
	}
	name := churnRouteName(j)
	t0 := time.Now()
	if err := r.gateway.client.GatewayV1().HTTPRoutes(r.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("HTTPRoute %s: %w", name, err)
	}
	return t0, deleteServiceObjects(ctx, c, r.ns, name)
}

// goneStatus is what r answers for a route deleted: 503 (no route), 404
// for an HTTPRoute's hostname on a Gateway's listener without a hostname
// (the Gateway API's answer).
func (r *sbsRouter) goneStatus() int {
	if r.gateway != nil {
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// startGatewaySideBySide starts our router on the HTTPRoutes of ns: "gw-1"
// with the controller name of Gateway "one" (HTTPRoute r0 alone), "gw-N"
// with the default one.
func startGatewaySideBySide(b *testing.B, routerBin, haproxyBin, kubeconfig, ns string, routes int, gc gatewayclient.Interface) (*sbsRouter, error) {
	controller := sbsGatewayControlAll
	if routes == 1 {
		controller = sbsGatewayControlOne
	}
	env := []string{"ROUTE_LABELS=", fmt.Sprintf("ROUTER_SERVICE_NAME=gw-%d", routes), "ROUTER_UPDATE_STATUS=true",
		"ROUTER_SERVICE_NAMESPACE=" + ns, "ROUTER_GATEWAY_CONTROLLER_NAME=" + controller}
	if threads := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_THREADS"); threads != "" {
		env = append(env, "ROUTER_THREADS="+threads)
	}
	r, err := startOurSideBySide(b, routerBin, haproxyBin, kubeconfig, ns, routes, env)
	if err != nil {
		return nil, err
	}
	r.Name = fmt.Sprintf("gw-%d", routes)
	r.ns = ns
	r.gateway = &sbsGateway{client: gc, controller: controller}
	return r, nil
}
