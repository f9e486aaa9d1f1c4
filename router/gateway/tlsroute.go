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
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

// translateTLSRoute attaches a TLSRoute to this router's Gateways' TLS
// listeners (of res) and makes its routes: for each hostname it is served
// for, a passthrough route to its rule's backends, chosen by the TLS
// client's server name (SNI); a wildcard hostname serves its subdomains at
// any depth, as an HTTPRoute's does.
func translateTLSRoute(v View, tr *gatewayv1.TLSRoute, res *Result) *translation {
	rt := routeRef{kind: tlsRouteKind.Kind, namespace: tr.Namespace, generation: tr.Generation, hostnames: tr.Spec.Hostnames}
	rs := &RouteStatus{Generation: tr.Generation}
	hosts := map[string][]int{}
	attachParents(v, rt, tr.Spec.ParentRefs, res, rs, func(i int, h string, _ []*ListenerStatus) {
		if h != "" && !slices.Contains(hosts[h], i) {
			hosts[h] = append(hosts[h], i)
		}
	})
	if len(rs.Parents) == 0 {
		return nil
	}
	k := store.KeyOf(tr.Namespace, tr.Name)
	t := &translation{key: k, rs: rs, kind: rt.kind}
	backends, errorShare, resolved := tlsBackends(v, rt, tr, rs)
	res.addResolved(rs, resolved)
	if backends == nil && !rs.noValidBackend {
		return t
	}
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		name := routeName(tr.Name, host, "tls")
		switch {
		case len(t.routes) >= MaxRoutesPerHTTPRoute:
			rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("hostname %s: beyond the %d hostnames served per TLSRoute", host, MaxRoutesPerHTTPRoute)})
			continue
		case v.Route(tr.Namespace, name) != nil:
			rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("hostname %s: a Route of the namespace has its name, %s", host, name)})
			continue
		}
		r := passthroughRoute(tr, host, backends)
		r.Name = name
		parents := hosts[host]
		t.routes = append(t.routes, r)
		t.origins = append(t.origins, Origin{HTTPRoute: k, Kind: rt.kind, Parents: parents,
			Made:       madeTLSRoute(backends, errorShare),
			ClaimGroup: claimGroup(rs, parents), ClaimSide: admission.SideHTTPS})
		rs.routes = append(rs.routes, admission.KeyOf(r))
	}
	return t
}

// tlsBackends resolves a TLSRoute's backends (its one rule's), the share of
// connections, per mille, the invalid ones' weights take, and its
// ResolvedRefs condition; nil when none can be served: connections to its
// hostnames are then refused, as the spec asks, when no backend is valid
// (rs.noValidBackend), else what is wrong is in rs.unserved.
func tlsBackends(v View, rt routeRef, tr *gatewayv1.TLSRoute, rs *RouteStatus) ([]backend, int, metav1.Condition) {
	resolved := condition(gatewayv1.RouteConditionResolvedRefs, true, gatewayv1.RouteReasonResolvedRefs, "", tr.Generation)
	if len(tr.Spec.Rules) != 1 {
		rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("a TLSRoute has one rule, not %d", len(tr.Spec.Rules))})
		return nil, 0, resolved
	}
	refs := backendsOf(v, rt, tr.Spec.Rules[0].BackendRefs)
	if refs.refErr != nil {
		resolved = *refs.refErr
	}
	switch {
	case refs.why != "":
		rs.unserved = append(rs.unserved, unserved{msg: "rule 0: " + refs.why})
	case refs.errorShare == 1000:
		// Connections to its hostnames are refused.
		rs.noValidBackend = true
	default:
		// The invalid ones' share of connections is refused.
		return refs.valid, refs.errorShare, resolved
	}
	return nil, 0, resolved
}

// passthroughRoute is the route of a TLSRoute's hostname ("*.domain": its
// subdomains): TLS passed through to the backends.
func passthroughRoute(tr *gatewayv1.TLSRoute, host string, backends []backend) *routev1.Route {
	r := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: tr.Namespace, UID: tr.UID, Generation: tr.Generation,
			ResourceVersion: tr.ResourceVersion, CreationTimestamp: tr.CreationTimestamp},
		Spec: routev1.RouteSpec{Host: host, WildcardPolicy: routev1.WildcardPolicyNone,
			TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}},
	}
	if strings.HasPrefix(host, "*.") {
		r.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain
	}
	for i, b := range backends {
		ref := routev1.RouteTargetReference{Kind: "Service", Name: b.service, Weight: ptrTo(b.weight)}
		if i == 0 {
			r.Spec.To = ref
		} else {
			r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, ref)
		}
	}
	if len(backends) == 0 {
		// Refused by the router (madeTLSRoute).
		r.Spec.To = routev1.RouteTargetReference{Kind: "Service", Name: respondBackend}
	} else if backends[0].targetPort != nil {
		r.Spec.Port = &routev1.RoutePort{TargetPort: *backends[0].targetPort}
	}
	return r
}

// madeTLSRoute is what a TLSRoute's route has beyond the Route API: its
// backends' namespaces and ports, the share of connections refused for
// invalid backends (ErrorShare); without a valid backend, its connections
// are refused (Respond: the default template maps it to "@reject").
func madeTLSRoute(backends []backend, errorShare int) model.MadeRoute {
	if len(backends) == 0 {
		return model.MadeRoute{Respond: 503}
	}
	r := rule{backends: backends}
	return model.MadeRoute{BackendNamespaces: r.backendNamespaces(), BackendPorts: r.backendPorts(), ErrorShare: errorShare}
}

// tlsDigest is a digest of the routes made from TLSRoutes and their
// parents: the incremental pass compares it (Result.TLSRoutesChanged). It
// hashes values, not pointers.
func tlsDigest(res *Result) string {
	h := sha256.New()
	backend := func(b routev1.RouteTargetReference) string {
		w := int32(-1)
		if b.Weight != nil {
			w = *b.Weight
		}
		return fmt.Sprintf("%s:%d", b.Name, w)
	}
	for _, t := range res.tlsMade {
		for i, r := range t.routes {
			k, o := t.rs.routes[i], t.origins[i]
			port := ""
			if r.Spec.Port != nil {
				port = r.Spec.Port.TargetPort.String()
			}
			fmt.Fprintf(h, "%s|%s|%s|%s|%s|%d|%d|%q|%q|%v|%s", k, r.ResourceVersion, r.Spec.Host, backend(r.Spec.To), port,
				o.Made.Respond, o.Made.ErrorShare, o.Made.BackendNamespaces, o.Made.BackendPorts, o.Parents, o.ClaimGroup)
			for _, b := range r.Spec.AlternateBackends {
				fmt.Fprintf(h, "|%s", backend(b))
			}
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
