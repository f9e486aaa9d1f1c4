// Package annotations validates the route annotations the default template
// honours and turns them into typed values that are safe to write into
// haproxy.config: every string it returns is made only of characters that
// cannot end an HAProxy token, start a comment or a new line, or expand a
// variable. An invalid value is dropped (the route keeps the default) and
// reported as a Problem; it never affects another route.
package annotations

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/haproxy/syntax"
)

// Annotation names.
const (
	Balance                  = "haproxy.router.openshift.io/balance"
	DisableCookies           = "haproxy.router.openshift.io/disable_cookies"
	CookieName               = "router.openshift.io/cookie_name"
	HAProxyCookieName        = "haproxy.router.openshift.io/cookie_name"
	CookieSameSite           = "router.openshift.io/cookie-same-site"
	PodConcurrentConnections = "haproxy.router.openshift.io/pod-concurrent-connections"
	RateLimit                = "haproxy.router.openshift.io/rate-limit-connections"
	RateLimitConcurrentTCP   = "haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp"
	RateLimitRateHTTP        = "haproxy.router.openshift.io/rate-limit-connections.rate-http"
	RateLimitRateTCP         = "haproxy.router.openshift.io/rate-limit-connections.rate-tcp"
	Timeout                  = "haproxy.router.openshift.io/timeout"
	TimeoutTunnel            = "haproxy.router.openshift.io/timeout-tunnel"
	HealthCheckInterval      = "router.openshift.io/haproxy.health.check.interval"
	IPWhitelist              = "haproxy.router.openshift.io/ip_whitelist"
	IPAllowlist              = "haproxy.router.openshift.io/ip_allowlist"
	HSTSHeader               = "haproxy.router.openshift.io/hsts_header"
	RewriteTarget            = "haproxy.router.openshift.io/rewrite-target"
	SetForwardedHeaders      = "haproxy.router.openshift.io/set-forwarded-headers"
	H1AdjustCase             = "haproxy.router.openshift.io/h1-adjust-case"
	PoolSize                 = "router.openshift.io/pool-size"
)

// MaxPoolSize bounds the pool-size annotation (and ROUTER_MAX_DYNAMIC_SERVERS).
const MaxPoolSize = 256

// MaxAllowlistEntries bounds an IP allowlist; a longer list is invalid.
const MaxAllowlistEntries = 10000

// Route holds a route's validated annotation values; zero values mean
// "not set" (the template's default applies).
type Route struct {
	// Balance is source, roundrobin, leastconn or random.
	Balance string
	// DisableCookies is true when disable_cookies is true/TRUE.
	DisableCookies bool
	// CookieName is the sticky cookie's name ([A-Za-z0-9_-]+, at most 256).
	CookieName string
	// CookieSameSite is Lax, Strict or None (TLS routes only).
	CookieSameSite string
	// PodConcurrentConnections is each server's maxconn (0: no limit).
	PodConcurrentConnections int
	// RateLimit enables the per-source stick table; the three limits are
	// 0 when not set.
	RateLimit              bool
	RateLimitConcurrentTCP int
	RateLimitRateHTTP      int
	RateLimitRateTCP       int
	// Timeout, TimeoutTunnel and HealthCheckInterval are HAProxy time
	// values (digits and a unit) as written, clipped to syntax.MaxTimeout
	// (syntax.ClipTimeout).
	Timeout             string
	TimeoutTunnel       string
	HealthCheckInterval string
	// Allowlist holds the addresses and CIDRs of ip_allowlist (or
	// ip_whitelist) as written, without the invalid entries
	// (syntax.ParseIPList); nil means no restriction.
	Allowlist []string
	// HSTSHeader is the canonical Strict-Transport-Security value (edge and
	// re-encrypt routes only), e.g. "max-age=31536000;includeSubDomains".
	HSTSHeader string
	// RewriteTarget is the validated rewrite-target; RewritePrefix is the
	// route path without its trailing "/" that it replaces.
	RewriteTarget string
	RewritePrefix string
	// ForwardedHeaders is append, replace, never or if-none ("" = append).
	ForwardedHeaders string
	// H1AdjustCase is true when h1-adjust-case is true/TRUE (not on
	// passthrough routes): HAProxy restores the case of the headers of
	// ROUTER_H1_CASE_ADJUST on requests to this route's servers.
	H1AdjustCase bool
	// PoolSize (pool-size) is the number of spare server slots of the
	// route's backend, 0 to MaxPoolSize; nil means the router-wide default
	// (ROUTER_MAX_DYNAMIC_SERVERS).
	PoolSize *int
}

// Problem is an annotation value that was ignored, or (Partly) of which
// a part was ignored.
type Problem struct {
	Annotation string
	Value      string
	Reason     string
	Partly     bool
}

func (p Problem) String() string {
	if p.Partly {
		return fmt.Sprintf("annotation %s=%q partly ignored: %s", p.Annotation, p.Value, p.Reason)
	}
	return fmt.Sprintf("annotation %s=%q ignored: %s", p.Annotation, p.Value, p.Reason)
}

// Input is what Parse needs to know about the route besides annotations.
type Input struct {
	// Termination is "", "edge", "passthrough" or "reencrypt".
	Termination string
	// Path is the route's spec.path.
	Path string
}

var (
	cookieNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	// A URL path made of unreserved and sub-delimiter characters that are
	// all plain in an HAProxy argument and in a log-format string.
	safePathPattern = regexp.MustCompile(`^/[A-Za-z0-9/._~!*+,;=:@-]*$`)
	hstsMaxAge      = regexp.MustCompile(`^max-age=(?:"([0-9]{1,10})"|([0-9]{1,10}))$`)
)

// Parse validates the annotations of one route.
func Parse(ann map[string]string, in Input) (Route, []Problem) {
	var r Route
	var problems []Problem
	bad := func(name, reason string) {
		problems = append(problems, Problem{Annotation: name, Value: truncate(ann[name]), Reason: reason})
	}
	get := func(name string) (string, bool) {
		v, ok := ann[name]
		return v, ok
	}

	if v, ok := get(Balance); ok {
		switch v {
		case "source", "roundrobin", "leastconn", "random":
			r.Balance = v
		default:
			bad(Balance, "not one of source, roundrobin, leastconn, random")
		}
	}
	if v, ok := get(DisableCookies); ok {
		r.DisableCookies = isTrue(v)
	}
	for _, name := range []string{CookieName, HAProxyCookieName} {
		v, ok := get(name)
		if !ok {
			continue
		}
		if !cookieNamePattern.MatchString(v) {
			bad(name, "a cookie name is 1-256 letters, digits, '_' or '-'")
			continue
		}
		if r.CookieName == "" {
			r.CookieName = v
		}
	}
	if v, ok := get(CookieSameSite); ok {
		switch strings.ToLower(v) {
		case "lax":
			r.CookieSameSite = "Lax"
		case "strict":
			r.CookieSameSite = "Strict"
		case "none":
			r.CookieSameSite = "None"
		default:
			bad(CookieSameSite, "not one of Lax, Strict, None")
		}
	}
	if v, ok := get(PodConcurrentConnections); ok {
		if n, err := nonNegative(v); err != nil {
			bad(PodConcurrentConnections, err.Error())
		} else {
			r.PodConcurrentConnections = n
		}
	}
	if v, ok := get(PoolSize); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 0 || n > MaxPoolSize {
			bad(PoolSize, fmt.Sprintf("not a whole number between 0 and %d", MaxPoolSize))
		} else {
			r.PoolSize = &n
		}
	}
	if v, ok := get(RateLimit); ok {
		r.RateLimit = isTrue(v)
	}
	for _, l := range []struct {
		name string
		dst  *int
	}{{RateLimitConcurrentTCP, &r.RateLimitConcurrentTCP}, {RateLimitRateHTTP, &r.RateLimitRateHTTP}, {RateLimitRateTCP, &r.RateLimitRateTCP}} {
		v, ok := get(l.name)
		if !ok {
			continue
		}
		n, err := nonNegative(v)
		if err != nil {
			bad(l.name, err.Error())
			continue
		}
		*l.dst = n
	}
	if !r.RateLimit {
		r.RateLimitConcurrentTCP, r.RateLimitRateHTTP, r.RateLimitRateTCP = 0, 0, 0
	}
	for _, t := range []struct {
		name string
		dst  *string
	}{{Timeout, &r.Timeout}, {TimeoutTunnel, &r.TimeoutTunnel}, {HealthCheckInterval, &r.HealthCheckInterval}} {
		v, ok := get(t.name)
		if !ok {
			continue
		}
		d, _, err := syntax.ClipTimeout(v)
		if err != nil {
			bad(t.name, err.Error())
			continue
		}
		*t.dst = d
	}
	for _, name := range []string{IPAllowlist, IPWhitelist} {
		v, ok := get(name)
		if !ok {
			continue
		}
		list, invalid, err := ParseIPList(v)
		if err != nil {
			bad(name, err.Error())
			continue
		}
		if len(list) == 0 {
			bad(name, "no entry is an IP address or CIDR")
			continue
		}
		if len(invalid) > 0 {
			problems = append(problems, Problem{Annotation: name, Value: truncate(v), Partly: true,
				Reason: fmt.Sprintf("%d entries are not an IP address or CIDR and are left out (first %q), as in OpenShift", len(invalid), truncate(invalid[0]))})
		}
		if r.Allowlist == nil {
			r.Allowlist = list
		}
	}
	if v, ok := get(HSTSHeader); ok {
		switch {
		case in.Termination != "edge" && in.Termination != "reencrypt":
			bad(HSTSHeader, "only edge and reencrypt routes send Strict-Transport-Security")
		default:
			h, err := ParseHSTS(v)
			if err != nil {
				bad(HSTSHeader, err.Error())
			} else {
				r.HSTSHeader = h
			}
		}
	}
	if v, ok := get(RewriteTarget); ok {
		prefix := strings.TrimSuffix(in.Path, "/")
		switch {
		case in.Termination == "passthrough":
			bad(RewriteTarget, "passthrough routes are not HTTP")
		case !safePathPattern.MatchString(v):
			bad(RewriteTarget, "must be a path starting with '/' of letters, digits and /._~!*+,;=:@-")
		case prefix != "" && !safePathPattern.MatchString(prefix):
			bad(RewriteTarget, "the route's path has characters rewrite-target cannot match safely")
		default:
			r.RewriteTarget = v
			r.RewritePrefix = prefix
		}
	}
	if v, ok := get(SetForwardedHeaders); ok {
		switch v {
		case "append", "replace", "never", "if-none":
			r.ForwardedHeaders = v
		default:
			bad(SetForwardedHeaders, "not one of append, replace, never, if-none")
		}
	}
	if v, ok := get(H1AdjustCase); ok {
		switch {
		case in.Termination == "passthrough":
			if isTrue(v) {
				bad(H1AdjustCase, "passthrough routes are not HTTP")
			}
		default:
			r.H1AdjustCase = isTrue(v)
		}
	}
	return r, problems
}

// RewriteTargetTrimmed is RewriteTarget without its trailing "/", the
// prefix put in front of the rest of a path that continues with "/".
func (r Route) RewriteTargetTrimmed() string { return strings.TrimSuffix(r.RewriteTarget, "/") }

// RewritePrefixLen is the number of bytes of the request path the rewrite
// replaces.
func (r Route) RewritePrefixLen() int { return len(r.RewritePrefix) }

func isTrue(v string) bool { return v == "true" || v == "TRUE" }

func nonNegative(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("not a whole number between 0 and %d", math.MaxInt32)
	}
	return n, nil
}

// ParseIPList parses an allowlist annotation: syntax.ParseIPList (valid
// entries as written, invalid ones dropped, a list with leading or
// trailing blanks or no entry ignored, as OpenShift does), and a list of
// more than MaxAllowlistEntries entries is ignored as well.
func ParseIPList(v string) (valid, invalid []string, err error) {
	if n := len(strings.Fields(v)); n > MaxAllowlistEntries {
		return nil, nil, fmt.Errorf("more than %d entries", MaxAllowlistEntries)
	}
	return syntax.ParseIPList(v)
}

// ParseHSTS validates a Strict-Transport-Security value: a required
// max-age=<seconds> and optional includeSubDomains and preload, separated
// by ";" (case-insensitive, each at most once). It returns the canonical
// form "max-age=N[;includeSubDomains][;preload]".
func ParseHSTS(v string) (string, error) {
	var maxAge string
	var sub, preload bool
	parts := strings.Split(v, ";")
	if len(parts) > 3 {
		return "", fmt.Errorf("too many directives")
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		lp := strings.ToLower(p)
		switch {
		case lp == "includesubdomains" && !sub:
			sub = true
		case lp == "preload" && !preload:
			preload = true
		case maxAge == "" && hstsMaxAge.MatchString(lp):
			m := hstsMaxAge.FindStringSubmatch(lp)
			maxAge = m[1] + m[2]
		default:
			return "", fmt.Errorf("%q is not max-age=<seconds>, includeSubDomains or preload (each once)", truncate(p))
		}
	}
	if maxAge == "" {
		return "", fmt.Errorf("max-age is required")
	}
	n, _ := strconv.ParseUint(maxAge, 10, 64)
	out := "max-age=" + strconv.FormatUint(n, 10)
	if sub {
		out += ";includeSubDomains"
	}
	if preload {
		out += ";preload"
	}
	return out, nil
}

func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// AllowlistFileThreshold is the number of allowlist entries above which
// the list is written to a file (WorkingDir/router/allowlists/<key>.txt)
// that the ACL reads with -f, as OpenShift does (more than
// syntax.MaxInlineAllowlist, 61, entries).
const AllowlistFileThreshold = syntax.MaxInlineAllowlist

// AllowlistInFile reports whether Allowlist is long enough to be written
// to a file rather than inline.
func (r Route) AllowlistInFile() bool { return len(r.Allowlist) > AllowlistFileThreshold }

// allowlistLineEntries bounds the addresses on one "acl" line (HAProxy
// accepts at most 64 words on a line).
const allowlistLineEntries = 50

// AllowlistLines splits Allowlist into groups short enough for one HAProxy
// line each; ACL lines with the same name are ORed.
func (r Route) AllowlistLines() [][]string {
	var out [][]string
	for i := 0; i < len(r.Allowlist); i += allowlistLineEntries {
		out = append(out, r.Allowlist[i:min(i+allowlistLineEntries, len(r.Allowlist))])
	}
	return out
}
