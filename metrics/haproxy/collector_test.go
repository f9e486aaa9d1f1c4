package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

const (
	fixture          = "testdata/show-stat-haproxy-2.6.12.csv"
	malformedFixture = "testdata/show-stat-malformed.csv"
	fixtureServers   = 7
)

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// replies is a statistics source that answers from captured replies, in
// order, repeating the last one; it counts the requests.
type replies struct {
	texts []string
	errs  []error
	calls int
}

func (r *replies) Exec(_ context.Context, cmd string) (string, error) {
	if cmd != "show stat" {
		return "", fmt.Errorf("unexpected command %q", cmd)
	}
	i := r.calls
	r.calls++
	if i >= len(r.texts) {
		i = len(r.texts) - 1
	}
	var err error
	if i < len(r.errs) {
		err = r.errs[i]
	}
	return r.texts[i], err
}

// clock is a settable clock for the scrape interval.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type gathered map[string]*dto.MetricFamily

func gather(t *testing.T, c *Collector) gathered {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := gathered{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// find returns the metrics of a family whose labels include want.
func (g gathered) find(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range g[name].GetMetric() {
		ls := labelsOf(m)
		ok := true
		for k, v := range want {
			if ls[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value returns the value of the one metric matching want.
func (g gathered) value(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	ms := g.find(name, want)
	if len(ms) != 1 {
		t.Fatalf("%s%v: %d matching metrics, want 1 (family has %d)", name, want, len(ms), len(g[name].GetMetric()))
	}
	return valueOf(ms[0])
}

func (g gathered) names(prefix string) []string {
	var out []string
	for n := range g {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func newFromFixture(t *testing.T, o Options, texts ...string) (*Collector, *replies) {
	t.Helper()
	src := &replies{texts: texts}
	o.Source = src
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c, src
}

func TestParseStatsFixture(t *testing.T) {
	rows, bad, err := ParseStats(readFixture(t, fixture), 61)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 0 {
		t.Fatalf("a real capture has unparsable rows: %v", bad)
	}
	count := map[int]int{}
	for _, r := range rows {
		count[r.Type]++
		if len(r.Fields) < 100 {
			t.Errorf("%s/%s: %d columns; HAProxy 2.6 writes more than 100", r.Proxy, r.Server, len(r.Fields))
		}
	}
	if count[typeFrontend] != 4 || count[typeBackend] != 7 || count[typeServer] != fixtureServers {
		t.Fatalf("rows by type: %v", count)
	}
}

func TestParseStatsRejectsNonCSV(t *testing.T) {
	for _, reply := range []string{"", "\n", "Unknown command. Please enter one of the following commands only :\n  help\n", "Permission denied\n\n"} {
		if _, _, err := ParseStats(reply, 61); !errors.Is(err, ErrNotCSV) {
			t.Errorf("%q: err %v, want ErrNotCSV", reply, err)
		}
	}
}

func TestLabelsFromNames(t *testing.T) {
	backends := []struct{ name, kind, ns, route string }{
		{"be_http:shop:frontpage", "http", "shop", "frontpage"},
		{"be_edge_http:shop:secure", "https-edge", "shop", "secure"},
		{"be_secure:shop:reenc", "https", "shop", "reenc"},
		{"be_tcp:shop:tls", "tcp", "shop", "tls"},
		{"openshift_default", "other/openshift_default", "", ""},
		{"be_sni", "other/be_sni", "", ""},
		{"be_http:broken", "other/be_http:broken", "", ""},
		{"be_custom:ns:r", "other/be_custom:ns:r", "", ""},
	}
	for _, b := range backends {
		k, ns, r := BackendLabels(b.name)
		if k != b.kind || ns != b.ns || r != b.route {
			t.Errorf("BackendLabels(%q) = %q %q %q", b.name, k, ns, r)
		}
	}
	servers := []struct{ name, server, pod, svc string }{
		{"pod:web-1:web:http:127.0.0.1:19001", "127.0.0.1:19001", "web-1", "web"},
		{"pod:web-1:web::10.0.0.1:8080", "10.0.0.1:8080", "web-1", "web"},
		{"pod:web-1:web:http:fd00::1:8080", "fd00::1:8080", "web-1", "web"},
		{"ept:api::127.0.0.1:19002", "127.0.0.1:19002", "", "api"},
		{"ept:api:http:fd00::2:19002", "fd00::2:19002", "", "api"},
		{"fe_sni", "fe_sni", "", ""},
		{"pod:broken", "pod:broken", "", ""},
	}
	for _, s := range servers {
		server, pod, svc := ServerLabels(s.name)
		if server != s.server || pod != s.pod || svc != s.svc {
			t.Errorf("ServerLabels(%q) = %q %q %q", s.name, server, pod, svc)
		}
	}
}

func TestCollectFixtureWithServers(t *testing.T) {
	c, _ := newFromFixture(t, Options{}, readFixture(t, fixture))
	g := gather(t, c)

	web1 := map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage", "pod": "web-1", "service": "web", "server": "127.0.0.1:19001"}
	web2 := map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage", "pod": "web-2", "service": "web", "server": "127.0.0.2:19009"}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"haproxy_exporter_up", nil, 1},
		{"haproxy_exporter_total_scrapes", nil, 1},
		{"haproxy_exporter_csv_parse_failures", nil, 0},
		{"haproxy_exporter_server_threshold", map[string]string{"type": "current"}, fixtureServers},
		{"haproxy_exporter_server_threshold", map[string]string{"type": "limit"}, 500},

		{"haproxy_frontend_connections_total", map[string]string{"frontend": "public"}, 30},
		{"haproxy_frontend_bytes_in_total", map[string]string{"frontend": "public"}, 2677},
		{"haproxy_frontend_bytes_out_total", map[string]string{"frontend": "public"}, 16499},
		{"haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "2xx"}, 11},
		{"haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "4xx"}, 3},
		{"haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "5xx"}, 16},
		{"haproxy_frontend_http_responses_total", map[string]string{"frontend": "fe_sni", "code": "2xx"}, 4},

		{"haproxy_server_connections_total", web1, 14},
		{"haproxy_server_bytes_in_total", web1, 1253},
		{"haproxy_server_bytes_out_total", web1, 9827},
		{"haproxy_server_http_responses_total", merge(web1, "code", "2xx"), 11},
		{"haproxy_server_http_responses_total", merge(web1, "code", "4xx"), 3},
		{"haproxy_server_up", web1, 1},
		{"haproxy_server_up", web2, 0},
		{"haproxy_server_check_failures_total", web1, 1},
		{"haproxy_server_downtime_seconds_total", web2, 42},
		{"haproxy_server_http_average_response_latency_milliseconds", web1, 10},
		{"haproxy_server_connections_total", map[string]string{"backend": "https-edge", "route": "secure", "service": "api", "pod": "", "server": "127.0.0.1:19002"}, 4},
		{"haproxy_server_up", map[string]string{"backend": "other/be_sni", "server": "fe_sni", "route": "", "namespace": ""}, 1},

		// "B" columns of backends while servers are shown.
		{"haproxy_backend_connections_total", map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage"}, 29},
		{"haproxy_backend_up", map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage"}, 1},
		{"haproxy_backend_current_queue", map[string]string{"backend": "https", "namespace": "shop", "route": "reenc"}, 0},
		{"haproxy_backend_connections_total", map[string]string{"backend": "tcp", "namespace": "shop", "route": "tls"}, 0},
		{"haproxy_backend_connections_total", map[string]string{"backend": "other/openshift_default", "namespace": "", "route": ""}, 1},
	}
	for _, ch := range checks {
		if got := g.value(t, ch.name, ch.labels); got != ch.want {
			t.Errorf("%s%v = %v, want %v", ch.name, ch.labels, got, ch.want)
		}
	}

	// Backends get only the reduced "B" set while servers are shown.
	wantBackend := []string{"haproxy_backend_connections_reused_total", "haproxy_backend_connections_total", "haproxy_backend_current_queue", "haproxy_backend_up"}
	if got := g.names("haproxy_backend_"); strings.Join(got, " ") != strings.Join(wantBackend, " ") {
		t.Errorf("backend metrics %v, want %v", got, wantBackend)
	}
	// Every server is reported, and nothing for TCP-only columns of TCP rows.
	if n := len(g.find("haproxy_server_up", nil)); n != fixtureServers {
		t.Errorf("%d servers reported, want %d", n, fixtureServers)
	}
	if ms := g.find("haproxy_server_http_responses_total", map[string]string{"route": "tls"}); len(ms) != 0 {
		t.Errorf("HTTP responses reported for a passthrough (TCP) server: %v", ms)
	}
	if ms := g.find("haproxy_frontend_up", nil); len(ms) != 0 {
		t.Error("frontends have no 'up' in the reference table")
	}
	// Counters are typed as counters (so rate() handles the reset at a
	// reload), levels as gauges.
	for name, typ := range map[string]dto.MetricType{
		"haproxy_server_bytes_in_total":         dto.MetricType_COUNTER,
		"haproxy_server_http_responses_total":   dto.MetricType_COUNTER,
		"haproxy_server_downtime_seconds_total": dto.MetricType_COUNTER,
		"haproxy_server_up":                     dto.MetricType_GAUGE,
		"haproxy_server_current_sessions":       dto.MetricType_GAUGE,
		"haproxy_frontend_max_session_rate":     dto.MetricType_GAUGE,
	} {
		if got := g[name].GetType(); got != typ {
			t.Errorf("%s is %v, want %v", name, got, typ)
		}
	}
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

func TestServerThresholdSwitchesToBackendMetrics(t *testing.T) {
	// At the threshold servers are still shown.
	c, _ := newFromFixture(t, Options{ServerThreshold: fixtureServers}, readFixture(t, fixture))
	g := gather(t, c)
	if len(g.find("haproxy_server_up", nil)) != fixtureServers {
		t.Fatalf("at the threshold: server metrics missing")
	}
	if len(g["haproxy_backend_bytes_in_total"].GetMetric()) != 0 {
		t.Fatalf("at the threshold: backends report 'b' columns")
	}

	// One server above it: no server metrics, backends get the "b" set.
	c, _ = newFromFixture(t, Options{ServerThreshold: fixtureServers - 1}, readFixture(t, fixture))
	g = gather(t, c)
	if got := g.names("haproxy_server_"); len(got) != 0 {
		t.Fatalf("above the threshold, server metrics are still reported: %v", got)
	}
	frontpage := map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage"}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"haproxy_exporter_server_threshold", map[string]string{"type": "current"}, fixtureServers},
		{"haproxy_exporter_server_threshold", map[string]string{"type": "limit"}, fixtureServers - 1},
		{"haproxy_backend_connections_total", frontpage, 29},
		{"haproxy_backend_bytes_in_total", frontpage, 2594},
		{"haproxy_backend_bytes_out_total", frontpage, 16082},
		{"haproxy_backend_connection_errors_total", frontpage, 15},
		{"haproxy_backend_http_responses_total", merge(frontpage, "code", "2xx"), 11},
		{"haproxy_backend_http_responses_total", merge(frontpage, "code", "5xx"), 15},
		{"haproxy_backend_http_average_response_latency_milliseconds", frontpage, 5},
		{"haproxy_backend_up", frontpage, 1},
		{"haproxy_frontend_bytes_in_total", map[string]string{"frontend": "public"}, 2677},
	}
	for _, ch := range checks {
		if got := g.value(t, ch.name, ch.labels); got != ch.want {
			t.Errorf("%s%v = %v, want %v", ch.name, ch.labels, got, ch.want)
		}
	}
	// "b" never includes the server-only columns.
	for _, n := range []string{"haproxy_backend_check_failures_total", "haproxy_backend_downtime_seconds_total"} {
		if _, ok := g[n]; ok {
			t.Errorf("%s reported; it is a server-only column", n)
		}
	}
}

func TestExportedColumnsSelectMetrics(t *testing.T) {
	// Frontends count connections from column 79, backends and servers from 7.
	c, _ := newFromFixture(t, Options{Columns: []int{7, 42, 79}}, readFixture(t, fixture))
	g := gather(t, c)
	var got []string
	for _, prefix := range []string{"haproxy_frontend_", "haproxy_backend_", "haproxy_server_"} {
		got = append(got, g.names(prefix)...)
	}
	want := []string{
		"haproxy_frontend_connections_total", "haproxy_frontend_http_responses_total",
		"haproxy_backend_connections_total",
		"haproxy_server_connections_total", "haproxy_server_http_responses_total",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	for _, m := range g["haproxy_server_http_responses_total"].GetMetric() {
		if labelsOf(m)["code"] != "4xx" {
			t.Fatalf("only column 42 (4xx) was selected: %v", labelsOf(m))
		}
	}
	if _, err := New(Options{Source: &replies{}, Columns: []int{1}}); err == nil {
		t.Error("column 1 (svname) accepted")
	}
}

func TestMalformedRowsAreCountedAndSkipped(t *testing.T) {
	c, _ := newFromFixture(t, Options{}, readFixture(t, malformedFixture))
	g := gather(t, c)
	// truncated row, stray quote, unknown type, non-numeric stot
	if got := g.value(t, "haproxy_exporter_csv_parse_failures", nil); got != 4 {
		t.Errorf("parse failures = %v, want 4", got)
	}
	if got := g.value(t, "haproxy_exporter_up", nil); got != 1 {
		t.Errorf("up = %v: a few bad rows do not make the scrape fail", got)
	}
	// The intact rows are exported.
	if got := g.value(t, "haproxy_frontend_bytes_in_total", map[string]string{"frontend": "public"}); got != 2677 {
		t.Errorf("public bytes in = %v", got)
	}
	if got := g.value(t, "haproxy_server_connections_total", map[string]string{"route": "secure"}); got != 4 {
		t.Errorf("secure server connections = %v", got)
	}
	// The row with a bad value keeps its good columns, not the bad one.
	frontpage := map[string]string{"route": "frontpage"}
	if got := g.value(t, "haproxy_backend_up", frontpage); got != 1 {
		t.Errorf("frontpage up = %v", got)
	}
	if ms := g.find("haproxy_backend_connections_total", frontpage); len(ms) != 0 {
		t.Errorf("the unparsable stot was exported: %v", ms)
	}
	// The damaged rows are not.
	for _, l := range []map[string]string{{"pod": "web-1"}, {"pod": "web-2"}} {
		if ms := g.find("haproxy_server_up", l); len(ms) != 0 {
			t.Errorf("damaged row exported: %v", l)
		}
	}
	if ms := g.find("haproxy_backend_up", map[string]string{"route": "secure"}); len(ms) != 0 {
		t.Error("row of unknown type exported")
	}
	// The counter accumulates over scrapes.
	clk := &clock{t: time.Unix(1000, 0)}
	c, _ = newFromFixture(t, Options{Now: clk.now}, readFixture(t, malformedFixture))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for i := 0; i < 3; i++ {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
		clk.t = clk.t.Add(time.Hour)
	}
	g = gather(t, c)
	if got := g.value(t, "haproxy_exporter_csv_parse_failures", nil); got != 16 {
		t.Errorf("parse failures after 4 scrapes = %v, want 16", got)
	}
}

func TestScrapeFailureReportsDown(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := &replies{
		texts: []string{readFixture(t, fixture), "", "Unknown command.\n", readFixture(t, fixture)},
		errs:  []error{nil, errors.New("connect: no such file or directory"), nil, nil},
	}
	c, err := New(Options{Source: src, Now: clk.now, BaseScrapeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for i, wantUp := range []float64{1, 0, 0, 1} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		g := gathered{}
		for _, mf := range mfs {
			g[mf.GetName()] = mf
		}
		if got := g.value(t, "haproxy_exporter_up", nil); got != wantUp {
			t.Errorf("scrape %d: up = %v, want %v", i, got, wantUp)
		}
		// OpenShift's name, which its HAProxyDown alert queries.
		if got := g.value(t, "haproxy_up", nil); got != wantUp {
			t.Errorf("scrape %d: haproxy_up = %v, want %v", i, got, wantUp)
		}
		// The public frontend's session limit, kept while HAProxy does not answer.
		if got := g.value(t, "haproxy_max_connections", nil); got != 9500 {
			t.Errorf("scrape %d: haproxy_max_connections = %v, want 9500 (slim of frontend public)", i, got)
		}
		if servers := len(g.find("haproxy_server_up", nil)); (wantUp == 1) != (servers > 0) {
			t.Errorf("scrape %d: up %v with %d server metrics", i, wantUp, servers)
		}
		if got := g.value(t, "haproxy_exporter_total_scrapes", nil); got != float64(i+1) {
			t.Errorf("scrape %d: total scrapes %v", i, got)
		}
		clk.t = clk.t.Add(time.Hour)
	}
}

func TestScrapeIntervalLimitsRequestsAndGrowsWithRows(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c, src := newFromFixture(t, Options{Now: clk.now, BaseScrapeInterval: 2 * time.Second}, readFixture(t, fixture))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	interval := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "haproxy_exporter_scrape_interval" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no haproxy_exporter_scrape_interval")
		return 0
	}
	// 18 rows: 2s * (1 + 18/1000).
	if got, want := interval(), 2*(1+18.0/1000); got != want {
		t.Errorf("interval %v, want %v", got, want)
	}
	clk.t = clk.t.Add(2 * time.Second) // still inside 2.036s
	interval()
	if src.calls != 1 {
		t.Fatalf("HAProxy asked %d times within the interval, want 1", src.calls)
	}
	clk.t = clk.t.Add(100 * time.Millisecond)
	interval()
	if src.calls != 2 {
		t.Fatalf("HAProxy asked %d times after the interval, want 2", src.calls)
	}

	// 2500 more server rows: the interval grows to 2s * (1 + 2518/1000).
	big := readFixture(t, fixture)
	var b strings.Builder
	b.WriteString(big)
	row := ""
	for _, l := range strings.Split(big, "\n") {
		if strings.HasPrefix(l, "be_http:shop:frontpage,pod:web-1") {
			row = strings.TrimPrefix(l, "be_http:shop:frontpage,pod:web-1")
		}
	}
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&b, "be_http:shop:frontpage,pod:web-%d%s\n", 1000+i, row)
	}
	c, _ = newFromFixture(t, Options{Now: clk.now, BaseScrapeInterval: 2 * time.Second}, b.String())
	g := gather(t, c)
	if got, want := g.value(t, "haproxy_exporter_scrape_interval", nil), 2*(1+2518.0/1000); got != want {
		t.Errorf("interval with 2518 rows %v, want %v", got, want)
	}
	if got := g.value(t, "haproxy_exporter_server_threshold", map[string]string{"type": "current"}); got != 2507 {
		t.Errorf("servers %v, want 2507", got)
	}
	if len(g.names("haproxy_server_")) != 0 {
		t.Error("2507 servers > 500: server metrics must not be reported")
	}
}

func TestDuplicateLabelsDoNotBreakTheScrape(t *testing.T) {
	// A custom template may give servers of two "other" backends the same
	// name; the backend label keeps them apart, and true duplicates are
	// dropped instead of failing the whole scrape.
	text := readFixture(t, fixture)
	var extra strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "be_sni,fe_sni,") {
			extra.WriteString(l + "\n")
			extra.WriteString(strings.Replace(l, "be_sni,", "be_other,", 1) + "\n")
		}
	}
	c, _ := newFromFixture(t, Options{}, text+extra.String())
	g := gather(t, c)
	if n := len(g.find("haproxy_server_up", map[string]string{"server": "fe_sni"})); n != 2 {
		t.Errorf("%d fe_sni servers, want 2 (be_sni and be_other)", n)
	}
}

func TestNamesAreTheSameInTextAndOpenMetrics(t *testing.T) {
	c, _ := newFromFixture(t, Options{}, readFixture(t, fixture))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	encode := func(format expfmt.Format) string {
		var b bytes.Buffer
		enc := expfmt.NewEncoder(&b, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	text := encode(expfmt.NewFormat(expfmt.TypeTextPlain))
	om := encode(expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, name := range []string{
		"haproxy_exporter_up", "haproxy_exporter_total_scrapes", "haproxy_exporter_csv_parse_failures",
		"haproxy_exporter_scrape_interval", "haproxy_exporter_server_threshold",
		"haproxy_frontend_bytes_in_total", "haproxy_server_http_responses_total", "haproxy_server_up",
		"haproxy_backend_connections_total",
	} {
		for format, out := range map[string]string{"text": text, "OpenMetrics": om} {
			if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).MatchString(out) {
				t.Errorf("%s: no sample named %s", format, name)
			}
		}
	}
	if strings.Contains(om, "_total_total") || strings.Contains(om, "haproxy_exporter_total_scrapes_total") {
		t.Error("OpenMetrics renamed a metric")
	}
}

// TestDefaultColumnsAreOpenShiftsWith79And85: frontends count connections
// from column 79 (conn_tot), backends and servers report the connections
// reused (column 85), as OpenShift's router does by default.
func TestDefaultColumnsAreOpenShiftsWith79And85(t *testing.T) {
	c, _ := newFromFixture(t, Options{}, readFixture(t, fixture))
	g := gather(t, c)
	if got := g.value(t, "haproxy_frontend_connections_total", map[string]string{"frontend": "public"}); got != 30 {
		t.Errorf("haproxy_frontend_connections_total{frontend=public} = %v, want 30 (conn_tot)", got)
	}
	frontpage := map[string]string{"backend": "http", "namespace": "shop", "route": "frontpage"}
	if n := len(g.find("haproxy_backend_connections_reused_total", frontpage)); n != 1 {
		t.Errorf("%d haproxy_backend_connections_reused_total series for shop/frontpage, want 1", n)
	}
	if n := len(g.find("haproxy_server_connections_reused_total", frontpage)); n != 2 {
		t.Errorf("%d haproxy_server_connections_reused_total series for shop/frontpage, want 2", n)
	}
	for _, name := range []string{"haproxy_server_http_average_queue_latency_milliseconds", "haproxy_server_http_average_connect_latency_milliseconds"} {
		if len(g.find(name, frontpage)) == 0 {
			t.Errorf("%s not exported by default", name)
		}
	}
	if len(g.find("haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "1xx"})) != 1 ||
		len(g.find("haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "other"})) != 1 {
		t.Error("1xx and other responses not exported by default")
	}
}

func TestPIDFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if pid, err := PIDFile(write("ok", "4242\n4243\n"))(); err != nil || pid != 4242 {
		t.Errorf("two lines: %d %v, want 4242", pid, err)
	}
	for name, content := range map[string]string{"empty": "", "junk": "abc\n", "zero": "0\n"} {
		if pid, err := PIDFile(write(name, content))(); err == nil {
			t.Errorf("%s: pid %d without an error", name, pid)
		}
	}
	if _, err := PIDFile(dir + "/missing")(); err == nil {
		t.Error("missing file: no error")
	}
	first := FirstPID(func(context.Context) ([]int, error) { return []int{7, 3}, nil }, time.Second)
	if pid, err := first(); err != nil || pid != 7 {
		t.Errorf("FirstPID: %d %v", pid, err)
	}
	none := FirstPID(func(context.Context) ([]int, error) { return nil, nil }, time.Second)
	if _, err := none(); err == nil {
		t.Error("FirstPID without workers: no error")
	}
}

// sizedReplies is replies that records the size hints it is given.
type sizedReplies struct {
	replies
	hints []int
}

func (r *sizedReplies) ExecSized(ctx context.Context, cmd string, hint int) (string, error) {
	r.hints = append(r.hints, hint)
	return r.Exec(ctx, cmd)
}

// TestASizedSourceIsToldToExpectTheLastReplysSize: the first "show stat"
// is read without a hint, each next one with a little more than the last
// successful reply (a failed ask changes nothing), and the metrics are
// those of a source without hints.
func TestASizedSourceIsToldToExpectTheLastReplysSize(t *testing.T) {
	small, big := readFixture(t, fixture), bigReply(t, 50, 0)
	clk := &clock{t: time.Unix(1000, 0)}
	src := &sizedReplies{replies: replies{texts: []string{small, big, "", big}, errs: []error{nil, nil, errors.New("refused"), nil}}}
	c, err := New(Options{Source: src, Now: clk.now, BaseScrapeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		g := gather(t, c)
		if up := g.value(t, "haproxy_up", nil); up != map[bool]float64{true: 0, false: 1}[i == 2] {
			t.Fatalf("ask %d: haproxy_up %v", i, up)
		}
		clk.t = clk.t.Add(time.Minute)
	}
	want := []int{0, len(small) + len(small)/16, len(big) + len(big)/16, len(big) + len(big)/16}
	if !reflect.DeepEqual(src.hints, want) {
		t.Errorf("hints %v, want %v", src.hints, want)
	}
	plain, _ := newFromFixture(t, Options{}, big)
	stats := func(text string) string { // the exporter's own counters differ
		var keep []string
		for _, l := range strings.Split(text, "\n") {
			if !strings.Contains(l, "haproxy_exporter_") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if w, g := stats(textOf(t, streamed(t, plain))), stats(textOf(t, streamed(t, c))); w != g {
		t.Errorf("metrics through a sized source differ:\n%s\nwant\n%s", g, w)
	}
}
