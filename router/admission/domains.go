package admission

import (
	"strings"

	routev1 "github.com/openshift/api/route/v1"
)

// Messages of the allowed/denied domains step, as OpenShift's router words
// them.
const (
	msgDeniedDomain     = "host in list of denied domains"
	msgNotAllowedDomain = "host not in the allowed list of domains"
)

// DomainPolicy is the allowed/denied domains step (ROUTER_ALLOWED_DOMAINS,
// ROUTER_DENIED_DOMAINS). A host is in a domain if it is the domain or one
// of its subdomains ("www.example.com" and "example.com" are in
// "example.com"; "badexample.com" is not). Denied domains win: a host in a
// denied domain is refused even if it is also in an allowed domain. With
// allowed domains set, only hosts in one of them are admitted.
//
// For a wildcard route, which serves every host of its subdomain, the
// subdomain itself must be in an allowed domain (so "*.com" is not admitted
// for an allowed "example.com"), and no denied domain may be one of the
// hosts it would serve (a wildcard route for "*.example.com" is refused
// when "ops.example.com" is denied). OpenShift checks only the route's host.
type DomainPolicy struct {
	allowed map[string]bool
	denied  map[string]bool
	// deniedChildren indexes denied domains by their parent domain, for
	// the wildcard check.
	deniedChildren map[string]string
}

// NewDomainPolicy returns the policy for the given lists. Entries are
// compared in lower case, without surrounding blanks or a trailing dot;
// empty entries are ignored.
func NewDomainPolicy(allowed, denied []string) DomainPolicy {
	p := DomainPolicy{allowed: domainSet(allowed), denied: domainSet(denied)}
	for d := range p.denied {
		if parent := parentDomain(d); parent != "" {
			if p.deniedChildren == nil {
				p.deniedChildren = map[string]string{}
			}
			if cur, ok := p.deniedChildren[parent]; !ok || d < cur {
				p.deniedChildren[parent] = d
			}
		}
	}
	return p
}

func domainSet(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	set := make(map[string]bool, len(list))
	for _, d := range list {
		if d = normalizeDomain(d); d != "" {
			set[d] = true
		}
	}
	return set
}

// normalizeDomain returns a domain list entry as it is compared: lower
// case, without surrounding blanks and without a trailing dot.
func normalizeDomain(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// inDomains reports whether host is one of domains or a subdomain of one.
func inDomains(host string, domains map[string]bool) bool {
	if len(domains) == 0 {
		return false
	}
	// Bounded by the number of labels of host.
	for h := host; h != ""; h = parentDomain(h) {
		if domains[h] {
			return true
		}
	}
	return false
}

// parentDomain returns what follows the first "." of host ("" if none):
// the subdomain a wildcard route for host serves.
func parentDomain(host string) string {
	if i := strings.IndexByte(host, '.'); i > 0 {
		return host[i+1:]
	}
	return ""
}

// Check returns the RouteNotAdmitted message for a route's host, or ok.
func (p DomainPolicy) Check(host string, wildcard bool) (msg string, ok bool) {
	if host == "" {
		// NoHostValue is reported by the host step.
		return "", true
	}
	if inDomains(host, p.denied) {
		return msgDeniedDomain, false
	}
	domain := parentDomain(host)
	if wildcard && domain != "" {
		if d, found := p.deniedChildren[domain]; found {
			return msgDeniedDomain + " (wildcard *." + domain + " would serve denied " + d + ")", false
		}
	}
	if len(p.allowed) > 0 {
		if !inDomains(host, p.allowed) {
			return msgNotAllowedDomain, false
		}
		if wildcard && domain != "" && !inDomains(domain, p.allowed) {
			return msgNotAllowedDomain + " (wildcard *." + domain + " would serve hosts outside it)", false
		}
	}
	return "", true
}

// madeCheck is check for the routes the router made (made): a route for
// every host is refused while domains are denied, and one for the
// subdomains of a domain at any depth ("*.domain") when a denied domain is
// that domain or below it.
func (p DomainPolicy) madeCheck(made func(Key) bool) check {
	return func(r *routev1.Route, k *lazyKey) (Result, bool) {
		host := hostOf(r)
		if made == nil || !(host == AnyHost || strings.HasPrefix(host, "*.")) || !made(k.get()) {
			return p.check(r)
		}
		suffix := strings.TrimPrefix(host, "*")
		for d := range p.denied {
			if host == AnyHost || d == suffix[1:] || strings.HasSuffix(d, suffix) {
				return Result{Reason: ReasonRouteNotAdmitted, Message: msgDeniedDomain + " (a route for " + host + " would serve denied " + d + ")"}, false
			}
		}
		return p.check(r)
	}
}

func (p DomainPolicy) check(r *routev1.Route) (Result, bool) {
	msg, ok := p.Check(hostOf(r), r.Spec.WildcardPolicy == routev1.WildcardPolicySubdomain)
	if ok {
		return Result{}, true
	}
	return Result{Reason: ReasonRouteNotAdmitted, Message: msg}, false
}
