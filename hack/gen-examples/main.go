// Command gen-examples regenerates examples/: demo manifests for every route
// type and the demo backends' certificates (demo use only: the keys are
// public). Run: go run ./hack/gen-examples examples
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

const validFor = 20 * 365 * 24 * time.Hour

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: gen-examples DIR")
	}
	dir := os.Args[1]
	must(os.MkdirAll(filepath.Join(dir, "tls"), 0o755))
	ca, err := testcerts.NewCA("demo backend CA", validFor)
	must(err)
	pt, err := ca.Issue("passthrough.example.com", []string{"passthrough.example.com"}, validFor)
	must(err)
	be, err := ca.Issue("secure-backend.demo.svc", []string{"secure-backend.demo.svc", "127.0.0.1"}, validFor)
	must(err)
	edgeCA, err := testcerts.NewCA("demo edge CA", validFor)
	must(err)
	edge, err := edgeCA.Issue("edge.example.com", []string{"edge.example.com"}, validFor)
	must(err)
	reenc, err := edgeCA.Issue("reencrypt.example.com", []string{"reencrypt.example.com"}, validFor)
	must(err)
	shop, err := edgeCA.Issue("shop.example.com", []string{"shop.example.com"}, validFor)
	must(err)
	gw, err := edgeCA.Issue("gateway.example.com", []string{"gateway.example.com"}, validFor)
	must(err)

	write(dir, "tls/backend-ca.crt", ca.CertPEM)
	write(dir, "tls/passthrough.crt", pt.CertPEM)
	write(dir, "tls/passthrough.key", pt.KeyPEM)
	write(dir, "tls/backend.crt", be.CertPEM)
	write(dir, "tls/backend.key", be.KeyPEM)
	write(dir, "tls/edge-ca.crt", edgeCA.CertPEM)

	write(dir, "00-namespace.yaml", header+`apiVersion: v1
kind: Namespace
metadata:
  name: demo
`)
	var svcs strings.Builder
	svcs.WriteString(header)
	for i, s := range []struct {
		name string
		port int
	}{{"hello-v1", 9001}, {"hello-v2", 9002}, {"hello-v3", 9003}, {"passthrough-backend", 9443}, {"secure-backend", 9444}} {
		if i > 0 {
			svcs.WriteString("---\n")
		}
		fmt.Fprintf(&svcs, serviceYAML, s.name, s.port, s.name, s.name, s.port)
	}
	write(dir, "10-services.yaml", svcs.String())

	write(dir, "20-unsecured.yaml", header+`# Plain HTTP: curl -H 'Host: hello.example.com' http://127.0.0.1:8080/
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: hello
  namespace: demo
spec:
  host: hello.example.com
  to:
    kind: Service
    name: hello-v1
`)
	write(dir, "21-paths.yaml", header+`# Path-based routes: /test (and /test/...) go to hello-v2, everything else to hello-v1.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: paths-root
  namespace: demo
spec:
  host: paths.example.com
  to:
    kind: Service
    name: hello-v1
---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: paths-test
  namespace: demo
spec:
  host: paths.example.com
  path: /test
  to:
    kind: Service
    name: hello-v2
`)
	write(dir, "22-edge.yaml", header+`# Edge termination with the route's own certificate; plain HTTP is redirected.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: edge
  namespace: demo
spec:
  host: edge.example.com
  to:
    kind: Service
    name: hello-v1
  tls:
    termination: edge
    insecureEdgeTerminationPolicy: Redirect
    certificate: |
`+indent(edge.CertPEM, 6)+`    key: |
`+indent(edge.KeyPEM, 6)+`    caCertificate: |
`+indent(edgeCA.CertPEM, 6)+`---
# Edge termination with the router's default certificate; plain HTTP allowed.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: edge-allow
  namespace: demo
spec:
  host: edge-allow.example.com
  to:
    kind: Service
    name: hello-v2
  tls:
    termination: edge
    insecureEdgeTerminationPolicy: Allow
`)
	write(dir, "23-passthrough.yaml", header+`# Passthrough: TLS goes to the backend untouched, chosen by SNI.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: passthrough
  namespace: demo
spec:
  host: passthrough.example.com
  to:
    kind: Service
    name: passthrough-backend
  tls:
    termination: passthrough
    insecureEdgeTerminationPolicy: Redirect
`)
	write(dir, "24-reencrypt.yaml", header+`# Re-encrypt: the router terminates TLS and opens a new TLS connection to the
# backend, verified against destinationCACertificate.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: reencrypt
  namespace: demo
spec:
  host: reencrypt.example.com
  to:
    kind: Service
    name: secure-backend
  tls:
    termination: reencrypt
    certificate: |
`+indent(reenc.CertPEM, 6)+`    key: |
`+indent(reenc.KeyPEM, 6)+`    destinationCACertificate: |
`+indent(ca.CertPEM, 6))
	write(dir, "25-weighted.yaml", header+`# Alternate backends: hello-v1 gets 2/4 of the requests, hello-v2 and hello-v3 1/4 each.
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: ab
  namespace: demo
  annotations:
    haproxy.router.openshift.io/balance: roundrobin
spec:
  host: ab.example.com
  to:
    kind: Service
    name: hello-v1
    weight: 2
  alternateBackends:
  - kind: Service
    name: hello-v2
    weight: 1
  - kind: Service
    name: hello-v3
    weight: 1
`)
	write(dir, "26-ingress.yaml", header+`# A Kubernetes Ingress, served as OpenShift serves it: one edge Route per path
# (named shop-xxxxx, owned by the Ingress), certificate and key from the
# kubernetes.io/tls Secret, plain HTTP redirected to HTTPS.
#   curl --cacert examples/tls/edge-ca.crt --resolve shop.example.com:8443:127.0.0.1 https://shop.example.com:8443/v2
apiVersion: v1
kind: Secret
metadata:
  name: shop-tls
  namespace: demo
type: kubernetes.io/tls
stringData:
  tls.crt: |
`+indent(shop.CertPEM, 4)+`  tls.key: |
`+indent(shop.KeyPEM, 4)+`---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: demo
  annotations:
    haproxy.router.openshift.io/timeout: 10s
spec:
  tls:
  - hosts: [shop.example.com]
    secretName: shop-tls
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: hello-v1
            port:
              number: 9001
      - path: /v2
        pathType: Prefix
        backend:
          service:
            name: hello-v2
            port:
              name: web
`)
	write(dir, "27-gateway.yaml", header+`# The Gateway API (docs/gateway-api.md): a GatewayClass of this router, a
# Gateway with an HTTP listener (port 80: the router's HTTP port) and an HTTPS
# listener (443: its HTTPS port) with the Secret's certificate, and an
# HTTPRoute: /v2 to hello-v2, the rest to hello-v1 and hello-v3 (3:1).
#   curl --cacert examples/tls/edge-ca.crt --resolve gateway.example.com:8443:127.0.0.1 https://gateway.example.com:8443/v2
#   curl -H 'Host: gateway.example.com' http://127.0.0.1:8080/
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: openshift-router
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
---
apiVersion: v1
kind: Secret
metadata:
  name: gateway-tls
  namespace: demo
type: kubernetes.io/tls
stringData:
  tls.crt: |
`+indent(gw.CertPEM, 4)+`  tls.key: |
`+indent(gw.KeyPEM, 4)+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: demo
  namespace: demo
spec:
  gatewayClassName: openshift-router
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    hostname: gateway.example.com
  - name: https
    port: 443
    protocol: HTTPS
    hostname: gateway.example.com
    tls:
      certificateRefs:
      - name: gateway-tls
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: demo
  namespace: demo
spec:
  parentRefs:
  - name: demo
  rules:
  - matches:
    - path:
        type: PathPrefix
        value: /v2
    backendRefs:
    - name: hello-v2
      port: 9002
  - backendRefs:
    - name: hello-v1
      port: 9001
      weight: 3
    - name: hello-v3
      port: 9003
      weight: 1
`)
}

const header = "# Demo manifests for openshift-router (generated by hack/gen-examples; demo keys only).\n"

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: demo
spec:
  ports:
  - name: web
    port: %d
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s-demo
  namespace: demo
  labels:
    kubernetes.io/service-name: %s
addressType: IPv4
ports:
- name: web
  port: %d
endpoints:
- addresses: ["127.0.0.1"]
`

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pad + l + "\n")
	}
	return b.String()
}

func write(dir, name, content string) {
	must(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
