package gateway

import (
	"fmt"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/headeractions"
	"github.com/openshift-router-go/router/router/model"
)

// headerAdds are the headers a rule adds (HTTPHeaderFilter's "add"), by
// direction: a value appended, which the Route API's actions cannot say.
type headerAdds struct {
	request, response []model.HeaderMatch
}

// headerActions translates a rule's RequestHeaderModifier and
// ResponseHeaderModifier filters (and a URLRewrite's hostname: Host set) into the Route API's header actions (set
// replaces a header, remove deletes it; a value is text, so "%" is
// written "%%") and the headers added, or says why they cannot be: the
// Route API's rules (router/headeractions: reserved names, lengths, at
// most 20 actions a list, adds counted) apply to all of them.
func headerActions(filters []gatewayv1.HTTPRouteFilter) (*routev1.RouteHTTPHeaders, headerAdds, string) {
	var out routev1.RouteHTTPHeaders
	var adds headerAdds
	// checked are the actions of each direction with the adds as sets,
	// for the Route API's rules.
	var checked [2][]routev1.RouteHTTPHeader
	for _, f := range filters {
		var m *gatewayv1.HTTPHeaderFilter
		list, added, dir := &out.Actions.Request, &adds.request, 0
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			m = f.RequestHeaderModifier
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			m, list, added, dir = f.ResponseHeaderModifier, &out.Actions.Response, &adds.response, 1
		case gatewayv1.HTTPRouteFilterURLRewrite:
			// A hostname rewritten: the Host header set.
			if f.URLRewrite == nil || f.URLRewrite.Hostname == nil {
				continue
			}
			h := string(*f.URLRewrite.Hostname)
			if len(validation.IsDNS1123Subdomain(h)) > 0 {
				return nil, headerAdds{}, fmt.Sprintf("URLRewrite: hostname %q is not a host name", h)
			}
			m = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "Host", Value: h}}}
		default:
			continue
		}
		if m == nil {
			return nil, headerAdds{}, fmt.Sprintf("a %s filter without its settings", f.Type)
		}
		for _, h := range m.Set {
			a := routev1.RouteHTTPHeader{Name: string(h.Name), Action: routev1.RouteHTTPHeaderActionUnion{
				Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: strings.ReplaceAll(h.Value, "%", "%%")}}}
			*list = append(*list, a)
			checked[dir] = append(checked[dir], a)
		}
		for _, h := range m.Add {
			value := strings.ReplaceAll(h.Value, "%", "%%")
			*added = append(*added, model.HeaderMatch{Name: string(h.Name), Value: value})
			checked[dir] = append(checked[dir], routev1.RouteHTTPHeader{Name: string(h.Name), Action: routev1.RouteHTTPHeaderActionUnion{
				Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: value}}})
		}
		for _, name := range m.Remove {
			a := routev1.RouteHTTPHeader{Name: name, Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete}}
			*list = append(*list, a)
			checked[dir] = append(checked[dir], a)
		}
	}
	if len(checked[0]) == 0 && len(checked[1]) == 0 {
		return nil, headerAdds{}, ""
	}
	for _, l := range checked {
		seen := map[string]bool{}
		for _, h := range l {
			lower := strings.ToLower(h.Name)
			if seen[lower] {
				return nil, headerAdds{}, fmt.Sprintf("header %s is modified twice (header names are compared without case)", h.Name)
			}
			seen[lower] = true
		}
	}
	for _, l := range []struct {
		d    headeractions.Direction
		list []routev1.RouteHTTPHeader
		name string
	}{{headeractions.Request, checked[0], "RequestHeaderModifier"}, {headeractions.Response, checked[1], "ResponseHeaderModifier"}} {
		if !headeractions.Check(l.d, l.list).OK() {
			return nil, headerAdds{}, fmt.Sprintf("%s: the router cannot apply it (a header it may not modify, e.g. Cookie or Set-Cookie; a name or value it cannot take; a name twice; more than %d headers)",
				l.name, headeractions.MaxActions)
		}
	}
	if len(out.Actions.Request) == 0 && len(out.Actions.Response) == 0 {
		return nil, adds, ""
	}
	return &out, adds, ""
}
