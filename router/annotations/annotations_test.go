package annotations

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/syntax"
)

func TestParseValid(t *testing.T) {
	seven := 7
	got, problems := Parse(map[string]string{
		Balance: "random", DisableCookies: "TRUE", CookieName: "a_B-1", HAProxyCookieName: "other",
		CookieSameSite: "lax", PodConcurrentConnections: "0", RateLimit: "true", RateLimitConcurrentTCP: "1",
		RateLimitRateHTTP: "2", RateLimitRateTCP: "3", Timeout: "5500", TimeoutTunnel: "25d",
		HealthCheckInterval: "500us", IPWhitelist: "10.0.0.1", IPAllowlist: "192.168.1.0/24\t2001:DB8::1",
		HSTSHeader: `MAX-AGE="600" ; preload;includesubdomains`, RewriteTarget: "/x/", SetForwardedHeaders: "if-none",
		PoolSize: " 7 ",
	}, Input{Termination: "edge", Path: "/a/"})
	want := Route{
		Balance: "random", DisableCookies: true, CookieName: "a_B-1", CookieSameSite: "Lax", RateLimit: true,
		RateLimitConcurrentTCP: 1, RateLimitRateHTTP: 2, RateLimitRateTCP: 3, Timeout: "5500", TimeoutTunnel: syntax.MaxTimeout,
		HealthCheckInterval: "500us", Allowlist: []string{"192.168.1.0/24", "2001:DB8::1"},
		HSTSHeader: "max-age=600;includeSubDomains;preload", RewriteTarget: "/x/", RewritePrefix: "/a", ForwardedHeaders: "if-none",
		PoolSize: &seven,
	}
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseInvalidValuesAreDroppedAndReported(t *testing.T) {
	for name, c := range map[string]struct {
		ann  string
		val  string
		term string
	}{
		"balance":         {Balance, "first", ""},
		"cookie":          {CookieName, "a b", ""},
		"cookie-hash":     {HAProxyCookieName, "a#", ""},
		"samesite":        {CookieSameSite, "Lax\n", ""},
		"maxconn":         {PodConcurrentConnections, "-1", ""},
		"rate":            {RateLimitRateHTTP, "1e3", ""},
		"timeout-blank":   {Timeout, "10 s", ""},
		"timeout-zero":    {Timeout, "0", ""},
		"timeout-lead0":   {TimeoutTunnel, "010s", ""},
		"timeout-nl":      {HealthCheckInterval, "1s\nbackend x", ""},
		"allowlist":       {IPAllowlist, "10.0.0.300", ""},
		"allowlist-blank": {IPAllowlist, "10.0.0.1 ", ""},
		"allowlist-zone":  {IPWhitelist, "fe80::1%eth0", ""},
		"allowlist-empty": {IPAllowlist, "  ", ""},
		"hsts-plain":      {HSTSHeader, "max-age=1", ""},
		"hsts-passthru":   {HSTSHeader, "max-age=1", "passthrough"},
		"hsts-no-age":     {HSTSHeader, "preload", "edge"},
		"hsts-twice":      {HSTSHeader, "max-age=1;max-age=2", "edge"},
		"hsts-junk":       {HSTSHeader, "max-age=1\n  acl a src 1.1.1.1", "edge"},
		"rewrite-rel":     {RewriteTarget, "x", ""},
		"rewrite-fmt":     {RewriteTarget, "/%[src]", ""},
		"rewrite-blank":   {RewriteTarget, "/a b", ""},
		"rewrite-pt":      {RewriteTarget, "/", "passthrough"},
		"forwarded":       {SetForwardedHeaders, "Replace", ""},
		"pool-negative":   {PoolSize, "-1", ""},
		"pool-too-large":  {PoolSize, "257", ""},
		"pool-word":       {PoolSize, "five", ""},
	} {
		t.Run(name, func(t *testing.T) {
			ann := map[string]string{c.ann: c.val, RateLimit: "true"}
			got, problems := Parse(ann, Input{Termination: c.term})
			if len(problems) != 1 || problems[0].Annotation != c.ann {
				t.Fatalf("problems %v, want one for %s", problems, c.ann)
			}
			if !strings.Contains(problems[0].String(), c.ann) || strings.Contains(problems[0].String(), "\n") {
				t.Errorf("problem text %q", problems[0].String())
			}
			if !reflect.DeepEqual(got, Route{RateLimit: true}) {
				t.Errorf("invalid value kept: %+v", got)
			}
		})
	}
}

func TestRateLimitsNeedRateLimitEnabled(t *testing.T) {
	got, _ := Parse(map[string]string{RateLimit: "yes", RateLimitRateHTTP: "5"}, Input{})
	if got.RateLimit || got.RateLimitRateHTTP != 0 {
		t.Errorf("limits without rate-limit-connections=true: %+v", got)
	}
}

func TestRewritePrefixFromPath(t *testing.T) {
	for path, want := range map[string]string{"": "", "/": "", "/a": "/a", "/a/": "/a", "/a/b": "/a/b"} {
		got, _ := Parse(map[string]string{RewriteTarget: "/"}, Input{Path: path})
		if got.RewritePrefix != want || got.RewritePrefixLen() != len(want) || got.RewriteTargetTrimmed() != "" {
			t.Errorf("path %q: prefix %q, want %q", path, got.RewritePrefix, want)
		}
	}
	if _, p := Parse(map[string]string{RewriteTarget: "/"}, Input{Path: "/a b"}); len(p) != 1 {
		t.Errorf("unsafe route path accepted for rewrite-target")
	}
}

func TestAllowlistLines(t *testing.T) {
	r := Route{Allowlist: make([]string, 101)}
	lines := r.AllowlistLines()
	if len(lines) != 3 || len(lines[0]) != 50 || len(lines[2]) != 1 {
		t.Errorf("101 entries split as %d lines", len(lines))
	}
	if _, _, err := ParseIPList(strings.Repeat("1.1.1.1 ", MaxAllowlistEntries) + "1.1.1.1"); err == nil {
		t.Errorf("list over the maximum accepted")
	}
}

// TestAllowlistDropsInvalidEntriesAsOpenShift: an allowlist with an
// invalid entry keeps its valid entries (OpenShift's parseIPList), and the
// dropped entry is reported.
func TestAllowlistDropsInvalidEntriesAsOpenShift(t *testing.T) {
	got, problems := Parse(map[string]string{IPAllowlist: "10.0.0.1 10.0.0.300 fe80::1%eth0"}, Input{})
	if !reflect.DeepEqual(got.Allowlist, []string{"10.0.0.1"}) {
		t.Errorf("allowlist %q, want [10.0.0.1]", got.Allowlist)
	}
	if len(problems) != 1 || !problems[0].Partly || !strings.Contains(problems[0].String(), "partly ignored") || !strings.Contains(problems[0].String(), "10.0.0.300") {
		t.Errorf("problems %v, want one naming the dropped entry", problems)
	}
}

func TestH1AdjustCase(t *testing.T) {
	for _, c := range []struct {
		v, term  string
		want     bool
		problems int
	}{
		{"true", "", true, 0}, {"TRUE", "edge", true, 0}, {"false", "reencrypt", false, 0}, {"yes", "", false, 0},
		{"true", "passthrough", false, 1}, {"false", "passthrough", false, 0},
	} {
		got, problems := Parse(map[string]string{H1AdjustCase: c.v}, Input{Termination: c.term})
		if got.H1AdjustCase != c.want || len(problems) != c.problems {
			t.Errorf("%q on %q: got %v %v, want %v and %d problems", c.v, c.term, got.H1AdjustCase, problems, c.want, c.problems)
		}
	}
}

func TestAllowlistInFile(t *testing.T) {
	for n, want := range map[int]bool{0: false, 1: true, 61: true, 62: true, 100: true} {
		r := Route{Allowlist: make([]string, n)}
		if r.AllowlistInFile() != want {
			t.Errorf("%d entries: AllowlistInFile %v, want %v", n, !want, want)
		}
	}
}
