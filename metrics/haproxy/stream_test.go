package haproxy

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// withSlots adds two spare server slots to the frontpage backend of the
// fixture: _dynamic-pod-1 serves an endpoint, _dynamic-pod-2 is free.
func withSlots(t *testing.T) string {
	t.Helper()
	var out strings.Builder
	for _, l := range strings.Split(readFixture(t, fixture), "\n") {
		out.WriteString(l + "\n")
		if strings.HasPrefix(l, "be_http:shop:frontpage,pod:web-1:") {
			_, rest, _ := strings.Cut(l, ",")
			_, rest, _ = strings.Cut(rest, ",")
			out.WriteString("be_http:shop:frontpage,_dynamic-pod-1," + rest + "\n")
			out.WriteString("be_http:shop:frontpage,_dynamic-pod-2," + rest + "\n")
		}
	}
	return out.String()
}

func slots(namespace, route, slot string) (string, bool) {
	if namespace == "shop" && route == "frontpage" && slot == "_dynamic-pod-1" {
		return "pod:web-3:web:http:127.0.0.3:19003", true
	}
	return "", false
}

// textOf encodes families in the text format, each family's metrics
// sorted by their labels, so that two sources of the same families
// compare equal whatever order they send them in.
func textOf(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	var b bytes.Buffer
	for _, mf := range mfs {
		key := func(m *dto.Metric) string {
			var s []string
			for _, l := range m.GetLabel() {
				s = append(s, l.GetName()+"="+l.GetValue())
			}
			return strings.Join(s, ",")
		}
		sort.Slice(mf.Metric, func(i, j int) bool { return key(mf.Metric[i]) < key(mf.Metric[j]) })
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// streamed returns the families StreamFamilies sends, copied (it reuses
// its storage from one family to the next).
func streamed(t *testing.T, c *Collector) []*dto.MetricFamily {
	t.Helper()
	var out []*dto.MetricFamily
	seen := map[string]bool{}
	err := c.StreamFamilies(func(mf *dto.MetricFamily) error {
		if seen[mf.GetName()] {
			t.Errorf("family %s sent twice", mf.GetName())
		}
		seen[mf.GetName()] = true
		// Encoding copies it: the text is parsed back below.
		var b bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return err
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		got, err := p.TextToMetricFamilies(&b)
		if err != nil {
			return fmt.Errorf("%s: %w", mf.GetName(), err)
		}
		for _, f := range got {
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStreamedFamiliesAreWhatARegistryGathers(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		text func(t *testing.T) string
	}{
		{"servers shown", Options{}, func(t *testing.T) string { return readFixture(t, fixture) }},
		{"above the server threshold", Options{ServerThreshold: 2}, func(t *testing.T) string { return readFixture(t, fixture) }},
		{"spare slots", Options{DynamicServer: slots}, withSlots},
		{"malformed rows", Options{}, func(t *testing.T) string { return readFixture(t, malformedFixture) }},
		{"duplicate rows", Options{}, func(t *testing.T) string {
			text := readFixture(t, fixture)
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "be_sni,fe_sni,") {
					text += l + "\n" + strings.Replace(l, "be_sni,", "be_other,", 1) + "\n"
				}
			}
			return text
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Two collectors with the same clock and reply: each scrapes once.
			clk := &clock{t: time.Unix(1000, 0)}
			o := tc.o
			o.Now = clk.now
			a, _ := newFromFixture(t, o, tc.text(t))
			b, _ := newFromFixture(t, o, tc.text(t))
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(a)
			want, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := streamed(t, b)
			if w, g := textOf(t, want), textOf(t, got); w != g {
				t.Errorf("streamed families differ from gathered ones\n--- gathered\n%s\n--- streamed\n%s", w, g)
			}
			if len(got) < 10 {
				t.Errorf("only %d families streamed", len(got))
			}
		})
	}
}

func TestSpareSlotsAreRenamedOrLeftOut(t *testing.T) {
	c, _ := newFromFixture(t, Options{DynamicServer: slots}, withSlots(t))
	g := gather(t, c)
	if got := g.value(t, "haproxy_server_up", map[string]string{"pod": "web-3", "server": "127.0.0.3:19003", "route": "frontpage"}); got != 1 {
		t.Errorf("occupied slot: up = %v, want 1", got)
	}
	for _, m := range g["haproxy_server_up"].GetMetric() {
		if s := labelsOf(m)["server"]; strings.HasPrefix(s, DynamicServerPrefix) {
			t.Errorf("a slot is reported under its own name: %s", s)
		}
	}
	// The occupied slot counts as a server, the free one does not.
	if got := g.value(t, "haproxy_exporter_server_threshold", map[string]string{"type": "current"}); got != fixtureServers+1 {
		t.Errorf("servers = %v, want %d", got, fixtureServers+1)
	}
}

// TestSplitCSVLine: HAProxy quotes a field that holds a comma or a quote;
// a broken line is an error, as with encoding/csv.
func TestSplitCSVLine(t *testing.T) {
	cases := []struct {
		line string
		want []string
		err  bool
	}{
		{"a,b,c", []string{"a", "b", "c"}, false},
		{"a,,", []string{"a", "", ""}, false},
		{"", []string{""}, false},
		{`a,"L7STS, 503",c`, []string{"a", "L7STS, 503", "c"}, false},
		{`"say ""hi""",x`, []string{`say "hi"`, "x"}, false},
		{`a,"open`, nil, true},
		{`a,"closed"x,b`, nil, true},
		{`a,b"c,d`, nil, true},
	}
	for _, tc := range cases {
		got, err := splitCSVLine(tc.line, nil)
		if (err != nil) != tc.err {
			t.Errorf("%q: err = %v, want error %v", tc.line, err, tc.err)
			continue
		}
		if !tc.err && strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
}

// bigReply is "show stat" of n route backends with servers per backend
// spare slots each (the first occupied) and one endpoint, as the router's
// default template lays 10,000 routes out.
func bigReply(t testing.TB, n, slotsPerRoute int) string {
	var b strings.Builder
	text := readFixture(t, fixture)
	lines := strings.Split(text, "\n")
	b.WriteString(lines[0] + "\n")
	var backend, server string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "be_http:shop:frontpage,BACKEND,"):
			backend = strings.TrimPrefix(l, "be_http:shop:frontpage,BACKEND,")
		case strings.HasPrefix(l, "be_http:shop:frontpage,pod:web-1:"):
			_, server, _ = strings.Cut(strings.TrimPrefix(l, "be_http:shop:frontpage,"), ",")
		case strings.HasPrefix(l, "public,") || strings.HasPrefix(l, "public_ssl,"):
			b.WriteString(l + "\n")
		}
	}
	for i := 0; i < n; i++ {
		proxy := fmt.Sprintf("be_http:bench:r%d", i)
		fmt.Fprintf(&b, "%s,pod:r%d-pod:r%d:http:10.0.%d.%d:8080,%s\n", proxy, i, i, i/250, i%250, server)
		for s := 1; s <= slotsPerRoute; s++ {
			fmt.Fprintf(&b, "%s,_dynamic-pod-%d,%s\n", proxy, s, server)
		}
		fmt.Fprintf(&b, "%s,BACKEND,%s\n", proxy, backend)
	}
	return b.String()
}

// BenchmarkScrape10000Routes: one scrape of HAProxy's statistics for
// 10,000 routes with 5 spare slots each (70,000 rows), streamed as the
// metrics server writes it (text format, discarded).
func BenchmarkScrape10000Routes(b *testing.B) {
	reply := bigReply(b, 10000, 5)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := New(Options{Source: &replies{texts: []string{reply}}, DynamicServer: func(ns, route, slot string) (string, bool) {
			return "", false
		}})
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(discard{}, expfmt.NewFormat(expfmt.TypeTextPlain))
		n := 0
		if err := c.StreamFamilies(func(mf *dto.MetricFamily) error { n += len(mf.Metric); return enc.Encode(mf) }); err != nil {
			b.Fatal(err)
		}
		if n < 200000 {
			b.Fatalf("%d series, want over 200,000", n)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestBackendsTakenOverAreReportedUnderTheirRoute: a backend HAProxy runs
// under the name of a deleted route's backend (Options.Backend) is
// reported with the labels of the route it serves; a deleted route's
// backend HAProxy still keeps is left out.
func TestBackendsTakenOverAreReportedUnderTheirRoute(t *testing.T) {
	reply := bigReply(t, 3, 0) // be_http:bench:r0, r1, r2
	c, err := New(Options{Source: &replies{texts: []string{reply}}, Backend: func(proxy string) (string, bool) {
		switch proxy {
		case "be_http:bench:r0":
			return "be_http:bench:new", true // r0 deleted, "new" runs in its backend
		case "be_http:bench:r1":
			return "", false // r1 deleted, its backend kept until a reload
		}
		return proxy, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := gather(t, c)
	routes := map[string]bool{}
	for _, name := range []string{"haproxy_backend_up", "haproxy_server_up"} {
		for _, m := range g.find(name, nil) {
			if r := labelsOf(m)["route"]; r != "" {
				routes[r] = true
			}
		}
	}
	if !reflect.DeepEqual(routes, map[string]bool{"new": true, "r2": true}) {
		t.Fatalf("routes reported %v, want new and r2", routes)
	}
}
