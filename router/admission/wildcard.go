package admission

import (
	routev1 "github.com/openshift/api/route/v1"
)

// Messages of the wildcard policy step, as OpenShift's router words them.
const (
	msgWildcardNotAllowed = "wildcard routes are not allowed"
	msgUnknownWildcard    = "unknown wildcard policy "
)

// IsWildcard reports whether r is a wildcard route (wildcardPolicy
// Subdomain): a route for "wildcard.example.com" then serves every host
// "<label>.example.com" that no more specific route claims.
func IsWildcard(r *routev1.Route) bool {
	return r.Spec.WildcardPolicy == routev1.WildcardPolicySubdomain
}

// WildcardDomain returns the subdomain a wildcard route for host serves:
// host without its first label ("example.com" for "wildcard.example.com").
func WildcardDomain(host string) string { return parentDomain(host) }

// wildcardPolicyCheck is the wildcard policy step: None (or unset, which
// the API server defaults to None) passes; Subdomain passes only when
// wildcard routes are allowed (ROUTER_ALLOW_WILDCARD_ROUTES); any other
// value is refused. Made routes (Options.Made) pass with Subdomain.
func wildcardPolicyCheck(allow bool, made func(Key) bool) check {
	return func(r *routev1.Route, k *lazyKey) (Result, bool) {
		switch p := r.Spec.WildcardPolicy; p {
		case "", routev1.WildcardPolicyNone:
			return Result{}, true
		case routev1.WildcardPolicySubdomain:
			// The Gateway API's wildcard hostnames are not Routes:
			// ROUTER_ALLOW_WILDCARD_ROUTES is about Routes.
			if allow || made != nil && made(k.get()) {
				return Result{}, true
			}
			return Result{Reason: ReasonRouteNotAdmitted, Message: msgWildcardNotAllowed}, false
		default:
			return Result{Reason: ReasonRouteNotAdmitted, Message: msgUnknownWildcard + quoteForMessage(string(p))}, false
		}
	}
}
