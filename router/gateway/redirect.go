package gateway

import (
	"fmt"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/model"
)

// redirectOf returns the redirect of a rule's RequestRedirect filter (nil:
// none), or why it cannot be served. HAProxy answers it itself
// (model.Redirect): what is not set is the request's (scheme, hostname,
// path; the port of the scheme, or the listener's).
func redirectOf(filters []gatewayv1.HTTPRouteFilter) (*model.Redirect, string) {
	var rd *model.Redirect
	for _, f := range filters {
		if f.Type != gatewayv1.HTTPRouteFilterRequestRedirect {
			continue
		}
		c := f.RequestRedirect
		if c == nil {
			return nil, "a RequestRedirect filter without its settings"
		}
		if rd != nil {
			return nil, "more than one RequestRedirect filter"
		}
		rd = &model.Redirect{Code: 302}
		if c.StatusCode != nil {
			rd.Code = *c.StatusCode
		}
		switch rd.Code {
		case 301, 302, 303, 307, 308:
		default:
			return nil, fmt.Sprintf("RequestRedirect: status code %d is not a redirect the router can answer", rd.Code)
		}
		if c.Scheme != nil {
			rd.Scheme = strings.ToLower(*c.Scheme)
			if rd.Scheme != "http" && rd.Scheme != "https" {
				return nil, fmt.Sprintf("RequestRedirect: scheme %q is not served (http or https)", *c.Scheme)
			}
		}
		if c.Hostname != nil {
			rd.Host = strings.ToLower(string(*c.Hostname))
			if !safeRedirectText(rd.Host) {
				return nil, fmt.Sprintf("RequestRedirect: hostname %q is not served", *c.Hostname)
			}
		}
		if c.Port != nil {
			rd.Port = int(*c.Port)
		}
		if p := c.Path; p != nil {
			var ok bool
			if rd.Path, rd.ReplacePrefix, ok = pathModifier(p); !ok {
				return nil, fmt.Sprintf("RequestRedirect: a path modifier of type %s without its value", p.Type)
			}
			if !strings.HasPrefix(rd.Path, "/") || !safeRedirectText(rd.Path) {
				return nil, fmt.Sprintf("RequestRedirect: path %q is not served (it must start with / and hold none of the characters blank, quotes, #, ;, <, >, \\, |, (, ), comma, or controls)", rd.Path)
			}
		}
	}
	return rd, ""
}

// safeRedirectText reports whether s can be written into a map value, a
// sample fetch's argument and a Location header as it is: printable ASCII
// without blanks, quotes, "#", ";" (the runtime API's separator), "<",
// ">", "\", "|" (the value's field separator), parentheses or commas.
func safeRedirectText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"#;<>\\|`{}^(),'", c) >= 0 {
			return false
		}
	}
	return true
}
