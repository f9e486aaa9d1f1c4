package gateway

import (
	"fmt"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/model"
)

// TestCORSFilterIsTranslatedOrRefused: a rule's CORS filter becomes the
// route's model.CORS — exact origins with and without the scheme's
// default port, "*." wildcards as patterns of host-name characters, lists
// as header values inert as log-format ("%" doubled), "*" as echo, maxAge 5
// by default, "*" exposed only without credentials — and what the CRD
// would refuse (the manifests source has no API server) is refused with
// the reason, the rule unserved.
func TestCORSFilterIsTranslatedOrRefused(t *testing.T) {
	many := func(n int, f string) string {
		var l []string
		for i := 0; i < n; i++ {
			l = append(l, fmt.Sprintf(f, i))
		}
		return "[" + strings.Join(l, ", ") + "]"
	}
	for _, tc := range []struct{ name, cors, want string }{
		{"exact origins, default and other ports", `{allowOrigins: ["https://www.Foo.com", "http://a.test:80", "http://b.test:8080"]}`,
			`any=false exact=[[https://www.foo.com https://www.foo.com:443 http://a.test http://a.test:80 http://b.test:8080]] ends=[] anyhost=[] methods= headers= expose= creds=false age=5`},
		{"wildcard origins", `{allowOrigins: ["https://*.bar.com", "http://*.x-y.test:8080", "https://*", "http://*", "https://*:8443", "https://*:443"]}`,
			`any=false exact=[] ends=[{http [[.x-y.test:8080]]} {https [[.bar.com .bar.com:443 :8443]]}] anyhost=["^https://(?:[^:/\\[]+|\\[[0-9a-f:.]+\\])(?::443)?\$" "^http://(?:[^:/\\[]+|\\[[0-9a-f:.]+\\])(?::80)?\$"] methods= headers= expose= creds=false age=5`},
		{"lists", `{allowOrigins: ["*"], allowMethods: [GET, OPTIONS], allowHeaders: [x-a, "x-100%"], exposeHeaders: [x-c], allowCredentials: true, maxAge: 3600}`,
			`any=true exact=[] ends=[] anyhost=[] methods="GET, OPTIONS" headers="x-a, x-100%%" expose=x-c creds=true age=3600`},
		{"wildcards", `{allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], exposeHeaders: ["*"]}`,
			`any=true exact=[] ends=[] anyhost=[] methods=(echo) headers=(echo) expose="*" creds=false age=5`},
		{"no exposed * with credentials", `{allowOrigins: ["*"], exposeHeaders: ["*"], allowCredentials: true}`,
			`any=true exact=[] ends=[] anyhost=[] methods= headers= expose= creds=true age=5`},
		{"a port with a leading zero", `{allowOrigins: ["https://a.test:0443", "http://b.test:08080"]}`,
			`any=false exact=[[https://a.test https://a.test:443 http://b.test:8080]] ends=[] anyhost=[] methods= headers= expose= creds=false age=5`},
		{"a port beyond 65535", `{allowOrigins: ["https://a.test:70000"]}`, `rule 0: CORS: allowOrigins: "https://a.test:70000": port 70000 is not from 1 to 65535`},
		{"port 0", `{allowOrigins: ["https://*.a.test:0"]}`, `rule 0: CORS: allowOrigins: "https://*.a.test:0": port 0 is not from 1 to 65535`},
		{"another scheme", `{allowOrigins: ["ftp://a.test"]}`, `rule 0: CORS: allowOrigins: "ftp://a.test" is not an origin (scheme://host[:port], the host's first label may be *)`},
		{"a path", `{allowOrigins: ["https://a.test/x"]}`, `rule 0: CORS: allowOrigins: "https://a.test/x" is not an origin (scheme://host[:port], the host's first label may be *)`},
		{"a wildcard inside", `{allowOrigins: ["https://a.*.test"]}`, `rule 0: CORS: allowOrigins: "https://a.*.test" is not an origin (scheme://host[:port], the host's first label may be *)`},
		{"* beside origins", `{allowOrigins: ["*", "https://a.test"]}`, `rule 0: CORS: allowOrigins: "*" beside other origins`},
		{"no origin", `{allowMethods: [GET]}`, `any=false exact=[] ends=[] anyhost=[] methods=GET headers= expose= creds=false age=5`},
		{"a negative maxAge", `{allowOrigins: ["*"], maxAge: -1}`, `rule 0: CORS: maxAge -1: at least 1`},
		{"header lists too long", `{allowOrigins: ["*"], allowHeaders: ` + many(64, "x-%02d-"+strings.Repeat("a", 30)) + `, exposeHeaders: ` + many(64, "y-%02d-"+strings.Repeat("a", 30)) + `}`,
			`rule 0: CORS: allowHeaders and exposeHeaders are 4736 bytes as header values, more than the 4096 the router sends (a response's headers must fit HAProxy's buffer)`},
		{"too many origins", `{allowOrigins: ` + many(65, `"https://a%d.test"`) + `}`, `rule 0: CORS: allowOrigins: more than 64`},
		{"an unknown method", `{allowOrigins: ["*"], allowMethods: [FETCH]}`, `rule 0: CORS: allowMethods: "FETCH" is not a method it takes`},
		{"* beside methods", `{allowOrigins: ["*"], allowMethods: ["*", GET]}`, `rule 0: CORS: allowMethods: "*" beside other names`},
		{"a header name with a blank", `{allowOrigins: ["*"], allowHeaders: ["x a"]}`, `rule 0: CORS: allowHeaders: "x a" is not a header name`},
		{"a header name with a bracket", `{allowOrigins: ["*"], exposeHeaders: ["%[env(HOME)]"]}`, `rule 0: CORS: exposeHeaders: "%[env(HOME)]" is not a header name`},
		{"too many headers", `{allowOrigins: ["*"], allowHeaders: ` + many(65, `x-%d`) + `}`, `rule 0: CORS: allowHeaders: more than 64`},
	} {
		res, got := translateRuleYAML(t, `[{backendRefs: [{name: web, port: 8080}], filters: [{type: CORS, cors: `+tc.cors+`}]}]`)
		if len(res.Routes) == 1 {
			c := res.MadeRoute(res.Routes[0]).CORS
			echo := map[bool]string{true: "(echo)"}
			got = fmt.Sprintf("any=%v exact=%v ends=%v anyhost=%v methods=%s%s headers=%s%s expose=%s creds=%v age=%d",
				c.AnyOrigin, c.Origins, c.Wildcards, c.AnyHostPatterns, c.AllowMethods, echo[c.AnyMethod], c.AllowHeaders, echo[c.AnyHeader],
				c.ExposeHeaders, c.Credentials, c.MaxAge)
		}
		if got != tc.want {
			t.Errorf("%s: %s\n got %s\nwant %s", tc.name, tc.cors, got, tc.want)
		}
	}
}

// TestCORSOriginsComeInGroupsOfALine: 64 origins written without a port
// are 128 words, in groups of at most model.CORSGroup (an HAProxy line
// takes at most 64 words), none lost.
func TestCORSOriginsComeInGroupsOfALine(t *testing.T) {
	var origins []gatewayv1.CORSOrigin
	for i := 0; i < maxCORSOrigins; i++ {
		origins = append(origins, gatewayv1.CORSOrigin(fmt.Sprintf("https://a%d.test", i)))
	}
	c, why := corsOf([]gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterCORS, CORS: &gatewayv1.HTTPCORSFilter{AllowOrigins: origins}}})
	if why != "" {
		t.Fatal(why)
	}
	n := 0
	for _, g := range c.Origins {
		if len(g) == 0 || len(g) > model.CORSGroup {
			t.Errorf("a group of %d", len(g))
		}
		n += len(g)
	}
	if n != 2*maxCORSOrigins || len(c.Origins) != 2*maxCORSOrigins/model.CORSGroup {
		t.Errorf("%d origins in %d groups, want %d in %d", n, len(c.Origins), 2*maxCORSOrigins, 2*maxCORSOrigins/model.CORSGroup)
	}
}
