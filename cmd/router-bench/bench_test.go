package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
)

// TestScenarios runs every scenario with small numbers through the same
// code as the full benchmark (real router binary, real haproxy, real wrk)
// and checks that the results are sane. It measures nothing worth keeping:
// the numbers are in docs/performance.md (make bench).
func TestScenarios(t *testing.T) {
	for _, bin := range []string{"haproxy", "wrk", "valgrind", "callgrind_control"} {
		prereq.NeedBinary(t, bin)
	}
	routerBin := filepath.Join(t.TempDir(), "openshift-router")
	build := exec.Command("go", "build", "-o", routerBin, "../openshift-router")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building openshift-router: %v\n%s", err, out)
	}

	cfg := defaultConfig()
	cfg.RouterBin = routerBin
	cfg.Log = testWriter{t}
	cfg.ReloadInterval = "200ms"
	cfg.Backends = 5
	cfg.Settle = 200 * time.Millisecond
	cfg.ReadyTimeout = time.Minute
	cfg.ChangeTimeout = 20 * time.Second
	cfg.PhaseTimeout = time.Minute
	cfg.Routes = 20
	cfg.LoadWorkers = 2
	cfg.LoadRate = 50
	cfg.ChurnRoutes = 20
	cfg.ChurnChanges = 20
	cfg.RouteChurnRoutes = 20
	cfg.RouteChanges = 10
	cfg.RouteChangePace = 100 * time.Millisecond
	// Every kind, HTTPRoutes too (the default is the Route kinds).
	var kinds []string
	for _, k := range routeKinds {
		kinds = append(kinds, string(k))
	}
	cfg.RouteChurnKinds = strings.Join(kinds, ",")
	cfg.DataPlaneRoutes = 20
	cfg.WrkArgs = "-t1 -c4 -d2s"
	cfg.WrkWarmup = 0
	cfg.WrkRounds = 1
	cfg.CostRequests = 20
	if err := cfg.check(scenarioNames); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("cold-start", func(t *testing.T) {
		res, err := runColdStart(ctx, cfg, cfg.Routes)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.Routes != 20 || res.AllAnsweredSeconds <= 0 || res.FirstRouteSeconds <= 0 || res.ReadySeconds <= 0 || res.Reloads < 1 {
			t.Errorf("insane result: %+v", res)
		}
		if res.AllAnsweredSeconds < res.FirstRouteSeconds {
			t.Errorf("all routes answered (%v) before the first (%v)", res.AllAnsweredSeconds, res.FirstRouteSeconds)
		}
	})

	t.Run("churn", func(t *testing.T) {
		res, err := runChurn(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.Changes != 20 || res.Observed != 20 || res.TimedOut != 0 || res.Latency.Count != 20 {
			t.Errorf("changes made %d, observed %d, timed out %d, latencies %d; want 20, 20, 0, 20", res.Changes, res.Observed, res.TimedOut, res.Latency.Count)
		}
		if !(res.Latency.P50 > 0 && res.Latency.P50 <= res.Latency.P99 && res.Latency.P99 <= res.Latency.Max) {
			t.Errorf("latencies not ordered: %+v", res.Latency)
		}
		if res.Load.Requests < 10 {
			t.Errorf("the steady load sent %d requests", res.Load.Requests)
		}
		if res.Reloads < 0 || res.ReloadsAvoided == nil || res.Reloads+*res.ReloadsAvoided < 1 {
			t.Errorf("20 endpoint changes, but reloads %v and reloads avoided %v", res.Reloads, res.ReloadsAvoided)
		}
		if res.TargetsDetail == "" {
			t.Error("no targets verdict")
		}
	})

	t.Run("route-churn", func(t *testing.T) {
		res, err := runRouteChurn(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.Added != 6 || res.Deleted != 4 {
			t.Errorf("added %d, deleted %d; want 6, 4", res.Added, res.Deleted)
		}
		// Routes of every kind were loaded (each answered from its backend
		// before the phase) and changed, and each change was timed.
		if len(res.Kinds) != len(routeKinds) {
			t.Errorf("kinds %v, want %v", res.Kinds, routeKinds)
		}
		if n := res.AddLatency.Count + res.DeleteLatency.Count + res.NotSeen; n != res.Added+res.Deleted || res.AddLatency.Count == 0 || res.DeleteLatency.Count == 0 {
			t.Errorf("changes timed: %d added, %d deleted, %d not seen; want %d in all", res.AddLatency.Count, res.DeleteLatency.Count, res.NotSeen, res.Added+res.Deleted)
		}
		// The same changes, by kind.
		byKind := 0
		for k, l := range res.ByKind {
			if !slices.Contains(res.Kinds, k) {
				t.Errorf("timed changes of kind %q, not among %v", k, res.Kinds)
			}
			byKind += l.Added.Count + l.Deleted.Count
		}
		if byKind != res.AddLatency.Count+res.DeleteLatency.Count {
			t.Errorf("%d changes timed by kind, %d in all", byKind, res.AddLatency.Count+res.DeleteLatency.Count)
		}
		// Additions of new names run in free backends (the deleted routes'
		// or spares) or reload: either way, counted.
		if res.Reloads < 0 || res.ReloadsAvoided == nil || res.Reloads+*res.ReloadsAvoided < 1 {
			t.Errorf("10 route changes, but reloads %v and reloads avoided %v", res.Reloads, res.ReloadsAvoided)
		}
		if res.Load.Requests < 10 {
			t.Errorf("the steady load sent %d requests", res.Load.Requests)
		}
		if res.HAProxyAtEnd < 2 || res.HAProxyEndDetail.Master == 0 || res.HAProxyMax < res.HAProxyAtEnd {
			t.Errorf("haproxy processes: at end %d (%+v), max %d", res.HAProxyAtEnd, res.HAProxyEndDetail, res.HAProxyMax)
		}
	})

	t.Run("route-churn-same-names", func(t *testing.T) {
		c := cfg
		c.RouteChurnNames = "same"
		res, err := runRouteChurn(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.Added != 5 || res.Deleted != 5 {
			t.Errorf("added %d, deleted %d; want 5, 5", res.Added, res.Deleted)
		}
		// A route deleted and created again takes its own backend back.
		// (Changes that fall in one commit cancel out: avoided counts the
		// commits.)
		avoided := 0.0
		if res.ReloadsAvoided != nil {
			avoided = *res.ReloadsAvoided
		}
		if res.Reloads != 0 || avoided < 1 {
			t.Errorf("reloads %v, avoided %v: a route deleted and created again needs no reload", res.Reloads, avoided)
		}
	})

	t.Run("memory", func(t *testing.T) {
		res, err := runMemory(ctx, cfg, cfg.Routes)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.Router.RSSKiB < 1024 || res.HAProxy.RSSKiB < 1024 || res.HAProxyProcesses < 2 ||
			res.Router.PeakKiB < res.Router.RSSKiB || res.Router.RSSFileKiB <= 0 || res.Router.RSSFileKiB > res.Router.RSSKiB {
			t.Errorf("insane memory: %+v", res)
		}
		// Every route's backend is in the scraped statistics.
		if res.Scrapes != memoryScrapes || res.ScrapeSeries < cfg.Routes || res.RouterAfterScrapes.RSSKiB < 1024 ||
			len(res.RouterScrapeRSSKiB) != memoryScrapes-1 {
			t.Errorf("insane scrapes: %d scrapes, %d samples, RSS after %d KiB", res.Scrapes, res.ScrapeSeries, res.RouterAfterScrapes.RSSKiB)
		}
	})

	t.Run("dataplane", func(t *testing.T) {
		res, err := runDataPlane(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Line())
		if res.One.RPS <= 0 || res.Many.RPS <= 0 || res.Ratio <= 0 || res.Many.Routes != 20 {
			t.Errorf("insane result: %+v", res)
		}
		if res.Bare.RPS <= 0 || len(res.Bare.Rounds) != cfg.WrkRounds || res.ManyToBare <= 0 || res.OneToBare <= 0 {
			t.Errorf("insane result for the hand-written HAProxy: %+v", res)
		}
		if res.One.Non2xx+res.Many.Non2xx+res.Bare.Non2xx+res.One.SocketErrors+res.Many.SocketErrors+res.Bare.SocketErrors > 0 {
			t.Errorf("wrk saw errors: %+v", res)
		}
	})

	t.Run("request-cost", func(t *testing.T) {
		for _, kinds := range []string{"unsecured", "httproute"} {
			cfg := cfg
			cfg.Kinds = kinds
			res, err := runRequestCost(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Line())
			// HAProxy runs thousands of instructions a request, the
			// router's configuration more than the hand-written one's.
			if res.Routes != 20 || res.Requests != 20 || res.Bare < 1000 || res.Router <= res.Bare || res.Ratio <= 1 {
				t.Errorf("insane result: %+v", res)
			}
		}
		cfg := cfg
		cfg.Kinds = "edge"
		if _, err := runRequestCost(ctx, cfg); err == nil || !strings.Contains(err.Error(), "over HTTP") {
			t.Errorf("r0 an edge route: %v, want refused (measured over HTTP)", err)
		}
	})

	// Each scenario's fixture stops its router and checks that no haproxy
	// process of its working directory survives (an error otherwise).
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestParseWrk(t *testing.T) {
	out := `Running 2s test @ http://127.0.0.1:40000/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   312.05us  101.20us   2.33ms   80.12%
    Req/Sec    12.34k     1.01k   13.50k    70.00%
  24567 requests in 2.00s, 3.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:  12283.50
Transfer/sec:      1.55MB
`
	var st wrkStats
	if err := parseWrk(out, &st); err != nil {
		t.Fatal(err)
	}
	want := wrkStats{RPS: 12283.50, Requests: 24567, Non2xx: 5, SocketErrors: 3, LatencyAvg: "312.05us"}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("got %+v, want %+v", st, want)
	}
	if err := parseWrk("nothing", &st); err == nil {
		t.Error("no error for output without Requests/sec")
	}
}

func TestWithDuration(t *testing.T) {
	for in, want := range map[string]string{
		"-t2 -c32 -d10s":               "-t2 -c32 -d 2s",
		"-t2 -d 10s -c32":              "-t2 -c32 -d 2s",
		"--duration=10s -t1":           "-t1 -d 2s",
		"-t1 --duration 10s --latency": "-t1 --latency -d 2s",
	} {
		if got := strings.Join(withDuration(strings.Fields(in), 2*time.Second), " "); got != want {
			t.Errorf("withDuration(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetricLine(t *testing.T) {
	for line, want := range map[string]struct {
		name string
		v    float64
		ok   bool
	}{
		"template_router_reload_seconds_count 12":                           {"template_router_reload_seconds_count", 12, true},
		`template_router_reloads_avoided_total{kind="endpoints"} 3`:         {`template_router_reloads_avoided_total{kind="endpoints"}`, 3, true},
		`haproxy_server_up{backend="a b",server="x"} 1 1700000000`:          {`haproxy_server_up{backend="a b",server="x"}`, 1, true},
		"# HELP template_router_reload_seconds Measures the time spent ...": {"", 0, false},
		"": {"", 0, false},
	} {
		name, v, ok := metricLine(line)
		if name != want.name || v != want.v || ok != want.ok {
			t.Errorf("metricLine(%q) = %q, %v, %v; want %q, %v, %v", line, name, v, ok, want.name, want.v, want.ok)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := summarize(ds)
	if s.P50 != 0.05 || s.P99 != 0.099 || s.Max != 0.1 || s.Count != 100 {
		t.Errorf("summarize(1..100ms) = %+v", s)
	}
	if s := summarize([]time.Duration{time.Second}); s.P50 != 1 || s.P99 != 1 {
		t.Errorf("one sample: %+v", s)
	}
}

func TestParseScenarios(t *testing.T) {
	if got, err := parseScenarios("memory, cold-start"); err != nil || !reflect.DeepEqual(got, []string{"cold-start", "memory"}) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, _ := parseScenarios("all"); !reflect.DeepEqual(got, scenarioNames) {
		t.Errorf("all = %v", got)
	}
	if _, err := parseScenarios("cold-start,nope"); err == nil {
		t.Error("no error for an unknown scenario")
	}
}
