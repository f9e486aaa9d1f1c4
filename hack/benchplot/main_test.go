package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/openshift-router-go/router/test/benchreport"
)

var barRE = regexp.MustCompile(`<rect x="[^"]*" y="[^"]*" width="[^"]*" height="([^"]*)" fill="[^"]*"><title>([^<]*)</title>`)

// bars returns the bars of a chart SVG: title → height.
func bars(t *testing.T, svg []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range barRE.FindAllSubmatch(svg, -1) {
		h, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		out[string(m[2])] = h
	}
	return out
}

func TestBarHeightsAreProportionalToValues(t *testing.T) {
	c := chart{
		Title:  "t",
		Groups: []string{"g1", "g2"},
		Series: []series{
			{Name: "a", Color: "#000", Values: []float64{100, 50}},
			{Name: "b", Color: "#111", Values: []float64{25, 0}},
		},
	}
	got := bars(t, c.svg())
	// 100 is the axis maximum (niceMax(100) = 100): the plot's full height.
	want := map[string]float64{
		"a, g1: 100": plotHeight,
		"a, g2: 50":  plotHeight / 2,
		"b, g1: 25":  plotHeight / 4,
	}
	if len(got) != len(want) {
		t.Fatalf("bars %v, want %v (a 0 value draws no bar)", got, want)
	}
	for k, h := range want {
		if g, ok := got[k]; !ok || g != h {
			t.Errorf("bar %q: height %v, want %v (all: %v)", k, g, h, got)
		}
	}
}

func TestNiceAxisMaximum(t *testing.T) {
	for _, c := range []struct{ v, max, step float64 }{
		{0, 1, 0.25},
		{1, 1, 0.25},
		{226, 300, 100},
		{281, 300, 100},
		{16774, 20000, 5000},
		{0.998, 1, 0.25},
		{2193, 3000, 1000},
	} {
		max, step := niceMax(c.v)
		if max != c.max || step != c.step || max < c.v {
			t.Errorf("niceMax(%v) = %v, %v; want %v, %v", c.v, max, step, c.max, c.step)
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 226: "226", 16774: "16,774", 1234567: "1,234,567", 0.998: "1", 9.8: "9.8", -1500: "-1,500"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestPlotsShowTheRoutersThatWereMeasured(t *testing.T) {
	both := &benchreport.SideBySide{Benchmark: "b", Provenance: "p", Routes: 10, WrkArgs: "-d1s", Rounds: 3, HAProxy: "HAProxy version 3.0.11-1 x", Routers: []benchreport.Router{
		{Name: "ours-1", Who: "ours", Routes: 1, MedianRPS: 100},
		{Name: "ours-10", Who: "ours", Routes: 10, MedianRPS: 90, RouterRSSMiB: 50, HAProxyRSSMiB: 60, PairedRatio: 0.9},
		{Name: "other-1", Who: "other", Routes: 1, MedianRPS: 80},
		{Name: "other-10", Who: "other", Routes: 10, MedianRPS: 40, RouterRSSMiB: 70, HAProxyRSSMiB: 80, PairedRatio: 0.5},
	}}
	oursAlone := &benchreport.SideBySide{Benchmark: "b", Provenance: "p", Routes: 10, Routers: both.Routers[:2]}
	for _, c := range []struct {
		name string
		rep  *benchreport.SideBySide
		want map[string][]string // file → bar titles
	}{
		{"both routers", both, map[string][]string{
			"sidebyside-memory.svg":    {"OpenShift's router, HAProxy (master + workers): 80", "OpenShift's router, router process: 70", "this router, HAProxy (master + workers): 60", "this router, router process: 50"},
			"sidebyside-dataplane.svg": {"OpenShift's router, 1 route loaded: 80", "OpenShift's router, 10 routes loaded: 40", "this router, 1 route loaded: 100", "this router, 10 routes loaded: 90"},
		}},
		{"ours alone", oursAlone, map[string][]string{
			"sidebyside-memory.svg":    {"this router, HAProxy (master + workers): 60", "this router, router process: 50"},
			"sidebyside-dataplane.svg": {"this router, 1 route loaded: 100", "this router, 10 routes loaded: 90"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plots, err := sideBySidePlots(c.rep)
			if err != nil {
				t.Fatal(err)
			}
			if len(plots) != len(c.want) {
				t.Fatalf("%d plots, want %d", len(plots), len(c.want))
			}
			for _, p := range plots {
				var got []string
				for k := range bars(t, p.svg) {
					got = append(got, k)
				}
				slices.Sort(got)
				if !slices.Equal(got, c.want[p.file]) {
					t.Errorf("%s: bars %q, want %q", p.file, got, c.want[p.file])
				}
			}
		})
	}
	t.Run("no values at all is an error", func(t *testing.T) {
		empty := &benchreport.SideBySide{Benchmark: "b", Provenance: "p", Routes: 10, Routers: []benchreport.Router{{Name: "ours-10", Who: "ours", Routes: 10}}}
		if _, err := sideBySidePlots(empty); err == nil {
			t.Fatal("no error for a run without values")
		}
	})
}

// TestCommittedPlotsAreCurrent fails while a plot in docs/performance differs
// from what the JSON committed beside it gives (run `make plots`).
func TestCommittedPlotsAreCurrent(t *testing.T) {
	const dir = "../../docs/performance"
	rep, err := benchreport.Read(filepath.Join(dir, "sidebyside.json"))
	if err != nil {
		t.Fatal(err)
	}
	plots, err := sideBySidePlots(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plots {
		committed, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil {
			t.Fatalf("%v: run `make plots`", err)
		}
		if !bytes.Equal(committed, p.svg) {
			t.Errorf("%s differs from what %s gives: run `make plots`", p.file, "sidebyside.json")
		}
	}
}
