package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedTestsMessagesRepeatedAtTheEnd: a failed test's message lines
// (not the logs it printed) appear again after the output, before the
// counts, so the tail of a long log names the failure.
func TestFailedTestsMessagesRepeatedAtTheEnd(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: router log:\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"        I1126 12:00:00 something long\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:40: reloads 3, were 2\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rc := run(bufio.NewScanner(strings.NewReader(in)), f); rc != 1 {
		t.Errorf("exit %d, want 1", rc)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	i := strings.Index(out, "failures:\n")
	if i < 0 {
		t.Fatalf("no failures section:\n%s", out)
	}
	tail := out[i:]
	if !strings.Contains(tail, "p TestA: a_test.go:40: reloads 3, were 2") {
		t.Errorf("failures section does not name the failed assertion:\n%s", tail)
	}
	if strings.Contains(tail, "I1126") {
		t.Errorf("failures section repeats the test's logs:\n%s", tail)
	}
	if !strings.HasSuffix(out, "1 passed, 1 failed, 0 skipped\n") {
		t.Errorf("output does not end with the counts:\n%s", out)
	}
}

// summarize runs the summary on lines and returns its exit code and output.
func summarize(t *testing.T, lines ...string) (int, string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc := run(bufio.NewScanner(strings.NewReader(strings.Join(lines, "\n"))), f)
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return rc, string(b)
}

// TestNamedRunsAreLabelledAndCountedInTheTotal: a second run after a
// "testsummary-run: NAME" line (make test's core e2e tests on HAProxy 3.0)
// has its packages named after it, its own counts, and is counted in the
// closing line; a failure in either run fails the summary, and so does a
// named run without tests.
func TestNamedRunsAreLabelledAndCountedInTheTotal(t *testing.T) {
	first := []string{
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Output":"ok  \tp\t1.0s\n"}`,
		`{"Action":"pass","Package":"p"}`,
	}
	tests := []struct {
		name     string
		second   []string
		wantRC   int
		wantText []string
	}{
		{
			name: "both pass",
			second: []string{
				`{"Action":"pass","Package":"p","Test":"TestA"}`,
				`{"Action":"output","Package":"p","Output":"ok  \tp\t2.0s\n"}`,
				`{"Action":"pass","Package":"p"}`,
			},
			wantRC:   0,
			wantText: []string{"\n# HAProxy 3.0\n", "ok  \tp\t2.0s [HAProxy 3.0]\n", "of these, HAProxy 3.0: 1 passed, 0 failed, 0 skipped\n", "\n3 passed, 0 failed, 0 skipped\n"},
		},
		{
			name: "a failure in the second run",
			second: []string{
				`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: no answer\n"}`,
				`{"Action":"fail","Package":"p","Test":"TestA"}`,
				`{"Action":"fail","Package":"p"}`,
			},
			wantRC:   1,
			wantText: []string{"p [HAProxy 3.0] TestA: a_test.go:9: no answer\n", "of these, HAProxy 3.0: 0 passed, 1 failed, 0 skipped\n", "\n2 passed, 1 failed, 0 skipped\n"},
		},
		{
			name: "a second run without tests",
			second: []string{
				`{"Action":"output","Package":"p","Output":"testing: warning: no tests to run\n"}`,
				`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s [no tests to run]\n"}`,
				`{"Action":"pass","Package":"p"}`,
			},
			wantRC:   1,
			wantText: []string{"\n2 passed, 0 failed, 0 skipped\n", "testsummary: no test ran in HAProxy 3.0\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := append(append(append([]string{}, first...), "testsummary-run: HAProxy 3.0"), tc.second...)
			rc, out := summarize(t, lines...)
			if rc != tc.wantRC {
				t.Errorf("exit %d, want %d:\n%s", rc, tc.wantRC, out)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
