package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/test/kubetest"
)

// authzWebhook is kube-apiserver's authorization webhook of
// TestKubeExternalCertificateChecksFailSafe. For the router's identity it
// grants the secrets of namespace held while healthy and fails (HTTP 500)
// otherwise, and answers about the secrets of namespace flood only after
// 15 seconds (the router gives up first); everything else it leaves to
// RBAC, at once.
type authzWebhook struct {
	routerUser, held, flood string
	failing                 atomic.Bool
}

func (h *authzWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sar authzv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ra := sar.Spec.ResourceAttributes; sar.Spec.User == h.routerUser && ra != nil && ra.Resource == "secrets" {
		switch ra.Namespace {
		case h.held:
			if h.failing.Load() {
				http.Error(w, "authorizer unavailable", http.StatusInternalServerError)
				return
			}
			sar.Status.Allowed, sar.Status.Reason = true, "the test's webhook grants it"
		case h.flood:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(15 * time.Second):
			}
		}
	}
	sar.APIVersion, sar.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&sar)
}

// startAuthzWebhook serves h on loopback until the test ends; it returns
// its URL.
func startAuthzWebhook(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// TestKubeExternalCertificateChecksFailSafe: the permission checks of
// external certificates against a kube-apiserver whose authorization
// webhook fails for one tenant's secret and is slow for another tenant's
// hundreds of references. A route whose check fails keeps its host (a newer
// route of another namespace is refused) and is served as before; a router
// started meanwhile holds the host for it without serving it; a third
// tenant's routes are served and admitted promptly; /metrics with a bearer
// token answers; once the webhook recovers the route is served with its
// secret's certificate.
func TestKubeExternalCertificateChecksFailSafe(t *testing.T) {
	// The cluster is the test's own: fixed namespace names.
	const routerNS, held, thief, quiet, flood = "fs-router", "fs-held", "fs-thief", "fs-quiet", "fs-flood"
	sa := "system:serviceaccount:" + routerNS + ":router"
	hook := &authzWebhook{routerUser: sa, held: held, flood: flood}
	c := kubetest.Start(t, kubetest.WithAuthorizationWebhook(startAuthzWebhook(t, hook)))
	for _, ns := range []string{routerNS, held, thief, quiet, flood} {
		c.CreateNamespace(t, ns, nil)
	}
	netns := kubetest.NewNetNS(t)
	web := netns.StartBackend(t, netns.IP(), 8080, "pod-held")
	thiefWeb := netns.StartBackend(t, netns.IP(), 8081, "pod-thief")
	pairs := issuePairs(t, "*.example.com", "held one", "quiet one")

	routerSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: "router", Namespace: routerNS}
	grant(t, c, "", "fs-router", deploy.ClusterRoleRules(), routerSubject)
	grant(t, c, "", "fs-router-monitoring", []rbacv1.PolicyRule{{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routers/metrics"}, Verbs: []string{"get"}}},
		rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + routerNS})
	// Scrapers of their own each: a cached review would not ask the API.
	var scrapers []string
	for i := 0; i < 3; i++ {
		scrapers = append(scrapers, serviceAccountToken(t, c, routerNS, fmt.Sprint("prom", i)))
	}
	// quiet grants its secret with RBAC; held's comes from the webhook
	// only, so its failure leaves the permission unknown.
	grant(t, c, quiet, "router-reads-secrets", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"get", "list", "watch"}, ResourceNames: []string{"quiet-cert"}}}, routerSubject)

	secret := func(ns, name string, i int) {
		_, err := c.Kube.CoreV1().Secrets(ns).Create(kctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: []byte(pairs[i].CertPEM), corev1.TLSPrivateKeyKey: []byte(pairs[i].KeyPEM)}}, metav1.CreateOptions{})
		must(t, err)
	}
	route := func(ns, name, host, service, secret string) {
		r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: routev1.RouteSpec{Host: host, To: routev1.RouteTargetReference{Kind: "Service", Name: service},
				TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}}}
		if secret != "" {
			r.Spec.TLS.ExternalCertificate = &routev1.LocalObjectReference{Name: secret}
		}
		_, err := c.Routes.RouteV1().Routes(ns).Create(kctx(t), r, metav1.CreateOptions{})
		must(t, err)
	}
	for _, ns := range []string{held, quiet} {
		kubeService(t, c, ns, "web", web)
	}
	kubeService(t, c, thief, "web", thiefWeb)
	secret(held, "held-cert", 0)
	secret(quiet, "quiet-cert", 1)
	route(held, "ext", "held.example.com", "web", "held-cert")

	kubeconfig := impersonatingKubeconfig(t, c, sa)
	a := startKubeRouter(t, kubeconfig, map[string]string{"ROUTER_SERVICE_NAME": "fs-a"})
	expectCN(t, a, "held.example.com", "held one")

	// The webhook fails from now on; a changed route is checked again.
	hook.failing.Store(true)
	touchRoute(t, c, held, "ext")
	expectLogLineWithin(t, a, 20*time.Second, "could not be checked", held+"/held-cert")
	time.Sleep(time.Second)
	route(thief, "ext", "held.example.com", "web", "")
	for i := 0; i < 300; i++ {
		route(flood, fmt.Sprint("r", i), fmt.Sprintf("r%d.flood.example.com", i), "web", fmt.Sprint("s", i))
	}

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b := startKubeRouter(t, kubeconfig, map[string]string{"ROUTER_SERVICE_NAME": "fs-b", "ROUTER_LISTEN_ADDR": metricsAddr})

	t.Run("/metrics with a bearer token answers while the checks of a starting router wait", func(t *testing.T) {
		// The first configuration is written once the first checks
		// were waited for (FirstWait); hundreds wait still.
		expectLogLineWithin(t, b, 30*time.Second, `"configuration loaded"`)
		for _, token := range scrapers {
			st, body, err := bearerGet(metricsAddr, "/metrics", token)
			if err != nil || st != 200 {
				t.Errorf("/metrics: %d %.200q %v", st, body, err)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("a route whose check fails keeps its host and what was served", func(t *testing.T) {
		expectLogLineWithin(t, b, 20*time.Second, "could not be checked", held+"/held-cert")
		ingressOf(t, c, thief, "ext", "fs-a", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		ingressOf(t, c, thief, "ext", "fs-b", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		ingressOf(t, c, held, "ext", "fs-a", admitted(corev1.ConditionTrue, ""))
		if cn, err := servedCN(a, "held.example.com"); err != nil || cn != "held one" {
			t.Errorf("router a: held.example.com %q %v, want the certificate it served", cn, err)
		}
		for name, r := range map[string]*router{"a": a, "b": b} {
			if resp, err := r.httpsGet("held.example.com", "/"); err == nil && resp.backend() == "pod-thief" {
				t.Errorf("router %s serves held.example.com from the other namespace's route", name)
			}
		}
		// Unlike OpenShift's router, which stays not ready, it serves.
		if st, body, err := bearerGet(metricsAddr, "/healthz/ready", ""); err != nil || st != 200 {
			t.Errorf("router b /healthz/ready: %d %.200q %v", st, body, err)
		}
		if line := logLine(b, `route="`+held+`/ext"`, "ExternalCertificateValidationFailed"); line != "" {
			t.Errorf("router b rejected the route whose check failed: %s", line)
		}
	})
	t.Run("another tenant's routes are served promptly while hundreds of checks wait", func(t *testing.T) {
		began := time.Now()
		route(quiet, "ext", "quiet.example.com", "web", "quiet-cert")
		route(quiet, "plain", "plain.example.com", "web", "")
		ingressOf(t, c, quiet, "plain", "fs-b", admitted(corev1.ConditionTrue, ""))
		ingressOf(t, c, quiet, "ext", "fs-b", admitted(corev1.ConditionTrue, ""))
		expectCN(t, b, "quiet.example.com", "quiet one")
		t.Logf("quiet's routes admitted and served in %v", time.Since(began).Round(time.Millisecond))
	})
	t.Run("after recovery the route is served with its secret's certificate", func(t *testing.T) {
		hook.failing.Store(false)
		eventually(t, 45*time.Second, "router b serves held.example.com", func() error {
			if cn, err := servedCN(b, "held.example.com"); err != nil || cn != "held one" {
				return fmt.Errorf("%q %v", cn, err)
			}
			return nil
		})
		ingressOf(t, c, held, "ext", "fs-b", admitted(corev1.ConditionTrue, ""))
		ingressOf(t, c, thief, "ext", "fs-b", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
	})
}

// grant gives subject the rules: a Role and RoleBinding in ns, or with ns
// "" a ClusterRole and ClusterRoleBinding (in a cluster of the test's own).
func grant(t *testing.T, c *kubetest.Cluster, ns, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	var err error
	if ns == "" {
		ref.Kind = "ClusterRole"
		if _, err = c.Kube.RbacV1().ClusterRoles().Create(kctx(t), &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(kctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
		}
	} else if _, err = c.Kube.RbacV1().Roles(ns).Create(kctx(t), &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
		_, err = c.Kube.RbacV1().RoleBindings(ns).Create(kctx(t), &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	}
	must(t, err)
}
