package gateway

import (
	"fmt"
	"slices"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/ingress"
	"github.com/openshift-router-go/router/router/model"
)

// rule is an HTTPRoute rule the router serves: its matches, backends and
// header modifiers (the Route API's header actions).
type rule struct {
	index    int
	matches  []match
	backends []backend
	headers  *routev1.RouteHTTPHeaders
	adds     headerAdds
	// respond is the status requests to the rule are answered with,
	// without backends (500: none of its backendRefs is valid); 0: none.
	respond int
	// redirect is the rule's RequestRedirect, answered without backends.
	redirect *model.Redirect
	// rewrite is the rule's URLRewrite path and timeouts.
	rewrite rewrite
	// errorShare is the share of requests, per mille, answered 500 for
	// the invalid backends' weights (MadeRoute.ErrorShare).
	errorShare int
	// retry is the rule's retry (nil: none).
	retry *model.Retry
	// cors is the rule's CORS filter (nil: none).
	cors *model.CORS
}

// match is a served match of a rule: a path prefix ("" for every path),
// or with exact, a path matched exactly, or with pathRegex, a PCRE pattern
// the whole path matches (path is then the expression's literal start up
// to its last "/"); and headers the request must have (sorted by name).
type match struct {
	index     int
	path      string
	exact     bool
	pathRegex string
	headers   []model.HeaderMatch
	// method and query are the match's method and query parameters
	// (sorted by name), "" and nil for none.
	method string
	query  []model.HeaderMatch
}

// conditional reports whether the match tests more than the path.
func (m match) conditional() bool {
	return len(m.headers) > 0 || m.method != "" || len(m.query) > 0 || m.pathRegex != ""
}

// conditions writes the match's method, headers and query parameters.
func (m match) conditions() string {
	c := "m=" + m.method + "&h:" + headerSignature(m.headers) + "&q:" + headerSignature(m.query)
	if m.pathRegex != "" {
		c += "&p~" + m.pathRegex
	}
	return c
}

// nameKey is what the match adds to the name of its route (routeName),
// and the path its route claims (claimPath): its path, "=" in front for
// an exact one, then "?" and the headers for header matches.
func (m match) nameKey() string {
	k := m.path
	if m.exact {
		k = "=" + m.path
	}
	if m.conditional() {
		k += "?" + m.conditions()
	}
	return k
}

// claimPath is the path the match's route claims in admission
// (admission.Options.ClaimPath), "" for a plain path prefix.
func (m match) claimPath() string {
	switch {
	case m.conditional() && !m.exact:
		return strings.TrimRight(m.path, "/") + "/?" + m.conditions()
	case m.exact || m.conditional():
		return m.nameKey()
	}
	return ""
}

// headerSignature writes header matches as "name=value&..." ("name~"
// for a pattern).
func headerSignature(hs []model.HeaderMatch) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteByte('&')
		}
		op := "="
		if h.Regex {
			op = "~"
		}
		b.WriteString(h.Name + op + h.Value)
	}
	return b.String()
}

// backend is a valid backendRef: a Service of the route's namespace, or
// of another one (namespace) that a ReferenceGrant lets it name.
type backend struct {
	namespace  string
	service    string
	weight     int32
	targetPort *intstr.IntOrString
}

// backendPorts returns the target ports of the rule's backends (as a
// route's spec.port.targetPort, "" for any), nil when they are all the
// first's.
func (r rule) backendPorts() []string {
	out := make([]string, len(r.backends))
	differ := false
	for i, b := range r.backends {
		if b.targetPort != nil {
			out[i] = b.targetPort.String()
		}
		differ = differ || out[i] != out[0]
	}
	if !differ {
		return nil
	}
	return out
}

// backendNamespaces returns the namespaces of the rule's backends, ""
// for the route's own (nil when every backend is of the route's).
func (r rule) backendNamespaces() []string {
	var out []string
	for i, b := range r.backends {
		if b.namespace != "" && out == nil {
			out = make([]string, len(r.backends))
		}
		if out != nil {
			out[i] = b.namespace
		}
	}
	return out
}

// maxRouteWeight is the largest weight a Route backend takes; HTTPRoute
// weights (up to 1,000,000) are scaled down to it, keeping their ratios.
const maxRouteWeight = 256

// translateRules returns the rules of an HTTPRoute the router serves, and
// the route's ResolvedRefs condition. What it cannot serve is recorded in
// rs.unserved.
func translateRules(v View, hr *gatewayv1.HTTPRoute, rs *RouteStatus) ([]rule, metav1.Condition) {
	gen := hr.Generation
	resolved := condition(gatewayv1.RouteConditionResolvedRefs, true, gatewayv1.RouteReasonResolvedRefs, "", gen)
	var out []rule
	for ri, r := range hr.Spec.Rules {
		r, why := withBackendFilters(r)
		var headers *routev1.RouteHTTPHeaders
		var adds headerAdds
		if why == "" {
			headers, adds, why = headerActions(r.Filters)
		}
		if why == "" {
			why = unsupportedRule(r)
		}
		var redirect *model.Redirect
		if why == "" {
			redirect, why = redirectOf(r.Filters)
		}
		var rw rewrite
		if why == "" {
			rw, why = rewriteOf(r)
		}
		var retry *model.Retry
		if why == "" {
			retry, why = retryOf(r)
		}
		var cors *model.CORS
		if why == "" {
			cors, why = corsOf(r.Filters)
		}
		if why != "" {
			rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("rule %d: %s", ri, why)})
			continue
		}
		var refs backendRefs
		if redirect == nil {
			// (A redirect's backendRefs are not used.)
			refs = ruleBackends(v, hr, r)
			if refs.refErr != nil && resolved.Status == metav1.ConditionTrue {
				resolved = *refs.refErr
			}
			if refs.why != "" {
				rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("rule %d: %s", ri, refs.why), backend: refs.invalid})
				continue
			}
		}
		matches := r.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		var ms []match
		for mi, m := range matches {
			mt, why := matchOf(m)
			if why == "" {
				why = prefixReplaced(mt, rw, redirect)
			}
			if why != "" {
				rs.unserved = append(rs.unserved, unserved{msg: fmt.Sprintf("rule %d, match %d: %s", ri, mi, why)})
				continue
			}
			mt.index = mi
			ms = append(ms, mt)
		}
		if len(ms) > 0 {
			ru := rule{index: ri, matches: ms, backends: refs.valid, headers: headers, adds: adds, redirect: redirect, rewrite: rw, errorShare: refs.errorShare, retry: retry, cors: cors}
			if refs.errorShare == 1000 {
				// No valid backend (or none named): the spec
				// answers the rule's requests with 500.
				ru.respond, ru.errorShare = 500, 0
			}
			out = append(out, ru)
		}
	}
	return out, resolved
}

// ruleBackends resolves the backendRefs of an HTTPRoute's rule.
func ruleBackends(v View, hr *gatewayv1.HTTPRoute, r gatewayv1.HTTPRouteRule) backendRefs {
	refs := make([]gatewayv1.BackendRef, len(r.BackendRefs))
	for i, b := range r.BackendRefs {
		refs[i] = b.BackendRef
	}
	return backendsOf(v, routeRef{kind: httpRouteKind.Kind, namespace: hr.Namespace, generation: hr.Generation}, refs)
}

// prefixReplaced says why a match cannot have its path prefix replaced by
// the rule's URLRewrite or RequestRedirect ("": it can, or it is not): an
// Exact path match (the spec allows ReplacePrefixMatch with PathPrefix
// matches only), or a redirect's prefix of more than
// model.MaxRedirectPrefixSegments segments.
func prefixReplaced(m match, rw rewrite, rd *model.Redirect) string {
	replaced := rd != nil && rd.ReplacePrefix
	switch {
	case (rw.prefix != "" || replaced) && m.exact:
		return "ReplacePrefixMatch with an Exact path match"
	case (rw.prefix != "" || replaced) && m.pathRegex != "":
		return "ReplacePrefixMatch with a RegularExpression path match"
	case rw.prefix != "" && m.path != "" && !annotations.SafePath(m.path):
		// (As a Route's rewrite-target, which would be ignored.)
		return fmt.Sprintf("URLRewrite: ReplacePrefixMatch of path %q is not served (a path of letters, digits and /._~!*+,;=:@- only)", m.path)
	case replaced && model.PathSegments(m.path) > model.MaxRedirectPrefixSegments:
		return fmt.Sprintf("RequestRedirect: ReplacePrefixMatch of a path of more than %d segments", model.MaxRedirectPrefixSegments)
	}
	return ""
}

// withBackendFilters returns rule r with the filters of its backendRefs
// moved to the rule's, after its own, when every backendRef has the same
// ones (one backendRef, most often): a rule's backendRefs are the servers
// of one HAProxy backend, which has no per-server request rules, so the
// filters must apply whichever backendRef serves a request. Otherwise it
// says why the rule is not served. r's object is not changed.
func withBackendFilters(r gatewayv1.HTTPRouteRule) (gatewayv1.HTTPRouteRule, string) {
	if !slices.ContainsFunc(r.BackendRefs, func(b gatewayv1.HTTPBackendRef) bool { return len(b.Filters) > 0 }) {
		return r, ""
	}
	shared := r.BackendRefs[0].Filters
	for _, b := range r.BackendRefs[1:] {
		if !equality.Semantic.DeepEqual(b.Filters, shared) {
			return r, "backendRefs with filters of their own that differ are not served (a rule's backendRefs share one HAProxy backend)"
		}
	}
	for _, f := range shared {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier:
		default:
			return r, fmt.Sprintf("backendRef filters of type %s are not served", f.Type)
		}
	}
	r.Filters = append(slices.Clip(r.Filters), shared...)
	refs := slices.Clone(r.BackendRefs)
	for i := range refs {
		refs[i].Filters = nil
	}
	r.BackendRefs = refs
	return r, ""
}

// unsupportedRule says what of a rule the router does not serve yet.
func unsupportedRule(r gatewayv1.HTTPRouteRule) string {
	for _, f := range r.Filters {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier, gatewayv1.HTTPRouteFilterRequestRedirect,
			gatewayv1.HTTPRouteFilterURLRewrite, gatewayv1.HTTPRouteFilterCORS:
		default:
			return fmt.Sprintf("filters of type %s are not served by this router yet", f.Type)
		}
	}
	if r.SessionPersistence != nil {
		return "session persistence is not served by this router yet"
	}
	return "" // (backendRefs' filters: withBackendFilters)
}

// pathOf returns the path of a match, whether it is matched exactly (else
// as a prefix), or what of it is not served.
func pathOf(m gatewayv1.HTTPRouteMatch) (path string, exact bool, regex string, why string) {
	if m.Path == nil {
		return "", false, "", ""
	}
	typ := gatewayv1.PathMatchPathPrefix
	if m.Path.Type != nil {
		typ = *m.Path.Type
	}
	value := "/"
	if m.Path.Value != nil {
		value = *m.Path.Value
	}
	switch typ {
	case gatewayv1.PathMatchRegularExpression:
		return regexPathOf(value)
	case gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact:
	default:
		return "", false, "", fmt.Sprintf("path matches of type %s are not served", typ)
	}
	if !strings.HasPrefix(value, "/") {
		return "", false, "", fmt.Sprintf("path %q does not start with /", value)
	}
	if typ == gatewayv1.PathMatchExact {
		return value, true, "", ""
	}
	// A prefix matches whole path elements, a trailing "/" or not: a
	// route path (the router's map keys end each path with "/").
	return strings.TrimRight(value, "/"), false, "", ""
}

// matchOf returns a match as served (its index unset), or what of it is
// not served.
func matchOf(m gatewayv1.HTTPRouteMatch) (match, string) {
	var out match
	var why string
	out.path, out.exact, out.pathRegex, why = pathOf(m)
	if why == "" {
		out.headers, why = headerMatches(m)
	}
	if why == "" {
		out.query, why = queryMatches(m)
	}
	if why == "" && m.Method != nil {
		out.method = string(*m.Method)
		if !methodToken(out.method) {
			why = fmt.Sprintf("method %q is not served", out.method)
		}
	}
	return out, why
}

// queryMatches returns the query parameter matches of a match (Exact;
// names as they are, sorted), or what of them is not served: names of
// letters, digits, "-", "_", "." and "~", printable values of at most 256
// characters.
func queryMatches(m gatewayv1.HTTPRouteMatch) ([]model.HeaderMatch, string) {
	if len(m.QueryParams) == 0 {
		return nil, ""
	}
	if len(m.QueryParams) > MaxHeaderMatches {
		return nil, fmt.Sprintf("more than %d query parameter matches are not served", MaxHeaderMatches)
	}
	out := make([]model.HeaderMatch, 0, len(m.QueryParams))
	for _, q := range m.QueryParams {
		regex := q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression
		if q.Type != nil && *q.Type != gatewayv1.QueryParamMatchExact && !regex {
			return nil, fmt.Sprintf("query parameter matches of type %s are not served", *q.Type)
		}
		name := string(q.Name)
		if !headerToken(strings.ToLower(strings.ReplaceAll(name, "~", "-"))) || !regex && (q.Value == "" || !printable(q.Value) || len(q.Value) > 256) {
			return nil, fmt.Sprintf("query parameter match %q: the router serves names of letters, digits, -, _, . and ~ and printable values of up to 256 characters without braces, backslashes or quotes", name)
		}
		if slices.ContainsFunc(out, func(o model.HeaderMatch) bool { return o.Name == name }) {
			continue // the first of the same name counts
		}
		qm, why := valueMatch(name, q.Value, regex)
		if why != "" {
			return nil, fmt.Sprintf("query parameter match %q: %s", name, why)
		}
		out = append(out, qm)
	}
	slices.SortFunc(out, func(a, b model.HeaderMatch) int { return strings.Compare(a.Name, b.Name) })
	return out, ""
}

// methodToken reports whether s is an HTTP method the router writes as is:
// upper-case letters.
func methodToken(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// MaxHeaderMatches bounds the headers one match may test.
const MaxHeaderMatches = 8

// headerMatches returns the header matches of a match (Exact; names in
// lower case, sorted), or what of them is not served. A name is a token
// of letters, digits, "-", "_" and "."; a value printable text of at most
// 256 characters without braces, backslashes or quotes (printable; it is
// written quoted into haproxy.config, the whole header value compared).
func headerMatches(m gatewayv1.HTTPRouteMatch) ([]model.HeaderMatch, string) {
	if len(m.Headers) == 0 {
		return nil, ""
	}
	if len(m.Headers) > MaxHeaderMatches {
		return nil, fmt.Sprintf("more than %d header matches are not served", MaxHeaderMatches)
	}
	out := make([]model.HeaderMatch, 0, len(m.Headers))
	for _, h := range m.Headers {
		regex := h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression
		if h.Type != nil && *h.Type != gatewayv1.HeaderMatchExact && !regex {
			return nil, fmt.Sprintf("header matches of type %s are not served", *h.Type)
		}
		name := strings.ToLower(string(h.Name))
		if !headerToken(name) || !regex && (h.Value == "" || !printable(h.Value) || len(h.Value) > 256) {
			return nil, fmt.Sprintf("header match %q: the router serves names of letters, digits, -, _ and . and printable values of up to 256 characters without braces, backslashes or quotes", h.Name)
		}
		if slices.ContainsFunc(out, func(o model.HeaderMatch) bool { return o.Name == name }) {
			// The spec: the first of the same name counts.
			continue
		}
		hm, why := valueMatch(name, h.Value, regex)
		if why != "" {
			return nil, fmt.Sprintf("header match %q: %s", h.Name, why)
		}
		out = append(out, hm)
	}
	slices.SortFunc(out, func(a, b model.HeaderMatch) int { return strings.Compare(a.Name, b.Name) })
	return out, ""
}

func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// printable reports whether s is a value the router writes into an ACL
// pattern (quoted, after "--"): printable ASCII without braces, which end
// an anonymous ACL even quoted, backslashes or quotes.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f || strings.IndexByte("{}\\\"'", s[i]) >= 0 {
			return false
		}
	}
	return true
}

// backendRefs is what backendsOf makes of a rule's backendRefs.
type backendRefs struct {
	// valid are the valid ones; refErr is the ResolvedRefs condition of
	// the first invalid one.
	valid  []backend
	refErr *metav1.Condition
	// why says why the rule cannot be served with them ("": it can).
	why string
	// invalid: some references are invalid. errorShare is then the
	// share of requests, per mille, their weights take (1000: all; the
	// spec answers those with 500).
	invalid    bool
	errorShare int
}

// backendsOf resolves a rule's backendRefs.
func backendsOf(v View, rt routeRef, refs []gatewayv1.BackendRef) backendRefs {
	gen := rt.generation
	var out backendRefs
	var validWeight, invalidWeight int64
	fail := func(ref gatewayv1.BackendRef, reason gatewayv1.RouteConditionReason, msg string) {
		if out.refErr == nil {
			c := condition(gatewayv1.RouteConditionResolvedRefs, false, reason, msg, gen)
			out.refErr = &c
		}
		out.invalid = true
		invalidWeight += int64(weightOf(ref))
	}
	for _, ref := range refs {
		if ref.Group != nil && *ref.Group != "" || ref.Kind != nil && *ref.Kind != "Service" {
			fail(ref, gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s: only Services are supported", ref.Name))
			continue
		}
		ns := rt.namespace
		if ref.Namespace != nil && string(*ref.Namespace) != rt.namespace {
			ns = string(*ref.Namespace)
			if !Granted(v, rt.namespace, string(rt.kind), ns, "Service", string(ref.Name)) {
				fail(ref, gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef %s/%s: no ReferenceGrant allows it", ns, ref.Name))
				continue
			}
		}
		svc := v.Service(ns, string(ref.Name))
		if svc == nil || ref.Port == nil {
			fail(ref, gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backendRef %s: no such Service, or no port", ref.Name))
			continue
		}
		port, ok := ingress.TargetPort(svc, networkingv1.ServiceBackendPort{Number: int32(*ref.Port)})
		if !ok {
			fail(ref, gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backendRef %s: the Service has no port %d", ref.Name, *ref.Port))
			continue
		}
		b := backend{service: string(ref.Name), weight: weightOf(ref), targetPort: port}
		if ns != rt.namespace {
			b.namespace = ns
		}
		validWeight += int64(b.weight)
		out.valid = append(out.valid, b)
	}
	var why string
	out.valid, why = mergeBackends(out.valid)
	switch {
	case why != "":
		out.valid, out.why = nil, why
	case len(out.valid) > admission.MaxMadeBackends:
		out.valid, out.why = nil, fmt.Sprintf("more than %d backends are not served", admission.MaxMadeBackends)
	case out.invalid && (len(out.valid) == 0 || validWeight == 0):
		out.valid, out.errorShare = nil, 1000
	case out.invalid:
		out.errorShare = int((invalidWeight*1000 + (validWeight+invalidWeight)/2) / (validWeight + invalidWeight))
	}
	if len(refs) == 0 {
		// No backendRefs: answered with 500.
		out.invalid, out.errorShare = true, 1000
	}
	scaleWeights(out.valid)
	return out
}

// mergeBackends makes backends of one Service (namespace and name) one,
// their weights added, or says why it cannot: the same Service on two
// ports (a route's Services are served on one port each).
func mergeBackends(bs []backend) ([]backend, string) {
	out := bs[:0:0]
	for _, b := range bs {
		i := slices.IndexFunc(out, func(o backend) bool { return o.namespace == b.namespace && o.service == b.service })
		switch {
		case i < 0:
			out = append(out, b)
		case out[i].targetPort.String() != b.targetPort.String():
			return nil, fmt.Sprintf("backendRefs name Service %s on two ports; a rule's Services are served on one port each", b.service)
		default:
			out[i].weight += b.weight
		}
	}
	return out, ""
}

// weightOf is a backendRef's weight (1 when it has none).
func weightOf(ref gatewayv1.BackendRef) int32 {
	if ref.Weight != nil {
		return *ref.Weight
	}
	return 1
}

// scaleWeights scales weights above maxRouteWeight down, keeping their
// ratios (a weight that is not 0 stays at least 1).
func scaleWeights(bs []backend) {
	top := int32(0)
	for _, b := range bs {
		top = max(top, b.weight)
	}
	if top <= maxRouteWeight {
		return
	}
	for i, b := range bs {
		if b.weight == 0 {
			continue
		}
		bs[i].weight = max(1, int32((int64(b.weight)*maxRouteWeight+int64(top)/2)/int64(top)))
	}
}

// Granted reports whether a ReferenceGrant of namespace toNamespace lets
// objects of kind fromKind (of the Gateway API group) in fromNamespace refer
// to the object toName of kind toKind (of the core group).
func Granted(v View, fromNamespace, fromKind, toNamespace, toKind, toName string) bool {
	for _, g := range v.ReferenceGrants() {
		if g.Namespace != toNamespace {
			continue
		}
		from := false
		for _, f := range g.Spec.From {
			if string(f.Group) == gatewayv1.GroupName && string(f.Kind) == fromKind && string(f.Namespace) == fromNamespace {
				from = true
			}
		}
		if !from {
			continue
		}
		for _, t := range g.Spec.To {
			if string(t.Group) == "" && string(t.Kind) == toKind && (t.Name == nil || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}
