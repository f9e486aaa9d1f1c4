package store

import (
	"slices"
	"sort"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayObjects are the Gateway API objects the store holds: GatewayClasses
// (cluster-scoped, keyed by name), Gateways, HTTPRoutes, TLSRoutes and
// ReferenceGrants (keyed namespace/name). An HTTPRoute change is a route
// change (ChangesSince stays ok; HTTPRouteChangesSince names it); a change
// to any other of them is an "other" change: the next pass looks at
// everything.
type gatewayObjects struct {
	classes    map[Key]*gatewayv1.GatewayClass
	gateways   map[Key]*gatewayv1.Gateway
	httpRoutes map[Key]*gatewayv1.HTTPRoute
	tlsRoutes  map[Key]*gatewayv1.TLSRoute
	grants     map[Key]*gatewayv1.ReferenceGrant
}

func newGatewayObjects() gatewayObjects {
	return gatewayObjects{
		classes:    map[Key]*gatewayv1.GatewayClass{},
		gateways:   map[Key]*gatewayv1.Gateway{},
		httpRoutes: map[Key]*gatewayv1.HTTPRoute{},
		tlsRoutes:  map[Key]*gatewayv1.TLSRoute{},
		grants:     map[Key]*gatewayv1.ReferenceGrant{},
	}
}

// put stores (upsert) or removes (!upsert) a Gateway API object; it reports
// false for any other object.
func (g *gatewayObjects) put(obj any, upsert bool) bool {
	switch o := obj.(type) {
	case *gatewayv1.GatewayClass:
		putObject(g.classes, KeyOf("", o.Name), o, upsert)
	case *gatewayv1.Gateway:
		putObject(g.gateways, KeyOf(o.Namespace, o.Name), o, upsert)
	case *gatewayv1.TLSRoute:
		putObject(g.tlsRoutes, KeyOf(o.Namespace, o.Name), o, upsert)
	case *gatewayv1.ReferenceGrant:
		putObject(g.grants, KeyOf(o.Namespace, o.Name), o, upsert)
	default:
		return false
	}
	return true
}

func putObject[T any](m map[Key]*T, k Key, o *T, upsert bool) {
	if upsert {
		m[k] = o
	} else {
		delete(m, k)
	}
}

// sortedByKey returns the values of m in the order of their keys (the
// strings "namespace/name").
func sortedByKey[T any](m map[Key]*T) []*T {
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(string(a), string(b)) })
	out := make([]*T, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// GatewayClasses returns the GatewayClasses sorted by name.
func (v View) GatewayClasses() []*gatewayv1.GatewayClass { return sortedByKey(v.s.gw.classes) }

// Gateways returns the Gateways in the order of their keys,
// "namespace/name" (as the other lists here but View.Routes).
func (v View) Gateways() []*gatewayv1.Gateway { return sortedByKey(v.s.gw.gateways) }

// HTTPRoutes returns the HTTPRoutes in the order of their keys,
// "namespace/name" ("a-/x" before "a/x"; View.Routes orders by namespace,
// then name), a slice of the caller's own.
func (v View) HTTPRoutes() []*gatewayv1.HTTPRoute {
	return v.s.httpRouteOrder.sorted(v.s.gw.httpRoutes)
}

// TLSRoutes returns the TLSRoutes in the order of their keys.
func (v View) TLSRoutes() []*gatewayv1.TLSRoute { return sortedByKey(v.s.gw.tlsRoutes) }

// TLSRoutesWatched is the name a source marks synced (Sink.MarkSynced)
// when it gives the store TLSRoutes: the manifests source always, the
// cluster's where the API server serves them (the experimental channel's
// CRD) and the router may list them.
const TLSRoutesWatched = "gateway.networking.k8s.io/tlsroutes"

// TLSRoutesServed reports whether a source gives the store TLSRoutes
// (TLSRoutesWatched): a GatewayClass's supported features list TLSRoute
// only then.
func (v View) TLSRoutesServed() bool { return v.s.synced[TLSRoutesWatched] }

// ReferenceGrants returns the ReferenceGrants in the order of their keys.
func (v View) ReferenceGrants() []*gatewayv1.ReferenceGrant { return sortedByKey(v.s.gw.grants) }

// HTTPRouteChangesSince returns the HTTPRoutes added, changed or deleted
// after generation since, each once, in the order of their first change,
// when ChangesSince(since) is ok.
func (v View) HTTPRouteChangesSince(since uint64) []Key {
	s := v.s
	i := sort.Search(len(s.endpointLog), func(i int) bool { return s.endpointLog[i].generation > since })
	var out []Key
	seen := map[Key]bool{}
	for _, c := range s.endpointLog[i:] {
		if c.httpRoute && !seen[c.service] {
			seen[c.service] = true
			out = append(out, c.service)
		}
	}
	return out
}
