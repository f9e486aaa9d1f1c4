package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/openshift-router-go/router/test/kubetest"
)

// Tests in this file run the router against a real kube-apiserver + etcd
// (test/kubetest) with backends on test hosts in a network namespace.

func kctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// touchRoute changes an annotation of route ns/name, so that the router
// looks at it again; the router may write its status meanwhile, so a
// conflict is retried.
func touchRoute(t *testing.T, c *kubetest.Cluster, ns, name string) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rt, err := c.Routes.RouteV1().Routes(ns).Get(kctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rt.Annotations = map[string]string{"touched": "yes"}
		_, err = c.Routes.RouteV1().Routes(ns).Update(kctx(t), rt, metav1.UpdateOptions{})
		return err
	}))
}

// kubeService creates a Service and one EndpointSlice holding the backends.
func kubeService(t *testing.T, c *kubetest.Cluster, ns, name string, backends ...*kubetest.Backend) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}},
	}
	if _, err := c.Kube.CoreV1().Services(ns).Create(kctx(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setEndpoints(t, c, ns, name, backends...)
}

// setEndpoints creates or replaces the service's EndpointSlice (all
// backends must share a port).
func setEndpoints(t *testing.T, c *kubetest.Cluster, ns, name string, backends ...*kubetest.Backend) {
	t.Helper()
	port := int32(8080)
	if len(backends) > 0 {
		port = int32(backends[0].Port)
	}
	portName := "web"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-slice", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, b := range backends {
		if int32(b.Port) != port {
			t.Fatalf("backends of one slice must share a port")
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{b.IP}})
	}
	api := c.Kube.DiscoveryV1().EndpointSlices(ns)
	old, err := api.Get(kctx(t), slice.Name, metav1.GetOptions{})
	if err == nil {
		slice.ResourceVersion = old.ResourceVersion
		_, err = api.Update(kctx(t), slice, metav1.UpdateOptions{})
	} else {
		_, err = api.Create(kctx(t), slice, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func kubeRoute(t *testing.T, c *kubetest.Cluster, ns, name, host, service string, labels map[string]string) *routev1.Route {
	t.Helper()
	r := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       routev1.RouteSpec{Host: host, To: routev1.RouteTargetReference{Kind: "Service", Name: service}},
	}
	out, err := c.Routes.RouteV1().Routes(ns).Create(kctx(t), r, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ingressOf returns the status entry of routerName, waiting for it.
func ingressOf(t *testing.T, c *kubetest.Cluster, ns, name, routerName string, ok func(routev1.RouteIngress) error) routev1.RouteIngress {
	t.Helper()
	var found routev1.RouteIngress
	eventually(t, 15*time.Second, fmt.Sprintf("status of %s/%s for router %s", ns, name, routerName), func() error {
		r, err := c.Routes.RouteV1().Routes(ns).Get(kctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, ing := range r.Status.Ingress {
			if ing.RouterName == routerName {
				found = ing
				return ok(ing)
			}
		}
		return fmt.Errorf("no entry for %s in %+v", routerName, r.Status.Ingress)
	})
	return found
}

func admitted(want corev1.ConditionStatus, reason string) func(routev1.RouteIngress) error {
	return func(ing routev1.RouteIngress) error {
		for _, c := range ing.Conditions {
			if c.Type == routev1.RouteAdmitted {
				if c.Status != want || c.Reason != reason {
					return fmt.Errorf("Admitted=%s reason %q message %q, want %s %q", c.Status, c.Reason, c.Message, want, reason)
				}
				return nil
			}
		}
		return fmt.Errorf("no Admitted condition")
	}
}

// counts sends n requests and counts the answering backends.
func counts(t *testing.T, r *router, host string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		resp, err := r.httpGet(host, "/")
		if err != nil {
			got["error"]++
			continue
		}
		if resp.Status != 200 {
			got[fmt.Sprint(resp.Status)]++
			continue
		}
		got[resp.backend()]++
	}
	return got
}

func TestKubeRouteLifecycle(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	ip2 := net.AddAddress(t)
	b1 := net.StartBackend(t, net.IP(), 8080, "pod-1")
	b2 := net.StartBackend(t, ip2, 8080, "pod-2")
	ns := c.CreateNamespace(t, "life-", nil).Name
	kubeService(t, c, ns, "web", b1)

	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_CANONICAL_HOSTNAME": "router.apps.example.com"})
	web := kubeRoute(t, c, ns, "web", "web.example.com", "web", nil)

	t.Run("a created route is served and admitted", func(t *testing.T) {
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("web.example.com", "/") }, "pod-1")
		ing := ingressOf(t, c, ns, "web", "public", admitted(corev1.ConditionTrue, ""))
		if ing.Host != "web.example.com" || ing.RouterCanonicalHostname != "router.apps.example.com" || ing.WildcardPolicy != routev1.WildcardPolicyNone {
			t.Errorf("status entry %+v", ing)
		}
	})
	t.Run("scaling the EndpointSlice changes the servers", func(t *testing.T) {
		setEndpoints(t, c, ns, "web", b1, b2)
		eventually(t, 10*time.Second, "both pods receive traffic", func() error {
			if got := counts(t, r, "web.example.com", 20); got["pod-1"] == 0 || got["pod-2"] == 0 {
				return fmt.Errorf("got %v", got)
			}
			return nil
		})
		setEndpoints(t, c, ns, "web", b2)
		eventually(t, 10*time.Second, "only pod-2 receives traffic", func() error {
			if got := counts(t, r, "web.example.com", 20); got["pod-2"] != 20 {
				return fmt.Errorf("got %v", got)
			}
			return nil
		})
	})
	t.Run("a claimed host is refused with HostAlreadyClaimed in status", func(t *testing.T) {
		// Creation timestamps have a one-second resolution and equal
		// ones are ordered by UID: make the claimant visibly younger.
		time.Sleep(time.Until(web.CreationTimestamp.Add(1100 * time.Millisecond)))
		kubeRoute(t, c, ns, "web-copy", "web.example.com", "web", nil)
		ing := ingressOf(t, c, ns, "web-copy", "public", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		if !strings.Contains(ing.Conditions[0].Message, "route web ") {
			t.Errorf("message does not name the holder: %q", ing.Conditions[0].Message)
		}
	})
	t.Run("a host held in another namespace is refused without naming the holder", func(t *testing.T) {
		other := c.CreateNamespace(t, "intruder-", nil).Name
		kubeRoute(t, c, other, "grab", "web.example.com", "web", nil)
		ing := ingressOf(t, c, other, "grab", "public", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		if msg := ing.Conditions[0].Message; strings.Contains(msg, ns) || strings.Contains(msg, "route web ") {
			t.Errorf("status of another tenant's route names the holder %s/web: %q", ns, msg)
		}
		expectLogLine(t, r, `route="`+other+`/grab"`, `reason="HostAlreadyClaimed"`, `holder="`+ns+`/web"`)
		if err := c.Routes.RouteV1().Routes(other).Delete(kctx(t), "grab", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("deleting the route stops it", func(t *testing.T) {
		if err := c.Routes.RouteV1().Routes(ns).Delete(kctx(t), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The younger claimant takes the host over.
		ingressOf(t, c, ns, "web-copy", "public", admitted(corev1.ConditionTrue, ""))
		if err := c.Routes.RouteV1().Routes(ns).Delete(kctx(t), "web-copy", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expectStatus(t, 10*time.Second, func() (response, error) { return r.httpGet("web.example.com", "/") }, 503)
	})
}

func TestKubeShardingByRouteAndNamespaceLabels(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	nsA := c.CreateNamespace(t, "shard-a-", map[string]string{"team": "a"}).Name
	nsB := c.CreateNamespace(t, "shard-b-", map[string]string{"team": "b"}).Name
	for _, ns := range []string{nsA, nsB} {
		kubeService(t, c, ns, "web", b)
	}
	kubeRoute(t, c, nsA, "labelled", "labelled-"+nsA+".example.com", "web", map[string]string{"shard": "internal"})
	kubeRoute(t, c, nsA, "plain", "plain-"+nsA+".example.com", "web", nil)
	kubeRoute(t, c, nsB, "plain", "plain-"+nsB+".example.com", "web", nil)

	t.Run("ROUTE_LABELS selects exactly the labelled routes", func(t *testing.T) {
		r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTE_LABELS": "shard=internal", "ROUTER_SERVICE_NAME": "internal"})
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("labelled-"+nsA+".example.com", "/") }, "pod")
		for _, h := range []string{"plain-" + nsA + ".example.com", "plain-" + nsB + ".example.com"} {
			if resp, err := r.httpGet(h, "/"); err != nil || resp.Status != 503 {
				t.Errorf("%s served by the internal shard: %v %v", h, resp.Status, err)
			}
		}
	})
	t.Run("NAMESPACE_LABELS selects namespaces and follows relabelling", func(t *testing.T) {
		r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"NAMESPACE_LABELS": "team=a", "ROUTER_SERVICE_NAME": "team-a"})
		hostA, hostB := "plain-"+nsA+".example.com", "plain-"+nsB+".example.com"
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet(hostA, "/") }, "pod")
		if resp, err := r.httpGet(hostB, "/"); err != nil || resp.Status != 503 {
			t.Fatalf("namespace b served: %v %v", resp.Status, err)
		}
		relabel(t, c, nsB, "a")
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet(hostB, "/") }, "pod")
		relabel(t, c, nsA, "c")
		expectStatus(t, 10*time.Second, func() (response, error) { return r.httpGet(hostA, "/") }, 503)
		if resp, err := r.httpGet(hostB, "/"); err != nil || resp.Status != 200 {
			t.Fatalf("namespace b lost: %v %v", resp.Status, err)
		}
		relabel(t, c, nsA, "a")
	})
}

func relabel(t *testing.T, c *kubetest.Cluster, ns, team string) {
	t.Helper()
	n, err := c.Kube.CoreV1().Namespaces().Get(kctx(t), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["team"] = team
	if _, err := c.Kube.CoreV1().Namespaces().Update(kctx(t), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestKubeTwoRoutersKeepTheirOwnStatus(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	ns := c.CreateNamespace(t, "two-", nil).Name
	kubeService(t, c, ns, "web", b)
	kubeRoute(t, c, ns, "web", "two-"+ns+".example.com", "web", nil)
	r1 := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_SERVICE_NAME": "router-one"})
	r2 := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_SERVICE_NAME": "router-two", "ROUTER_CANONICAL_HOSTNAME": "two.example.com"})
	silent := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_SERVICE_NAME": "silent", "ROUTER_UPDATE_STATUS": "false"})
	for _, r := range []*router{r1, r2, silent} {
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("two-"+ns+".example.com", "/") }, "pod")
	}
	ingressOf(t, c, ns, "web", "router-one", admitted(corev1.ConditionTrue, ""))
	two := ingressOf(t, c, ns, "web", "router-two", admitted(corev1.ConditionTrue, ""))
	if two.RouterCanonicalHostname != "two.example.com" {
		t.Errorf("router-two entry %+v", two)
	}
	// Both entries stay; nothing keeps rewriting them.
	route, err := c.Routes.RouteV1().Routes(ns).Get(kctx(t), "web", metav1.GetOptions{})
	must(t, err)
	time.Sleep(3 * time.Second)
	later, err := c.Routes.RouteV1().Routes(ns).Get(kctx(t), "web", metav1.GetOptions{})
	must(t, err)
	if len(later.Status.Ingress) != 2 {
		t.Fatalf("entries %+v, want router-one and router-two only (ROUTER_UPDATE_STATUS=false writes none)", later.Status.Ingress)
	}
	if later.ResourceVersion != route.ResourceVersion {
		t.Errorf("status rewritten although nothing changed (resourceVersion %s -> %s)", route.ResourceVersion, later.ResourceVersion)
	}
}

func TestKubeGeneratedHost(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	ns := c.CreateNamespace(t, "gen-", nil).Name
	kubeService(t, c, ns, "web", b)
	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_SUBDOMAIN": "${name}-${namespace}.apps.example.com"})
	kubeRoute(t, c, ns, "nohost", "", "web", nil)
	host := "nohost-" + ns + ".apps.example.com"
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet(host, "/") }, "pod")
	ing := ingressOf(t, c, ns, "nohost", "public", admitted(corev1.ConditionTrue, ""))
	if ing.Host != host {
		t.Fatalf("status host %q, want %q", ing.Host, host)
	}
}

// TestKubeAPIOutage: stopping the API server for 60 s loses no request to
// served routes, and changes made after it returns are picked up; the time
// from its return to a new route served (and admitted) is the figure
// "kube-api-outage-resync".
func TestKubeAPIOutage(t *testing.T) {
	c := kubetest.Start(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	ns := c.CreateNamespace(t, "outage-", nil).Name
	kubeService(t, c, ns, "web", b)
	kubeRoute(t, c, ns, "web", "web.example.com", "web", nil)
	r := startKubeRouter(t, c.KubeconfigPath, nil)
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("web.example.com", "/") }, "pod")

	var sent, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-stop:
				return
			default:
			}
			sent.Add(1)
			if resp, err := r.httpGet("web.example.com", "/"); err != nil || resp.Status != 200 {
				failed.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	must(t, c.StopAPIServer())
	time.Sleep(60 * time.Second)
	must(t, c.StartAPIServer())
	back := time.Now()
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || sent.Load() < 100 {
		t.Fatalf("%d of %d requests failed during the API outage", failed.Load(), sent.Load())
	}
	if exited, err := r.Exited(); exited {
		t.Fatalf("router exited during the outage: %v", err)
	}
	kubeRoute(t, c, ns, "after", "after.example.com", "web", nil)
	// client-go's reflectors retry a lost watch with exponential backoff
	// (up to 30 s, with as much jitter again), so the first relist may come
	// up to a minute after the API server is back — and the Route CRD may
	// still be unavailable then (one more backoff round).
	expectBackend(t, 180*time.Second, func() (response, error) { return r.httpGet("after.example.com", "/") }, "pod")
	figure(t, "kube-api-outage-resync", time.Since(back))
	ingressOf(t, c, ns, "after", "public", admitted(corev1.ConditionTrue, ""))
	t.Logf("FIGURE kube-api-outage-failed-requests: %d of %d", failed.Load(), sent.Load())
}

// TestKubeUnreachableAPIAtStart: a clear error and a non-zero exit.
func TestKubeUnreachableAPIAtStart(t *testing.T) {
	port := freePort(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:%d
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: x
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, port)), 0o600))
	r := startKubeRouter(t, kc, nil)
	eventually(t, 30*time.Second, "router exits", func() error {
		if exited, _ := r.Exited(); !exited {
			return errString("still running")
		}
		return nil
	})
	if _, err := r.Exited(); err == nil || !strings.Contains(r.Log(), "unreachable") {
		t.Fatalf("want a non-zero exit saying the API is unreachable, got %v: %s", err, r.Log())
	}
}

// TestKubeBindPortsAfterSync: until every informer has synced the router is
// not ready; by default HAProxy already answers (503), with
// ROUTER_BIND_PORTS_AFTER_SYNC=true the ports stay closed. The sync is held
// back by an identity that may list routes but not services or endpoint
// slices, until the test grants that.
func TestKubeBindPortsAfterSync(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	ns := c.CreateNamespace(t, "bind-", nil).Name
	kubeService(t, c, ns, "web", b)
	host := "bind-" + ns + ".example.com"
	kubeRoute(t, c, ns, "web", host, "web", nil)

	user := "limited-" + ns
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes/status"}, Verbs: []string{"update"}},
		},
	}
	_, err := c.Kube.RbacV1().ClusterRoles().Create(kctx(t), role, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() { _ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(kctx(t), binding, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	kubeconfig := impersonatingKubeconfig(t, c, user)

	readyStatus := func(addr string) int {
		resp, err := doRequest("http://"+addr+"/healthz/ready", "x", nil)
		if err != nil {
			return 0
		}
		return resp.Status
	}
	early := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	late := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	rEarly := startKubeRouter(t, kubeconfig, map[string]string{"ROUTER_LISTEN_ADDR": early, "ROUTER_SERVICE_NAME": "early"})
	rLate := startKubeRouter(t, kubeconfig, map[string]string{"ROUTER_LISTEN_ADDR": late, "ROUTER_SERVICE_NAME": "late", "ROUTER_BIND_PORTS_AFTER_SYNC": "true"})

	// Before the sync: the default router answers 503, the other refuses.
	expectStatus(t, 15*time.Second, func() (response, error) { return rEarly.httpGet(host, "/") }, 503)
	eventually(t, 15*time.Second, "metrics servers up", func() error {
		if readyStatus(early) != 503 || readyStatus(late) != 503 {
			return fmt.Errorf("ready: early %d late %d, want 503 503", readyStatus(early), readyStatus(late))
		}
		return nil
	})
	if _, err := rLate.httpGet(host, "/"); err == nil {
		t.Fatal("ROUTER_BIND_PORTS_AFTER_SYNC=true: HTTP port bound before the initial sync")
	}

	// Grant the rest: both sync, bind and serve.
	role.Rules = append(role.Rules,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}})
	_, err = c.Kube.RbacV1().ClusterRoles().Update(kctx(t), role, metav1.UpdateOptions{})
	must(t, err)
	for _, r := range []*router{rEarly, rLate} {
		expectBackend(t, 90*time.Second, func() (response, error) { return r.httpGet(host, "/") }, "pod")
	}
	// The new worker may answer a moment before the reload is reported done.
	eventually(t, 10*time.Second, "ready after the sync", func() error {
		if readyStatus(early) != 200 || readyStatus(late) != 200 {
			return fmt.Errorf("ready: early %d late %d, want 200 200", readyStatus(early), readyStatus(late))
		}
		return nil
	})
}
