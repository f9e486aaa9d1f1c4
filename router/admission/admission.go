// Package admission decides which routes the router serves. It is a chain of
// small, pure steps over the set of watched routes, each producing
// OpenShift's admitted/rejected result and reason strings:
//
//  1. excluded routes (whose configuration HAProxy refused) are rejected;
//  2. allowed/denied domains (ROUTER_ALLOWED_DOMAINS, ROUTER_DENIED_DOMAINS);
//  3. wildcard policy (ROUTER_ALLOW_WILDCARD_ROUTES);
//  4. host presence and syntax;
//  5. route validation (structure always, certificates and keys with
//     EXTENDED_VALIDATION, and always whether HAProxy can load them; an
//     admitted route's certificates are served in sanitised form);
//  6. subdomain ownership of wildcard routes;
//  7. unique host: for each host the oldest route wins, its namespace owns
//     the host, and each host+path is served by one route only;
//  8. the configuration size budget (ROUTER_MAX_CONFIG_BYTES): where a
//     namespace's routes ask for more than its fair share of the
//     configuration, its largest routes are rejected (budget.go).
//
// Pending routes (Options.Pending) take part in 6 and 7, so they keep
// their claims, but are not admitted and get no result.
//
// Steps 1-5 look at one route at a time; 6 and 7 look at the routes that
// passed them, oldest first, so a rejected route never holds a claim and a
// claim passes to the next oldest route as soon as its holder goes away;
// 8 looks at the routes that hold their claims, by namespace.
// Nothing here does I/O, and the whole chain is O(n log n) in the number of
// routes.
package admission

import (
	"sort"
	"strings"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/store"
)

// Reasons used in route status conditions, as OpenShift's router uses them.
const (
	// ReasonRouteNotAdmitted: the router's admission policy (allowed or
	// denied domains, wildcard policy) refuses the route.
	ReasonRouteNotAdmitted = "RouteNotAdmitted"
	// ReasonNoHostValue: the route has no spec.host.
	ReasonNoHostValue = "NoHostValue"
	// ReasonInvalidHost: spec.host is not a valid DNS name.
	ReasonInvalidHost = "InvalidHost"
	// ReasonExtendedValidationFailed: the route's fields (or, with
	// EXTENDED_VALIDATION, its certificates and keys) are invalid.
	ReasonExtendedValidationFailed = "ExtendedValidationFailed"
	// ReasonHostAlreadyClaimed: an older route holds the host, its
	// subdomain, or the same host and path.
	ReasonHostAlreadyClaimed = "HostAlreadyClaimed"
	// ReasonCertificateNotLoadable rejects an edge or re-encrypt route whose
	// certificate or key HAProxy could not load (an encrypted key, a key
	// that does not match, a key too small for OpenSSL, ...); this
	// router's addition, so one route cannot break the configuration.
	ReasonCertificateNotLoadable = "CertificateNotLoadable"
	// ReasonConfigCheckFailed rejects a route whose rendered configuration
	// HAProxy refused; this router's addition.
	ReasonConfigCheckFailed = "ConfigCheckFailed"
	// ReasonConfigBudgetExceeded rejects a route whose configuration does
	// not fit in its namespace's share of the configuration size budget
	// (budget.go); this router's addition.
	ReasonConfigBudgetExceeded = "ConfigBudgetExceeded"
)

// Key identifies a route: "namespace/name".
type Key string

// KeyOf returns the key of a route.
func KeyOf(r *routev1.Route) Key { return Key(r.Namespace + "/" + r.Name) }

// Result is the admission outcome of one route.
type Result struct {
	Admitted bool
	// Host is the host the route is admitted (or rejected) for.
	Host    string
	Reason  string
	Message string
	// Holder is, for HostAlreadyClaimed, the route that holds the claim.
	Holder Key
}

// Options configure admission.
type Options struct {
	// ExtendedValidation checks certificates and keys (EXTENDED_VALIDATION).
	ExtendedValidation bool
	// AllowWildcardRoutes admits routes with wildcardPolicy Subdomain
	// (ROUTER_ALLOW_WILDCARD_ROUTES).
	AllowWildcardRoutes bool
	// DisableNamespaceOwnershipCheck lets routes of several namespaces
	// share a host and a subdomain; only an identical host+path is then
	// refused (ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK).
	DisableNamespaceOwnershipCheck bool
	// AllowedDomains, if not empty, are the only domains (with their
	// subdomains) route hosts may be in (ROUTER_ALLOWED_DOMAINS).
	AllowedDomains []string
	// DeniedDomains are domains (with their subdomains) route hosts may not
	// be in; they win over AllowedDomains (ROUTER_DENIED_DOMAINS).
	DeniedDomains []string
	// MaxConfigBytes is the configuration size budget the namespaces
	// share (ROUTER_MAX_CONFIG_BYTES, see budget.go); 0: none.
	MaxConfigBytes int
	// Excluded routes are rejected up front (e.g. routes whose rendered
	// configuration HAProxy refused), with the given result.
	Excluded map[Key]Result
	// Pending routes wait for something outside admission (the answer
	// about their external certificate's secret): they go through the
	// chain and hold the claims they win, so no other route takes their
	// host meanwhile, but are neither admitted nor given a result (their
	// status stays as it is).
	Pending map[Key]bool
	// Memo, when set, remembers how route objects validated from one
	// Admit to the next (nil: every route is validated every time).
	Memo *ValidationMemo
	// Made are the routes the router made (from the Gateway API's
	// objects): only these may have the host AnyHost.
	Made func(Key) bool
	// ClaimPath, if set, returns the path a made route claims when it is
	// not its path ("": it is): the Gateway API's Exact matches and
	// header matches claim their path apart from the prefix of the same
	// path (and from each other).
	ClaimPath func(Key) string
	// ClaimGroup, if set, returns the group of a made route ("": none):
	// made routes of one group share hosts whatever their namespaces (the
	// Gateway API's routes on the same Gateways: their owner lets those
	// namespaces attach), one route per path (the oldest).
	ClaimGroup func(Key) string
	// ClaimSide, if set, returns the one port a made route is served on,
	// SideHTTP or SideHTTPS ("": both): routes of one host and path on
	// different sides do not conflict (the Gateway API's HTTPRoutes on an
	// HTTP and an HTTPS listener, e.g. a redirect to HTTPS and the
	// backends); a route on both sides conflicts with either.
	ClaimSide func(Key) string
	// HeaderMatched, if set, says which made routes have header matches
	// (at most MaxHeaderMatchRoutes a namespace are admitted).
	HeaderMatched func(Key) bool
}

// Decision is the outcome for a set of routes.
type Decision struct {
	// Admitted routes, sorted by namespace and name. Edge and re-encrypt
	// routes are copies whose TLS fields hold the sanitised certificates
	// and key to serve.
	Admitted []*routev1.Route
	// Results holds every route's result, admitted or not.
	Results map[Key]Result
}

// check is one per-route step of the chain: it returns the rejection of r
// (whose key k makes once, when a step asks), or ok.
type check func(r *routev1.Route, k *lazyKey) (rejection Result, ok bool)

// lazyKey is a route's key, made when first asked for: most routes pass
// the chain without one.
type lazyKey struct {
	r *routev1.Route
	k Key
}

func (l *lazyKey) get() Key {
	if l.k == "" {
		l.k = KeyOf(l.r)
	}
	return l.k
}

// Admit runs the admission chain over routes.
func Admit(routes []*routev1.Route, opts Options) Decision {
	d := Decision{Results: make(map[Key]Result, len(routes))}
	served := map[Key]*routev1.TLSConfig{}
	domains := NewDomainPolicy(opts.AllowedDomains, opts.DeniedDomains)
	checks := []check{
		func(r *routev1.Route, k *lazyKey) (Result, bool) {
			if len(opts.Excluded) == 0 {
				return Result{}, true
			}
			res, excluded := opts.Excluded[k.get()]
			return res, !excluded
		},
		domains.madeCheck(opts.Made),
		wildcardPolicyCheck(opts.AllowWildcardRoutes, opts.Made),
		hostCheck(opts.Made),
		validationCheck(opts.ExtendedValidation, opts.Memo, served, opts.Made),
	}
	defer opts.Memo.endPass()
	candidates := make([]*routev1.Route, 0, len(routes))
	var k lazyKey
routes:
	for _, r := range routes {
		k = lazyKey{r: r}
		for _, c := range checks {
			if res, ok := c(r, &k); !ok {
				res.Admitted = false
				if res.Host == "" {
					res.Host = hostOf(r)
				}
				d.Results[k.get()] = res
				continue routes
			}
		}
		candidates = append(candidates, r)
	}

	sort.Slice(candidates, func(i, j int) bool { return Older(candidates[i], candidates[j]) })
	rules := claimRules{path: opts.ClaimPath, group: opts.ClaimGroup, side: opts.ClaimSide}
	candidates = claimSubdomains(candidates, opts.DisableNamespaceOwnershipCheck, rules, d.Results)
	candidates = claimHosts(candidates, opts.DisableNamespaceOwnershipCheck, rules, d.Results)
	candidates = limitHeaderMatches(candidates, opts.HeaderMatched, d.Results)
	candidates = budgetConfig(candidates, served, opts.MaxConfigBytes, d.Results)

	d.Admitted = make([]*routev1.Route, 0, len(candidates))
	for _, r := range candidates {
		k := KeyOf(r)
		if opts.Pending[k] {
			continue
		}
		if tls := served[k]; tls != nil {
			// Served with its sanitised certificates; the watched
			// route itself is not changed.
			c := *r
			c.Spec.TLS = tls
			r = &c
		}
		d.Admitted = append(d.Admitted, r)
		d.Results[k] = Result{Admitted: true, Host: hostOf(r)}
	}
	sort.Slice(d.Admitted, func(i, j int) bool { return keyLess(d.Admitted[i], d.Admitted[j]) })
	return d
}

// keyLess reports whether KeyOf(a) < KeyOf(b), without making the keys.
func keyLess(a, b *routev1.Route) bool {
	return store.CompareKeys(a.Namespace, a.Name, b.Namespace, b.Name) < 0
}

// hostOf returns the host a route is matched on: spec.host in lower case.
func hostOf(r *routev1.Route) string { return strings.ToLower(r.Spec.Host) }

// Older reports whether a claimed its host before b, as OpenShift orders
// routes: the earlier creation timestamp wins, then the smaller UID; this
// router breaks remaining ties (routes without UIDs) by namespace and name.
func Older(a, b *routev1.Route) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
