package gateway

import (
	"fmt"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/headeractions"
)

// headerActions translates a rule's RequestHeaderModifier and
// ResponseHeaderModifier filters into the Route API's header actions (set
// replaces a header, remove deletes it; a value is text, so "%" is
// written "%%"), or says why they cannot be: "add" (appending a value) has
// no Route equivalent, and the Route API's rules (router/headeractions:
// reserved names, lengths, at most 20 actions a list) apply.
func headerActions(filters []gatewayv1.HTTPRouteFilter) (*routev1.RouteHTTPHeaders, string) {
	var out routev1.RouteHTTPHeaders
	for _, f := range filters {
		var m *gatewayv1.HTTPHeaderFilter
		list := &out.Actions.Request
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			m = f.RequestHeaderModifier
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			m, list = f.ResponseHeaderModifier, &out.Actions.Response
		default:
			continue
		}
		if m == nil {
			return nil, fmt.Sprintf("a %s filter without its settings", f.Type)
		}
		if len(m.Add) > 0 {
			return nil, fmt.Sprintf("%s: add (appending a value) is not served by this router yet", f.Type)
		}
		for _, h := range m.Set {
			*list = append(*list, routev1.RouteHTTPHeader{Name: string(h.Name), Action: routev1.RouteHTTPHeaderActionUnion{
				Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: strings.ReplaceAll(h.Value, "%", "%%")}}})
		}
		for _, name := range m.Remove {
			*list = append(*list, routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete}})
		}
	}
	if len(out.Actions.Request) == 0 && len(out.Actions.Response) == 0 {
		return nil, ""
	}
	for _, l := range [][]routev1.RouteHTTPHeader{out.Actions.Request, out.Actions.Response} {
		seen := map[string]bool{}
		for _, h := range l {
			lower := strings.ToLower(h.Name)
			if seen[lower] {
				return nil, fmt.Sprintf("header %s is modified twice (header names are compared without case)", h.Name)
			}
			seen[lower] = true
		}
	}
	for _, l := range []struct {
		d    headeractions.Direction
		list []routev1.RouteHTTPHeader
		name string
	}{{headeractions.Request, out.Actions.Request, "RequestHeaderModifier"}, {headeractions.Response, out.Actions.Response, "ResponseHeaderModifier"}} {
		if !headeractions.Check(l.d, l.list).OK() {
			return nil, fmt.Sprintf("%s: the router cannot apply it (a header it may not modify, e.g. Cookie or Set-Cookie; a name or value it cannot take; a name twice; more than %d headers)",
				l.name, headeractions.MaxActions)
		}
	}
	return &out, ""
}
