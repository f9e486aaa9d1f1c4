package syntax_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/prereq"
)

// regexCases are expressions MatchRegex takes and values to match them
// against in full.
var regexCases = []struct {
	expr   string
	values []string
}{
	{`/api/v[0-9]+/.*`, []string{"/api/v1/x", "/api/v12/", "/api/v/x", "/api/v1", "/xapi/v1/x", "/api/v1/x\n"}},
	{`.*\.(jpg|png)`, []string{"/a.jpg", "/a.png", "/a.jpgx", "/ajpg", ".png"}},
	{`(?i)/Foo/bar`, []string{"/foo/bar", "/FOO/BAR", "/foo/barx", "/fo/bar"}},
	{`/a b'c"d\$e#f%g`, []string{`/a b'c"d$e#f%g`, `/a b'c"d\$e#f%g`, "/a"}},
	{`[^/]+/x?`, []string{"abc/", "abc/x", "a/b", "/", "\xffz/"}},
	{`a{2,3}b{2}c{1,}`, []string{"aabbc", "aaabbccc", "abbc", "aaaabbc", "aabbbc"}},
	{`^/x$`, []string{"/x", "/x\n", "/xx"}},
	{`\bword\b.*`, []string{"word", "word!", "words"}},
	{`(?s)a.b`, []string{"a\nb", "axb"}},
	{`a.b`, []string{"a\nb", "axb"}},
	{`[[:digit:]\-_]+`, []string{"1-2_3", "1a"}},
	{`(foo|bar)?baz`, []string{"baz", "foobaz", "barbaz", "foobarbaz"}},
	{`x*?y+?`, []string{"xxy", "y", "x"}},
	{``, []string{"", "a"}},
	{`a|`, []string{"", "a", "b"}},
	{`[^\x00-\x{10FFFF}]`, []string{"", "a"}},
	{`\pL+`, []string{"abc", "a1", "\xc3\xa9"}},
}

// TestMatchRegexMatchesWhatTheExpressionMatchesInFull checks the written
// pattern against Go's own engine (it reads the same syntax) on the
// expressions' whole-value matches, ASCII values.
func TestMatchRegexMatchesWhatTheExpressionMatchesInFull(t *testing.T) {
	for _, c := range regexCases {
		pat, err := syntax.MatchRegex(c.expr)
		if err != nil {
			t.Fatalf("MatchRegex(%q): %v", c.expr, err)
		}
		for i := 0; i < len(pat); i++ {
			if pat[i] < ' ' || pat[i] >= 0x7f || pat[i] == '\'' || pat[i] == '"' {
				t.Fatalf("MatchRegex(%q) = %q: not plain printable ASCII", c.expr, pat)
			}
		}
		want := regexp.MustCompile(`^(?:` + c.expr + `)$`)
		got := regexp.MustCompile(pat)
		for _, v := range c.values {
			if !isASCII(v) {
				continue // (Go reads runes, PCRE here bytes)
			}
			if w, g := want.MatchString(v), got.MatchString(v); w != g {
				t.Errorf("%q on %q: pattern %q matches %v, the expression %v", c.expr, v, pat, g, w)
			}
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func TestMatchRegexRefusesWhatCouldBacktrackForLongOrIsNotASCII(t *testing.T) {
	for expr, why := range map[string]string{
		`(a+)+b`:        "a repetition inside a repetition",
		`(a*)*`:         "a repetition inside a repetition",
		`(a?){20}a{20}`: "a repetition inside a repetition",
		`(a|aa)*b`:      "alternatives inside a repetition",
		`(xa|yb){2,5}`:  "alternatives inside a repetition",
		`a*b*c*`:        "more than 2 unbounded repetitions",
		strings.Repeat("a?", 40) + strings.Repeat("a", 40): "more than 4 parts of varying width",
		strings.Repeat("(a|aa)", 40) + "b":                 "more than 4 parts of varying width",
		strings.Repeat(".{0,100}", 20):                     "more than 4 parts of varying width",
		`a{101}`:                                           "repetition counts over 100",
		`(?m)^a$`:                                          "multi-line flag",
		`é`:                                                "printable ASCII",
		"a\nb":                                             "printable ASCII",
		`a(`:                                               "not a regular expression",
		`(?P<n>a)\k<n>`:                                    "not a regular expression",
		strings.Repeat("a", 257):                           "longer than 256",
		`\x{e9}`:                                           "only ASCII literals",
		strings.Repeat(`\W`, 100):                          "too complex",
	} {
		if _, err := syntax.MatchRegex(expr); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("MatchRegex(%q) = %v, want an error with %q", expr, err, why)
		}
	}
}

// TestHAProxyMatchesMatchRegexPatternsAsGoDoes runs the patterns in the
// real haproxy (PCRE2): a request's header value is matched with "-m reg"
// as the default template matches paths, headers and query parameters.
func TestHAProxyMatchesMatchRegexPatternsAsGoDoes(t *testing.T) {
	haproxy := prereq.NeedBinary(t, "haproxy")
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"defaults", "  mode http", "  timeout connect 5s", "  timeout client 30s", "  timeout server 30s",
		"frontend f", "  bind 127.0.0.1:" + strconv.Itoa(ports[0])}
	for i, c := range regexCases {
		pat, err := syntax.MatchRegex(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("  http-request return status 200 if { req.hdr(x-case) -m str %d } { req.fhdr(x-v) -m reg -- %s }", i, syntax.Quote(pat)))
	}
	lines = append(lines, "  http-request return status 404", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.config")
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(haproxy, "-db", "-f", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("haproxy does not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for i, c := range regexCases {
		want := regexp.MustCompile(`^(?:` + c.expr + `)$`)
		for _, v := range c.values {
			if !isASCII(v) || strings.ContainsAny(v, "\n") {
				continue // (not a header value)
			}
			req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
			req.Header.Set("x-case", strconv.Itoa(i))
			req.Header.Set("x-v", v)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == 200; got != want.MatchString(v) {
				t.Errorf("%q on %q: haproxy matches %v, Go %v", c.expr, v, got, !got)
			}
		}
	}
}
