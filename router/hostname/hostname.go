// Package hostname generates route hosts as OpenShift's router does: from
// spec.subdomain and ROUTER_DOMAIN for routes without spec.host, then from
// ROUTER_SUBDOMAIN for routes without spec.host (and, with
// ROUTER_OVERRIDE_HOSTNAME or ROUTER_OVERRIDE_DOMAINS, for others).
package hostname

import (
	"strings"

	routev1 "github.com/openshift/api/route/v1"
)

// Generator decides the host each route is served on.
type Generator struct {
	// Domain (ROUTER_DOMAIN) completes spec.subdomain of routes without
	// spec.host: host = <subdomain>.<Domain>.
	Domain string
	// Subdomain is the template: ${name} and ${namespace} are replaced.
	Subdomain string
	// Override generates the host of every route.
	Override bool
	// OverrideDomains generates the host of routes in these domains.
	OverrideDomains []string
}

// Enabled reports whether the generator can change anything.
func (g Generator) Enabled() bool { return g.Subdomain != "" || g.Domain != "" }

// Host returns the host route r is served on, and whether it was generated.
func (g Generator) Host(r *routev1.Route) (string, bool) {
	host := strings.ToLower(strings.TrimSpace(r.Spec.Host))
	generated := false
	if host == "" && g.Domain != "" && r.Spec.Subdomain != "" {
		host, generated = strings.ToLower(strings.TrimSpace(r.Spec.Subdomain)+"."+g.Domain), true
	}
	if g.Subdomain == "" || !g.generate(host) {
		return host, generated
	}
	return strings.ToLower(strings.NewReplacer("${name}", r.Name, "${namespace}", r.Namespace).Replace(g.Subdomain)), true
}

func (g Generator) generate(host string) bool {
	if host == "" || g.Override {
		return true
	}
	for _, d := range g.OverrideDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// Apply returns routes with generated hosts filled in; routes that change
// are copied, the others are returned as they are.
func (g Generator) Apply(routes []*routev1.Route) []*routev1.Route {
	if !g.Enabled() {
		return routes
	}
	out := make([]*routev1.Route, len(routes))
	for i, r := range routes {
		host, generated := g.Host(r)
		if !generated || host == r.Spec.Host {
			out[i] = r
			continue
		}
		c := r.DeepCopy()
		c.Spec.Host = host
		out[i] = c
	}
	return out
}
