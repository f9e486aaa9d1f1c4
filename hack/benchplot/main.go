// Command benchplot draws the results of BenchmarkDataPlaneSideBySide
// (cmd/router-bench; JSON of package test/benchreport) as SVG bar charts,
// with no plotting dependency:
//
//	sidebyside-memory.svg     router and HAProxy RSS of the full routers
//	sidebyside-dataplane.svg  requests/s through one route, 1 route vs N loaded
//
//	go run ./hack/benchplot -in docs/performance/sidebyside.json -out docs/performance
//
// The output depends on the JSON alone (`make plots`); the test of this
// package fails while a committed plot differs from what its JSON gives.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/test/benchreport"
)

func main() {
	in := flag.String("in", "docs/performance/sidebyside.json", "side-by-side results (JSON)")
	out := flag.String("out", "docs/performance", "directory for the SVG plots")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	rep, err := benchreport.Read(in)
	if err != nil {
		return err
	}
	plots, err := sideBySidePlots(rep)
	if err != nil {
		return err
	}
	for _, p := range plots {
		path := filepath.Join(out, p.file)
		if err := os.WriteFile(path, p.svg, 0o644); err != nil {
			return err
		}
		fmt.Println(path)
	}
	return nil
}

// plot is one SVG file.
type plot struct {
	file string
	svg  []byte
}

// who are the routers of a run, in the order the charts show them.
var who = []struct{ key, label, color string }{
	{"ours", "this router", "#3b6fb6"},
	{"other", "OpenShift's router", "#c8553d"},
}

// sideBySidePlots are the charts of one side-by-side run: memory of the full
// routers, and requests/s with 1 route and with all loaded.
func sideBySidePlots(rep *benchreport.SideBySide) ([]plot, error) {
	n := rep.Routes
	subtitle := fmt.Sprintf("%s routes, %s for both, route status writes %s; %s", thousands(float64(n)), shortHAProxy(rep.HAProxy), onOff(rep.UpdateStatus), rep.Date)
	mem := chart{
		Title:    fmt.Sprintf("Memory with %s routes loaded (RSS, MiB)", thousands(float64(n))),
		Subtitle: subtitle,
		Groups:   []string{"router process", "HAProxy (master + workers)"},
	}
	dp := chart{
		Title:    fmt.Sprintf("Requests/s through one route (wrk %s, median of %d rounds)", rep.WrkArgs, rep.Rounds),
		Subtitle: subtitle,
		Groups:   []string{"1 route loaded", thousands(float64(n)) + " routes loaded"},
	}
	var ratios []string
	for _, w := range who {
		full := rep.Find(w.key, n)
		if full == nil {
			continue
		}
		if full.RouterRSSMiB > 0 || full.HAProxyRSSMiB > 0 {
			mem.Series = append(mem.Series, series{Name: w.label, Color: w.color, Values: []float64{full.RouterRSSMiB, full.HAProxyRSSMiB}})
		}
		if one := rep.Find(w.key, 1); one != nil && (one.MedianRPS > 0 || full.MedianRPS > 0) {
			dp.Series = append(dp.Series, series{Name: w.label, Color: w.color, Values: []float64{one.MedianRPS, full.MedianRPS}})
		}
		if full.PairedRatio > 0 {
			ratios = append(ratios, fmt.Sprintf("%s %.3f", w.label, full.PairedRatio))
		}
	}
	if len(ratios) > 0 {
		dp.Note = fmt.Sprintf("%s routes / 1 route within each round, median: %s", thousands(float64(n)), strings.Join(ratios, ", "))
	}
	var plots []plot
	for _, c := range []struct {
		file string
		c    chart
	}{{"sidebyside-memory.svg", mem}, {"sidebyside-dataplane.svg", dp}} {
		if len(c.c.Series) == 0 {
			return nil, fmt.Errorf("%s: no router has the values of %q", c.file, c.c.Title)
		}
		plots = append(plots, plot{c.file, c.c.svg()})
	}
	return plots, nil
}

// shortHAProxy is "HAProxy 3.0.11" of "HAProxy version 3.0.11-1+deb13u4 …".
func shortHAProxy(v string) string {
	fields := strings.Fields(v)
	if len(fields) >= 3 && fields[0] == "HAProxy" && fields[1] == "version" {
		version, _, _ := strings.Cut(fields[2], "-")
		return "HAProxy " + version
	}
	return v
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// chart is a grouped bar chart: one group of bars per entry of Groups, one
// bar per series in each group.
type chart struct {
	Title, Subtitle, Note string
	Groups                []string
	Series                []series
}

type series struct {
	Name, Color string
	Values      []float64 // one per group; 0 draws no bar
}

// Layout of every chart, in SVG user units.
const (
	width      = 640
	height     = 340
	left       = 64.0
	right      = 16.0
	top        = 64.0
	bottom     = 76.0
	plotWidth  = width - left - right
	plotHeight = height - top - bottom
)

// svg draws the chart. Bars are scaled to the axis maximum (niceMax of the
// largest value); each bar carries its value.
func (c chart) svg() []byte {
	var b strings.Builder
	maxV := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	axisMax, step := niceMax(maxV)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", 12, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="40" font-size="11" fill="#555">%s</text>`+"\n", 12, esc(c.Subtitle))
	// Axis and grid.
	for v := 0.0; v <= axisMax+step/2; v += step {
		y := top + plotHeight - v/axisMax*plotHeight
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(left), f(y), f(left+plotWidth), f(y))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="end" fill="#555">%s</text>`+"\n", f(left-6), f(y+3.5), thousands(v))
	}
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>`+"\n", f(left), f(top+plotHeight), f(left+plotWidth), f(top+plotHeight))
	// Bars.
	groupWidth := plotWidth / float64(len(c.Groups))
	barWidth := groupWidth * 0.7 / float64(len(c.Series))
	for g, name := range c.Groups {
		x0 := left + float64(g)*groupWidth + groupWidth*0.15
		for k, s := range c.Series {
			if g >= len(s.Values) || s.Values[g] <= 0 {
				continue
			}
			v := s.Values[g]
			h := v / axisMax * plotHeight
			x := x0 + float64(k)*barWidth
			y := top + plotHeight - h
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				f(x+2), f(y), f(barWidth-4), f(h), s.Color, esc(s.Name), esc(name), thousands(v))
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="middle">%s</text>`+"\n", f(x+barWidth/2), f(y-4), thousands(v))
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="middle">%s</text>`+"\n", f(left+float64(g)*groupWidth+groupWidth/2), f(top+plotHeight+18), esc(name))
	}
	// Legend and note.
	x := left
	for _, s := range c.Series {
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`+"\n", f(x), f(height-44), s.Color)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12">%s</text>`+"\n", f(x+17), f(height-34), esc(s.Name))
		x += 34 + 7*float64(len(s.Name))
	}
	if c.Note != "" {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="#555">%s</text>`+"\n", f(left), f(height-12), esc(c.Note))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceMax is the axis maximum for a largest value v (1, 2 or 5 times a power
// of ten, times a whole number of steps, at least v) and its step.
func niceMax(v float64) (axisMax, step float64) {
	if v <= 0 {
		return 1, 0.25
	}
	raw := v / 4
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	return math.Ceil(v/step) * step, step
}

// f formats a coordinate with at most one decimal.
func f(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// thousands formats v with thousands separators, and one decimal if it has
// a fraction (12,345; 0.5; 226).
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	whole = strings.TrimPrefix(whole, "-")
	var parts []string
	for len(whole) > 3 {
		parts = append([]string{whole[len(whole)-3:]}, parts...)
		whole = whole[:len(whole)-3]
	}
	out := strings.Join(append([]string{whole}, parts...), ",")
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// esc escapes text for SVG.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
