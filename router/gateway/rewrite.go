package gateway

import (
	"fmt"
	"strings"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/annotations"
)

// rewrite is what a rule's URLRewrite filter (its path; the hostname is a
// header action, headerActions) and its timeouts ask of its routes.
type rewrite struct {
	// prefix replaces the path prefix matched (ReplacePrefixMatch): the
	// route's rewrite-target annotation, as a Route has it.
	prefix string
	// fullPath replaces the whole path (ReplaceFullPath):
	// model.MadeRoute.RewritePath.
	fullPath string
	// timeout is the time HAProxy waits for the backend (an HAProxy time
	// value): the route's timeout annotation.
	timeout string
}

// annotations returns the route annotations of rw (nil: none).
func (rw rewrite) annotations() map[string]string {
	var out map[string]string
	set := func(k, v string) {
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	if rw.prefix != "" {
		set(annotations.RewriteTarget, rw.prefix)
	}
	if rw.timeout != "" {
		set(annotations.Timeout, rw.timeout)
	}
	return out
}

// rewriteOf returns what a rule's URLRewrite filter asks of its path and
// its timeouts ask, or why it cannot be served.
func rewriteOf(r gatewayv1.HTTPRouteRule) (rewrite, string) {
	var rw rewrite
	seen := false
	for _, f := range r.Filters {
		if f.Type != gatewayv1.HTTPRouteFilterURLRewrite {
			continue
		}
		if f.URLRewrite == nil {
			return rewrite{}, "a URLRewrite filter without its settings"
		}
		if seen {
			return rewrite{}, "more than one URLRewrite filter"
		}
		seen = true
		p := f.URLRewrite.Path
		if p == nil {
			continue
		}
		path, prefix, ok := pathModifier(p)
		switch {
		case !ok:
			return rewrite{}, fmt.Sprintf("URLRewrite: a path modifier of type %s without its value", p.Type)
		case prefix:
			rw.prefix = path
		default:
			rw.fullPath = path
		}
		if path := rw.prefix + rw.fullPath; !annotations.SafePath(path) {
			return rewrite{}, fmt.Sprintf("URLRewrite: path %q is not served (a path starting with / of letters, digits and /._~!*+,;=:@-)", path)
		}
	}
	if seen && redirects(r.Filters) {
		return rewrite{}, "a URLRewrite and a RequestRedirect filter in one rule"
	}
	timeout, why := timeoutOf(r.Timeouts)
	if why != "" {
		return rewrite{}, why
	}
	rw.timeout = timeout
	return rw, ""
}

// pathModifier returns the path of a URLRewrite's or RequestRedirect's
// path modifier and whether it replaces the matched prefix
// (ReplacePrefixMatch; "" is "/") rather than the whole path; false without
// the value its type names.
func pathModifier(p *gatewayv1.HTTPPathModifier) (string, bool, bool) {
	switch {
	case p.Type == gatewayv1.PrefixMatchHTTPPathModifier && p.ReplacePrefixMatch != nil:
		if *p.ReplacePrefixMatch == "" {
			return "/", true, true
		}
		return *p.ReplacePrefixMatch, true, true
	case p.Type == gatewayv1.FullPathHTTPPathModifier && p.ReplaceFullPath != nil:
		return *p.ReplaceFullPath, false, true
	}
	return "", false, false
}

// redirects reports whether filters have a RequestRedirect.
func redirects(filters []gatewayv1.HTTPRouteFilter) bool {
	for _, f := range filters {
		if f.Type == gatewayv1.HTTPRouteFilterRequestRedirect {
			return true
		}
	}
	return false
}

// timeoutOf returns the time HAProxy waits for a rule's backend, as an
// HAProxy time value ("": the router's, ROUTER_DEFAULT_SERVER_TIMEOUT),
// or why the timeouts cannot be served. HAProxy's server timeout bounds the
// wait for the response and between its parts, not the whole exchange: the
// shorter of request and backendRequest; "0s" disables a timeout, which
// HAProxy takes as its longest (syntax.MaxTimeout), as the spec asks of
// those that cannot disable it.
func timeoutOf(t *gatewayv1.HTTPRouteTimeouts) (string, string) {
	if t == nil {
		return "", ""
	}
	var shortest time.Duration
	for _, f := range []struct {
		name string
		d    *gatewayv1.Duration
	}{{"request", t.Request}, {"backendRequest", t.BackendRequest}} {
		if f.d == nil {
			continue
		}
		d, ok := parseDuration(*f.d)
		if !ok {
			return "", fmt.Sprintf("timeouts.%s: %q is not a duration such as 1h2m3s4ms", f.name, *f.d)
		}
		if d == 0 || d > syntax.MaxTimeoutDuration {
			d = syntax.MaxTimeoutDuration
		}
		if shortest == 0 || d < shortest {
			shortest = d
		}
	}
	if shortest == 0 {
		return "", ""
	}
	return fmt.Sprintf("%dms", (shortest+time.Millisecond-1)/time.Millisecond), ""
}

// parseDuration returns a Gateway API duration (GEP-2257: gatewayDuration),
// false when d is none.
func parseDuration(d gatewayv1.Duration) (time.Duration, bool) {
	v, err := time.ParseDuration(string(d))
	return v, err == nil && v >= 0 && gatewayDuration(string(d))
}

// gatewayDuration reports whether s has the Gateway API's duration form
// (GEP-2257): one to four numbers of at most 5 digits, each with a unit h,
// m, s or ms.
func gatewayDuration(s string) bool {
	parts := 0
	for s != "" {
		digits := 0
		for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
			digits++
		}
		if digits == 0 || digits > 5 {
			return false
		}
		s = s[digits:]
		switch {
		case strings.HasPrefix(s, "ms"):
			s = s[2:]
		case strings.HasPrefix(s, "h"), strings.HasPrefix(s, "m"), strings.HasPrefix(s, "s"):
			s = s[1:]
		default:
			return false
		}
		parts++
	}
	return parts >= 1 && parts <= 4
}
