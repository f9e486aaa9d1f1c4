package syntax_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/test/prereq"
)

// TestHAProxyRoundsSubMillisecondTimesUpNotToZero is the fact ClipTimeout
// relies on to write sub-millisecond values as given: the real haproxy
// refuses a check interval of 0 but accepts "1us" and "500us" (it rounds
// them up to 1ms), and warns about a missing connect timeout for 0 but not
// for "500us".
func TestHAProxyRoundsSubMillisecondTimesUpNotToZero(t *testing.T) {
	haproxy := prereq.NeedBinary(t, "haproxy")
	check := func(v string) string {
		t.Helper()
		cfg := strings.Join([]string{
			"defaults",
			"  mode http",
			"  timeout connect " + v,
			"  timeout client 30s",
			"  timeout server 30s",
			// haproxy -c only parses: the port is not bound.
			"frontend f",
			"  bind 127.0.0.1:1",
			"  default_backend b",
			"backend b",
			"  server s 127.0.0.1:1 check inter " + v,
			"",
		}, "\n")
		p := filepath.Join(t.TempDir(), "haproxy.config")
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(haproxy, "-c", "-f", p).CombinedOutput()
		return string(out)
	}
	if out := check("0"); !strings.Contains(out, "invalid value 0 for argument 'inter'") {
		t.Fatalf("control: haproxy accepted inter 0:\n%s", out)
	}
	for _, v := range []string{"1us", "500us", "999us"} {
		got, clipped, err := syntax.ClipTimeout(v)
		if got != v || clipped || err != nil {
			t.Fatalf("ClipTimeout(%q) = %q, %v, %v", v, got, clipped, err)
		}
		out := check(got)
		if !strings.Contains(out, "Configuration file is valid") || strings.Contains(out, "missing timeouts") {
			t.Errorf("%s: haproxy treats it as 0:\n%s", v, out)
		}
	}
}

// TestHAProxyTakesEveryRetryOnStatus: the real haproxy accepts retry-on
// with each of RetryOnStatuses, and refuses a status beyond them (505).
func TestHAProxyTakesEveryRetryOnStatus(t *testing.T) {
	haproxy := prereq.NeedBinary(t, "haproxy")
	check := func(statuses string) (string, error) {
		cfg := "defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n" +
			"frontend f\n  bind 127.0.0.1:1\n  default_backend b\n" +
			"backend b\n  retry-on conn-failure empty-response " + statuses + "\n  retries 2\n  server s 127.0.0.1:1\n"
		p := filepath.Join(t.TempDir(), "haproxy.config")
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(haproxy, "-c", "-f", p).CombinedOutput()
		return string(out), err
	}
	var all []string
	for _, s := range syntax.RetryOnStatuses {
		all = append(all, strconv.Itoa(s))
	}
	if out, err := check(strings.Join(all, " ")); err != nil {
		t.Errorf("haproxy refuses retry-on %v: %v\n%s", all, err, out)
	}
	if out, err := check("505"); err == nil {
		t.Errorf("control: haproxy takes retry-on 505:\n%s", out)
	}
}
