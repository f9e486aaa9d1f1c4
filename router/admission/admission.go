// Package admission decides which routes the router serves. It is a chain of
// small, pure steps over the set of watched routes — per-route validation,
// then host claims — each producing OpenShift's admitted/rejected result and
// reason strings. Nothing here does I/O.
package admission

import (
	"sort"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
)

// Reasons used in route status conditions, as OpenShift's router uses them.
const (
	ReasonExtendedValidationFailed = "ExtendedValidationFailed"
	ReasonHostAlreadyClaimed       = "HostAlreadyClaimed"
	// ReasonConfigCheckFailed rejects a route whose rendered configuration
	// HAProxy refused; this router's addition.
	ReasonConfigCheckFailed = "ConfigCheckFailed"
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
}

// Options configure admission.
type Options struct {
	// ExtendedValidation checks certificates and keys (EXTENDED_VALIDATION).
	ExtendedValidation bool
	// DisableNamespaceOwnershipCheck lets routes of several namespaces
	// share a host (ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK).
	DisableNamespaceOwnershipCheck bool
	// Excluded routes are rejected up front (e.g. routes whose rendered
	// configuration HAProxy refused), with the given result.
	Excluded map[Key]Result
}

// Decision is the outcome for a set of routes.
type Decision struct {
	// Admitted routes, sorted by namespace and name.
	Admitted []*routev1.Route
	// Results holds every route's result, admitted or not.
	Results map[Key]Result
}

// Admit runs the admission chain over routes.
func Admit(routes []*routev1.Route, opts Options) Decision {
	d := Decision{Results: make(map[Key]Result, len(routes))}
	valid := make([]*routev1.Route, 0, len(routes))
	for _, r := range routes {
		k := KeyOf(r)
		if res, ok := opts.Excluded[k]; ok {
			d.Results[k] = res
			continue
		}
		if errs := Validate(r, opts.ExtendedValidation); len(errs) > 0 {
			d.Results[k] = Result{Host: hostOf(r), Reason: ReasonExtendedValidationFailed, Message: errs.ToAggregate().Error()}
			continue
		}
		valid = append(valid, r)
	}
	for _, r := range claimHosts(valid, opts, d.Results) {
		d.Admitted = append(d.Admitted, r)
		d.Results[KeyOf(r)] = Result{Admitted: true, Host: hostOf(r)}
	}
	sort.Slice(d.Admitted, func(i, j int) bool { return KeyOf(d.Admitted[i]) < KeyOf(d.Admitted[j]) })
	return d
}

func hostOf(r *routev1.Route) string { return strings.ToLower(strings.TrimSpace(r.Spec.Host)) }

// Older reports whether a claimed its host before b: the earlier creation
// timestamp wins, then namespace and name as a stable tie-breaker.
func Older(a, b *routev1.Route) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// claimHosts applies OpenShift's host claim rules: for each host the oldest
// route wins; its namespace owns the host (unless the ownership check is
// disabled) and further routes of that namespace are admitted for other
// paths; a second route for the same host and path is refused.
func claimHosts(routes []*routev1.Route, opts Options, results map[Key]Result) []*routev1.Route {
	byHost := make(map[string][]*routev1.Route)
	for _, r := range routes {
		h := hostOf(r)
		byHost[h] = append(byHost[h], r)
	}
	admitted := make([]*routev1.Route, 0, len(routes))
	for host, claimants := range byHost {
		sort.Slice(claimants, func(i, j int) bool { return Older(claimants[i], claimants[j]) })
		owner := claimants[0]
		paths := make(map[string]*routev1.Route, len(claimants))
		for _, r := range claimants {
			if !opts.DisableNamespaceOwnershipCheck && r.Namespace != owner.Namespace {
				results[KeyOf(r)] = Result{Host: host, Reason: ReasonHostAlreadyClaimed,
					Message: "a route in another namespace holds host " + host + " and is older than " + r.Name +
						" (route " + owner.Namespace + "/" + owner.Name + ")"}
				continue
			}
			p := normalizedPath(r)
			if holder, ok := paths[p]; ok {
				results[KeyOf(r)] = Result{Host: host, Reason: ReasonHostAlreadyClaimed,
					Message: "route " + holder.Namespace + "/" + holder.Name + " already exposes " + host + p + " and is older"}
				continue
			}
			paths[p] = r
			admitted = append(admitted, r)
		}
	}
	return admitted
}

// normalizedPath treats "" and "/" as the same path; passthrough routes
// (no path) claim the whole host for TLS.
func normalizedPath(r *routev1.Route) string {
	p := r.Spec.Path
	if strings.TrimRight(p, "/") == "" {
		return "/"
	}
	return p
}
