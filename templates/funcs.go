// This file holds the template helper functions. Their template names,
// argument order and behaviour follow the OpenShift template router
// (pkg/router/template/template_helper.go in github.com/openshift/router), so
// that custom templates written for OpenShift's haproxy-config.template keep
// working. The Go implementations are exported (with Go-style names) so that
// other parts of this router can share them; templates use the names
// registered by FuncMap.

package templates

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/klog/v2"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

// FuncOptions configures the helpers returned by FuncMap.
type FuncOptions struct {
	// BackendProcessEndpoints is ROUTER_BACKEND_PROCESS_ENDPOINTS: "" or
	// "shuffle". processEndpointsForAlias uses it when a template passes an
	// empty action.
	BackendProcessEndpoints string
	// Rand is used for shuffle (inject for tests); nil means a new
	// time-seeded source per FuncMap. Access to it is serialised, so the
	// returned FuncMap may be used by concurrent template executions.
	Rand *rand.Rand
	// Getenv defaults to os.Getenv (inject for tests).
	Getenv func(string) string
}

// FuncMap returns the functions available to templates: every function of
// sprig.TxtFuncMap() plus the OpenShift template router's helpers and this
// router's additions (routeMapKey, haproxyQuote). Where a helper has the same
// name as a sprig function ("env"), the helper wins.
//
// generateHAProxyMap takes (name, data); OpenShift's one-argument form
// (data) works once the file template's name is bound with MapFileFuncs.
//
// Each call returns independent state (random source, compiled-regexp cache);
// nothing is shared between FuncMaps.
func FuncMap(opts FuncOptions) template.FuncMap {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	shuffler := newEndpointShuffler(opts.Rand)
	cache := newRegexpCache(maxCachedRegexps)
	defaultAction := opts.BackendProcessEndpoints

	helpers := template.FuncMap{
		// OpenShift helpers.
		"env": func(name string, defaults ...string) string {
			return envOrDefault(getenv, name, defaults...)
		},
		"isTrue":      IsTrue,
		"isInteger":   IsInteger,
		"matchValues": MatchValues,
		"matchPattern": func(pattern, s string) bool {
			return matchPattern(cache, "matchPattern", pattern, s)
		},
		"firstMatch": func(pattern string, values ...string) string {
			return firstMatch(cache, pattern, values...)
		},
		"endpointsForAlias": EndpointsForAlias,
		"processEndpointsForAlias": func(alias model.ServiceAliasConfig, svc model.ServiceUnit, action string) []model.Endpoint {
			if action == "" {
				action = defaultAction
			}
			return processEndpointsForAlias(alias, svc, action, shuffler)
		},
		"genCertificateHostName":      GenCertificateHostName,
		"genSubdomainWildcardRegexp":  GenSubdomainWildcardRegexp,
		"generateRouteRegexp":         GenerateRouteRegexp,
		"genBackendNamePrefix":        GenBackendNamePrefix,
		"getHTTPAliasesGroupedByHost": GetHTTPAliasesGroupedByHost,
		"getPrimaryAliasKey":          GetPrimaryAliasKey,
		"generateHAProxyMap":          generateHAProxyMapFunc(""),
		"clipHAProxyTimeoutValue":     ClipHAProxyTimeoutValue,
		"parseIPList":                 ParseIPList,
		"validateHAProxyAllowlist":    ValidateHAProxyAllowlist,
		// The renderer replaces it with one that also returns the file
		// with the rendered files (see Renderer.Render).
		"generateHAProxyAllowlistFile": func(workingDir string, id model.ServiceAliasConfigKey, value string) string {
			p, _ := AllowlistFile(workingDir, id, value)
			return p
		},
		"processRewriteTarget": ProcessRewriteTarget,
		"escapeSingleQuotes":   syntax.EscapeSingleQuotes,

		// This router's additions.
		"routeMapKey":            RouteMapKey,
		"routeHTTPMap":           RouteHTTPMap,
		"routeHTTPSMap":          RouteHTTPSMap,
		"headerChains":           HeaderChains,
		"routeLookups":           routeLookups,
		"forwardedOthers":        forwardedOthers,
		"mapKeys":                mapKeys,
		"chainLevel":             ChainLevel,
		"routeSNIPassthroughMap": RouteSNIPassthroughMap,
		"routeCertConfigMap":     RouteCertConfigMap,
		"forwardedHeadersMap":    ForwardedHeadersMap,
		"timeoutServerMap":       TimeoutServerMap,
		"timeoutTunnelMap":       TimeoutTunnelMap,
		"timeoutMillis":          TimeoutMillis,
		"hstsMap":                HSTSMap,
		"rateLimitMap":           RateLimitMap,
		"stickyCookieName":       StickyCookieName,
		"stickyCookieMap":        StickyCookieMap,
		"stickyCookie":           func() string { return StickyCookie },
		"hasStickyCookie":        HasStickyCookie,
		"haproxyQuote":           syntax.Quote,
		"haproxyLogFormat":       syntax.LogFormat,
	}

	fm := sprig.TxtFuncMap()
	for name, fn := range helpers {
		fm[name] = fn
	}
	return fm
}

// MapFileFuncs returns the functions to add (with Funcs, on a clone of the
// parsed template set) for executing the file template named templateName.
// It binds the one-argument form of generateHAProxyMap, which OpenShift's
// templates use inside their map file templates
//
//	{{ define "/var/lib/haproxy/conf/os_http_be.map" }}{{ range generateHAProxyMap . }}...
//
// to the map named like the file (path.Base(templateName)), as OpenShift's
// router does. The two-argument form keeps working.
func MapFileFuncs(templateName string) template.FuncMap {
	return template.FuncMap{
		"generateHAProxyMap": generateHAProxyMapFunc(path.Base(templateName)),
	}
}

// generateHAProxyMapFunc returns the template function generateHAProxyMap:
// called as generateHAProxyMap NAME DATA it generates the named map; called
// as generateHAProxyMap DATA it generates boundName (an error if boundName
// is ""). DATA is a model.TemplateData or a pointer to one.
func generateHAProxyMapFunc(boundName string) func(args ...any) ([]string, error) {
	return func(args ...any) ([]string, error) {
		var name string
		var data any
		switch len(args) {
		case 1:
			if boundName == "" {
				return nil, errors.New("generateHAProxyMap: called with only the template data outside a map file template; " +
					"pass the map name (generateHAProxyMap \"os_http_be.map\" .) or use it in a template named after the map file")
			}
			name, data = boundName, args[0]
		case 2:
			n, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("generateHAProxyMap: map name must be a string, got %T", args[0])
			}
			name, data = n, args[1]
		default:
			return nil, fmt.Errorf("generateHAProxyMap: want (name, data) or (data), got %d arguments", len(args))
		}
		switch td := data.(type) {
		case model.TemplateData:
			return GenerateHAProxyMap(name, td), nil
		case *model.TemplateData:
			if td != nil {
				return GenerateHAProxyMap(name, *td), nil
			}
		}
		return nil, fmt.Errorf("generateHAProxyMap: data must be the template data (model.TemplateData), got %T", data)
	}
}

// envOrDefault returns the value of the environment variable name if it is
// non-empty, otherwise the first non-empty default, otherwise "".
func envOrDefault(getenv func(string) string, name string, defaults ...string) string {
	if v := getenv(name); v != "" {
		return v
	}
	for _, d := range defaults {
		if d != "" {
			return d
		}
	}
	return ""
}

// IsTrue reports whether s is a true value as understood by
// strconv.ParseBool ("1", "t", "T", "TRUE", "true", "True"); anything else,
// including unparsable input, is false.
func IsTrue(s string) bool {
	v, err := strconv.ParseBool(s)
	return err == nil && v
}

// IsInteger reports whether s parses as a (base 10, optionally signed) int.
func IsInteger(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// MatchValues reports whether s equals one of allowedValues.
func MatchValues(s string, allowedValues ...string) bool {
	for _, v := range allowedValues {
		if v == s {
			return true
		}
	}
	return false
}

// MatchPattern reports whether the whole of s matches the regular expression
// pattern. The pattern is anchored as \A(?:pattern)\z, so alternations and
// (?m) flags cannot make it match a substring. An invalid pattern is logged
// and never matches.
func MatchPattern(pattern, s string) bool {
	return matchPattern(nil, "matchPattern", pattern, s)
}

// FirstMatch returns the first of values that wholly matches pattern
// (anchored as in MatchPattern), or "" if none does or the pattern is invalid.
func FirstMatch(pattern string, values ...string) string {
	return firstMatch(nil, pattern, values...)
}

func matchPattern(cache *regexpCache, helper, pattern, s string) bool {
	re, err := cache.compile(helper, anchorPattern(pattern))
	if err != nil {
		return false
	}
	return re.MatchString(s)
}

func firstMatch(cache *regexpCache, pattern string, values ...string) string {
	re, err := cache.compile("firstMatch", anchorPattern(pattern))
	if err != nil {
		return ""
	}
	for _, v := range values {
		if re.MatchString(v) {
			return v
		}
	}
	return ""
}

func anchorPattern(pattern string) string {
	return `\A(?:` + pattern + `)\z`
}

// maxCachedRegexps bounds the compiled-regexp cache of one FuncMap; when it
// is full the cache starts over, so patterns built from route data cannot
// make it grow without limit.
const maxCachedRegexps = 1024

// regexpCache remembers compiled (anchored) patterns and compile errors. A
// nil *regexpCache compiles every time.
type regexpCache struct {
	mu      sync.Mutex
	limit   int
	entries map[string]compiledRegexp
}

type compiledRegexp struct {
	re  *regexp.Regexp
	err error
}

func newRegexpCache(limit int) *regexpCache {
	return &regexpCache{limit: limit, entries: map[string]compiledRegexp{}}
}

func (c *regexpCache) compile(helper, pattern string) (*regexp.Regexp, error) {
	if c == nil {
		re, err := regexp.Compile(pattern)
		if err != nil {
			klog.ErrorS(err, "Invalid regular expression passed to template helper", "helper", helper, "pattern", pattern)
		}
		return re, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[pattern]; ok {
		return e.re, e.err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		// Logged once per pattern and FuncMap rather than on every call.
		klog.ErrorS(err, "Invalid regular expression passed to template helper", "helper", helper, "pattern", pattern)
	}
	if len(c.entries) >= c.limit {
		c.entries = map[string]compiledRegexp{}
	}
	c.entries[pattern] = compiledRegexp{re: re, err: err}
	return re, err
}

// EndpointsForAlias returns the endpoints of svc the route alias sends
// traffic to: all of them if alias.PreferPort is empty, otherwise those whose
// PortName or Port equals alias.PreferPort (the route's targetPort may be a
// port name or a number). The result must be treated as read-only: without
// PreferPort it is svc.EndpointTable itself.
func EndpointsForAlias(alias model.ServiceAliasConfig, svc model.ServiceUnit) []model.Endpoint {
	return alias.EndpointsOf(svc)
}

// ProcessEndpointsForAlias returns EndpointsForAlias(alias, svc) processed as
// action says: "shuffle" (case-insensitive) returns a randomly permuted copy
// using r (a new time-seeded source if r is nil); any other action returns
// the endpoints in order. svc.EndpointTable is never modified. r must not be
// used concurrently by the caller while this runs.
func ProcessEndpointsForAlias(alias model.ServiceAliasConfig, svc model.ServiceUnit, action string, r *rand.Rand) []model.Endpoint {
	return processEndpointsForAlias(alias, svc, action, newEndpointShuffler(r))
}

func processEndpointsForAlias(alias model.ServiceAliasConfig, svc model.ServiceUnit, action string, s *endpointShuffler) []model.Endpoint {
	endpoints := EndpointsForAlias(alias, svc)
	if !strings.EqualFold(action, "shuffle") {
		return endpoints
	}
	shuffled := make([]model.Endpoint, len(endpoints))
	copy(shuffled, endpoints)
	s.shuffle(shuffled)
	return shuffled
}

// endpointShuffler serialises access to a *rand.Rand, which is not safe for
// concurrent use.
type endpointShuffler struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newEndpointShuffler(r *rand.Rand) *endpointShuffler {
	if r == nil {
		r = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	return &endpointShuffler{r: r}
}

func (s *endpointShuffler) shuffle(endpoints []model.Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.Shuffle(len(endpoints), func(i, j int) {
		endpoints[i], endpoints[j] = endpoints[j], endpoints[i]
	})
}

// domainForHost returns what follows the first "." of host, or "" if host
// has no dot.
func domainForHost(host string) string {
	if i := strings.IndexByte(host, '.'); i >= 0 {
		return host[i+1:]
	}
	return ""
}

// GenCertificateHostName returns the host name certificates are matched
// against: for a wildcard route the first label is replaced by "*"
// ("www.example.com" → "*.example.com"); otherwise, or if hostname has no
// dot after its first character, hostname itself.
func GenCertificateHostName(hostname string, wildcard bool) string {
	if wildcard {
		if i := strings.IndexByte(hostname, '.'); i > 0 {
			return "*." + hostname[i+1:]
		}
	}
	return hostname
}

// GenSubdomainWildcardRegexp returns OpenShift's legacy regular expression
// matching any host of hostname's domain followed by path:
// ^[^\.]*\.<domain><path>$ if exactPath, ^[^\.]*\.<domain><path>(|/.*)$
// otherwise (the literal parts regexp-quoted). If hostname has no dot it
// returns hostname+path unchanged (and logs it), as OpenShift does.
func GenSubdomainWildcardRegexp(hostname, path string, exactPath bool) string {
	domain := domainForHost(hostname)
	if domain == "" {
		klog.InfoS("Generating subdomain wildcard regexp: host name has no domain", "hostname", hostname)
		return hostname + path
	}
	expr := regexp.QuoteMeta("." + domain + path)
	if exactPath {
		return `^[^\.]*` + expr + `$`
	}
	return `^[^\.]*` + expr + `(|/.*)$`
}

// routeHostRegexp returns the (unanchored) regular expression for a route's
// host: the quoted host, or for a wildcard route any single label followed by
// the quoted ".domain".
func routeHostRegexp(hostname string, wildcard bool) string {
	if wildcard {
		if domain := domainForHost(hostname); domain != "" {
			return `[^\.]*` + regexp.QuoteMeta("."+domain)
		}
		klog.InfoS("Generating wildcard route regexp: host name has no domain", "hostname", hostname)
	}
	return regexp.QuoteMeta(hostname)
}

// mapRegexpEscaper makes whitespace in a regular expression representable in
// an HAProxy map file, whose keys end at the first blank.
var mapRegexpEscaper = strings.NewReplacer(
	" ", `\x20`,
	"\t", `\t`,
	"\r", `\r`,
	"\n", `\n`,
)

// GenerateRouteRegexp returns the regular expression OpenShift's map files
// use to match a request's host and path (HAProxy's "base" fetch, which has
// no query string) against a route:
//
//	^<host>\.?(:[0-9]+)?<path part>$
//
// where <host> is the quoted host (for a wildcard route [^\.]* followed by
// the quoted ".domain"), a trailing dot and any port are accepted, and the
// path part is
//
//	path "" or only slashes:  (/.*)?          — any path
//	path ending in "/":       <path>(.*)?     — the path and anything below it
//	other paths:              <path>(/.*)?    — the path and its subpaths, on
//	                                            a segment boundary
//
// with the path regexp-quoted and blanks escaped for map files.
func GenerateRouteRegexp(hostname, path string, wildcard bool) string {
	var pathRE, subpathRE string
	switch {
	case strings.TrimRight(path, "/") == "":
		subpathRE = `(/.*)?`
	case strings.HasSuffix(path, "/"):
		pathRE = regexp.QuoteMeta(path)
		subpathRE = `(.*)?`
	default:
		pathRE = regexp.QuoteMeta(path)
		subpathRE = `(/.*)?`
	}
	pathRE = mapRegexpEscaper.Replace(pathRE)
	return "^" + routeHostRegexp(hostname, wildcard) + `\.?` + `(:[0-9]+)?` + pathRE + subpathRE + "$"
}

// GenerateSNIRegexp returns the regular expression matching a route's host
// against a TLS server name: ^<host>$ (for a wildcard route ^[^\.]*\.<domain>$).
func GenerateSNIRegexp(hostname string, wildcard bool) string {
	return "^" + routeHostRegexp(hostname, wildcard) + "$"
}

// GenBackendNamePrefix returns the prefix of the HAProxy backend name of a
// route with the given termination: "be_http" (insecure), "be_edge_http"
// (edge), "be_tcp" (passthrough) or "be_secure" (reencrypt). Unknown
// terminations get "be_http".
func GenBackendNamePrefix(termination routev1.TLSTerminationType) string {
	switch termination {
	case routev1.TLSTerminationEdge:
		return "be_edge_http"
	case routev1.TLSTerminationPassthrough:
		return "be_tcp"
	case routev1.TLSTerminationReencrypt:
		return "be_secure"
	default:
		return "be_http"
	}
}

// GetHTTPAliasesGroupedByHost returns the routes that serve HTTP traffic
// (all but passthrough routes) grouped by host.
func GetHTTPAliasesGroupedByHost(aliases map[model.ServiceAliasConfigKey]model.ServiceAliasConfig) map[string]map[model.ServiceAliasConfigKey]model.ServiceAliasConfig {
	out := map[string]map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
	for key, alias := range aliases {
		if alias.TLSTermination == routev1.TLSTerminationPassthrough {
			continue
		}
		group, ok := out[alias.Host]
		if !ok {
			group = map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
			out[alias.Host] = group
		}
		group[key] = alias
	}
	return out
}

// GetPrimaryAliasKey returns the key of the primary route of a group of
// routes that share a host (as returned by GetHTTPAliasesGroupedByHost): ""
// for no routes; the only key for one route; otherwise the alphabetically
// last key among edge and reencrypt routes, or, if there are none, the
// alphabetically last key.
func GetPrimaryAliasKey(aliases map[model.ServiceAliasConfigKey]model.ServiceAliasConfig) string {
	keys := make([]string, 0, len(aliases))
	for k := range aliases {
		keys = append(keys, string(k))
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	for _, k := range keys {
		switch aliases[model.ServiceAliasConfigKey(k)].TLSTermination {
		case routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt:
			return k
		}
	}
	return keys[0]
}

// ClipHAProxyTimeoutValue is the clipHAProxyTimeoutValue helper: it
// returns val unchanged if it is a valid HAProxy time value of at most
// syntax.MaxTimeout (sub-millisecond values included: HAProxy rounds them
// up to 1ms), syntax.MaxTimeout if it is larger, and "" if val is empty or
// invalid — the rule of syntax.ClipTimeout, which route annotations and
// environment variables follow too.
func ClipHAProxyTimeoutValue(val string) string {
	if val == "" {
		return ""
	}
	out, clipped, err := syntax.ClipTimeout(val)
	switch {
	case clipped:
		klog.InfoS("Time value exceeds HAProxy's maximum, clipping", "value", val, "max", syntax.MaxTimeout)
	case err != nil:
		klog.InfoS("Ignoring invalid time value", "value", val, "err", err)
	}
	return out
}

// ParseIPList is the parseIPList helper: the entries of list that
// syntax.ParseIPList keeps, joined by single spaces. A list with leading or
// trailing blanks, or without a valid entry, gives "" (no restriction), as
// in OpenShift; invalid entries are logged and dropped.
func ParseIPList(list string) string {
	valid, invalid, err := syntax.ParseIPList(list)
	switch {
	case errors.Is(err, syntax.ErrIPListBlanks):
		klog.V(2).InfoS("Ignoring IP list with leading or trailing blanks", "list", list)
	case len(invalid) > 0:
		klog.InfoS("Ignoring invalid IP addresses or CIDRs in IP list", "entries", invalid)
	}
	return strings.Join(valid, " ")
}

// MaxAllowlistLength is the largest number of addresses an
// "acl allowlist src ..." line takes (syntax.MaxInlineAllowlist, 61).
const MaxAllowlistLength = syntax.MaxInlineAllowlist

// ValidateHAProxyAllowlist reports whether the blank-separated list value
// fits on one acl line (at most MaxAllowlistLength entries); a longer one
// goes to a file (generateHAProxyAllowlistFile). It counts entries only,
// as OpenShift does: pass it the result of parseIPList.
func ValidateHAProxyAllowlist(value string) bool {
	return len(strings.Fields(value)) <= MaxAllowlistLength
}

// AllowlistFile returns the path and contents of the allowlist file of
// the route id: WorkingDir/router/allowlists/<id.FileName()>.txt (a bounded
// name, whatever the route's) with a first line naming the route and then
// one entry of value a line, as OpenShift's generateHAProxyAllowlistFile
// writes it. Entries that are no IP address or CIDR are left out
// (parseIPList's result has none). An id that would leave the directory
// gives "".
func AllowlistFile(workingDir string, id model.ServiceAliasConfigKey, value string) (string, []byte) {
	if raw := string(id); raw == "" || raw == "." || raw == ".." || strings.ContainsAny(raw, "/\\\x00") || syntax.StripControl(raw) != raw {
		return "", nil // not a route key
	}
	name := id.FileName()
	var b strings.Builder
	b.WriteString(id.FileHeader())
	for _, entry := range strings.Fields(value) {
		if !syntax.IsIPOrCIDR(entry) {
			continue
		}
		b.WriteString(entry)
		b.WriteByte('\n')
	}
	return path.Join(workingDir, allowlistDir, name+".txt"), []byte(b.String())
}

// ProcessRewriteTarget turns the value of the
// haproxy.router.openshift.io/rewrite-target annotation into the
// replacement of "http-request replace-path REGEX 'REPLACEMENT'" the way
// OpenShift's processRewriteTarget does, so that a value means what it
// meant when OpenShift wrote it unquoted:
//
//   - an unescaped "#" ends the value (HAProxy's comment) and then no "\1"
//     is appended;
//   - unescaped double quotes are removed; unescaped single quotes are
//     removed and escaped ones become a literal "'";
//   - a run of an odd number of "%" has each "%" doubled (a single "%" was
//     an error, "%%" a literal "%");
//   - single backslashes are removed and double ones become one;
//   - "\1" (the rest of the path after the route's path) is appended.
//
// Control characters are removed first (OpenShift's template only passes
// values that have none).
func ProcessRewriteTarget(val string) string {
	val = syntax.StripControl(val)
	// Up to the first unescaped "#".
	comment := false
	var b strings.Builder
	escaped := false
	for _, c := range val {
		if c == '#' && !escaped {
			comment = true
			break
		}
		b.WriteRune(c)
		escaped = c == '\\' && !escaped
	}
	val = b.String()
	// Unescaped double quotes removed.
	b.Reset()
	escaped = false
	for _, c := range val {
		if c == '"' && !escaped {
			escaped = false
			continue
		}
		b.WriteRune(c)
		escaped = c == '\\' && !escaped
	}
	val = b.String()
	// Unescaped single quotes removed; escaped ones kept as a quoted
	// quote whose backslash survives the backslash rules below.
	b.Reset()
	escaped = false
	for _, c := range val {
		switch {
		case c == '\'' && !escaped:
			continue
		case c == '\'':
			b.WriteString(`'\\''`)
			escaped = false
			continue
		}
		b.WriteRune(c)
		escaped = c == '\\' && !escaped
	}
	val = b.String()
	val = mapRuns(val, '%', func(n int) string {
		if n%2 == 1 {
			return strings.Repeat("%", 2*n)
		}
		return strings.Repeat("%", n)
	})
	val = mapRuns(val, '\\', func(n int) string {
		if n == 1 {
			return ""
		}
		return strings.Repeat(`\`, n)
	})
	val = strings.ReplaceAll(val, `\\`, `\`)
	if !comment {
		val += `\1`
	}
	return val
}

// mapRuns replaces every maximal run of the byte c in s by f(run length).
func mapRuns(s string, c byte, f func(int) string) string {
	if strings.IndexByte(s, c) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != c {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == c {
			j++
		}
		b.WriteString(f(j - i))
		i = j
	}
	return b.String()
}

// RouteMapKey returns the key of a route in this router's own longest-prefix
// (map_beg) route maps: the lower-cased host followed by the route's path
// normalised to start and end with "/" ("" and "/" give host+"/", "/a" and
// "/a/" give host+"/a/"). The default template looks requests up with
// host-without-port + path + "/", so a route for "/a" matches "/a" and
// "/a/...", but not "/ab". Blanks and control characters in the path, which
// cannot appear in a map key (and arrive percent-encoded in requests), are
// percent-encoded.
//
// This is an addition of this router; OpenShift has no such helper.
func RouteMapKey(host, path string) string {
	var b strings.Builder
	b.Grow(len(host) + len(path) + 2)
	b.WriteString(strings.ToLower(host))
	if !strings.HasPrefix(path, "/") {
		b.WriteByte('/')
	}
	writeMapPath(&b, path)
	if path != "" && !strings.HasSuffix(path, "/") {
		b.WriteByte('/')
	}
	return b.String()
}

// ExactRouteMapKey returns the key of a route that matches its path
// exactly (ServiceAliasConfig.ExactPath) in the same maps: "=", the
// lower-cased host and the path as it is (encoded as RouteMapKey encodes
// it). The default template looks it up (map_str) with "=" + host + path
// before the prefixes; a prefix lookup never finds it (its keys start with
// a host).
func ExactRouteMapKey(host, path string) string {
	var b strings.Builder
	b.Grow(len(host) + len(path) + 1)
	b.WriteByte('=')
	b.WriteString(strings.ToLower(host))
	writeMapPath(&b, path)
	return b.String()
}

// writeMapPath writes path into a map key: blanks and control characters
// percent-encoded.
func writeMapPath(b *strings.Builder, path string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c <= ' ' || c == 0x7f {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
}
