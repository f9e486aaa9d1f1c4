package gateway

import (
	"fmt"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

func TestRequestRedirectFiltersBecomeRedirectsTheRouterAnswers(t *testing.T) {
	tests := []struct {
		name, filters string
		want, why     string
	}{
		{"none", `[{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: a, value: b}]}}]`, "<nil>", ""},
		{"hostname, the default status", `[{type: RequestRedirect, requestRedirect: {hostname: example.org}}]`, "&{302  example.org 0  false}", ""},
		{"everything", `[{type: RequestRedirect, requestRedirect: {scheme: HTTPS, hostname: example.org, port: 8443, statusCode: 301, path: {type: ReplaceFullPath, replaceFullPath: /new}}}]`,
			"&{301 https example.org 8443 /new false}", ""},
		{"a status that is not a redirect", `[{type: RequestRedirect, requestRedirect: {statusCode: 200}}]`, "<nil>", "status code 200"},
		{"a prefix replaced", `[{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /p}}}]`, "&{302   0 /p true}", ""},
		{"a prefix replaced by nothing: by /", `[{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: ""}}}]`, "&{302   0 / true}", ""},
		{"a path modifier without its value", `[{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch}}}]`, "<nil>", "without its value"},
		{"a path the Location cannot take as it is", `[{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: "/a|b"}}}]`, "<nil>", "is not served"},
		{"two", `[{type: RequestRedirect, requestRedirect: {}}, {type: RequestRedirect, requestRedirect: {}}]`, "<nil>", "more than one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var filters []gatewayv1.HTTPRouteFilter
			if err := yaml.UnmarshalStrict([]byte(tc.filters), &filters); err != nil {
				t.Fatal(err)
			}
			rd, why := redirectOf(filters)
			if got := fmt.Sprint(rd); got != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("got %s %q, want %s %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestMatchValuesTheRouterCannotWriteSafelyAreRefused: header and query
// parameter values with braces, backslashes, quotes or controls, names
// outside the tokens, and methods that are not upper-case letters are not
// served (they would be written into haproxy.config's ACLs).
func TestMatchValuesTheRouterCannotWriteSafelyAreRefused(t *testing.T) {
	for _, tc := range []struct {
		match string
		ok    bool
	}{
		{`{headers: [{name: x-a, value: "-u"}], queryParams: [{name: q~1, value: "a b"}], method: GET}`, true},
		{`{headers: [{name: x-a, value: "}"}]}`, false},
		{`{headers: [{name: x-a, value: "a\\b"}]}`, false},
		{`{headers: [{name: x-a, value: "it's"}]}`, false},
		{`{headers: [{name: "x a", value: v}]}`, false},
		{`{queryParams: [{name: q, value: "{x"}]}`, false},
		{`{method: get}`, false},
	} {
		var m gatewayv1.HTTPRouteMatch
		if err := yaml.Unmarshal([]byte(tc.match), &m); err != nil {
			t.Fatal(err)
		}
		if _, why := matchOf(m); (why == "") != tc.ok {
			t.Errorf("%s: %q, want served %v", tc.match, why, tc.ok)
		}
	}
}
