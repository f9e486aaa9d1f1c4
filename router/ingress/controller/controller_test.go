package controller

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/router/ingress"
	"github.com/openshift-router-go/router/test/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

const waitTimeout = 20 * time.Second

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logs) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			return true
		}
	}
	return false
}

// eventually polls cond (bounded by waitTimeout).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %s: %v", what, waitTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ingressFor(ns string, paths ...string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Annotations: map[string]string{"haproxy.router.openshift.io/timeout": "5s"}},
		Spec: networkingv1.IngressSpec{
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{}}}},
		},
	}
	for _, p := range paths {
		ing.Spec.Rules[0].HTTP.Paths = append(ing.Spec.Rules[0].HTTP.Paths, networkingv1.HTTPIngressPath{
			Path: p, PathType: &prefix,
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
		})
	}
	return ing
}

// owned returns "name host+path targetPort cert" of the Routes owned by
// Ingress shop, sorted by path.
func owned(ctx context.Context, c *kubetest.Cluster, ns string) ([]*routev1.Route, error) {
	list, err := c.Routes.RouteV1().Routes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*routev1.Route
	for i := range list.Items {
		if name, ok := OwnerIngress(&list.Items[i]); ok && name == "shop" {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Path < out[j].Spec.Path })
	return out, nil
}

func describeRoutes(rs []*routev1.Route) string {
	var parts []string
	for _, r := range rs {
		port, cert := "", ""
		if r.Spec.Port != nil {
			port = r.Spec.Port.TargetPort.String()
		}
		if r.Spec.TLS != nil {
			cert = string(r.Spec.TLS.Termination) + ":" + r.Spec.TLS.Certificate
		}
		parts = append(parts, fmt.Sprintf("%s%s->%s:%s %s", r.Spec.Host, r.Spec.Path, r.Spec.To.Name, port, cert))
	}
	return strings.Join(parts, ", ")
}

func expectRoutes(t *testing.T, ctx context.Context, c *kubetest.Cluster, ns, want string) []*routev1.Route {
	t.Helper()
	var got []*routev1.Route
	eventually(t, "routes "+want, func() error {
		var err error
		if got, err = owned(ctx, c, ns); err != nil {
			return err
		}
		if d := describeRoutes(got); d != want {
			return fmt.Errorf("got %s", d)
		}
		return nil
	})
	return got
}

func TestControllerKeepsTheRoutesOfAnIngressInSync(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "ingress-", nil).Name
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("CERT1"), "tls.key": []byte("KEY1")},
	}, metav1.CreateOptions{})
	must(t, err)
	// Someone else's Route already has the name the "/" Route would get.
	foreignName := ingress.RouteName(ns, "shop", "shop.example.com", "/")
	_, err = c.Routes.RouteV1().Routes(ns).Create(ctx, &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Name: foreignName},
		Spec:       routev1.RouteSpec{Host: "mine.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "other"}},
	}, metav1.CreateOptions{})
	must(t, err)
	ing, err := c.Kube.NetworkingV1().Ingresses(ns).Create(ctx, ingressFor(ns, "/", "/api"), metav1.CreateOptions{})
	must(t, err)

	l := &logs{}
	ctrl := New(Options{Kube: c.Kube, Routes: c.Routes, Logger: l.logger()})
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("controller did not stop")
		}
	}()

	routes := expectRoutes(t, ctx, c, ns, "shop.example.com/->web:http edge:CERT1, shop.example.com/api->web:http edge:CERT1")
	for _, r := range routes {
		if !strings.HasPrefix(r.Name, "shop-") || len(r.Name) != len("shop-")+5 {
			t.Errorf("route name %q: want shop- and five characters", r.Name)
		}
		if r.Name == foreignName {
			t.Errorf("the controller took the name of a Route it does not own")
		}
		if r.Annotations["haproxy.router.openshift.io/timeout"] != "5s" {
			t.Errorf("route %s annotations %v: want the Ingress's", r.Name, r.Annotations)
		}
		if o := r.OwnerReferences; len(o) != 1 || o[0].UID != ing.UID || o[0].APIVersion != "networking.k8s.io/v1" {
			t.Errorf("route %s ownerReferences %+v: want the Ingress (uid %s)", r.Name, o, ing.UID)
		}
	}

	t.Run("unchanged Routes are left alone", func(t *testing.T) {
		time.Sleep(1500 * time.Millisecond)
		if l.has("Updated the Route") || l.has("Deleted a Route") {
			t.Errorf("the controller rewrote Routes nothing changed: %v", l.lines)
		}
	})
	t.Run("a path added to the Ingress gets a Route", func(t *testing.T) {
		cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
		must(t, err)
		next := ingressFor(ns, "/", "/api", "/admin")
		cur.Spec = next.Spec
		_, err = c.Kube.NetworkingV1().Ingresses(ns).Update(ctx, cur, metav1.UpdateOptions{})
		must(t, err)
		expectRoutes(t, ctx, c, ns, "shop.example.com/->web:http edge:CERT1, shop.example.com/admin->web:http edge:CERT1, shop.example.com/api->web:http edge:CERT1")
	})
	t.Run("an unsupported Exact path is reported in an event on the Ingress", func(t *testing.T) {
		cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
		must(t, err)
		exact := networkingv1.PathTypeExact
		p := cur.Spec.Rules[0].HTTP.Paths[0]
		p.Path, p.PathType = "/exact", &exact
		cur.Spec.Rules[0].HTTP.Paths = append(cur.Spec.Rules[0].HTTP.Paths, p)
		_, err = c.Kube.NetworkingV1().Ingresses(ns).Update(ctx, cur, metav1.UpdateOptions{})
		must(t, err)
		eventually(t, "event IncompleteIngressToRouteRules", func() error {
			evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Reason == "IncompleteIngressToRouteRules" && e.InvolvedObject.Name == "shop" &&
					strings.Contains(e.Message, "Unsupported exact path type in rule at index 0, path index 3") {
					return nil
				}
			}
			return fmt.Errorf("%d events, none about the Exact path", len(evs.Items))
		})
		expectRoutes(t, ctx, c, ns, "shop.example.com/->web:http edge:CERT1, shop.example.com/admin->web:http edge:CERT1, shop.example.com/api->web:http edge:CERT1")
	})
	t.Run("a rotated secret is followed", func(t *testing.T) {
		s, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, "shop-tls", metav1.GetOptions{})
		must(t, err)
		s.Data["tls.crt"], s.Data["tls.key"] = []byte("CERT2"), []byte("KEY2")
		_, err = c.Kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		must(t, err)
		expectRoutes(t, ctx, c, ns, "shop.example.com/->web:http edge:CERT2, shop.example.com/admin->web:http edge:CERT2, shop.example.com/api->web:http edge:CERT2")
	})
	t.Run("a renamed service port is followed", func(t *testing.T) {
		s, err := c.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		must(t, err)
		s.Spec.Ports[0].Name = "web"
		_, err = c.Kube.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{})
		must(t, err)
		expectRoutes(t, ctx, c, ns, "shop.example.com/->web:web edge:CERT2, shop.example.com/admin->web:web edge:CERT2, shop.example.com/api->web:web edge:CERT2")
	})
	t.Run("status lists the canonical hostname of routers that admitted a Route", func(t *testing.T) {
		rs, err := owned(ctx, c, ns)
		must(t, err)
		r := rs[0].DeepCopy()
		r.Status.Ingress = []routev1.RouteIngress{{Host: r.Spec.Host, RouterName: "default", RouterCanonicalHostname: "router-default.apps.example.com",
			Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue}}}}
		_, err = c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx, r, metav1.UpdateOptions{})
		must(t, err)
		eventually(t, "ingress status", func() error {
			cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if lb := cur.Status.LoadBalancer.Ingress; len(lb) != 1 || lb[0].Hostname != "router-default.apps.example.com" {
				return fmt.Errorf("status %+v", lb)
			}
			return nil
		})
	})
	t.Run("a deleted Ingress's Routes are deleted, the other Route stays", func(t *testing.T) {
		must(t, c.Kube.NetworkingV1().Ingresses(ns).Delete(ctx, "shop", metav1.DeleteOptions{}))
		expectRoutes(t, ctx, c, ns, "")
		r, err := c.Routes.RouteV1().Routes(ns).Get(ctx, foreignName, metav1.GetOptions{})
		must(t, err)
		if r.Spec.Host != "mine.example.com" {
			t.Errorf("the foreign Route was changed: %+v", r.Spec)
		}
	})
}

func TestTwoReplicasElectOneLeader(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "ingress-lease-", nil).Name
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	logsOf := map[string]*logs{}
	for _, id := range []string{"a", "b"} {
		l := &logs{}
		logsOf[id] = l
		ctrl := New(Options{Kube: c.Kube, Routes: c.Routes, Logger: l.logger()})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ctrl.RunElected(ctx, LeaseOptions{Namespace: ns, Name: "ingress-to-route", Identity: id,
				LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
		}()
	}
	var leader string
	eventually(t, "one replica leads", func() error {
		lease, err := c.Kube.CoordinationV1().Leases(ns).Get(ctx, "ingress-to-route", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		leader = *lease.Spec.HolderIdentity
		if !logsOf[leader].has("Leading") {
			return fmt.Errorf("leader %s has not started its controller", leader)
		}
		return nil
	})
	other := map[string]string{"a": "b", "b": "a"}[leader]
	eventually(t, "the other replica waits", func() error {
		if !logsOf[other].has("Another replica leads") {
			return fmt.Errorf("replica %s did not see the leader", other)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	if logsOf[other].has("Leading") {
		t.Errorf("both replicas lead")
	}
	cancel()
	wg.Wait()
}

// TestControllerWorksWithTheRBACAdmPrints: the permissions adm
// ingress-to-route grants are enough: the controller, run as that service
// account, creates the Routes of an Ingress, updates its status and holds
// its Lease.
func TestControllerWorksWithTheRBACAdmPrints(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "ingress-rbac-", nil).Name
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	objs, err := deploy.IngressToRouteObjects(deploy.IngressToRouteOptions{Name: "i2r", Namespace: ns, Replicas: 1})
	must(t, err)
	for _, o := range objs {
		var err error
		switch v := o.(type) {
		case *corev1.ServiceAccount:
			_, err = c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			if _, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{}); kerrors.IsAlreadyExists(err) {
				_, err = c.Kube.RbacV1().ClusterRoles().Update(ctx, v, metav1.UpdateOptions{})
			}
		case *rbacv1.ClusterRoleBinding:
			_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), v.Name, metav1.DeleteOptions{})
			})
		case *rbacv1.Role:
			_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, v, metav1.CreateOptions{})
		}
		must(t, err)
	}
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":i2r"}
	kc, err := kubernetes.NewForConfig(cfg)
	must(t, err)
	rc, err := routeclient.NewForConfig(cfg)
	must(t, err)

	_, err = c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("CERT1"), "tls.key": []byte("KEY1")}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Kube.NetworkingV1().Ingresses(ns).Create(ctx, ingressFor(ns, "/"), metav1.CreateOptions{})
	must(t, err)

	l := &logs{}
	ctrl := New(Options{Kube: kc, Routes: rc, Logger: l.logger()})
	done := make(chan error, 1)
	go func() {
		done <- ctrl.RunElected(ctx, LeaseOptions{Namespace: ns, Name: "ingress-to-route", Identity: "only",
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("controller did not stop")
		}
	}()
	rs := expectRoutes(t, ctx, c, ns, "shop.example.com/->web:http edge:CERT1")
	r := rs[0].DeepCopy()
	r.Status.Ingress = []routev1.RouteIngress{{Host: r.Spec.Host, RouterName: "default", RouterCanonicalHostname: "router.example.com",
		Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue}}}}
	_, err = c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	must(t, err)
	eventually(t, "ingress status written with the service account's rights", func() error {
		cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lb := cur.Status.LoadBalancer.Ingress; len(lb) != 1 || lb[0].Hostname != "router.example.com" {
			return fmt.Errorf("status %+v", lb)
		}
		return nil
	})
	for _, line := range []string{"forbidden", "Forbidden"} {
		if l.has(line) {
			t.Errorf("the controller was refused something: %v", l.lines)
		}
	}
}
