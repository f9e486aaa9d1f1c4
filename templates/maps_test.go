package templates

import (
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/template"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/model"
)

func mapTestRoute(ns, name, host, path string, termination routev1.TLSTerminationType, policy routev1.InsecureEdgeTerminationPolicyType, wildcard bool) model.ServiceAliasConfig {
	certs := map[string]model.Certificate{}
	if termination == routev1.TLSTerminationEdge || termination == routev1.TLSTerminationReencrypt {
		// A distinct certificate per route, so that ALPN stays enabled.
		certs[host] = model.Certificate{ID: ns + ":" + name, Contents: "cert of " + ns + ":" + name, PrivateKey: "key"}
	}
	return model.ServiceAliasConfig{
		Name: name, Namespace: ns, Host: host, Path: path,
		TLSTermination: termination, InsecureEdgeTerminationPolicy: policy,
		IsWildcard: wildcard, Certificates: certs,
	}
}

func mapTestState() map[model.ServiceAliasConfigKey]model.ServiceAliasConfig {
	const (
		none     = routev1.InsecureEdgeTerminationPolicyNone
		allow    = routev1.InsecureEdgeTerminationPolicyAllow
		redirect = routev1.InsecureEdgeTerminationPolicyRedirect
		edge     = routev1.TLSTerminationEdge
		reenc    = routev1.TLSTerminationReencrypt
		pass     = routev1.TLSTerminationPassthrough
	)
	routes := []model.ServiceAliasConfig{
		mapTestRoute("app", "root", "www.example.com", "", "", "", false),
		mapTestRoute("app", "test", "www.example.com", "/test", "", "", false),
		mapTestRoute("app", "test-sub", "www.example.com", "/test/sub", "", "", false),
		mapTestRoute("app", "dir", "www.example.com", "/dir/", "", "", false),
		mapTestRoute("sec", "edge-redirect", "secure.example.com", "", edge, redirect, false),
		mapTestRoute("sec", "edge-none-path", "secure.example.com", "/open", edge, none, false),
		mapTestRoute("sec", "edge-allow", "allow.example.com", "", edge, allow, false),
		mapTestRoute("sec", "reenc", "reenc.example.com", "", reenc, redirect, false),
		mapTestRoute("sec", "reenc-allow-path", "reenc.example.com", "/p", reenc, allow, false),
		mapTestRoute("sec", "pass", "pass.example.com", "", pass, redirect, false),
		mapTestRoute("wild", "edge", "any.wild.example.com", "", edge, allow, true),
		mapTestRoute("wild", "pass", "any.pass-wild.example.com", "", pass, none, true),
		mapTestRoute("wild", "http", "any.http-wild.example.com", "/w", "", "", true),
		mapTestRoute("none", "nohost", "", "/ignored", edge, redirect, false),
	}
	state := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
	for _, r := range routes {
		state[model.NewServiceAliasConfigKey(r.Namespace, r.Name)] = r
	}
	return state
}

func mapTestTemplateData() model.TemplateData {
	return model.TemplateData{WorkingDir: "/var/lib/haproxy", State: mapTestState()}
}

func TestGenerateHAProxyMapLines(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"os_wildcard_domain.map", []string{
			`^[^\.]*\.wild\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
			`^[^\.]*\.pass-wild\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
			`^[^\.]*\.http-wild\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
		}},
		{"os_http_be.map", []string{
			`^www\.example\.com\.?(:[0-9]+)?/test/sub(/.*)?$ be_http:app:test-sub`,
			`^www\.example\.com\.?(:[0-9]+)?/test(/.*)?$ be_http:app:test`,
			`^www\.example\.com\.?(:[0-9]+)?/dir/(.*)?$ be_http:app:dir`,
			`^www\.example\.com\.?(:[0-9]+)?(/.*)?$ be_http:app:root`,
			`^reenc\.example\.com\.?(:[0-9]+)?/p(/.*)?$ be_secure:sec:reenc-allow-path`,
			`^allow\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:sec:edge-allow`,
			`^[^\.]*\.wild\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:wild:edge`,
			`^[^\.]*\.http-wild\.example\.com\.?(:[0-9]+)?/w(/.*)?$ be_http:wild:http`,
		}},
		{"os_edge_reencrypt_be.map", []string{
			`^secure\.example\.com\.?(:[0-9]+)?/open(/.*)?$ be_edge_http:sec:edge-none-path`,
			`^secure\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:sec:edge-redirect`,
			`^reenc\.example\.com\.?(:[0-9]+)?/p(/.*)?$ be_secure:sec:reenc-allow-path`,
			`^reenc\.example\.com\.?(:[0-9]+)?(/.*)?$ be_secure:sec:reenc`,
			`^allow\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:sec:edge-allow`,
			`^[^\.]*\.wild\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:wild:edge`,
		}},
		{"os_route_http_redirect.map", []string{
			`^www\.example\.com\.?(:[0-9]+)?/test/sub(/.*)?$ 0`,
			`^www\.example\.com\.?(:[0-9]+)?/test(/.*)?$ 0`,
			`^www\.example\.com\.?(:[0-9]+)?/dir/(.*)?$ 0`,
			`^www\.example\.com\.?(:[0-9]+)?(/.*)?$ 0`,
			`^secure\.example\.com\.?(:[0-9]+)?/open(/.*)?$ 0`,
			`^secure\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
			`^reenc\.example\.com\.?(:[0-9]+)?/p(/.*)?$ 0`,
			`^reenc\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
			`^pass\.example\.com\.?(:[0-9]+)?(/.*)?$ 1`,
			`^allow\.example\.com\.?(:[0-9]+)?(/.*)?$ 0`,
			`^[^\.]*\.wild\.example\.com\.?(:[0-9]+)?(/.*)?$ 0`,
			`^[^\.]*\.pass-wild\.example\.com\.?(:[0-9]+)?(/.*)?$ 0`,
			`^[^\.]*\.http-wild\.example\.com\.?(:[0-9]+)?/w(/.*)?$ 0`,
		}},
		{"os_tcp_be.map", []string{
			`^reenc\.example\.com\.?(:[0-9]+)?(/.*)?$ be_secure:sec:reenc`,
			`^pass\.example\.com\.?(:[0-9]+)?(/.*)?$ be_tcp:sec:pass`,
			`^[^\.]*\.pass-wild\.example\.com\.?(:[0-9]+)?(/.*)?$ be_tcp:wild:pass`,
		}},
		{"os_sni_passthrough.map", []string{
			`^pass\.example\.com$ 1`,
			`^[^\.]*\.pass-wild\.example\.com$ 1`,
		}},
		{"cert_config.map", []string{
			"/var/lib/haproxy/router/certs/wild:edge.pem [alpn h2,http/1.1] *.wild.example.com",
			"/var/lib/haproxy/router/certs/sec:reenc.pem [alpn h2,http/1.1] reenc.example.com",
			"/var/lib/haproxy/router/certs/sec:reenc-allow-path.pem [alpn h2,http/1.1] reenc.example.com",
			"/var/lib/haproxy/router/certs/sec:edge-redirect.pem [alpn h2,http/1.1] secure.example.com",
			"/var/lib/haproxy/router/certs/sec:edge-none-path.pem [alpn h2,http/1.1] secure.example.com",
			"/var/lib/haproxy/router/certs/sec:edge-allow.pem [alpn h2,http/1.1] allow.example.com",
		}},
		{"unknown.map", []string{}},
	}
	td := mapTestTemplateData()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerateHAProxyMap(tt.name, td)
			if got == nil {
				t.Fatal("got nil, want a (possibly empty) list")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestGenerateHAProxyMapOrderIsDeterministic(t *testing.T) {
	for _, name := range HAProxyMapNames() {
		first := GenerateHAProxyMap(name, mapTestTemplateData())
		for i := 0; i < 20; i++ {
			// A fresh state each time, so that map iteration order varies.
			if got := GenerateHAProxyMap(name, mapTestTemplateData()); !reflect.DeepEqual(got, first) {
				t.Fatalf("%s: run %d gave\n%s\nfirst run gave\n%s", name, i, strings.Join(got, "\n"), strings.Join(first, "\n"))
			}
		}
	}
}

func TestGenerateHAProxyMapPutsLongerPathsOfAHostFirst(t *testing.T) {
	paths := []string{"", "/a", "/a/b", "/a/b/c", "/ab", "/b", "/a/"}
	state := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
	for i, p := range paths {
		name := string(rune('a' + i))
		state[model.NewServiceAliasConfigKey("ns", name)] = mapTestRoute("ns", name, "h.example.com", p, "", "", false)
	}
	lines := GenerateHAProxyMap("os_http_be.map", model.TemplateData{State: state})
	pos := map[string]int{}
	for i, line := range lines {
		for j, p := range paths {
			if strings.HasSuffix(line, ":"+string(rune('a'+j))) {
				pos[p] = i
			}
		}
	}
	// Each path must come before every shorter path that also matches its
	// requests.
	for _, pair := range [][2]string{
		{"/a/b/c", "/a/b"}, {"/a/b", "/a"}, {"/a/b", "/a/"}, {"/a", ""}, {"/ab", ""}, {"/b", ""}, {"/a/", ""},
	} {
		if pos[pair[0]] > pos[pair[1]] {
			t.Errorf("path %q (line %d) sorted after %q (line %d):\n%s", pair[0], pos[pair[0]], pair[1], pos[pair[1]], strings.Join(lines, "\n"))
		}
	}
}

// firstMatchingBackend does what HAProxy's map_reg does: the value of the
// first line whose regexp matches subject.
func firstMatchingBackend(t *testing.T, lines []string, subject string) string {
	t.Helper()
	for _, line := range lines {
		key, value, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("malformed map line %q", line)
		}
		if regexp.MustCompile(key).MatchString(subject) {
			return value
		}
	}
	return ""
}

// TestGenerateHAProxyMapServesOpenShiftRoutePathTable checks the request
// routing table of OpenShift's documentation on path-based routes.
func TestGenerateHAProxyMapServesOpenShiftRoutePathTable(t *testing.T) {
	testRoute := mapTestRoute("ns", "test", "www.example.com", "/test", "", "", false)
	rootRoute := mapTestRoute("ns", "root", "www.example.com", "", "", "", false)
	tests := []struct {
		name    string
		routes  []model.ServiceAliasConfig
		request string
		want    string
	}{
		{"path route serves its path", []model.ServiceAliasConfig{testRoute}, "www.example.com/test", "be_http:ns:test"},
		{"path route does not serve the host", []model.ServiceAliasConfig{testRoute}, "www.example.com", ""},
		{"with both, path route serves its path", []model.ServiceAliasConfig{testRoute, rootRoute}, "www.example.com/test", "be_http:ns:test"},
		{"with both, host route serves the host", []model.ServiceAliasConfig{testRoute, rootRoute}, "www.example.com", "be_http:ns:root"},
		{"host route serves another path", []model.ServiceAliasConfig{rootRoute}, "www.example.com/text", "be_http:ns:root"},
		{"host route serves the host", []model.ServiceAliasConfig{rootRoute}, "www.example.com", "be_http:ns:root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
			for _, r := range tt.routes {
				state[model.NewServiceAliasConfigKey(r.Namespace, r.Name)] = r
			}
			lines := GenerateHAProxyMap("os_http_be.map", model.TemplateData{State: state})
			if got := firstMatchingBackend(t, lines, tt.request); got != tt.want {
				t.Errorf("request %q went to %q, want %q (map:\n%s)", tt.request, got, tt.want, strings.Join(lines, "\n"))
			}
		})
	}
}

func TestGenerateHAProxyMapRedirectLetsSpecificPathOptOut(t *testing.T) {
	lines := GenerateHAProxyMap("os_route_http_redirect.map", mapTestTemplateData())
	tests := []struct {
		request string
		want    string
	}{
		{"secure.example.com/", "1"},
		{"secure.example.com/other", "1"},
		{"secure.example.com/open", "0"},
		{"secure.example.com/open/x", "0"},
		{"allow.example.com/", "0"},
	}
	for _, tt := range tests {
		if got := firstMatchingBackend(t, lines, tt.request); got != tt.want {
			t.Errorf("request %q: redirect flag %q, want %q", tt.request, got, tt.want)
		}
	}
}

func TestGenerateHAProxyMapWildcardEntriesComeAfterExactOnes(t *testing.T) {
	state := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"a:wild":  mapTestRoute("a", "wild", "x.example.com", "", "", "", true),
		"z:exact": mapTestRoute("z", "exact", "www.example.com", "", "", "", false),
	}
	lines := GenerateHAProxyMap("os_http_be.map", model.TemplateData{State: state})
	want := []string{
		`^www\.example\.com\.?(:[0-9]+)?(/.*)?$ be_http:z:exact`,
		`^[^\.]*\.example\.com\.?(:[0-9]+)?(/.*)?$ be_http:a:wild`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("got %q, want %q", lines, want)
	}
	// The exact host goes to its own route, its siblings to the wildcard.
	if got := firstMatchingBackend(t, lines, "www.example.com/x"); got != "be_http:z:exact" {
		t.Errorf("exact host went to %q", got)
	}
	if got := firstMatchingBackend(t, lines, "other.example.com/x"); got != "be_http:a:wild" {
		t.Errorf("sibling host went to %q", got)
	}
}

func TestGenerateHAProxyMapCertConfig(t *testing.T) {
	const (
		edge  = routev1.TLSTerminationEdge
		reenc = routev1.TLSTerminationReencrypt
		pass  = routev1.TLSTerminationPassthrough
	)
	withCert := func(r model.ServiceAliasConfig, contents string) model.ServiceAliasConfig {
		r.Certificates = map[string]model.Certificate{r.Host: {ID: r.Name, Contents: contents, PrivateKey: "key"}}
		return r
	}
	tests := []struct {
		name         string
		routes       []model.ServiceAliasConfig
		disableHTTP2 bool
		workingDir   string
		want         []string
	}{
		{
			name:       "edge route with certificate offers h2",
			routes:     []model.ServiceAliasConfig{withCert(mapTestRoute("ns", "a", "a.example.com", "", edge, "", false), "A")},
			workingDir: "/work",
			want:       []string{"/work/router/certs/ns:a.pem [alpn h2,http/1.1] a.example.com"},
		},
		{
			name:         "HTTP/2 disabled drops alpn",
			routes:       []model.ServiceAliasConfig{withCert(mapTestRoute("ns", "a", "a.example.com", "", reenc, "", false), "A")},
			disableHTTP2: true,
			workingDir:   "/work",
			want:         []string{"/work/router/certs/ns:a.pem a.example.com"},
		},
		{
			name: "shared certificate drops alpn on both routes only",
			routes: []model.ServiceAliasConfig{
				withCert(mapTestRoute("ns", "a", "a.example.com", "", edge, "", false), "SHARED"),
				withCert(mapTestRoute("ns", "b", "b.example.com", "", reenc, "", false), "SHARED"),
				withCert(mapTestRoute("ns", "c", "c.example.com", "", edge, "", false), "C"),
			},
			workingDir: "/work",
			want: []string{
				"/work/router/certs/ns:c.pem [alpn h2,http/1.1] c.example.com",
				"/work/router/certs/ns:b.pem b.example.com",
				"/work/router/certs/ns:a.pem a.example.com",
			},
		},
		{
			name:       "wildcard route uses wildcard certificate host",
			routes:     []model.ServiceAliasConfig{withCert(mapTestRoute("ns", "w", "www.example.com", "", edge, "", true), "W")},
			workingDir: "/work",
			want:       []string{"/work/router/certs/ns:w.pem [alpn h2,http/1.1] *.example.com"},
		},
		{
			name: "routes without certificate, with empty certificate, passthrough or insecure are left out",
			routes: []model.ServiceAliasConfig{
				func() model.ServiceAliasConfig {
					r := mapTestRoute("ns", "nocert", "n.example.com", "", edge, "", false)
					r.Certificates = nil
					return r
				}(),
				withCert(mapTestRoute("ns", "empty", "e.example.com", "", edge, "", false), ""),
				withCert(mapTestRoute("ns", "pass", "p.example.com", "", pass, "", false), "P"),
				withCert(mapTestRoute("ns", "http", "h.example.com", "", "", "", false), "H"),
			},
			workingDir: "/work",
			want:       []string{},
		},
		{
			name:   "relative working directory",
			routes: []model.ServiceAliasConfig{withCert(mapTestRoute("ns", "a", "a.example.com", "", edge, "", false), "A")},
			want:   []string{"router/certs/ns:a.pem [alpn h2,http/1.1] a.example.com"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}
			for _, r := range tt.routes {
				state[model.NewServiceAliasConfigKey(r.Namespace, r.Name)] = r
			}
			td := model.TemplateData{WorkingDir: tt.workingDir, State: state, DisableHTTP2: tt.disableHTTP2}
			if got := GenerateHAProxyMap("cert_config.map", td); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGenerateHAProxyMapFromTemplate(t *testing.T) {
	td := mapTestTemplateData()
	text := `{{ range $line := generateHAProxyMap "os_sni_passthrough.map" . }}{{ $line }}
{{ end }}`
	want := "^pass\\.example\\.com$ 1\n^[^\\.]*\\.pass-wild\\.example\\.com$ 1\n"
	if got := execHelperTemplate(t, FuncOptions{}, text, td); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A pointer to the template data works too.
	if got := execHelperTemplate(t, FuncOptions{}, text, &td); got != want {
		t.Errorf("with pointer: got %q, want %q", got, want)
	}
}

// TestGenerateHAProxyMapOneArgumentFormInMapFileTemplate executes an
// OpenShift-style map file template, which passes only the template data and
// relies on the map being named after the file.
func TestGenerateHAProxyMapOneArgumentFormInMapFileTemplate(t *testing.T) {
	const text = `{{ define "/var/lib/haproxy/conf/os_sni_passthrough.map" -}}
{{ range $idx, $line := generateHAProxyMap . -}}
{{ $line }}
{{ end -}}
{{ end -}}
{{ define "conf/os_tcp_be.map" -}}
{{ range $idx, $line := generateHAProxyMap . -}}
{{ $line }}
{{ end -}}
{{ end -}}`
	set, err := template.New("haproxy-config.template").Funcs(FuncMap(FuncOptions{})).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	td := mapTestTemplateData()
	for _, name := range []string{"/var/lib/haproxy/conf/os_sni_passthrough.map", "conf/os_tcp_be.map"} {
		t.Run(name, func(t *testing.T) {
			clone, err := set.Clone()
			if err != nil {
				t.Fatal(err)
			}
			clone.Funcs(MapFileFuncs(name))
			var b strings.Builder
			if err := clone.ExecuteTemplate(&b, name, td); err != nil {
				t.Fatal(err)
			}
			want := strings.Join(GenerateHAProxyMap(path.Base(name), td), "\n") + "\n"
			if b.String() != want {
				t.Errorf("got %q, want %q", b.String(), want)
			}
		})
	}
	// Without MapFileFuncs the one-argument form has no map name.
	var b strings.Builder
	err = set.ExecuteTemplate(&b, "conf/os_tcp_be.map", td)
	if err == nil || !strings.Contains(err.Error(), "map name") {
		t.Errorf("unbound one-argument call: got error %v, want one mentioning the map name", err)
	}
}

func TestGenerateHAProxyMapTemplateArguments(t *testing.T) {
	fn := FuncMap(FuncOptions{})["generateHAProxyMap"].(func(...any) ([]string, error))
	bound := MapFileFuncs("/var/lib/haproxy/conf/os_tcp_be.map")["generateHAProxyMap"].(func(...any) ([]string, error))
	td := mapTestTemplateData()
	want := GenerateHAProxyMap("os_tcp_be.map", td)
	tests := []struct {
		name    string
		fn      func(...any) ([]string, error)
		args    []any
		wantErr bool
	}{
		{"name and data", fn, []any{"os_tcp_be.map", td}, false},
		{"name and data pointer", fn, []any{"os_tcp_be.map", &td}, false},
		{"bound name and data", bound, []any{td}, false},
		{"explicit name wins over bound name", bound, []any{"os_tcp_be.map", td}, false},
		{"unbound data only", fn, []any{td}, true},
		{"no arguments", fn, nil, true},
		{"three arguments", fn, []any{"a", td, td}, true},
		{"name not a string", fn, []any{1, td}, true},
		{"wrong data type", fn, []any{"os_tcp_be.map", "data"}, true},
		{"nil data pointer", fn, []any{"os_tcp_be.map", (*model.TemplateData)(nil)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fn(tt.args...)
			if tt.wantErr {
				if err == nil {
					t.Errorf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestStickyCookieNameAndTheHelpersKeptForEarlierTemplates(t *testing.T) {
	route := func(name, cookie string, disable bool, term routev1.TLSTerminationType) model.ServiceAliasConfig {
		cfg := mapTestRoute("ns", name, name+".example.com", "", term, "", false)
		cfg.RoutingKeyName = "k" + name
		cfg.Settings.CookieName, cfg.Settings.DisableCookies = cookie, disable
		return cfg
	}
	for _, tc := range []struct {
		name        string
		cfg         model.ServiceAliasConfig
		routerName  string
		want        string
		inCookieMap bool
	}{
		{"the route's hashed name", route("plain", "", false, ""), "", "kplain", true},
		{"ROUTER_COOKIE_NAME", route("plain", "", false, ""), "router_cookie", "router_cookie", true},
		{"the annotation wins", route("named", "mine", false, routev1.TLSTerminationEdge), "router_cookie", "mine", true},
		{"disable_cookies: not in the map", route("off", "", true, ""), "", "koff", false},
		{"passthrough: not in the map", route("pt", "", false, routev1.TLSTerminationPassthrough), "", "kpt", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := model.HAProxySettings{CookieName: tc.routerName}
			if got := StickyCookieName(tc.cfg, h); got != tc.want {
				t.Fatalf("StickyCookieName = %q, want %q", got, tc.want)
			}
			td := model.TemplateData{HAProxy: h, State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
				model.NewServiceAliasConfigKey(tc.cfg.Namespace, tc.cfg.Name): tc.cfg}}
			line := GenBackendNamePrefix(tc.cfg.TLSTermination) + ":ns:" + tc.cfg.Name + " " + tc.want + "\n"
			got := execHelperTemplate(t, FuncOptions{}, `{{ stickyCookie }}{{ stickyCookieMap . }}`, td)
			if want := StickyCookie + "\n" + map[bool]string{true: line, false: ""}[tc.inCookieMap]; got != want {
				t.Fatalf("stickyCookie, stickyCookieMap = %q, want %q", got, want)
			}
		})
	}
}
