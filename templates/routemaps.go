package templates

import (
	"cmp"
	"maps"
	"slices"
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
// that key. The key of routes with header matches maps to "@hmID": the
// frontend tests their headers (HeaderChains).
func RouteHTTPMap(td model.TemplateData) string {
	return routeMap(td, false)
}

// RouteHTTPSMap is route_https.map: host/path/ → the backend of an edge or
// re-encrypt route ("@STATUS", HostResponses of the HTTPS port and header
// matches as in route_http.map).
func RouteHTTPSMap(td model.TemplateData) string {
	return routeMap(td, true)
}

// routeMap writes route_http.map (https false) or route_https.map.
func routeMap(td model.TemplateData, https bool) string {
	var m mapText
	entries, chains := routeMapEntries(td, https)
	for _, e := range entries {
		m.line(e.key, e.value)
	}
	_ = chains // the frontend's rules (HeaderChains)
	return m.String()
}

// mapEntry is a line of a route map.
type mapEntry struct{ key, value string }

// routeMapEntries returns the lines of route_http.map (https false) or
// route_https.map, and the header chains their "@hmID" values name.
func routeMapEntries(td model.TemplateData, https bool) ([]mapEntry, []HeaderChain) {
	var entries []mapEntry
	keys := hostResponseKeys(td, https)
	var matched map[string][]HeaderCandidate
	// routeHosts are the map hosts of Routes and Ingresses (with Gateways
	// served: they get "@rh" markers, no HostResponses).
	var routeHosts map[string]bool
	if len(td.HostResponses) > 0 {
		routeHosts = map[string]bool{}
	}
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		target, ok := routeMapTarget(cfg, k, https)
		if !ok {
			continue
		}
		if routeHosts != nil && !cfg.Made {
			routeHosts[mapHost(cfg.Host, cfg.IsWildcard)] = true
		}
		key := routeKey(cfg)
		if len(cfg.HeaderMatches) > 0 || cfg.Method != "" || len(cfg.QueryMatches) > 0 || cfg.PathRegex != "" {
			if matched == nil {
				matched = map[string][]HeaderCandidate{}
			}
			matched[key] = append(matched[key], HeaderCandidate{Target: target, Method: cfg.Method, Headers: cfg.HeaderMatches,
				Query: cfg.QueryMatches, PathRegex: cfg.PathRegex, Order: cfg.MatchOrder})
			continue
		}
		delete(keys, key)
		entries = append(entries, mapEntry{key, target})
	}
	for _, h := range td.HostResponses {
		if k := RouteMapKey(mapHost(h.Host, false), ""); keys[k] && !routeHosts[mapHost(h.Host, false)] {
			entries = append(entries, mapEntry{k, "@" + strconv.Itoa(h.Status)})
			delete(keys, k)
		}
	}
	entries = withRouteHostMarkers(entries, routeHosts, matched)
	if matched == nil {
		return entries, nil
	}
	return withHeaderChains(entries, matched)
}

// withRouteHostMarkers adds "host/" → "@rh" for each host of routeHosts
// that no entry (or header-matched route) has the key of: a request to the
// host that no route of it matches does not go on to the Gateway API's
// wildcard and every-host routes (a Gateway's route would take the paths a
// Route's tenant left out of its host).
func withRouteHostMarkers(entries []mapEntry, routeHosts map[string]bool, matched map[string][]HeaderCandidate) []mapEntry {
	if len(routeHosts) == 0 {
		return entries
	}
	taken := make(map[string]bool, len(entries))
	for _, e := range entries {
		taken[e.key] = true
	}
	for _, h := range slices.Sorted(maps.Keys(routeHosts)) {
		if k := RouteMapKey(h, ""); !taken[k] && matched[k] == nil {
			entries = append(entries, mapEntry{k, "@rh"})
		}
	}
	return entries
}

// routeMapTarget returns a route's value in route_http.map (https false)
// or route_https.map, and whether it has one there.
func routeMapTarget(cfg model.ServiceAliasConfig, k model.ServiceAliasConfigKey, https bool) (string, bool) {
	if https {
		if !terminated(cfg.TLSTermination) {
			return "", false
		}
		return routeTarget(cfg, GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), true), true
	}
	switch {
	case cfg.TLSTermination == "":
		return routeTarget(cfg, "be_http:"+string(k), false), true
	case cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyRedirect:
		return "@redirect", true
	case cfg.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyAllow && cfg.TLSTermination != routev1.TLSTerminationPassthrough:
		return routeTarget(cfg, GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), false), true
	}
	return "", false
}

// HeaderChain and HeaderCandidate are model.HeaderChain and
// model.HeaderCandidate.
type (
	HeaderChain     = model.HeaderChain
	HeaderCandidate = model.HeaderCandidate
)

// HeaderChains returns the header chains of route_http.map (https false)
// or route_https.map, in the order the frontend tests them: td's
// HeaderChains when set (ComputeHeaderChains), else worked out from td.
func HeaderChains(td model.TemplateData, https bool) []HeaderChain {
	if c := td.HeaderChains; c != nil {
		if https {
			return c.HTTPS
		}
		return c.HTTP
	}
	_, chains := routeMapEntries(td, https)
	return chains
}

// ChainLevel is the lookup level that finds a route map key (and so its
// header chain, whose fallbacks are of the same host): "host" for a
// host's keys, "wildcard" for the Gateway API's wildcard hostnames
// ("+.domain"), "any" for every host ("*").
func ChainLevel(key string) string {
	k := strings.TrimPrefix(key, "=")
	switch {
	case strings.HasPrefix(k, "+."):
		return "wildcard"
	case strings.HasPrefix(k, "*"):
		return "any"
	}
	return "host"
}

// CountRouteLookups counts the route map keys of td by the frontend
// lookup that finds them (model.RouteLookups): its routes' and its
// HostResponses'.
func CountRouteLookups(td model.TemplateData) *model.RouteLookups {
	var l model.RouteLookups
	for k, cfg := range td.State {
		AddRouteLookups(&l, k, cfg, 1)
	}
	for _, h := range td.HostResponses {
		if h.HTTP || h.HTTPS {
			countRouteLookup(&l, RouteMapKey(mapHost(h.Host, false), ""), 1)
		}
	}
	return &l
}

// AddRouteLookups adds n (1, or -1 for a route that goes) to the count of
// the lookup that finds route k's key in the route maps, if it has one
// there.
func AddRouteLookups(l *model.RouteLookups, k model.ServiceAliasConfigKey, cfg model.ServiceAliasConfig, n int) {
	_, http := routeMapTarget(cfg, k, false)
	_, https := routeMapTarget(cfg, k, true)
	switch {
	case !http && !https:
	case !cfg.Made:
		// Routes and Ingresses: hosts and OpenShift's wildcards, found
		// by the lookups always made; their hosts get "@rh" markers.
		l.RouteHosts += n
	default:
		countRouteLookup(l, routeKey(cfg), n)
	}
}

// countRouteLookup adds n to the count of the lookup that finds key.
func countRouteLookup(l *model.RouteLookups, key string, n int) {
	k, exact := strings.CutPrefix(key, "=")
	switch {
	case strings.HasPrefix(k, "+."):
		if exact {
			l.WildcardExactPath += n
		} else {
			l.Wildcard += n
		}
	case strings.HasPrefix(k, model.AnyHost+"/"):
		if exact {
			l.AnyHostExactPath += n
		} else {
			l.AnyHost += n
		}
	case exact:
		l.ExactPath += n
	}
}

// routeLookups are td's RouteLookups, worked out from td when not set
// (none without HostResponses: no Gateway is served).
func routeLookups(td model.TemplateData) model.RouteLookups {
	switch {
	case td.RouteLookups != nil:
		return *td.RouteLookups
	case len(td.HostResponses) == 0:
		return model.RouteLookups{}
	}
	return *CountRouteLookups(td)
}

// ComputeHeaderChains returns the header chains of td's route maps, for
// td.HeaderChains (nil when there are none): the models a partial render
// is made of share them, so that the frontends they render are td's.
func ComputeHeaderChains(td model.TemplateData) *model.HeaderChains {
	td.HeaderChains = nil
	_, http := routeMapEntries(td, false)
	_, https := routeMapEntries(td, true)
	if len(http) == 0 && len(https) == 0 {
		return nil
	}
	return &model.HeaderChains{HTTP: http, HTTPS: https}
}

// withHeaderChains adds the keys of matched (routes with header matches,
// by key) to entries as chains.
func withHeaderChains(entries []mapEntry, matched map[string][]HeaderCandidate) ([]mapEntry, []HeaderChain) {
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		values[e.key] = e.value
	}
	keys := slices.Collect(maps.Keys(matched))
	// Exact keys ("=host/path") first, then the longer paths.
	slices.SortFunc(keys, func(a, b string) int {
		if ea, eb := strings.HasPrefix(a, "="), strings.HasPrefix(b, "="); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	chains := make([]HeaderChain, len(keys))
	own := map[string]string{}
	for i, k := range keys {
		cands := matched[k]
		// The spec's precedence: a method, the most headers, the most
		// query parameters, then the routes' and rules' order; path
		// expressions (whose precedence the spec leaves to us) after
		// the path's other matches.
		slices.SortStableFunc(cands, func(a, b HeaderCandidate) int {
			return cmp.Or(boolInt(a.PathRegex != "")-boolInt(b.PathRegex != ""),
				cmp.Compare(len(b.Method), len(a.Method))*boolInt(a.Method == "" || b.Method == ""),
				len(b.Headers)-len(a.Headers), len(b.Query)-len(a.Query), strings.Compare(a.Order, b.Order))
		})
		chains[i] = HeaderChain{ID: i, Key: k, Candidates: cands}
		if v, ok := values[k]; ok {
			own[k] = v
		}
		values[k] = "@hm" + strconv.Itoa(i)
	}
	for i, k := range keys {
		if v, ok := own[k]; ok {
			chains[i].Fallback = v
			continue
		}
		chains[i].Fallback = shorterPathValue(k, values)
	}
	for i := range entries {
		if v, ok := values[entries[i].key]; ok {
			entries[i].value = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(matched)) {
		if _, ok := own[k]; !ok {
			entries = append(entries, mapEntry{k, values[k]})
		}
	}
	return entries, chains
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shorterPathValue returns the value of the longest key of the same host
// that a request for key's path also matches ("=host/p" → "host/p/" and
// up, "host/a/b/" → "host/a/", "host/"), or "@miss".
func shorterPathValue(key string, values map[string]string) string {
	k, exact := strings.CutPrefix(key, "=")
	if exact {
		k = strings.TrimSuffix(k, "/") + "/"
		if v, ok := values[k]; ok {
			return v
		}
	}
	host, path, _ := strings.Cut(k, "/")
	path = strings.TrimSuffix(path, "/")
	for path != "" {
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			path = path[:i]
		} else {
			path = ""
		}
		p := host + "/" + path
		if path != "" {
			p += "/"
		}
		if v, ok := values[p]; ok {
			return v
		}
	}
	return "@miss"
}

// mapHost is the host part of map keys for host: a wildcard route's
// "*.domain" (genCertificateHostName), or for the hosts "*.domain" of the
// Gateway API's wildcard hostnames (every subdomain at any depth, made
// routes and HostResponses only), "+.domain": the frontends look those up
// with one, two, ... labels of the request's host replaced by "+".
func mapHost(host string, wildcard bool) string {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return "+." + rest
	}
	return GenCertificateHostName(host, wildcard)
}

// routeKey is a route's key in route_http.map and route_https.map.
func routeKey(cfg model.ServiceAliasConfig) string {
	host := mapHost(cfg.Host, cfg.IsWildcard)
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
		return redirectTarget(cfg.Redirect, cfg.Path, https)
	}
	return backend
}

// redirectTarget is the map value of a redirect the router answers:
// "@rdCODE|SCHEME|HOST|:PORT|PATH|SEGMENTS", the host and path empty for
// the request's, ":PORT" only for a port not the scheme's (the scheme is
// the request's, http or https by the map, unless the redirect names one;
// so is the port then, as the listener's is 80 or 443); SEGMENTS, for a
// path that replaces the route's path prefix (routePath), is the number of
// that prefix's segments, which the default template strips from the
// request's path before it appends the rest to PATH.
func redirectTarget(rd *model.Redirect, routePath string, https bool) string {
	scheme := rd.Scheme
	if scheme == "" {
		scheme = map[bool]string{false: "http", true: "https"}[https]
	}
	port := ""
	if rd.Port != 0 && rd.Port != map[string]int{"http": 80, "https": 443}[scheme] {
		port = ":" + strconv.Itoa(rd.Port)
	}
	segments := ""
	if rd.ReplacePrefix {
		segments = strconv.Itoa(model.PathSegments(routePath))
	}
	return "@rd" + strconv.Itoa(rd.Code) + "|" + scheme + "|" + rd.Host + "|" + port + "|" + rd.Path + "|" + segments
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
			keys[RouteMapKey(mapHost(h.Host, false), "")] = true
		}
	}
	return keys
}

// RouteSNIPassthroughMap is route_sni_passthrough.map: SNI host ("*.domain"
// for a wildcard route, "+.domain" for the Gateway API's wildcard
// hostnames, subdomains at any depth) → a passthrough route's backend
// ("@reject": refused); an edge or re-encrypt host of a domain that has a
// wildcard passthrough route (and no passthrough route of its own), or any
// other route's key or HTTPS listener hostname that a Gateway API
// passthrough wildcard above it would take → be_sni, so that it is
// terminated here, once per key (a tenant's TLSRoute "*.com" does not take
// the TLS of other tenants' hosts).
func RouteSNIPassthroughMap(td model.TemplateData) string {
	keys := td.SortedStateKeys()
	wildcard, passthrough, keyed := map[string]bool{}, map[string]bool{}, map[string]bool{}
	anyDepth := map[string]bool{}
	for _, k := range keys {
		cfg := td.State[k]
		if cfg.TLSTermination != routev1.TLSTerminationPassthrough {
			continue
		}
		key := mapHost(cfg.Host, cfg.IsWildcard)
		keyed[key] = true
		switch {
		case strings.HasPrefix(key, "+."):
			anyDepth[key[2:]] = true
		case cfg.IsWildcard:
			wildcard[GenCertificateHostName(cfg.Host, true)] = true
		default:
			passthrough[cfg.Host] = true
		}
	}
	var m mapText
	done := map[string]bool{}
	for _, k := range keys {
		cfg := td.State[k]
		key := mapHost(cfg.Host, cfg.IsWildcard)
		switch {
		case cfg.TLSTermination == routev1.TLSTerminationPassthrough && cfg.Answered():
			// A TLSRoute without a valid backend: refused.
			m.line(key, "@reject")
		case cfg.TLSTermination == routev1.TLSTerminationPassthrough:
			m.line(key, "be_tcp:"+string(k))
		case done[key]:
		case terminated(cfg.TLSTermination) && !cfg.IsWildcard && wildcard[GenCertificateHostName(cfg.Host, true)] && !passthrough[cfg.Host],
			// Any other route's host (another tenant's, perhaps): a
			// Gateway API wildcard above it does not take its TLS.
			len(anyDepth) > 0 && !keyed[key] && coveredAtAnyDepth(key, anyDepth):
			done[key] = true
			m.line(key, "be_sni")
		}
	}
	if len(anyDepth) > 0 {
		// The hostnames of the Gateways' HTTPS listeners, routes or not.
		for _, h := range td.HostResponses {
			if key := mapHost(h.Host, false); h.HTTPS && h.Host != model.AnyHost && !keyed[key] && !done[key] && coveredAtAnyDepth(key, anyDepth) {
				done[key] = true
				m.line(key, "be_sni")
			}
		}
	}
	return m.String()
}

// coveredAtAnyDepth reports whether a Gateway API passthrough wildcard
// (anyDepth: their domains) would take the SNI names of a terminated
// route's key (host, "*.domain", "+.domain"): one of the domain the key
// takes names of (but for "+.domain" itself, the key's own) or of a domain
// above it.
func coveredAtAnyDepth(key string, anyDepth map[string]bool) bool {
	var domain string // the domain whose names the key takes
	switch {
	case strings.HasPrefix(key, "*."):
		// A Route's wildcard is looked up before the Gateway API's.
		domain = key[2:]
		if anyDepth[domain] {
			return true
		}
	case strings.HasPrefix(key, "+."):
		domain = key[2:]
	default:
		i := strings.IndexByte(key, '.')
		if i < 0 {
			return false
		}
		domain = key[i+1:]
		if anyDepth[domain] {
			return true
		}
	}
	for d := domain; ; {
		i := strings.IndexByte(d, '.')
		if i < 0 {
			return false
		}
		d = d[i+1:]
		if anyDepth[d] {
			return true
		}
	}
}

// HasGatewayPassthrough reports whether a passthrough route of td is made
// from the Gateway API's objects (a TLSRoute's): TemplateData's
// GatewayPassthrough, with which the default template looks the Gateway
// API's wildcard hostnames up ("+.domain" keys in
// route_sni_passthrough.map) and refuses "@reject" ones.
func HasGatewayPassthrough(td model.TemplateData) bool {
	for _, cfg := range td.State {
		if cfg.Made && cfg.TLSTermination == routev1.TLSTerminationPassthrough {
			return true
		}
	}
	return false
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
	for _, k := range settingsKeys(td) {
		cfg := td.State[k]
		if ForwardedOther(cfg, td.HAProxy) {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), cfg.Settings.ForwardedHeaders)
		}
	}
	return m.String()
}

// ForwardedOther reports whether a route's backend is in
// forwarded_headers.map: an HTTP route (not passthrough) whose
// set-forwarded-headers policy differs from the router-wide one in setting
// the headers or not.
func ForwardedOther(cfg model.ServiceAliasConfig, h model.HAProxySettings) bool {
	if cfg.TLSTermination == routev1.TLSTerminationPassthrough || cfg.Settings.ForwardedHeaders == "" {
		return false
	}
	return setsForwardedHeaders(cfg.Settings.ForwardedHeaders) != setsForwardedHeaders(h.ForwardedHeaders)
}

// CountMapKeys counts the keys of the route-settings maps of td
// (model.TemplateData.MapKeys).
func CountMapKeys(td model.TemplateData) *model.MapKeyCounts {
	var c model.MapKeyCounts
	for _, k := range settingsKeys(td) {
		AddMapKeys(&c, td.State[k], td.HAProxy, 1)
	}
	return &c
}

// AddMapKeys adds delta to the counts of the maps route cfg has keys in
// (1: it comes, -1: it goes), h being the router-wide settings.
func AddMapKeys(c *model.MapKeyCounts, cfg model.ServiceAliasConfig, h model.HAProxySettings, delta int) {
	if !HasMapSettings(cfg) {
		return
	}
	if ForwardedOther(cfg, h) {
		c.ForwardedOthers += delta
	}
	if inTimeoutMap(cfg, cfg.Settings.Timeout) {
		c.TimeoutServer += delta
	}
	if inTimeoutMap(cfg, cfg.Settings.TimeoutTunnel) {
		c.TimeoutTunnel += delta
	}
	if inHSTSMap(cfg) {
		c.HSTS += delta
	}
}

// mapKeys is td.MapKeys, counted from td when not set.
func mapKeys(td model.TemplateData) model.MapKeyCounts {
	if td.MapKeys != nil {
		return *td.MapKeys
	}
	return *CountMapKeys(td)
}

// forwardedOthers is mapKeys(td).ForwardedOthers.
func forwardedOthers(td model.TemplateData) int { return mapKeys(td).ForwardedOthers }

// HasMapSettings reports whether a route has a setting that one of the
// route-settings maps may hold (TimeoutServerMap, TimeoutTunnelMap,
// HSTSMap, RateLimitMap, ForwardedHeadersMap): a route without one is in
// none of them (model.TemplateData.SettingsKeys).
func HasMapSettings(cfg model.ServiceAliasConfig) bool {
	s := cfg.Settings
	return s.Timeout != "" || s.TimeoutTunnel != "" || s.HSTSHeader != "" || s.RateLimit || s.ForwardedHeaders != ""
}

// SettingsKeys returns the keys of the routes of td that HasMapSettings
// (model.TemplateData.SettingsKeys), worked out from td.State.
func SettingsKeys(td model.TemplateData) *model.KeySet {
	var keys []model.ServiceAliasConfigKey
	for k, cfg := range td.State {
		if HasMapSettings(cfg) {
			keys = append(keys, k)
		}
	}
	return model.NewKeySet(keys)
}

// settingsKeys are the keys, in order, the route-settings maps walk:
// td.SettingsKeys, else every route's.
func settingsKeys(td model.TemplateData) []model.ServiceAliasConfigKey {
	if td.SettingsKeys != nil {
		return td.SettingsKeys.Keys()
	}
	return td.SortedStateKeys()
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
	for _, k := range settingsKeys(td) {
		cfg := td.State[k]
		if inTimeoutMap(cfg, value(cfg)) {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), strconv.FormatInt(TimeoutMillis(value(cfg)), 10))
		}
	}
	return m.String()
}

// inTimeoutMap reports whether route cfg, whose timeout (server or
// tunnel) is value, has a key in that timeout's map: a route served over
// HTTP (not passthrough) with a timeout that is not 0.
func inTimeoutMap(cfg model.ServiceAliasConfig, value string) bool {
	return cfg.TLSTermination != routev1.TLSTerminationPassthrough && TimeoutMillis(value) > 0
}

// HSTSMap is hsts.map: the backend of each route with
// haproxy.router.openshift.io/hsts_header (edge and re-encrypt routes
// only; validated, canonical: "max-age=N[;includeSubDomains][;preload]") →
// that value. The default template's defaults section "routes" sets
// Strict-Transport-Security over TLS from it, so that a changed value
// needs no reload.
func HSTSMap(td model.TemplateData) string {
	var m mapText
	for _, k := range settingsKeys(td) {
		cfg := td.State[k]
		if inHSTSMap(cfg) {
			m.line(GenBackendNamePrefix(cfg.TLSTermination)+":"+string(k), cfg.Settings.HSTSHeader)
		}
	}
	return m.String()
}

// inHSTSMap reports whether route cfg has a key in hsts.map: an edge or
// re-encrypt route with an HSTS header.
func inHSTSMap(cfg model.ServiceAliasConfig) bool {
	return cfg.Settings.HSTSHeader != "" && terminated(cfg.TLSTermination)
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
	for _, k := range settingsKeys(td) {
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
