package e2e

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// Tests of spec.tls.externalCertificate (router/extcert): the certificate
// of an edge route comes from a kubernetes.io/tls Secret of its namespace.

// secretYAML is a Secret manifest with tls.crt and tls.key.
func secretYAML(ns, name string, typ corev1.SecretType, pair *testcerts.Pair) string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\ntype: %s\ndata:\n  tls.crt: %s\n  tls.key: %s\n",
		name, ns, typ, b64([]byte(pair.CertPEM)), b64([]byte(pair.KeyPEM)))
}

// externalRouteYAML is an edge route whose certificate is the secret's.
func externalRouteYAML(ns, name, host, service, secret string) string {
	return routeYAML(ns, name, host, "", service,
		fmt.Sprintf("  tls:\n    termination: edge\n    externalCertificate:\n      name: %s\n", secret))
}

// servedCN returns the subject CN of the certificate the router shows for
// host, with an answer from a backend (the route is served).
func servedCN(r *router, host string) (string, error) {
	resp, err := r.httpsGet(host, "/")
	if err != nil {
		return "", err
	}
	if resp.PeerCert == nil || resp.Status != 200 {
		return "", fmt.Errorf("status %d, certificate %v", resp.Status, resp.PeerCert != nil)
	}
	return resp.PeerCert.Subject.CommonName, nil
}

func expectCN(t *testing.T, r *router, host, want string) {
	t.Helper()
	eventually(t, 30*time.Second, host+" serves "+want, func() error {
		if cn, err := servedCN(r, host); err != nil || cn != want {
			return fmt.Errorf("%q %v", cn, err)
		}
		return nil
	})
}

func issuePairs(t *testing.T, host string, cns ...string) []*testcerts.Pair {
	t.Helper()
	ca, err := testcerts.NewCA("external certificate CA", time.Hour)
	must(t, err)
	var out []*testcerts.Pair
	for _, cn := range cns {
		p, err := ca.Issue(cn, []string{host}, time.Hour)
		must(t, err)
		out = append(out, p)
	}
	return out
}

// TestManifestsExternalCertificate: in manifests mode the directory's
// kubernetes.io/tls Secrets are the source: served, rotated without a
// reload, refused when missing or of another type; off, the default
// certificate is served.
func TestManifestsExternalCertificate(t *testing.T) {
	pairs := issuePairs(t, "ext.example.com", "ext one", "ext two")
	b := startBackend(t, "web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("tenant", "web", b))
	m.Write("secret.yaml", secretYAML("tenant", "ext-cert", corev1.SecretTypeTLS, pairs[0]))
	m.Write("opaque.yaml", secretYAML("tenant", "opaque", corev1.SecretTypeOpaque, pairs[0]))
	m.Write("garbage.yaml", secretYAML("tenant", "garbage", corev1.SecretTypeTLS, &testcerts.Pair{CertPEM: "not a certificate", KeyPEM: "not a key"}))
	m.Write("routes.yaml", externalRouteYAML("tenant", "ext", "ext.example.com", "web", "ext-cert")+"---\n"+
		externalRouteYAML("tenant", "missing", "missing.example.com", "web", "nope")+"---\n"+
		externalRouteYAML("tenant", "opaque", "opaque.example.com", "web", "opaque")+"---\n"+
		externalRouteYAML("tenant", "garbage", "garbage.example.com", "web", "garbage")+"---\n"+
		routeYAML("tenant", "plain", "plain.example.com", "", "web", ""))

	t.Run("enabled", func(t *testing.T) {
		r := startRouter(t, m.Dir, map[string]string{"RELOAD_INTERVAL": "1s"})
		expectCN(t, r, "ext.example.com", "ext one")
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("plain.example.com", "/") }, "web")
		expectLogLine(t, r, `route="tenant/missing"`, `reason="ExternalCertificateValidationFailed"`, `Not found`, `nope`)
		expectLogLine(t, r, `route="tenant/opaque"`, `reason="ExternalCertificateValidationFailed"`, `kubernetes.io/tls`, `required`)
		// The secret's PEM is validated as an inline certificate's.
		expectLogLine(t, r, `route="tenant/garbage"`, `reason="ExtendedValidationFailed"`, `spec.tls.certificate`)

		pids0 := haproxyPIDSet(r)
		loads0 := strings.Count(r.Log(), `"configuration loaded"`)
		m.Write("secret.yaml", secretYAML("tenant", "ext-cert", corev1.SecretTypeTLS, pairs[1]))
		expectCN(t, r, "ext.example.com", "ext two")
		if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
			t.Errorf("haproxy processes %v, were %v: the rotation reloaded", pids, pids0)
		}
		if n := strings.Count(r.Log(), `"configuration loaded"`); n != loads0 {
			t.Errorf("configuration loaded %d times, was %d: the rotation reloaded", n, loads0)
		}

		// render resolves external certificates as the running router.
		renderEnv := map[string]string{"ROUTER_SERVICE_HTTP_PORT": fmt.Sprint(r.HTTPPort), "ROUTER_SERVICE_HTTPS_PORT": fmt.Sprint(r.HTTPSPort),
			"ROUTER_METRICS_TYPE": "haproxy", "ROUTER_LISTEN_ADDR": "127.0.0.1:1"}
		out := t.TempDir()
		_, stderr, err := cli(t, renderEnv, "render", "--manifests", m.Dir, "--working-dir", r.WorkingDir, "--output-dir", out)
		if err != nil {
			t.Fatalf("render: %v\n%s", err, stderr)
		}
		if err := sameFiles(generatedFiles(t, r.WorkingDir), generatedFiles(t, out)); err != nil {
			t.Errorf("render differs from the running router: %v", err)
		}
		cert := generatedFiles(t, out)["router/certs/tenant:ext.pem"]
		if !strings.Contains(string(cert), strings.TrimSpace(pairs[1].CertPEM)) {
			t.Errorf("rendered certificate file is not the secret's:\n%s", cert)
		}
	})
	t.Run("ROUTER_ENABLE_EXTERNAL_CERTIFICATE=false serves the default certificate", func(t *testing.T) {
		r := startRouter(t, m.Dir, map[string]string{"ROUTER_ENABLE_EXTERNAL_CERTIFICATE": "false"})
		eventually(t, loadTimeout, "ext served with the default certificate", func() error {
			cn, err := servedCN(r, "ext.example.com")
			if err != nil {
				return err
			}
			if strings.HasPrefix(cn, "ext ") {
				return fmt.Errorf("served the secret's certificate %q", cn)
			}
			return nil
		})
		if strings.Contains(r.Log(), "ExternalCertificateValidationFailed") {
			t.Errorf("routes were checked although external certificates are off")
		}
	})
}

// TestKubeExternalCertificate runs the router as a service account with
// adm router's permissions and nothing on secrets; a tenant grants it
// get/list/watch on its secret with a Role, as OpenShift documents.
func TestKubeExternalCertificate(t *testing.T) {
	c := kubetest.Shared(t)
	netns := kubetest.NewNetNS(t)
	b := netns.StartBackend(t, netns.IP(), 8080, "pod-ext")
	label := fmt.Sprintf("extcert-%d", time.Now().UnixNano()%1_000_000)
	ns := c.CreateNamespace(t, "ext-", map[string]string{"extcert-e2e": label}).Name
	other := c.CreateNamespace(t, "ext-nogrant-", map[string]string{"extcert-e2e": label}).Name
	routerNS := c.CreateNamespace(t, "ext-router-", nil).Name
	routerName := "ext-" + label
	pairs := issuePairs(t, "*.example.com", "ext one", "ext two", "ext three")

	// The router's identity: adm router's cluster role, no secrets.
	sa := "system:serviceaccount:" + routerNS + ":router"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: routerName}, Rules: deploy.ClusterRoleRules()}
	_, err := c.Kube.RbacV1().ClusterRoles().Create(kctx(t), role, metav1.CreateOptions{})
	must(t, err)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: routerName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "router", Namespace: routerNS}}}
	_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(kctx(t), binding, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), binding.Name, metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoles().Delete(kctx(t), role.Name, metav1.DeleteOptions{})
	})
	grant := func(ns string) {
		r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "router-reads-secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"},
				ResourceNames: []string{"ext-cert", "missing", "opaque", "garbage"}}}}
		_, err := c.Kube.RbacV1().Roles(ns).Create(kctx(t), r, metav1.CreateOptions{})
		must(t, err)
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "router-reads-secrets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "router", Namespace: routerNS}}}
		_, err = c.Kube.RbacV1().RoleBindings(ns).Create(kctx(t), rb, metav1.CreateOptions{})
		must(t, err)
	}
	grant(ns)

	tlsSecret := func(ns, name string, typ corev1.SecretType, p *testcerts.Pair) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ,
			Data: map[string][]byte{corev1.TLSCertKey: []byte(p.CertPEM), corev1.TLSPrivateKeyKey: []byte(p.KeyPEM)}}
	}
	createSecret := func(s *corev1.Secret) {
		_, err := c.Kube.CoreV1().Secrets(s.Namespace).Create(kctx(t), s, metav1.CreateOptions{})
		must(t, err)
	}
	createSecret(tlsSecret(ns, "ext-cert", corev1.SecretTypeTLS, pairs[0]))
	createSecret(tlsSecret(ns, "opaque", corev1.SecretTypeOpaque, pairs[0]))
	createSecret(tlsSecret(other, "ext-cert", corev1.SecretTypeTLS, pairs[0]))
	createSecret(tlsSecret(ns, "garbage", corev1.SecretTypeTLS, &testcerts.Pair{CertPEM: "not a certificate", KeyPEM: "not a key"}))
	extRoute := func(ns, name, host, secret string) {
		r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: routev1.RouteSpec{Host: host, To: routev1.RouteTargetReference{Kind: "Service", Name: "web"},
				TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, ExternalCertificate: &routev1.LocalObjectReference{Name: secret}}}}
		_, err := c.Routes.RouteV1().Routes(ns).Create(kctx(t), r, metav1.CreateOptions{})
		must(t, err)
	}
	for _, n := range []string{ns, other} {
		kubeService(t, c, n, "web", b)
	}
	extRoute(ns, "ext", "ext.example.com", "ext-cert")
	extRoute(ns, "missing", "missing.example.com", "missing")
	extRoute(ns, "opaque", "opaque.example.com", "opaque")
	extRoute(other, "ext", "other.example.com", "ext-cert")
	extRoute(ns, "garbage", "garbage.example.com", "garbage")
	kubeRoute(t, c, ns, "plain", "plain.example.com", "web", nil)

	r := startKubeRouter(t, impersonatingKubeconfig(t, c, sa), map[string]string{
		"ROUTER_SERVICE_NAME": routerName, "NAMESPACE_LABELS": "extcert-e2e=" + label})
	rejected := func(ns, name, want string) string {
		t.Helper()
		ing := ingressOf(t, c, ns, name, routerName, admitted(corev1.ConditionFalse, "ExternalCertificateValidationFailed"))
		msg := ing.Conditions[0].Message
		if !strings.Contains(msg, want) {
			t.Errorf("%s/%s: message %q, want %q", ns, name, msg, want)
		}
		if strings.Contains(msg, routerNS) {
			t.Errorf("%s/%s: message names the router's namespace: %q", ns, name, msg)
		}
		return msg
	}

	t.Run("a granted secret's certificate is served", func(t *testing.T) {
		expectCN(t, r, "ext.example.com", "ext one")
		ingressOf(t, c, ns, "ext", routerName, admitted(corev1.ConditionTrue, ""))
		expectLogLine(t, r, "permissions are checked for the router's identity", sa)
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("plain.example.com", "/") }, "pod-ext")
	})
	t.Run("a missing secret is refused", func(t *testing.T) {
		rejected(ns, "missing", `spec.tls.externalCertificate: Not found: "secrets \"missing\" not found"`)
	})
	t.Run("a secret of another type is refused", func(t *testing.T) {
		rejected(ns, "opaque", `spec.tls.externalCertificate: Invalid value: "opaque": secret of type "kubernetes.io/tls" required`)
	})
	t.Run("a secret whose PEM is not a certificate is refused by validation", func(t *testing.T) {
		ing := ingressOf(t, c, ns, "garbage", routerName, admitted(corev1.ConditionFalse, "ExtendedValidationFailed"))
		if msg := ing.Conditions[0].Message; !strings.Contains(msg, "spec.tls.certificate") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("a secret the router may not read is refused", func(t *testing.T) {
		msg := rejected(other, "ext", "router serviceaccount does not have permission to get this secret")
		for _, v := range []string{"watch", "list"} {
			if !strings.Contains(msg, "permission to "+v+" this secret") {
				t.Errorf("message %q does not refuse %s", msg, v)
			}
		}
		if cn, err := servedCN(r, "other.example.com"); err == nil {
			t.Errorf("refused route served with %q", cn)
		}
	})
	t.Run("rotation is served without a reload", func(t *testing.T) {
		pids0 := haproxyPIDSet(r)
		loads0 := strings.Count(r.Log(), `"configuration loaded"`)
		s, err := c.Kube.CoreV1().Secrets(ns).Get(kctx(t), "ext-cert", metav1.GetOptions{})
		must(t, err)
		s.Data = tlsSecret(ns, "ext-cert", corev1.SecretTypeTLS, pairs[1]).Data
		_, err = c.Kube.CoreV1().Secrets(ns).Update(kctx(t), s, metav1.UpdateOptions{})
		must(t, err)
		expectCN(t, r, "ext.example.com", "ext two")
		if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
			t.Errorf("haproxy processes %v, were %v: the rotation reloaded", pids, pids0)
		}
		if n := strings.Count(r.Log(), `"configuration loaded"`); n != loads0 {
			t.Errorf("configuration loaded %d times, was %d: the rotation reloaded", n, loads0)
		}
	})
	t.Run("a deleted secret rejects the route, a recreated one serves again", func(t *testing.T) {
		must(t, c.Kube.CoreV1().Secrets(ns).Delete(kctx(t), "ext-cert", metav1.DeleteOptions{}))
		rejected(ns, "ext", `secrets \"ext-cert\" not found`)
		eventually(t, 30*time.Second, "ext no longer served", func() error {
			if cn, err := servedCN(r, "ext.example.com"); err == nil {
				return fmt.Errorf("still served with %q", cn)
			}
			return nil
		})
		createSecret(tlsSecret(ns, "ext-cert", corev1.SecretTypeTLS, pairs[2]))
		expectCN(t, r, "ext.example.com", "ext three")
		ingressOf(t, c, ns, "ext", routerName, admitted(corev1.ConditionTrue, ""))
	})
	t.Run("a permission granted later is used once the route changes", func(t *testing.T) {
		grant(other)
		touchRoute(t, c, other, "ext")
		expectCN(t, r, "other.example.com", "ext one")
		ingressOf(t, c, other, "ext", routerName, admitted(corev1.ConditionTrue, ""))
	})
	t.Run("ROUTER_ENABLE_EXTERNAL_CERTIFICATE=false serves the default certificate", func(t *testing.T) {
		off := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_ENABLE_EXTERNAL_CERTIFICATE": "false",
			"ROUTER_SERVICE_NAME": routerName + "-off", "NAMESPACE_LABELS": "extcert-e2e=" + label})
		ingressOf(t, c, ns, "missing", routerName+"-off", admitted(corev1.ConditionTrue, ""))
		eventually(t, loadTimeout, "ext served with the default certificate", func() error {
			cn, err := servedCN(off, "ext.example.com")
			if err != nil {
				return err
			}
			if strings.HasPrefix(cn, "ext ") {
				return fmt.Errorf("served the secret's certificate %q", cn)
			}
			return nil
		})
	})
}
