package templates

import (
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/template"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

func fakeGetenv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}

// execTemplate parses and executes text with FuncMap(opts) and data.
func execHelperTemplate(t *testing.T, opts FuncOptions, text string, data any) string {
	t.Helper()
	tmpl, err := template.New("test").Funcs(FuncMap(opts)).Parse(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatalf("execute %q: %v", text, err)
	}
	return b.String()
}

func TestFuncMapRegistersOpenShiftHelpersAndAdditions(t *testing.T) {
	fm := FuncMap(FuncOptions{})
	for _, name := range []string{
		"env", "isTrue", "isInteger", "matchPattern", "matchValues", "firstMatch",
		"endpointsForAlias", "processEndpointsForAlias", "genCertificateHostName",
		"genSubdomainWildcardRegexp", "generateRouteRegexp", "genBackendNamePrefix",
		"getHTTPAliasesGroupedByHost", "getPrimaryAliasKey", "generateHAProxyMap",
		"clipHAProxyTimeoutValue", "parseIPList", "routeMapKey", "haproxyQuote",
	} {
		if fm[name] == nil {
			t.Errorf("FuncMap has no %q", name)
		}
	}
}

func TestFuncMapIncludesSprigAndHelpersOverrideSprigEnv(t *testing.T) {
	opts := FuncOptions{Getenv: fakeGetenv(map[string]string{"ROUTER_X": "from-env"})}
	got := execHelperTemplate(t, opts, `{{ upper "a" }} {{ env "ROUTER_X" }} {{ env "ROUTER_UNSET" "" "dflt" }}`, nil)
	if want := "A from-env dflt"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFuncMapDefaultsToOSGetenv(t *testing.T) {
	t.Setenv("ROUTER_GO_TEMPLATES_TEST_VAR", "set")
	got := execHelperTemplate(t, FuncOptions{}, `{{ env "ROUTER_GO_TEMPLATES_TEST_VAR" "no" }}`, nil)
	if got != "set" {
		t.Errorf("got %q, want %q", got, "set")
	}
}

func TestFuncMapCallsAreIndependent(t *testing.T) {
	a := FuncMap(FuncOptions{Getenv: fakeGetenv(map[string]string{"V": "a"})})
	b := FuncMap(FuncOptions{Getenv: fakeGetenv(map[string]string{"V": "b"})})
	envA := a["env"].(func(string, ...string) string)
	envB := b["env"].(func(string, ...string) string)
	if envA("V") != "a" || envB("V") != "b" {
		t.Errorf("FuncMaps share state: %q %q", envA("V"), envB("V"))
	}
}

func TestEnv(t *testing.T) {
	getenv := fakeGetenv(map[string]string{"SET": "value", "EMPTY": ""})
	tests := []struct {
		name     string
		variable string
		defaults []string
		want     string
	}{
		{"set variable wins over defaults", "SET", []string{"d"}, "value"},
		{"unset variable gives first default", "UNSET", []string{"d1", "d2"}, "d1"},
		{"empty variable gives first default", "EMPTY", []string{"d"}, "d"},
		{"empty defaults are skipped", "UNSET", []string{"", "d2"}, "d2"},
		{"no defaults gives empty", "UNSET", nil, ""},
		{"only empty defaults gives empty", "UNSET", []string{"", ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := envOrDefault(getenv, tt.variable, tt.defaults...); got != tt.want {
				t.Errorf("env(%q, %q) = %q, want %q", tt.variable, tt.defaults, got, tt.want)
			}
		})
	}
}

func TestIsTrue(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"true", true}, {"TRUE", true}, {"True", true}, {"t", true}, {"1", true},
		{"false", false}, {"0", false}, {"", false}, {"yes", false}, {"on", false}, {" true", false},
	}
	for _, tt := range tests {
		if got := IsTrue(tt.in); got != tt.want {
			t.Errorf("IsTrue(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestIsInteger(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"20000", true}, {"-5", true}, {"+5", true},
		{"", false}, {"1.5", false}, {"1e3", false}, {"abc", false}, {" 1", false},
		{"99999999999999999999999", false},
	}
	for _, tt := range tests {
		if got := IsInteger(tt.in); got != tt.want {
			t.Errorf("IsInteger(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestMatchValues(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		allowed []string
		want    bool
	}{
		{"value in list", "leastconn", []string{"roundrobin", "leastconn"}, true},
		{"value not in list", "random", []string{"roundrobin", "leastconn"}, false},
		{"comparison is case sensitive", "LeastConn", []string{"leastconn"}, false},
		{"empty list", "x", nil, false},
		{"empty value matches empty allowed value", "", []string{""}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchValues(tt.s, tt.allowed...); got != tt.want {
				t.Errorf("MatchValues(%q, %q) = %v, want %v", tt.s, tt.allowed, got, tt.want)
			}
		})
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		s       string
		want    bool
	}{
		{"exact match", `asd`, "asd", true},
		{"pattern is anchored at both ends", `asd`, "123asd123", false},
		{"regexp syntax works", `.*asd.*`, "123asd123", true},
		{"dot does not match newline", `.*asd.*`, "123\nasd123", false},
		{"s flag lets dot match newline", `(?s).*asd.*`, "123\nasd123", true},
		{"multiline flag cannot match a single line of several", `(?m)asd`, "asd\n123", false},
		{"multiline pattern matching whole input", `(?m)(^asd\d$\n?)+`, "asd1\nasd2\n", true},
		{"prefix alternation is grouped", `|asd`, "anything", false},
		{"postfix alternation is grouped", `asd|`, "anything", false},
		{"alternation matches either branch wholly", `roundrobin|leastconn`, "leastconn", true},
		{"time spec pattern", `[1-9][0-9]*(us|ms|s|m|h|d)?`, "30s", true},
		{"invalid pattern never matches", `(unclosed`, "(unclosed", false},
		{"invalid pattern never matches empty input", `[`, "", false},
	}
	cached := FuncMap(FuncOptions{})["matchPattern"].(func(string, string) bool)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchPattern(tt.pattern, tt.s); got != tt.want {
				t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
			// The FuncMap version caches compiled patterns; call it
			// twice to exercise the cached path.
			for i := 0; i < 2; i++ {
				if got := cached(tt.pattern, tt.s); got != tt.want {
					t.Errorf("matchPattern(%q, %q) call %d = %v, want %v", tt.pattern, tt.s, i, got, tt.want)
				}
			}
		})
	}
}

func TestFirstMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		values  []string
		want    string
	}{
		{"first wholly matching value", `asd`, []string{"123asd123", "asd456", "asd", "asd"}, "asd"},
		{"dot does not match newline", `.*asd.*`, []string{"123\nasd123", "123asd123"}, "123asd123"},
		{"env value preferred over default", `[1-9][0-9]*(us|ms|s|m|h|d)?`, []string{"10s", "5s"}, "10s"},
		{"invalid env value falls back to default", `[1-9][0-9]*(us|ms|s|m|h|d)?`, []string{"ten", "5s"}, "5s"},
		{"empty value skipped by non-empty pattern", `.+`, []string{"", "/default.pem"}, "/default.pem"},
		{"no match gives empty", `asd`, []string{"x", "y"}, ""},
		{"no values gives empty", `asd`, nil, ""},
		{"prefix alternation is grouped", `|asd`, []string{"anything"}, ""},
		{"invalid pattern gives empty", `a(`, []string{"a("}, ""},
	}
	cached := FuncMap(FuncOptions{})["firstMatch"].(func(string, ...string) string)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstMatch(tt.pattern, tt.values...); got != tt.want {
				t.Errorf("FirstMatch(%q, %q) = %q, want %q", tt.pattern, tt.values, got, tt.want)
			}
			if got := cached(tt.pattern, tt.values...); got != tt.want {
				t.Errorf("firstMatch(%q, %q) = %q, want %q", tt.pattern, tt.values, got, tt.want)
			}
		})
	}
}

func TestRegexpCacheStartsOverWhenFull(t *testing.T) {
	c := newRegexpCache(2)
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c.compile("test", p); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.entries) > 2 {
		t.Errorf("cache holds %d entries, limit is 2", len(c.entries))
	}
	if _, err := c.compile("test", "("); err == nil {
		t.Error("invalid pattern compiled")
	}
	if _, err := c.compile("test", "("); err == nil {
		t.Error("cached invalid pattern returned no error")
	}
}

func helperTestEndpoints() []model.Endpoint {
	return []model.Endpoint{
		{ID: "ept:svc:10.0.0.1:8080", IP: "10.0.0.1", Port: "8080", PortName: "http"},
		{ID: "ept:svc:10.0.0.1:8443", IP: "10.0.0.1", Port: "8443", PortName: "https"},
		{ID: "ept:svc:10.0.0.2:8080", IP: "10.0.0.2", Port: "8080", PortName: "http"},
		{ID: "ept:svc:10.0.0.3:9090", IP: "10.0.0.3", Port: "9090", PortName: ""},
	}
}

func endpointIDs(eps []model.Endpoint) []string {
	ids := make([]string, len(eps))
	for i, ep := range eps {
		ids[i] = ep.ID
	}
	return ids
}

func TestEndpointsForAlias(t *testing.T) {
	svc := model.ServiceUnit{Name: "ns/svc", EndpointTable: helperTestEndpoints()}
	tests := []struct {
		name       string
		preferPort string
		want       []string
	}{
		{"no preferred port gives all endpoints", "", []string{"ept:svc:10.0.0.1:8080", "ept:svc:10.0.0.1:8443", "ept:svc:10.0.0.2:8080", "ept:svc:10.0.0.3:9090"}},
		{"preferred port by name", "http", []string{"ept:svc:10.0.0.1:8080", "ept:svc:10.0.0.2:8080"}},
		{"preferred port by number", "8443", []string{"ept:svc:10.0.0.1:8443"}},
		{"preferred port by number of unnamed port", "9090", []string{"ept:svc:10.0.0.3:9090"}},
		{"preferred port matching nothing", "grpc", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EndpointsForAlias(model.ServiceAliasConfig{PreferPort: tt.preferPort}, svc)
			if ids := endpointIDs(got); !reflect.DeepEqual(ids, tt.want) {
				t.Errorf("got %q, want %q", ids, tt.want)
			}
		})
	}
}

func TestProcessEndpointsForAliasInOrderUnlessShuffle(t *testing.T) {
	svc := model.ServiceUnit{EndpointTable: helperTestEndpoints()}
	for _, action := range []string{"", "none", "sort"} {
		got := ProcessEndpointsForAlias(model.ServiceAliasConfig{}, svc, action, rand.New(rand.NewSource(1)))
		if !reflect.DeepEqual(got, svc.EndpointTable) {
			t.Errorf("action %q: got %q, want the endpoints in order", action, endpointIDs(got))
		}
	}
}

func manyEndpoints(n int) []model.Endpoint {
	eps := make([]model.Endpoint, n)
	for i := range eps {
		eps[i] = model.Endpoint{ID: fmt.Sprintf("ep%02d", i), Port: "8080"}
	}
	return eps
}

func TestProcessEndpointsForAliasShuffleReturnsPermutationWithoutMutatingInput(t *testing.T) {
	svc := model.ServiceUnit{EndpointTable: manyEndpoints(20)}
	original := endpointIDs(svc.EndpointTable)
	r := rand.New(rand.NewSource(42))
	reordered := false
	for _, action := range []string{"shuffle", "Shuffle", "SHUFFLE"} {
		got := ProcessEndpointsForAlias(model.ServiceAliasConfig{}, svc, action, r)
		ids := endpointIDs(got)
		if !reflect.DeepEqual(endpointIDs(svc.EndpointTable), original) {
			t.Fatalf("action %q mutated the service's endpoint table", action)
		}
		sorted := append([]string(nil), ids...)
		sort.Strings(sorted)
		if !reflect.DeepEqual(sorted, original) {
			t.Fatalf("action %q: %q is not a permutation of %q", action, ids, original)
		}
		if !reflect.DeepEqual(ids, original) {
			reordered = true
		}
	}
	if !reordered {
		t.Error("shuffle never changed the order of 20 endpoints")
	}
}

func TestProcessEndpointsForAliasShuffleHonoursPreferPort(t *testing.T) {
	svc := model.ServiceUnit{EndpointTable: helperTestEndpoints()}
	got := ProcessEndpointsForAlias(model.ServiceAliasConfig{PreferPort: "http"}, svc, "shuffle", rand.New(rand.NewSource(3)))
	ids := endpointIDs(got)
	sort.Strings(ids)
	if want := []string{"ept:svc:10.0.0.1:8080", "ept:svc:10.0.0.2:8080"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("got %q, want a permutation of %q", ids, want)
	}
}

func TestProcessEndpointsForAliasShuffleIsDeterministicWithInjectedRand(t *testing.T) {
	svc := model.ServiceUnit{EndpointTable: manyEndpoints(10)}
	a := ProcessEndpointsForAlias(model.ServiceAliasConfig{}, svc, "shuffle", rand.New(rand.NewSource(7)))
	b := ProcessEndpointsForAlias(model.ServiceAliasConfig{}, svc, "shuffle", rand.New(rand.NewSource(7)))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed gave %q and %q", endpointIDs(a), endpointIDs(b))
	}
}

func TestProcessEndpointsForAliasUsesBackendProcessEndpointsForEmptyAction(t *testing.T) {
	svc := model.ServiceUnit{EndpointTable: manyEndpoints(20)}
	data := map[string]any{"Alias": model.ServiceAliasConfig{}, "Svc": svc}
	text := `{{ range processEndpointsForAlias .Alias .Svc "" }}{{ .ID }},{{ end }}`
	inOrder := strings.Join(endpointIDs(svc.EndpointTable), ",") + ","

	got := execHelperTemplate(t, FuncOptions{BackendProcessEndpoints: "shuffle", Rand: rand.New(rand.NewSource(1))}, text, data)
	if got == inOrder {
		t.Errorf("BackendProcessEndpoints=shuffle did not shuffle: %q", got)
	}
	got = execHelperTemplate(t, FuncOptions{Rand: rand.New(rand.NewSource(1))}, text, data)
	if got != inOrder {
		t.Errorf("empty BackendProcessEndpoints reordered endpoints: %q", got)
	}
	// An explicit action from the template wins over the option.
	explicit := `{{ range processEndpointsForAlias .Alias .Svc "none" }}{{ .ID }},{{ end }}`
	got = execHelperTemplate(t, FuncOptions{BackendProcessEndpoints: "shuffle", Rand: rand.New(rand.NewSource(1))}, explicit, data)
	if got != inOrder {
		t.Errorf("explicit action was overridden: %q", got)
	}
}

func TestProcessEndpointsForAliasIsSafeForConcurrentTemplateExecution(t *testing.T) {
	fn := FuncMap(FuncOptions{Rand: rand.New(rand.NewSource(1))})["processEndpointsForAlias"].(func(model.ServiceAliasConfig, model.ServiceUnit, string) []model.Endpoint)
	svc := model.ServiceUnit{EndpointTable: manyEndpoints(8)}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if got := fn(model.ServiceAliasConfig{}, svc, "shuffle"); len(got) != 8 {
					t.Errorf("got %d endpoints", len(got))
				}
			}
		}()
	}
	wg.Wait()
}

func TestGenCertificateHostName(t *testing.T) {
	tests := []struct {
		name     string
		host     string
		wildcard bool
		want     string
	}{
		{"non-wildcard host unchanged", "www.example.com", false, "www.example.com"},
		{"wildcard replaces first label", "www.example.com", true, "*.example.com"},
		{"wildcard with deeper domain", "a.b.c.example.com", true, "*.b.c.example.com"},
		{"wildcard host without dot unchanged", "localhost", true, "localhost"},
		{"wildcard host starting with dot unchanged", ".example.com", true, ".example.com"},
		{"empty host", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GenCertificateHostName(tt.host, tt.wildcard); got != tt.want {
				t.Errorf("GenCertificateHostName(%q, %v) = %q, want %q", tt.host, tt.wildcard, got, tt.want)
			}
		})
	}
}

func TestGenSubdomainWildcardRegexp(t *testing.T) {
	tests := []struct {
		name      string
		host      string
		path      string
		exactPath bool
		want      string
		match     []string
		nomatch   []string
	}{
		{
			name: "subpaths allowed", host: "www.example.com", path: "/sub", exactPath: false,
			want:    `^[^\.]*\.example\.com/sub(|/.*)$`,
			match:   []string{"foo.example.com/sub", "www.example.com/sub/x"},
			nomatch: []string{"foo.example.com/subx", "a.b.example.com/sub", "foo.example.com"},
		},
		{
			name: "exact path", host: "www.example.com", path: "/sub", exactPath: true,
			want:    `^[^\.]*\.example\.com/sub$`,
			match:   []string{"foo.example.com/sub"},
			nomatch: []string{"foo.example.com/sub/x"},
		},
		{
			name: "no path", host: "www.example.com", path: "", exactPath: false,
			want:  `^[^\.]*\.example\.com(|/.*)$`,
			match: []string{"foo.example.com", "foo.example.com/x"},
		},
		{
			name: "host without domain returned verbatim", host: "localhost", path: "/p", exactPath: false,
			want: "localhost/p",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GenSubdomainWildcardRegexp(tt.host, tt.path, tt.exactPath)
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			re := regexp.MustCompile(got)
			for _, s := range tt.match {
				if !re.MatchString(s) {
					t.Errorf("%q does not match %q", got, s)
				}
			}
			for _, s := range tt.nomatch {
				if re.MatchString(s) {
					t.Errorf("%q matches %q", got, s)
				}
			}
		})
	}
}

func TestGenerateRouteRegexpText(t *testing.T) {
	tests := []struct {
		name     string
		host     string
		path     string
		wildcard bool
		want     string
	}{
		{"host without path", "www.example.com", "", false, `^www\.example\.com\.?(:[0-9]+)?(/.*)?$`},
		{"root path treated as no path", "www.example.com", "/", false, `^www\.example\.com\.?(:[0-9]+)?(/.*)?$`},
		{"path of only slashes treated as no path", "www.example.com", "//", false, `^www\.example\.com\.?(:[0-9]+)?(/.*)?$`},
		{"path without trailing slash", "www.example.com", "/test", false, `^www\.example\.com\.?(:[0-9]+)?/test(/.*)?$`},
		{"path with trailing slash", "www.example.com", "/test/", false, `^www\.example\.com\.?(:[0-9]+)?/test/(.*)?$`},
		{"path metacharacters quoted", "www.example.com", "/a.b+c", false, `^www\.example\.com\.?(:[0-9]+)?/a\.b\+c(/.*)?$`},
		{"blanks escaped for map files", "www.example.com", "/a b\tc", false, `^www\.example\.com\.?(:[0-9]+)?/a\x20b\tc(/.*)?$`},
		{"wildcard host", "www.example.com", "", true, `^[^\.]*\.example\.com\.?(:[0-9]+)?(/.*)?$`},
		{"wildcard host with path", "www.example.com", "/p", true, `^[^\.]*\.example\.com\.?(:[0-9]+)?/p(/.*)?$`},
		{"wildcard host without domain", "localhost", "", true, `^localhost\.?(:[0-9]+)?(/.*)?$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GenerateRouteRegexp(tt.host, tt.path, tt.wildcard); got != tt.want {
				t.Errorf("GenerateRouteRegexp(%q, %q, %v) = %q, want %q", tt.host, tt.path, tt.wildcard, got, tt.want)
			}
		})
	}
}

func TestGenerateRouteRegexpMatching(t *testing.T) {
	tests := []struct {
		name     string
		host     string
		path     string
		wildcard bool
		match    []string
		nomatch  []string
	}{
		{
			// OpenShift documentation, route path table: a route for
			// www.example.com/test serves www.example.com/test but not
			// www.example.com.
			name: "route with path serves only its path", host: "www.example.com", path: "/test",
			match:   []string{"www.example.com/test", "www.example.com/test/", "www.example.com/test/sub", "www.example.com:8080/test", "www.example.com./test"},
			nomatch: []string{"www.example.com", "www.example.com/", "www.example.com/testing", "www.example.com/other/test", "foo.example.com/test"},
		},
		{
			// ... and a route for www.example.com (no path) serves both
			// www.example.com/text and www.example.com.
			name: "route without path serves every path", host: "www.example.com", path: "",
			match:   []string{"www.example.com", "www.example.com/", "www.example.com/text", "www.example.com/test", "www.example.com:80", "www.example.com:80/x", "www.example.com."},
			nomatch: []string{"other.com", "wwwxexample.com", "foo.www.example.com", "www.example.com.evil", "www.example.com:http"},
		},
		{
			name: "path with trailing slash requires the slash", host: "example.com", path: "/sub/",
			match:   []string{"example.com/sub/", "example.com/sub/subsub"},
			nomatch: []string{"example.com", "example.com/", "example.com/sub", "example.com/subpar"},
		},
		{
			name: "wildcard matches one label", host: "www.example.com", path: "/", wildcard: true,
			match:   []string{"www.example.com", "foo.example.com/sub/", "foo.example.com:80/sub"},
			nomatch: []string{"wwwexample.com", "foo.bar.example.com", "example.com"},
		},
		{
			name: "non-wildcard does not match siblings", host: "www.example.com", path: "/",
			match:   []string{"www.example.com/sub/"},
			nomatch: []string{"foo.example.com", "foo.example.com/"},
		},
		{
			name: "path with space matches literal space", host: "example.com", path: "/a b",
			match:   []string{"example.com/a b", "example.com/a b/c"},
			nomatch: []string{"example.com/a", "example.com/a%20c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := regexp.MustCompile(GenerateRouteRegexp(tt.host, tt.path, tt.wildcard))
			for _, s := range tt.match {
				if !re.MatchString(s) {
					t.Errorf("%s does not match %q", re, s)
				}
			}
			for _, s := range tt.nomatch {
				if re.MatchString(s) {
					t.Errorf("%s matches %q", re, s)
				}
			}
		})
	}
}

func TestGenerateSNIRegexp(t *testing.T) {
	tests := []struct {
		host     string
		wildcard bool
		want     string
	}{
		{"www.example.com", false, `^www\.example\.com$`},
		{"www.example.com", true, `^[^\.]*\.example\.com$`},
	}
	for _, tt := range tests {
		if got := GenerateSNIRegexp(tt.host, tt.wildcard); got != tt.want {
			t.Errorf("GenerateSNIRegexp(%q, %v) = %q, want %q", tt.host, tt.wildcard, got, tt.want)
		}
	}
}

func TestGenBackendNamePrefix(t *testing.T) {
	tests := []struct {
		termination routev1.TLSTerminationType
		want        string
	}{
		{"", "be_http"},
		{routev1.TLSTerminationEdge, "be_edge_http"},
		{routev1.TLSTerminationPassthrough, "be_tcp"},
		{routev1.TLSTerminationReencrypt, "be_secure"},
		{"bogus", "be_http"},
	}
	for _, tt := range tests {
		if got := GenBackendNamePrefix(tt.termination); got != tt.want {
			t.Errorf("GenBackendNamePrefix(%q) = %q, want %q", tt.termination, got, tt.want)
		}
	}
}

func TestGetHTTPAliasesGroupedByHostSkipsPassthrough(t *testing.T) {
	aliases := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"project1:route1": {Host: "example.com", Path: "/"},
		"project2:route1": {Host: "example.org", Path: "/v1"},
		"project2:route2": {Host: "example.org", Path: "/v2", TLSTermination: routev1.TLSTerminationEdge},
		"project3:route3": {Host: "example.net", TLSTermination: routev1.TLSTerminationPassthrough},
	}
	want := map[string]map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"example.com": {"project1:route1": aliases["project1:route1"]},
		"example.org": {
			"project2:route1": aliases["project2:route1"],
			"project2:route2": aliases["project2:route2"],
		},
	}
	if got := GetHTTPAliasesGroupedByHost(aliases); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := GetHTTPAliasesGroupedByHost(nil); len(got) != 0 {
		t.Errorf("nil input gave %v", got)
	}
}

func TestGetPrimaryAliasKey(t *testing.T) {
	tests := []struct {
		name    string
		aliases map[model.ServiceAliasConfigKey]model.ServiceAliasConfig
		want    string
	}{
		{"no aliases", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}, ""},
		{"single alias", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"p:r1": {Host: "example.org", Path: "/v1"},
		}, "p:r1"},
		{"last edge alias wins over later insecure one", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"p:route-3": {Path: "/", TLSTermination: routev1.TLSTerminationEdge},
			"p:route-1": {Path: "/path1", TLSTermination: routev1.TLSTerminationEdge},
			"p:route-2": {Path: "/path2", TLSTermination: routev1.TLSTerminationEdge},
			"p:route-4": {Path: "/path4"},
		}, "p:route-3"},
		{"last reencrypt alias", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"p:route-3": {Path: "/", TLSTermination: routev1.TLSTerminationReencrypt},
			"p:route-1": {Path: "/path1", TLSTermination: routev1.TLSTerminationReencrypt},
			"p:route-4": {Path: "/path4"},
		}, "p:route-3"},
		{"without TLS aliases the last key", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"p:route-3": {Path: "/"},
			"p:route-1": {Path: "/path1"},
			"p:route-4": {Path: "/path4"},
		}, "p:route-4"},
		{"passthrough does not count as TLS alias", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"a:x": {TLSTermination: routev1.TLSTerminationPassthrough},
			"b:y": {},
		}, "b:y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 5; i++ { // map order must not matter
				if got := GetPrimaryAliasKey(tt.aliases); got != tt.want {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestGetPrimaryAliasKeyAcceptsGroupsFromTemplate(t *testing.T) {
	data := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:a": {Host: "h.example.com", Path: "/a"},
		"ns:b": {Host: "h.example.com", TLSTermination: routev1.TLSTerminationEdge},
		"ns:c": {Host: "other.example.com"},
	}
	text := `{{ range $host, $group := getHTTPAliasesGroupedByHost . }}{{ $host }}={{ getPrimaryAliasKey $group }};{{ end }}`
	got := execHelperTemplate(t, FuncOptions{}, text, data)
	if want := "h.example.com=ns:b;other.example.com=ns:c;"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClipHAProxyTimeoutValue(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"no unit means milliseconds", "10", "10"},
		{"microseconds", "500us", "500us"},
		{"milliseconds", "300ms", "300ms"},
		{"seconds", "10s", "10s"},
		{"minutes", "5m", "5m"},
		{"hours", "2h", "2h"},
		{"days", "10d", "10d"},
		{"exactly the maximum", "2147483647ms", "2147483647ms"},
		{"maximum without unit", "2147483647", "2147483647"},
		{"just above the maximum", "2147483648", syntax.MaxTimeout},
		{"days above the maximum", "25d", syntax.MaxTimeout},
		{"100 days clipped", "100d", syntax.MaxTimeout},
		{"1000 hours clipped", "1000h", syntax.MaxTimeout},
		{"seconds just below the maximum", "2147483s", "2147483s"},
		{"seconds above the maximum", "2147484s", syntax.MaxTimeout},
		{"overflowing time.Duration clipped", "106752d", syntax.MaxTimeout},
		{"overflowing int64 clipped", "18446744073709551615us", syntax.MaxTimeout},
		{"zero is invalid", "0", ""},
		{"leading zero is invalid", "010s", ""},
		{"negative is invalid", "-1s", ""},
		{"plus sign is invalid", "+1s", ""},
		{"unknown unit is invalid", "10ns", ""},
		{"decimal is invalid", "1.5s", ""},
		{"blank is invalid", " 10s", ""},
		{"combined units are invalid", "1h30m", ""},
		{"unit only is invalid", "s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClipHAProxyTimeoutValue(tt.in); got != tt.want {
				t.Errorf("ClipHAProxyTimeoutValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseIPList(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"mixed IPs and CIDRs", "192.168.1.0 2001:0db8:85a3:0000:0000:8a2e:0370:7334 172.16.14.10/24 2001:0db8:85a3::8a2e:370:10/64 64:ff9b::192.168.0.1 2600:14a0::/40",
			"192.168.1.0 2001:0db8:85a3:0000:0000:8a2e:0370:7334 172.16.14.10/24 2001:0db8:85a3::8a2e:370:10/64 64:ff9b::192.168.0.1 2600:14a0::/40"},
		{"single IPv4", "192.168.15.15", "192.168.15.15"},
		{"IPv4 mapped IPv6", "::ffff:192.168.0.1", "::ffff:192.168.0.1"},
		{"several inner blanks joined by one space", "10.0.0.1  \t10.0.0.0/8", "10.0.0.1 10.0.0.0/8"},
		{"invalid entry dropped, valid entries kept", "192.168.1.0 10. 10.0.0.0/8", "192.168.1.0 10.0.0.0/8"},
		{"hostname dropped", "example.com 10.1.1.1", "10.1.1.1"},
		{"only invalid entries", "192.168. 2001:0db8:", ""},
		{"invalid IPv4 CIDR", "192.168.10.5/64", ""},
		{"invalid IPv6 CIDR", "2600:14a0::/256", ""},
		{"leading and trailing blanks", " 192.168.10.10  ", ""},
		{"trailing newline", "192.168.10.10\n", ""},
		{"only blanks", "   ", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseIPList(tt.in); got != tt.want {
				t.Errorf("ParseIPList(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRouteMapKey(t *testing.T) {
	tests := []struct {
		name string
		host string
		path string
		want string
	}{
		{"no path", "www.example.com", "", "www.example.com/"},
		{"root path", "www.example.com", "/", "www.example.com/"},
		{"path gets trailing slash", "www.example.com", "/a", "www.example.com/a/"},
		{"path with trailing slash kept", "www.example.com", "/a/", "www.example.com/a/"},
		{"nested path", "www.example.com", "/a/b", "www.example.com/a/b/"},
		{"host lower-cased, path case kept", "WWW.Example.COM", "/Api", "www.example.com/Api/"},
		{"path without leading slash", "h.example.com", "a", "h.example.com/a/"},
		{"blank percent-encoded", "h.example.com", "/a b", "h.example.com/a%20b/"},
		{"control characters percent-encoded", "h.example.com", "/a\tb\n", "h.example.com/a%09b%0A/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RouteMapKey(tt.host, tt.path); got != tt.want {
				t.Errorf("RouteMapKey(%q, %q) = %q, want %q", tt.host, tt.path, got, tt.want)
			}
		})
	}
}

// TestRouteMapKeyPrefixSemantics checks the lookup the default template
// does: the longest key that is a prefix of host + path + "/".
func TestRouteMapKeyPrefixSemantics(t *testing.T) {
	keys := map[string]string{
		RouteMapKey("www.example.com", ""):     "root",
		RouteMapKey("www.example.com", "/a"):   "a",
		RouteMapKey("www.example.com", "/a/b"): "ab",
	}
	lookup := func(host, path string) string {
		subject := host + path + "/"
		best, bestLen := "", -1
		for k, v := range keys {
			if strings.HasPrefix(subject, k) && len(k) > bestLen {
				best, bestLen = v, len(k)
			}
		}
		return best
	}
	tests := []struct{ path, want string }{
		{"", "root"}, {"/", "root"}, {"/a", "a"}, {"/a/", "a"}, {"/a/x", "a"},
		{"/ab", "root"}, {"/a/b", "ab"}, {"/a/bc", "a"}, {"/a/b/c", "ab"},
	}
	for _, tt := range tests {
		if got := lookup("www.example.com", tt.path); got != tt.want {
			t.Errorf("path %q routed to %q, want %q", tt.path, got, tt.want)
		}
	}
}

// haproxyUnquote interprets a configuration line the way HAProxy splits it
// into words (backslash escapes, "weak" and 'strong' quoting, # comments)
// and returns the words. $VARIABLE expansion inside double quotes is
// reported as an error, since syntax.Quote (haproxyQuote) must prevent it.
func haproxyUnquote(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#':
			if inWord {
				words = append(words, cur.String())
			}
			return words, nil
		case c == '\\':
			if i+1 >= len(line) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(line) {
					return nil, fmt.Errorf("unterminated double quote")
				}
				d := line[i]
				if d == '"' {
					break
				}
				if d == '$' {
					return nil, fmt.Errorf("unescaped $ inside double quotes")
				}
				if d == '\\' {
					if i+1 >= len(line) {
						return nil, fmt.Errorf("trailing backslash")
					}
					i++
					d = line[i]
				}
				cur.WriteByte(d)
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestHAProxyQuote(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"bare token unchanged", "be_http:ns:name", "be_http:ns:name"},
		{"path and at sign unchanged", "/var/lib/haproxy@x=1+2-3", "/var/lib/haproxy@x=1+2-3"},
		{"empty string quoted", "", `""`},
		{"space quoted", "a b", `"a b"`},
		{"double quote escaped", `say "hi"`, `"say \"hi\""`},
		{"backslash escaped", `a\b`, `"a\\b"`},
		{"dollar escaped", "$HOME", `"\$HOME"`},
		{"hash escaped", "a#b", `"a\#b"`},
		{"single quote kept inside double quotes", "it's", `"it's"`},
		{"percent quoted", "%[src]", `"%[src]"`},
		{"newline removed", "a\nb", "ab"},
		{"control characters removed before quoting", "a\r\n b\x00\x7f", `"a b"`},
		{"only control characters", "\n\t", `""`},
		{"non-ASCII quoted verbatim", "héllo", `"héllo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := syntax.Quote(tt.in)
			if got != tt.want {
				t.Errorf("syntax.Quote(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHAProxyQuoteYieldsOneWordWithOriginalContent(t *testing.T) {
	inputs := []string{
		"", "plain", "a b", `a "b" c`, `back\slash`, "$VAR ${VAR}", "# not a comment",
		"'single'", "tab\there", "mixed \\\"$#' ", "x-forwarded-for", "%[req.hdr(host)]",
	}
	for _, in := range inputs {
		quoted := syntax.Quote(in)
		words, err := haproxyUnquote("keyword " + quoted + " trailing")
		if err != nil {
			t.Errorf("syntax.Quote(%q) = %s: %v", in, quoted, err)
			continue
		}
		want := []string{"keyword", syntax.StripControl(in), "trailing"}
		if !reflect.DeepEqual(words, want) {
			t.Errorf("syntax.Quote(%q) = %s parses as %q, want %q", in, quoted, words, want)
		}
	}
}

func TestHelpersFromTemplate(t *testing.T) {
	alias := model.ServiceAliasConfig{
		Host: "www.example.com", Path: "/api", TLSTermination: routev1.TLSTerminationEdge,
		IsWildcard: true, PreferPort: "http",
		Annotations: map[string]string{
			"haproxy.router.openshift.io/timeout":      "100d",
			"haproxy.router.openshift.io/ip_whitelist": "10.0.0.1 bogus",
			"haproxy.router.openshift.io/balance":      "leastconn",
		},
	}
	svc := model.ServiceUnit{EndpointTable: helperTestEndpoints()}
	data := map[string]any{"Alias": alias, "Svc": svc}
	tests := []struct {
		text string
		want string
	}{
		{`{{ isTrue "true" }} {{ isInteger "12" }}`, "true true"},
		{`{{ matchPattern "[a-z]+" "abc" }} {{ matchValues "b" "a" "b" }}`, "true true"},
		{`{{ firstMatch "[1-9][0-9]*s" "x" "5s" }}`, "5s"},
		{`{{ len (endpointsForAlias .Alias .Svc) }}`, "2"},
		{`{{ len (processEndpointsForAlias .Alias .Svc "shuffle") }}`, "2"},
		{`{{ genCertificateHostName .Alias.Host .Alias.IsWildcard }}`, "*.example.com"},
		{`{{ genSubdomainWildcardRegexp .Alias.Host .Alias.Path false }}`, `^[^\.]*\.example\.com/api(|/.*)$`},
		{`{{ generateRouteRegexp .Alias.Host .Alias.Path false }}`, `^www\.example\.com\.?(:[0-9]+)?/api(/.*)?$`},
		{`{{ genBackendNamePrefix .Alias.TLSTermination }}`, "be_edge_http"},
		{`{{ clipHAProxyTimeoutValue (index .Alias.Annotations "haproxy.router.openshift.io/timeout") }}`, syntax.MaxTimeout},
		{`{{ parseIPList (index .Alias.Annotations "haproxy.router.openshift.io/ip_whitelist") }}`, "10.0.0.1"},
		{`{{ routeMapKey .Alias.Host .Alias.Path }}`, "www.example.com/api/"},
		{`{{ haproxyQuote "a b" }}`, `"a b"`},
	}
	for _, tt := range tests {
		if got := execHelperTemplate(t, FuncOptions{Rand: rand.New(rand.NewSource(1))}, tt.text, data); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestDocumentedExamples executes the examples of docs/templates.md.
func TestDocumentedExamples(t *testing.T) {
	cfg := model.ServiceAliasConfig{
		Name: "r", Namespace: "ns", Host: "www.example.com", Path: "/test",
		TLSTermination: routev1.TLSTerminationEdge,
		Annotations: map[string]string{
			"haproxy.router.openshift.io/timeout":                    "1000h",
			"haproxy.router.openshift.io/ip_whitelist":               "10.0.0.1 bogus 10.1.0.0/16",
			"haproxy.router.openshift.io/pod-concurrent-connections": "10",
			"example.com/response-header":                            "a $b",
		},
		ServiceUnitNames: map[model.ServiceUnitKey]int32{"ns/svc": 256},
	}
	td := model.TemplateData{
		State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{"ns:r": cfg},
		ServiceUnits: map[model.ServiceUnitKey]model.ServiceUnit{
			"ns/svc": {Name: "ns/svc", EndpointTable: []model.Endpoint{{ID: "ept:svc:10.0.0.1:80", IP: "10.0.0.1", Port: "80", IdHash: "h"}}},
		},
	}
	opts := FuncOptions{Getenv: fakeGetenv(map[string]string{"ROUTER_USE_PROXY_PROTOCOL": "true"})}
	tests := []struct {
		text string
		want string
	}{
		{`maxconn {{ env "ROUTER_MAX_CONNECTIONS" "20000" }}`, "maxconn 20000"},
		{`{{ firstMatch "[1-9][0-9]*(us|ms|s|m|h|d)?" (env "ROUTER_DEFAULT_CONNECT_TIMEOUT") "5s" }}`, "5s"},
		{`bind :80{{- if isTrue (env "ROUTER_USE_PROXY_PROTOCOL") }} accept-proxy{{ end }}`, "bind :80 accept-proxy"},
		{`{{ range $k, $cfg := .State }}{{- with $n := index $cfg.Annotations "haproxy.router.openshift.io/pod-concurrent-connections" }}
  {{- if isInteger $n }} maxconn {{ $n }}{{ end }}
{{- end }}{{ end }}`, " maxconn 10"},
		{`{{ range $k, $cfg := .State }}{{- if matchValues (print $cfg.TLSTermination) "edge" "reencrypt" }}tls{{ end }}{{ if eq $cfg.TLSTermination "edge" }} edge{{ end }}{{ end }}`, "tls edge"},
		{`{{ $algo := "leastconn" }}{{- if matchPattern "roundrobin|leastconn|source|random" $algo }}balance {{ $algo }}{{ end }}`, "balance leastconn"},
		{`{{ range $k, $cfg := .State }}timeout server {{ firstMatch "[1-9][0-9]*(us|ms|s|m|h|d)?" (index $cfg.Annotations "haproxy.router.openshift.io/timeout") (env "ROUTER_DEFAULT_SERVER_TIMEOUT") "30s" }}{{ end }}`, "timeout server 1000h"},
		{`{{ range $k, $cfg := .State }}{{- with $t := clipHAProxyTimeoutValue (index $cfg.Annotations "haproxy.router.openshift.io/timeout") }}
  timeout server {{ $t }}
{{- end }}{{ end }}`, "\n  timeout server 2147483647ms"},
		{`{{ range $k, $cfg := .State }}{{- with $ips := parseIPList (index $cfg.Annotations "haproxy.router.openshift.io/ip_whitelist") }}
  acl allowlist src {{ $ips }}
{{- end }}{{ end }}`, "\n  acl allowlist src 10.0.0.1 10.1.0.0/16"},
		{`{{ range $k, $cfg := .State }}{{- range $suKey, $weight := $cfg.ServiceUnitNames }}
  {{- with $su := index $.ServiceUnits $suKey }}
    {{- range $ep := processEndpointsForAlias $cfg $su (env "ROUTER_BACKEND_PROCESS_ENDPOINTS") }}
  server {{ $ep.ID }} {{ $ep.IP }}:{{ $ep.Port }} cookie {{ $ep.IdHash }} weight {{ $weight }}
    {{- end }}
  {{- end }}
{{- end }}{{ end }}`, "\n  server ept:svc:10.0.0.1:80 10.0.0.1:80 cookie h weight 256"},
		{`{{ range $cfgIdx, $cfg := .State }}backend {{ genBackendNamePrefix $cfg.TLSTermination }}:{{ $cfgIdx }}{{ end }}`, "backend be_edge_http:ns:r"},
		{`{{- range $host, $group := getHTTPAliasesGroupedByHost .State }}
# {{ $host }}: primary route {{ getPrimaryAliasKey $group }}
{{- end }}`, "\n# www.example.com: primary route ns:r"},
		{`{{ generateRouteRegexp "www.example.com" "/test" false }}`, `^www\.example\.com\.?(:[0-9]+)?/test(/.*)?$`},
		{`{{ range $key, $cfg := .State -}}
{{ routeMapKey $cfg.Host $cfg.Path }} {{ genBackendNamePrefix $cfg.TLSTermination }}:{{ $key }}
{{ end -}}`, "www.example.com/test/ be_edge_http:ns:r\n"},
		{`{{ range $k, $cfg := .State }}{{- with index $cfg.Annotations "example.com/response-header" }}
  http-response set-header X-Example {{ haproxyQuote . }}
{{- end }}{{ end }}`, "\n  http-response set-header X-Example \"a \\$b\""},
		{`{{ haproxyQuote "a b" }} {{ haproxyQuote "$HOME" }} {{ haproxyQuote "be_http:ns:name" }}`, `"a b" "\$HOME" be_http:ns:name`},
		{`{{- range $line := generateHAProxyMap "os_edge_reencrypt_be.map" . }}
{{ $line }}
{{- end }}`, "\n" + `^www\.example\.com\.?(:[0-9]+)?/test(/.*)?$ be_edge_http:ns:r`},
	}
	for _, tt := range tests {
		if got := execHelperTemplate(t, opts, tt.text, td); got != tt.want {
			t.Errorf("%s\ngot  %q\nwant %q", tt.text, got, tt.want)
		}
	}
}

func TestHAProxyLogFormatNeutralisesSampleFetches(t *testing.T) {
	cases := map[string]string{
		"x %[env(SECRET)]": `"x %%[env(SECRET)]"`,
		"100%":             `"100%%"`,
		"plain":            "plain",
		"a\nb # c":         `"ab \# c"`,
	}
	for in, want := range cases {
		if got := syntax.LogFormat(in); got != want {
			t.Errorf("syntax.LogFormat(%q) = %s, want %s", in, got, want)
		}
	}
}
