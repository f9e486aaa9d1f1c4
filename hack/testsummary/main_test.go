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
