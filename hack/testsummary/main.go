// Command testsummary reads `go test -json` on stdin and prints what a
// non-verbose `go test` prints (each package's ok/FAIL line, the output of
// failed tests, build errors), plus every skipped test with its reason and a
// closing line "N passed, N failed, N skipped". It exits 1 when a test or a
// package failed, or when the input holds no test at all.
//
//	go test -json ./... | go run ./hack/testsummary
//
// Several runs can share one summary: a line "testsummary-run: NAME" between
// them starts a run named NAME. Its packages are reported as "pkg [NAME]"
// (so a test that ran in two runs is counted twice, once for each), it gets
// a line of its own counts before the closing line, which counts all runs,
// and a named run without any test is a failure (a -run pattern that
// matches nothing).
//
//	{ go test -json ./...; echo "testsummary-run: HAProxy 3.0"; HAPROXY=… go test -json -run … ./test/e2e; } | go run ./hack/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

type key struct{ pkg, test string }

// runMarker starts a named run (see the package comment).
const runMarker = "testsummary-run: "

// counts are the results of a named run.
type counts struct {
	name                    string
	passed, failed, skipped int
}

func main() {
	os.Exit(run(bufio.NewScanner(os.Stdin), os.Stdout))
}

func run(in *bufio.Scanner, out *os.File) int {
	in.Buffer(make([]byte, 1<<20), 16<<20)
	buf := map[key][]string{}
	var skipped, failures []string
	passed, failed, pkgFailed := 0, 0, 0
	var runs []*counts
	cur := &counts{} // the unnamed first run
	for in.Scan() {
		line := in.Bytes()
		if name, ok := strings.CutPrefix(string(line), runMarker); ok {
			cur = &counts{name: strings.TrimSpace(name)}
			runs = append(runs, cur)
			fmt.Fprintf(out, "\n# %s\n", cur.name)
			continue
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(out, string(line)) // not an event: e.g. go vet or linker output
			continue
		}
		if cur.name != "" && e.Package != "" {
			e.Package += " [" + cur.name + "]"
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			buf[k] = append(buf[k], e.Output)
		case "pass":
			if e.Test != "" {
				passed++
				cur.passed++
			} else {
				fmt.Fprint(out, runResult(pkgResult(buf[k]), cur.name))
			}
			delete(buf, k)
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, skipReason(buf[k])))
				cur.skipped++
			} else {
				fmt.Fprint(out, runResult(pkgResult(buf[k]), cur.name))
			}
			delete(buf, k)
		case "fail":
			if e.Test != "" {
				failed++
				cur.failed++
				fmt.Fprint(out, strings.Join(buf[k], ""))
				failures = append(failures, failureLines(e.Package, e.Test, buf[k])...)
			} else {
				pkgFailed++
				// The package's own output: a panic, TestMain's message, FAIL.
				fmt.Fprint(out, strings.Join(buf[k], ""))
			}
			delete(buf, k)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(out, "testsummary: reading go test -json:", err)
		return 1
	}
	if len(skipped) > 0 {
		sort.Strings(skipped)
		fmt.Fprintf(out, "\nskipped tests (%d):\n", len(skipped))
		for _, s := range skipped {
			fmt.Fprintln(out, "  "+s)
		}
	}
	if len(failures) > 0 {
		// Again at the end, where a log's tail shows them.
		fmt.Fprintf(out, "\nfailures:\n")
		for _, f := range failures {
			fmt.Fprintln(out, "  "+f)
		}
	}
	empty := false
	if len(runs) > 0 {
		fmt.Fprintln(out)
	}
	for _, r := range runs {
		fmt.Fprintf(out, "of these, %s: %d passed, %d failed, %d skipped\n", r.name, r.passed, r.failed, r.skipped)
		if r.passed+r.failed+r.skipped == 0 {
			empty = true
		}
	}
	fmt.Fprintf(out, "\n%d passed, %d failed, %d skipped\n", passed, failed, len(skipped))
	if failed > 0 || pkgFailed > 0 {
		return 1
	}
	if passed == 0 {
		fmt.Fprintln(out, "testsummary: no test ran")
		return 1
	}
	for _, r := range runs {
		if r.passed+r.failed+r.skipped == 0 {
			fmt.Fprintf(out, "testsummary: no test ran in %s\n", r.name)
		}
	}
	if empty {
		return 1
	}
	return 0
}

// runResult names the run in a package's closing line(s).
func runResult(lines, run string) string {
	if run == "" || lines == "" {
		return lines
	}
	return strings.ReplaceAll(strings.TrimSuffix(lines, "\n"), "\n", " ["+run+"]\n") + " [" + run + "]\n"
}

// pkgResult is the package's closing line ("ok  	pkg	1.2s", "?   	pkg	[no
// test files]") out of its output.
func pkgResult(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") || strings.HasPrefix(l, "FAIL") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// skipReason is the message of t.Skip: the test's indented log lines (go
// test prints them before "--- SKIP").
func skipReason(lines []string) string {
	var reason []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "    ") {
			continue // === RUN, --- SKIP
		}
		reason = append(reason, strings.TrimSpace(l))
	}
	if len(reason) == 0 {
		return "(no reason given)"
	}
	if len(reason) > 3 {
		reason = append(reason[:3], "…")
	}
	return strings.Join(reason, " ")
}

// assertion matches the first line of a test's t.Error, t.Fatal or t.Log
// message: "    file_test.go:123: ...".
var assertion = regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)

// failureLines are a failed test's message lines, without the logs it
// printed: "pkg Test: file_test.go:123: message", the last 10, each cut
// at 400 bytes.
func failureLines(pkg, test string, lines []string) []string {
	var out []string
	for _, l := range lines {
		if !assertion.MatchString(l) {
			continue
		}
		l = strings.TrimSpace(l)
		if len(l) > 400 {
			l = l[:400] + "…"
		}
		out = append(out, fmt.Sprintf("%s %s: %s", pkg, test, l))
	}
	if len(out) > 10 {
		out = append([]string{"…"}, out[len(out)-10:]...)
	}
	return out
}
