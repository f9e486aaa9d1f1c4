package gateway

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/headeractions"
	"github.com/openshift-router-go/router/router/model"
)

// The CRD's bounds of an HTTPCORSFilter, checked again here: the
// manifests source has no API server to check them.
const (
	maxCORSOrigins = 64
	maxCORSMethods = 9
	maxCORSHeaders = 64
	maxCORSName    = 256
	maxCORSOrigin  = 253
	// defaultCORSMaxAge is Access-Control-Max-Age when maxAge is unset
	// (the CRD's default).
	defaultCORSMaxAge = 5
	// maxCORSHeaderBytes bounds the values of Access-Control-Allow-Headers
	// and -Expose-Headers together: a preflight's answer carries both,
	// and HAProxy answers 500 for a response whose headers do not fit
	// its buffer (16 KiB by default, the request's headers in it too).
	maxCORSHeaderBytes = 4096
)

// corsOriginPattern is the CRD's pattern of an allowed origin: "*", or a
// scheme, a host (labels, the first of them may be "*", or "*" alone) and
// an optional port.
var corsOriginPattern = regexp.MustCompile(`^(https?)://((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?$`)

// corsMethods are the methods allowMethods takes (the CRD's enum).
var corsMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true, "*": true}

// corsOf translates a rule's CORS filter (nil without one), or says why
// it is not served.
func corsOf(filters []gatewayv1.HTTPRouteFilter) (*model.CORS, string) {
	var f *gatewayv1.HTTPCORSFilter
	for _, x := range filters {
		if x.Type != gatewayv1.HTTPRouteFilterCORS {
			continue
		}
		if f != nil {
			return nil, "more than one CORS filter"
		}
		if x.CORS == nil {
			return nil, "a CORS filter without its settings"
		}
		f = x.CORS
	}
	if f == nil {
		return nil, ""
	}
	out := &model.CORS{Credentials: f.AllowCredentials != nil && *f.AllowCredentials, MaxAge: f.MaxAge}
	switch {
	case out.MaxAge < 0:
		return nil, fmt.Sprintf("CORS: maxAge %d: at least 1", out.MaxAge)
	case out.MaxAge == 0: // unset (the CRD's default)
		out.MaxAge = defaultCORSMaxAge
	}
	if n := listBytes(f.AllowHeaders) + listBytes(f.ExposeHeaders); n > maxCORSHeaderBytes {
		return nil, fmt.Sprintf("CORS: allowHeaders and exposeHeaders are %d bytes as header values, more than the %d the router sends (a response's headers must fit HAProxy's buffer)", n, maxCORSHeaderBytes)
	}
	if why := corsOrigins(out, f.AllowOrigins); why != "" {
		return nil, "CORS: " + why
	}
	methods := make([]string, len(f.AllowMethods))
	for i, m := range f.AllowMethods {
		if !corsMethods[string(m)] {
			return nil, fmt.Sprintf("CORS: allowMethods: %q is not a method it takes", m)
		}
		methods[i] = string(m)
	}
	if len(methods) > maxCORSMethods {
		return nil, fmt.Sprintf("CORS: allowMethods: more than %d", maxCORSMethods)
	}
	var why string
	if out.AllowMethods, out.AnyMethod, why = corsList("allowMethods", methods); why != "" {
		return nil, why
	}
	if out.AllowHeaders, out.AnyHeader, why = corsList("allowHeaders", headerNames(f.AllowHeaders)); why != "" {
		return nil, why
	}
	expose, any, why := corsList("exposeHeaders", headerNames(f.ExposeHeaders))
	if why != "" {
		return nil, why
	}
	switch {
	case any && !out.Credentials:
		out.ExposeHeaders = syntax.LogFormat("*")
	case !any:
		// (With credentials, "*" would name a header "*": none is
		// exposed beyond the safelisted ones.)
		out.ExposeHeaders = expose
	}
	return out, ""
}

// corsOrigins puts the allowed origins into c, or says why not. No
// origin is matched with a regular expression but one: HAProxy compiles
// each expression of each route's backend apart (kilobytes each), where
// the strings an Origin begins or ends with cost what they are long.
func corsOrigins(c *model.CORS, origins []gatewayv1.CORSOrigin) string {
	if len(origins) > maxCORSOrigins {
		return fmt.Sprintf("allowOrigins: more than %d", maxCORSOrigins)
	}
	var exact []string
	ends := map[string][]string{} // by scheme
	for _, o := range origins {
		if o == "*" {
			c.AnyOrigin = true
			continue
		}
		m := corsOriginPattern.FindStringSubmatch(string(o))
		if len(o) > maxCORSOrigin || m == nil {
			return fmt.Sprintf("allowOrigins: %q is not an origin (scheme://host[:port], the host's first label may be *)", o)
		}
		scheme, host, port := strings.ToLower(m[1]), strings.ToLower(m[2]), m[6]
		if port != "" {
			p, err := strconv.Atoi(port)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Sprintf("allowOrigins: %q: port %s is not from 1 to 65535", o, port)
			}
			port = strconv.Itoa(p) // ("0443" is 443)
		}
		def := map[string]string{"http": "80", "https": "443"}[scheme]
		// Without a port, or with the scheme's, an Origin with or
		// without the port is the same origin.
		ports := []string{":" + port}
		if port == "" || port == def {
			ports = []string{"", ":" + def}
		}
		switch {
		case !strings.Contains(host, "*"):
			for _, p := range ports {
				exact = append(exact, syntax.Quote(scheme+"://"+host+p))
			}
		case host == "*" && len(ports) == 2:
			// Any host on the scheme's port: an Origin without a port
			// or with that one (an expression, one a scheme at most).
			c.AnyHostPatterns = appendNew(c.AnyHostPatterns, syntax.Quote("^"+scheme+"://(?:[^:/\\[]+|\\[[0-9a-f:.]+\\])(?::"+def+")?$"))
		default:
			// "*." takes one or more labels to its left: an Origin of
			// the scheme ending with the rest of the host and the port
			// (for "*" alone, the port).
			for _, p := range ports {
				if end := strings.TrimPrefix(host, "*") + p; end != "" {
					ends[scheme] = append(ends[scheme], syntax.Quote(end))
				}
			}
		}
	}
	c.Origins = groups(exact)
	for _, scheme := range []string{"http", "https"} {
		if len(ends[scheme]) > 0 {
			c.Wildcards = append(c.Wildcards, model.CORSWildcards{Scheme: scheme, Ends: groups(ends[scheme])})
		}
	}
	if c.AnyOrigin && (len(c.Origins) > 0 || len(c.Wildcards) > 0 || len(c.AnyHostPatterns) > 0) {
		return "allowOrigins: \"*\" beside other origins"
	}
	return ""
}

// appendNew appends s to list unless it is there.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// groups cuts words into groups of at most model.CORSGroup (nil for
// none).
func groups(words []string) [][]string {
	var out [][]string
	for len(words) > 0 {
		n := min(len(words), model.CORSGroup)
		out = append(out, words[:n:n])
		words = words[n:]
	}
	return out
}

// listBytes is the length of names as a header value (", " between).
func listBytes(names []gatewayv1.HTTPHeaderName) int {
	n := 0
	for _, h := range names {
		n += len(h) + 2
	}
	return n
}

// headerNames returns names as strings.
func headerNames(names []gatewayv1.HTTPHeaderName) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return out
}

// corsList writes a list of methods or header names as a header value
// (", " between them, a log-format-inert haproxy.config word; "" for
// none), or reports "*" (any), or says why the list is not taken.
func corsList(field string, names []string) (value string, any bool, why string) {
	if len(names) > maxCORSHeaders {
		return "", false, fmt.Sprintf("CORS: %s: more than %d", field, maxCORSHeaders)
	}
	for _, n := range names {
		if len(n) > maxCORSName || !headeractions.IsName(n) { // (the CRD's HTTPHeaderName: a token)
			return "", false, fmt.Sprintf("CORS: %s: %q is not a header name", field, n)
		}
		if n == "*" {
			any = true
		}
	}
	if any && len(names) > 1 {
		return "", false, fmt.Sprintf("CORS: %s: \"*\" beside other names", field)
	}
	if any || len(names) == 0 {
		return "", any, ""
	}
	return syntax.LogFormat(strings.Join(names, ", ")), false, ""
}
