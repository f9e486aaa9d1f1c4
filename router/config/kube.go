package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kube holds the settings of the Kubernetes API source, route status and
// host name generation.
type Kube struct {
	// RouteLabels (ROUTE_LABELS) selects the routes this router serves.
	RouteLabels labels.Selector
	// RouteFields (ROUTE_FIELDS) is a field selector on routes.
	RouteFields fields.Selector
	// NamespaceLabels (NAMESPACE_LABELS, or PROJECT_LABELS when unset)
	// selects the namespaces whose routes this router serves; nil: all.
	NamespaceLabels labels.Selector
	// ResyncInterval (ROUTER_RESYNC_INTERVAL) is the informers' resync period.
	ResyncInterval time.Duration

	// RouterName (ROUTER_SERVICE_NAME) names this router in route status.
	RouterName string
	// RouterNamespace is ROUTER_SERVICE_NAMESPACE.
	RouterNamespace string
	// CanonicalHostname is ROUTER_CANONICAL_HOSTNAME.
	CanonicalHostname string
	// UpdateStatus (ROUTER_UPDATE_STATUS, default true) writes route status.
	UpdateStatus bool
	// BindPortsAfterSync (ROUTER_BIND_PORTS_AFTER_SYNC) keeps the ports
	// unbound until the initial sync is loaded.
	BindPortsAfterSync bool

	// Domain (ROUTER_DOMAIN) completes the spec.subdomain of routes without
	// spec.host: <subdomain>.<Domain>.
	Domain string
	// Subdomain (ROUTER_SUBDOMAIN) is the template for generated hosts,
	// with ${name} and ${namespace}.
	Subdomain string
	// OverrideHostname (ROUTER_OVERRIDE_HOSTNAME) generates the host of
	// every route from Subdomain.
	OverrideHostname bool
	// OverrideDomains (ROUTER_OVERRIDE_DOMAINS): routes whose host is in
	// one of these domains get a generated host.
	OverrideDomains []string

	// GatewayControllerName (ROUTER_GATEWAY_CONTROLLER_NAME) is the
	// GatewayClass spec.controllerName whose Gateways this router serves.
	GatewayControllerName string
	// GatewaySubdomain (ROUTER_GATEWAY_SUBDOMAIN, this router's addition)
	// is the template of each Gateway's own host name, with ${name} and
	// ${namespace}: its status address, where its listeners without a
	// hostname are served apart from other Gateways'. Empty: every
	// Gateway has ROUTER_CANONICAL_HOSTNAME.
	GatewaySubdomain string
	// GatewayDefaultCertificateFrom (ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM,
	// this router's addition) is the Gateway, "namespace/name", whose HTTPS
	// listener without a hostname serves its certificate to TLS clients
	// that name no host of a route or listener (or none), instead of the
	// default certificate. Empty: no Gateway does.
	GatewayDefaultCertificateFrom string
}

// DefaultGatewayControllerName is ROUTER_GATEWAY_CONTROLLER_NAME's default.
const DefaultGatewayControllerName = "haproxy.router.openshift.io/gateway-controller"

// gatewayControllerName is the Gateway API's pattern of a controller name:
// a domain, "/", a path.
var gatewayControllerName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`)

// kube reads the settings of the Kubernetes API source.
func (p *parser) kube() Kube {
	k := Kube{
		RouteLabels:        p.labelSelector("ROUTE_LABELS"),
		RouteFields:        p.fieldSelector("ROUTE_FIELDS"),
		ResyncInterval:     p.duration("ROUTER_RESYNC_INTERVAL", 30*time.Minute),
		RouterName:         p.str("ROUTER_SERVICE_NAME", "public"),
		RouterNamespace:    p.str("ROUTER_SERVICE_NAMESPACE", ""),
		CanonicalHostname:  p.str("ROUTER_CANONICAL_HOSTNAME", ""),
		UpdateStatus:       p.boolean("ROUTER_UPDATE_STATUS", true),
		BindPortsAfterSync: p.boolean("ROUTER_BIND_PORTS_AFTER_SYNC", false),
		Subdomain:          p.str("ROUTER_SUBDOMAIN", ""),
		Domain:             p.routerDomain("ROUTER_DOMAIN"),
		OverrideHostname:   p.boolean("ROUTER_OVERRIDE_HOSTNAME", false),
		OverrideDomains:    p.kubeDomains("ROUTER_OVERRIDE_DOMAINS"),

		GatewayControllerName: p.str("ROUTER_GATEWAY_CONTROLLER_NAME", DefaultGatewayControllerName),
		GatewaySubdomain:      p.str("ROUTER_GATEWAY_SUBDOMAIN", ""),

		GatewayDefaultCertificateFrom: p.str("ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM", ""),
	}
	if g := k.GatewayDefaultCertificateFrom; g != "" {
		ns, name, ok := strings.Cut(g, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			p.errs = append(p.errs, fmt.Errorf("ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM=%q: want a Gateway as namespace/name", g))
		}
	}
	if t := k.GatewaySubdomain; t != "" {
		probe := strings.NewReplacer("${name}", "name", "${namespace}", "namespace").Replace(t)
		if msgs := validation.IsDNS1123Subdomain(probe); len(msgs) > 0 || strings.Contains(probe, "$") ||
			!strings.Contains(t, "${name}") || !strings.Contains(t, "${namespace}") {
			p.errs = append(p.errs, fmt.Errorf("ROUTER_GATEWAY_SUBDOMAIN=%q: want a host name template with ${name} and ${namespace}, such as ${name}-${namespace}.gateways.example.com", t))
		}
	}
	if n := k.GatewayControllerName; len(n) > 253 || !gatewayControllerName.MatchString(n) {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_GATEWAY_CONTROLLER_NAME=%q: want a GatewayClass controllerName, a domain and a path such as %s", n, DefaultGatewayControllerName))
	}
	if v, _ := p.getenv("NAMESPACE_LABELS"); strings.TrimSpace(v) != "" {
		k.NamespaceLabels = p.labelSelector("NAMESPACE_LABELS")
	} else if v, _ := p.getenv("PROJECT_LABELS"); strings.TrimSpace(v) != "" {
		k.NamespaceLabels = p.labelSelector("PROJECT_LABELS")
	}
	if msgs := validation.IsDNS1123Label(k.RouterName); len(msgs) > 0 {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_SERVICE_NAME=%q: %s", k.RouterName, strings.Join(msgs, "; ")))
	}
	if k.CanonicalHostname != "" {
		if msgs := validation.IsDNS1123Subdomain(k.CanonicalHostname); len(msgs) > 0 {
			p.errs = append(p.errs, fmt.Errorf("ROUTER_CANONICAL_HOSTNAME=%q: %s", k.CanonicalHostname, strings.Join(msgs, "; ")))
		}
	}
	if k.Subdomain != "" {
		probe := strings.NewReplacer("${name}", "name", "${namespace}", "namespace").Replace(k.Subdomain)
		if msgs := validation.IsDNS1123Subdomain(probe); len(msgs) > 0 || strings.Contains(probe, "$") {
			p.errs = append(p.errs, fmt.Errorf("ROUTER_SUBDOMAIN=%q: want a host name template such as ${name}-${namespace}.apps.example.com", k.Subdomain))
		}
	}
	if (k.OverrideHostname || len(k.OverrideDomains) > 0) && k.Subdomain == "" {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_OVERRIDE_HOSTNAME and ROUTER_OVERRIDE_DOMAINS need ROUTER_SUBDOMAIN"))
	}
	return k
}

func (p *parser) labelSelector(name string) labels.Selector {
	v, _ := p.getenv(name)
	if strings.TrimSpace(v) == "" {
		return labels.Everything()
	}
	sel, err := labels.Parse(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a label selector such as env=prod,tier in (a,b): %v", name, v, err))
		return labels.Everything()
	}
	return sel
}

func (p *parser) fieldSelector(name string) fields.Selector {
	v, _ := p.getenv(name)
	if strings.TrimSpace(v) == "" {
		return fields.Everything()
	}
	sel, err := fields.ParseSelector(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a field selector such as metadata.namespace!=test: %v", name, v, err))
		return fields.Everything()
	}
	return sel
}

// kubeDomains parses a comma-separated list of DNS domains.
func (p *parser) kubeDomains(name string) []string {
	v, _ := p.getenv(name)
	var out []string
	for _, d := range strings.Split(v, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: %q is not a DNS domain: %s; entry ignored", name, d, strings.Join(msgs, "; ")))
			continue
		}
		out = append(out, d)
	}
	return out
}

// routerDomain reads ROUTER_DOMAIN: a DNS domain ("" if unset; a
// malformed one is ignored with a warning: no host could be made of it).
func (p *parser) routerDomain(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(v)), ".")
	if v == "" {
		return ""
	}
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		p.ignore(name, v, "want a DNS domain such as apps.example.com", "none (routes with spec.subdomain get no host)")
		return ""
	}
	return v
}
