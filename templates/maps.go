package templates

import (
	"path"
	"sort"
	"strings"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/model"
)

// Names of the map files generateHAProxyMap knows, as in OpenShift.
const (
	mapNameWildcardDomain = "os_wildcard_domain.map"
	mapNameHTTPBackend    = "os_http_be.map"
	mapNameEdgeReencrypt  = "os_edge_reencrypt_be.map"
	mapNameHTTPRedirect   = "os_route_http_redirect.map"
	mapNameTCPBackend     = "os_tcp_be.map"
	mapNameSNIPassthrough = "os_sni_passthrough.map"
	mapNameCertConfig     = "cert_config.map"
)

const (
	// certConfigDir is where route certificates live, relative to the
	// working directory.
	certConfigDir = layout.CertsDir
	// allowlistDir is where allowlist files go, relative to the working
	// directory (as in OpenShift).
	allowlistDir = layout.AllowlistsDir
	// certConfigALPN is the crt-list option that offers HTTP/2.
	certConfigALPN = "[alpn h2,http/1.1]"
	// wildcardMapEntryPrefix starts the regexps of wildcard routes, which
	// are sorted after all other map entries.
	wildcardMapEntryPrefix = `^[^\.]*\.`
	// Values of os_route_http_redirect.map entries.
	redirectMapValueRedirect = "1"
	redirectMapValueNone     = "0"
)

// HAProxyMapNames lists the map names GenerateHAProxyMap knows.
func HAProxyMapNames() []string {
	return []string{
		mapNameWildcardDomain,
		mapNameHTTPBackend,
		mapNameEdgeReencrypt,
		mapNameHTTPRedirect,
		mapNameTCPBackend,
		mapNameSNIPassthrough,
		mapNameCertConfig,
	}
}

// mapEntryFunc returns the key and value of a route's entry in a map, and
// whether the route has one.
type mapEntryFunc func(key model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool)

// mapEntryFuncFor returns the entry generator of the named map, or nil.
func mapEntryFuncFor(name string) mapEntryFunc {
	switch name {
	case mapNameWildcardDomain:
		return wildcardDomainMapEntry
	case mapNameHTTPBackend:
		return httpBackendMapEntry
	case mapNameEdgeReencrypt:
		return edgeReencryptMapEntry
	case mapNameHTTPRedirect:
		return httpRedirectMapEntry
	case mapNameTCPBackend:
		return tcpBackendMapEntry
	case mapNameSNIPassthrough:
		return sniPassthroughMapEntry
	}
	return nil
}

// GenerateHAProxyMap returns the lines of the named OpenShift map file for
// the routes of td, in OpenShift's format and order:
//
//   - os_wildcard_domain.map: "<route regexp of host, no path> 1" for each
//     wildcard route.
//   - os_http_be.map: "<route regexp> <backend>" for insecure routes and for
//     edge/reencrypt routes with insecureEdgeTerminationPolicy Allow.
//   - os_edge_reencrypt_be.map: "<route regexp> <backend>" for edge and
//     reencrypt routes.
//   - os_route_http_redirect.map: "<route regexp> 1" for routes with
//     insecureEdgeTerminationPolicy Redirect and "<route regexp> 0" for every
//     other route, so that a more specific non-redirecting path route wins
//     over a redirecting one (read with map_reg_int(...) -m bool).
//   - os_tcp_be.map: "<route regexp of host, no path> <backend>" for
//     passthrough and reencrypt routes without a path.
//   - os_sni_passthrough.map: "^<host>$ 1" for passthrough routes without a
//     path.
//   - cert_config.map (an HAProxy crt-list): "<WorkingDir>/router/certs/
//     <key.FileName()>.pem [alpn h2,http/1.1] <certificate host>" for edge
//     and reencrypt routes with a certificate; the ALPN part is left out when
//     td.DisableHTTP2 is set or when the route's certificate is also used by
//     another route (to avoid HTTP/2 connection coalescing).
//
// Routes without a host get no entries. <backend> is
// genBackendNamePrefix(termination) + ":" + "namespace:name", and route
// regexps are GenerateRouteRegexp's. Lines are sorted in reverse byte order,
// which puts longer paths of a host before shorter ones, with the entries of
// wildcard routes after all others (cert_config.map: plain reverse order).
// Unknown names give an empty list.
func GenerateHAProxyMap(name string, td model.TemplateData) []string {
	if name == mapNameCertConfig {
		return certConfigMapLines(td)
	}
	entry := mapEntryFuncFor(name)
	if entry == nil {
		return []string{}
	}
	lines := []string{}
	for _, key := range td.SortedStateKeys() {
		cfg := td.State[key]
		if cfg.Host == "" {
			continue
		}
		if k, v, ok := entry(key, cfg); ok {
			lines = append(lines, k+" "+v)
		}
	}
	sortMapLines(lines, wildcardMapEntryPrefix)
	return lines
}

// sortMapLines sorts lines in reverse byte order, with the lines that start
// with lastPrefix after all others.
func sortMapLines(lines []string, lastPrefix string) {
	sort.SliceStable(lines, func(i, j int) bool {
		pi := strings.HasPrefix(lines[i], lastPrefix)
		pj := strings.HasPrefix(lines[j], lastPrefix)
		if pi != pj {
			return pj
		}
		return lines[i] > lines[j]
	})
}

func backendName(key model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) string {
	return GenBackendNamePrefix(cfg.TLSTermination) + ":" + string(key)
}

func isEdgeOrReencrypt(t routev1.TLSTerminationType) bool {
	return t == routev1.TLSTerminationEdge || t == routev1.TLSTerminationReencrypt
}

func wildcardDomainMapEntry(_ model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	if !cfg.IsWildcard {
		return "", "", false
	}
	return GenerateRouteRegexp(cfg.Host, "", true), "1", true
}

func httpBackendMapEntry(key model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	served := cfg.TLSTermination == "" ||
		(isEdgeOrReencrypt(cfg.TLSTermination) && cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyAllow)
	if !served {
		return "", "", false
	}
	return GenerateRouteRegexp(cfg.Host, cfg.Path, cfg.IsWildcard), backendName(key, cfg), true
}

func edgeReencryptMapEntry(key model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	if !isEdgeOrReencrypt(cfg.TLSTermination) {
		return "", "", false
	}
	return GenerateRouteRegexp(cfg.Host, cfg.Path, cfg.IsWildcard), backendName(key, cfg), true
}

func httpRedirectMapEntry(_ model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	value := redirectMapValueNone
	if cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyRedirect {
		value = redirectMapValueRedirect
	}
	return GenerateRouteRegexp(cfg.Host, cfg.Path, cfg.IsWildcard), value, true
}

func tcpBackendMapEntry(key model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	if cfg.Path != "" {
		return "", "", false
	}
	if cfg.TLSTermination != routev1.TLSTerminationPassthrough && cfg.TLSTermination != routev1.TLSTerminationReencrypt {
		return "", "", false
	}
	return GenerateRouteRegexp(cfg.Host, "", cfg.IsWildcard), backendName(key, cfg), true
}

func sniPassthroughMapEntry(_ model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig) (string, string, bool) {
	if cfg.Path != "" || cfg.TLSTermination != routev1.TLSTerminationPassthrough {
		return "", "", false
	}
	return GenerateSNIRegexp(cfg.Host, cfg.IsWildcard), "1", true
}

// certConfigMapLines returns the crt-list lines of cert_config.map.
func certConfigMapLines(td model.TemplateData) []string {
	// How many routes use each certificate: a certificate shared by
	// several routes must not advertise h2, or browsers may coalesce
	// connections across those routes.
	// td.CertificateIndex counts them (as OpenShift's does); data built
	// without one is counted here.
	uses := td.CertificateIndex
	if uses == nil {
		uses = map[string]int{}
		for _, cfg := range td.State {
			if cfg.Host == "" {
				continue
			}
			if cert, ok := cfg.Certificates[cfg.Host]; ok && cert.Contents != "" {
				uses[cert.Contents]++
			}
		}
	}

	lines := []string{}
	for _, key := range td.SortedStateKeys() {
		cfg := td.State[key]
		if cfg.Host == "" || !isEdgeOrReencrypt(cfg.TLSTermination) {
			continue
		}
		cert, ok := cfg.Certificates[cfg.Host]
		if !ok || cert.Contents == "" {
			continue
		}
		fields := []string{path.Join(td.WorkingDir, certConfigDir, key.FileName()+".pem")}
		if !td.DisableHTTP2 && uses[cert.Contents] <= 1 {
			fields = append(fields, certConfigALPN)
		}
		fields = append(fields, GenCertificateHostName(cfg.Host, cfg.IsWildcard))
		lines = append(lines, strings.Join(fields, " "))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	return lines
}
