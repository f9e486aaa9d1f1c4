package prereq

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a TB that remembers whether Require failed or skipped.
type recorder struct {
	failed, skipped string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }

func TestMissingComponentFailsWithInstallHintUnlessQuick(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing to find
	for _, tc := range []struct {
		name, quick    string
		wantFail, hint string
	}{
		{"fails by default", "", "haproxy is missing", "apt-get install haproxy"},
		{"fails when the variable is 0", "0", "haproxy is missing", "make unit"},
		{"skips on the quick path", "1", "", "apt-get install haproxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(QuickEnv, tc.quick)
			var r recorder
			NeedBinary(&r, "haproxy")
			if tc.wantFail != "" {
				if !strings.Contains(r.failed, tc.wantFail) || !strings.Contains(r.failed, tc.hint) || r.skipped != "" {
					t.Fatalf("failed %q, skipped %q; want a failure naming %q with %q", r.failed, r.skipped, tc.wantFail, tc.hint)
				}
				return
			}
			if r.failed != "" || !strings.Contains(r.skipped, tc.hint) {
				t.Fatalf("failed %q, skipped %q; want a skip with %q", r.failed, r.skipped, tc.hint)
			}
		})
	}
}

func TestOtherErrorsFailEvenOnTheQuickPath(t *testing.T) {
	t.Setenv(QuickEnv, "1")
	var r recorder
	Require(&r, fmt.Errorf("etcd exited: boom"))
	if r.failed == "" || r.skipped != "" {
		t.Fatalf("failed %q, skipped %q", r.failed, r.skipped)
	}
}

func TestEveryComponentHasAnInstallHint(t *testing.T) {
	for _, c := range []string{"haproxy", "wrk", "etcd", "ip", "kube-apiserver", "root"} {
		msg := (&Missing{Component: c}).Error()
		if strings.Contains(msg, "or install it;") {
			t.Errorf("%s: no install hint: %s", c, msg)
		}
	}
}

// TestHAProxyHiddenFailsTheTestsThatNeedIt runs a real package's tests that
// need haproxy with a PATH that has go but no haproxy: without the quick
// path they fail with the install hint, with it they skip.
func TestHAProxyHiddenFailsTheTestsThatNeedIt(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir()
	if err := os.Symlink(goBin, filepath.Join(path, "go")); err != nil {
		t.Fatal(err)
	}
	run := func(quick string) (string, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "-run", "TestExecAgainstHAProxy", "./haproxy/runtimeapi/")
		cmd.Dir = "../.."
		env := []string{"PATH=" + path, QuickEnv + "=" + quick}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, QuickEnv+"=") {
				env = append(env, kv)
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err == nil || !strings.Contains(out, "haproxy is missing") || !strings.Contains(out, "apt-get install haproxy") {
		t.Fatalf("without haproxy: err %v, want a failure with the install hint:\n%s", err, out)
	}
	out, err = run("1")
	if err != nil || !strings.Contains(out, "ok ") {
		t.Fatalf("without haproxy on the quick path: err %v, want ok (skipped):\n%s", err, out)
	}
}
