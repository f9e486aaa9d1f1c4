package admission

import (
	"fmt"
	"sort"
	"strings"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/fairshare"
)

// The configuration size budget: what one tenant writes must not make
// every tenant's reload slow. Valid header actions alone (20 request and
// 20 response actions of 16 KiB values a route) make 640 KiB of
// haproxy.config a route, and HAProxy's check, start and every reload
// take time and memory in the size of the whole configuration.
//
// Every admitted route's share of the configuration is estimated from its
// inputs (ConfigBytes: an upper bound of what the default template
// renders for it, its server lines aside) and the namespaces share
// Options.MaxConfigBytes (ROUTER_MAX_CONFIG_BYTES) max-min fair: a
// namespace gets what it asks for unless the budget is short, and then no
// less than an equal share of it (what smaller namespaces leave is shared
// by the others). Whatever the budget, a namespace's share is at least
// what its routes ask for up to RouteConfigBytesFloor each, so routes of
// a normal size are never rejected, at any number of routes. Where a
// namespace's routes ask for more than its share, its largest routes are
// rejected (ReasonConfigBudgetExceeded, the younger first of equal sizes)
// until the rest fits; everything else is admitted. The budget is
// evaluated again at every pass and route update (admission runs over
// every route on both): a route rejected for it is admitted when its
// namespace's other routes make room. It is the same allocator as the
// open-files budget's (router/fairshare).

// DefaultMaxConfigBytes is the default of ROUTER_MAX_CONFIG_BYTES: small
// enough that one namespace's big routes cannot make every check and
// reload slow (20 routes of 40 header actions of 16 KiB are 13 MB, and
// 2-3 s of "haproxy -c"), while routes of a normal size never count
// against it (RouteConfigBytesFloor), at any number of routes.
const DefaultMaxConfigBytes = 8 << 20

// RouteConfigBytesFloor is what every route may take of the configuration
// whatever the budget: a namespace's share is at least the sum of its
// routes' ConfigBytes, each up to this floor. A route with a few header
// actions, annotations and a certificate chain takes a few KiB.
const RouteConfigBytesFloor = 64 << 10

// Estimate of the default template's rendering of one route.
const (
	// routeFixedBytes covers the text of a route's backend section and
	// map lines that does not come from the route (directives, comments,
	// the backend's name prefix): about 600 bytes for a plain route, with
	// a margin for the rate limits, cookies and TLS maps.
	routeFixedBytes = 2048
	// routeNameCopies bounds how often the route's namespace, name, host
	// and path are written, each character escaped at most once (backend
	// names, map lines, the comment and file names).
	routeNameCopies = 8
	// headerActionBytes is one header action's line besides its quoted
	// name and value.
	headerActionBytes = 48
	// annotationCopies bounds how often a router annotation's value is
	// written (rewrite-target: the target, trimmed and whole, and the
	// prefix; an allowlist: its entries, inline or in its file), and
	// annotationBytes the text around it.
	annotationCopies = 4
	annotationBytes  = 128
	// certificateBytes is a certificate file's text besides the PEM of
	// the route's certificate, key and CA certificates.
	certificateBytes = 256
)

// ConfigBytes estimates, from its inputs, how many bytes the default
// template writes for route r served with tls (its TLS fields as
// admission sanitised them, or nil for r's own): its backend section and
// map lines, its header actions quoted, its router annotations' values
// and its certificate files. It is an upper bound of them
// (TestConfigBytesIsAnUpperBound in router/pipeline renders routes of
// every kind to check it); the backend's server lines (bounded by the
// endpoints rendered per service and the spare slots per route) are not
// counted. A custom template that writes more of a route is not bounded
// by it.
func ConfigBytes(r *routev1.Route, tls *routev1.TLSConfig) int {
	n := routeFixedBytes + routeNameCopies*(len(r.Namespace)+len(r.Name)+len(r.Spec.Host)+len(r.Spec.Path))
	if h := r.Spec.HTTPHeaders; h != nil {
		for _, list := range [][]routev1.RouteHTTPHeader{h.Actions.Request, h.Actions.Response} {
			for _, a := range list {
				n += headerActionBytes + quotedBytes(a.Name)
				if a.Action.Set != nil {
					n += quotedBytes(a.Action.Set.Value)
				}
			}
		}
	}
	for k, v := range r.Annotations {
		if strings.HasPrefix(k, "haproxy.router.openshift.io/") || strings.HasPrefix(k, "router.openshift.io/") {
			n += annotationBytes + annotationCopies*len(v)
		}
	}
	if tls == nil {
		tls = r.Spec.TLS
	}
	if tls != nil {
		for _, pem := range []string{tls.Certificate, tls.Key, tls.CACertificate, tls.DestinationCACertificate} {
			if pem != "" {
				n += certificateBytes + len(pem)
			}
		}
	}
	return n
}

// quotedBytes is the length of s as one quoted haproxy.config word
// (model.QuoteHeaderWord: every quote inside becomes four characters).
func quotedBytes(s string) int {
	return 2 + len(s) + 3*strings.Count(s, "'")
}

// budgetConfig rejects, in results, the routes of candidates over their
// namespace's share of maxBytes (see above) and returns the others, in
// their order. served are the routes' sanitised TLS fields. With
// maxBytes <= 0 there is no budget. The result does not depend on the
// order of candidates.
func budgetConfig(candidates []*routev1.Route, served map[Key]*routev1.TLSConfig, maxBytes int, results map[Key]Result) []*routev1.Route {
	if maxBytes <= 0 || len(candidates) == 0 {
		return candidates
	}
	byNS := map[string][]*routev1.Route{}
	for _, r := range candidates {
		byNS[r.Namespace] = append(byNS[r.Namespace], r)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	sizes := make([][]int, len(namespaces))
	demands, floors := make([]int, len(namespaces)), make([]int, len(namespaces))
	for i, ns := range namespaces {
		routes := byNS[ns]
		sizes[i] = make([]int, len(routes))
		for j, r := range routes {
			var tls *routev1.TLSConfig
			if r.Spec.TLS != nil {
				tls = served[KeyOf(r)]
			}
			s := ConfigBytes(r, tls)
			sizes[i][j] = s
			demands[i] += s
			floors[i] += min(s, RouteConfigBytesFloor)
		}
	}
	rejected := map[Key]bool{}
	for i, share := range fairshare.Shares(demands, maxBytes) {
		share = max(share, floors[i])
		if demands[i] <= share {
			continue
		}
		routes := byNS[namespaces[i]]
		for _, j := range overShare(routes, sizes[i], share) {
			r := routes[j]
			rejected[KeyOf(r)] = true
			results[KeyOf(r)] = Result{Host: hostOf(r), Reason: ReasonConfigBudgetExceeded,
				Message: fmt.Sprintf("the configuration generated for this route (up to %d bytes) does not fit in the router's configuration size budget for its namespace", sizes[i][j])}
		}
	}
	if len(rejected) == 0 {
		return candidates
	}
	out := make([]*routev1.Route, 0, len(candidates)-len(rejected))
	for _, r := range candidates {
		if !rejected[KeyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}

// overShare returns the indices of the routes (of one namespace, with
// their sizes) to reject so that the rest fit in share: the largest first
// and, of equal sizes, the younger first, so a new route does not push
// out an older one.
func overShare(routes []*routev1.Route, sizes []int, share int) []int {
	idx := make([]int, len(routes))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return Older(routes[idx[b]], routes[idx[a]]) })
	youngest := make([]int, len(idx))
	for i, j := range idx {
		youngest[i] = sizes[j]
	}
	out := fairshare.LargestFirst(youngest, share)
	for n, i := range out {
		out[n] = idx[i]
	}
	return out
}
