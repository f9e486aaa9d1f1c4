package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
)

// controllerProcess is one `openshift-router ingress-to-route` process.
type controllerProcess struct {
	identity string
	cmd      *exec.Cmd
	log      *syncBuffer
	done     chan struct{}
}

// startIngressToRoute starts the built binary's ingress-to-route command
// with a Lease in leaseNS; the test ends it by PID.
func startIngressToRoute(t *testing.T, kubeconfig, leaseNS, identity string) *controllerProcess {
	t.Helper()
	p := &controllerProcess{identity: identity, log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(routerBin, "ingress-to-route", "--kubeconfig", kubeconfig,
		"--lease-namespace", leaseNS, "--identity", identity, "-v", "2")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", identity, p.log.String())
		}
	})
	return p
}

// kill ends the process with SIGKILL (no chance to release the Lease) and
// waits for it.
func (p *controllerProcess) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// wrote reports whether the process's log shows it writing a Route.
func (p *controllerProcess) wrote() bool {
	l := p.log.String()
	return strings.Contains(l, "Created the Route of an Ingress") || strings.Contains(l, "Updated the Route of an Ingress") ||
		strings.Contains(l, "Deleted a Route the Ingress no longer asks for") || strings.Contains(l, "Deleted the Route of a deleted Ingress")
}

// ownedRoutes returns "host+path" of the Routes of ns owned by Ingress name.
func ownedRoutes(t *testing.T, c *kubetest.Cluster, ns, name string) ([]string, error) {
	list, err := c.Routes.RouteV1().Routes(ns).List(kctx(t), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range list.Items {
		for _, o := range r.OwnerReferences {
			if o.Kind == "Ingress" && o.Name == name && o.Controller != nil && *o.Controller {
				out = append(out, r.Spec.Host+r.Spec.Path)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestKubeIngressToRouteReplicasElectOneLeader: two `openshift-router
// ingress-to-route` processes on one cluster: exactly one holds the Lease
// and writes Routes, the other only waits. When the leader is killed
// (SIGKILL: it cannot release the Lease) the other takes over once the
// Lease expires and keeps the Routes in sync with the Ingress.
func TestKubeIngressToRouteReplicasElectOneLeader(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "ing-ha-", nil).Name
	for _, name := range []string{"web", "api"} {
		_, err := c.Kube.CoreV1().Services(ns).Create(kctx(t), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}},
		}, metav1.CreateOptions{})
		must(t, err)
	}
	replicas := map[string]*controllerProcess{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = startIngressToRoute(t, c.KubeconfigPath, ns, id)
	}

	prefix := networkingv1.PathTypePrefix
	path := func(p, svc string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Name: "web"}}}}
	}
	_, err := c.Kube.NetworkingV1().Ingresses(ns).Create(kctx(t), &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{path("/", "web")}}}}}},
	}, metav1.CreateOptions{})
	must(t, err)

	routesAre := func(want ...string) func() error {
		return func() error {
			got, err := ownedRoutes(t, c, ns, "shop")
			if err != nil {
				return err
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				return fmt.Errorf("owned routes %v, want %v", got, want)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, "the Ingress's Route", routesAre("shop.example.com/"))

	holder := func() (string, error) {
		l, err := c.Kube.CoordinationV1().Leases(ns).Get(kctx(t), "ingress-to-route", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "", errors.New("lease not held")
		}
		return *l.Spec.HolderIdentity, nil
	}
	leaderID, err := holder()
	must(t, err)
	leader := replicas[leaderID]
	if leader == nil {
		t.Fatalf("lease held by %q, not one of the replicas", leaderID)
	}
	var other *controllerProcess
	for id, p := range replicas {
		if id != leaderID {
			other = p
		}
	}
	eventually(t, 30*time.Second, "the other replica sees the leader", func() error {
		if !strings.Contains(other.log.String(), "Another replica leads") {
			return errors.New("no \"Another replica leads\" in its log")
		}
		return nil
	})
	eventually(t, 10*time.Second, "the leader logs writing the Route", func() error {
		if !leader.wrote() {
			return fmt.Errorf("the leader %s did not log writing the Route", leaderID)
		}
		return nil
	})
	if other.wrote() || strings.Contains(other.log.String(), "Leading: running") {
		t.Errorf("the replica %s that does not hold the Lease acted", other.identity)
	}

	// The leader dies without releasing the Lease.
	leader.kill()
	eventually(t, 90*time.Second, "the other replica holds the Lease", func() error {
		id, err := holder()
		if err != nil {
			return err
		}
		if id != other.identity {
			return fmt.Errorf("lease held by %s", id)
		}
		return nil
	})

	// The new leader keeps the Routes in sync: a path added, a Route
	// deleted by hand comes back, the Ingress deleted takes its Routes.
	cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(kctx(t), "shop", metav1.GetOptions{})
	must(t, err)
	cur.Spec.Rules[0].HTTP.Paths = append(cur.Spec.Rules[0].HTTP.Paths, path("/api", "api"))
	_, err = c.Kube.NetworkingV1().Ingresses(ns).Update(kctx(t), cur, metav1.UpdateOptions{})
	must(t, err)
	eventually(t, 60*time.Second, "the added path's Route from the new leader", routesAre("shop.example.com/", "shop.example.com/api"))
	// The Route can be visible before the process's log line has been read.
	eventually(t, 10*time.Second, "the new leader logs writing the Route", func() error {
		if !other.wrote() {
			return fmt.Errorf("the new leader %s did not log writing the Route", other.identity)
		}
		return nil
	})
	list, err := c.Routes.RouteV1().Routes(ns).List(kctx(t), metav1.ListOptions{})
	must(t, err)
	for _, r := range list.Items {
		if r.Spec.Path == "/api" {
			must(t, c.Routes.RouteV1().Routes(ns).Delete(kctx(t), r.Name, metav1.DeleteOptions{}))
		}
	}
	eventually(t, 60*time.Second, "the Route deleted by hand recreated", routesAre("shop.example.com/", "shop.example.com/api"))

	must(t, c.Kube.NetworkingV1().Ingresses(ns).Delete(kctx(t), "shop", metav1.DeleteOptions{}))
	eventually(t, 60*time.Second, "the deleted Ingress's Routes gone", func() error {
		got, err := ownedRoutes(t, c, ns, "shop")
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if len(got) != 0 {
			return fmt.Errorf("routes left: %v", got)
		}
		return nil
	})
}
