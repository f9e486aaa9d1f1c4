package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// ingressYAML is a networking.k8s.io/v1 Ingress for host with TLS from
// secret; paths are "path=service" (port by name "web").
func ingressYAML(ns, name, host, secret string, paths ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", name, ns)
	fmt.Fprintf(&b, "  tls:\n  - hosts: [%s]\n    secretName: %s\n", host, secret)
	fmt.Fprintf(&b, "  rules:\n  - host: %s\n    http:\n      paths:\n", host)
	for _, p := range paths {
		path, svc, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "      - path: %s\n        pathType: Prefix\n        backend:\n          service:\n            name: %s\n            port:\n              name: web\n", path, svc)
	}
	return b.String()
}

// tlsSecretYAML is a kubernetes.io/tls Secret.
func tlsSecretYAML(ns, name, certPEM, keyPEM string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\ntype: kubernetes.io/tls\nstringData:\n", name, ns)
	for _, kv := range [][2]string{{"tls.crt", certPEM}, {"tls.key", keyPEM}} {
		fmt.Fprintf(&b, "  %s: |\n", kv[0])
		for _, l := range strings.Split(strings.TrimRight(kv[1], "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}

// TestIngressServedInManifestsMode: an Ingress of the manifests directory
// is served as OpenShift serves it (one edge Route per path with the
// secret's certificate, HTTP redirected), follows edits and is gone (503)
// when deleted.
func TestIngressServedInManifestsMode(t *testing.T) {
	ca, err := testcerts.NewCA("ingress CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("shop.example.com", []string{"shop.example.com"}, time.Hour)
	must(t, err)
	web, api, admin := startBackend(t, "web"), startBackend(t, "api"), startBackend(t, "admin")

	m := newManifests(t)
	m.Write("services.yaml", strings.Join([]string{
		serviceYAML("shop", "web", web), serviceYAML("shop", "api", api), serviceYAML("shop", "admin", admin),
	}, "---\n"))
	m.Write("secret.yaml", tlsSecretYAML("shop", "shop-tls", cert.CertPEM, cert.KeyPEM))
	m.Write("ingress.yaml", ingressYAML("shop", "shop", "shop.example.com", "shop-tls", "/=web", "/api=api"))
	r := startRouter(t, m.Dir, nil)

	https := func(path string) func() (response, error) {
		return func() (response, error) { return r.httpsGet("shop.example.com", path) }
	}
	resp := expectBackend(t, loadTimeout, https("/"), "web")
	if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "shop.example.com" {
		t.Fatalf("client saw %v, want the Ingress secret's certificate", subject(resp))
	}
	expectBackend(t, loadTimeout, https("/api/v1"), "api")
	expectBackend(t, loadTimeout, https("/admin"), "web")
	redirect := expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("shop.example.com", "/api") }, 302)
	if loc := redirect.Header.Get("Location"); !strings.HasPrefix(loc, "https://shop.example.com/api") {
		t.Errorf("HTTP redirected to %q, want https://shop.example.com/api", loc)
	}

	m.Write("ingress.yaml", ingressYAML("shop", "shop", "shop.example.com", "shop-tls", "/=web", "/api=api", "/admin=admin"))
	expectBackend(t, loadTimeout, https("/admin"), "admin")
	expectBackend(t, loadTimeout, https("/api"), "api")

	m.Remove("ingress.yaml")
	expectStatus(t, loadTimeout, https("/"), 503)
	expectStatus(t, loadTimeout, https("/admin"), 503)
	expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("shop.example.com", "/") }, 503)
}
