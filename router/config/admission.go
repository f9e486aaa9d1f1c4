package config

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openshift-router-go/router/router/admission"
)

// Admission holds the settings of route admission (domains, wildcards,
// namespace ownership). EXTENDED_VALIDATION is Config.ExtendedValidation.
type Admission struct {
	// AllowedDomains is ROUTER_ALLOWED_DOMAINS: if not empty, only hosts
	// in these domains (or their subdomains) are admitted.
	AllowedDomains []string
	// DeniedDomains is ROUTER_DENIED_DOMAINS: hosts in these domains (or
	// their subdomains) are refused; wins over AllowedDomains.
	DeniedDomains []string
	// AllowWildcardRoutes is ROUTER_ALLOW_WILDCARD_ROUTES: admit routes
	// with wildcardPolicy Subdomain.
	AllowWildcardRoutes bool
	// DisableNamespaceOwnershipCheck is
	// ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK: routes of several
	// namespaces may share a host or subdomain (not a host+path).
	DisableNamespaceOwnershipCheck bool
	// MaxConfigBytes is ROUTER_MAX_CONFIG_BYTES: the configuration size
	// budget the namespaces share (admission.DefaultMaxConfigBytes; 0:
	// none).
	MaxConfigBytes int
}

// admission reads the settings of route admission.
func (p *parser) admission() Admission {
	return Admission{
		AllowedDomains:                 p.domainList("ROUTER_ALLOWED_DOMAINS"),
		DeniedDomains:                  p.domainList("ROUTER_DENIED_DOMAINS"),
		AllowWildcardRoutes:            p.boolean("ROUTER_ALLOW_WILDCARD_ROUTES", false),
		DisableNamespaceOwnershipCheck: p.boolean("ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", false),
		MaxConfigBytes:                 p.byteSize("ROUTER_MAX_CONFIG_BYTES", admission.DefaultMaxConfigBytes),
	}
}

// byteUnits are the suffixes byteSize accepts, as Kubernetes quantities
// write them.
var byteUnits = []struct {
	suffix string
	shift  uint
}{{"Ki", 10}, {"Mi", 20}, {"Gi", 30}}

// byteSize reads a number of bytes: a whole number, optionally with a
// Ki, Mi or Gi suffix ("256Mi"); 0 is 0. A malformed value is ignored with
// a warning (the default is used).
func (p *parser) byteSize(name string, def int) int {
	v, ok := p.getenv(name)
	t := strings.TrimSpace(v)
	if !ok || t == "" {
		return def
	}
	num, shift := t, uint(0)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, shift = n, u.shift
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		p.ignore(name, v, "want a whole number of bytes, optionally with a Ki, Mi or Gi suffix (0: no budget)", def)
		return def
	}
	return int(n << shift)
}

// domainList parses a comma-separated list of DNS domains ("example.com,
// apps.example.org"): blanks around entries and empty entries are ignored,
// entries are lower-cased and a trailing dot is dropped. Each entry covers
// itself and its subdomains, so a "*." entry is ignored with a warning
// rather than silently meaning something else; so are entries that are not
// DNS domains (they could never match a route's host).
func (p *parser) domainList(name string) []string {
	v, _ := p.getenv(name)
	var out []string
	seen := map[string]bool{}
	for _, d := range strings.Split(v, ",") {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		switch {
		case d == "" || seen[d]:
			continue
		case strings.HasPrefix(d, "*."):
			p.warnings = append(p.warnings, fmt.Sprintf("%s: %q: write the domain without \"*.\" (%s covers the domain and all its subdomains); entry ignored", name, d, d[2:]))
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: %q is not a DNS domain (want a comma-separated list such as \"example.com, apps.example.org\"): %s; entry ignored", name, d, strings.Join(msgs, "; ")))
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}
