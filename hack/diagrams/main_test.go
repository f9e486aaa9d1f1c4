package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openshift-router-go/router/test/prereq"
)

const docsDir = "../../docs"

// TestCommittedDiagramsAreCurrent fails while a docs/*.dot source differs
// from the one its committed SVG was generated from (run `make diagrams`),
// and when the committed SVG lacks a node or edge dot renders from the
// source now.
func TestCommittedDiagramsAreCurrent(t *testing.T) {
	prereq.NeedBinary(t, "dot")
	sources, err := filepath.Glob(filepath.Join(docsDir, "*.dot"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no .dot source in %s (%v)", docsDir, err)
	}
	for _, src := range sources {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dot, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			svg, err := os.ReadFile(svgPath(src))
			if err != nil {
				t.Fatalf("%v: run `make diagrams`", err)
			}
			name, hash := recordedHash(svg)
			if name != filepath.Base(src) || hash != sourceHash(dot) {
				t.Fatalf("%s is stale: it records %s sha256:%s, the source is sha256:%s; run `make diagrams`",
					svgPath(src), name, hash, sourceHash(dot))
			}
			fresh, err := render(src)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := titles(svg), titles(fresh); !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("%s holds nodes and edges %q, dot renders %q from the source; run `make diagrams`", svgPath(src), got, want)
			}
		})
	}
}

// TestStaleDiagramIsDetected proves the check above can fail: an SVG
// generated from one source does not pass for an edited source.
func TestStaleDiagramIsDetected(t *testing.T) {
	prereq.NeedBinary(t, "dot")
	dir := t.TempDir()
	src := filepath.Join(dir, "g.dot")
	for _, c := range []struct {
		name   string
		edit   string
		stale  bool
		titles []string
	}{
		{"unchanged source", "digraph g { a -> b; }\n", false, []string{"g", "a", "b", "a&#45;&gt;b"}},
		{"edited source", "digraph g { a -> b; b -> c; }\n", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(src, []byte("digraph g { a -> b; }\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			svg, err := render(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte(c.edit), 0o644); err != nil {
				t.Fatal(err)
			}
			_, hash := recordedHash(svg)
			if stale := hash != sourceHash([]byte(c.edit)); stale != c.stale {
				t.Fatalf("stale = %v, want %v", stale, c.stale)
			}
			if c.titles != nil && !slices.Equal(titles(svg), c.titles) {
				t.Fatalf("titles %q, want %q", titles(svg), c.titles)
			}
		})
	}
}
