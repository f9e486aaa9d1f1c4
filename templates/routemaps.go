package templates

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

// The default template's map files, written in Go (router additions:
// routeHTTPMap, routeHTTPSMap, routeSNIPassthroughMap, routeCertConfigMap).
// Ranging over 10,000 routes in a template costs about 40 ms a file
// (sorting the map through reflection, every helper called through it);
// these take a few. Each returns the whole file: a line per entry, each
// after a newline, and a final newline.

// mapText collects map lines.
type mapText struct{ b strings.Builder }

func (m *mapText) line(words ...string) {
	m.b.WriteByte('\n')
	for i, w := range words {
		if i > 0 {
			m.b.WriteByte(' ')
		}
		m.b.WriteString(w)
	}
}

func (m *mapText) String() string {
	m.b.WriteByte('\n')
	return m.b.String()
}

// RouteHTTPMap is route_http.map: host/path/ → the backend of a route
// without TLS or with insecureEdgeTerminationPolicy Allow (not
// passthrough), or @redirect for Redirect.
//
// A route the router answers itself (Respond) maps to "@STATUS"; the host
// "*" (model.AnyHost) has keys "*/path/", looked up last. Then each
// HostResponse of the HTTP port: "host/" → "@STATUS", unless a route has
// that key.
func RouteHTTPMap(td model.TemplateData) string {
	var m mapText
	keys := hostResponseKeys(td, false)
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		key := routeKey(cfg)
		switch {
		case cfg.TLSTermination == "":
			m.line(key, routeTarget(cfg, "be_http:"+string(k), false))
		case cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyRedirect:
			m.line(key, "@redirect")
		case cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyAllow && cfg.TLSTermination != routev1.TLSTerminationPassthrough:
			m.line(key, routeTarget(cfg, GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), false))
		default:
			continue
		}
		delete(keys, key)
	}
	hostResponseLines(&m, td, keys)
	return m.String()
}

// RouteHTTPSMap is route_https.map: host/path/ → the backend of an edge or
// re-encrypt route ("@STATUS" and HostResponses of the HTTPS port as in
// route_http.map).
func RouteHTTPSMap(td model.TemplateData) string {
	var m mapText
	keys := hostResponseKeys(td, true)
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if terminated(cfg.TLSTermination) {
			key := routeKey(cfg)
			m.line(key, routeTarget(cfg, GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), true))
			delete(keys, key)
		}
	}
	hostResponseLines(&m, td, keys)
	return m.String()
}

// routeKey is a route's key in route_http.map and route_https.map.
func routeKey(cfg model.ServiceAliasConfig) string {
	host := GenCertificateHostName(cfg.Host, cfg.IsWildcard)
	if cfg.ExactPath {
		return ExactRouteMapKey(host, cfg.Path)
	}
	return RouteMapKey(host, cfg.Path)
}

// routeTarget is a route's map value (in route_https.map with https): its
// backend, "@STATUS" when the router answers it, or a redirect
// (redirectTarget).
func routeTarget(cfg model.ServiceAliasConfig, backend string, https bool) string {
	switch {
	case cfg.Respond != 0:
		return "@" + strconv.Itoa(cfg.Respond)
	case cfg.Redirect != nil:
		return redirectTarget(cfg.Redirect, https)
	}
	return backend
}

// redirectTarget is the map value of a redirect the router answers:
// "@rdCODE|SCHEME|HOST|:PORT|PATH", the host and path empty for the
// request's, ":PORT" only for a port not the scheme's (the scheme is the
// request's, http or https by the map, unless the redirect names one; so
// is the port then, as the listener's is 80 or 443).
func redirectTarget(rd *model.Redirect, https bool) string {
	scheme := rd.Scheme
	if scheme == "" {
		scheme = map[bool]string{false: "http", true: "https"}[https]
	}
	port := ""
	if rd.Port != 0 && rd.Port != map[string]int{"http": 80, "https": 443}[scheme] {
		port = ":" + strconv.Itoa(rd.Port)
	}
	return "@rd" + strconv.Itoa(rd.Code) + "|" + scheme + "|" + rd.Host + "|" + port + "|" + rd.Path
}

// hostResponseKeys returns the map keys ("host/") of td's HostResponses of
// one port (nil without any).
func hostResponseKeys(td model.TemplateData, https bool) map[string]bool {
	var keys map[string]bool
	for _, h := range td.HostResponses {
		if h.HTTPS && https || h.HTTP && !https {
			if keys == nil {
				keys = map[string]bool{}
			}
			keys[RouteMapKey(h.Host, "")] = true
		}
	}
	return keys
}

// hostResponseLines writes the lines of the HostResponses whose keys are
// in keys.
func hostResponseLines(m *mapText, td model.TemplateData, keys map[string]bool) {
	for _, h := range td.HostResponses {
		if k := RouteMapKey(h.Host, ""); keys[k] {
			m.line(k, "@"+strconv.Itoa(h.Status))
			delete(keys, k)
		}
	}
}

// RouteSNIPassthroughMap is route_sni_passthrough.map: SNI host ("*.domain"
// for a wildcard route) → a passthrough route's backend; an edge or
// re-encrypt host of a domain that has a wildcard passthrough route (and
// no passthrough route of its own) → be_sni, so that it is terminated
// here, once per host.
func RouteSNIPassthroughMap(td model.TemplateData) string {
	keys := td.SortedStateKeys()
	wildcard, passthrough := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		cfg := td.State[k]
		if cfg.TLSTermination != routev1.TLSTerminationPassthrough {
			continue
		}
		if cfg.IsWildcard {
			wildcard[GenCertificateHostName(cfg.Host, true)] = true
		} else {
			passthrough[cfg.Host] = true
		}
	}
	var m mapText
	done := map[string]bool{}
	for _, k := range keys {
		cfg := td.State[k]
		switch {
		case cfg.TLSTermination == routev1.TLSTerminationPassthrough:
			m.line(GenCertificateHostName(cfg.Host, cfg.IsWildcard), "be_tcp:"+string(k))
		case terminated(cfg.TLSTermination) && !cfg.IsWildcard && wildcard[GenCertificateHostName(cfg.Host, true)] && !passthrough[cfg.Host] && !done[cfg.Host]:
			done[cfg.Host] = true
			m.line(cfg.Host, "be_sni")
		}
	}
	return m.String()
}

// RouteCertConfigMap is cert_config.map (a crt-list): the certificate file
// of each edge or re-encrypt route that has one, for its host, offering
// HTTP/2 unless it is disabled or the certificate serves other routes too
// (connection coalescing).
func RouteCertConfigMap(td model.TemplateData) string {
	var m mapText
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if !terminated(cfg.TLSTermination) {
			continue
		}
		cert := cfg.Certificates[cfg.Host]
		if cert.Contents == "" || cfg.Host == model.AnyHost {
			// A route for every host is served with the default
			// certificate (a crt-list names the hosts of each).
			continue
		}
		file := td.WorkingDir + "/router/certs/" + k.FileName() + ".pem"
		if !td.DisableHTTP2 && td.CertificateIndex[cert.Contents] <= 1 {
			file += " " + certConfigALPN
		}
		m.line(file, GenCertificateHostName(cfg.Host, cfg.IsWildcard))
	}
	return m.String()
}

func terminated(t routev1.TLSTerminationType) bool {
	return t == routev1.TLSTerminationEdge || t == routev1.TLSTerminationReencrypt
}

// setsForwardedHeaders reports whether a set-forwarded-headers policy sets
// X-Forwarded-Host, -Port, -Proto and Forwarded: append (the default,
// "") and replace do, never and if-none do not (if-none sets each only
// when the client sent none, in the route's backend).
func setsForwardedHeaders(policy string) bool {
	return policy == "" || policy == "append" || policy == "replace"
}

// ForwardedHeadersMap is forwarded_headers.map: the backend of each route
// (not passthrough) whose set-forwarded-headers policy differs from the
// router-wide one (ROUTER_SET_FORWARDED_HEADERS) in setting the forwarded
// headers or not → its policy. The frontends set them for the other routes
// when the router-wide policy does, for these when it does not.
func ForwardedHeadersMap(td model.TemplateData) string {
	var m mapText
	global := setsForwardedHeaders(td.HAProxy.ForwardedHeaders)
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if cfg.TLSTermination == routev1.TLSTerminationPassthrough {
			continue
		}
		policy := cfg.Settings.ForwardedHeaders
		if policy == "" {
			policy = td.HAProxy.ForwardedHeaders
		}
		if setsForwardedHeaders(policy) != global {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), policy)
		}
	}
	return m.String()
}

// TimeoutMillis is an HAProxy time value (a validated annotation) in
// milliseconds, rounded up as HAProxy rounds it (500us is 1); 0 for 0 or
// a value that does not parse.
func TimeoutMillis(v string) int64 {
	d, err := syntax.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// TimeoutServerMap is timeout_server.map: the backend of each route (not
// passthrough) with haproxy.router.openshift.io/timeout → that timeout
// in milliseconds. The default template's defaults section "routes" sets
// the server timeout of a request from it (http-request set-timeout), so
// that a changed timeout needs no reload; passthrough routes and a timeout
// of 0 (none) keep "timeout server" in their backend.
func TimeoutServerMap(td model.TemplateData) string {
	return timeoutMap(td, func(cfg model.ServiceAliasConfig) string { return cfg.Settings.Timeout })
}

// TimeoutTunnelMap is timeout_tunnel.map: as TimeoutServerMap for
// haproxy.router.openshift.io/timeout-tunnel.
func TimeoutTunnelMap(td model.TemplateData) string {
	return timeoutMap(td, func(cfg model.ServiceAliasConfig) string { return cfg.Settings.TimeoutTunnel })
}

func timeoutMap(td model.TemplateData, value func(model.ServiceAliasConfig) string) string {
	var m mapText
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if cfg.TLSTermination == routev1.TLSTerminationPassthrough {
			continue
		}
		if ms := TimeoutMillis(value(cfg)); ms > 0 {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), strconv.FormatInt(ms, 10))
		}
	}
	return m.String()
}

// HSTSMap is hsts.map: the backend of each route with
// haproxy.router.openshift.io/hsts_header (edge and re-encrypt routes
// only; validated, canonical: "max-age=N[;includeSubDomains][;preload]") →
// that value. The default template's defaults section "routes" sets
// Strict-Transport-Security over TLS from it, so that a changed value
// needs no reload.
func HSTSMap(td model.TemplateData) string {
	var m mapText
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if h := cfg.Settings.HSTSHeader; h != "" && terminated(cfg.TLSTermination) {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), h)
		}
	}
	return m.String()
}

// StickyCookieName is the name of the sticky cookie of a route's
// backend (when HasStickyCookie): router.openshift.io/cookie_name, else
// ROUTER_COOKIE_NAME (h.CookieName), else the route's RoutingKeyName, as
// in OpenShift. A backend HAProxy runs with another name (taken over at
// runtime) gets it through the renames map (haproxy/dynamic).
func StickyCookieName(cfg model.ServiceAliasConfig, h model.HAProxySettings) string {
	return cmp.Or(cfg.Settings.CookieName, h.CookieName, cfg.RoutingKeyName)
}

// StickyCookie and StickyCookieMap are the helpers of the default
// template before it named each backend's cookie after its route
// (before sticky_renames.map): every backend inserted StickyCookie, which
// the defaults section renamed from StickyCookieMap (backend → the
// cookie's name clients see). Kept so that templates written against it
// still render and run as they did.
const StickyCookie = "_router_sticky"

// StickyCookieMap: see StickyCookie.
func StickyCookieMap(td model.TemplateData) string {
	var m mapText
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		if cfg.TLSTermination == routev1.TLSTerminationPassthrough || !HasStickyCookie(cfg) {
			continue
		}
		m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), StickyCookieName(cfg, td.HAProxy))
	}
	return m.String()
}

// HasStickyCookie reports whether the backend of an HTTP route inserts a
// sticky cookie: unless haproxy.router.openshift.io/disable_cookies is
// true.
func HasStickyCookie(cfg model.ServiceAliasConfig) bool {
	return !cfg.Settings.DisableCookies && !IsTrue(cfg.Annotations["haproxy.router.openshift.io/disable_cookies"])
}

// RateLimitMap is rate_limit_<limit>.map: the backend of each route with
// haproxy.router.openshift.io/rate-limit-connections and the given limit
// ("concurrent-tcp", "rate-tcp", "rate-http"; rate-http for HTTP routes
// only) → the limit. The route's backend reads its limits from these maps,
// so that a changed limit needs no reload.
func RateLimitMap(td model.TemplateData, limit string) string {
	var m mapText
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		s := cfg.Settings
		if !s.RateLimit {
			continue
		}
		var v int
		switch limit {
		case "concurrent-tcp":
			v = s.RateLimitConcurrentTCP
		case "rate-tcp":
			v = s.RateLimitRateTCP
		case "rate-http":
			if cfg.TLSTermination != routev1.TLSTerminationPassthrough {
				v = s.RateLimitRateHTTP
			}
		}
		if v > 0 {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), strconv.Itoa(v))
		}
	}
	return m.String()
}
