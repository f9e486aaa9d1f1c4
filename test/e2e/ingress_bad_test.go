package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// badIngressesYAML are Ingresses OpenShift's ingress-to-route controller
// cannot translate, each with the reason it reports.
var badIngresses = []struct {
	name, yaml, reason string
}{
	{"no-service", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: no-service, namespace: shop}
spec:
  rules:
  - host: no-service.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: nosuch, port: {name: web}}}}]}
`, `Backend service \"nosuch\" not found at index 0, path index 0`},
	{"opaque-secret", `apiVersion: v1
kind: Secret
metadata: {name: opaque, namespace: shop}
type: Opaque
stringData: {tls.crt: x, tls.key: y}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: opaque-secret, namespace: shop}
spec:
  tls: [{hosts: [opaque.example.com], secretName: opaque}]
  rules:
  - host: opaque.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: web}}}}]}
`, `Invalid or missing TLS secret for rule host \"opaque.example.com\" at index 0, path index 0`},
	{"exact", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: exact, namespace: shop}
spec:
  rules:
  - host: exact.example.com
    http: {paths: [{path: /x, pathType: Exact, backend: {service: {name: web, port: {name: web}}}}]}
`, `Unsupported exact path type in rule at index 0, path index 0`},
	{"bad-port", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad-port, namespace: shop}
spec:
  rules:
  - host: bad-port.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: nosuch}}}}]}
`, `No valid target port for backend service \"web\" at index 0, path index 0`},
	{"no-host", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: no-host, namespace: shop}
spec:
  rules:
  - http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: web}}}}]}
`, `Missing host field in rule at index 0`},
}

// TestUntranslatableIngressesAreReportedAndOthersServed: in manifests
// mode, an Ingress that cannot be translated (missing service, a secret
// that is no TLS secret, pathType Exact, a port the service lacks, no host)
// gets no Route; the router logs its name and OpenShift's reason, and the
// other Ingresses and Routes of the directory are served, at start and when
// the bad Ingress arrives later.
func TestUntranslatableIngressesAreReportedAndOthersServed(t *testing.T) {
	ca, err := testcerts.NewCA("ingress CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("shop.example.com", []string{"shop.example.com"}, time.Hour)
	must(t, err)
	web, plain := startBackend(t, "web"), startBackend(t, "plain")

	m := newManifests(t)
	m.Write("services.yaml", serviceYAML("shop", "web", web)+"---\n"+serviceYAML("shop", "plain", plain))
	m.Write("secret.yaml", tlsSecretYAML("shop", "shop-tls", cert.CertPEM, cert.KeyPEM))
	m.Write("good.yaml", ingressYAML("shop", "good", "shop.example.com", "shop-tls", "/=web"))
	m.Write("route.yaml", routeYAML("shop", "plain", "plain.example.com", "", "plain", ""))
	// Half of the bad Ingresses are there from the start.
	for _, b := range badIngresses[:2] {
		m.Write("bad-"+b.name+".yaml", b.yaml)
	}
	r := startRouter(t, m.Dir, nil)

	served := func() {
		t.Helper()
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("shop.example.com", "/") }, "web")
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("plain.example.com", "/") }, "plain")
	}
	served()
	for _, b := range badIngresses[2:] {
		m.Write("bad-"+b.name+".yaml", b.yaml)
	}
	for _, b := range badIngresses {
		eventually(t, loadTimeout, "the reason of Ingress shop/"+b.name+" in the log", func() error {
			for _, l := range strings.Split(r.Log(), "\n") {
				if strings.Contains(l, "Incomplete ingress to route rules") &&
					strings.Contains(l, fmt.Sprintf("ingress=%q", "shop/"+b.name)) && strings.Contains(l, b.reason) {
					return nil
				}
			}
			return fmt.Errorf("no log line naming shop/%s with %s", b.name, b.reason)
		})
	}
	served()
	for _, host := range []string{"no-service.example.com", "opaque.example.com", "exact.example.com", "bad-port.example.com"} {
		if resp, err := r.httpGet(host, "/x"); err != nil || resp.Status != 503 {
			t.Errorf("%s: %d %v, want 503 (no Route)", host, resp.Status, err)
		}
	}
}
