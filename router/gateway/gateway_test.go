package gateway

import (
	cryptotls "crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/testcerts"
)

// objects is a View of objects given as YAML documents, as a user would
// apply them.
type objects struct {
	classes    []*gatewayv1.GatewayClass
	gateways   []*gatewayv1.Gateway
	httpRoutes []*gatewayv1.HTTPRoute
	tlsRoutes  []*gatewayv1.TLSRoute
	// noTLSRoutes: TLSRoutes are not served (TLSRoutesServed).
	noTLSRoutes bool
	grants      []*gatewayv1.ReferenceGrant
	namespaces  map[string]*corev1.Namespace
	services    map[string]*corev1.Service
	routes      map[string]*routev1.Route
	secrets     map[string]*corev1.Secret
}

func (o *objects) GatewayClasses() []*gatewayv1.GatewayClass    { return o.classes }
func (o *objects) Gateways() []*gatewayv1.Gateway               { return o.gateways }
func (o *objects) HTTPRoutes() []*gatewayv1.HTTPRoute           { return o.httpRoutes }
func (o *objects) TLSRoutes() []*gatewayv1.TLSRoute             { return o.tlsRoutes }
func (o *objects) TLSRoutesServed() bool                        { return !o.noTLSRoutes }
func (o *objects) ReferenceGrants() []*gatewayv1.ReferenceGrant { return o.grants }
func (o *objects) Namespace(name string) *corev1.Namespace      { return o.namespaces[name] }
func (o *objects) Service(ns, name string) *corev1.Service      { return o.services[ns+"/"+name] }
func (o *objects) Route(ns, name string) *routev1.Route         { return o.routes[ns+"/"+name] }
func (o *objects) Secret(ns, name string) *corev1.Secret        { return o.secrets[ns+"/"+name] }

// view decodes YAML documents separated by "---" (namespace "default" when
// a namespaced object names none).
func view(t *testing.T, docs string) *objects {
	t.Helper()
	o := &objects{namespaces: map[string]*corev1.Namespace{}, services: map[string]*corev1.Service{}, routes: map[string]*routev1.Route{}, secrets: map[string]*corev1.Secret{}}
	for _, doc := range strings.Split(docs, "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		var obj metav1.Object
		switch tm.Kind {
		case "GatewayClass":
			c := &gatewayv1.GatewayClass{}
			o.classes, obj = append(o.classes, c), c
		case "Gateway":
			g := &gatewayv1.Gateway{}
			o.gateways, obj = append(o.gateways, g), g
		case "HTTPRoute":
			r := &gatewayv1.HTTPRoute{}
			o.httpRoutes, obj = append(o.httpRoutes, r), r
		case "TLSRoute":
			r := &gatewayv1.TLSRoute{}
			o.tlsRoutes, obj = append(o.tlsRoutes, r), r
		case "ReferenceGrant":
			g := &gatewayv1.ReferenceGrant{}
			o.grants, obj = append(o.grants, g), g
		case "Namespace":
			n := &corev1.Namespace{}
			obj = n
			defer func() { o.namespaces[n.Name] = n }()
		case "Service":
			s := &corev1.Service{}
			obj = s
			defer func() { o.services[s.Namespace+"/"+s.Name] = s }()
		case "Route":
			r := &routev1.Route{}
			obj = r
			defer func() { o.routes[r.Namespace+"/"+r.Name] = r }()
		case "Secret":
			sec := &corev1.Secret{}
			obj = sec
			defer func() { o.secrets[sec.Namespace+"/"+sec.Name] = sec }()
		default:
			t.Fatalf("kind %q", tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %v", tm.Kind, err)
		}
		if obj.GetNamespace() == "" && tm.Kind != "GatewayClass" && tm.Kind != "Namespace" {
			obj.SetNamespace("default")
		}
		obj.SetGeneration(1)
	}
	return o
}

const (
	class = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: haproxy}
spec: {controllerName: haproxy.router.openshift.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: istio}
spec: {controllerName: istio.io/gateway-controller}`
	web = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{name: http, port: 8080, targetPort: 3000}, {name: alt, port: 8443, targetPort: 3443}]
---
apiVersion: v1
kind: Service
metadata: {name: canary}
spec:
  ports: [{name: http, port: 8080, targetPort: 3000}]`
	gw = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: haproxy
  listeners:
  - {name: http, port: 80, protocol: HTTP}`
)

// onGateway are the GatewayClass, the Gateway gw and the Services web and
// canary most tests attach HTTPRoutes to.
const onGateway = class + "\n---\n" + gw + "\n---\n" + web

// gatewayDoc is Gateway gw of class haproxy in namespace default with
// listeners (flow-style YAML maps, one a listener), ending with a newline.
func gatewayDoc(listeners ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec:\n  gatewayClassName: haproxy\n  listeners:\n")
	for _, l := range listeners {
		b.WriteString("  - " + l + "\n")
	}
	return b.String()
}

// httpRouteHead is an HTTPRoute document of namespace default attached to
// Gateway gw, up to "rules:" (the test writes its rules after it).
func httpRouteHead(name, hostnames string) string {
	return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%s]
  rules:`, name, hostnames)
}

// expectLines fails t unless got are want, in order (what names them).
func expectLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// conditions describes conditions as "Type=Status/Reason" words.
func conditions(cs []metav1.Condition) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return strings.Join(out, " ")
}

// routes describes routes as "namespace/httproute host/path -> to[weight],alternates... port",
// with "namespace/httproute" the HTTPRoute the name says (or the whole
// name when it is not NAME.gw-HASH of its hostname and path).
func routes(rs []*routev1.Route) []string {
	var out []string
	for _, r := range rs {
		name, path := r.Name, r.Spec.Path
		if i := strings.LastIndex(name, ".gw-"); i > 0 {
			switch name {
			case routeName(name[:i], r.Spec.Host, path):
				name = name[:i]
			case routeName(name[:i], r.Spec.Host, "="+path):
				name, path = name[:i], "="+path
			}
		}
		s := fmt.Sprintf("%s/%s %s%s -> %s", r.Namespace, name, r.Spec.Host, path, r.Spec.To.Name)
		if w := r.Spec.To.Weight; w != nil {
			s += fmt.Sprintf("[%d]", *w)
		}
		for _, b := range r.Spec.AlternateBackends {
			s += fmt.Sprintf(",%s[%d]", b.Name, *b.Weight)
		}
		if r.Spec.Port != nil {
			s += " port " + r.Spec.Port.TargetPort.String()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestOnlyTheClassesOfThisControllerAndTheirGatewaysAreTranslated(t *testing.T) {
	v := view(t, class+"\n---\n"+gw+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other}
spec:
  gatewayClassName: istio
  listeners:
  - {name: http, port: 80, protocol: HTTP}`)
	res := Translate(v, Options{})
	if len(res.Classes) != 1 || conditions(res.Classes["haproxy"].Conditions) != "Accepted=True/Accepted" {
		t.Errorf("classes %+v, want haproxy alone, Accepted", res.Classes)
	}
	if f := res.Classes["haproxy"].SupportedFeatures; len(f) != len(SupportedFeatures) || f[0].Name != SupportedFeatures[0] ||
		!slices.IsSortedFunc(f, func(a, b gatewayv1.SupportedFeature) int { return strings.Compare(string(a.Name), string(b.Name)) }) {
		t.Errorf("supported features %v, want SupportedFeatures, sorted (as the spec asks)", f)
	}
	// Where the API server does not serve TLSRoutes: not claimed.
	v.noTLSRoutes = true
	if f := Translate(v, Options{}).Classes["haproxy"].SupportedFeatures; len(f) != len(SupportedFeatures)-1 ||
		slices.ContainsFunc(f, func(s gatewayv1.SupportedFeature) bool { return s.Name == "TLSRoute" }) {
		t.Errorf("supported features without TLSRoutes served: %v", f)
	}
	v.noTLSRoutes = false
	if len(res.Gateways) != 1 || res.Gateways["default/gw"] == nil {
		t.Errorf("gateways %v, want default/gw alone", res.Gateways)
	}
	res = Translate(v, Options{ControllerName: "istio.io/gateway-controller"})
	if len(res.Classes) != 1 || res.Gateways["default/other"] == nil || len(res.Gateways) != 1 {
		t.Errorf("with ROUTER_GATEWAY_CONTROLLER_NAME=istio.io/gateway-controller: classes %v, gateways %v", res.Classes, res.Gateways)
	}
}

func TestGatewaysOfNamespacesNotSelectedAreNotTranslated(t *testing.T) {
	v := view(t, class+"\n---\n"+gw+`
---
apiVersion: v1
kind: Namespace
metadata: {name: default, labels: {shard: a}}`)
	if res := Translate(v, Options{NamespaceLabels: labels.SelectorFromSet(labels.Set{"shard": "b"})}); len(res.Gateways) != 0 {
		t.Errorf("gateways %v in a namespace NAMESPACE_LABELS does not select", res.Gateways)
	}
	if res := Translate(v, Options{NamespaceLabels: labels.SelectorFromSet(labels.Set{"shard": "a"})}); len(res.Gateways) != 1 {
		t.Errorf("gateways %v, want the selected namespace's", res.Gateways)
	}
}

func TestListenersOtherThanHTTPOnPort80GetTheSpecsConditions(t *testing.T) {
	tests := []struct {
		name, listeners string
		want            []string
		gateway         string
	}{
		{"HTTP on 80 is served", `
  - {name: http, port: 80, protocol: HTTP}`,
			[]string{"http [HTTPRoute] Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts"},
			"Accepted=True/Accepted Programmed=True/Programmed"},
		{"HTTP on another port, HTTPS, UDP", `
  - {name: http, port: 80, protocol: HTTP}
  - {name: alt, port: 8080, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}
  - {name: udp, port: 53, protocol: UDP}`,
			[]string{
				"http [HTTPRoute] Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
				"alt [] Accepted=False/PortUnavailable Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
				"https [HTTPRoute] Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/InvalidCertificateRef Conflicted=False/NoConflicts",
				"udp [] Accepted=False/UnsupportedProtocol Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
			},
			"Accepted=True/ListenersNotValid Programmed=True/Programmed"},
		{"route kinds: invalid alone, and next to HTTPRoute", `
  - {name: bad, port: 80, protocol: HTTP, hostname: a.example.com, allowedRoutes: {kinds: [{kind: TCPRoute}]}}
  - {name: mixed, port: 80, protocol: HTTP, hostname: b.example.com, allowedRoutes: {kinds: [{kind: TCPRoute}, {kind: HTTPRoute}]}}`,
			[]string{
				"bad [] Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/InvalidRouteKinds Conflicted=False/NoConflicts",
				"mixed [HTTPRoute] Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=False/InvalidRouteKinds Conflicted=False/NoConflicts",
			},
			"Accepted=True/ListenersNotValid Programmed=True/Programmed"},
		{"two listeners with one port and hostname conflict", `
  - {name: one, port: 80, protocol: HTTP, hostname: a.example.com}
  - {name: two, port: 80, protocol: HTTP, hostname: a.example.com}`,
			[]string{
				"one [HTTPRoute] Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=True/HostnameConflict",
				"two [HTTPRoute] Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=True/HostnameConflict",
			},
			"Accepted=False/ListenersNotValid Programmed=False/Invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := view(t, class+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: haproxy
  listeners:`+tc.listeners)
			gs := Translate(v, Options{}).Gateways["default/gw"]
			var got []string
			for _, l := range gs.Listeners {
				var kinds []string
				for _, k := range l.SupportedKinds {
					kinds = append(kinds, string(k.Kind))
				}
				got = append(got, fmt.Sprintf("%s %v %s", l.Name, kinds, conditions(l.Conditions)))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("listeners\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if c := conditions(gs.Conditions); c != tc.gateway {
				t.Errorf("gateway %s, want %s", c, tc.gateway)
			}
		})
	}
}

func TestGatewayAddressesAreTheRoutersOwn(t *testing.T) {
	canonical := gatewayv1.GatewayStatusAddress{Type: ptrTo(gatewayv1.HostnameAddressType), Value: "router.apps.example.com"}
	v := view(t, class+"\n---\n"+gw+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: static}
spec:
  gatewayClassName: haproxy
  addresses: [{value: 192.0.2.7}]
  listeners:
  - {name: http, port: 80, protocol: HTTP}`)
	res := Translate(v, Options{Addresses: []gatewayv1.GatewayStatusAddress{canonical}})
	describe := func(as []gatewayv1.GatewayStatusAddress) string {
		var out []string
		for _, a := range as {
			out = append(out, string(*a.Type)+" "+a.Value)
		}
		return strings.Join(out, ",")
	}
	if got := describe(res.Gateways["default/gw"].Addresses); got != "Hostname router.apps.example.com" {
		t.Errorf("gw addresses %s, want the canonical hostname", got)
	}
	static := res.Gateways["default/static"]
	if got := describe(static.Addresses); got != "Hostname router.apps.example.com" || conditions(static.Conditions) != "Accepted=True/Accepted Programmed=False/AddressNotAssigned" {
		t.Errorf("a Gateway asking for an address: addresses %s, %s; want the router's, not programmed", got, conditions(static.Conditions))
	}
}

func TestAnHTTPRouteIsOneRoutePerHostnameRuleAndPathPrefix(t *testing.T) {
	v := view(t, class+"\n---\n"+gw+"\n---\n"+web+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, creationTimestamp: "2026-01-02T03:04:05Z", uid: u1}
spec:
  parentRefs: [{name: gw}]
  hostnames: [www.example.com, Shop.Example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /cart/}
    - path: {value: /api}
    backendRefs:
    - {name: web, port: 8080, weight: 900000}
    - {name: canary, port: 8080, weight: 100000}
  - backendRefs:
    - {name: web, port: 8080}`)
	res := Translate(v, Options{})
	want := []string{
		"default/shop shop.example.com -> web[1] port http",
		"default/shop shop.example.com/api -> web[256],canary[28] port http",
		"default/shop shop.example.com/cart -> web[256],canary[28] port http",
		"default/shop www.example.com -> web[1] port http",
		"default/shop www.example.com/api -> web[256],canary[28] port http",
		"default/shop www.example.com/cart -> web[256],canary[28] port http",
	}
	got := routes(res.Routes)
	expectLines(t, "routes", got, want)
	r := res.Routes[0]
	if r.UID != "u1" || r.CreationTimestamp.Year() != 2026 || r.Annotations != nil || r.Spec.TLS != nil {
		t.Errorf("route %+v: want the HTTPRoute's UID and creation time, no annotations, no TLS", r.ObjectMeta)
	}
	if o := res.Origins[admission.Key("default/"+routeName("shop", "www.example.com", "/api"))]; o.HTTPRoute != "default/shop" || o.Rule != 0 || o.Match != 1 || fmt.Sprint(o.Parents) != "[0]" {
		t.Errorf("origin %+v", o)
	}
	res.Finish(admitAll(res.Routes))
	if l := res.Gateways["default/gw"].Listeners[0]; l.AttachedRoutes != 1 {
		t.Errorf("attachedRoutes %d, want 1", l.AttachedRoutes)
	}
	if c := conditions(res.HTTPRoutes["default/shop"].Parents[0].Conditions); c != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
		t.Errorf("route status %s", c)
	}
}

func admitAll(rs []*routev1.Route) map[admission.Key]admission.Result {
	out := map[admission.Key]admission.Result{}
	for _, r := range rs {
		out[admission.KeyOf(r)] = admission.Result{Admitted: true, Host: r.Spec.Host}
	}
	return out
}

func TestHostnameIntersection(t *testing.T) {
	tests := []struct {
		listener string
		route    []gatewayv1.Hostname
		want     string
	}{
		{"", nil, "[]"},
		{"", []gatewayv1.Hostname{"a.example.com", "*.example.org"}, "[a.example.com *.example.org]"},
		{"a.example.com", nil, "[a.example.com]"},
		{"a.example.com", []gatewayv1.Hostname{"a.example.com", "b.example.com"}, "[a.example.com]"},
		{"*.example.com", []gatewayv1.Hostname{"a.example.com", "a.b.example.com", "example.com", "a.example.org"}, "[a.example.com a.b.example.com]"},
		{"a.example.com", []gatewayv1.Hostname{"*.example.com"}, "[a.example.com]"},
		{"*.example.com", []gatewayv1.Hostname{"*.b.example.com", "*.example.com"}, "[*.b.example.com *.example.com]"},
		{"a.example.com", []gatewayv1.Hostname{"*.a.example.com"}, "[]"},
	}
	for _, tc := range tests {
		var l *gatewayv1.Hostname
		if tc.listener != "" {
			l = ptrTo(gatewayv1.Hostname(tc.listener))
		}
		if got := fmt.Sprint(intersect(l, tc.route)); got != tc.want {
			t.Errorf("listener %q, route %v: %s, want %s", tc.listener, tc.route, got, tc.want)
		}
	}
}

func TestAllowedRoutesDecideWhichNamespacesAttach(t *testing.T) {
	listeners := `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: haproxy
  listeners:
  - {name: same, port: 80, protocol: HTTP, hostname: same.example.com}
  - {name: all, port: 80, protocol: HTTP, hostname: all.example.com, allowedRoutes: {namespaces: {from: All}}}
  - {name: selector, port: 80, protocol: HTTP, hostname: sel.example.com, allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {team: web}}}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {team: web}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}`
	route := func(ns, section string) string {
		return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r-%s, namespace: %s}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: %s}]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`, section, ns, section)
	}
	tests := []struct {
		ns, section, want string
	}{
		{"infra", "same", "Accepted=True/Accepted"},
		{"app", "same", "Accepted=False/NotAllowedByListeners"},
		{"other", "all", "Accepted=True/Accepted"},
		{"app", "selector", "Accepted=True/Accepted"},
		{"other", "selector", "Accepted=False/NotAllowedByListeners"},
		{"app", "nosuch", "Accepted=False/NoMatchingParent"},
	}
	for _, tc := range tests {
		svc := fmt.Sprintf("\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: %s}\nspec: {ports: [{port: 8080}]}", tc.ns)
		v := view(t, class+listeners+route(tc.ns, tc.section)+svc)
		res := Translate(v, Options{})
		rs := res.HTTPRoutes[store.KeyOf(tc.ns, "r-"+tc.section)]
		if rs == nil {
			t.Fatalf("%s in %s: no status", tc.section, tc.ns)
		}
		if got := conditions(rs.Parents[0].Conditions[:1]); got != tc.want {
			t.Errorf("%s in %s: %s, want %s", tc.section, tc.ns, got, tc.want)
		}
		served := len(res.Routes) == 1
		if served != strings.HasPrefix(tc.want, "Accepted=True") {
			t.Errorf("%s in %s: routes %v", tc.section, tc.ns, routes(res.Routes))
		}
	}
}

func TestWhatCannotBeServedIsInTheHTTPRoutesStatus(t *testing.T) {
	header := class + "\n---\n" + gatewayDoc(`{name: http, port: 80, protocol: HTTP, hostname: "*.example.com"}`) + `---
` + web + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com]
  rules:
`
	tests := []struct {
		name, rules string
		routes      int
		want        string
		message     string
	}{
		// A rule without a valid backend is served: answered with 500.
		{"a Service of another kind", `
  - backendRefs: [{name: web, port: 8080, kind: ConfigMap}]`, 1,
			"Accepted=True/Accepted ResolvedRefs=False/InvalidKind", "backendRef web: only Services are supported"},
		{"a missing Service, next to a served rule", `
  - backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /b}}]
    backendRefs: [{name: nosuch, port: 8080}]`, 2,
			"Accepted=True/Accepted ResolvedRefs=False/BackendNotFound", "backendRef nosuch: no such Service"},
		{"a port the Service lacks", `
  - backendRefs: [{name: web, port: 9999}]`, 1,
			"Accepted=True/Accepted ResolvedRefs=False/BackendNotFound", "the Service has no port 9999"},
		{"a Service of another namespace without a grant", `
  - backendRefs: [{name: web, namespace: elsewhere, port: 8080}]`, 1,
			"Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted", "no ReferenceGrant allows it"},
		{"a valid and an invalid backend: served, the invalid one's share answered 500", `
  - backendRefs: [{name: web, port: 8080}, {name: nosuch, port: 8080}]`, 1,
			"Accepted=True/Accepted ResolvedRefs=False/BackendNotFound", "backendRef nosuch: no such Service"},
		{"filters, regular expressions the router does not take", `
  - backendRefs: [{name: web, port: 8080}]
    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: web, port: 8080}}}]
  - matches: [{path: {type: RegularExpression, value: "/(a+)+"}}, {queryParams: [{name: h, value: "v(", type: RegularExpression}]}, {headers: [{name: h, value: "(?m)^x", type: RegularExpression}]}, {path: {value: /ok}}]
    backendRefs: [{name: web, port: 8080}]`, 1,
			"Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue",
			"rule 0: filters of type RequestMirror are not served by this router yet; rule 1, match 0: path expression \"/(a+)+\": a repetition inside a repetition is not taken; rule 1, match 1: query parameter match \"h\": expression \"v(\": not a regular expression: error parsing regexp: missing closing ): `v(`; rule 1, match 2: header match \"h\": expression \"(?m)^x\": the multi-line flag (m) is not taken"},
		{"rewrites and timeouts the router cannot serve", `
  - backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {type: Exact, value: /exact}}, {path: {value: /prefix}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]
    backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /space}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: "/a b"}}}]
    backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /host}}]
    filters: [{type: URLRewrite, urlRewrite: {hostname: "b.example.com"}}, {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: host, value: c.example.com}]}}]
    backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /slow}}]
    timeouts: {request: 1.5s}
    backendRefs: [{name: web, port: 8080}]`, 2,
			"Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue",
			"rule 1, match 0: ReplacePrefixMatch with an Exact path match; rule 2: URLRewrite: path \"/a b\" is not served (a path starting with / of letters, digits and /._~!*+,;=:@-); rule 3: header host is modified twice (header names are compared without case); rule 4: timeouts.request: \"1.5s\" is not a duration such as 1h2m3s4ms"},
		{"one Service on two ports", `
  - backendRefs: [{name: web, port: 8080}, {name: canary, port: 8080}, {name: web, port: 8443}]`, 0,
			"Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs", "backendRefs name Service web on two ports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Translate(view(t, header+tc.rules), Options{})
			if len(res.Routes) != tc.routes {
				t.Errorf("routes %v, want %d", routes(res.Routes), tc.routes)
			}
			res.Finish(admitAll(res.Routes))
			p := res.HTTPRoutes["default/r"].Parents[0]
			if got := conditions(p.Conditions); got != tc.want {
				t.Errorf("conditions %s, want %s", got, tc.want)
			}
			var messages []string
			for _, c := range p.Conditions {
				messages = append(messages, c.Message)
			}
			if !strings.Contains(strings.Join(messages, "|"), tc.message) {
				t.Errorf("messages %q do not say %q", messages, tc.message)
			}
			if p.ControllerName != DefaultControllerName || p.ParentRef.Name != "gw" {
				t.Errorf("parent %+v", p)
			}
		})
	}
}

// TestAReferenceGrantLetsACrossNamespaceBackendServe: a backend of
// another namespace is served when a ReferenceGrant there allows it (the
// route's backend namespace says where); without one, the rule answers 500.
func TestAReferenceGrantLetsACrossNamespaceBackendServe(t *testing.T) {
	docs := class + "\n---\n" + gw + `
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: backends}
spec:
  ports: [{name: http, port: 8080, targetPort: 3000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: web, namespace: backends, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: g, namespace: backends}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default}]
  to: [{group: "", kind: Service, name: web}]`
	res := Translate(view(t, docs), Options{})
	res.Finish(admitAll(res.Routes))
	c := res.HTTPRoutes["default/r"].Parents[0].Conditions
	if got := conditions(c); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
		t.Errorf("granted cross-namespace backend: %s", got)
	}
	if len(res.Routes) != 1 || res.MadeRoute(res.Routes[0]).BackendNamespaces[0] != "backends" || res.MadeRoute(res.Routes[0]).Respond != 0 {
		t.Fatalf("routes %v, want one to backends/web", routes(res.Routes))
	}
	if got := routes(res.Routes); got[0] != "default/r a.example.com -> web[1] port http" {
		t.Errorf("route %s", got[0])
	}

	withoutGrant, _, _ := strings.Cut(docs, "---\napiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant")
	res = Translate(view(t, withoutGrant), Options{})
	res.Finish(admitAll(res.Routes))
	if got := conditions(res.HTTPRoutes["default/r"].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted" {
		t.Errorf("without a grant: %s", got)
	}
	if len(res.Routes) != 1 || res.MadeRoute(res.Routes[0]).Respond != 500 {
		t.Errorf("without a grant: routes %v, want one answered 500", routes(res.Routes))
	}
}

func TestAdmissionRefusalsOfAllOfAParentsRoutesMakeItNotAccepted(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("r", "a.example.com, b.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`)
	res := Translate(v, Options{})
	refuse := func(keys ...admission.Key) map[admission.Key]admission.Result {
		out := admitAll(res.Routes)
		for _, k := range keys {
			out[k] = admission.Result{Host: out[k].Host, Reason: "HostAlreadyClaimed", Message: "route r already exposes a.example.com and is older"}
		}
		return out
	}
	a, b := admission.Key("default/"+routeName("r", "a.example.com", "")), admission.Key("default/"+routeName("r", "b.example.com", ""))
	res.Finish(refuse(a))
	c := res.HTTPRoutes["default/r"].Parents[0].Conditions
	if got := conditions(c); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue" ||
		!strings.Contains(c[2].Message, "hostname a.example.com, rule 0, match 0: HostAlreadyClaimed") {
		t.Errorf("one host refused: %s (%q)", got, c[2].Message)
	}
	res = Translate(v, Options{})
	res.Finish(refuse(a, b))
	if got := conditions(res.HTTPRoutes["default/r"].Parents[0].Conditions); got != "Accepted=False/HostAlreadyClaimed ResolvedRefs=True/ResolvedRefs" {
		t.Errorf("every host refused: %s", got)
	}
}

// TestWildcardHostnamesAreServedAsSubdomainRoutes: a wildcard hostname is
// a made route for "*.domain" with wildcardPolicy Subdomain, admitted
// without ROUTER_ALLOW_WILDCARD_ROUTES; a Route cannot have such a host.
func TestWildcardHostnamesAreServedAsSubdomainRoutes(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("wild", `"*.Example.com"`)+` [{backendRefs: [{name: web, port: 8080}]}]`)
	res := Translate(v, Options{})
	if got := routes(res.Routes); len(got) != 1 || got[0] != "default/wild *.example.com -> web[1] port http" {
		t.Fatalf("routes %v", got)
	}
	if res.Routes[0].Spec.WildcardPolicy != routev1.WildcardPolicySubdomain {
		t.Errorf("wildcard policy %q", res.Routes[0].Spec.WildcardPolicy)
	}
	d := admission.Admit(res.Routes, admission.Options{Made: res.Made})
	if len(d.Admitted) != 1 {
		t.Errorf("not admitted: %v", d.Results)
	}
	own := res.Routes[0].DeepCopy()
	own.Name = "own"
	d = admission.Admit([]*routev1.Route{own}, admission.Options{Made: res.Made, AllowWildcardRoutes: true})
	if len(d.Admitted) != 0 {
		t.Errorf("a Route for *.example.com admitted")
	}
}

// TestRoutesWithoutHostnamesServeEveryHost: on a listener without a
// hostname, an HTTPRoute without hostnames is served for every host (host
// "*", admitted only as a made route); a rule without a valid backend is
// answered with 500; the listeners' hostnames answer 404 where no path
// matches.
func TestRoutesWithoutHostnamesServeEveryHost(t *testing.T) {
	v := view(t, class+"\n---\n"+gatewayDoc(`{name: any, port: 80, protocol: HTTP}`, `{name: named, port: 80, protocol: HTTP, hostname: Named.example.com}`)+`---
`+web+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: any}
spec:
  parentRefs: [{name: gw, sectionName: any}]
  rules:
  - backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /gone}}]
    backendRefs: [{name: nosuch, port: 8080}]
  - matches: [{path: {value: /none}}]
  - matches: [{path: {type: Exact, value: /gone}}]
    backendRefs: [{name: web, port: 8080}]`)
	res := Translate(v, Options{})
	got := routes(res.Routes)
	want := []string{"default/any * -> web[1] port http", "default/any */gone -> -respond", "default/any */none -> -respond", "default/any *=/gone -> web[1] port http"}
	if !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}
	for _, r := range res.Routes {
		exact := res.MadeRoute(r).ExactPath
		if want := map[bool]int{true: 500, false: 0}[r.Spec.Path != "" && !exact]; res.MadeRoute(r).Respond != want {
			t.Errorf("%s%s answered with %d, want %d", r.Spec.Host, r.Spec.Path, res.MadeRoute(r).Respond, want)
		}
		if exact != (r.Spec.To.Name == "web" && r.Spec.Path == "/gone") {
			t.Errorf("%s%s: exact %v", r.Spec.Host, r.Spec.Path, exact)
		}
	}
	if got, want := fmt.Sprint(res.HostResponses), "[{* 404 true false} {named.example.com 404 true false}]"; got != want {
		t.Errorf("host responses %s, want %s", got, want)
	}
	d := admission.Admit(res.Routes, admission.Options{Made: res.Made, ClaimPath: res.ClaimPath})
	res.Finish(d.Results)
	if len(d.Admitted) != 4 {
		t.Errorf("admitted %d of 4: %v", len(d.Admitted), d.Results)
	}
	if got := conditions(res.HTTPRoutes["default/any"].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=False/BackendNotFound" {
		t.Errorf("conditions %s", got)
	}
}

func TestRouteNamesAreValidStableAndNeverARoutesOwn(t *testing.T) {
	long := strings.Repeat("a", 250)
	if n := routeName(long, "a.example.com", "/p"); len(n) > 253 || len(validation.IsDNS1123Subdomain(n)) > 0 || n == routeName(long[:249]+"b", "a.example.com", "/p") {
		t.Errorf("name of a 250-character HTTPRoute: %q (%d characters)", n, len(n))
	}
	taken := routeName("r", "a.example.com", "")
	v := view(t, onGateway+httpRouteHead("r", "a.example.com, b.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: `+taken+`}
spec: {host: x.example.com, to: {kind: Service, name: web}}`)
	res := Translate(v, Options{})
	if got := fmt.Sprint(routes(res.Routes)); got != "[default/r b.example.com -> web[1] port http]" {
		t.Errorf("routes %s, want the one whose name no Route has", got)
	}
	res.Finish(admitAll(res.Routes))
	if c := res.HTTPRoutes["default/r"].Parents[0].Conditions; len(c) != 3 || !strings.Contains(c[2].Message, "a Route of the namespace has its name, "+taken) {
		t.Errorf("conditions %+v, want PartiallyInvalid naming the Route", c)
	}
	// A hostname added leaves the other routes' names as they were.
	v.httpRoutes[0].Spec.Hostnames = append(v.httpRoutes[0].Spec.Hostnames, "0.example.com")
	again := Translate(v, Options{})
	if len(again.Routes) != 2 || again.Routes[1].Name != res.Routes[0].Name && again.Routes[0].Name != res.Routes[0].Name {
		t.Errorf("names after a hostname was added: %v, want %s kept", routes(again.Routes), res.Routes[0].Name)
	}
}

func TestOneHTTPRouteMakesAtMostMaxRoutesPerHTTPRoute(t *testing.T) {
	var hosts, matches []string
	for i := 0; i < 16; i++ {
		hosts = append(hosts, fmt.Sprintf("h%d.example.com", i))
	}
	for i := 0; i < 64; i++ {
		matches = append(matches, fmt.Sprintf("{path: {value: /p%d}}", i))
	}
	v := view(t, onGateway+httpRouteHead("big", strings.Join(hosts, ", "))+` [{matches: [`+strings.Join(matches, ", ")+`], backendRefs: [{name: web, port: 8080}]}]`)
	res := Translate(v, Options{})
	if len(res.Routes) != MaxRoutesPerHTTPRoute {
		t.Errorf("%d routes of 16 hostnames x 64 paths, want %d", len(res.Routes), MaxRoutesPerHTTPRoute)
	}
	res.Finish(admitAll(res.Routes))
	c := res.HTTPRoutes["default/big"].Parents[0].Conditions
	if conditions(c) != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue" ||
		!strings.Contains(c[2].Message, "beyond the 512 hostname, path pairs served per HTTPRoute; and 507 more") {
		t.Errorf("conditions %s: %q", conditions(c), c[len(c)-1].Message)
	}
}

func TestTheFirstRuleOfAPathIsServedAndLaterOnesListed(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("r", "a.example.com")+`
  - {matches: [{path: {value: /x}}], backendRefs: [{name: web, port: 8080}]}
  - {matches: [{path: {value: /x/}}], backendRefs: [{name: canary, port: 8080}]}`)
	res := Translate(v, Options{})
	if got := fmt.Sprint(routes(res.Routes)); got != "[default/r a.example.com/x -> web[1] port http]" {
		t.Errorf("routes %s, want the first rule's", got)
	}
	res.Finish(admitAll(res.Routes))
	if c := res.HTTPRoutes["default/r"].Parents[0].Conditions; len(c) != 3 || !strings.Contains(c[2].Message, "rule 1, match 0: the same path as hostname a.example.com, rule 0, match 0") {
		t.Errorf("conditions %+v", c)
	}
}

func TestAClassWithParametersIsNotAcceptedNorItsGatewaysServed(t *testing.T) {
	v := view(t, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: haproxy}
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
  parametersRef: {group: example.com, kind: Config, name: c}
---
`+gw)
	res := Translate(v, Options{})
	if c := conditions(res.Classes["haproxy"].Conditions); c != "Accepted=False/InvalidParameters" || len(res.Gateways) != 0 || res.Classes["haproxy"].SupportedFeatures != nil {
		t.Errorf("class %s, gateways %v, features %v", c, res.Gateways, res.Classes["haproxy"].SupportedFeatures)
	}
}

// TestAttachedRoutesCountRoutesOncePerListener: a route attached twice to
// a listener counts once; a route refused by admission still counts (the
// spec: attachment depends on allowedRoutes and parentRefs alone, and
// attachedRoutes counts routes that are not Accepted); so does a route on
// a listener whose certificate is missing. Finishing a Result again
// changes nothing.
func TestAttachedRoutesCountRoutesOncePerListener(t *testing.T) {
	v := view(t, class+"\n---\n"+gw+"\n---\n"+web+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: twice}
spec:
  parentRefs: [{name: gw}, {name: gw, sectionName: http}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: refused}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`)
	res := Translate(v, Options{})
	results := admitAll(res.Routes)
	for k, o := range res.Origins {
		if o.HTTPRoute == "default/refused" {
			results[k] = admission.Result{Host: "b.example.com", Reason: "HostAlreadyClaimed"}
		}
	}
	res.Finish(results)
	if n := res.Gateways["default/gw"].Listeners[0].AttachedRoutes; n != 2 {
		t.Errorf("attachedRoutes %d, want 2 (one route attached twice, one refused)", n)
	}
	// A Result is finished once (the status writer may be handed the
	// same one again): a second Finish counts nothing twice and keeps
	// the first one's conditions.
	refused := res.HTTPRoutes["default/refused"]
	res.Finish(admitAll(res.Routes))
	if n := res.Gateways["default/gw"].Listeners[0].AttachedRoutes; n != 2 || res.HTTPRoutes["default/refused"] != refused {
		t.Errorf("a second Finish: attachedRoutes %d (want 2), the refused route's status replaced: %v", n, res.HTTPRoutes["default/refused"] != refused)
	}

	v = view(t, class+"\n---\n"+web+`
---
`+gatewayDoc(`{name: tls, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: does-not-exist}]}}`)+httpRouteHead("r", "a.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`)
	res = Translate(v, Options{})
	res.Finish(admitAll(res.Routes))
	l := res.Gateways["default/gw"].Listeners[0]
	if l.served || l.AttachedRoutes != 1 || len(res.Routes) != 0 {
		t.Errorf("listener without its certificate: served %v, attachedRoutes %d, routes %v", l.served, l.AttachedRoutes, routes(res.Routes))
	}
}

// tlsSecret returns a kubernetes.io/tls Secret of a certificate for host.
func tlsSecret(t *testing.T, ns, name, host string) *corev1.Secret {
	t.Helper()
	ca, err := testcerts.NewCA("gateway CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue(host, []string{host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(c.CertPEM), "tls.key": []byte(c.KeyPEM)}}
}

func TestHTTPSListenersServeEdgeRoutesWithTheirCertificate(t *testing.T) {
	docs := class + "\n---\n" + web + `
---
` + gatewayDoc(`{name: http, port: 80, protocol: HTTP, hostname: both.example.com}`, `{name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: web-tls}]}}`, `{name: other-ns, port: 443, protocol: HTTPS, hostname: x.example.com, tls: {certificateRefs: [{name: certs, namespace: certs}]}}`, `{name: wrong-type, port: 443, protocol: HTTPS, hostname: y.example.com, tls: {certificateRefs: [{name: opaque}]}}`, `{name: passthrough, port: 443, protocol: HTTPS, hostname: z.example.com, tls: {mode: Passthrough}}`, `{name: alt, port: 8443, protocol: HTTPS, hostname: w.example.com, tls: {certificateRefs: [{name: web-tls}]}}`) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [both.example.com, tls.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`
	v := view(t, docs)
	v.secrets["default/web-tls"] = tlsSecret(t, "default", "web-tls", "tls.example.com")
	v.secrets["certs/certs"] = tlsSecret(t, "certs", "certs", "x.example.com")
	v.secrets["default/opaque"] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque"}, Type: corev1.SecretTypeOpaque}
	res := Translate(v, Options{})
	var got []string
	for _, l := range res.Gateways["default/gw"].Listeners {
		got = append(got, fmt.Sprintf("%s %s", l.Name, conditions(l.Conditions[:3])))
	}
	want := []string{
		"http Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs",
		"https Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs",
		"other-ns Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/RefNotPermitted",
		"wrong-type Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/InvalidCertificateRef",
		"passthrough Accepted=False/UnsupportedValue Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs",
		"alt Accepted=False/PortUnavailable Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs",
	}
	expectLines(t, "listeners", got, want)
	if fmt.Sprint(res.Secrets) != "[default/web-tls default/opaque]" {
		t.Errorf("secrets to watch %v, want those of the served HTTPS listeners the Gateway may use", res.Secrets)
	}
	byHost := map[string]*routev1.Route{}
	for _, r := range res.Routes {
		byHost[r.Spec.Host] = r
	}
	if r := byHost["both.example.com"]; r == nil || r.Spec.TLS == nil || r.Spec.TLS.Termination != routev1.TLSTerminationEdge ||
		r.Spec.TLS.InsecureEdgeTerminationPolicy != routev1.InsecureEdgeTerminationPolicyAllow || r.Spec.TLS.Certificate != string(v.secrets["default/web-tls"].Data["tls.crt"]) {
		t.Errorf("both.example.com (HTTP and HTTPS listeners): %+v", r)
	}
	if r := byHost["tls.example.com"]; r == nil || r.Spec.TLS == nil || r.Spec.TLS.InsecureEdgeTerminationPolicy != routev1.InsecureEdgeTerminationPolicyNone {
		t.Errorf("tls.example.com (the HTTPS listener alone): %+v", r)
	}

	// A ReferenceGrant lets the Gateway use the other namespace's Secret.
	v = view(t, docs+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: g, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: default}]
  to: [{group: "", kind: Secret}]`)
	v.secrets["certs/certs"] = tlsSecret(t, "certs", "certs", "x.example.com")
	if l := Translate(v, Options{}).Gateways["default/gw"].Listeners[2]; !l.served || l.cert == nil {
		t.Errorf("granted listener %s: %s", l.Name, conditions(l.Conditions))
	}
}

func TestHeaderModifiersBecomeTheRoutesHeaderActions(t *testing.T) {
	rule := func(filters string) string {
		return class + "\n---\n" + gw + "\n---\n" + web + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com]
  rules:
  - backendRefs: [{name: web, port: 8080}]
    filters: ` + filters
	}
	res := Translate(view(t, rule(`
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Set, value: "100% sure"}], remove: [X-Drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Frame-Options, value: DENY}]}`)), Options{})
	if len(res.Routes) != 1 || res.Routes[0].Spec.HTTPHeaders == nil {
		t.Fatalf("routes %v", routes(res.Routes))
	}
	a := res.Routes[0].Spec.HTTPHeaders.Actions
	got := fmt.Sprintf("%s=%s %s:%s %s=%s", a.Request[0].Name, a.Request[0].Action.Set.Value, a.Request[1].Name, a.Request[1].Action.Type,
		a.Response[0].Name, a.Response[0].Action.Set.Value)
	if got != "X-Set=100%% sure X-Drop:Delete X-Frame-Options=DENY" || len(a.Request) != 2 || len(a.Response) != 1 {
		t.Errorf("header actions %s (%+v)", got, a)
	}
	res = Translate(view(t, rule(`
    - type: RequestHeaderModifier
      requestHeaderModifier: {add: [{name: X-A, value: "1%"}], set: [{name: X-S, value: s}]}`)), Options{})
	if len(res.Routes) != 1 {
		t.Fatalf("add: routes %v", routes(res.Routes))
	}
	if m := res.MadeRoute(res.Routes[0]); fmt.Sprint(m.RequestHeaderAdds) != "[{X-A 1%% false}]" || len(m.ResponseHeaderAdds) != 0 ||
		len(res.Routes[0].Spec.HTTPHeaders.Actions.Request) != 1 {
		t.Errorf("add: %+v, actions %+v", m, res.Routes[0].Spec.HTTPHeaders)
	}
	for filters, why := range map[string]string{
		`[{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: Cookie, value: b}]}}]`:                            "RequestHeaderModifier: the router cannot apply it",
		`[{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-A, value: b}], set: [{name: x-a, value: c}]}}]`: "modified twice",
		`[{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: Set-Cookie, value: b}]}}]`:                      "ResponseHeaderModifier: the router cannot apply it",
	} {
		res := Translate(view(t, rule(filters)), Options{})
		res.Finish(admitAll(res.Routes))
		c := res.HTTPRoutes["default/r"].Parents[0].Conditions
		if len(res.Routes) != 0 || !strings.Contains(c[0].Message, why) {
			t.Errorf("%s: routes %v, conditions %+v, want the rule not served: %s", filters, routes(res.Routes), c, why)
		}
	}
}

func TestAListenersCertificateMustMatchItsKeyAndTheMostSpecificListenerWins(t *testing.T) {
	docs := class + "\n---\n" + web + `
---
` + gatewayDoc(`{name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: any}]}}`, `{name: wild, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: wild}]}}`, `{name: exact, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: exact}, {name: wild}]}}`, `{name: mismatched, port: 443, protocol: HTTPS, hostname: m.example.org, tls: {certificateRefs: [{name: mismatched}]}}`) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com, b.example.com, c.example.org]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`
	v := view(t, docs)
	for _, n := range []string{"any", "wild", "exact"} {
		v.secrets["default/"+n] = tlsSecret(t, "default", n, n+".example.com")
	}
	one, other := tlsSecret(t, "default", "x", "m.example.org"), tlsSecret(t, "default", "y", "m.example.org")
	one.Data["tls.key"] = other.Data["tls.key"]
	v.secrets["default/mismatched"] = one
	res := Translate(v, Options{})
	ls := res.Gateways["default/gw"].Listeners
	if c := ls[3].Conditions[2]; c.Reason != string(gatewayv1.ListenerReasonInvalidCertificateRef) {
		t.Errorf("a certificate with another key: %+v", c)
	}
	if c := ls[2].Conditions[2]; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "only certificateRefs[0] is served") {
		t.Errorf("two certificateRefs: %+v", c)
	}
	for host, secret := range map[string]string{"a.example.com": "exact", "b.example.com": "wild", "c.example.org": "any"} {
		for _, r := range res.Routes {
			if r.Spec.Host == host && (r.Spec.TLS == nil || r.Spec.TLS.Certificate != string(v.secrets["default/"+secret].Data["tls.crt"])) {
				t.Errorf("%s: served with another certificate than %s's", host, secret)
			}
		}
	}
}

func TestAHeaderModifiedTwiceWhateverItsCaseIsNotServed(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("r", "a.example.com")+`
  - backendRefs: [{name: web, port: 8080}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: b}], remove: [x-a]}}]`)
	res := Translate(v, Options{})
	res.Finish(admitAll(res.Routes))
	if c := res.HTTPRoutes["default/r"].Parents[0].Conditions[0]; len(res.Routes) != 0 || !strings.Contains(c.Message, "modified twice") {
		t.Errorf("routes %v, %+v", routes(res.Routes), c)
	}
}

// TestAnOlderRuleOfTheSameMatchLeavesTheRouteAccepted: two HTTPRoutes on
// the same Gateway with one hostname and path: the older is served, both
// are Accepted and attached (the spec resolves the conflict by age, not
// by refusing the route); a Route's older claim still refuses.
func TestAnOlderRuleOfTheSameMatchLeavesTheRouteAccepted(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("a", "a.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`+
		httpRouteHead("b", "a.example.com")+` [{backendRefs: [{name: canary, port: 8080}]}]`)
	for _, hr := range v.httpRoutes {
		if hr.Name == "b" {
			hr.CreationTimestamp = metav1.NewTime(hr.CreationTimestamp.Add(time.Minute))
		}
	}
	res := Translate(v, Options{})
	d := admission.Admit(res.Routes, admission.Options{Made: res.Made, ClaimGroup: res.ClaimGroup, ClaimPath: res.ClaimPath})
	res.Finish(d.Results)
	if len(d.Admitted) != 1 || d.Admitted[0].Spec.To.Name != "web" {
		t.Fatalf("admitted %v", routes(d.Admitted))
	}
	for _, k := range []store.Key{"default/a", "default/b"} {
		if got := conditions(res.HTTPRoutes[k].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
			t.Errorf("%s: %s", k, got)
		}
	}
	if n := res.Gateways["default/gw"].Listeners[0].AttachedRoutes; n != 2 {
		t.Errorf("attached routes %d, want 2", n)
	}
}

// TestBackendsOnPortsOfTheirOwnAreServed: backends whose Services name
// their ports differently are served, each on its own target port
// (MadeRoute.BackendPorts); backends on one port need none.
func TestBackendsOnPortsOfTheirOwnAreServed(t *testing.T) {
	v := view(t, onGateway+`
---
apiVersion: v1
kind: Service
metadata: {name: plain}
spec:
  ports: [{port: 8080, targetPort: 3000}]`+httpRouteHead("r", "a.example.com")+` [{backendRefs: [{name: web, port: 8080, weight: 70}, {name: plain, port: 8080, weight: 30}]}, {matches: [{path: {value: /c}}], backendRefs: [{name: web, port: 8080}, {name: canary, port: 8080}]}]`)
	res := Translate(v, Options{})
	if len(res.Routes) != 2 {
		t.Fatalf("routes %v", routes(res.Routes))
	}
	for _, r := range res.Routes {
		want := "[http ]"
		if r.Spec.Path == "/c" {
			want = "[]"
		}
		if got := fmt.Sprint(res.MadeRoute(r).BackendPorts); got != want {
			t.Errorf("%s%s: backend ports %s, want %s", r.Spec.Host, r.Spec.Path, got, want)
		}
	}
}

// TestGatewaysOfTheirOwnHostNames: with Options.Subdomain each Gateway has
// a host name of its own (its status address), where the routes of its
// listeners without a hostname are served apart from other Gateways'; the
// host every Gateway shares keeps the older route.
func TestGatewaysOfTheirOwnHostNames(t *testing.T) {
	gateway := func(name string) string {
		return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ` + name + `}
spec:
  gatewayClassName: haproxy
  listeners: [{name: http, port: 80, protocol: HTTP}]`
	}
	route := func(name, gw, svc string) string {
		return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ` + name + `}
spec:
  parentRefs: [{name: ` + gw + `}]
  rules: [{backendRefs: [{name: ` + svc + `, port: 8080}]}]`
	}
	v := view(t, class+"\n---\n"+web+gateway("a")+gateway("b")+route("ra", "a", "web")+route("rb", "b", "canary"))
	for _, hr := range v.httpRoutes {
		if hr.Name == "rb" {
			hr.CreationTimestamp = metav1.NewTime(hr.CreationTimestamp.Add(time.Minute))
		}
	}
	res := Translate(v, Options{Subdomain: "${name}-${namespace}.gw.example.com"})
	d := admission.Admit(res.Routes, admission.Options{Made: res.Made, ClaimGroup: res.ClaimGroup, ClaimPath: res.ClaimPath})
	res.Finish(d.Results)
	if got := routes(d.Admitted); fmt.Sprint(got) != "[default/ra * -> web[1] port http default/ra a-default.gw.example.com -> web[1] port http default/rb b-default.gw.example.com -> canary[1] port http]" {
		t.Errorf("admitted %q", got)
	}
	if a := res.Gateways["default/b"].Addresses; len(a) != 1 || a[0].Value != "b-default.gw.example.com" || *a[0].Type != gatewayv1.HostnameAddressType {
		t.Errorf("addresses %+v", a)
	}
	if got := fmt.Sprint(res.HostResponses); got != "[{* 404 true false} {a-default.gw.example.com 404 true false} {b-default.gw.example.com 404 true false}]" {
		t.Errorf("host responses %s", got)
	}
	if c := res.HTTPRoutes["default/rb"].Parents[0].Conditions; c[0].Status != metav1.ConditionTrue || len(c) != 3 || !strings.Contains(c[2].Message, "HostAlreadyClaimed") {
		t.Errorf("rb: %s", conditions(c))
	}

	// One host name for both (the configuration refuses such a template;
	// names such as a-b in c and a in b-c make one too): the older
	// Gateway keeps it (of two as old, the first by name), the other gets
	// the router's address.
	canonical := gatewayv1.HostnameAddressType
	opts := Options{Subdomain: "${namespace}.gw.example.com",
		Addresses: []gatewayv1.GatewayStatusAddress{{Type: &canonical, Value: "router.example.com"}}}
	res = Translate(v, opts)
	if a, b := res.Gateways["default/a"].Addresses, res.Gateways["default/b"].Addresses; a[0].Value != "default.gw.example.com" || b[0].Value != "router.example.com" {
		t.Errorf("shared host name, as old: a %+v, b %+v", a, b)
	}
	for _, g := range v.gateways {
		if g.Name == "a" {
			g.CreationTimestamp = metav1.NewTime(time.Unix(1700000100, 0))
		} else {
			g.CreationTimestamp = metav1.NewTime(time.Unix(1700000000, 0))
		}
	}
	res = Translate(v, opts)
	if a, b := res.Gateways["default/a"].Addresses, res.Gateways["default/b"].Addresses; b[0].Value != "default.gw.example.com" || a[0].Value != "router.example.com" {
		t.Errorf("shared host name, b older: a %+v, b %+v", a, b)
	}
}

// TestOnlyTheNamedGatewaysCatchAllListenerGivesTheDefaultCertificate: the
// certificate of the HTTPS listener without a hostname of the Gateway
// DefaultCertificateFrom names replaces the default certificate; no other
// Gateway's, no listener with a hostname, none not served.
func TestOnlyTheNamedGatewaysCatchAllListenerGivesTheDefaultCertificate(t *testing.T) {
	catchAll := `{name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: any}]}}`
	named := `{name: named, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: any}]}}`
	missing := `{name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: missing}]}}`
	for _, tc := range []struct {
		name, listener, from string
		want                 bool
	}{
		{"the named Gateway's catch-all listener", catchAll, "default/gw", true},
		{"no Gateway named", catchAll, "", false},
		{"another Gateway named", catchAll, "default/other", false},
		{"a listener with a hostname", named, "default/gw", false},
		{"a listener whose certificate is missing", missing, "default/gw", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := view(t, class+"\n---\n"+gatewayDoc(tc.listener))
			v.secrets["default/any"] = tlsSecret(t, "default", "any", "any.example.com")
			res := Translate(v, Options{DefaultCertificateFrom: store.Key(tc.from)})
			if !tc.want {
				if res.DefaultCertificate != nil {
					t.Fatalf("a default certificate from %s", tc.from)
				}
				return
			}
			pair, err := cryptotls.X509KeyPair(res.DefaultCertificate, res.DefaultCertificate)
			if err != nil {
				t.Fatalf("DefaultCertificate %q: %v", res.DefaultCertificate, err)
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil || leaf.Subject.CommonName != "any.example.com" {
				t.Fatalf("DefaultCertificate for %v (%v), want the listener's", leaf.Subject, err)
			}
		})
	}
}

// TestURLRewritesAndTimeoutsAreTheRoutesAnnotationsAndHostHeader: a
// ReplacePrefixMatch is the route's rewrite-target ("" is "/"), a
// ReplaceFullPath the made route's RewritePath, a hostname a Host header
// set, and the shorter timeout (0s: the longest HAProxy takes) the route's
// timeout annotation.
func TestURLRewritesAndTimeoutsAreTheRoutesAnnotationsAndHostHeader(t *testing.T) {
	docs := onGateway + httpRouteHead("r", "a.example.com") + `
  - matches: [{path: {value: /prefix}}]
    filters: [{type: URLRewrite, urlRewrite: {hostname: b.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]
    timeouts: {request: 10s, backendRequest: 1m500ms}
    backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /strip}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: ""}}}]
    timeouts: {request: 0s}
    backendRefs: [{name: web, port: 8080}]
  - matches: [{path: {value: /full}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /one}}}]
    timeouts: {request: 1h, backendRequest: 0s}
    backendRefs: [{name: web, port: 8080}]`
	res := Translate(view(t, docs), Options{})
	byPath := map[string]*routev1.Route{}
	for _, r := range res.Routes {
		byPath[r.Spec.Path] = r
	}
	for path, want := range map[string]map[string]string{
		"/prefix": {"haproxy.router.openshift.io/rewrite-target": "/new", "haproxy.router.openshift.io/timeout": "10000ms"},
		"/strip":  {"haproxy.router.openshift.io/rewrite-target": "/", "haproxy.router.openshift.io/timeout": "2147483647ms"},
		"/full":   {"haproxy.router.openshift.io/timeout": "3600000ms"},
	} {
		r := byPath[path]
		if r == nil {
			t.Fatalf("no route of path %s among %v", path, routes(res.Routes))
		}
		if fmt.Sprint(r.Annotations) != fmt.Sprint(want) {
			t.Errorf("%s: annotations %v, want %v", path, r.Annotations, want)
		}
	}
	if h := byPath["/prefix"].Spec.HTTPHeaders; h == nil || len(h.Actions.Request) != 1 || h.Actions.Request[0].Name != "Host" ||
		h.Actions.Request[0].Action.Set == nil || h.Actions.Request[0].Action.Set.Value != "b.example.com" {
		t.Errorf("/prefix: header actions %+v, want Host set to b.example.com", h)
	}
	if m := res.MadeRoute(byPath["/full"]); m == nil || m.RewritePath != "/one" {
		t.Errorf("/full: made route %+v, want RewritePath /one", m)
	}
	if m := res.MadeRoute(byPath["/prefix"]); m == nil || m.RewritePath != "" {
		t.Errorf("/prefix: made route %+v, want no RewritePath", m)
	}
}

// TestTLSListenersPassTLSThroughToTLSRoutes: a TLS listener on 443 with
// tls.mode Passthrough takes TLSRoutes (only); Terminate or another port
// gets the spec's conditions; a TLSRoute is a passthrough route for each
// hostname it shares with the listener (a wildcard: its subdomains), to its
// backends by weight; an HTTPRoute does not attach to a TLS listener, nor a
// TLSRoute to an HTTP one; a TLS listener's hostname answers no 404.
func TestTLSListenersPassTLSThroughToTLSRoutes(t *testing.T) {
	docs := class + "\n---\n" + web + "\n---\n" + gatewayDoc(
		`{name: tls, port: 443, protocol: TLS, hostname: "*.example.com", tls: {mode: Passthrough}}`,
		`{name: terminate, port: 443, protocol: TLS, hostname: t.example.com, tls: {mode: Terminate, certificateRefs: [{name: c}]}}`,
		`{name: other-port, port: 8443, protocol: TLS, hostname: o.example.com, tls: {mode: Passthrough}}`,
		`{name: kinds, port: 443, protocol: TLS, hostname: k.example.org, tls: {mode: Passthrough}, allowedRoutes: {kinds: [{kind: TCPRoute}, {kind: TLSRoute}]}}`,
		`{name: http, port: 80, protocol: HTTP, hostname: h.example.net}`) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db}
spec:
  parentRefs: [{name: gw}]
  hostnames: [abc.example.com, "*.example.com", nothing.example.net]
  rules: [{backendRefs: [{name: web, port: 8080, weight: 3}, {name: canary, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: http-only}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [h.example.net]
  rules: [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: missing}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [m.example.com]
  rules: [{backendRefs: [{name: nosuch, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: partial}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [p.example.com]
  rules: [{backendRefs: [{name: web, port: 8080, weight: 3}, {name: nosuch, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web-on-tls}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [w.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`
	res := Translate(view(t, docs), Options{})
	ls := res.Gateways["default/gw"].Listeners
	for i, want := range []string{
		"Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
		"Accepted=False/UnsupportedValue Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
		"Accepted=False/PortUnavailable Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
		"Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=False/InvalidRouteKinds Conflicted=False/NoConflicts",
	} {
		if got := conditions(ls[i].Conditions); got != want {
			t.Errorf("listener %s: %s, want %s", ls[i].Name, got, want)
		}
	}
	if k := ls[3].SupportedKinds; len(k) != 1 || k[0].Kind != "TLSRoute" {
		t.Errorf("listener kinds: supported %v, want TLSRoute alone", k)
	}
	if k := ls[0].SupportedKinds; len(k) != 1 || k[0].Kind != "TLSRoute" {
		t.Errorf("listener tls: supported %v, want TLSRoute", k)
	}
	var got []string
	for _, r := range res.Routes {
		if res.Origins[admission.KeyOf(r)].Kind != "TLSRoute" {
			continue
		}
		if r.Spec.TLS == nil || r.Spec.TLS.Termination != routev1.TLSTerminationPassthrough {
			t.Errorf("%s: %+v, want a passthrough route", r.Name, r.Spec.TLS)
		}
		if m := res.MadeRoute(r); m.Answered() {
			// No valid backend: connections refused.
			got = append(got, r.Spec.Host+" refused")
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s:%d+%d refused %d‰", r.Spec.Host, r.Spec.WildcardPolicy, r.Spec.To.Name, *r.Spec.To.Weight,
			len(r.Spec.AlternateBackends), res.MadeRoute(r).ErrorShare))
	}
	slices.Sort(got)
	if want := []string{"*.example.com Subdomain web:3+1 refused 0‰", "abc.example.com None web:3+1 refused 0‰", "m.example.com refused",
		"p.example.com None web:3+0 refused 250‰"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TLSRoute routes %q, want %q", got, want)
	}
	res.Finish(admitAll(res.Routes))
	for name, want := range map[string]string{
		"default/db":        "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs",
		"default/http-only": "Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs",
		"default/missing":   "Accepted=True/Accepted ResolvedRefs=False/BackendNotFound",
		"default/partial":   "Accepted=True/Accepted ResolvedRefs=False/BackendNotFound",
	} {
		rs := res.TLSRoutes[store.Key(name)]
		if rs == nil {
			t.Fatalf("%s: no status", name)
		}
		if got := conditions(rs.Parents[0].Conditions); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := conditions(res.HTTPRoutes["default/web-on-tls"].Parents[0].Conditions); !strings.HasPrefix(got, "Accepted=False/NotAllowedByListeners") {
		t.Errorf("an HTTPRoute on a TLS listener: %s", got)
	}
	if ls[0].AttachedRoutes != 3 {
		t.Errorf("the TLS listener's attachedRoutes %d, want 3 (db, missing, partial)", ls[0].AttachedRoutes)
	}
	for _, h := range res.HostResponses {
		if strings.HasSuffix(h.Host, "example.com") {
			t.Errorf("a TLS listener's hostname answers HTTP: %+v", h)
		}
	}
	// The digest of the TLSRoutes' routes: the same objects, the same;
	// a weight changed, another.
	v := view(t, docs)
	if again := Translate(v, Options{}); again.TLSRoutesChanged(Translate(v, Options{})) {
		t.Error("the same TLSRoutes translated twice: changed")
	}
	v.tlsRoutes[0].Spec.Rules[0].BackendRefs[0].Weight = ptrTo(int32(4))
	if Translate(v, Options{}).TLSRoutesChanged(res) {
		return
	}
	t.Error("a TLSRoute's weight changed: not seen")
}

// TestAnHTTPRedirectAndHTTPSBackendsShareAHostnameAndPath: an HTTPRoute on
// the HTTP listener redirecting to HTTPS and one on the HTTPS listener with
// the backends, for one hostname and path, are both served — each on its
// own port (ClaimSide) — and both Accepted without a part left out.
func TestAnHTTPRedirectAndHTTPSBackendsShareAHostnameAndPath(t *testing.T) {
	docs := class + "\n---\n" + web + "\n---\n" + gatewayDoc(`{name: http, port: 80, protocol: HTTP}`,
		`{name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: tls}]}}`) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: redirect}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [a.example.com]
  rules: [{filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`
	v := view(t, docs)
	v.secrets["default/tls"] = tlsSecret(t, "default", "tls", "a.example.com")
	res := Translate(v, Options{})
	sides := map[string]string{}
	for _, r := range res.Routes {
		sides[r.Name[:strings.Index(r.Name, ".")]] = res.ClaimSide(admission.KeyOf(r))
	}
	if want := map[string]string{"redirect": admission.SideHTTP, "app": admission.SideHTTPS, "both": ""}; fmt.Sprint(sides) != fmt.Sprint(want) {
		t.Errorf("sides %v, want %v", sides, want)
	}
	d := admission.Admit(res.Routes, admission.Options{Made: res.Made, ClaimPath: res.ClaimPath, ClaimGroup: res.ClaimGroup, ClaimSide: res.ClaimSide})
	if len(d.Admitted) != 3 {
		t.Errorf("admitted %d of 3: %+v", len(d.Admitted), d.Results)
	}
	res.Finish(d.Results)
	for _, name := range []string{"default/redirect", "default/app"} {
		if got := conditions(res.HTTPRoutes[store.Key(name)].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" {
			t.Errorf("%s: %s", name, got)
		}
	}
}

// TestOwnHostNamesAreNamesDNSResolves: a Gateway's own host name whose
// label would be longer than 63 characters is shortened (its first 46 and
// a hash: two such names stay apart); one that cannot be a host name is
// none.
func TestOwnHostNamesAreNamesDNSResolves(t *testing.T) {
	gw := func(name, ns string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	long := strings.Repeat("a", 40)
	one, two := ownHost("${name}-${namespace}.gw.example.com", gw(long+"-one", "infra")), ownHost("${name}-${namespace}.gw.example.com", gw(long+"-two", "infra"))
	for _, h := range []string{one, two} {
		first, rest, _ := strings.Cut(h, ".")
		if len(first) > 63 || len(validation.IsDNS1123Label(first)) > 0 || rest != "gw.example.com" || !strings.HasPrefix(first, long) {
			t.Errorf("own host %q: want a label of at most 63 characters starting with the name, then gw.example.com", h)
		}
	}
	if one == two {
		t.Errorf("two long names made one host name %q", one)
	}
	if h := ownHost("${name}-${namespace}.gw.example.com", gw("short", "infra")); h != "short-infra.gw.example.com" {
		t.Errorf("a short name: %q", h)
	}
	if h := ownHost("${name}-${namespace}.gw.example.com", gw("Upper_case", "infra")); h != "" {
		t.Errorf("a name that cannot be a host name: %q", h)
	}
}

// TestInvalidBackendsWeightsAreAnsweredWith500: a rule's invalid backends
// take their weights' share of its requests, answered with 500 (per mille,
// MadeRoute.ErrorShare); all of them when no valid backend has a weight.
func TestInvalidBackendsWeightsAreAnsweredWith500(t *testing.T) {
	for _, tc := range []struct {
		refs    string
		share   int
		respond int
	}{
		{"[{name: web, port: 8080, weight: 3}, {name: nosuch, port: 8080, weight: 1}]", 250, 0},
		{"[{name: web, port: 8080, weight: 1}, {name: nosuch, port: 8080, weight: 0}]", 0, 0},
		{"[{name: web, port: 8080, weight: 0}, {name: nosuch, port: 8080, weight: 1}]", 0, 500},
		{"[{name: web, port: 8080}, {name: canary, port: 8080}, {name: nosuch, port: 8080, kind: ConfigMap}]", 333, 0},
	} {
		res := Translate(view(t, onGateway+httpRouteHead("r", "a.example.com")+`
  - backendRefs: `+tc.refs), Options{})
		if len(res.Routes) != 1 {
			t.Fatalf("%s: routes %v", tc.refs, routes(res.Routes))
		}
		if m := res.MadeRoute(res.Routes[0]); m.ErrorShare != tc.share || m.Respond != tc.respond {
			t.Errorf("%s: error share %d, respond %d; want %d, %d", tc.refs, m.ErrorShare, m.Respond, tc.share, tc.respond)
		}
	}
}

// TestRegularExpressionMatchesAreTestedAtTheirLiteralStart: a
// RegularExpression path match is a route of the path its expression
// starts with up to its last "/" (every path where it starts otherwise),
// with the expression as a pattern matching the whole path; header and
// query parameter expressions are patterns of their values.
func TestRegularExpressionMatchesAreTestedAtTheirLiteralStart(t *testing.T) {
	doc := onGateway + httpRouteHead("r", "a.example.com") + `
  - matches:
    - path: {type: RegularExpression, value: "/api/v[0-9]+/.*"}
    - path: {type: RegularExpression, value: "^/img/(a|b)/x"}
    - path: {type: RegularExpression, value: ".*\\.png"}
    - path: {type: RegularExpression, value: "(?i)/Case/x"}
    - path: {type: RegularExpression, value: "/it's/a b/.*"}
    - path: {value: /h}
      headers: [{name: X-B, type: RegularExpression, value: "rc-[0-9]+"}]
      queryParams: [{name: id, type: RegularExpression, value: "[a-f]{4}"}]
    backendRefs: [{name: web, port: 8080}]
`
	res := Translate(view(t, doc), Options{})
	var got []string
	for _, r := range res.Routes {
		m := res.MadeRoute(r)
		got = append(got, fmt.Sprintf("%q %s %v %v", r.Spec.Path, m.PathRegex, m.HeaderMatches, m.QueryMatches))
	}
	slices.Sort(got)
	want := []string{
		`"" ^(?:(?:[^\x0a])*\x2epng)\z [] []`,
		`"" ^(?:(?i:\x2fCASE\x2fX))\z [] []`,
		`"" ^(?:\x2fit\x27s\x2fa\x20b\x2f(?:[^\x0a])*)\z [] []`, // (a route path has no quote)
		`"/api" ^(?:\x2fapi\x2fv(?:[\x30-\x39])+\x2f(?:[^\x0a])*)\z [] []`,
		`"/h"  [{x-b ^(?:rc\x2d(?:[\x30-\x39])+)\z true}] [{id ^(?:(?:[\x61-\x66]){4})\z true}]`,
		`"/img" ^(?:\A\x2fimg\x2f(?:[\x61-\x62])\x2fx)\z [] []`,
	}
	expectLines(t, "routes", got, want)
}

// TestBackendRefsOfOneServiceAreOneBackend: a Service a rule names twice
// (on one port) is one backend with the weights added; sixteen backends
// are one route.
func TestBackendRefsOfOneServiceAreOneBackend(t *testing.T) {
	doc := func(refs string) string {
		return onGateway + httpRouteHead("r", "a.example.com") + `
  - backendRefs: ` + refs
	}
	res := Translate(view(t, doc(`[{name: web, port: 8080, weight: 3}, {name: canary, port: 8080}, {name: web, port: 8080, weight: 2}]`)), Options{})
	if got := strings.Join(routes(res.Routes), " "); got != "default/r a.example.com -> web[5],canary[1] port http" {
		t.Errorf("routes %s", got)
	}
	var refs []string
	for i := 0; i < 16; i++ {
		refs = append(refs, fmt.Sprintf("{name: s%d, port: 8080}", i))
	}
	var svcs []string
	for i := 0; i < 17; i++ {
		svcs = append(svcs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: s%d}\nspec:\n  ports: [{name: http, port: 8080}]", i))
	}
	res = Translate(view(t, doc("["+strings.Join(refs, ", ")+"]")+"\n---\n"+strings.Join(svcs, "\n---\n")), Options{})
	if len(res.Routes) != 1 || len(res.Routes[0].Spec.AlternateBackends) != 15 {
		t.Errorf("sixteen backends: routes %v", routes(res.Routes))
	}
}

// TestListenersAreIsolated: a route is served for a hostname on a
// listener only where no more specific listener of the Gateway (on that
// port) takes the hostname's requests — the spec's listener isolation.
func TestListenersAreIsolated(t *testing.T) {
	route := func(name, section, hostnames string) string {
		return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s}
spec:
  parentRefs: [{name: gw, sectionName: %s}]
  hostnames: [%s]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`, name, section, hostnames)
	}
	docs := class + "\n---\n" + web + "\n---\n" + gatewayDoc(
		`{name: any, port: 80, protocol: HTTP}`,
		`{name: wild, port: 80, protocol: HTTP, hostname: "*.example.com"}`,
		`{name: foo, port: 80, protocol: HTTP, hostname: "*.foo.example.com"}`,
		`{name: abc, port: 80, protocol: HTTP, hostname: abc.foo.example.com}`,
		`{name: https, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: c}]}}`) +
		route("on-any", "any", `bar.com, "*.example.com", "*.foo.example.com", abc.foo.example.com, x.example.com`) +
		route("on-wild", "wild", `"*.example.com", "*.foo.example.com", abc.foo.example.com, x.example.com`) +
		route("on-foo", "foo", `"*.foo.example.com", abc.foo.example.com`) +
		route("on-any-all", "any", "")
	res := Translate(view(t, docs), Options{})
	var got []string
	for _, r := range res.Routes {
		got = append(got, string(res.Origins[admission.KeyOf(r)].HTTPRoute)+" "+r.Spec.Host)
	}
	slices.Sort(got)
	want := []string{
		"default/on-any bar.com",
		"default/on-any-all *",
		"default/on-foo *.foo.example.com",
		"default/on-wild *.example.com",
		"default/on-wild x.example.com",
	}
	expectLines(t, "routes", got, want)
	res.Finish(admitAll(res.Routes))
	for _, name := range []string{"default/on-any", "default/on-wild", "default/on-foo"} {
		if c := conditions(res.HTTPRoutes[store.Key(name)].Parents[0].Conditions[:1]); c != "Accepted=True/Accepted" {
			t.Errorf("%s: %s, want Accepted", name, c)
		}
	}
}

// ruleView is Gateway gw and HTTPRoute default/r on it with the rules (a
// YAML list).
func ruleView(t *testing.T, rules string) View {
	return view(t, onGateway+httpRouteHead("r", "")+" "+rules)
}

// translateRuleYAML translates ruleView(rules) (translateView).
func translateRuleYAML(t *testing.T, rules string) (*Result, string) {
	return translateView(ruleView(t, rules))
}

// translateView translates v and returns the result and, when it made no
// route, the messages of HTTPRoute default/r's conditions (admission
// admitting everything).
func translateView(v View) (*Result, string) {
	res := Translate(v, Options{})
	if len(res.Routes) > 0 {
		return res, ""
	}
	res.Finish(admitAll(res.Routes))
	var why string
	for _, c := range res.HTTPRoutes["default/r"].Parents[0].Conditions {
		why += c.Message
	}
	return res, why
}

// TestRetryIsWhatHAProxyRetriesOn: a rule's retry is HAProxy's retry-on
// (connection failures, the codes) and retries (attempts); codes HAProxy
// cannot retry on and a backoff are refused with the reason.
func TestRetryIsWhatHAProxyRetriesOn(t *testing.T) {
	for retry, want := range map[string]string{
		`{codes: [503, 500, 500], attempts: 2}`: "conn-failure empty-response 500 503 2",
		`{}`:                                    "conn-failure empty-response <nil>",
		`{codes: [505]}`:                        "rule 0: retry.codes: 505 is not served (HAProxy retries on 401 403 404 408 425 500 501 502 503 504)",
		`{backoff: 100ms}`:                      "rule 0: retry.backoff 100ms: HAProxy cannot wait between attempts (0s is served)",
		`{backoff: 0s, attempts: 0}`:            "conn-failure empty-response 0",
		`{attempts: 11}`:                        "rule 0: retry.attempts 11: from 0 to 10 are served",
	} {
		res, got := translateRuleYAML(t, `[{backendRefs: [{name: web, port: 8080}], retry: `+retry+`}]`)
		if len(res.Routes) == 1 {
			rt := res.MadeRoute(res.Routes[0]).Retry
			if rt.Attempts != nil {
				got = fmt.Sprintf("%s %d", rt.On, *rt.Attempts)
			} else {
				got = rt.On + " <nil>"
			}
		}
		if got != want {
			t.Errorf("retry %s: %q, want %q", retry, got, want)
		}
	}
}

// TestTheUsualConditionsAreSharedAndChangedInCopies: HTTPRoutes of one
// generation whose parents are Accepted with resolved references share
// one pair of conditions (10,000 routes would hold 10,000 equal pairs);
// Finish refusing one route, or finding another partly served, changes
// copies: the third keeps the pair as it was.
func TestTheUsualConditionsAreSharedAndChangedInCopies(t *testing.T) {
	v := view(t, onGateway+httpRouteHead("a", "a.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`+
		httpRouteHead("b", "b.example.com, c.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`+
		httpRouteHead("d", "d.example.com")+` [{backendRefs: [{name: web, port: 8080}]}]`)
	res := Translate(v, Options{})
	a, b, d := res.HTTPRoutes["default/a"].Parents[0].Conditions, res.HTTPRoutes["default/b"].Parents[0].Conditions, res.HTTPRoutes["default/d"].Parents[0].Conditions
	if len(a) != 2 || &a[0] != &b[0] || &a[0] != &d[0] {
		t.Fatalf("the usual pair is not shared: %s, %s, %s", conditions(a), conditions(b), conditions(d))
	}
	results := admitAll(res.Routes)
	for k, o := range res.Origins {
		switch {
		case o.HTTPRoute == "default/a", o.HTTPRoute == "default/b" && strings.Contains(string(k), routeName("b", "c.example.com", "")):
			results[k] = admission.Result{Host: results[k].Host, Reason: "HostAlreadyClaimed", Message: "older"}
		}
	}
	res.Finish(results)
	if got := conditions(res.HTTPRoutes["default/a"].Parents[0].Conditions); got != "Accepted=False/HostAlreadyClaimed ResolvedRefs=True/ResolvedRefs" {
		t.Errorf("a refused: %s", got)
	}
	if got := conditions(res.HTTPRoutes["default/b"].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue" {
		t.Errorf("b partly served: %s", got)
	}
	if got := conditions(res.HTTPRoutes["default/d"].Parents[0].Conditions); got != "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs" || conditions(d) != got || len(d) != 2 {
		t.Errorf("d, served, changed with the others: %s (the shared pair: %s)", got, conditions(d))
	}
}
