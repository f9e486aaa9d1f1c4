package templates

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

func TestProcessRewriteTargetKeepsOpenShiftMeaning(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"root", `/`, `/\1`},
		{"path", `/foo`, `/foo\1`},
		{"comment ends the value and drops the capture", `/foo#bar`, `/foo`},
		{"escaped hash is literal", `/foo\#bar`, `/foo#bar\1`},
		{"double quote removed", `/foo"bar`, `/foobar\1`},
		{"escaped double quote is literal", `/foo\"bar`, `/foo"bar\1`},
		{"single quote removed", `/foo'bar`, `/foobar\1`},
		{"escaped single quote stays quoted", `/foo\'bar`, `/foo'\''bar\1`},
		{"single percent doubled", `/%`, `/%%\1`},
		{"double percent kept", `/%%`, `/%%\1`},
		{"odd run of percents doubled", `/%%%`, `/%%%%%%\1`},
		{"double backslash becomes one", `/a\\b`, `/a\b\1`},
		{"single backslash removed", `/a\b`, `/ab\1`},
		{"control characters removed", "/a\nb\r", `/ab\1`},
		{"empty", ``, `\1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProcessRewriteTarget(tc.in); got != tc.want {
				t.Errorf("ProcessRewriteTarget(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEscapeSingleQuotesForSingleQuotedWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`/path`, `/path`},
		{`/it's`, `/it'\''s`},
		{"/a\r\nb", `/ab`},
		{"/a\x00b", `/ab`},
	} {
		if got := syntax.EscapeSingleQuotes(tc.in); got != tc.want {
			t.Errorf("EscapeSingleQuotes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValidateHAProxyAllowlistCountsEntriesUpTo61(t *testing.T) {
	list := func(n int) string {
		ips := make([]string, n)
		for i := range ips {
			ips[i] = "10.0.0.1"
		}
		return strings.Join(ips, " ")
	}
	for _, tc := range []struct {
		n    int
		want bool
	}{{0, true}, {1, true}, {61, true}, {62, false}, {200, false}} {
		if got := ValidateHAProxyAllowlist(list(tc.n)); got != tc.want {
			t.Errorf("%d entries: got %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestAllowlistFileIsOneEntryALineUnderRouterAllowlists(t *testing.T) {
	p, data := AllowlistFile("/wd", "ns:r", "10.0.0.1 192.168.0.0/16  fd00::/8 bogus")
	if p != "/wd/router/allowlists/ns:r.txt" {
		t.Errorf("path = %q", p)
	}
	if string(data) != "# route ns/r\n10.0.0.1\n192.168.0.0/16\nfd00::/8\n" {
		t.Errorf("data = %q", data)
	}
	// A long key gets a bounded name.
	long := model.ServiceAliasConfigKey(strings.Repeat("n", 63) + ":" + strings.Repeat("r", 253))
	if p, _ := AllowlistFile("/wd", long, "10.0.0.1"); p != "/wd/router/allowlists/"+long.FileName()+".txt" || len(p) > 200 {
		t.Errorf("long key: path %q", p)
	}
	for _, bad := range []model.ServiceAliasConfigKey{"", "..", "../x", "a/b", "a\nb"} {
		if p, _ := AllowlistFile("/wd", bad, "10.0.0.1"); p != "" {
			t.Errorf("id %q: path %q, want none", bad, p)
		}
	}
}

func TestRendererReturnsGeneratedAllowlistFiles(t *testing.T) {
	text := `{{ define "conf/haproxy.config" }}
{{- range $k, $cfg := .State }}
{{- with $ips := parseIPList (index $cfg.Annotations "haproxy.router.openshift.io/ip_allowlist") }}
{{- if validateHAProxyAllowlist $ips }}acl allowlist src {{ $ips }}
{{ else }}acl allowlist src -f {{ generateHAProxyAllowlistFile $.WorkingDir $k $ips }}
{{ end }}{{ end }}{{ end }}{{ end }}`
	r, err := Parse("t", text, FuncMap(FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.TrimSpace(strings.Repeat("10.1.0.1 ", 62))
	td := &model.TemplateData{WorkingDir: "/wd", State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:short": {Annotations: map[string]string{"haproxy.router.openshift.io/ip_allowlist": "10.0.0.1"}},
		"ns:long":  {Annotations: map[string]string{"haproxy.router.openshift.io/ip_allowlist": long}},
	}}
	for round := 0; round < 2; round++ { // a second Render starts afresh
		fs, err := r.Render(td)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 2 {
			t.Fatalf("files = %d, want config and one allowlist file", len(fs))
		}
		cfg := string(fs[0].Data)
		want := "acl allowlist src -f /wd/router/allowlists/ns:long.txt\nacl allowlist src 10.0.0.1\n"
		if cfg != want {
			t.Errorf("config = %q, want %q", cfg, want)
		}
		if fs[1].Path != filepath.Join("/wd", "router/allowlists/ns:long.txt") || strings.Count(string(fs[1].Data), "10.1.0.1\n") != 62 {
			t.Errorf("allowlist file %s = %q", fs[1].Path, fs[1].Data)
		}
	}
}

func TestFuncMapHasEveryOpenShiftHelper(t *testing.T) {
	fm := FuncMap(FuncOptions{})
	// The names registered by OpenShift's router (template_helper.go).
	for _, name := range []string{
		"endpointsForAlias", "processEndpointsForAlias", "env", "matchPattern", "isInteger", "matchValues",
		"genSubdomainWildcardRegexp", "generateRouteRegexp", "genCertificateHostName", "genBackendNamePrefix",
		"isTrue", "firstMatch", "getHTTPAliasesGroupedByHost", "getPrimaryAliasKey", "generateHAProxyMap",
		"validateHAProxyAllowlist", "generateHAProxyAllowlistFile", "clipHAProxyTimeoutValue", "parseIPList",
		"processRewriteTarget", "escapeSingleQuotes",
	} {
		if fm[name] == nil {
			t.Errorf("helper %q missing", name)
		}
	}
}
