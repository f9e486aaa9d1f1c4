package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/test/benchreport"
	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/prereq"
)

// The environment of BenchmarkDataPlaneSideBySide:
//
//	ROUTER_BENCH_SIDEBYSIDE_ROUTES    routes of the full routers (default 10000)
//	ROUTER_BENCH_SIDEBYSIDE_BACKENDS  backends in the network namespace (default 20)
//	ROUTER_BENCH_SIDEBYSIDE_WRK       wrk's load arguments (default "-t2 -c50 -d10s")
//	ROUTER_BENCH_SIDEBYSIDE_ROUNDS    alternating rounds, the median counts (default 3)
//	ROUTER_BENCH_SIDEBYSIDE_SPREAD    if set: also wrk through the N-route routers with each request
//	                                  to the next route in turn (a Lua script), not r0 alone
//	ROUTER_BENCH_SIDEBYSIDE_STICKY    if set: wrk sends back the sticky cookie each router set for r0,
//	                                  as a browser does (each router's own, asked for once)
//	ROUTER_BENCH_SIDEBYSIDE_THREADS   ROUTER_THREADS for every router (default: unset, HAProxy's default)
//	ROUTER_BENCH_SIDEBYSIDE_ROUTE_CHANGES  if set: after the rounds, this many route additions and
//	                                  deletions through the API server, one a second (sbschurn_test.go)
//	ROUTER_BENCH_ROUTER_BIN           our router binary (default: built from this tree)
//	ROUTER_BENCH_HAPROXY              haproxy binary for every router (default: haproxy from PATH;
//	                                  for the other router it is bind-mounted over /usr/sbin/haproxy)
//	ROUTER_BENCH_OTHER_ROUTER         another router binary to measure the same way (OpenShift's)
//	ROUTER_BENCH_OTHER_TEMPLATE       its TEMPLATE_FILE (the .http error pages beside it are copied too)
//	ROUTER_BENCH_OTHER_RELOAD_SCRIPT  its RELOAD_SCRIPT
//	ROUTER_BENCH_SIDEBYSIDE_JSON      if set: write the results to this file (test/benchreport's
//	                                  JSON; docs/performance/sidebyside.json, drawn by make plots)
//	ROUTER_BENCH_SIDEBYSIDE_HTTPROUTES  if set: our router also on as many HTTPRoutes (routers gw-1
//	                                  and gw-N, sbsgateway_test.go), in a cluster with the Gateway
//	                                  API's CRDs
const (
	sbsLabel        = "router-bench-sidebyside"
	sbsLabelValue   = "one"
	sbsBackendPort  = 8080
	sbsReadyTimeout = 20 * time.Minute
)

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s: %q is not a positive number", name, v)
	}
	return n
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// sbsRouter is one router of the side-by-side benchmark, ours or the other
// one, with 1 route or with all of them.
type sbsRouter struct {
	Name       string // e.g. "ours-1", "other-10000", "gw-10000"
	Routes     int
	ns         string      // the namespace of its routes
	gateway    *sbsGateway // a router on HTTPRoutes (nil: on Routes)
	HTTPPort   int
	ConfigPath string // its rendered haproxy.config
	routerPID  func() int
	haproxy    func() []int // its haproxy processes
	exited     func() error
	stop       func() error
	logTail    func(int) string
	started    time.Time // when it was started
	// reloadReasons (ours only) are its reloads by reason, from /metrics.
	reloadReasons func(context.Context) string

	rounds       []wrkStats
	spreadRounds []wrkStats // ROUTER_BENCH_SIDEBYSIDE_SPREAD: every route in turn
	cookie       string     // ROUTER_BENCH_SIDEBYSIDE_STICKY: its sticky cookie for r0

	// report is what ROUTER_BENCH_SIDEBYSIDE_JSON gets of this router.
	report benchreport.Router
}

// BenchmarkDataPlaneSideBySide measures the data plane with many routes
// loaded against the same with one, for our router and, when
// ROUTER_BENCH_OTHER_ROUTER names one, for another router (OpenShift's own)
// in the same run: all of them against one real kube-apiserver, whose
// namespace holds N routes r0 … r<N-1>, each with its own Service and
// EndpointSlice whose endpoint is one of a few backends in a network
// namespace. Route r0 is labelled, and each router runs twice: once with
// ROUTE_LABELS selecting r0 alone, once with every route. Every router
// writes route status (ROUTER_UPDATE_STATUS=true, both routers' default)
// under its own name (ROUTER_SERVICE_NAME=ours-1, ours-N, other-1,
// other-N; ROUTER_SERVICE_NAMESPACE, which OpenShift's router requires with
// a name, is the fixture's namespace), as sharded routers of a cluster do:
// each route gets one status.ingress entry per router name, so the routers
// do not fight over it.
//
// Each router is watched from the moment it listens (the next one starts
// meanwhile): when it first answers r0 (and, with N routes, r<N-1>), and
// when every route it serves has answered. When all have, every route a
// router serves carries its Admitted entry (the status writes, at client-go's
// default 5 per second, take about 34 minutes for 10,000 routes) and the
// routers are idle, wrk runs through r0 of each in turn, for several rounds (the
// order reversed every other round); the median of each router counts. It
// reports requests/s of each and the ratios N/1: of the medians, and the
// median of the ratios within each round (the 1-route and N-route router
// run back to back, so load from elsewhere that drifts between rounds
// cancels out).
//
// The other router is given OpenShift's environment (ROUTER_SERVICE_HTTP_PORT,
// ROUTER_SERVICE_HTTPS_PORT, STATS_PORT, ROUTER_LISTEN_ADDR, TEMPLATE_FILE,
// RELOAD_SCRIPT, ROUTE_LABELS, KUBECONFIG, …). OpenShift's template and
// reload script use /var/lib/haproxy and /usr/sbin/haproxy, and the script
// finds haproxy with pidof: each such router runs in its own mount and PID
// namespace (unshare), with a temporary directory bind-mounted on
// /var/lib/haproxy.
//
// Run (a few minutes to create 30,000 objects, and to load them; about 35
// more for the status writes of 10,000 routes):
//
//	go test -run XXX -bench DataPlaneSideBySide -benchtime 1x -timeout 3h ./cmd/router-bench/
func BenchmarkDataPlaneSideBySide(b *testing.B) {
	prereq.NeedBinary(b, "haproxy")
	prereq.NeedBinary(b, "wrk")
	n := envInt(b, "ROUTER_BENCH_SIDEBYSIDE_ROUTES", 10000)
	nBackends := min(envInt(b, "ROUTER_BENCH_SIDEBYSIDE_BACKENDS", 20), n)
	rounds := envInt(b, "ROUTER_BENCH_SIDEBYSIDE_ROUNDS", 3)
	spread := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_SPREAD") != ""
	sticky := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_STICKY") != ""
	wrkArgs := strings.Fields(envString("ROUTER_BENCH_SIDEBYSIDE_WRK", "-t2 -c50 -d10s"))
	threads := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_THREADS")
	changes := 0
	if os.Getenv("ROUTER_BENCH_SIDEBYSIDE_ROUTE_CHANGES") != "" {
		changes = envInt(b, "ROUTER_BENCH_SIDEBYSIDE_ROUTE_CHANGES", 0)
	}
	haproxyBin := os.Getenv("ROUTER_BENCH_HAPROXY")
	other := otherRouterFromEnv(b)
	httpRoutes := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_HTTPROUTES") != ""

	routerBin := os.Getenv("ROUTER_BENCH_ROUTER_BIN")
	if routerBin == "" {
		routerBin = filepath.Join(b.TempDir(), "openshift-router")
		build := exec.Command("go", "build", "-o", routerBin, "../openshift-router")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building openshift-router: %v\n%s", err, out)
		}
	}
	haproxyVersion := logHAProxyVersion(b, haproxyBin)
	runDate := time.Now().UTC().Format(time.DateOnly)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	var c *kubetest.Cluster
	var gc gatewayclient.Interface
	if httpRoutes {
		c = kubetest.Start(b, kubetest.WithGatewayCRDs("standard"))
		gc = gatewayclient.NewForConfigOrDie(c.RESTConfig)
	} else {
		c = kubetest.Shared(b)
	}
	ns := c.CreateNamespace(b, "sbs-", nil).Name
	gwNS := ""
	netns := kubetest.NewNetNS(b)
	ips := []string{netns.IP()}
	for len(ips) < nBackends {
		ips = append(ips, netns.AddAddress(b))
	}
	for i, ip := range ips {
		netns.StartBackend(b, ip, sbsBackendPort, sbsBackendName(i))
	}
	start := time.Now()
	createSideBySideFixture(b, ctx, c, ns, n, ips)
	b.Logf("%d routes, services and endpoint slices created in %s (%d backends)", n, time.Since(start).Round(time.Second), len(ips))
	if httpRoutes {
		gwNS = c.CreateNamespace(b, "sbs-gw-", nil).Name
		t0 := time.Now()
		createGatewayFixture(b, ctx, c, gc, gwNS, n, ips)
		b.Logf("%d HTTPRoutes, services and endpoint slices created in %s", n, time.Since(t0).Round(time.Second))
	}

	// Set rather than left to the default so that an inherited
	// ROUTER_UPDATE_STATUS cannot turn the status writes off unnoticed.
	common := []string{"ROUTER_UPDATE_STATUS=true", "ROUTER_SERVICE_NAMESPACE=" + ns}
	if threads != "" {
		common = append(common, "ROUTER_THREADS="+threads)
	}
	var routers []*sbsRouter
	var answers routerAnswers
	defer func() {
		for _, r := range routers {
			if err := r.stop(); err != nil {
				b.Errorf("%s: %v", r.Name, err)
			}
		}
	}()
	// One after the other, each once its HTTP port listens: the free ports
	// a router is given are only free until it binds them.
	deadline := time.Now().Add(sbsReadyTimeout)
	for _, who := range []string{"ours", "gw", "other"} {
		if who == "other" && other == nil || who == "gw" && !httpRoutes {
			continue
		}
		for _, count := range []int{1, n} {
			env := append([]string{"ROUTE_LABELS=", fmt.Sprintf("ROUTER_SERVICE_NAME=%s-%d", who, count)}, common...)
			if count == 1 {
				env = append(env, "ROUTE_LABELS="+sbsLabel+"="+sbsLabelValue)
			}
			var r *sbsRouter
			var err error
			t0 := time.Now()
			switch who {
			case "ours":
				if httpRoutes {
					// Not the GatewayClasses' controller: the status
					// of bench-all is gw-N's alone to write.
					env = append(env, "ROUTER_GATEWAY_CONTROLLER_NAME=bench.test/routes")
				}
				r, err = startOurSideBySide(b, routerBin, haproxyBin, c.KubeconfigPath, ns, count, env)
			case "gw":
				r, err = startGatewaySideBySide(b, routerBin, haproxyBin, c.KubeconfigPath, gwNS, count, gc)
			default:
				r, err = other.start(b, haproxyBin, c.KubeconfigPath, ns, count, env)
			}
			if err != nil {
				b.Fatal(err)
			}
			if r.ns == "" {
				r.ns = ns
			}
			r.started = t0
			r.report = benchreport.Router{Name: r.Name, Who: who, Routes: count}
			routers = append(routers, r)
			if err := waitListening(ctx, r, deadline); err != nil {
				b.Fatalf("%s: %v; last log lines:\n%s", r.Name, err, r.logTail(30))
			}
			// Watched from now on, while the next one starts: each
			// router's times are its own, whatever the order.
			answers.watch(b, ctx, r, len(ips), start, deadline)
		}
	}

	answers.wait(b)
	waitStatusesWritten(b, ctx, c, gc, ns, gwNS, routers)
	waitRoutersIdle(b, ctx, routers)
	// Memory at rest: a router left idle for a while, as most of its life
	// is (ours returns unused heap after 30 s without a pass, checked every
	// 15 s); the same wait for every router.
	b.Logf("measuring memory after %s at rest", sbsMemorySettle)
	sleepCtx(ctx, sbsMemorySettle)
	for _, r := range routers {
		logConfigSummary(b, r, r.ns)
		reportMemory(b, r)
	}

	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		for round := 0; round < rounds; round++ {
			for _, r := range alternate(routers, round) {
				args := wrkArgs
				if sticky {
					args = append(append([]string(nil), wrkArgs...), "-H", "Cookie: "+r.stickyCookie(b, ctx, routeName(0)+".bench.test"))
				}
				st := wrkRound(b, ctx, r, args, routeName(0)+".bench.test", it == 0 && round == 0, fmt.Sprintf("round %d, %s", round+1, r.Name))
				r.rounds = append(r.rounds, st)
			}
		}
		if spread {
			measureSpread(b, ctx, routers, wrkArgs, rounds, it == 0)
		}
	}
	b.StopTimer()
	sbsRouteChurn(b, ctx, c, routers, ips, changes)

	reportSideBySide(b, routers, n, sbsRun{date: runDate, haproxy: haproxyVersion, wrkArgs: wrkArgs, rounds: rounds, sticky: sticky, other: other})
}

// sbsRun is what the side-by-side report says of the run.
type sbsRun struct {
	date, haproxy string
	wrkArgs       []string
	rounds        int
	sticky        bool
	other         *otherRouter
}

// reportSideBySide reports each router's median requests/s and ratios and,
// with ROUTER_BENCH_SIDEBYSIDE_JSON, writes the results (n: the routes of
// the full routers).
func reportSideBySide(b *testing.B, routers []*sbsRouter, n int, run sbsRun) {
	b.Helper()
	medians := map[string]float64{}
	for _, r := range routers {
		rps := make([]float64, 0, len(r.rounds))
		var non2xx, sockErrs int64
		for _, st := range r.rounds {
			rps = append(rps, st.RPS)
			non2xx += st.Non2xx
			sockErrs += st.SocketErrors
		}
		sort.Float64s(rps)
		med := rps[(len(rps)-1)/2]
		medians[r.Name] = med
		r.report.RoundsRPS, r.report.MedianRPS = rps, med
		b.Logf("%s: median %.0f req/s of %v; non-2xx %d, socket errors %d", r.Name, med, rps, non2xx, sockErrs)
		if non2xx > 0 {
			b.Errorf("%s: %d non-2xx answers through r0", r.Name, non2xx)
		}
		b.ReportMetric(med, r.Name+"-req/s")
	}
	for _, who := range []string{"ours", "gw", "other"} {
		one, many := medians[who+"-1"], medians[fmt.Sprintf("%s-%d", who, n)]
		if one > 0 && many > 0 {
			b.ReportMetric(many/one, fmt.Sprintf("%s-ratio-%d/1", who, n))
			b.Logf("%s: %d routes / 1 route = %.3f", who, n, many/one)
		}
	}
	for who, ratio := range reportPairedRatios(b, routers, n) {
		for _, r := range routers {
			if r.report.Who == who && r.Routes == n {
				r.report.PairedRatio = ratio
			}
		}
	}
	for _, r := range routers {
		if len(r.spreadRounds) == 0 {
			continue
		}
		rps := make([]float64, 0, len(r.spreadRounds))
		var non2xx int64
		for _, st := range r.spreadRounds {
			rps = append(rps, st.RPS)
			non2xx += st.Non2xx
		}
		sort.Float64s(rps)
		med := rps[(len(rps)-1)/2]
		b.Logf("%s, every route in turn: median %.0f req/s of %v; non-2xx %d", r.Name, med, rps, non2xx)
		if non2xx > 0 {
			b.Errorf("%s: %d non-2xx answers with every route in turn", r.Name, non2xx)
		}
		b.ReportMetric(med, r.Name+"-spread-req/s")
	}
	if path := os.Getenv("ROUTER_BENCH_SIDEBYSIDE_JSON"); path != "" {
		rep := &benchreport.SideBySide{
			Benchmark:    "BenchmarkDataPlaneSideBySide",
			Provenance:   "written by BenchmarkDataPlaneSideBySide (cmd/router-bench) at the end of its run",
			Date:         run.date,
			HAProxy:      run.haproxy,
			Routes:       n,
			UpdateStatus: true,
			WrkArgs:      strings.Join(run.wrkArgs, " ") + map[bool]string{true: " -H 'Cookie: <the sticky cookie each router set>'"}[run.sticky],
			Rounds:       run.rounds,
		}
		if run.other != nil {
			rep.OtherRouter = run.other.Bin
		}
		for _, r := range routers {
			rep.Routers = append(rep.Routers, r.report)
		}
		if err := benchreport.Write(path, rep); err != nil {
			b.Errorf("ROUTER_BENCH_SIDEBYSIDE_JSON: %v", err)
		} else {
			b.Logf("results written to %s", path)
		}
	}
}

// routerAnswers watches the routers answer, each from the moment it
// listens.
type routerAnswers struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// watch waits, in the background, until router r answers r0 and, with more
// than one route, r<N-1> from their backends (of nBackends) — its first
// answer — then until every route it serves has answered from its backend
// (16 at a time, each asked until it does), and logs when, counted from its
// own start and from start (the fixture's).
func (a *routerAnswers) watch(b *testing.B, ctx context.Context, r *sbsRouter, nBackends int, start, deadline time.Time) {
	a.wg.Add(1)
	fail := func(err error) {
		a.mu.Lock()
		a.errs = append(a.errs, fmt.Errorf("%s: %w; last log lines:\n%s", r.Name, err, r.logTail(30)))
		a.mu.Unlock()
	}
	go func() {
		defer a.wg.Done()
		checks := []int{0}
		if r.Routes > 1 {
			checks = append(checks, r.Routes-1)
		}
		for _, i := range checks {
			if err := waitRouteAnswers(ctx, r, routeName(i)+".bench.test", sbsBackendName(i%nBackends), deadline); err != nil {
				fail(err)
				return
			}
		}
		r.report.AnsweredSeconds = time.Since(r.started).Round(100 * time.Millisecond).Seconds()
		b.Logf("%s answers %s after it started (%s after the objects began to be created)",
			r.Name, time.Since(r.started).Round(100*time.Millisecond), time.Since(start).Round(time.Second))
		next := make(chan int)
		var wg sync.WaitGroup
		var once sync.Once
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if err := waitRouteAnswers(ctx, r, routeName(i)+".bench.test", sbsBackendName(i%nBackends), deadline); err != nil {
						once.Do(func() { fail(err) })
					}
				}
			}()
		}
		for i := 0; i < r.Routes; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		r.report.EveryRouteSeconds = time.Since(r.started).Round(100 * time.Millisecond).Seconds()
		b.Logf("%s: every one of its %d routes answered %s after it started", r.Name, r.Routes, time.Since(r.started).Round(100*time.Millisecond))
	}()
}

// wait waits until every router watched answered every route.
func (a *routerAnswers) wait(b *testing.B) {
	b.Helper()
	a.wg.Wait()
	for _, err := range a.errs {
		b.Error(err)
	}
	if len(a.errs) > 0 {
		b.FailNow()
	}
}

// sbsStatusTimeout bounds the wait for the routers' status writes.
const sbsStatusTimeout = 75 * time.Minute

// waitStatusesWritten waits (at most sbsStatusTimeout) until every route of
// ns that a router serves (r0 for the 1-route routers, all for the others)
// carries an Admitted=True status.ingress entry under the router's name —
// for a router on HTTPRoutes (of gwNS), an Accepted=True status.parents
// entry of its controller name —, and logs when each router's were all
// there, counted from its start.
func waitStatusesWritten(b *testing.B, ctx context.Context, c *kubetest.Cluster, gc gatewayclient.Interface, ns, gwNS string, routers []*sbsRouter) {
	b.Helper()
	deadline := time.Now().Add(sbsStatusTimeout)
	done := map[string]bool{}
	lastProgress := time.Now()
	for {
		admitted, err := admittedByRouter(ctx, c, ns)
		if err != nil {
			b.Fatalf("listing routes for their status: %v", err)
		}
		var accepted map[string]int
		if gwNS != "" {
			if accepted, err = acceptedByController(ctx, gc, gwNS); err != nil {
				b.Fatalf("listing HTTPRoutes for their status: %v", err)
			}
		}
		for _, r := range routers {
			got := admitted[r.Name]
			if r.gateway != nil {
				got = accepted[r.gateway.controller]
			}
			if !done[r.Name] && got >= r.Routes {
				done[r.Name] = true
				r.report.StatusesSeconds = time.Since(r.started).Round(time.Second).Seconds()
				b.Logf("%s: all %d of its routes admitted in their status %s after it started",
					r.Name, r.Routes, time.Since(r.started).Round(time.Second))
			}
		}
		if len(done) == len(routers) {
			return
		}
		if time.Since(lastProgress) >= 2*time.Minute {
			lastProgress = time.Now()
			b.Logf("route status written so far (Admitted entries per router name): %v; HTTPRoutes (Accepted per controller): %v", admitted, accepted)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Errorf("not every route status written after %s (Admitted entries per router name: %v; HTTPRoutes: %v); measuring anyway", sbsStatusTimeout, admitted, accepted)
			return
		}
		sleepCtx(ctx, 10*time.Second)
	}
}

// admittedByRouter counts, per router name, the routes of ns whose status
// has an Admitted=True entry under that name.
func admittedByRouter(ctx context.Context, c *kubetest.Cluster, ns string) (map[string]int, error) {
	out := map[string]int{}
	opts := metav1.ListOptions{Limit: 2000}
	for {
		list, err := c.Routes.RouteV1().Routes(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, rt := range list.Items {
			for _, in := range rt.Status.Ingress {
				for _, cond := range in.Conditions {
					if cond.Type == routev1.RouteAdmitted && cond.Status == corev1.ConditionTrue {
						out[in.RouterName]++
					}
				}
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// reportPairedRatios reports, for ours and the other router, the median
// over the rounds of N-route req/s / 1-route req/s within the same round:
// the two run one right after the other in every round, so load from
// elsewhere on the machine that drifts between rounds cancels out more than
// in the ratio of the two medians.
func reportPairedRatios(b *testing.B, routers []*sbsRouter, n int) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	byName := map[string]*sbsRouter{}
	for _, r := range routers {
		byName[r.Name] = r
	}
	for _, who := range []string{"ours", "gw", "other"} {
		one, many := byName[who+"-1"], byName[fmt.Sprintf("%s-%d", who, n)]
		if one == nil || many == nil || len(one.rounds) != len(many.rounds) || len(one.rounds) == 0 {
			continue
		}
		ratios := make([]float64, 0, len(one.rounds))
		for k := range one.rounds {
			if one.rounds[k].RPS > 0 {
				ratios = append(ratios, many.rounds[k].RPS/one.rounds[k].RPS)
			}
		}
		if len(ratios) == 0 {
			continue
		}
		in := append([]float64(nil), ratios...)
		sort.Float64s(ratios)
		med := ratios[(len(ratios)-1)/2]
		b.ReportMetric(med, fmt.Sprintf("%s-paired-ratio-%d/1", who, n))
		b.Logf("%s: %d routes / 1 route within each round: %.3f; median %.3f", who, n, in, med)
		out[who] = med
	}
	return out
}

// alternate is the order of the routers in round: as given in even rounds,
// reversed in odd ones.
func alternate(routers []*sbsRouter, round int) []*sbsRouter {
	order := append([]*sbsRouter(nil), routers...)
	if round%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// stickyCookie returns the sticky cookie r sets for host ("name=value"),
// asked for once.
func (r *sbsRouter) stickyCookie(b *testing.B, ctx context.Context, host string) string {
	b.Helper()
	if r.cookie != "" {
		return r.cookie
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", r.HTTPPort), nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("%s: the sticky cookie: %v", r.Name, err)
	}
	resp.Body.Close()
	c, _, _ := strings.Cut(resp.Header.Get("Set-Cookie"), ";")
	if !strings.Contains(c, "=") {
		b.Fatalf("%s: no sticky cookie for %s (Set-Cookie %q)", r.Name, host, resp.Header.Values("Set-Cookie"))
	}
	b.Logf("%s: wrk sends back its sticky cookie %s", r.Name, c)
	r.cookie = c
	return c
}

// wrkRound runs wrk with args through router r for host (after a 2 s
// warm-up if warmUp), logs its output under what and fails if the router
// has exited.
func wrkRound(b *testing.B, ctx context.Context, r *sbsRouter, args []string, host string, warmUp bool, what string) wrkStats {
	b.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/", r.HTTPPort)
	if warmUp {
		if _, err := wrk(ctx, config{Wrk: "wrk"}, withDuration(args, 2*time.Second), host, url); err != nil {
			b.Fatalf("%s: wrk warm-up: %v", r.Name, err)
		}
	}
	out, err := wrk(ctx, config{Wrk: "wrk"}, args, host, url)
	if err != nil {
		b.Fatalf("%s: %v", r.Name, err)
	}
	var st wrkStats
	if err := parseWrk(out, &st); err != nil {
		b.Fatalf("%s: %v", r.Name, err)
	}
	b.Logf("%s: %.0f req/s\n%s", what, st.RPS, strings.TrimRight(out, "\n"))
	if err := r.exited(); err != nil {
		b.Fatalf("%s: %v", r.Name, err)
	}
	return st
}

// measureSpread runs wrk through the routers with more than one route,
// alternating, with a script that sends each request to the next route
// (r0, r1, … r<N-1>, r0, …) rather than to r0 alone: the route lookup then
// misses HAProxy's caches as it would with many clients of many routes.
func measureSpread(b *testing.B, ctx context.Context, routers []*sbsRouter, wrkArgs []string, rounds int, warmUp bool) {
	b.Helper()
	var many []*sbsRouter
	for _, r := range routers {
		if r.Routes > 1 {
			many = append(many, r)
		}
	}
	for round := 0; round < rounds; round++ {
		for _, r := range alternate(many, round) {
			script := filepath.Join(b.TempDir(), "spread.lua")
			lua := fmt.Sprintf(`local n = %d
local i = -1
request = function()
  i = (i + 1) %% n
  return wrk.format(nil, nil, {["Host"] = "r" .. i .. ".bench.test"})
end
`, r.Routes)
			if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
				b.Fatal(err)
			}
			args := append(append([]string(nil), wrkArgs...), "-s", script)
			// The host is replaced by the script's.
			st := wrkRound(b, ctx, r, args, routeName(0)+".bench.test", warmUp && round == 0, fmt.Sprintf("round %d, %s, every route in turn", round+1, r.Name))
			r.spreadRounds = append(r.spreadRounds, st)
		}
	}
}

func sbsBackendName(i int) string { return fmt.Sprintf("be%d", i) }

// createSideBySideFixture creates, in ns, for i in 0..n-1: Service s<i>, its
// EndpointSlice (one endpoint, ips[i mod len(ips)]:8080) and Route r<i>
// (host r<i>.bench.test); r0 carries the label the 1-route routers select.
func createSideBySideFixture(b *testing.B, ctx context.Context, c *kubetest.Cluster, ns string, n int, ips []string) {
	b.Helper()
	createInParallel(b, ctx, n, "routes", func(i int) error { return createSideBySideRoute(ctx, c, ns, i, ips[i%len(ips)]) })
}

// createInParallel calls create for 0..n-1, 16 at a time, and fails b on
// the first error; what says what is created, in the progress lines.
func createInParallel(b *testing.B, ctx context.Context, n int, what string, create func(i int) error) {
	b.Helper()
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := create(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if d := done.Add(1); d%2000 == 0 {
					b.Logf("created %d of %d %s with their services and endpoint slices", d, n, what)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("creating the fixture: %v", firstErr)
	}
	if err := ctx.Err(); err != nil {
		b.Fatal(err)
	}
}

func createSideBySideRoute(ctx context.Context, c *kubetest.Cluster, ns string, i int, ip string) error {
	var labels map[string]string
	if i == 0 {
		labels = map[string]string{sbsLabel: sbsLabelValue}
	}
	_, err := createRouteObjects(ctx, c, ns, routeName(i), fmt.Sprintf("s%d", i), ip, labels)
	return err
}

// createRouteObjects creates in ns Service svcName, its EndpointSlice (one
// ready endpoint, ip:8080) and Route name (host name.bench.test, labels),
// in that order, and returns when the route's create was sent.
func createRouteObjects(ctx context.Context, c *kubetest.Cluster, ns, name, svcName, ip string, labels map[string]string) (time.Time, error) {
	if err := createServiceObjects(ctx, c, ns, svcName, ip); err != nil {
		return time.Time{}, err
	}
	rt := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: routev1.RouteSpec{Host: name + ".bench.test", To: routev1.RouteTargetReference{Kind: "Service", Name: svcName}}}
	t0 := time.Now()
	if _, err := c.Routes.RouteV1().Routes(ns).Create(ctx, rt, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("route %s: %w", name, err)
	}
	return t0, nil
}

// startOurSideBySide starts this project's router on the API server.
func startOurSideBySide(b *testing.B, routerBin, haproxyBin, kubeconfig, ns string, routes int, env []string) (*sbsRouter, error) {
	cfg := defaultConfig()
	cfg.RouterBin = routerBin
	cfg.HAProxy = haproxyBin
	cfg.Log = testWriter{b}
	cfg.RouterEnv = env
	p, err := startRouterOn(cfg, b.TempDir(), []string{"--kubeconfig", kubeconfig, "--namespace", ns})
	if err != nil {
		return nil, err
	}
	return &sbsRouter{
		Name:          fmt.Sprintf("ours-%d", routes),
		Routes:        routes,
		HTTPPort:      p.HTTPPort,
		ConfigPath:    layout.New(p.WorkingDir).Config(),
		routerPID:     p.PID,
		haproxy:       func() []int { return haproxyPIDs(p.WorkingDir) },
		exited:        p.exited,
		stop:          p.Stop,
		logTail:       p.LogTail,
		reloadReasons: p.reloadReasons,
	}, nil
}

// otherRouter is another router binary with OpenShift's template and
// reload script.
type otherRouter struct {
	Bin, Template, ReloadScript string
}

func otherRouterFromEnv(b *testing.B) *otherRouter {
	bin := os.Getenv("ROUTER_BENCH_OTHER_ROUTER")
	if bin == "" {
		b.Log("ROUTER_BENCH_OTHER_ROUTER is not set: measuring our router alone")
		return nil
	}
	o := &otherRouter{Bin: bin, Template: os.Getenv("ROUTER_BENCH_OTHER_TEMPLATE"), ReloadScript: os.Getenv("ROUTER_BENCH_OTHER_RELOAD_SCRIPT")}
	for name, p := range map[string]string{"ROUTER_BENCH_OTHER_ROUTER": o.Bin, "ROUTER_BENCH_OTHER_TEMPLATE": o.Template, "ROUTER_BENCH_OTHER_RELOAD_SCRIPT": o.ReloadScript} {
		if p == "" {
			b.Fatalf("%s is needed with ROUTER_BENCH_OTHER_ROUTER", name)
		}
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	prereq.NeedBinary(b, "unshare")
	prereq.NeedBinary(b, "mount")
	prereq.Require(b, prereq.Root("the other router runs in its own mount and PID namespace"))
	if st, err := os.Stat("/var/lib/haproxy"); err != nil || !st.IsDir() {
		b.Fatalf("/var/lib/haproxy must exist (a directory to bind-mount each router's own on): %v", err)
	}
	return o
}

// start runs the other router in its own mount and PID namespace, with
// dir/lib bind-mounted on /var/lib/haproxy (laid out as OpenShift's router
// image lays it out) and, if haproxyBin is set, haproxyBin on
// /usr/sbin/haproxy.
func (o *otherRouter) start(b *testing.B, haproxyBin, kubeconfig, ns string, routes int, env []string) (*sbsRouter, error) {
	dir := b.TempDir()
	lib := filepath.Join(dir, "lib")
	for _, d := range []string{"conf/.tmp", "run", "bin", "log", "mtls", "router/certs", "router/cacerts", "router/allowlists", "router/whitelists"} {
		if err := os.MkdirAll(filepath.Join(lib, d), 0o755); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"os_http_be", "os_edge_reencrypt_be", "os_tcp_be", "os_sni_passthrough", "os_route_http_redirect", "cert_config", "os_wildcard_domain"} {
		if err := os.WriteFile(filepath.Join(lib, "conf", f+".map"), nil, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(lib, "conf", "haproxy.config"), nil, 0o644); err != nil {
		return nil, err
	}
	pages, _ := filepath.Glob(filepath.Join(filepath.Dir(o.Template), "*.http"))
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(lib, "conf", filepath.Base(p)), data, 0o644); err != nil {
			return nil, err
		}
	}

	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "router.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	haproxyPath := ""
	if haproxyBin != "" {
		if haproxyPath, err = exec.LookPath(haproxyBin); err != nil {
			return nil, err
		}
		if haproxyPath, err = filepath.Abs(haproxyPath); err != nil {
			return nil, err
		}
	}
	const script = `mount --bind "$1" /var/lib/haproxy || exit 1
if [ -n "$2" ]; then mount --bind "$2" /usr/sbin/haproxy || exit 1; fi
shift 2
exec "$@"`
	cmd := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child",
		"sh", "-c", script, "sh", lib, haproxyPath, o.Bin, "--namespace", ns, "--v=2")
	e := withoutEnv(os.Environ(), append(controlledEnv, "TEMPLATE_FILE", "RELOAD_SCRIPT", "ROUTE_LABELS", "ROUTER_THREADS")...)
	e = append(e,
		"KUBECONFIG="+kubeconfig,
		fmt.Sprintf("ROUTER_SERVICE_HTTP_PORT=%d", ports[0]),
		fmt.Sprintf("ROUTER_SERVICE_HTTPS_PORT=%d", ports[1]),
		fmt.Sprintf("STATS_PORT=%d", ports[2]),
		fmt.Sprintf("ROUTER_LISTEN_ADDR=127.0.0.1:%d", ports[2]),
		"ROUTER_METRICS_TYPE=haproxy",
		"TEMPLATE_FILE="+o.Template,
		"RELOAD_SCRIPT="+o.ReloadScript,
		"ROUTER_GRACEFUL_SHUTDOWN_DELAY=0s",
	)
	cmd.Env = append(e, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Bin, err)
	}
	done := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(done)
	}()
	unsharePID := cmd.Process.Pid
	// The router is unshare's only child: PID 1 of the new PID namespace,
	// whose end ends every process in it (haproxy included).
	var childPID atomic.Int64
	routerPID := func() int {
		if p := childPID.Load(); p != 0 {
			return int(p)
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", unsharePID, unsharePID))
		if err != nil {
			return 0
		}
		f := strings.Fields(string(data))
		if len(f) != 1 {
			return 0
		}
		p, _ := strconv.Atoi(f[0])
		childPID.Store(int64(p))
		return p
	}
	logTail := func(n int) string { return fileTail(logPath, n) }
	r := &sbsRouter{
		Name:       fmt.Sprintf("other-%d", routes),
		Routes:     routes,
		HTTPPort:   ports[0],
		ConfigPath: filepath.Join(lib, "conf", "haproxy.config"),
		routerPID:  routerPID,
		logTail:    logTail,
		haproxy:    func() []int { return pidNamespaceHAProxy(routerPID()) },
		exited: func() error {
			select {
			case <-done:
				return fmt.Errorf("router exited (%v); last log lines:\n%s", exitErr, logTail(20))
			default:
				return nil
			}
		},
	}
	r.stop = func() error {
		defer logFile.Close()
		select {
		case <-done:
			return fmt.Errorf("router had already exited (%v)", exitErr)
		default:
		}
		if p := routerPID(); p != 0 {
			_ = syscall.Kill(p, syscall.SIGTERM)
		}
		select {
		case <-done:
			return nil
		case <-time.After(60 * time.Second):
			// SIGKILL to unshare: --kill-child ends the router, and with
			// it its PID namespace.
			_ = syscall.Kill(unsharePID, syscall.SIGKILL)
			<-done
			return fmt.Errorf("router did not stop within 60s of SIGTERM; killed")
		}
	}
	b.Logf("%s started: unshare pid %d, http 127.0.0.1:%d, metrics 127.0.0.1:%d, log %s", r.Name, unsharePID, ports[0], ports[2], logPath)
	return r, nil
}

// pidNamespaceHAProxy lists the haproxy processes in the PID namespace of
// pid.
func pidNamespaceHAProxy(pid int) []int {
	if pid == 0 {
		return nil
	}
	want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil
	}
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil || strings.TrimSpace(string(comm)) != "haproxy" {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); err == nil && ns == want {
			out = append(out, p)
		}
	}
	return out
}

// waitListening waits until the router's HTTP port accepts connections.
func waitListening(ctx context.Context, r *sbsRouter, deadline time.Time) error {
	addr := fmt.Sprintf("127.0.0.1:%d", r.HTTPPort)
	for {
		if err := r.exited(); err != nil {
			return err
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen by the deadline", addr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitRouteAnswers polls host through the router (every 500 ms, until
// deadline) until it answers 200 from backend want.
func waitRouteAnswers(ctx context.Context, r *sbsRouter, host, want string, deadline time.Time) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := fmt.Sprintf("http://127.0.0.1:%d/", r.HTTPPort)
	last := "no answer yet"
	for {
		if err := r.exited(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Host = host
		if resp, err := hc.Do(req); err != nil {
			last = err.Error()
		} else {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(string(body), "backend="+want+" ") {
				return nil
			}
			last = fmt.Sprintf("%s: %.100q", resp.Status, body)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer from %s by the deadline: %s", host, want, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reportMemory reports the resident memory of router r and of its HAProxy
// processes (summed), every route loaded and the router idle: the
// router's own memory in cluster mode, with its informers.
func reportMemory(b *testing.B, r *sbsRouter) {
	b.Helper()
	m, err := processMemory(r.routerPID())
	if err != nil {
		b.Logf("%s: router memory: %v", r.Name, err)
		return
	}
	var haproxy int64
	for _, pid := range r.haproxy() {
		if hm, err := processMemory(pid); err == nil {
			haproxy += hm.RSSKiB
		}
	}
	b.Logf("%s: router RSS %s (%s of it its binary's pages), haproxy RSS %s", r.Name, mib(m.RSSKiB), mib(m.RSSFileKiB), mib(haproxy))
	b.ReportMetric(float64(m.RSSKiB)/1024, r.Name+"-rss-MiB")
	r.report.RouterRSSMiB = roundMiB(m.RSSKiB)
	r.report.RouterFileMiB = roundMiB(m.RSSFileKiB)
	r.report.HAProxyRSSMiB = roundMiB(haproxy)
}

// roundMiB is KiB in MiB with one decimal.
func roundMiB(kib int64) float64 {
	return float64(kib*10/1024) / 10
}

// sbsMemorySettle is how long the routers rest, once idle, before their
// memory is measured.
const sbsMemorySettle = 45 * time.Second

// waitRoutersIdle waits (at most 5 minutes) until the routers and their
// haproxy processes together use less than a tenth of a core over 5 s: the
// loading and reloads that follow it are over.
func waitRoutersIdle(b *testing.B, ctx context.Context, routers []*sbsRouter) {
	b.Helper()
	total := func() float64 {
		var s float64
		for _, r := range routers {
			pids := append([]int{r.routerPID()}, r.haproxy()...)
			for _, p := range pids {
				if p == 0 {
					continue
				}
				if v, err := cpuSeconds(p); err == nil {
					s += v
				}
			}
		}
		return s
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		c0 := total()
		sleepCtx(ctx, 5*time.Second)
		used := total() - c0
		if used >= 0 && used < 0.5 {
			b.Logf("routers idle: %.2f s CPU in 5 s", used)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Logf("routers still busy after 5 minutes (%.2f s CPU in 5 s); measuring anyway", used)
			return
		}
	}
}

// logConfigSummary logs what bears on the data plane in the router's
// haproxy.config: the global section's tuning lines, the defaults' maxconn
// and timeouts, and the backend section of r0; and its haproxy processes
// with their thread counts.
func logConfigSummary(b *testing.B, r *sbsRouter, ns string) {
	b.Helper()
	f, err := os.Open(r.ConfigPath)
	if err != nil {
		b.Logf("%s: %v", r.Name, err)
		return
	}
	defer f.Close()
	var out []string
	section := ""
	inR0 := false
	backends, servers, checks := 0, 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '#' {
			f := strings.Fields(line)
			section = f[0]
			inR0 = section == "backend" && len(f) > 1 && strings.HasSuffix(f[1], ":"+ns+":"+routeName(0))
			if section == "backend" {
				backends++
			}
		}
		if strings.HasPrefix(t, "server ") {
			servers++
			if strings.Contains(" "+t+" ", " check ") {
				checks++
			}
		}
		switch {
		case inR0 && t != "":
			out = append(out, "  "+t)
		case section == "global" && t != "" && !strings.HasPrefix(t, "#"):
			out = append(out, "  "+t)
		case section == "defaults" && (strings.HasPrefix(t, "maxconn") || strings.HasPrefix(t, "timeout") || strings.HasPrefix(t, "option")):
			out = append(out, "  defaults: "+t)
		}
	}
	var procs []string
	for _, p := range r.haproxy() {
		th, _ := procKiB(fmt.Sprintf("/proc/%d/status", p), "Threads:")
		procs = append(procs, fmt.Sprintf("pid %d: %d threads", p, th))
	}
	b.Logf("%s: %s: %d backend sections, %d server lines (%d with check); haproxy processes: %s\n%s",
		r.Name, r.ConfigPath, backends, servers, checks, strings.Join(procs, ", "), strings.Join(out, "\n"))
}

func logHAProxyVersion(b *testing.B, haproxyBin string) string {
	if haproxyBin == "" {
		haproxyBin = "haproxy"
	}
	out, err := exec.Command(haproxyBin, "-v").CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	b.Logf("haproxy for every router: %s: %s %v", haproxyBin, first, err)
	return first
}
