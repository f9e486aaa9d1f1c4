package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// TestKubeIngressServedWithTheInProcessController: with
// ROUTER_ENABLE_INGRESS=true the router turns an Ingress into owned Routes,
// admits them like any Route (a host an older Route of another namespace
// holds is refused) and serves them through HAProxy with the Ingress
// secret's certificate; Ingress status gets the router's canonical
// hostname; deleting the Ingress deletes its Routes (503).
func TestKubeIngressServedWithTheInProcessController(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	ip2 := net.AddAddress(t)
	b1 := net.StartBackend(t, net.IP(), 8080, "pod-1")
	b2 := net.StartBackend(t, ip2, 8080, "pod-2")
	ns := c.CreateNamespace(t, "ing-", nil).Name
	kubeService(t, c, ns, "web", b1)
	kubeService(t, c, ns, "api", b2)
	ca, err := testcerts.NewCA("ingress CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("shop.example.com", []string{"shop.example.com"}, time.Hour)
	must(t, err)
	_, err = c.Kube.CoreV1().Secrets(ns).Create(kctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(cert.CertPEM), "tls.key": []byte(cert.KeyPEM)},
	}, metav1.CreateOptions{})
	must(t, err)
	holder := c.CreateNamespace(t, "ing-holder-", nil).Name
	kubeService(t, c, holder, "web", b1)
	kubeRoute(t, c, holder, "holder", "taken.example.com", "web", nil)
	time.Sleep(1100 * time.Millisecond) // the Ingress's Routes are visibly younger

	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{
		"ROUTER_ENABLE_INGRESS": "true", "ROUTER_CANONICAL_HOSTNAME": "router.apps.example.com"})

	prefix := networkingv1.PathTypePrefix
	path := func(p, svc string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Name: "web"}}}}
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: networkingv1.IngressSpec{
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
			Rules: []networkingv1.IngressRule{
				{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{path("/", "web"), path("/api", "api")}}}},
				{Host: "taken.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{path("/", "api")}}}},
			},
		},
	}
	_, err = c.Kube.NetworkingV1().Ingresses(ns).Create(kctx(t), ing, metav1.CreateOptions{})
	must(t, err)

	https := func(p string) func() (response, error) {
		return func() (response, error) { return r.httpsGet("shop.example.com", p) }
	}
	resp := expectBackend(t, 20*time.Second, https("/"), "pod-1")
	if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "shop.example.com" {
		t.Fatalf("client saw %v, want the Ingress secret's certificate", subject(resp))
	}
	expectBackend(t, 10*time.Second, https("/api/x"), "pod-2")
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("taken.example.com", "/") }, "pod-1")

	t.Run("the generated Route of a host held in another namespace is refused", func(t *testing.T) {
		list, err := c.Routes.RouteV1().Routes(ns).List(kctx(t), metav1.ListOptions{})
		must(t, err)
		var taken string
		for _, rt := range list.Items {
			if rt.Spec.Host == "taken.example.com" {
				taken = rt.Name
			}
		}
		if taken == "" {
			t.Fatalf("no generated Route for taken.example.com among %d routes", len(list.Items))
		}
		ingressOf(t, c, ns, taken, "public", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
	})
	t.Run("Ingress status lists the router's canonical hostname", func(t *testing.T) {
		eventually(t, 15*time.Second, "ingress status", func() error {
			cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(kctx(t), "shop", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if lb := cur.Status.LoadBalancer.Ingress; len(lb) != 1 || lb[0].Hostname != "router.apps.example.com" {
				return fmt.Errorf("status %+v", lb)
			}
			return nil
		})
	})
	t.Run("a path added and a rotated secret are served", func(t *testing.T) {
		cur, err := c.Kube.NetworkingV1().Ingresses(ns).Get(kctx(t), "shop", metav1.GetOptions{})
		must(t, err)
		cur.Spec.Rules[0].HTTP.Paths = append(cur.Spec.Rules[0].HTTP.Paths, path("/admin", "api"))
		_, err = c.Kube.NetworkingV1().Ingresses(ns).Update(kctx(t), cur, metav1.UpdateOptions{})
		must(t, err)
		expectBackend(t, 15*time.Second, https("/admin"), "pod-2")

		ca2, err := testcerts.NewCA("rotated CA", time.Hour)
		must(t, err)
		cert2, err := ca2.Issue("shop.example.com", []string{"shop.example.com"}, time.Hour)
		must(t, err)
		s, err := c.Kube.CoreV1().Secrets(ns).Get(kctx(t), "shop-tls", metav1.GetOptions{})
		must(t, err)
		s.Data["tls.crt"], s.Data["tls.key"] = []byte(cert2.CertPEM), []byte(cert2.KeyPEM)
		_, err = c.Kube.CoreV1().Secrets(ns).Update(kctx(t), s, metav1.UpdateOptions{})
		must(t, err)
		eventually(t, 15*time.Second, "the rotated certificate is served", func() error {
			resp, err := https("/")()
			if err != nil {
				return err
			}
			if resp.PeerCert == nil || resp.PeerCert.Issuer.CommonName != "rotated CA" {
				return fmt.Errorf("client saw %v issued by %v", subject(resp), resp.PeerCert)
			}
			return nil
		})
	})
	t.Run("deleting the Ingress deletes its Routes", func(t *testing.T) {
		must(t, c.Kube.NetworkingV1().Ingresses(ns).Delete(kctx(t), "shop", metav1.DeleteOptions{}))
		expectStatus(t, 15*time.Second, https("/"), 503)
		eventually(t, 10*time.Second, "no Routes left", func() error {
			list, err := c.Routes.RouteV1().Routes(ns).List(kctx(t), metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(list.Items) != 0 {
				return fmt.Errorf("%d routes left", len(list.Items))
			}
			return nil
		})
		if _, err := c.Routes.RouteV1().Routes(holder).Get(kctx(t), "holder", metav1.GetOptions{}); err != nil {
			t.Errorf("the other namespace's Route: %v", err)
		}
	})
}
