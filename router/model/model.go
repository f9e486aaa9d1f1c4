// Package model holds the plain, deterministic description of what the router
// serves. Its types and field names follow the OpenShift template router's
// public data model (pkg/router/template types), so that custom templates
// written for OpenShift's haproxy-config.template keep working when executed
// against it.
package model

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/annotations"
)

// ServiceUnitKey identifies a service: "namespace/name".
type ServiceUnitKey string

// ServiceAliasConfigKey identifies a route: "namespace:name". It is
// files.RouteKey, which holds the rule naming the files written for a
// route (FileName, FileHeader; templates call {{ $cfgIdx.FileName }}).
type ServiceAliasConfigKey = files.RouteKey

// MaxFileKeyLength is the longest route key used as is in a file name
// (files.MaxFileKeyLength).
const MaxFileKeyLength = files.MaxFileKeyLength

// Keys of the Certificates map of a ServiceAliasConfig, as in OpenShift: the
// route's certificate is stored under its host, the CA certificate under
// host+CACertPostfix and the destination CA under host+DestCACertPostfix.
const (
	CACertPostfix     = "_ca"
	DestCACertPostfix = "_pod"
)

// NewServiceUnitKey returns the key of service namespace/name.
func NewServiceUnitKey(namespace, name string) ServiceUnitKey {
	return ServiceUnitKey(namespace + "/" + name)
}

// NewServiceAliasConfigKey returns the key of route namespace/name.
func NewServiceAliasConfigKey(namespace, name string) ServiceAliasConfigKey {
	return ServiceAliasConfigKey(namespace + ":" + name)
}

// TemplateData is the top-level value a template is executed with.
type TemplateData struct {
	// WorkingDir is the directory the router writes its files to
	// (OpenShift: /var/lib/haproxy). Config lives in WorkingDir/conf,
	// certificates in WorkingDir/router/certs and WorkingDir/router/cacerts.
	WorkingDir string
	// State holds the admitted routes, keyed "namespace:name".
	State map[ServiceAliasConfigKey]ServiceAliasConfig
	// ServiceUnits holds every service a route refers to, keyed "namespace/name".
	ServiceUnits map[ServiceUnitKey]ServiceUnit
	// DefaultCertificate is the path of the default certificate PEM
	// (certificate, key and chain in one file).
	DefaultCertificate string
	// DefaultDestinationCA is the path of the CA file used to verify
	// re-encrypt backends that set no destinationCACertificate; empty if none.
	DefaultDestinationCA string
	StatsUser            string
	StatsPassword        string
	StatsPort            int
	// BindPorts is false while ROUTER_BIND_PORTS_AFTER_SYNC holds the
	// listeners back until the initial sync.
	BindPorts    bool
	DisableHTTP2 bool
	// DynamicConfigManager is non-nil when endpoint changes are applied to
	// the running HAProxy through its runtime API rather than by a reload
	// — always, in this router. OpenShift's templates only test it
	// ({{ if .DynamicConfigManager }}, {{ with }}): set, they write
	// "cookie ... dynamic" and "dynamic-cookie-key" instead of a cookie
	// per server line, which lets servers be added at runtime.
	DynamicConfigManager *DynamicConfigManager
	// CaptureHTTPRequestHeaders and CaptureHTTPResponseHeaders
	// (ROUTER_CAPTURE_HTTP_REQUEST_HEADERS, _RESPONSE_HEADERS) and
	// CaptureHTTPCookie (ROUTER_CAPTURE_HTTP_COOKIE, nil for none) are
	// captured into the access log.
	CaptureHTTPRequestHeaders  []CaptureHTTPHeader
	CaptureHTTPResponseHeaders []CaptureHTTPHeader
	CaptureHTTPCookie          *CaptureHTTPCookie
	// HTTPHeaderNameCaseAdjustments (ROUTER_H1_CASE_ADJUST) are the
	// h1-case-adjust pairs.
	HTTPHeaderNameCaseAdjustments []HTTPHeaderNameCaseAdjustment
	// HaveClientCA is true when ROUTER_MUTUAL_TLS_AUTH_CA names a client
	// CA bundle; the router then keeps a copy of it at
	// WorkingDir/mtls/latest/ca-bundle.pem, as OpenShift's router does.
	HaveClientCA bool
	// HaveCRLs is true when WorkingDir/mtls/latest/crls.pem holds the CRLs
	// its certificates name in their CRL distribution points (downloaded
	// and kept current by the router, router/mtls), or the copy of
	// ROUTER_MUTUAL_TLS_AUTH_CRL.
	HaveCRLs bool
	// HTTPRequestHeaders and HTTPResponseHeaders
	// (ROUTER_HTTP_REQUEST_HEADERS, ROUTER_HTTP_RESPONSE_HEADERS) are the
	// router-wide header actions, Name and Value quoted as OpenShift does
	// (see HTTPHeader).
	HTTPRequestHeaders  []HTTPHeader
	HTTPResponseHeaders []HTTPHeader
	// CertificateIndex counts how many routes use each certificate
	// (keyed by its PEM contents; the default certificate's path counts
	// once, as in OpenShift). A certificate used more than once is
	// offered without h2 (connection coalescing).
	CertificateIndex map[string]int

	// The fields below are this router's additions to OpenShift's data
	// model: validated settings the default template uses instead of
	// reading the environment itself.

	// HTTPPort and HTTPSPort are ROUTER_SERVICE_HTTP_PORT/HTTPS_PORT.
	HTTPPort  int
	HTTPSPort int
	// RunDir holds sockets and the pid file.
	RunDir string
	// MaxConnections is HAProxy's global maxconn (ROUTER_MAX_CONNECTIONS,
	// lowered to what the file descriptor limit allows).
	MaxConnections int
	// HAProxy holds the validated router-wide HAProxy settings from the
	// environment (ROUTER_CIPHERS, timeouts, …; docs/env.md).
	HAProxy HAProxySettings
	// HostResponses are the hosts the router answers itself where no route
	// matches a request's path: the Gateway API's listener hostnames
	// (404), sorted by Host.
	HostResponses []HostResponse
	// HeaderChains, if set, are the route maps' header chains as worked
	// out for the whole model (templates.ComputeHeaderChains): the
	// models made from it for partial renders share them, so their
	// frontends are the whole model's. Nil: worked out from State.
	HeaderChains *HeaderChains
	// GatewayPassthrough (this router's addition): a passthrough route is
	// made from the Gateway API's objects (a TLSRoute's), as worked out
	// for the whole model (templates.HasGatewayPassthrough): the default
	// template then chooses passthrough routes by SNI with the Gateway
	// API's wildcards ("+.domain") and refusals ("@reject"). Partial
	// renders share it, so their frontends are the whole model's.
	GatewayPassthrough bool
	// RouteLookups (this router's addition), if set, count the route
	// maps' keys of the Gateway API's kinds by the frontend lookup that
	// finds them, as worked out for the whole model and kept up to date
	// route by route (templates.CountRouteLookups): the default template
	// renders a lookup only while keys of it exist (each costs every
	// request that gets that far). Partial renders share it. Nil: worked
	// out from State.
	RouteLookups *RouteLookups
	// MapKeys (this router's addition), if set, count the keys of the
	// route-settings maps whose lookups cost every request (see
	// MapKeyCounts), as worked out for the whole model and kept up to date
	// route by route: the default template makes a map's lookup only while
	// it has keys. Partial renders share it. Nil: worked out from State.
	MapKeys *MapKeyCounts
	// SettingsKeys (this router's addition), if set, are the keys of State
	// whose routes have a setting the route-settings maps hold (timeouts,
	// HSTS, rate limits, a forwarded-headers policy; see
	// templates.HasMapSettings), as worked out for the whole model and
	// kept up to date route by route: the map helpers walk these instead
	// of every route. Nil: they walk State (a partial render's State,
	// which pipeline.withState gives none).
	SettingsKeys *KeySet

	// order remembers SortedStateKeys for State (nil: sorted on every
	// call); see NewKeyOrder.
	order *keyOrder
}

// RouteLookups count route map keys (route_http.map and route_https.map
// together) by the frontend lookup that finds them, for the lookups only
// the Gateway API's keys need; the host lookup and OpenShift's wildcard
// lookup ("host/path/", "*.domain/path/") are always made.
type RouteLookups struct {
	// ExactPath: "=host/path", a path matched exactly.
	ExactPath int
	// Wildcard and WildcardExactPath: "+.domain/path/" and
	// "=+.domain/path", the Gateway API's wildcard hostnames.
	Wildcard, WildcardExactPath int
	// AnyHost and AnyHostExactPath: "*/path/" and "=*/path", every host.
	AnyHost, AnyHostExactPath int
	// RouteHosts: the keys of Routes and Ingresses, whose hosts have
	// "@rh" markers (the Gateway API's wildcard and every-host routes do
	// not take a Route's host); the frontends test for the markers only
	// while there are some.
	RouteHosts int
}

// Rendered reports which lookups and tests a frontend makes for these
// counts (those with keys), in the order of the fields.
func (l RouteLookups) Rendered() [6]bool {
	return [6]bool{l.ExactPath > 0, l.Wildcard > 0, l.WildcardExactPath > 0, l.AnyHost > 0, l.AnyHostExactPath > 0, l.RouteHosts > 0}
}

// Marked reports whether keys with a marker that a host could look like
// ("=", "+.") exist: the frontends then tell such keys from hosts (a host
// "=h" must not find "=h/path", a path matched exactly, as a prefix). A
// host "*" finds the keys for every host ("*/path/") first instead of
// last, which is the same answer: no Route has that host.
func (l RouteLookups) Marked() bool {
	return l.ExactPath > 0 || l.Wildcard > 0 || l.WildcardExactPath > 0 || l.AnyHostExactPath > 0
}

// KeySet is a sorted set of State keys; it is not changed once shared
// (Edited returns a changed copy). A nil set is empty.
type KeySet struct{ keys []ServiceAliasConfigKey }

// NewKeySet returns the set of keys (in any order, each once).
func NewKeySet(keys []ServiceAliasConfigKey) *KeySet {
	return &KeySet{keys: slices.Sorted(slices.Values(keys))}
}

// Keys returns the keys in order (shared: not to be changed); none for a
// nil set.
func (s *KeySet) Keys() []ServiceAliasConfigKey {
	if s == nil {
		return nil
	}
	return s.keys
}

// Edited returns the set without the keys out and with the keys in (a
// key in both is in): a copy, or s itself when neither has keys.
func (s *KeySet) Edited(out, in []ServiceAliasConfigKey) *KeySet {
	if len(out) == 0 && len(in) == 0 {
		return s
	}
	if s == nil {
		s = &KeySet{}
	}
	drop := make(map[ServiceAliasConfigKey]bool, len(out)+len(in))
	for _, k := range slices.Concat(out, in) {
		drop[k] = true
	}
	keys := make([]ServiceAliasConfigKey, 0, len(s.keys)+len(in))
	for _, k := range s.keys {
		if !drop[k] {
			keys = append(keys, k)
		}
	}
	if len(in) > 16 {
		keys = append(keys, in...)
		slices.Sort(keys)
		return &KeySet{keys: slices.Compact(keys)}
	}
	for _, k := range in {
		if i, found := slices.BinarySearch(keys, k); !found {
			keys = slices.Insert(keys, i, k)
		}
	}
	return &KeySet{keys: keys}
}

// ServiceAliasConfig is one admitted route.
type ServiceAliasConfig struct {
	// Name and Namespace of the route.
	Name      string
	Namespace string
	// Host is the (lower-case) host the route serves; for a wildcard route
	// it is the route's host, and IsWildcard is true.
	Host string
	// Path is the route's path ("" for none).
	Path string
	// TLSTermination is "", "edge", "passthrough" or "reencrypt".
	TLSTermination routev1.TLSTerminationType
	// Certificates, keyed by Host (route certificate and key),
	// Host+"_ca" (CA certificate) and Host+"_pod" (destination CA).
	Certificates map[string]Certificate
	// VerifyServiceHostname asks the template to verify a re-encrypt
	// backend's certificate against the service's DNS name (set when the
	// service CA rather than a route destination CA is used).
	VerifyServiceHostname bool
	// Status is "saved" once the route's files are written (always, when
	// a template runs), as in OpenShift.
	Status ServiceAliasConfigStatus
	// PreferPort is the route's spec.port.targetPort, as a string.
	PreferPort string
	// InsecureEdgeTerminationPolicy is "", "None", "Allow" or "Redirect".
	InsecureEdgeTerminationPolicy routev1.InsecureEdgeTerminationPolicyType
	// RoutingKeyName is an opaque, stable hash of the route's key; the
	// default template uses it as the cookie name.
	RoutingKeyName string
	// IsWildcard is true for wildcardPolicy: Subdomain routes.
	IsWildcard bool
	// Annotations of the route.
	Annotations map[string]string
	// ServiceUnits maps each service of the route (spec.to and
	// alternateBackends) to its configured weight (0-256).
	ServiceUnits map[ServiceUnitKey]int32
	// ServiceUnitNames maps each service of the route to the weight each
	// of its endpoints gets, scaled as OpenShift does (the largest
	// per-endpoint share becomes 256; a non-zero share is at least 1).
	ServiceUnitNames map[ServiceUnitKey]int32
	// ActiveServiceUnits counts services with weight > 0 and endpoints.
	ActiveServiceUnits int
	// ActiveEndpoints counts the endpoints of those services.
	ActiveEndpoints int
	// EndpointTable holds, for each service of the route, the endpoints
	// the route sends traffic to (filtered by PreferPort), as
	// endpointsForAlias returns them.
	EndpointTable map[ServiceUnitKey][]Endpoint
	// HTTPRequestHeaders and HTTPResponseHeaders are the route's
	// spec.httpHeaders.actions, validated at admission, Name and Value
	// quoted as OpenShift does (see HTTPHeader).
	HTTPRequestHeaders  []HTTPHeader
	HTTPResponseHeaders []HTTPHeader
	// HTTPRequestHeaderAdds and HTTPResponseHeaderAdds (this router's
	// addition) are headers a route made from an HTTPRoute adds (its
	// value appended to what the header has: "add-header"), Name and
	// Value quoted; the default template adds them after
	// HTTPRequestHeaders and HTTPResponseHeaders (whose names differ).
	HTTPRequestHeaderAdds  []HTTPHeader
	HTTPResponseHeaderAdds []HTTPHeader
	// RewritePath (this router's addition), if set, is the path a route
	// made from an HTTPRoute sends every request to its backends with (a
	// URLRewrite's ReplaceFullPath: "/" and letters, digits and
	// /._~!*+,;=:@-); the default template sets it after rewrite-target.
	RewritePath string
	// ErrorShare (this router's addition), 1 to 999, is the share of a
	// route's requests, per mille, HAProxy answers with 500 itself (a
	// passthrough route's connections: refused): the weights of an
	// HTTPRoute or TLSRoute rule's invalid backends, as the Gateway API
	// asks; the default template does it in the route's backend.
	ErrorShare int
	// Retry (this router's addition), if set, is when HAProxy retries the
	// route's requests (the Gateway API's retry); the default template
	// writes it into the route's backend.
	Retry *Retry
	// CORS (this router's addition), if set, is the route's cross-origin
	// resource sharing (the Gateway API's CORS filter); the default
	// template answers preflight requests and adds the response headers
	// in the route's backend.
	CORS *CORS
	// PrimaryServiceUnitKey is the key of the route's spec.to service.
	PrimaryServiceUnitKey ServiceUnitKey

	// The fields below are this router's additions to OpenShift's data
	// model.

	// Settings holds the validated values of the annotations the default
	// template honours (see docs/annotations.md); every string in it is
	// safe to write into haproxy.config as is. Annotations keeps the raw
	// values for custom templates.
	Settings annotations.Route
	// AnnotationProblems describes the annotation values that were
	// ignored (invalid), one per entry.
	AnnotationProblems []string
	// Servers are the server lines of the route's backend, in order: the
	// endpoints of its services (ServiceUnitNames, filtered by PreferPort)
	// and spare slots that endpoints added later are moved into through
	// HAProxy's runtime API (see router/servers). Between reloads the list
	// keeps its lines: a removed endpoint stays, Disabled, until the next
	// reload, so the file on disk always describes what HAProxy runs.
	Servers []Server
	// BackendPorts, for a route made from an HTTPRoute whose backends'
	// target ports differ, holds the port (as PreferPort) of each service
	// whose port is not PreferPort.
	BackendPorts map[ServiceUnitKey]string
	// Respond, if not 0, is the status the router answers the route's
	// requests with itself, its backends unused: 500 for an HTTPRoute rule
	// whose backends are all invalid, as the Gateway API asks.
	Respond int
	// Redirect, if set, is the redirect the router answers the route's
	// requests with itself, without backends (the Gateway API's
	// RequestRedirect filter).
	Redirect *Redirect
	// HeaderMatches are headers the route's requests must have (the
	// Gateway API's header matches), sorted by name: such routes share
	// their host and path with others, the one with the most headers
	// matched first.
	HeaderMatches []HeaderMatch
	// Made: the route is made from the Gateway API's objects (not a
	// Route or an Ingress).
	Made bool
	// Method, if not empty, is the method the route's requests must have;
	// QueryMatches are query parameters (Name exactly, Value exactly) they
	// must have, sorted by name: the Gateway API's method and query
	// parameter matches, tested as header matches are (a method first,
	// then the most headers, then the most query parameters).
	Method       string
	QueryMatches []HeaderMatch
	// PathRegex, if not empty, is a PCRE pattern (syntax.MatchRegex) the
	// route's requests' whole path must match (the Gateway API's
	// RegularExpression path matches): the route's Path is the literal
	// start of the expression up to its last "/", and it is tested as
	// header matches are, after the routes of its host and path that
	// have none.
	PathRegex string
	// MatchOrder orders routes with header matches of one host and path
	// and as many headers: the Gateway API's precedence (the oldest
	// HTTPRoute, then its namespace and name, then the rule's and the
	// match's index), as a string that sorts so.
	MatchOrder string
	// ExactPath: the route matches requests whose path is Path exactly
	// (the Gateway API's Exact path matches), not Path and below it.
	ExactPath bool
}

// Redirect is a redirect answered by the router: Code (301, 302, 303,
// 307, 308), and the Location's scheme, host, port and path; what is
// empty (0) is the request's (the scheme's port, or the listener's when
// the scheme is the request's). Host and Path are safe to write into map
// values and a Location header as they are.
type Redirect struct {
	Code         int
	Scheme, Host string
	Port         int
	Path         string
	// ReplacePrefix: Path replaces the route's path prefix in the
	// request's path (the Gateway API's ReplacePrefixMatch), not the
	// whole path; the route's path has at most MaxRedirectPrefixSegments
	// segments.
	ReplacePrefix bool
}

// Answered reports whether HAProxy answers the route's requests itself
// (Respond, Redirect): it has no backend.
func (c ServiceAliasConfig) Answered() bool { return c.Respond != 0 || c.Redirect != nil }

// PathSegments is the number of segments of a route's path ("/a/b" and
// "/a/b/": 2; "" and "/": 0): those a Redirect with ReplacePrefix strips.
func PathSegments(path string) int { return strings.Count(strings.TrimSuffix(path, "/"), "/") }

// MaxRedirectPrefixSegments is the most path segments ("/a/b": 2) of a
// route whose Redirect replaces its path prefix (the default template has
// a rule for each count).
const MaxRedirectPrefixSegments = 16

// MapKeyCounts count the keys of the route-settings maps the default
// template looks up on every request (templates.CountMapKeys): a lookup is
// rendered only while its map has keys, so that routes without such a
// setting pay nothing for it; the first key, or the last going, is a
// change of the rules (a reload).
type MapKeyCounts struct {
	// ForwardedOthers: forwarded_headers.map, the routes whose
	// forwarded-headers policy differs from the router-wide one in
	// setting the headers or not (templates.ForwardedOther; looked up in
	// the frontends).
	ForwardedOthers int
	// TimeoutServer, TimeoutTunnel and HSTS: timeout_server.map,
	// timeout_tunnel.map and hsts.map (looked up in the defaults section
	// the routes' backends take).
	TimeoutServer, TimeoutTunnel, HSTS int
}

// MadeRoute is what a route made from the Gateway API's objects has beyond
// the Route API (builder.Options.Made): how its requests are matched and
// answered.
type MadeRoute struct {
	// Respond, Redirect, ExactPath, HeaderMatches: as in
	// ServiceAliasConfig (Respond on a passthrough route: its connections
	// are refused).
	Respond       int
	Redirect      *Redirect
	ExactPath     bool
	HeaderMatches []HeaderMatch
	// Method, QueryMatches and PathRegex: as in ServiceAliasConfig.
	Method       string
	QueryMatches []HeaderMatch
	PathRegex    string
	// BackendNamespaces are the namespaces of the route's backends
	// (spec.to, then alternateBackends), "" for the route's own (nil: all
	// of the route's): another one a ReferenceGrant allows.
	BackendNamespaces []string
	// BackendPorts are the target ports of the route's backends, as
	// spec.port.targetPort would be ("": any; nil: spec.port's for all).
	BackendPorts []string
	// MatchOrder orders the routes of one host, path and number of header
	// matches (ServiceAliasConfig.MatchOrder).
	MatchOrder string
	// RequestHeaderAdds and ResponseHeaderAdds are headers added (a
	// value appended; HTTPHeaderFilter's "add"), after the route's header
	// actions (none of the same name).
	RequestHeaderAdds, ResponseHeaderAdds []HeaderMatch
	// RewritePath, ErrorShare and Retry: as in ServiceAliasConfig.
	RewritePath string
	ErrorShare  int
	Retry       *Retry
	// CORS: as in ServiceAliasConfig.
	CORS *CORS
}

// CORS is a route's cross-origin resource sharing (the Gateway API's
// HTTPCORSFilter), its strings written as haproxy.config words (quoted;
// header values also inert as log-format strings). A request's Origin
// header is allowed, compared without case, when AnyOrigin is set (any
// Origin), when it is one of Origins, when it begins with one of
// Wildcards' schemes ("https://") and ends with one of its Ends
// (".example.com", ".example.com:443", ":8443"), or when it matches one of
// AnyHostPatterns (PCRE, the whole value: any host on a scheme's default
// port); Origins and Ends in groups of at most CORSGroup (an HAProxy line
// takes at most 64 words). A preflight request (OPTIONS with Origin and
// Access-Control-Request-Method) is answered by the router: 204 with the
// Access-Control-Allow-* headers for an allowed origin, 403 otherwise;
// other responses to an allowed origin get Access-Control-Allow-Origin
// (the request's Origin), -Allow-Credentials and -Expose-Headers.
type CORS struct {
	AnyOrigin       bool
	Origins         [][]string
	Wildcards       []CORSWildcards
	AnyHostPatterns []string
	// AllowMethods, AllowHeaders and ExposeHeaders are the values of the
	// Access-Control-* headers ("" for none); with AnyMethod or
	// AnyHeader the preflight's Access-Control-Request-Method or
	// -Headers is echoed instead.
	AllowMethods  string
	AnyMethod     bool
	AllowHeaders  string
	AnyHeader     bool
	ExposeHeaders string
	// Credentials: Access-Control-Allow-Credentials: true.
	Credentials bool
	// MaxAge is Access-Control-Max-Age, in seconds.
	MaxAge int32
}

// CORSWildcards are the ends an allowed Origin of a scheme ("http" or
// "https") may have (CORS).
type CORSWildcards struct {
	Scheme string
	Ends   [][]string
}

// CORSGroup is the most words of a group of CORS.Origins or
// CORSWildcards.Ends (one line of haproxy.config each).
const CORSGroup = 32

// Retry is when HAProxy retries a request of a route on another attempt
// (the Gateway API's retry): On is HAProxy's retry-on keywords and
// statuses ("conn-failure empty-response 500 503"); Attempts, if set, the
// most retries (HAProxy's retries; unset: its default, 3).
type Retry struct {
	On       string
	Attempts *int
}

// Conditional reports whether the route's requests must match more than
// its path (headers, a method, query parameters).
func (m *MadeRoute) Conditional() bool {
	return m != nil && (len(m.HeaderMatches) > 0 || m.Method != "" || len(m.QueryMatches) > 0 || m.PathRegex != "")
}

// Answered reports whether the router answers the route's requests itself
// (no backends).
func (m *MadeRoute) Answered() bool { return m != nil && (m.Respond != 0 || m.Redirect != nil) }

// HeaderActionAdd is the action of ServiceAliasConfig's
// HTTPRequestHeaderAdds and HTTPResponseHeaderAdds (not a Route API one).
const HeaderActionAdd routev1.RouteHTTPHeaderActionType = "Add"

// HeaderMatch is a request header a route's requests must have: Name (in
// lower case; a token of letters, digits, "-", "_", ".") with Value
// exactly (printable text), or with Regex, a value that the PCRE pattern
// Value (syntax.MatchRegex) matches.
type HeaderMatch struct {
	Name, Value string
	Regex       bool
}

// HeaderChain is the routes with header, method or query parameter
// matches of one key of a route map (templates.HeaderChains), which maps
// to "@hmID": the default template tests them in order (Candidates: a
// method first, then the most headers, the most query parameters, then by
// MatchOrder) and sends a request that none matches to Fallback — the
// key's route without matches, else the value of the longest shorter path
// of the host in the map (another chain's "@hmID" among them: chains are
// ordered so that the one a fallback names comes later), else "@miss"
// (the next lookup).
type HeaderChain struct {
	ID         int
	Key        string
	Candidates []HeaderCandidate
	Fallback   string
}

// HeaderCandidate is a route of a HeaderChain: its map value and what a
// request must have for it: its method, headers (names in lower case),
// query parameters and a PCRE pattern its path matches. Order is the
// route's MatchOrder.
type HeaderCandidate struct {
	Target    string
	Method    string
	Headers   []HeaderMatch
	Query     []HeaderMatch
	PathRegex string
	Order     string
}

// HeaderChains are the header chains of route_http.map and route_https.map.
type HeaderChains struct {
	HTTP, HTTPS []HeaderChain
}

// HostResponse is a host (AnyHost: every host) whose requests that no
// route matches are answered with Status, on the HTTP port, the HTTPS
// port or both.
type HostResponse struct {
	Host        string
	Status      int
	HTTP, HTTPS bool
}

// AnyHost is the host of routes and HostResponses for every host
// (admission.AnyHost).
const AnyHost = "*"

// Server is one server line of a route's backend.
type Server struct {
	// Name is the endpoint's ID for an endpoint's own line, or
	// DynamicServerPrefix followed by a number for a spare slot.
	Name string
	// Endpoint is the endpoint served (IP, Port, …); for a slot that never
	// held one, a placeholder address. Never nil; it is shared (with the
	// service's endpoint table, with other slots) and must not be
	// modified.
	Endpoint *Endpoint
	// ServiceUnit is the service Endpoint belongs to (for a free slot, the
	// route's first service).
	ServiceUnit ServiceUnitKey
	// Weight is the server's weight (0-256).
	Weight int32
	// Cookie is the sticky-session cookie value of the line.
	Cookie string
	// Disabled lines are in maintenance: free slots.
	Disabled bool
	// Dynamic is true for a slot line.
	Dynamic bool
	// Added is true for the line of an endpoint that came after its
	// backend was laid out and found no free slot: HAProxy gets it as a
	// server added at runtime ("add server"), health-checked as a fresh
	// layout would check it.
	Added bool
	// Checked lines are health-checked ("check"): HAProxy reserves a file
	// descriptor for each at start, whether the line is in use or not.
	// An endpoint's own line is checked when its backend has more than one
	// endpoint line (as in OpenShift); a spare slot when the open-files
	// budget affords it (router/pipeline). A line keeps it until the
	// backend is laid out afresh: an endpoint moved into an unchecked slot
	// at runtime is checked from the next reload on (HAProxy cannot start
	// checking a server at runtime that was loaded without "check").
	Checked bool
	// FreedAt is, for a spare slot, the layout generation at which it last
	// lost its endpoint (0: never held one): free slots are reused least
	// recently freed first.
	FreedAt uint64
}

// DynamicServerPrefix starts the names of spare server slots (as the
// dynamic servers of OpenShift's configuration manager are named).
const DynamicServerPrefix = "_dynamic-pod-"

// Certificate is a PEM certificate (and key).
type Certificate struct {
	ID         string
	Contents   string
	PrivateKey string
}

// ServiceUnit is a service and its endpoints.
type ServiceUnit struct {
	// Name is "namespace/name".
	Name string
	// Hostname is the service's cluster DNS name, name.namespace.svc.
	Hostname string
	// EndpointTable holds the ready endpoints, sorted by ID: at most
	// servers.MaxEndpointsPerService of them.
	EndpointTable []Endpoint
	// EndpointsLeftOut counts the ready endpoints beyond that limit, which
	// are not rendered.
	EndpointsLeftOut int
	// ServiceAliasAssociations holds the keys of the admitted routes that
	// use this service (spec.to or alternateBackends).
	ServiceAliasAssociations map[ServiceAliasConfigKey]bool
}

// TemplateSafeName returns the service's Name with "/" replaced by "-",
// for use where a "/" is not allowed.
func (s ServiceUnit) TemplateSafeName() string {
	return strings.ReplaceAll(s.Name, "/", "-")
}

// Endpoint is one backend address of a service.
type Endpoint struct {
	// ID is "pod:<pod>:<service>:<portName>:<ip>:<port>" for endpoints
	// backed by a pod and "ept:<service>:<portName>:<ip>:<port>"
	// otherwise (the IP without brackets), as in OpenShift; templates use
	// it as the haproxy server name.
	ID string
	// IP is the address as a server line takes it: an IPv6 address in
	// brackets ("[fd00::1]"), as in OpenShift.
	IP   string
	Port string
	// TargetName is the name of the endpoint's target (the pod), or its
	// address when it has none.
	TargetName string
	PortName   string
	// IdHash is an opaque hash of ID (used as the sticky cookie value so
	// that addresses are not disclosed).
	IdHash        string
	NoHealthCheck bool
	// AppProtocol is the appProtocol of the service port ("h2c" or
	// "kubernetes.io/h2c": the backend speaks HTTP/2 without TLS).
	AppProtocol string
}

// Addr returns the endpoint's address without brackets.
func (e Endpoint) Addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(e.IP, "["), "]")
}

// UsesH2C reports whether the endpoint's appProtocol asks for HTTP/2
// without TLS ("h2c" or "kubernetes.io/h2c"), as OpenShift reads it.
func (e Endpoint) UsesH2C() bool {
	return e.AppProtocol == "h2c" || e.AppProtocol == "kubernetes.io/h2c"
}

// ServiceAliasConfigStatus is the Status of a ServiceAliasConfig.
type ServiceAliasConfigStatus string

// ServiceAliasConfigStatusSaved: the route's files are written.
const ServiceAliasConfigStatusSaved ServiceAliasConfigStatus = "saved"

// DynamicConfigManager stands for OpenShift's dynamic configuration
// manager in the template data: non-nil when the router changes servers
// through HAProxy's runtime API. Templates only test it for nil.
type DynamicConfigManager struct{}

// CaptureHTTPHeader is a header captured into the access log: Name and
// MaxLength, the number of bytes kept.
type CaptureHTTPHeader struct {
	Name      string
	MaxLength int
}

// Match types of CaptureHTTPCookie.
const (
	CookieMatchTypeExact  = "exact"
	CookieMatchTypePrefix = "prefix"
)

// CaptureHTTPCookie is the cookie captured into the access log: Name,
// MaxLength and MatchType ("exact" or "prefix").
type CaptureHTTPCookie struct {
	Name      string
	MaxLength int
	MatchType string
}

// HTTPHeaderNameCaseAdjustment is one h1-case-adjust pair: From, a
// lower-case header name, and To, the spelling HAProxy restores.
type HTTPHeaderNameCaseAdjustment struct {
	From string
	To   string
}

// HTTPHeader is one header action as OpenShift's templates receive it:
// Action "Set" or "Delete"; Name and Value (Set only) each one
// single-quoted haproxy.config word ("'X-Frame-Options'", "'DENY'"),
// a quote inside closed, escaped and reopened (as a shell does) — ready
// to write after
// "http-request set-header". Value is an HAProxy log-format string: it
// may hold the sample fetches the Route API allows (%[req.hdr(host)]).
type HTTPHeader struct {
	Name   string
	Value  string
	Action routev1.RouteHTTPHeaderActionType
}

// QuoteHeaderWord returns s as one single-quoted haproxy.config word,
// as OpenShift quotes header names and values: 'text', with every quote
// inside closed, backslash-escaped and reopened. s must not contain
// control characters.
func QuoteHeaderWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// EndpointsOf returns the endpoints of su the route sends traffic to: all
// of them, or, when the route names a target port (PreferPort), those whose
// port name or number is that port. Treat the result as read-only: without
// PreferPort, or when every endpoint has that port, it is su.EndpointTable
// itself.
func (cfg *ServiceAliasConfig) EndpointsOf(su ServiceUnit) []Endpoint {
	prefer := cfg.PreferPortOf(ServiceUnitKey(su.Name))
	if prefer == "" {
		return su.EndpointTable
	}
	match := func(ep *Endpoint) bool { return ep.PortName == prefer || ep.Port == prefer }
	n := 0
	for i := range su.EndpointTable {
		if match(&su.EndpointTable[i]) {
			n++
		}
	}
	if n == len(su.EndpointTable) {
		// Every endpoint (a service of one port): the service's table
		// itself, not a copy per route (endpoints are not modified).
		return su.EndpointTable
	}
	out := make([]Endpoint, 0, n)
	for _, ep := range su.EndpointTable {
		if match(&ep) {
			out = append(out, ep)
		}
	}
	return out
}

// PreferPortOf returns the port the route prefers for its service k:
// BackendPorts' for k, else PreferPort.
func (cfg *ServiceAliasConfig) PreferPortOf(k ServiceUnitKey) string {
	if p, ok := cfg.BackendPorts[k]; ok {
		return p
	}
	return cfg.PreferPort
}

// SortedStateKeys returns the keys of td.State in a stable order. The
// slice is shared (remembered for State, see NewKeyOrder): callers do not
// modify it.
func (td *TemplateData) SortedStateKeys() []ServiceAliasConfigKey {
	if td.order != nil {
		return td.order.keys(td.State)
	}
	return sortedKeys(td.State)
}

// NewKeyOrder makes td remember the order of its State keys from the
// first SortedStateKeys call on (every template map helper and route
// file walk asks for it; sorting 10,000 keys each time was a tenth of a
// route change's work). Copies of td share what it remembers, for the
// State map it was taken of: the order is taken again for another map
// or a map of another size. Call it when td gets a State map of its own
// that will not gain or lose keys once it is read.
func (td *TemplateData) NewKeyOrder() { td.order = &keyOrder{} }

// EditKeyOrder makes td remember the order of its State keys as old's
// without the keys out and with the keys in (KeySet.Edited), when old
// remembers its order: td.State must be old.State with exactly those keys
// taken out and put in (a key in both is in). Else it is NewKeyOrder. A
// route change then costs a copy of the order, not a sort.
func (td *TemplateData) EditKeyOrder(old *TemplateData, out, in []ServiceAliasConfigKey) {
	td.NewKeyOrder()
	if old.order == nil {
		return
	}
	old.order.mu.Lock()
	known := old.order.state != nil && reflect.ValueOf(old.order.state).UnsafePointer() == reflect.ValueOf(old.State).UnsafePointer() &&
		len(old.order.sorted) == len(old.State)
	sorted := old.order.sorted
	old.order.mu.Unlock()
	if !known {
		return
	}
	td.order.state, td.order.sorted = td.State, (&KeySet{keys: sorted}).Edited(out, in).Keys()
}

// keyOrder is the sorted keys of one State map.
type keyOrder struct {
	mu sync.Mutex
	// state is the map the keys are of (kept, so that no other map can
	// take its address), sorted its keys.
	state  map[ServiceAliasConfigKey]ServiceAliasConfig
	sorted []ServiceAliasConfigKey
}

func (o *keyOrder) keys(state map[ServiceAliasConfigKey]ServiceAliasConfig) []ServiceAliasConfigKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state == nil || reflect.ValueOf(o.state).UnsafePointer() != reflect.ValueOf(state).UnsafePointer() || len(o.sorted) != len(state) {
		o.state, o.sorted = state, sortedKeys(state)
	}
	return o.sorted
}

func sortedKeys(state map[ServiceAliasConfigKey]ServiceAliasConfig) []ServiceAliasConfigKey {
	keys := make([]ServiceAliasConfigKey, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// HAProxySettings are the router-wide HAProxy settings read from the
// environment (docs/env.md). The router validates every value before it
// gets here: each string is safe to write into haproxy.config as is. Time
// values are HAProxy time values ("5s", "500ms"), already clipped to
// HAProxy's maximum.
type HAProxySettings struct {
	// StrictSNI (ROUTER_STRICT_SNI) refuses TLS handshakes whose SNI
	// matches no certificate instead of serving the default certificate.
	StrictSNI bool
	// Ciphers (ROUTER_CIPHERS, resolved from a profile name) is the
	// OpenSSL cipher list for TLS 1.2 and below; CipherSuites
	// (ROUTER_CIPHERSUITES) the TLS 1.3 suites.
	Ciphers      string
	CipherSuites string
	// SSLMinVersion and SSLMaxVersion (SSL_MIN_VERSION, SSL_MAX_VERSION)
	// are "TLSv1.0" … "TLSv1.3"; SSLMaxVersion may be "".
	SSLMinVersion string
	SSLMaxVersion string

	// Timeouts: ROUTER_DEFAULT_CONNECT_TIMEOUT, ROUTER_DEFAULT_CLIENT_TIMEOUT,
	// ROUTER_CLIENT_FIN_TIMEOUT, ROUTER_DEFAULT_SERVER_TIMEOUT,
	// ROUTER_DEFAULT_SERVER_FIN_TIMEOUT, ROUTER_DEFAULT_TUNNEL_TIMEOUT,
	// ROUTER_SLOWLORIS_TIMEOUT (timeout http-request),
	// ROUTER_SLOWLORIS_HTTP_KEEPALIVE (timeout http-keep-alive),
	// ROUTER_INSPECT_DELAY (tcp-request inspect-delay),
	// ROUTER_BACKEND_CHECK_INTERVAL (check inter) and
	// ROUTER_HARD_STOP_AFTER (hard-stop-after; "" for none).
	ConnectTimeout       string
	ClientTimeout        string
	ClientFinTimeout     string
	ServerTimeout        string
	ServerFinTimeout     string
	TunnelTimeout        string
	HTTPRequestTimeout   string
	HTTPKeepAliveTimeout string
	InspectDelay         string
	BackendCheckInterval string
	HardStopAfter        string

	// IPMode (ROUTER_IP_V4_V6_MODE) is "v4" (the default: bind IPv4
	// addresses), "v6" (IPv6 only) or "v4v6" (both); it applies to every
	// listener: the HTTP and HTTPS frontends, the stats listener and the
	// metrics server.
	IPMode string
	// UseProxyProtocol (ROUTER_USE_PROXY_PROTOCOL) expects a PROXY
	// protocol header on the HTTP and HTTPS listeners.
	UseProxyProtocol bool
	// EnableCompression (ROUTER_ENABLE_COMPRESSION) gzips responses of
	// the types in CompressionMIME (ROUTER_COMPRESSION_MIME, blank
	// separated).
	EnableCompression bool
	CompressionMIME   string

	// LoadBalanceAlgorithm (ROUTER_LOAD_BALANCE_ALGORITHM) and
	// TCPBalanceScheme (ROUTER_TCP_BALANCE_SCHEME) are the default balance
	// of HTTP and passthrough backends.
	LoadBalanceAlgorithm string
	TCPBalanceScheme     string

	// Threads (ROUTER_THREADS) is nbthread; 0 leaves HAProxy's default.
	Threads int
	// SyslogAddress (ROUTER_SYSLOG_ADDRESS) is where HAProxy logs ("" for
	// no logging), with LogFacility (ROUTER_LOG_FACILITY) and LogLevel
	// (ROUTER_LOG_LEVEL); SyslogFormat (ROUTER_SYSLOG_FORMAT) is a quoted
	// log-format string or "".
	SyslogAddress string
	LogFacility   string
	LogLevel      string
	SyslogFormat  string

	// CookieName (ROUTER_COOKIE_NAME) is the sticky cookie of routes
	// without a cookie_name annotation ("": the route's RoutingKeyName).
	CookieName string
	// ErrorFile503 and ErrorFile404 (ROUTER_ERRORFILE_503/404) are
	// custom error responses ("": the template's pages).
	ErrorFile503 string
	ErrorFile404 string
	// ForwardedHeaders (ROUTER_SET_FORWARDED_HEADERS) is append, replace,
	// if-none or never: the default of the route annotation.
	ForwardedHeaders string

	// MutualTLSAuth (ROUTER_MUTUAL_TLS_AUTH) is "none", "optional" or
	// "required"; MutualTLSCA and MutualTLSCRL are the CA bundle and CRL
	// files (ROUTER_MUTUAL_TLS_AUTH_CA, _CRL); MutualTLSFilter
	// (ROUTER_MUTUAL_TLS_AUTH_FILTER) is a quoted regular expression the
	// client certificate's subject must match ("" for any). In a running
	// router with ROUTER_MUTUAL_TLS_AUTH_CA (MutualTLSClientCA), the CA and
	// CRL paths are those of the copies router/mtls keeps current
	// (WORKDIR/mtls/latest: the CA bundle and the CRLs it names).
	MutualTLSAuth     string
	MutualTLSCA       string
	MutualTLSCRL      string
	MutualTLSFilter   string
	MutualTLSClientCA bool

	// MutualTLSHeaderFilter (ROUTER_MUTUAL_TLS_HEADER_FILTER, default
	// true) deletes the X-SSL* headers a client sends on every frontend, so
	// that no client can pose as a verified client certificate.
	MutualTLSHeaderFilter bool

	// H1CaseAdjust (ROUTER_H1_CASE_ADJUST) is the validated
	// comma-separated list of header names (HTTP token characters) whose
	// case HAProxy restores on HTTP/1 ("" for none).
	H1CaseAdjust string

	// BufSize and MaxRewrite (ROUTER_BUF_SIZE, ROUTER_MAX_REWRITE_SIZE;
	// 32768 and 8192) are tune.bufsize and tune.maxrewrite.
	BufSize    int
	MaxRewrite int
	// LogMaxLength (ROUTER_LOG_MAX_LENGTH, 1024) is the length of a log
	// line sent to ROUTER_SYSLOG_ADDRESS.
	LogMaxLength int
	// Curves (ROUTER_CURVES) is the colon-separated list of TLS groups
	// offered by the frontends ("": HAProxy's); names the local OpenSSL
	// does not know are dropped at start, with a warning.
	Curves string
	// CaptureRequestHeaders, CaptureResponseHeaders and CaptureCookie
	// (ROUTER_CAPTURE_HTTP_REQUEST_HEADERS, _RESPONSE_HEADERS, _COOKIE)
	// are logged with each request.
	CaptureRequestHeaders  []Capture
	CaptureResponseHeaders []Capture
	CaptureCookie          *Capture
	// UniqueIDFormat (quoted) and UniqueIDHeader
	// (ROUTER_UNIQUE_ID_FORMAT, ROUTER_UNIQUE_ID_HEADER_NAME; both or
	// neither) give each request an ID header.
	UniqueIDFormat string
	UniqueIDHeader string
	// HTTPRequestHeaderActions and HTTPResponseHeaderActions
	// (ROUTER_HTTP_REQUEST_HEADERS, ROUTER_HTTP_RESPONSE_HEADERS) set or
	// delete headers on every request and response of the HTTP frontends.
	HTTPRequestHeaderActions  []HeaderAction
	HTTPResponseHeaderActions []HeaderAction
	// The HAProxy options of the same names: ROUTER_HTTP_IGNORE_PROBES,
	// ROUTER_DONT_LOG_NULL, ROUTER_IDLE_CLOSE_ON_RESPONSE,
	// ROUTER_ABORT_ON_CLOSE, ROUTER_HAPROXY_CONTSTATS.
	HTTPIgnoreProbes    bool
	DontLogNull         bool
	IdleCloseOnResponse bool
	AbortOnClose        bool
	ContStats           bool
}

// Capture is a header or cookie to capture into the log: Name (an HTTP
// token) and Len, the number of bytes kept. A cookie capture with Exact
// matches the cookie name exactly (capture cookie NAME=), else as a prefix.
type Capture struct {
	Name  string
	Len   int
	Exact bool
}

// HeaderAction sets (Action "Set", Value an haproxy.config word, which may
// hold HAProxy sample fetches such as %[req.hdr(host)]) or deletes (Action
// "Delete") the header Name.
type HeaderAction struct {
	Name   string
	Value  string
	Action string
	// RawValue is Value before quoting (as the variable gives it, URL
	// unescaped), for the template data's HTTPRequestHeaders.
	RawValue string
}

// H1CaseAdjustPairs returns, for each header of H1CaseAdjust, its
// lower-case form and the spelling HAProxy restores (h1-case-adjust).
func (h HAProxySettings) H1CaseAdjustPairs() [][2]string {
	var out [][2]string
	for _, name := range strings.Split(h.H1CaseAdjust, ",") {
		if name != "" {
			out = append(out, [2]string{strings.ToLower(name), name})
		}
	}
	return out
}
