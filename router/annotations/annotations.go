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
	p := &parser{ann: ann, in: in}
	p.oneOf(Balance, &p.r.Balance, "source", "roundrobin", "leastconn", "random")
	p.flag(DisableCookies, &p.r.DisableCookies)
	p.cookieName()
	p.oneOfAnyCase(CookieSameSite, &p.r.CookieSameSite, "Lax", "Strict", "None")
	p.number(PodConcurrentConnections, &p.r.PodConcurrentConnections)
	p.poolSize()
	p.rateLimits()
	p.timeout(Timeout, &p.r.Timeout)
	p.timeout(TimeoutTunnel, &p.r.TimeoutTunnel)
	p.timeout(HealthCheckInterval, &p.r.HealthCheckInterval)
	p.allowlist()
	p.hsts()
	p.rewriteTarget()
	p.oneOf(SetForwardedHeaders, &p.r.ForwardedHeaders, "append", "replace", "never", "if-none")
	p.h1AdjustCase()
	return p.r, p.problems
}

// parser is one run of Parse: the route's annotations and what it knows
// about the route, the values read so far and the problems found.
type parser struct {
	ann      map[string]string
	in       Input
	r        Route
	problems []Problem
}

// bad reports that annotation name is ignored, for reason.
func (p *parser) bad(name, reason string) {
	p.problems = append(p.problems, Problem{Annotation: name, Value: truncate(p.ann[name]), Reason: reason})
}

// partly reports that a part of annotation name is ignored, for reason.
func (p *parser) partly(name, reason string) {
	p.problems = append(p.problems, Problem{Annotation: name, Value: truncate(p.ann[name]), Reason: reason, Partly: true})
}

// notHTTP is why an annotation about HTTP is ignored on a passthrough
// route.
const notHTTP = "passthrough routes are not HTTP"

// http reports whether the router sees the route's HTTP requests (it is
// not a passthrough route).
func (in Input) http() bool { return in.Termination != "passthrough" }

// terminatesTLS reports whether the router answers the route's clients
// over TLS itself (edge and re-encrypt routes).
func (in Input) terminatesTLS() bool {
	return in.Termination == "edge" || in.Termination == "reencrypt"
}

// flag sets *dst to whether annotation name is true (isTrue), when it is
// set.
func (p *parser) flag(name string, dst *bool) {
	if v, ok := p.ann[name]; ok {
		*dst = isTrue(v)
	}
}

// oneOf sets *dst to annotation name when it is one of values, and reports
// it otherwise.
func (p *parser) oneOf(name string, dst *string, values ...string) {
	p.choose(name, dst, func(s string) string { return s }, values)
}

// oneOfAnyCase sets *dst to the one of values that annotation name is,
// whatever the case of its letters, and reports it when there is none.
func (p *parser) oneOfAnyCase(name string, dst *string, values ...string) {
	p.choose(name, dst, strings.ToLower, values)
}

// choose sets *dst to the one of values that annotation name is once both
// are passed through fold, and reports it when there is none.
func (p *parser) choose(name string, dst *string, fold func(string) string, values []string) {
	v, ok := p.ann[name]
	if !ok {
		return
	}
	for _, c := range values {
		if fold(v) == fold(c) {
			*dst = c
			return
		}
	}
	p.bad(name, "not one of "+strings.Join(values, ", "))
}

// cookieName reads the sticky cookie's name: cookie_name, or else
// haproxy.router.openshift.io/cookie_name; each invalid one is reported.
func (p *parser) cookieName() {
	for _, name := range []string{CookieName, HAProxyCookieName} {
		v, ok := p.ann[name]
		if !ok {
			continue
		}
		if !cookieNamePattern.MatchString(v) {
			p.bad(name, "a cookie name is 1-256 letters, digits, '_' or '-'")
			continue
		}
		if p.r.CookieName == "" {
			p.r.CookieName = v
		}
	}
}

// number sets *dst to annotation name, a whole number from 0 to
// math.MaxInt32, when it is set and valid, and reports it when it is not
// valid.
func (p *parser) number(name string, dst *int) {
	v, ok := p.ann[name]
	if !ok {
		return
	}
	n, err := wholeNumber(v, math.MaxInt32)
	if err != nil {
		p.bad(name, err.Error())
		return
	}
	*dst = n
}

// poolSize reads pool-size, a whole number from 0 to MaxPoolSize (blanks
// around it allowed).
func (p *parser) poolSize() {
	v, ok := p.ann[PoolSize]
	if !ok {
		return
	}
	n, err := wholeNumber(strings.TrimSpace(v), MaxPoolSize)
	if err != nil {
		p.bad(PoolSize, err.Error())
		return
	}
	p.r.PoolSize = &n
}

// rateLimits reads rate-limit-connections and its three limits; the limits
// stay 0 when rate limiting is not on.
func (p *parser) rateLimits() {
	p.flag(RateLimit, &p.r.RateLimit)
	p.number(RateLimitConcurrentTCP, &p.r.RateLimitConcurrentTCP)
	p.number(RateLimitRateHTTP, &p.r.RateLimitRateHTTP)
	p.number(RateLimitRateTCP, &p.r.RateLimitRateTCP)
	if !p.r.RateLimit {
		p.r.RateLimitConcurrentTCP, p.r.RateLimitRateHTTP, p.r.RateLimitRateTCP = 0, 0, 0
	}
}

// timeout sets *dst to annotation name, an HAProxy time value clipped to
// syntax.MaxTimeout, when it is set and valid, and reports it when it is
// not valid.
func (p *parser) timeout(name string, dst *string) {
	v, ok := p.ann[name]
	if !ok {
		return
	}
	d, _, err := syntax.ClipTimeout(v)
	if err != nil {
		p.bad(name, err.Error())
		return
	}
	*dst = d
}

// allowlist reads ip_allowlist, or else ip_whitelist: a list with no valid
// entry is ignored, the invalid entries of a list are left out; each is
// reported.
func (p *parser) allowlist() {
	for _, name := range []string{IPAllowlist, IPWhitelist} {
		v, ok := p.ann[name]
		if !ok {
			continue
		}
		list, invalid, err := ParseIPList(v)
		if err != nil {
			p.bad(name, err.Error())
			continue
		}
		if len(list) == 0 {
			p.bad(name, "no entry is an IP address or CIDR")
			continue
		}
		if len(invalid) > 0 {
			p.partly(name, fmt.Sprintf("%d entries are not an IP address or CIDR and are left out (first %q), as in OpenShift", len(invalid), truncate(invalid[0])))
		}
		if p.r.Allowlist == nil {
			p.r.Allowlist = list
		}
	}
}

// hsts reads hsts_header (ParseHSTS), on edge and re-encrypt routes only.
func (p *parser) hsts() {
	v, ok := p.ann[HSTSHeader]
	if !ok {
		return
	}
	if !p.in.terminatesTLS() {
		p.bad(HSTSHeader, "only edge and reencrypt routes send Strict-Transport-Security")
		return
	}
	h, err := ParseHSTS(v)
	if err != nil {
		p.bad(HSTSHeader, err.Error())
		return
	}
	p.r.HSTSHeader = h
}

// SafePath reports whether p is a path rewrite-target takes: "/" and
// letters, digits and /._~!*+,;=:@- (written into haproxy.config as it is).
func SafePath(p string) bool { return safePathPattern.MatchString(p) }

// rewriteTarget reads rewrite-target: a safe path (safePathPattern), on an
// HTTP route whose own path is safe too (it becomes RewritePrefix).
func (p *parser) rewriteTarget() {
	v, ok := p.ann[RewriteTarget]
	if !ok {
		return
	}
	prefix := strings.TrimSuffix(p.in.Path, "/")
	switch {
	case !p.in.http():
		p.bad(RewriteTarget, notHTTP)
	case !safePathPattern.MatchString(v):
		p.bad(RewriteTarget, "must be a path starting with '/' of letters, digits and /._~!*+,;=:@-")
	case prefix != "" && !safePathPattern.MatchString(prefix):
		p.bad(RewriteTarget, "the route's path has characters rewrite-target cannot match safely")
	default:
		p.r.RewriteTarget = v
		p.r.RewritePrefix = prefix
	}
}

// h1AdjustCase reads h1-adjust-case; on a passthrough route it stays off,
// and is reported when it asks for it.
func (p *parser) h1AdjustCase() {
	v, ok := p.ann[H1AdjustCase]
	if !ok {
		return
	}
	if p.in.http() {
		p.r.H1AdjustCase = isTrue(v)
	} else if isTrue(v) {
		p.bad(H1AdjustCase, notHTTP)
	}
}

// PoolSizeOr is the number of spare server slots the route asks for: its
// pool-size, or def (the router-wide default) when it has none.
func (r Route) PoolSizeOr(def int) int {
	if r.PoolSize != nil {
		return *r.PoolSize
	}
	return def
}

// RewriteTargetTrimmed is RewriteTarget without its trailing "/", the
// prefix put in front of the rest of a path that continues with "/".
func (r Route) RewriteTargetTrimmed() string { return strings.TrimSuffix(r.RewriteTarget, "/") }

// RewritePrefixLen is the number of bytes of the request path the rewrite
// replaces.
func (r Route) RewritePrefixLen() int { return len(r.RewritePrefix) }

// isTrue reports whether a boolean annotation is on: "true" or "TRUE".
func isTrue(v string) bool { return v == "true" || v == "TRUE" }

// wholeNumber parses v, a whole number from 0 to limit.
func wholeNumber(v string, limit int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > limit {
		return 0, fmt.Errorf("not a whole number between 0 and %d", limit)
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
// OpenShift's template writes the list to a file that the ACL reads with
// -f (more than syntax.MaxInlineAllowlist, 61, entries); its helpers
// (validateHAProxyAllowlist) still draw the line there.
const AllowlistFileThreshold = syntax.MaxInlineAllowlist

// AllowlistInFile reports whether Allowlist is written to a file
// (WorkingDir/router/allowlists/<key>.txt) for the ACL to read with -f:
// every list that has an entry, so that a changed list is applied
// through the runtime API (add acl, del acl) rather than by a reload.
func (r Route) AllowlistInFile() bool { return len(r.Allowlist) > 0 }

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
