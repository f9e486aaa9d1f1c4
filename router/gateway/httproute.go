package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

// translation is what an HTTPRoute translates into: its status and its
// routes (nil when it names none of this router's Gateways). Once made it
// is not changed: the memo hands it on to later passes, a Result points
// into it (Origins), and the status writer takes a status that is the
// same object as the last one for unchanged (Finish copies one it
// changes).
type translation struct {
	key     store.Key
	rs      *RouteStatus
	routes  []*routev1.Route
	origins []Origin
	// kind is tlsRouteKind's for a TLSRoute's ("": an HTTPRoute's).
	kind gatewayv1.Kind
}

// add adds a translation to res.
func (res *Result) add(t *translation) {
	if t == nil {
		return
	}
	if t.kind == tlsRouteKind.Kind {
		res.TLSRoutes[t.key] = t.rs
	} else {
		res.HTTPRoutes[t.key] = t.rs
	}
	res.Routes = append(res.Routes, t.routes...)
	for i, k := range t.rs.routes { // the keys of t.routes
		res.Origins[k] = &t.origins[i]
		if t.origins[i].Made.Conditional() {
			res.Conditional = append(res.Conditional, k)
		}
		if t.origins[i].ClaimPath != "" {
			res.ClaimPaths++
		}
	}
	if t.kind == tlsRouteKind.Kind {
		res.tlsMade = append(res.tlsMade, t)
	}
}

// translateHTTPRoute attaches an HTTPRoute to this router's Gateways (of
// res) and makes its routes.
func translateHTTPRoute(v View, hr *gatewayv1.HTTPRoute, res *Result) *translation {
	rs := &RouteStatus{Generation: hr.Generation}
	// hosts are the hostnames served, each with the parents (indexes of
	// rs.Parents) that serve it.
	hosts := map[string]*hostInfo{}
	rt := routeRef{kind: httpRouteKind.Kind, namespace: hr.Namespace, generation: hr.Generation, hostnames: hr.Spec.Hostnames}
	attachParents(v, rt, hr.Spec.ParentRefs, res, rs, func(i int, h string, ls []*ListenerStatus) {
		hi := hosts[h]
		if hi == nil {
			hi = &hostInfo{}
			hosts[h] = hi
		}
		hi.add(i, ls)
	})
	if len(rs.Parents) == 0 {
		return nil
	}
	k := store.KeyOf(hr.Namespace, hr.Name)
	t := &translation{key: k, rs: rs}
	rules, resolved := translateRules(v, hr, rs)
	res.addResolved(rs, resolved)
	made := map[string]string{}
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		how := hosts[host]
		group := claimGroup(rs, how.parents)
		if host == "" {
			// Every host (no hostname on the route or the listener).
			host = admission.AnyHost
		}
		for _, rule := range rules {
			for _, m := range rule.matches {
				where := fmt.Sprintf("hostname %s, rule %d, match %d", host, rule.index, m.index)
				name := routeName(hr.Name, host, m.nameKey())
				switch {
				case made[name] != "":
					// The same hostname and path in an earlier rule (or
					// match): that one is served, as the spec's order
					// of rules says.
					rs.unserved = append(rs.unserved, unserved{msg: where + ": the same path as " + made[name]})
					continue
				case len(rs.routes) >= MaxRoutesPerHTTPRoute:
					rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("%s: beyond the %d hostname, path pairs served per HTTPRoute", where, MaxRoutesPerHTTPRoute)})
					continue
				case v.Route(hr.Namespace, name) != nil:
					rs.unserved = append(rs.unserved, unserved{msg: where + ": a Route of the namespace has its name, " + name})
					continue
				}
				made[name] = where
				r := routeFor(hr, host, m.path, rule, how)
				r.Name = name
				t.routes = append(t.routes, r)
				t.origins = append(t.origins, Origin{HTTPRoute: k, Rule: rule.index, Match: m.index, Parents: how.parents,
					Made: model.MadeRoute{Respond: rule.respond, Redirect: rule.redirect, ExactPath: m.exact, HeaderMatches: m.headers,
						Method: m.method, QueryMatches: m.query, PathRegex: m.pathRegex,
						MatchOrder:        matchOrder(hr, rule.index, m.index),
						BackendNamespaces: rule.backendNamespaces(), BackendPorts: rule.backendPorts(),
						RequestHeaderAdds: rule.adds.request, ResponseHeaderAdds: rule.adds.response,
						RewritePath: rule.rewrite.fullPath, ErrorShare: rule.errorShare, Retry: rule.retry, CORS: rule.cors},
					ClaimGroup: group, ClaimPath: m.claimPath(), ClaimSide: how.side()})
				rs.routes = append(rs.routes, admission.KeyOf(r))
			}
		}
	}
	return t
}

// matchOrder is the precedence of an HTTPRoute's match among those of one
// hostname and path with as many header matches (MadeRoute.MatchOrder):
// the oldest HTTPRoute, then its namespace and name, then the rule's and
// the match's index; a string that sorts so.
func matchOrder(hr *gatewayv1.HTTPRoute, rule, match int) string {
	return fmt.Sprintf("%020d/%s/%s/%06d/%06d", max(0, hr.CreationTimestamp.Unix()), hr.Namespace, hr.Name, rule, match)
}

// claimGroup is the claim group (admission.Options.ClaimGroup) of the
// routes a hostname of an HTTPRoute is served with for parents: the
// Gateways it attaches to there, sorted. Routes of other namespaces on the
// same Gateways share the hostname, as the spec merges them; a Route, or
// an HTTPRoute on other Gateways, does not.
func claimGroup(rs *RouteStatus, parents []int) string {
	var gws []string
	for _, p := range parents {
		for _, l := range rs.listeners[p] {
			if !slices.Contains(gws, string(l.gateway)) {
				gws = append(gws, string(l.gateway))
			}
		}
	}
	slices.Sort(gws)
	return strings.Join(gws, ",")
}

// MaxRoutesPerHTTPRoute bounds the routes one HTTPRoute is served with
// (hostnames x paths): an object of a few kilobytes could otherwise ask for
// hundreds of thousands (2048 listener hostnames x 128 matches). What is cut
// is listed in its status (PartiallyInvalid).
const MaxRoutesPerHTTPRoute = 512

// controllerOf returns the controller name the translation ran with.
func controllerOf(res *Result) string { return res.controller }

// parentGateway returns the Gateway of this router a parentRef of a route
// of routeNamespace names.
func parentGateway(routeNamespace string, ref gatewayv1.ParentReference, res *Result) (*GatewayStatus, store.Key, bool) {
	if ref.Group != nil && *ref.Group != gatewayv1.GroupName || ref.Kind != nil && *ref.Kind != "Gateway" {
		return nil, "", false
	}
	ns := routeNamespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	k := store.KeyOf(ns, string(ref.Name))
	gw, ok := res.Gateways[k]
	return gw, k, ok
}

// hostInfo is how a hostname of an HTTPRoute is served: for which parents
// (indexes of RouteStatus.Parents), on the HTTP port, and on the HTTPS
// port with which certificate.
type hostInfo struct {
	parents []int
	http    bool
	cert    *certificate
	// certRank ranks the listener cert is from (listenerRank).
	certRank int
}

// side is the one port the hostname is served on ("": both).
func (h *hostInfo) side() string {
	switch {
	case h.cert == nil:
		return admission.SideHTTP
	case !h.http:
		return admission.SideHTTPS
	}
	return ""
}

// add records that parent i serves the hostname on listeners ls. Of the
// HTTPS listeners, the most specific one's certificate is served.
func (h *hostInfo) add(i int, ls []*ListenerStatus) {
	if !slices.Contains(h.parents, i) {
		h.parents = append(h.parents, i)
	}
	for _, l := range ls {
		switch r := listenerRank(l.spec.Hostname); {
		case l.cert == nil:
			h.http = true
		case h.cert == nil || r > h.certRank:
			h.cert, h.certRank = l.cert, r
		}
	}
}

// listenerRank ranks a listener hostname by how specific it is, as the
// spec matches requests to listeners: an exact hostname, then the longest
// wildcard, then none.
func listenerRank(h *gatewayv1.Hostname) int {
	switch {
	case h == nil || *h == "":
		return 0
	case strings.HasPrefix(string(*h), "*"):
		return 1 + len(*h)
	default:
		return 1 << 20
	}
}

// attachParents attaches a route to this router's Gateways (of res) its
// parentRefs name: an entry of rs.Parents each, with its Accepted
// condition and the listeners it attaches to; served is called with the
// parent's index for each hostname it serves there and the listeners that
// serve it.
func attachParents(v View, rt routeRef, parentRefs []gatewayv1.ParentReference, res *Result, rs *RouteStatus, served func(i int, host string, ls []*ListenerStatus)) {
	for _, ref := range parentRefs {
		gw, key, ok := parentGateway(rt.namespace, ref, res)
		if !ok {
			continue
		}
		i := len(rs.Parents)
		gwNamespace, _ := key.Split()
		hosts, attached, cond := attach(v, rt, ref, gwNamespace, gw)
		refs := make([]listenerRef, 0, len(attached))
		for _, l := range attached {
			refs = append(refs, listenerRef{gateway: key, index: l})
		}
		for h, ls := range hosts {
			served(i, h, ls)
		}
		rs.Parents = append(rs.Parents, gatewayv1.RouteParentStatus{ParentRef: ref,
			ControllerName: gatewayv1.GatewayController(controllerOf(res)), Conditions: []metav1.Condition{cond}})
		rs.listeners = append(rs.listeners, refs)
	}
}

// routeRef is what attach reads of an HTTPRoute or a TLSRoute.
type routeRef struct {
	kind       gatewayv1.Kind
	namespace  string
	generation int64
	hostnames  []gatewayv1.Hostname
}

// attach attaches an HTTPRoute (or TLSRoute) to the listeners of a Gateway its parentRef
// selects (sectionName, port), as their allowedRoutes let it, and returns
// the hostnames it is served for there (with the listeners of each), the
// listeners it attaches to and its Accepted condition.
func attach(v View, rt routeRef, ref gatewayv1.ParentReference, gwNamespace string, gw *GatewayStatus) (map[string][]*ListenerStatus, []int, metav1.Condition) {
	gen := rt.generation
	named := 0
	var allowed []int
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		if ref.SectionName != nil && *ref.SectionName != l.Name || ref.Port != nil && *ref.Port != l.spec.Port {
			continue
		}
		named++
		// A route attaches to a listener its allowedRoutes take,
		// served or not (a listener whose certificate is missing
		// counts its routes too, as the spec asks).
		if l.takes(rt.kind) && allowsNamespace(v, l.spec, gwNamespace, rt.namespace) {
			allowed = append(allowed, i)
		}
	}
	if named == 0 {
		return nil, nil, condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonNoMatchingParent,
			"the Gateway has no listener of that name or port", gen)
	}
	if len(allowed) == 0 {
		return nil, nil, condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonNotAllowedByListeners,
			"no served listener of the Gateway allows routes of this namespace and kind", gen)
	}
	hosts := map[string][]*ListenerStatus{}
	var attached []int
	for _, i := range allowed {
		l := &gw.Listeners[i]
		h := intersect(l.spec.Hostname, rt.hostnames)
		if len(h) > 0 {
			attached = append(attached, i)
		}
		if len(h) == 1 && h[0] == "" && gw.ownHost != "" {
			// Every host: the Gateway's own host name too, where
			// its routes are apart from other Gateways'.
			h = append(h, gw.ownHost)
		}
		if !l.served {
			continue
		}
		for _, host := range h {
			if takenByAnother(gw, l, host) {
				continue
			}
			hosts[host] = append(hosts[host], l)
		}
	}
	if len(attached) == 0 {
		return nil, nil, condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonNoMatchingListenerHostname,
			"no hostname of the route matches a listener's hostname", gen)
	}
	return hosts, attached, condition(gatewayv1.RouteConditionAccepted, true, gatewayv1.RouteReasonAccepted, "", gen)
}

// takenByAnother reports whether every request for host (a hostname or a
// wildcard) goes to a listener of gw other than l, on l's port: one more
// specific than l whose hostname covers host. The spec's listener
// isolation: a request is served by the routes of the most specific
// listener its hostname matches alone (a route of a listener without a
// hostname naming "*.example.com" does not serve the requests of a
// listener "*.example.com" of the same Gateway).
func takenByAnother(gw *GatewayStatus, l *ListenerStatus, host string) bool {
	if host == "" {
		return false
	}
	mine := strings.ToLower(hostnameOf(l.spec.Hostname))
	for i := range gw.Listeners {
		o := &gw.Listeners[i]
		theirs := strings.ToLower(hostnameOf(o.spec.Hostname))
		if o == l || !o.served || o.spec.Port != l.spec.Port || theirs == "" || theirs == mine {
			continue
		}
		covers := theirs == host || wildcardMatches(theirs, host)
		if covers && moreSpecific(theirs, mine) {
			return true
		}
	}
	return false
}

// moreSpecific reports whether listener hostname a is more specific than b
// where both match a hostname: a hostname over a wildcard, a longer
// wildcard over a shorter one, anything over none ("").
func moreSpecific(a, b string) bool {
	switch aw, bw := strings.HasPrefix(a, "*"), strings.HasPrefix(b, "*"); {
	case b == "":
		return a != ""
	case aw != bw:
		return !aw
	default:
		return aw && len(a) > len(b)
	}
}

// allowsNamespace reports whether a listener of a Gateway of namespace
// gwNamespace takes routes of namespace ns (allowedRoutes.namespaces: Same
// by default, All, or Selector on the namespace's labels).
func allowsNamespace(v View, l gatewayv1.Listener, gwNamespace, ns string) bool {
	from := gatewayv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
		if l.AllowedRoutes.Namespaces.From != nil {
			from = *l.AllowedRoutes.Namespaces.From
		}
		sel = l.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		n := v.Namespace(ns)
		return err == nil && n != nil && s.Matches(labels.Set(n.Labels))
	case gatewayv1.NamespacesFromSame:
		return ns == gwNamespace
	default:
		return false
	}
}

// routeFor returns a route for one hostname (admission.AnyHost: every
// hostname; "*.domain": its subdomains) and path prefix of an HTTPRoute rule (its name is set by the
// caller): on an HTTPS listener, an edge route
// with the listener's certificate, also served over HTTP when an HTTP
// listener takes the hostname too. A rule answered by the router itself
// (rule.respond, rule.redirect) has a placeholder backend no Service can
// be.
func routeFor(hr *gatewayv1.HTTPRoute, host, path string, rule rule, how *hostInfo) *routev1.Route {
	r := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: hr.Namespace, UID: hr.UID, Generation: hr.Generation,
			ResourceVersion: hr.ResourceVersion, CreationTimestamp: hr.CreationTimestamp},
		Spec: routev1.RouteSpec{Host: host, Path: path, WildcardPolicy: routev1.WildcardPolicyNone,
			HTTPHeaders: rule.headers.DeepCopy()},
	}
	r.Annotations = rule.rewrite.annotations()
	if strings.HasPrefix(host, "*.") {
		// Every subdomain, at any depth (admission takes it from
		// made routes).
		r.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain
	}
	backends := rule.backends
	if rule.respond != 0 || rule.redirect != nil {
		r.Spec.To = routev1.RouteTargetReference{Kind: "Service", Name: respondBackend}
	}
	if how.cert != nil {
		r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: how.cert.crt, Key: how.cert.key,
			InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyNone}
		if how.http {
			r.Spec.TLS.InsecureEdgeTerminationPolicy = routev1.InsecureEdgeTerminationPolicyAllow
		}
	}
	for i, b := range backends {
		ref := routev1.RouteTargetReference{Kind: "Service", Name: b.service, Weight: ptrTo(b.weight)}
		if i == 0 {
			r.Spec.To = ref
		} else {
			r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, ref)
		}
	}
	if len(backends) > 0 && backends[0].targetPort != nil {
		r.Spec.Port = &routev1.RoutePort{TargetPort: *backends[0].targetPort}
	}
	return r
}

// respondBackend is the backend of a route the router answers itself:
// not a Service name (it does not start with a letter).
const respondBackend = "-respond"

// routeName names the route of an HTTPRoute's hostname and path:
// "NAME.gw-HASH", HASH 16 hex digits of a hash of the hostname and path (so
// that hostnames or rules added or removed leave the other routes' names,
// and backends, as they are), a name the Route API accepts (the router
// writes route names into haproxy.config and validates them as such). The
// suffix's shape makes names of different HTTPRoutes differ; a Route of
// the namespace may still have the name (that route is then not made). A
// name beyond the API's 253 characters is shortened, with a hash of the
// HTTPRoute's name.
func routeName(httpRoute, host, path string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + path))
	suffix := ".gw-" + hex.EncodeToString(sum[:8])
	if len(httpRoute)+len(suffix) <= validation.DNS1123SubdomainMaxLength {
		return httpRoute + suffix
	}
	nameSum := sha256.Sum256([]byte(httpRoute))
	keep := validation.DNS1123SubdomainMaxLength - len(suffix) - 9
	return strings.TrimRight(httpRoute[:keep], ".-") + "-" + hex.EncodeToString(nameSum[:4]) + suffix
}
