package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBackendRefFiltersSharedByEveryBackendAreTheRules: a rule's
// backendRefs' filters (header modifiers) are served when every
// backendRef has the same ones — after the rule's own, as the spec orders
// them — and refused with the reason otherwise (a rule's backendRefs are
// one HAProxy backend's servers); the HTTPRoute object is not changed.
func TestBackendRefFiltersSharedByEveryBackendAreTheRules(t *testing.T) {
	set := func(name, value string) string {
		return `[{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: ` + name + `, value: ` + value + `}]}}]`
	}
	for _, tc := range []struct{ name, rule, want string }{
		{"one backendRef", `{backendRefs: [{name: web, port: 8080, filters: ` + set("X-Backend", "web") + `}]}`,
			`{"actions":{"response":null,"request":[{"name":"X-Backend","action":{"type":"Set","set":{"value":"web"}}}]}}`},
		{"the same on both", `{backendRefs: [{name: web, port: 8080, weight: 1, filters: ` + set("X-B", "v") + `}, {name: web, port: 8080, weight: 2, filters: ` + set("X-B", "v") + `}]}`,
			`{"actions":{"response":null,"request":[{"name":"X-B","action":{"type":"Set","set":{"value":"v"}}}]}}`},
		{"after the rule's own", `{filters: ` + set("X-Rule", "r") + `, backendRefs: [{name: web, port: 8080, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [X-Secret]}}]}]}`,
			`{"actions":{"response":[{"name":"X-Secret","action":{"type":"Delete"}}],"request":[{"name":"X-Rule","action":{"type":"Set","set":{"value":"r"}}}]}}`},
		{"different ones", `{backendRefs: [{name: web, port: 8080, filters: ` + set("X-B", "one") + `}, {name: web, port: 8080, filters: ` + set("X-B", "two") + `}]}`,
			"rule 0: backendRefs with filters of their own that differ are not served (a rule's backendRefs share one HAProxy backend)"},
		{"on one backendRef only", `{backendRefs: [{name: web, port: 8080, filters: ` + set("X-B", "one") + `}, {name: web, port: 8080}]}`,
			"rule 0: backendRefs with filters of their own that differ are not served (a rule's backendRefs share one HAProxy backend)"},
		{"a mirror", `{backendRefs: [{name: web, port: 8080, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: web, port: 8080}}}]}]}`,
			"rule 0: backendRef filters of type RequestMirror are not served"},
		{"the rule's header again", `{filters: ` + set("X-B", "rule") + `, backendRefs: [{name: web, port: 8080, filters: ` + set("x-b", "backend") + `}]}`,
			"rule 0: header x-b is modified twice (header names are compared without case)"},
	} {
		v := ruleView(t, `[`+tc.rule+`]`)
		hr := v.HTTPRoutes()[0]
		before, _ := json.Marshal(hr.Spec)
		res, got := translateView(v)
		if len(res.Routes) == 1 {
			b, _ := json.Marshal(res.Routes[0].Spec.HTTPHeaders)
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if after, _ := json.Marshal(hr.Spec); string(after) != string(before) {
			t.Errorf("%s: the HTTPRoute changed:\n%s\nwas\n%s", tc.name, after, before)
		}
		if strings.Contains(got, "not served by this router yet") {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
}
