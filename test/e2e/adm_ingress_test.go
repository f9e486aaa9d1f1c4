package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/test/kubetest"
)

// canI asks the API server's authorizer (a SubjectAccessReview, what
// "kubectl auth can-i --as" does) whether service account sa
// ("NAMESPACE/NAME") may verb resource ("secrets", "ingresses/status") of
// group in namespace ns ("" for every namespace).
func canI(t *testing.T, c *kubetest.Cluster, sa, verb, group, resource, ns string) bool {
	t.Helper()
	saNS, saName, _ := strings.Cut(sa, "/")
	res, sub, _ := strings.Cut(resource, "/")
	review, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(kctx(t), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + saNS + ":" + saName,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group,
				Resource: res, Subresource: sub},
		}}, metav1.CreateOptions{})
	must(t, err)
	return review.Status.Allowed
}

// TestAdmRouterIngressControllerHasItsOwnServiceAccount: adm router
// --ingress, applied to a real kube-apiserver, runs the ingress-to-route
// controller as a Deployment of its own under its own service account. The
// API server's authorizer says the router's service account may read no
// Secret, in no namespace, while the controller's may read them all and do
// everything else it needs; the controller run with the Deployment's
// arguments as that identity turns a tenant's TLS Ingress into a Route
// (its certificate copied from the Secret) without a refusal; and the
// router run as its service account refuses a route whose external
// certificate Secret its tenant did not grant it (before, the router's
// cluster-wide Secret access let every such route pass).
func TestAdmRouterIngressControllerHasItsOwnServiceAccount(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "adm-ing-", nil).Name
	tenant := c.CreateNamespace(t, "adm-ing-tenant-", nil).Name
	const name = "edge-ing"
	ingName := deploy.IngressToRouteName(name)
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.ClusterRoleBindingName(ns, name), metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.IngressClusterRoleName+"-"+ns+"-"+ingName, metav1.DeleteOptions{})
	})
	stdout, stderr, err := cli(t, nil, "adm", "router", name, "-n", ns, "--ingress", "--prometheus-service-account=",
		"--kubeconfig", c.KubeconfigPath, "--apply")
	if err != nil {
		t.Fatalf("adm router --ingress --apply: %v\n%s", err, stderr)
	}
	for _, want := range []string{"serviceaccount/" + name + " created", "deployment/" + name + " created",
		"serviceaccount/" + ingName + " created", "deployment/" + ingName + " created",
		"clusterrolebinding/" + deploy.IngressClusterRoleName + "-" + ns + "-" + ingName + " created"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--apply output lacks %q:\n%s", want, stdout)
		}
	}
	routerDep, err := c.Kube.AppsV1().Deployments(ns).Get(kctx(t), name, metav1.GetOptions{})
	must(t, err)
	ingDep, err := c.Kube.AppsV1().Deployments(ns).Get(kctx(t), ingName, metav1.GetOptions{})
	must(t, err)
	routerSA, ingSA := ns+"/"+routerDep.Spec.Template.Spec.ServiceAccountName, ns+"/"+ingDep.Spec.Template.Spec.ServiceAccountName
	if routerSA != ns+"/"+name || ingSA != ns+"/"+ingName {
		t.Fatalf("service accounts: router %s, controller %s", routerSA, ingSA)
	}
	if args := ingDep.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, []string{"ingress-to-route"}) {
		t.Fatalf("controller args %v", args)
	}
	env := podEnv(t, c, routerDep)
	if _, ok := env["ROUTER_ENABLE_INGRESS"]; ok {
		t.Errorf("the router runs the controller in process: ROUTER_ENABLE_INGRESS=%s", env["ROUTER_ENABLE_INGRESS"])
	}

	t.Run("--apply refuses to swap the two service accounts", func(t *testing.T) {
		_, stderr, err := cli(t, nil, "adm", "router", "other", "-n", ns, "--service-account", ingName, "--prometheus-service-account=",
			"--kubeconfig", c.KubeconfigPath, "--apply", "--dry-run")
		if err == nil || !strings.Contains(stderr, "is bound to ClusterRole "+deploy.IngressClusterRoleName) {
			t.Errorf("adm router as the controller's service account: %v %s", err, stderr)
		}
		_, stderr, err = cli(t, nil, "adm", "ingress-to-route", name, "-n", ns, "--kubeconfig", c.KubeconfigPath, "--apply", "--dry-run")
		if err == nil || !strings.Contains(stderr, "is bound to ClusterRole "+deploy.ClusterRoleName) {
			t.Errorf("adm ingress-to-route as the router's service account: %v %s", err, stderr)
		}
	})

	t.Run("the router's service account reads no Secret; the controller's reads them and does its work", func(t *testing.T) {
		if !canI(t, c, routerSA, "list", "route.openshift.io", "routes", "") {
			t.Fatal("the router's service account may not list routes: the review asks about the wrong identity")
		}
		for _, verb := range []string{"get", "list", "watch"} {
			for _, where := range []string{"", ns, tenant, "kube-system"} {
				if canI(t, c, routerSA, verb, "", "secrets", where) {
					t.Errorf("the router's service account may %s secrets in namespace %q", verb, where)
				}
			}
		}
		for _, want := range [][4]string{
			{"get", "", "secrets", ""}, {"list", "", "secrets", ""}, {"watch", "", "secrets", ""},
			{"watch", "networking.k8s.io", "ingresses", ""}, {"list", "networking.k8s.io", "ingressclasses", ""},
			{"update", "networking.k8s.io", "ingresses/status", tenant}, {"list", "", "services", ""},
			{"create", "route.openshift.io", "routes", tenant}, {"update", "route.openshift.io", "routes", tenant},
			{"delete", "route.openshift.io", "routes", tenant}, {"create", "route.openshift.io", "routes/custom-host", tenant},
			{"create", "", "events", tenant}, {"get", "coordination.k8s.io", "leases", ns},
			{"create", "coordination.k8s.io", "leases", ns}, {"update", "coordination.k8s.io", "leases", ns},
		} {
			if !canI(t, c, ingSA, want[0], want[1], want[2], want[3]) {
				t.Errorf("the controller's service account may not %s %s/%s in namespace %q", want[0], want[1], want[2], want[3])
			}
		}
		if canI(t, c, ingSA, "update", "coordination.k8s.io", "leases", "kube-system") {
			t.Error("the controller's service account may update Leases outside its namespace")
		}
	})

	pairs := issuePairs(t, "shop.example.com", "shop")
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: []byte(pairs[0].CertPEM), corev1.TLSPrivateKeyKey: []byte(pairs[0].KeyPEM)}}
	}
	for _, s := range []string{"shop-tls", "not-granted"} {
		_, err := c.Kube.CoreV1().Secrets(tenant).Create(kctx(t), secret(s), metav1.CreateOptions{})
		must(t, err)
	}
	_, err = c.Kube.CoreV1().Services(tenant).Create(kctx(t), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)

	t.Run("the controller, as its service account, turns a TLS Ingress into a Route", func(t *testing.T) {
		ctrl := startIngressToRoute(t, impersonatingKubeconfig(t, c, "system:serviceaccount:"+strings.Replace(ingSA, "/", ":", 1)), ns, "adm-ing")
		prefix := networkingv1.PathTypePrefix
		_, err := c.Kube.NetworkingV1().Ingresses(tenant).Create(kctx(t), &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: tenant},
			Spec: networkingv1.IngressSpec{
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
				Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
					HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
							Port: networkingv1.ServiceBackendPort{Name: "web"}}}}}}}}},
			}}, metav1.CreateOptions{})
		must(t, err)
		eventually(t, 60*time.Second, "the Ingress's Route with the Secret's certificate", func() error {
			list, err := c.Routes.RouteV1().Routes(tenant).List(kctx(t), metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, r := range list.Items {
				if r.Spec.Host == "shop.example.com" && r.Spec.TLS != nil && strings.TrimSpace(r.Spec.TLS.Certificate) == strings.TrimSpace(pairs[0].CertPEM) {
					return nil
				}
			}
			return fmt.Errorf("%d routes, none for shop.example.com with the certificate", len(list.Items))
		})
		if log := ctrl.log.String(); strings.Contains(log, "forbidden") {
			t.Errorf("the API server refused the controller something it needs:\n%s", log)
		}
	})

	t.Run("the router, as its service account, refuses an external certificate it was not granted", func(t *testing.T) {
		delete(env, "ROUTER_LISTEN_ADDR")
		delete(env, "STATS_PORT")
		startKubeRouter(t, impersonatingKubeconfig(t, c, "system:serviceaccount:"+strings.Replace(routerSA, "/", ":", 1)), env)
		_, err := c.Routes.RouteV1().Routes(tenant).Create(kctx(t), &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "ext"},
			Spec: routev1.RouteSpec{Host: "ext.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"},
				TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, ExternalCertificate: &routev1.LocalObjectReference{Name: "not-granted"}}}},
			metav1.CreateOptions{})
		must(t, err)
		ing := ingressOf(t, c, tenant, "ext", name, admitted(corev1.ConditionFalse, "ExternalCertificateValidationFailed"))
		if msg := ing.Conditions[0].Message; !strings.Contains(msg, "permission") {
			t.Errorf("message %q: want the missing permission", msg)
		}
	})
}
