package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestHTTPRouteCORSAnswersPreflightsAndMarksResponses: a rule's CORS
// filter, through real HAProxy. A preflight request (OPTIONS with Origin
// and Access-Control-Request-Method) from an allowed origin is answered by
// the router with the Access-Control-Allow-* headers, from another origin
// with 403, neither reaching the backend; other requests reach it, and its
// responses to an allowed origin carry the origin, credentials and exposed
// headers. Origins: exact, "*." wildcards (one or more labels), the
// scheme's default port written or not, compared without case; "*" echoes
// the requested method and headers (the headers whole, commas and all).
func TestHTTPRouteCORSAnswersPreflightsAndMarksResponses(t *testing.T) {
	be := startBackend(t, "cors-be")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("gwc", "web", be))
	m.Write("gateway.yaml", gatewayYAML("haproxy", "haproxy.router.openshift.io/gateway-controller"))
	m.Write("route.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: cors
  namespace: gwc
spec:
  parentRefs:
  - {name: haproxy, namespace: infra}
  hostnames: [cors.gwc.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /listed}}]
    backendRefs: [{name: web, port: 80}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.foo.com", "https://*.bar.com", "http://local.test:8080"]
        allowMethods: [GET, OPTIONS]
        allowHeaders: [x-header-1, x-100%, 'x-!#$%&''*+.^_`+"`"+`|~']
        exposeHeaders: [x-header-3]
        allowCredentials: true
        maxAge: 3600
  - matches: [{path: {type: PathPrefix, value: /any}}]
    backendRefs: [{name: web, port: 80}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["*"]
        allowMethods: ["*"]
        allowHeaders: ["*"]
  - matches: [{path: {type: PathPrefix, value: /hosts}}]
    backendRefs: [{name: web, port: 80}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["http://*", "https://*:8443"]
  - matches: [{path: {type: PathPrefix, value: /none}}]
    backendRefs: [{name: web, port: 80}]
    filters:
    - type: CORS
      cors:
        allowMethods: [GET]
`)
	m.Write("largest.yaml", largestCORS())
	r := startRouter(t, m.Dir, nil)
	const host = "cors.gwc.example.com"
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(host, "/listed") }, "cors-be")

	preflight := func(path, origin string, more ...string) func() (response, error) {
		hdr := []string{"Origin", origin}
		if !slices.Contains(more, "Access-Control-Request-Method") {
			hdr = append(hdr, "Access-Control-Request-Method", "GET")
		}
		return requestWith(r, http.MethodOptions, host, path, append(hdr, more...)...)
	}
	listed := map[string]string{
		"Access-Control-Allow-Methods": "GET, OPTIONS", "Access-Control-Allow-Headers": "x-header-1, x-100%, x-!#$%&'*+.^_`|~",
		"Access-Control-Expose-Headers": "x-header-3", "Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age": "3600", "Vary": "Origin",
	}
	cases := []struct {
		name    string
		get     func() (response, error)
		status  int
		backend bool              // answered by the backend
		origin  string            // Access-Control-Allow-Origin wanted ("": none)
		headers map[string]string // other headers wanted ("": absent)
	}{
		{"a preflight from a listed origin is answered by the router", preflight("/listed", "https://www.foo.com"), 204, false, "https://www.foo.com", listed},
		{"the scheme's port written is the same origin", preflight("/listed", "https://www.foo.com:443"), 204, false, "https://www.foo.com:443", listed},
		{"origins are compared without case", preflight("/listed", "HTTPS://WWW.Foo.com"), 204, false, "HTTPS://WWW.Foo.com", listed},
		{"a wildcard takes one label", preflight("/listed", "https://www.bar.com"), 204, false, "https://www.bar.com", listed},
		{"a wildcard takes several labels", preflight("/listed", "https://a.b.bar.com"), 204, false, "https://a.b.bar.com", listed},
		{"a listed port must be the port", preflight("/listed", "http://local.test:8080"), 204, false, "http://local.test:8080", listed},
		{"a wildcard takes no empty label", preflight("/listed", "https://bar.com"), 403, false, "", map[string]string{"Access-Control-Allow-Methods": ""}},
		{"another port is another origin", preflight("/listed", "http://local.test"), 403, false, "", nil},
		{"another scheme is another origin", preflight("/listed", "http://www.foo.com"), 403, false, "", nil},
		{"a path is not a host", preflight("/listed", "https://evil.example/x.bar.com"), 403, false, "", nil},
		{"a preflight from another origin is refused", preflight("/listed", "https://foobar.com"), 403, false, "", nil},
		{"an empty path segment is a path too", preflight("/listed", "https://evil.example//x.bar.com"), 403, false, "", nil},
		{"a wildcard's scheme is its own", preflight("/listed", "http://www.bar.com"), 403, false, "", nil},
		{"a wildcard with the default port written", preflight("/listed", "https://a.bar.com:443"), 204, false, "https://a.bar.com:443", nil},
		{"a wildcard without case", preflight("/listed", "HTTPS://A.BAR.COM"), 204, false, "HTTPS://A.BAR.COM", nil},
		{"the last of two Origin headers is the one checked and echoed", requestWith(r, http.MethodOptions, host, "/listed", "Origin", "https://www.foo.com", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET"), 403, false, "", nil},
		{"the last of two Origin headers, allowed", requestWith(r, http.MethodOptions, host, "/listed", "Origin", "https://evil.example", "Origin", "https://www.foo.com", "Access-Control-Request-Method", "GET"), 204, false, "https://www.foo.com", nil},
		{"an allowed origin's request gets the headers", getHeaders(r, host, "/listed", "Origin", "https://www.foo.com"), 200, true, "https://www.foo.com",
			map[string]string{"Access-Control-Allow-Credentials": "true", "Access-Control-Expose-Headers": "x-header-3", "Vary": "Origin", "Access-Control-Max-Age": ""}},
		{"another origin's request gets none", getHeaders(r, host, "/listed", "Origin", "https://foobar.com"), 200, true, "",
			map[string]string{"Access-Control-Allow-Credentials": "", "Access-Control-Expose-Headers": ""}},
		{"an OPTIONS request that is no preflight reaches the backend", requestWith(r, http.MethodOptions, host, "/listed", "Origin", "https://www.foo.com"), 200, true, "https://www.foo.com", nil},
		{"any origin, method and headers are echoed", preflight("/any", "https://x.example", "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "x-a, x-b"), 204, false, "https://x.example",
			map[string]string{"Access-Control-Allow-Methods": "PUT", "Access-Control-Allow-Headers": "x-a, x-b", "Access-Control-Allow-Credentials": "", "Access-Control-Max-Age": "5"}},
		{"any host on the default port", preflight("/hosts", "http://a.test"), 204, false, "http://a.test", map[string]string{"Access-Control-Max-Age": "5"}},
		{"any host on the default port, written", preflight("/hosts", "http://a.test:80"), 204, false, "http://a.test:80", nil},
		{"any host on another port", preflight("/hosts", "http://a.test:8080"), 403, false, "", nil},
		{"any host on a listed port", preflight("/hosts", "https://a.b.test:8443"), 204, false, "https://a.b.test:8443", nil},
		{"any host, an IPv6 address", preflight("/hosts", "http://[::1]"), 204, false, "http://[::1]", nil},
		{"any host, not a path", preflight("/hosts", "http://a.test/x"), 403, false, "", nil},
		{"any host, not the listed port", preflight("/hosts", "https://a.test"), 403, false, "", nil},
		{"no origin allowed: preflights refused", preflight("/none", "https://www.foo.com"), 403, false, "", nil},
		{"no origin allowed: requests served", getHeaders(r, host, "/none", "Origin", "https://www.foo.com"), 200, true, "", map[string]string{"Vary": "Origin"}},
		{"no requested headers, none allowed", preflight("/any", "https://x.example"), 204, false, "https://x.example",
			map[string]string{"Access-Control-Allow-Methods": "GET", "Access-Control-Allow-Headers": ""}},
	}
	// The largest filter the CRD takes: HAProxy starts with it, and its
	// last origins are allowed.
	for _, origin := range []string{largestOrigin(62, "x"), largestOrigin(63, "a.b")} {
		resp := expectStatus(t, loadTimeout, requestWith(r, http.MethodOptions, "cors-max.gwc.example.com", "/",
			"Origin", origin, "Access-Control-Request-Method", "GET"), 204)
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
			t.Errorf("the largest filter, origin %s: Access-Control-Allow-Origin %q", origin, got)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.get()
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status || (resp.backend() == "cors-be") != tc.backend {
				t.Errorf("status %d from backend %q, want %d (backend: %v)\n%s", resp.Status, resp.backend(), tc.status, tc.backend, resp.Body)
			}
			if got := strings.Join(resp.Header.Values("Access-Control-Allow-Origin"), ","); got != tc.origin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.origin)
			}
			for h, want := range tc.headers {
				if got := strings.Join(resp.Header.Values(h), ","); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
}

// largestOrigin is the i-th origin of largestCORS (i even: exact; odd:
// a wildcard's, with label in front) as a client sends it.
func largestOrigin(i int, label string) string {
	host := fmt.Sprintf("o%02d.%s.test", i, strings.Repeat("h", 200))
	if i%2 == 1 {
		return "https://" + label + "." + host
	}
	return "https://" + host
}

// largestCORS is an HTTPRoute whose CORS filter has as many origins and
// header names as the CRD takes, the origins near their longest, the names
// as long as the two lists may be (4,096 bytes together).
func largestCORS() string {
	var origins, names []string
	for i := 0; i < 64; i++ {
		o := fmt.Sprintf("https://o%02d.%s.test", i, strings.Repeat("h", 200))
		if i%2 == 1 {
			o = strings.Replace(o, "https://", "https://*.", 1)
		}
		origins = append(origins, `"`+o+`"`)
		names = append(names, fmt.Sprintf("x-%02d-%s", i, strings.Repeat("n", 24))) // (both lists just under 4096 bytes)
	}
	return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: largest
  namespace: gwc
spec:
  parentRefs:
  - {name: haproxy, namespace: infra}
  hostnames: [cors-max.gwc.example.com]
  rules:
  - backendRefs: [{name: web, port: 80}]
    filters:
    - type: CORS
      cors:
        allowOrigins: [` + strings.Join(origins, ", ") + `]
        allowMethods: [GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH]
        allowHeaders: [` + strings.Join(names, ", ") + `]
        exposeHeaders: [` + strings.Join(names, ", ") + `]
        allowCredentials: true
        maxAge: 2147483647
`
}
