// Package gateway translates the Gateway API's objects into what the rest
// of the router already serves: Routes. It is pure: Translate reads a view
// of GatewayClasses, Gateways, HTTPRoutes, ReferenceGrants, Namespaces and
// Services and returns
//
//   - the routes to admit next to the API's Routes (one per HTTPRoute
//     hostname, rule and match), so that one admission decides host claims
//     across Routes, Ingresses and HTTPRoutes (oldest first) and HTTPRoutes
//     are rendered, and changed at runtime, as Routes are;
//   - the status of what it read: GatewayClass, Gateway, listener and
//     HTTPRoute parent conditions, completed by Finish once admission has
//     decided on the routes.
//
// Only GatewayClasses whose spec.controllerName is the router's
// (ROUTER_GATEWAY_CONTROLLER_NAME) are looked at, and only Gateways of such
// classes; everything else belongs to another controller and gets neither
// routes nor status.
//
// What is served today (docs/gateway-api.md): listeners of protocol HTTP on
// port 80 and HTTPS on 443; HTTPRoute hostnames (exact, wildcard, none:
// every host) after intersection with the listener's, PathPrefix and Exact
// matches with Exact header matches, Service backendRefs (of other
// namespaces with a ReferenceGrant) with weights (up to four per rule),
// header modifiers and redirects; 404 and 500 answered as the spec asks.
// What a route has beyond the Route API travels with it as a
// model.MadeRoute (Origin.Made). Anything else a valid object may hold is
// reported in its status, never silently dropped.
package gateway

import (
	"maps"
	"slices"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

// DefaultControllerName is the GatewayClass spec.controllerName this router
// implements unless ROUTER_GATEWAY_CONTROLLER_NAME says otherwise.
const DefaultControllerName = "haproxy.router.openshift.io/gateway-controller"

// View is what Translate reads (store.View).
type View interface {
	GatewayClasses() []*gatewayv1.GatewayClass
	Gateways() []*gatewayv1.Gateway
	HTTPRoutes() []*gatewayv1.HTTPRoute
	TLSRoutes() []*gatewayv1.TLSRoute
	// TLSRoutesServed: the source gives TLSRoutes (in cluster mode, the
	// API server serves them): GatewayClasses list the TLSRoute feature.
	TLSRoutesServed() bool
	ReferenceGrants() []*gatewayv1.ReferenceGrant
	Namespace(name string) *corev1.Namespace
	Service(namespace, name string) *corev1.Service
	// Secret is a Secret a listener's certificateRefs name (in cluster
	// mode, those the router may read are watched into the store).
	Secret(namespace, name string) *corev1.Secret
	// Route is a Route of the API (its name is not given to a route
	// made from an HTTPRoute).
	Route(namespace, name string) *routev1.Route
}

// Options configure the translation.
type Options struct {
	// ControllerName is the GatewayClass controllerName this router
	// implements (ROUTER_GATEWAY_CONTROLLER_NAME).
	ControllerName string
	// NamespaceLabels, if not nil, limits the Gateways served to the
	// namespaces it selects (NAMESPACE_LABELS, as for Routes).
	NamespaceLabels labels.Selector
	// Addresses are the addresses a Gateway that asks for none is given in
	// its status (ROUTER_CANONICAL_HOSTNAME, as a Hostname).
	Addresses []gatewayv1.GatewayStatusAddress
	// Subdomain, if set, is the template of each Gateway's own host name
	// (ROUTER_GATEWAY_SUBDOMAIN: ${name} and ${namespace} replaced): its
	// status address instead of Addresses, where the routes of its
	// listeners without a hostname are also served apart from other
	// Gateways' (requests to every other host share them).
	Subdomain string
	// DefaultCertificateFrom, if set, is the Gateway whose HTTPS listener
	// without a hostname gives its certificate to TLS clients that name no
	// host a route or listener has, and to those that name none
	// (ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM, this router's addition):
	// Result.DefaultCertificate. The router's default certificate
	// otherwise: on a shared address, no Gateway takes every name unasked.
	DefaultCertificateFrom store.Key
	// Memo, if set, remembers HTTPRoutes' translations between passes
	// (memo.go): the same options with the same memo on every pass.
	Memo *Memo
}

// Result is a translation.
type Result struct {
	// Routes are the routes to admit, in the order of their keys
	// (admission.KeyOf).
	Routes []*routev1.Route
	// Origins tells, for each of Routes, where it comes from (shared
	// with the Memo and later passes: read only).
	Origins map[admission.Key]*Origin
	// Classes are the conditions of this router's GatewayClasses, by name.
	Classes map[string]ClassStatus
	// Gateways are the status of this router's Gateways (their
	// listeners' attachedRoutes counted by Finish).
	Gateways map[store.Key]*GatewayStatus
	// HTTPRoutes are this router's entries (status.parents) of the
	// HTTPRoutes attached to its Gateways (what admission decided on
	// their routes added by Finish).
	HTTPRoutes map[store.Key]*RouteStatus
	// TLSRoutes are this router's entries of the TLSRoutes attached to
	// its Gateways.
	TLSRoutes map[store.Key]*RouteStatus
	// Secrets are the Secrets the served HTTPS listeners name (in cluster
	// mode: to watch).
	Secrets []store.Key
	// Conditional are the routes that match more than their path
	// (headers, a method, query parameters: rules in the frontends).
	Conditional []admission.Key
	// ClaimPaths counts the routes that claim another path than theirs
	// in admission (Origin.ClaimPath): none, and ClaimPath has nothing
	// to tell.
	ClaimPaths int
	// HostResponses are the served listeners' hostnames (AnyHost for a
	// listener without one): requests to them that no route matches are
	// answered with 404, as the spec asks (not the router's 503).
	HostResponses []model.HostResponse
	// DefaultCertificate is the PEM (certificates, then the key) that
	// replaces the router's default certificate: that of the listener
	// Options.DefaultCertificateFrom names, while it is served and its
	// certificate loads (nil otherwise).
	DefaultCertificate []byte

	// tlsDigest is a digest of the routes made from TLSRoutes
	// (TLSRoutesChanged), tlsMade their translations.
	tlsDigest string
	tlsMade   []*translation

	// controller is Options.ControllerName.
	controller string
	// memo and memoAt are Options.Memo and its position after this
	// translation (RetranslatedSince).
	memo   *Memo
	memoAt uint64
	// finished: Finish has completed the statuses.
	finished bool
	// usual are the Accepted and ResolvedRefs conditions most parents
	// have, by generation (addResolved).
	usual map[int64][]metav1.Condition
}

// Origin is the HTTPRoute, rule and match a route was made from, the
// parents (indexes of RouteStatus.Parents) it serves, and what it has
// beyond the Route API.
type Origin struct {
	// HTTPRoute is the HTTPRoute, or with Kind "TLSRoute" the TLSRoute,
	// the route is made from.
	HTTPRoute   store.Key
	Kind        gatewayv1.Kind
	Rule, Match int
	Parents     []int
	// Made is how the route's requests are matched and answered beyond
	// the Route API (builder.Options.Made).
	Made model.MadeRoute
	// ClaimGroup is the route's admission.Options.ClaimGroup: the
	// Gateways it is served on. ClaimPath is the path it claims in
	// admission ("": its path; admission.Options.ClaimPath).
	ClaimGroup string
	ClaimPath  string
	// ClaimSide is the one port the route is served on
	// (admission.SideHTTP: no HTTPS listener takes its hostname;
	// admission.SideHTTPS: no HTTP listener does), "" for both.
	ClaimSide string
}

// ClassStatus is a GatewayClass's status as this router wants it.
type ClassStatus struct {
	Generation int64
	Conditions []metav1.Condition
	// SupportedFeatures are the features its Gateways are served with
	// (none while it is not Accepted).
	SupportedFeatures []gatewayv1.SupportedFeature
}

// GatewayStatus is a Gateway's status as this router wants it.
type GatewayStatus struct {
	Generation int64
	Addresses  []gatewayv1.GatewayStatusAddress
	Conditions []metav1.Condition
	Listeners  []ListenerStatus
	// ownHost is the Gateway's own host name (Options.Subdomain), "" for
	// none; created is the Gateway's creation time (the oldest keeps an
	// own host name several Gateways make).
	ownHost string
	created metav1.Time
}

// ListenerStatus is a listener's status and what the translation needs of
// it.
type ListenerStatus struct {
	gatewayv1.ListenerStatus
	// spec is the listener.
	spec gatewayv1.Listener
	// served: HTTPRoutes may attach (Accepted, with a supported kind,
	// its certificate resolved).
	served bool
	// cert is an HTTPS listener's certificate, from Secret secret.
	cert   *certificate
	secret store.Key
}

// certificate is a listener's certificate and key (PEM).
type certificate struct {
	crt, key string
}

// RouteStatus is this router's part of an HTTPRoute's status.
type RouteStatus struct {
	Generation int64
	// Parents are the entries of the parentRefs that name this router's
	// Gateways, in the order of spec.parentRefs.
	Parents []gatewayv1.RouteParentStatus
	// routes are the keys of the routes made from the HTTPRoute.
	routes []admission.Key
	// listeners are, per parent, the listeners the route attaches to
	// (counted in their attachedRoutes once the parent is Accepted).
	listeners [][]listenerRef
	// unserved describes the parts of the HTTPRoute not served (rules,
	// matches, hostnames), for PartiallyInvalid.
	unserved []unserved
	// noValidBackend: a TLSRoute none of whose backends is valid (its
	// connections are refused; Accepted, with ResolvedRefs=False).
	noValidBackend bool
}

// listenerRef is a listener of a Gateway of Result.Gateways, by index.
type listenerRef struct {
	gateway store.Key
	index   int
}

// unserved is a part of an HTTPRoute not served, and whether only invalid
// backend references are why (the route stays Accepted for those, with
// ResolvedRefs=False, as the spec asks).
type unserved struct {
	msg     string
	backend bool
}

// origin returns the origin of route k (nil: not made here, or a nil
// Result).
func (res *Result) origin(k admission.Key) *Origin {
	if res == nil {
		return nil
	}
	return res.Origins[k]
}

// Made reports whether a route was made from an HTTPRoute (false for a
// nil Result).
func (res *Result) Made(k admission.Key) bool { return res.origin(k) != nil }

// MadeRoute returns what route r (made here) has beyond the Route API
// (nil: r is not made here). It is shared: read only.
func (res *Result) MadeRoute(r *routev1.Route) *model.MadeRoute {
	if o := res.origin(admission.KeyOf(r)); o != nil {
		return &o.Made
	}
	return nil
}

// ClaimGroup returns the claim group of route k (made here; "" else).
func (res *Result) ClaimGroup(k admission.Key) string {
	if o := res.origin(k); o != nil {
		return o.ClaimGroup
	}
	return ""
}

// ClaimPath returns the path route k claims in admission when it is not
// its path (admission.Options.ClaimPath).
func (res *Result) ClaimPath(k admission.Key) string {
	if o := res.origin(k); o != nil {
		return o.ClaimPath
	}
	return ""
}

// ClaimSide returns the one port route k (made here) is served on, ""
// for both (admission.Options.ClaimSide).
func (res *Result) ClaimSide(k admission.Key) string {
	if o := res.origin(k); o != nil {
		return o.ClaimSide
	}
	return ""
}

// HeaderMatched reports whether route k (made here) matches more than its
// path: headers, a method, query parameters.
func (res *Result) HeaderMatched(k admission.Key) bool {
	if o := res.origin(k); o != nil {
		return o.Made.Conditional()
	}
	return false
}

// IsTLSRoute reports whether an origin is a TLSRoute's.
func (o Origin) IsTLSRoute() bool { return o.Kind == tlsRouteKind.Kind }

// TLSRoutesChanged reports whether the routes made from TLSRoutes differ
// from old's (TLSRoutes are translated afresh each pass, not memoized: a
// change of theirs, or of what they look up, makes a full pass).
func (res *Result) TLSRoutesChanged(old *Result) bool {
	return old == nil || res.tlsDigest != old.tlsDigest
}

// RetranslatedSince returns the HTTPRoutes whose translation res made
// afresh since the translation old (the HTTPRoute, or what it looked up,
// changed: its routes may differ though the HTTPRoute did not, a Service
// created, say), and whether it knows: without the same memo (or with
// more changes than it remembers) it does not. It is the same whenever it
// is asked, however many translations came between.
func (res *Result) RetranslatedSince(old *Result) ([]store.Key, bool) {
	if res == nil || old == nil || res.memo == nil || res.memo != old.memo {
		return nil, false
	}
	return res.memo.since(old.memoAt, res.memoAt)
}

// Translate translates the Gateway API objects of v.
func Translate(v View, o Options) *Result {
	if o.ControllerName == "" {
		o.ControllerName = DefaultControllerName
	}
	// As large as the last pass's (no growing a map of 10,000 routes).
	routes, httpRoutes := o.Memo.sizes()
	res := &Result{
		Routes:     make([]*routev1.Route, 0, routes),
		Origins:    make(map[admission.Key]*Origin, routes),
		Classes:    map[string]ClassStatus{},
		Gateways:   map[store.Key]*GatewayStatus{},
		HTTPRoutes: make(map[store.Key]*RouteStatus, httpRoutes),
		TLSRoutes:  map[store.Key]*RouteStatus{},
		controller: o.ControllerName,
	}
	for _, c := range v.GatewayClasses() {
		if string(c.Spec.ControllerName) != o.ControllerName {
			continue
		}
		accepted := condition(gatewayv1.GatewayClassConditionStatusAccepted, true, gatewayv1.GatewayClassReasonAccepted,
			"Accepted by this router", c.Generation)
		if c.Spec.ParametersRef != nil {
			accepted = condition(gatewayv1.GatewayClassConditionStatusAccepted, false, gatewayv1.GatewayClassReasonInvalidParameters,
				"parametersRef is not supported by this router: its Gateways are not served", c.Generation)
		}
		cs := ClassStatus{Generation: c.Generation, Conditions: []metav1.Condition{accepted}}
		if accepted.Status == metav1.ConditionTrue {
			cs.SupportedFeatures = supportedFeatures(v.TLSRoutesServed())
		}
		res.Classes[c.Name] = cs
	}
	for _, g := range v.Gateways() {
		class, ok := res.Classes[string(g.Spec.GatewayClassName)]
		if !ok || class.Conditions[0].Status != metav1.ConditionTrue || !namespaceSelected(v, o, g.Namespace) {
			continue
		}
		gs := gatewayStatus(v, g, o)
		res.Gateways[store.KeyOf(g.Namespace, g.Name)] = gs
		for _, l := range gs.Listeners {
			if l.secret != "" {
				res.Secrets = append(res.Secrets, l.secret)
			}
		}
	}
	dropSharedOwnHosts(res.Gateways, o.Addresses)
	res.HostResponses = hostResponses(res.Gateways)
	res.DefaultCertificate = defaultCertificate(res.Gateways[o.DefaultCertificateFrom])
	if o.Memo != nil {
		o.Memo.begin(worldOf(v, res))
		defer o.Memo.end()
	}
	for _, hr := range v.HTTPRoutes() {
		res.add(o.Memo.translate(v, hr, res))
	}
	for _, tr := range v.TLSRoutes() {
		res.add(translateTLSRoute(v, tr, res))
	}
	res.memo, res.memoAt = o.Memo, o.Memo.position()
	o.Memo.setSizes(len(res.Routes), len(res.HTTPRoutes))
	res.tlsDigest = tlsDigest(res)
	slices.SortFunc(res.Routes, func(a, b *routev1.Route) int {
		return store.CompareKeys(a.Namespace, a.Name, b.Namespace, b.Name)
	})
	return res
}

// dropSharedOwnHosts keeps an own host name (Options.Subdomain) for the
// oldest Gateway (then the first by namespace and name) that has it:
// another whose name and namespace make the same one (a-b in c, a in b-c,
// or a long label shortened alike) gets the router's addresses instead, as
// the oldest route keeps a host.
func dropSharedOwnHosts(gateways map[store.Key]*GatewayStatus, addresses []gatewayv1.GatewayStatusAddress) {
	keys := slices.SortedFunc(maps.Keys(gateways), func(a, b store.Key) int {
		if ta, tb := gateways[a].created, gateways[b].created; !ta.Equal(&tb) {
			if ta.Before(&tb) {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a), string(b))
	})
	seen := map[string]bool{}
	for _, k := range keys {
		gs := gateways[k]
		if gs.ownHost == "" {
			continue
		}
		if seen[gs.ownHost] {
			gs.ownHost, gs.Addresses = "", append([]gatewayv1.GatewayStatusAddress(nil), addresses...)
			continue
		}
		seen[gs.ownHost] = true
	}
}

// hostResponses returns the HostResponses of Gateways: the hostname of
// each served listener, on its port, sorted by host.
func hostResponses(gateways map[store.Key]*GatewayStatus) []model.HostResponse {
	byHost := map[string]*model.HostResponse{}
	for _, gs := range gateways {
		for _, l := range gs.Listeners {
			if !l.served || l.passthrough() {
				// (TLS passed through: no HTTP answers.)
				continue
			}
			hosts := []string{strings.ToLower(hostnameOf(l.spec.Hostname))}
			if hosts[0] == "" {
				hosts[0] = model.AnyHost
				if gs.ownHost != "" {
					hosts = append(hosts, gs.ownHost)
				}
			}
			for _, host := range hosts {
				hr := byHost[host]
				if hr == nil {
					hr = &model.HostResponse{Host: host, Status: 404}
					byHost[host] = hr
				}
				if l.cert != nil {
					hr.HTTPS = true
				} else {
					hr.HTTP = true
				}
			}
		}
	}
	out := make([]model.HostResponse, 0, len(byHost))
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		out = append(out, *byHost[h])
	}
	return out
}

// namespaceSelected reports whether Gateways of namespace ns are served.
func namespaceSelected(v View, o Options, ns string) bool {
	if o.NamespaceLabels == nil {
		return true
	}
	n := v.Namespace(ns)
	return n != nil && o.NamespaceLabels.Matches(labels.Set(n.Labels))
}

// condition returns a condition of the given type.
func condition[T ~string, R ~string](typ T, status bool, reason R, message string, generation int64) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: string(typ), Status: s, Reason: string(reason), Message: message, ObservedGeneration: generation}
}
