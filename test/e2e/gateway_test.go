package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// gatewayYAML is a GatewayClass of controller and a Gateway of it in
// namespace infra with one HTTP listener on port 80 taking routes of every
// namespace.
func gatewayYAML(class, controller string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: %[1]s
spec:
  controllerName: %[2]s
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: %[1]s
  namespace: infra
spec:
  gatewayClassName: %[1]s
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: All
`, class, controller)
}

// backendServices starts a backend for each name and returns Services of
// that name in namespace ns for them.
func backendServices(t *testing.T, ns string, names ...string) string {
	docs := make([]string, len(names))
	for i, n := range names {
		docs[i] = serviceYAML(ns, n, startBackend(t, n))
	}
	return strings.Join(docs, "---\n")
}

// gatewayWithListeners is GatewayClass haproxy of this router's controller
// and Gateway haproxy of it in namespace ns with listeners (flow-style
// YAML maps, one a listener).
func gatewayWithListeners(ns string, listeners ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: haproxy}
spec: {controllerName: haproxy.router.openshift.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: haproxy, namespace: %s}
spec:
  gatewayClassName: haproxy
  listeners:
`, ns)
	for _, l := range listeners {
		b.WriteString("  - " + l + "\n")
	}
	return b.String()
}

// TestHTTPRouteServedNextToRoutes: in manifests mode, an HTTPRoute attached
// to a Gateway of this router's class is served on the HTTP port, each
// hostname and path prefix to its Services by weight; one admission
// decides host claims across Routes and HTTPRoutes (an older Route of
// another namespace keeps its host, which the HTTPRoute gets once the
// Route goes); the HTTPRoutes of another controller's Gateways are not
// served.
func TestHTTPRouteServedNextToRoutes(t *testing.T) {
	web, api, old := startBackend(t, "web"), startBackend(t, "api"), startBackend(t, "old")
	m := newManifests(t)
	m.Write("services.yaml", serviceYAML("shop", "web", web)+"---\n"+serviceYAML("shop", "api", api)+"---\n"+serviceYAML("legacy", "old", old))
	m.Write("gateway.yaml", gatewayYAML("haproxy", "haproxy.router.openshift.io/gateway-controller"))
	m.Write("route.yaml", `apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: old
  namespace: legacy
  creationTimestamp: "2020-01-01T00:00:00Z"
spec:
  host: taken.example.com
  to:
    kind: Service
    name: old
`)
	m.Write("httproute.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: shop
  namespace: shop
  creationTimestamp: "2024-01-01T00:00:00Z"
spec:
  parentRefs:
  - name: haproxy
    namespace: infra
  hostnames: [shop.example.com, taken.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /api}
    backendRefs:
    - {name: api, port: 80}
  - matches:
    - path: {type: PathPrefix, value: /weighted/}
    backendRefs:
    - {name: web, port: 80, weight: 0}
    - {name: api, port: 80, weight: 5}
  - backendRefs:
    - {name: web, port: 80}
`)
	r := startRouter(t, m.Dir, nil)
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	expectBackend(t, loadTimeout, get("shop.example.com", "/api/v1"), "api")
	expectBackend(t, loadTimeout, get("shop.example.com", "/api"), "api")
	expectBackend(t, loadTimeout, get("shop.example.com", "/"), "web")
	// A prefix matches whole path elements.
	expectBackend(t, loadTimeout, get("shop.example.com", "/apiary"), "web")
	for i := 0; i < 10; i++ {
		expectBackend(t, loadTimeout, get("shop.example.com", "/weighted/x"), "api")
	}
	// The older Route holds its host.
	expectBackend(t, loadTimeout, get("taken.example.com", "/"), "old")

	m.Remove("route.yaml")
	expectBackend(t, loadTimeout, get("taken.example.com", "/"), "web")
	expectBackend(t, loadTimeout, get("taken.example.com", "/api/x"), "api")

	// Another controller's Gateway and HTTPRoute, written with a Route
	// whose answer shows the file was read.
	m.Write("other.yaml", gatewayYAML("istio", "istio.io/gateway-controller")+`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: other
  namespace: shop
spec:
  parentRefs:
  - name: istio
    namespace: infra
  hostnames: [other.example.com]
  rules:
  - backendRefs:
    - {name: web, port: 80}
---
`+routeYAML("shop", "probe", "probe.example.com", "", "web", ""))
	expectBackend(t, loadTimeout, get("probe.example.com", "/"), "web")
	// Not served: the Gateway's listener without a hostname answers 404
	// for every host no route takes.
	expectStatus(t, loadTimeout, get("other.example.com", "/"), 404)

	// The HTTPRoute deleted: its hosts are no longer served.
	m.Remove("httproute.yaml")
	expectStatus(t, loadTimeout, get("shop.example.com", "/"), 404)
	expectStatus(t, loadTimeout, get("taken.example.com", "/"), 404)

	// Without a Gateway of this router, the router's own 503 again.
	m.Remove("gateway.yaml")
	expectStatus(t, loadTimeout, get("other.example.com", "/"), 503)
}

// TestHTTPRouteWithoutHostnameServesEveryHost: on a listener without a
// hostname, HTTPRoutes without hostnames (of several namespaces) serve
// every host that no Route or more specific hostname takes, the bare
// address included; a rule without a valid backend answers 500; a
// listener's hostname answers 404 for paths no route of it matches; all
// without a reload but for the first exact paths (the frontends' lookup of
// exact paths comes with them). A backend of another namespace is served
// once a ReferenceGrant there allows it.
func TestHTTPRouteWithoutHostnameServesEveryHost(t *testing.T) {
	web, api, old := startBackend(t, "web"), startBackend(t, "api"), startBackend(t, "old")
	m := newManifests(t)
	m.Write("services.yaml", serviceYAML("shop", "web", web)+"---\n"+serviceYAML("other", "api", api)+"---\n"+serviceYAML("legacy", "old", old))
	m.Write("gateway.yaml", gatewayWithListeners("infra", `{name: any, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}`, `{name: named, port: 80, protocol: HTTP, hostname: named.example.com, allowedRoutes: {namespaces: {from: All}}}`))
	m.Write("route.yaml", routeYAML("legacy", "old", "exact.example.com", "", "old", "")+"---\n"+
		routeYAML("legacy", "paths", "paths.example.com", "/app", "old", ""))
	m.Write("any.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: any, namespace: shop}
spec:
  parentRefs: [{name: haproxy, namespace: infra, sectionName: any}]
  rules:
  - backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /fail}}]
    backendRefs: [{name: nosuch, port: 80}]
`)
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	expectBackend(t, loadTimeout, get("anything.example.com", "/x"), "web")
	expectBackend(t, loadTimeout, get("127.0.0.1", "/"), "web")
	expectStatus(t, loadTimeout, get("anything.example.com", "/fail/x"), 500)
	// A Route's host is its own, the paths it leaves out too: they are
	// not taken by the routes for every host.
	expectBackend(t, loadTimeout, get("exact.example.com", "/fail"), "old")
	expectBackend(t, loadTimeout, get("paths.example.com", "/app/x"), "old")
	expectStatus(t, loadTimeout, get("paths.example.com", "/other"), 503)
	// A host that looks like a map key's marker is no host (every host's
	// route answers).
	expectBackend(t, loadTimeout, get("=exact.example.com", "/x"), "web")
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)

	// Another namespace's HTTPRoute for every host, on another path.
	m.Write("other.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: other, namespace: other}
spec:
  parentRefs: [{name: haproxy, namespace: infra}]
  rules:
  - matches: [{path: {value: /other}}]
    backendRefs: [{name: api, port: 80}]
`)
	expectBackend(t, 30*time.Second, get("anything.example.com", "/other/x"), "api")
	expectBackend(t, 5*time.Second, get("anything.example.com", "/x"), "web")
	// On the named listener's hostname: its routes (the HTTPRoute
	// without a sectionName attached there too), else 404.
	expectBackend(t, 5*time.Second, get("named.example.com", "/other"), "api")
	expectStatus(t, 5*time.Second, get("named.example.com", "/x"), 404)
	noReload("an HTTPRoute for every host added")

	m.Remove("any.yaml")
	expectStatus(t, 30*time.Second, get("anything.example.com", "/x"), 404)
	expectStatus(t, 5*time.Second, get("anything.example.com", "/fail"), 404)
	noReload("an HTTPRoute for every host removed")

	// Exact paths before prefixes, for every host and for a hostname.
	exact := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: exact, namespace: shop}
spec:
  parentRefs: [{name: haproxy, namespace: infra}]
  rules:
  - matches: [{path: {type: Exact, value: /match}}]
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: Exact, value: /match/exact/}}]
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /match/}}]
    backendRefs: [{name: nosuch, port: 80}]
`
	reloads := ms.settledReloads(t)
	m.Write("exact.yaml", exact)
	for _, host := range []string{"anything.example.com", "named.example.com"} {
		expectBackend(t, 30*time.Second, get(host, "/match"), "web")
		expectBackend(t, 5*time.Second, get(host, "/match/exact/"), "web")
		expectStatus(t, 5*time.Second, get(host, "/match/exact"), 500)
		expectStatus(t, 5*time.Second, get(host, "/match/"), 500)
		expectStatus(t, 5*time.Second, get(host, "/match/x"), 500)
	}
	expectBackend(t, 5*time.Second, get("exact.example.com", "/match"), "old")
	// The first exact paths: from now on the frontends look exact paths
	// up, which a reload brings (once: more exact paths need none).
	if got := ms.settledReloads(t) - reloads; got != 1 {
		t.Errorf("the first exact paths: %v reloads (%s), want 1", got, ms.reloadReasons())
	}
	noReload = noReloadSince(t, ms, r)
	m.Write("exact.yaml", exact+`  - matches: [{path: {type: Exact, value: /match/more}}]
    backendRefs: [{name: web, port: 80}]
`)
	expectBackend(t, 30*time.Second, get("named.example.com", "/match/more"), "web")
	expectStatus(t, 5*time.Second, get("named.example.com", "/match/more/"), 500)
	noReload("another exact path added")

	// RequestRedirect: answered by HAProxy (no backend), what is not set
	// the request's.
	m.Write("redirect.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: redirect, namespace: redir}
spec:
  parentRefs: [{name: haproxy, namespace: infra, sectionName: any}]
  rules:
  - matches: [{path: {value: /host}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org}}]
  - matches: [{path: {value: /all}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, hostname: example.org, port: 8443, statusCode: 301, path: {type: ReplaceFullPath, replaceFullPath: /new}}}]
  - matches: [{path: {value: /old/prefix}}]
    filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new/}}}]
  - matches: [{path: {value: /gone}}]
    filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]
`)
	for _, tc := range []struct {
		path, location string
		code           int
	}{
		{"/host/a?q=1", "http://example.org/host/a?q=1", 302},
		{"/all/a", "https://example.org:8443/new", 301},
		{"/old/prefix/lemon/x?q=1", "http://anything.example.com/new/lemon/x?q=1", 302},
		{"/old/prefix", "http://anything.example.com/new/", 302},
		{"/old/prefix/", "http://anything.example.com/new/", 302},
		{"/gone/a", "http://anything.example.com/a", 302},
		{"/gone", "http://anything.example.com/", 302},
	} {
		resp := expectStatus(t, 30*time.Second, get("anything.example.com", tc.path), tc.code)
		if loc := resp.Header.Get("Location"); loc != tc.location {
			t.Errorf("%s: Location %q, want %q", tc.path, loc, tc.location)
		}
	}
	noReload("redirects added")

	// A backend of another namespace: 500 until a ReferenceGrant there
	// allows it, then served.
	m.Write("cross.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cross, namespace: shop}
spec:
  parentRefs: [{name: haproxy, namespace: infra, sectionName: any}]
  rules:
  - matches: [{path: {value: /cross}}]
    backendRefs: [{name: api, namespace: other, port: 80}]
`)
	expectStatus(t, 30*time.Second, get("anything.example.com", "/cross"), 500)
	m.Write("grant.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: shop, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: shop}]
  to: [{group: "", kind: Service, name: api}]
`)
	expectBackend(t, 30*time.Second, get("anything.example.com", "/cross"), "api")
}

// httpRouteYAML is an HTTPRoute of namespace gwr attached to Gateway
// infra/haproxy, for host; rules are "path=service[:weight]+...".
func httpRouteYAML(name, host string, rules ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: %s\n  namespace: gwr\n", name)
	fmt.Fprintf(&b, "spec:\n  parentRefs:\n  - {name: haproxy, namespace: infra}\n  hostnames: [%s]\n  rules:\n", host)
	for _, r := range rules {
		path, backends, _ := strings.Cut(r, "=")
		fmt.Fprintf(&b, "  - matches: [{path: {value: %s}}]\n    backendRefs:\n", path)
		for _, be := range strings.Split(backends, "+") {
			svc, weight, ok := strings.Cut(be, ":")
			if !ok {
				weight = "1"
			}
			fmt.Fprintf(&b, "    - {name: %s, port: 80, weight: %s}\n", svc, weight)
		}
	}
	return b.String()
}

// TestHTTPRouteChangesNeedNoReload: HTTPRoutes take the runtime path of
// Routes: a rule added (a new route: a spare backend), a backend's weight
// changed, the HTTPRoute deleted and created again, and a new HTTPRoute
// are all served without a reload or a new haproxy process.
func TestHTTPRouteChangesNeedNoReload(t *testing.T) {
	one, two := startBackend(t, "gw-1"), startBackend(t, "gw-2")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gwr", "one", one)+"---\n"+serviceYAML("gwr", "two", two))
	m.Write("gateway.yaml", gatewayYAML("haproxy", "haproxy.router.openshift.io/gateway-controller"))
	// Anchors: routes that stay, before and after the HTTPRoute's.
	m.Write("anchors.yaml", routeYAML("gwr", "a", "a.gwr.example.com", "", "one", "")+"---\n"+routeYAML("gwr", "zz", "zz.gwr.example.com", "", "one", ""))
	m.Write("shop.yaml", httpRouteYAML("shop", "shop.gwr.example.com", "/=one"))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	expectBackend(t, loadTimeout, get("shop.gwr.example.com", "/"), "gw-1")
	expectBackend(t, loadTimeout, get("a.gwr.example.com", "/"), "gw-1")
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)

	m.Write("shop.yaml", httpRouteYAML("shop", "shop.gwr.example.com", "/=one", "/two=two"))
	expectBackend(t, 30*time.Second, get("shop.gwr.example.com", "/two/x"), "gw-2")
	noReload("a rule added")

	m.Write("shop.yaml", httpRouteYAML("shop", "shop.gwr.example.com", "/=one:0+two:1", "/two=two"))
	for i := 0; i < 5; i++ {
		expectBackend(t, 30*time.Second, get("shop.gwr.example.com", "/"), "gw-2")
	}
	noReload("a weight changed")

	m.Remove("shop.yaml")
	// The Gateway's listener takes every host: 404.
	expectStatus(t, 30*time.Second, get("shop.gwr.example.com", "/"), 404)
	noReload("the HTTPRoute deleted")
	m.Write("shop.yaml", httpRouteYAML("shop", "shop.gwr.example.com", "/=one"))
	expectBackend(t, 30*time.Second, get("shop.gwr.example.com", "/"), "gw-1")
	noReload("the HTTPRoute created again")

	m.Write("new.yaml", httpRouteYAML("new", "new.gwr.example.com", "/=two"))
	expectBackend(t, 30*time.Second, get("new.gwr.example.com", "/"), "gw-2")
	noReload("a new HTTPRoute")
	expectBackend(t, 5*time.Second, get("zz.gwr.example.com", "/"), "gw-1")
}

// TestHTTPSListenerServesTheGatewaysCertificate: an HTTPRoute attached to
// an HTTPS listener on port 443 is served on the HTTPS port with the
// certificate of the listener's Secret; attached to the HTTP listener as
// well, it answers over HTTP too; a hostname only the HTTPS listener takes
// is not served over HTTP. A listener whose Secret is not a TLS Secret
// serves nothing.
func TestHTTPSListenerServesTheGatewaysCertificate(t *testing.T) {
	ca, err := testcerts.NewCA("gateway CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("*.gws.example.com", []string{"*.gws.example.com"}, time.Hour)
	must(t, err)
	web := startBackend(t, "gws-web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gws", "web", web))
	m.Write("secret.yaml", tlsSecretYAML("gws", "gw-tls", cert.CertPEM, cert.KeyPEM))
	m.Write("gateway.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: haproxy
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: gws
spec:
  gatewayClassName: haproxy
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    hostname: both.gws.example.com
  - name: https
    port: 443
    protocol: HTTPS
    tls:
      certificateRefs:
      - name: gw-tls
  - name: bad
    port: 443
    protocol: HTTPS
    hostname: bad.gws.example.com
    tls:
      certificateRefs:
      - name: not-tls
---
apiVersion: v1
kind: Secret
metadata:
  name: not-tls
  namespace: gws
stringData:
  a: b
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: web
  namespace: gws
spec:
  parentRefs:
  - name: gw
  hostnames: [both.gws.example.com, secure.gws.example.com, bad.gws.example.com]
  rules:
  - backendRefs:
    - {name: web, port: 80}
`)
	r := startRouter(t, m.Dir, nil)
	https := func(host string) func() (response, error) {
		return func() (response, error) { return r.httpsGet(host, "/") }
	}
	http := func(host string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, "/") }
	}
	for _, host := range []string{"both.gws.example.com", "secure.gws.example.com"} {
		resp := expectBackend(t, loadTimeout, https(host), "gws-web")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "*.gws.example.com" {
			t.Errorf("%s: the client saw %v, want the listener's certificate", host, subject(resp))
		}
	}
	expectBackend(t, loadTimeout, http("both.gws.example.com"), "gws-web")
	expectStatus(t, loadTimeout, http("secure.gws.example.com"), 503)
	// bad.gws.example.com: only through the https listener (the bad one
	// takes nothing), with the listener's certificate.
	expectBackend(t, loadTimeout, https("bad.gws.example.com"), "gws-web")
	// A host nobody has: the listener without a hostname answers 404, with
	// the router's default certificate: the Gateway's is not offered for
	// names that are not its own unless the administrator names it.
	if resp := expectStatus(t, loadTimeout, https("nobody.example.org"), 404); resp.PeerCert == nil || resp.PeerCert.Subject.CommonName == "*.gws.example.com" {
		t.Errorf("a host nobody has: the client saw %v, want the default certificate", subject(resp))
	}
	named := startRouter(t, m.Dir, map[string]string{"ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM": "gws/gw"})
	if resp := expectStatus(t, loadTimeout, func() (response, error) { return named.httpsGet("nobody.example.org", "/") }, 404); resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "*.gws.example.com" {
		t.Errorf("ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM=gws/gw, a host nobody has: the client saw %v, want the listener's certificate", subject(resp))
	}
}

// TestHTTPRouteHeaderModifiersReachBackendAndClient: a rule's
// RequestHeaderModifier sets and removes request headers (a value's "%" is
// text), its ResponseHeaderModifier sets and removes response headers; a
// backendRef's own RequestHeaderModifier (the rule's only backendRef)
// sets its header too.
func TestHTTPRouteHeaderModifiersReachBackendAndClient(t *testing.T) {
	be := startHeaderBackend(t, "gwh")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gwr", "hdr", be))
	m.Write("gateway.yaml", gatewayYAML("haproxy", "haproxy.router.openshift.io/gateway-controller"))
	m.Write("route.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: hdr
  namespace: gwr
spec:
  parentRefs:
  - {name: haproxy, namespace: infra}
  hostnames: [hdr.gwr.example.com]
  rules:
  - backendRefs:
    - {name: hdr, port: 80}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Quote, value: "100% set"}]
        add: [{name: X-Both, value: "50% more"}]
        remove: [X-Drop]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set: [{name: X-Resp-Route, value: gateway}]
        add: [{name: X-Resp-Add, value: added}]
        remove: [X-Remove-Me]
  - matches: [{path: {type: PathPrefix, value: /per-backend}}]
    backendRefs:
    - name: hdr
      port: 80
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier:
          set: [{name: X-Wide, value: "on"}]
`)
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("hdr.gwr.example.com", "/") }, "gwh")
	// A backendRef's own filter (the rule's only backendRef): applied.
	if resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("hdr.gwr.example.com", "/per-backend") }, "gwh"); !strings.Contains(resp.Body, "X-Wide=on;") {
		t.Errorf("a backendRef's filter: the backend saw no X-Wide=on:\n%s", resp.Body)
	}
	resp, body, err := r.getWithHeaders("hdr.gwr.example.com", map[string]string{"X-Drop": "client", "X-Quote": "client", "X-Client": "kept", "X-Both": "client"})
	must(t, err)
	for _, want := range []string{"X-Quote=100% set;", "X-Drop=;", "X-Client=kept;", "X-Both=client,50% more;"} {
		if !strings.Contains(body, want) {
			t.Errorf("backend saw no %q:\n%s", want, body)
		}
	}
	for h, want := range map[string]string{"X-Resp-Route": "gateway", "X-Remove-Me": "", "X-Resp-Add": "added"} {
		if got := strings.Join(resp.Header.Values(h), ","); got != want {
			t.Errorf("client got %s: %q, want %q", h, got, want)
		}
	}
}

// getHeaders returns a request to r for host and path with headers hdr
// (name, value, ...; a name given twice is sent twice), as expectBackend
// and expectStatus take it.
func getHeaders(r *router, host, path string, hdr ...string) func() (response, error) {
	return requestWith(r, http.MethodGet, host, path, hdr...)
}

// requestWith is getHeaders with another method.
func requestWith(r *router, method, host, path string, hdr ...string) func() (response, error) {
	return func() (response, error) {
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, path), nil)
		if err != nil {
			return response{}, err
		}
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Add(hdr[i], hdr[i+1]) // (a name twice: two headers)
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Do(req)
		if err != nil {
			return response{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return response{Status: resp.StatusCode, Body: string(body), Header: resp.Header}, err
	}
}

// TestHTTPRouteHeaderMatchesChooseTheRule: header, method and query
// parameter matches of HTTPRoutes (for every host and for a listener's
// hostname) choose among the rules of one path: a method first, then the
// most headers, then the most query parameters, then the first rule; a
// longer path wins over header matches of a shorter one; what matches no
// headers goes to the path's rule without headers, else to a shorter path,
// else 404.
func TestHTTPRouteHeaderMatchesChooseTheRule(t *testing.T) {
	m := newManifests(t)
	m.Write("services.yaml", backendServices(t, "shop", "one", "two", "three"))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: any, port: 80, protocol: HTTP}`, `{name: named, port: 80, protocol: HTTP, hostname: named.example.com}`))
	hm := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: hm, namespace: shop}
spec:
  parentRefs: [{name: haproxy}]
  rules:
  - matches: [{headers: [{name: version, value: one}]}]
    backendRefs: [{name: one, port: 80}]
  - matches: [{headers: [{name: version, value: two}]}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{headers: [{name: Version, value: two}, {name: color, value: "orange juice"}]}]
    backendRefs: [{name: one, port: 80}]
  - matches: [{headers: [{name: color, value: blue}]}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {value: /m}, method: POST}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{path: {value: /m}}]
    backendRefs: [{name: one, port: 80}]
  - matches: [{path: {value: /q}, queryParams: [{name: animal, value: whale}]}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {value: /q}, headers: [{name: version, value: one}]}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{path: {value: /f}, headers: [{name: x-flag, value: "-u"}, {name: x-list, value: "a, b"}]}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{path: {value: /v2}}, {path: {value: /x}, headers: [{name: version, value: three}]}]
    backendRefs: [{name: two, port: 80}]
`
	m.Write("hm.yaml", hm+`  - matches: [{path: {value: /}}]
    backendRefs: [{name: three, port: 80}]
`)
	r := startRouter(t, m.Dir, nil)
	for _, host := range []string{"anything.example.com", "named.example.com"} {
		for _, tc := range []struct {
			path    string
			headers []string
			want    string
		}{
			{"/", []string{"version", "one"}, "one"},
			{"/a", []string{"version", "two"}, "two"},
			{"/", []string{"version", "two", "color", "orange juice"}, "one"},
			{"/", []string{"version", "two", "color", "orange"}, "two"},
			// As many headers: the first rule.
			{"/", []string{"version", "two", "color", "blue"}, "two"},
			{"/", []string{"color", "blue"}, "three"},
			{"/", nil, "three"},
			{"/v2/a", []string{"version", "one"}, "two"},
			{"/x/a", []string{"version", "three"}, "two"},
			{"/x/a", []string{"version", "four"}, "three"},
		} {
			expectBackend(t, loadTimeout, getHeaders(r, host, tc.path, tc.headers...), tc.want)
		}
		// A method, then headers, then query parameters.
		expectBackend(t, 5*time.Second, requestWith(r, http.MethodPost, host, "/m/x"), "two")
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/m/x"), "one")
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/q?animal=whale"), "three")
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/q?animal=whale", "version", "one"), "two")
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/q?animal=dolphin"), "three")
		// Values that look like ACL flags, and commas: the whole value.
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/f", "x-flag", "-u", "x-list", "a, b"), "two")
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/f", "x-flag", "-u", "x-list", "b"), "three")
	}
	// Without the rule for every path: a request no rule matches is 404.
	m.Write("hm.yaml", hm)
	for _, host := range []string{"anything.example.com", "named.example.com"} {
		expectStatus(t, 30*time.Second, getHeaders(r, host, "/x/a", "version", "four"), 404)
		expectStatus(t, 5*time.Second, getHeaders(r, host, "/"), 404)
		expectBackend(t, 5*time.Second, getHeaders(r, host, "/x/a", "version", "one"), "one")
	}
}

// TestHTTPRouteRegularExpressionsMatchWholeValues: RegularExpression
// matches of paths, headers and query parameters (RE2 syntax, matched
// against the whole value by HAProxy): an expression ranks below longer
// paths and below the other matches of its literal start, above shorter
// paths; one the router refuses is left out (its reason in status: unit
// tests), the rest served.
func TestHTTPRouteRegularExpressionsMatchWholeValues(t *testing.T) {
	m := newManifests(t)
	m.Write("services.yaml", backendServices(t, "shop", "one", "two", "three"))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: any, port: 80, protocol: HTTP, hostname: re.example.com}`))
	m.Write("re.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: re, namespace: shop}
spec:
  parentRefs: [{name: haproxy}]
  rules:
  - matches: [{path: {type: RegularExpression, value: "/api/v[0-9]+/items/[^/]+"}}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{path: {type: RegularExpression, value: ".*\\.(png|jpg)"}}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {value: /api/v1/items/special}}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {value: /h}, headers: [{name: x-build, type: RegularExpression, value: "(?i)rc-[0-9]{1,3}"}]}]
    backendRefs: [{name: two, port: 80}]
  - matches: [{path: {value: /h}, queryParams: [{name: id, type: RegularExpression, value: "[a-f0-9]{4}"}]}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {type: RegularExpression, value: "/bad/(a+)+"}}]
    backendRefs: [{name: two, port: 80}]
  - backendRefs: [{name: one, port: 80}]
`)
	r := startRouter(t, m.Dir, nil)
	host := "re.example.com"
	for _, tc := range []struct {
		path    string
		headers []string
		want    string
	}{
		{"/api/v2/items/pen", nil, "two"},
		{"/api/v2/items/pen?x=1", nil, "two"},
		// The whole path: not a part of it.
		{"/api/v2/items/pen/more", nil, "one"},
		{"/api/vx/items/pen", nil, "one"},
		{"/x/api/v2/items/pen", nil, "one"},
		// A longer path prefix first.
		{"/api/v1/items/special", nil, "three"},
		{"/img/a.png", nil, "three"},
		{"/img/a.png.txt", nil, "one"},
		{"/h", []string{"x-build", "RC-12"}, "two"},
		{"/h", []string{"x-build", "rc-1234"}, "one"},
		{"/h", []string{"x-build", "xrc-1"}, "one"},
		{"/h?id=beef", nil, "three"},
		{"/h?id=beefy", nil, "one"},
		{"/bad/aaa", nil, "one"},
	} {
		expectBackend(t, loadTimeout, getHeaders(r, host, tc.path, tc.headers...), tc.want)
	}
}

// TestHTTPRouteRuleSpreadsOverMoreThanFourBackends: a rule's backendRefs
// beyond the Route API's four (up to the spec's sixteen) are served by
// weight, a Service named twice once with the weights added, weight 0 not
// at all.
func TestHTTPRouteRuleSpreadsOverMoreThanFourBackends(t *testing.T) {
	m := newManifests(t)
	names := []string{"b1", "b2", "b3", "b4", "b5", "b6", "idle"}
	m.Write("services.yaml", backendServices(t, "shop", names...))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: any, port: 80, protocol: HTTP, hostname: many.example.com}`))
	m.Write("many.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: many, namespace: shop}
spec:
  parentRefs: [{name: haproxy}]
  rules:
  - backendRefs:
    - {name: b1, port: 80}
    - {name: b2, port: 80}
    - {name: b3, port: 80}
    - {name: b4, port: 80}
    - {name: b5, port: 80}
    - {name: b6, port: 80, weight: 2}
    - {name: b1, port: 80}
    - {name: idle, port: 80, weight: 0}
`)
	r := startRouter(t, m.Dir, nil)
	get := func() (response, error) { return r.httpGet("many.example.com", "/") }
	for _, want := range names[:6] {
		expectBackend(t, loadTimeout, get, want)
	}
	for i := 0; i < 100; i++ {
		resp, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 200 || resp.backend() == "idle" {
			t.Fatalf("request %d: %d from %q", i, resp.Status, resp.backend())
		}
	}
}

// TestHTTPRouteRetriesFailedRequests: a rule's retry makes HAProxy try a
// request again on the statuses it names and on a connection reset, at
// most attempts times; other statuses are answered as they come.
func TestHTTPRouteRetriesFailedRequests(t *testing.T) {
	// flaky fails the first "fail" requests of each "id" with "status"
	// (a connection reset without one).
	var mu sync.Mutex
	tries := map[string]int{}
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fail, _ := strconv.Atoi(q.Get("fail"))
		mu.Lock()
		tries[q.Get("id")]++
		n := tries[q.Get("id")]
		mu.Unlock()
		if n > fail {
			handler("flaky").ServeHTTP(w, r)
			return
		}
		if code, err := strconv.Atoi(q.Get("status")); err == nil {
			w.WriteHeader(code)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
		}
	}))
	t.Cleanup(flaky.Close)
	m := newManifests(t)
	m.Write("services.yaml", serviceYAML("shop", "flaky", newBackend(t, "flaky", flaky)))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: any, port: 80, protocol: HTTP, hostname: retry.example.com}`))
	r := startRouter(t, m.Dir, nil)
	// Added to the running router (as in a cluster).
	m.Write("retry.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: retry, namespace: shop}
spec:
  parentRefs: [{name: haproxy}]
  rules:
  - matches: [{path: {value: /three}}]
    retry: {codes: [500, 503], attempts: 3}
    backendRefs: [{name: flaky, port: 80}]
  - backendRefs: [{name: flaky, port: 80}]
`)
	id := 0
	get := func(path string) func() (response, error) {
		return func() (response, error) {
			id++
			return r.httpGet("retry.example.com", fmt.Sprintf("%s&id=%d", path, id))
		}
	}
	expectBackend(t, loadTimeout, get("/three?fail=0"), "flaky")
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/three?fail=3&status=500", 200},
		{"/three?fail=2&status=503", 200},
		{"/three?fail=2", 200}, // connection resets
		{"/three?fail=4&status=500", 500},
		{"/three?fail=1&status=502", 502}, // not a code of the rule
		{"/other?fail=1&status=500", 500}, // no retry
	} {
		resp, err := get(tc.path)()
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if resp.Status != tc.status {
			t.Errorf("%s: %d, want %d", tc.path, resp.Status, tc.status)
		}
	}
}

// TestHTTPRouteWildcardHostnamesServeSubdomains: a wildcard hostname (of a
// listener or of an HTTPRoute) serves every subdomain of its domain, at
// any depth, not the domain itself; an exact hostname wins over it.
func TestHTTPRouteWildcardHostnamesServeSubdomains(t *testing.T) {
	m := newManifests(t)
	m.Write("services.yaml", backendServices(t, "shop", "one", "two", "three"))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: any, port: 80, protocol: HTTP}`, `{name: wild, port: 80, protocol: HTTP, hostname: "*.bar.com"}`, `{name: specific, port: 80, protocol: HTTP, hostname: foo.bar.com}`)+`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wild, namespace: shop}
spec:
  parentRefs: [{name: haproxy, sectionName: wild}]
  rules: [{backendRefs: [{name: one, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: specific, namespace: shop}
spec:
  parentRefs: [{name: haproxy, sectionName: specific}]
  rules: [{backendRefs: [{name: two, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: io, namespace: shop}
spec:
  parentRefs: [{name: haproxy, sectionName: any}]
  hostnames: ["*.wildcard.io"]
  rules:
  - matches: [{path: {value: /p}}]
    backendRefs: [{name: three, port: 80}]
  - matches: [{path: {type: Exact, value: /e}}]
    backendRefs: [{name: one, port: 80}]
`)
	r := startRouter(t, m.Dir, nil)
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	for _, tc := range []struct{ host, path, want string }{
		{"x.bar.com", "/", "one"},
		{"a.b.c.bar.com", "/a", "one"},
		{"foo.bar.com", "/", "two"},
		{"x.wildcard.io", "/p/q", "three"},
		{"a.b.c.d.wildcard.io", "/p", "three"},
		{"a.b.wildcard.io", "/e", "one"},
	} {
		expectBackend(t, loadTimeout, get(tc.host, tc.path), tc.want)
	}
	for _, tc := range []struct{ host, path string }{
		{"bar.com", "/"},
		{"wildcard.io", "/p"},
		{"x.wildcard.io", "/q"},
		{"x.wildcard.io", "/e/f"},
	} {
		expectStatus(t, 5*time.Second, get(tc.host, tc.path), 404)
	}
}

// TestHTTPRouteRewritesAndTimeouts: a URLRewrite's hostname and path
// (ReplacePrefixMatch, ReplaceFullPath) reach the backend rewritten; a
// rule's timeout answers 504 when the backend is slower, and 0s waits; an
// invalid backend's share of the requests is answered with 500.
func TestHTTPRouteRewritesAndTimeouts(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil && d > 0 && d <= 5*time.Second {
			time.Sleep(d)
		}
		handler("gwt-web").ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gwt", "web", newBackend(t, "gwt-web", slow)))
	m.Write("gateway.yaml", gatewayYAML("haproxy", "haproxy.router.openshift.io/gateway-controller"))
	m.Write("route.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: rw
  namespace: gwt
spec:
  parentRefs:
  - {name: haproxy, namespace: infra}
  hostnames: [rw.gwt.example.com]
  rules:
  - matches: [{path: {value: /prefix/one}}]
    filters:
    - type: URLRewrite
      urlRewrite: {hostname: one.example.org, path: {type: ReplacePrefixMatch, replacePrefixMatch: /one}}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /strip}}]
    filters:
    - type: URLRewrite
      urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /full}}]
    filters:
    - type: URLRewrite
      urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /one}}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /slow}}]
    timeouts: {request: 500ms}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /patient}}]
    timeouts: {request: 0s}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /mixed}}]
    backendRefs: [{name: web, port: 80}, {name: nosuch, port: 80}]
`)
	r := startRouter(t, m.Dir, nil)
	host := "rw.gwt.example.com"
	expectBackend(t, loadTimeout, getHeaders(r, host, "/slow"), "gwt-web")
	for path, want := range map[string]string{
		"/prefix/one/two": "host=one.example.org path=/one/two ",
		"/prefix/one":     "host=one.example.org path=/one ",
		"/strip/three":    "host=rw.gwt.example.com path=/three ",
		"/strip":          "path=/ ",
		"/full/x/y?q=1":   "path=/one?q=1 ",
		"/patient":        "path=/patient ",
	} {
		resp, err := getHeaders(r, host, path)()
		if err != nil || resp.Status != 200 || !strings.Contains(resp.Body, want) {
			t.Errorf("%s: %d %q (%v), want %q", path, resp.Status, resp.Body, err, want)
		}
	}
	if resp, err := getHeaders(r, host, "/slow?delay=1500ms")(); err != nil || resp.Status != 504 {
		t.Errorf("a backend slower than the rule's timeout: %d (%v), want 504", resp.Status, err)
	}
	if resp, err := getHeaders(r, host, "/patient?delay=1500ms")(); err != nil || resp.Status != 200 {
		t.Errorf("timeout 0s, a backend taking 1.5 s: %d (%v), want 200", resp.Status, err)
	}
	// A valid and an invalid backend of one weight: about half the
	// requests answered 500 (60 requests: both kinds, all but surely).
	statuses := map[int]int{}
	for i := 0; i < 60; i++ {
		resp, err := getHeaders(r, host, "/mixed")()
		if err != nil {
			t.Fatal(err)
		}
		statuses[resp.Status]++
	}
	if len(statuses) != 2 || statuses[200] == 0 || statuses[500] == 0 {
		t.Errorf("a valid and an invalid backend: statuses %v, want 200s and 500s", statuses)
	}
}

// TestTLSRoutePassesTLSThrough: a TLSRoute on a TLS listener (tls.mode
// Passthrough) takes the TLS connections of its hostnames to its backends
// unterminated — a wildcard hostname its subdomains at any depth, an exact
// one before it; one without a valid backend refused — while other names
// are terminated by the router as before; a TLSRoute added later needs no reload (a spare backend of its
// shape takes it, as a passthrough Route's).
func TestTLSRoutePassesTLSThrough(t *testing.T) {
	ca, err := testcerts.NewCA("tlsroute CA", time.Hour)
	must(t, err)
	wildCert, err := ca.Issue("wild backend", []string{"*.w.gtls.example.com"}, time.Hour)
	must(t, err)
	exactCert, err := ca.Issue("exact backend", []string{"a.w.gtls.example.com"}, time.Hour)
	must(t, err)
	wild := startTLSBackend(t, "gtls-wild", wildCert.CertPEM, wildCert.KeyPEM)
	exact := startTLSBackend(t, "gtls-exact", exactCert.CertPEM, exactCert.KeyPEM)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gtls", "wild", wild)+"---\n"+serviceYAML("gtls", "exact", exact))
	m.Write("gateway.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: haproxy
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: gtls
spec:
  gatewayClassName: haproxy
  listeners:
  - name: tls
    port: 443
    protocol: TLS
    hostname: "*.gtls.example.com"
    tls:
      mode: Passthrough
`)
	tlsRoute := func(name, host, svc string) string {
		return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata:
  name: %s
  namespace: gtls
spec:
  parentRefs: [{name: gw}]
  hostnames: [%q]
  rules: [{backendRefs: [{name: %s, port: 80}]}]
`, name, host, svc)
	}
	m.Write("wild.yaml", tlsRoute("wild", "*.w.gtls.example.com", "wild"))
	// Two passthrough routes of one shape: spare backends of it are
	// loaded (ROUTER_SPARE_BACKENDS), for those added later.
	m.Write("other.yaml", tlsRoute("other", "o.w.gtls.example.com", "exact"))
	// Without a valid backend: its connections are refused (not passed
	// to the wildcard's backend).
	m.Write("broken.yaml", tlsRoute("broken", "broken.w.gtls.example.com", "nosuch"))
	// A valid and an invalid backend of one weight: half the connections
	// refused, half passed to the valid one.
	m.Write("half.yaml", strings.Replace(tlsRoute("half", "half.w.gtls.example.com", "exact"), "port: 80}", "port: 80}, {name: nosuch, port: 80}", 1))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	https := func(host string) func() (response, error) {
		return func() (response, error) { return r.httpsGet(host, "/") }
	}
	expectBackend(t, loadTimeout, https("o.w.gtls.example.com"), "gtls-exact")
	for _, host := range []string{"a.w.gtls.example.com", "x.y.w.gtls.example.com"} {
		resp := expectBackend(t, loadTimeout, https(host), "gtls-wild")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "wild backend" {
			t.Errorf("%s: the client saw %v, want the backend's own certificate", host, subject(resp))
		}
	}
	eventually(t, loadTimeout, "the connection refused", func() error {
		if resp, err := r.httpsGet("broken.w.gtls.example.com", "/"); err == nil {
			return fmt.Errorf("answered %d by %q", resp.Status, resp.backend())
		}
		return nil
	})
	expectBackend(t, loadTimeout, https("half.w.gtls.example.com"), "gtls-exact")
	eventually(t, loadTimeout, "a connection of the invalid backend's share refused", func() error {
		if resp, err := r.httpsGet("half.w.gtls.example.com", "/"); err == nil {
			return fmt.Errorf("answered %d by %q", resp.Status, resp.backend())
		}
		return nil
	})
	// Not the TLSRoute's: terminated by the router (no route: 503).
	if resp := expectStatus(t, loadTimeout, https("other.gtls.example.com"), 503); resp.PeerCert == nil || resp.PeerCert.Subject.CommonName == "wild backend" {
		t.Errorf("a name of no TLSRoute: the client saw %v", subject(resp))
	}
	waitReady(t, ms)
	noReload := noReloadSince(t, ms, r)
	m.Write("exact.yaml", tlsRoute("exact", "a.w.gtls.example.com", "exact"))
	expectBackend(t, 30*time.Second, https("a.w.gtls.example.com"), "gtls-exact")
	expectBackend(t, 5*time.Second, https("b.w.gtls.example.com"), "gtls-wild")
	noReload("a TLSRoute added")
}

// TestHTTPRouteRedirectsHTTPToHTTPS: the usual pair — an HTTPRoute on the
// HTTP listener redirecting to HTTPS, one on the HTTPS listener with the
// backends, for the same hostname — serves each port its own: HTTP
// requests are redirected, HTTPS ones reach the backend.
func TestHTTPRouteRedirectsHTTPToHTTPS(t *testing.T) {
	ca, err := testcerts.NewCA("gateway CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("app.gwhs.example.com", []string{"app.gwhs.example.com"}, time.Hour)
	must(t, err)
	web := startBackend(t, "gwhs-web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gwhs", "web", web))
	m.Write("secret.yaml", tlsSecretYAML("gwhs", "tls", cert.CertPEM, cert.KeyPEM))
	m.Write("gateway.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: haproxy
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: gwhs
spec:
  gatewayClassName: haproxy
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: tls}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: to-https
  namespace: gwhs
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [app.gwhs.example.com]
  rules:
  - filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: app
  namespace: gwhs
spec:
  parentRefs: [{name: gw, sectionName: https}]
  hostnames: [app.gwhs.example.com]
  rules:
  - backendRefs: [{name: web, port: 80}]
`)
	r := startRouter(t, m.Dir, nil)
	resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("app.gwhs.example.com", "/a?q=1") }, "gwhs-web")
	if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "app.gwhs.example.com" {
		t.Errorf("the client saw %v, want the listener's certificate", subject(resp))
	}
	resp = expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("app.gwhs.example.com", "/a?q=1") }, 301)
	if loc := resp.Header.Get("Location"); loc != "https://app.gwhs.example.com/a?q=1" {
		t.Errorf("Location %q, want https://app.gwhs.example.com/a?q=1", loc)
	}
}

// TestWildcardRouteBesideHostnamedListenersKeepsTheErrorPage: a wildcard
// Route (wildcardPolicy Subdomain) with a path, beside a Gateway whose
// listeners all have hostnames: a request on its domain's other paths is
// answered by the router's 503 error page, as without a Gateway (not by
// the Gateway API's answers), and the Gateway's hostname is still served.
func TestWildcardRouteBesideHostnamedListenersKeepsTheErrorPage(t *testing.T) {
	m := newManifests(t)
	m.Write("services.yaml", backendServices(t, "wild", "wild")+"---\n"+backendServices(t, "shop", "gw"))
	m.Write("route.yaml", wildcardYAML("wild", "w", "w.abc.xyz", "/a", "wild", ""))
	m.Write("gateway.yaml", gatewayWithListeners("shop", `{name: named, port: 80, protocol: HTTP, hostname: foo.bar.com}`)+`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: named, namespace: shop}
spec:
  parentRefs: [{name: haproxy}]
  rules:
  - matches: [{path: {value: /p}}]
    backendRefs: [{name: gw, port: 80}]
`)
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_ALLOW_WILDCARD_ROUTES": "true"})
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	expectBackend(t, loadTimeout, get("foo.bar.com", "/p/q"), "gw")
	expectBackend(t, loadTimeout, get("any.abc.xyz", "/a/b"), "wild")
	for _, tc := range []struct{ host, path string }{
		{"any.abc.xyz", "/other"},
		{"w.abc.xyz", "/"},
		{"elsewhere.example.com", "/p"},
	} {
		resp, err := r.httpGet(tc.host, tc.path)
		must(t, err)
		if resp.Status != 503 || !strings.Contains(resp.Body, "Application is not available") {
			t.Errorf("%s%s: got %d %q, want the router's 503 error page", tc.host, tc.path, resp.Status, resp.Body)
		}
	}
	// The Gateway's hostname answers 404 for paths no route of it matches.
	expectStatus(t, 5*time.Second, get("foo.bar.com", "/x"), 404)
}
