package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/benchreport"
	"github.com/openshift-router-go/router/test/kubetest"
)

// The route churn of BenchmarkDataPlaneSideBySide, after the data plane
// rounds (ROUTER_BENCH_SIDEBYSIDE_ROUTE_CHANGES changes for each full
// router, 0 for none):
// routes of new names are added and deleted through the API server, one
// change every sbsChurnPace, additions and deletions alternating (route
// c<j> added, then c<j-sbsChurnLive+1> deleted with its Service and
// EndpointSlice, so that a route lives for about 2 x sbsChurnLive changes,
// long enough for a router that reloads every few seconds to serve it
// before it goes; the first sbsChurnLive-1 routes are added, and served by
// every router, before the changes are measured). Each full router (all
// routes loaded) is measured on changes of its own, the other routers
// paused (see sbsRouteChurn); each change is timed from the API call that made it (the route created or deleted; an
// addition's Service and EndpointSlice are created just before it) until
// the router answers as it should (an addition: 200 from its backend; a
// deletion: 503), asked every sbsChurnPoll on a new connection. Meanwhile a
// steady load through r0 on new connections counts failures on a route
// that stays, and HAProxy processes that appear (a reload starts one, for
// both routers) are counted as reloads.
const (
	sbsChurnPace    = time.Second
	sbsChurnLive    = 10
	sbsChurnPoll    = 50 * time.Millisecond
	sbsChurnTimeout = 2 * time.Minute
	sbsChurnLoad    = 20 * time.Millisecond // between two steady-load requests
)

// churnWatch is one full router's view of the churn.
type churnWatch struct {
	r *sbsRouter

	mu          sync.Mutex
	added, gone []time.Duration
	notSeen     int

	requests, failures atomic.Int64
	firstFailures      []string

	reloads atomic.Int64
}

// sbsRouteChurn runs the route churn on the full routers among routers,
// one after the other, and puts its results into their reports. While one
// router is measured the others are paused (SIGSTOP; their HAProxy keeps
// serving, idle): on a machine of two cores a router reloading every few
// seconds would otherwise take the cores the measured one needs, and each
// would be measured against the other's reloads. The paused ones catch up
// once resumed, before their own turn.
func sbsRouteChurn(b *testing.B, ctx context.Context, c *kubetest.Cluster, routers []*sbsRouter, ips []string, changes int) {
	b.Helper()
	var watches []*churnWatch
	for _, r := range routers {
		if r.Routes > 1 {
			watches = append(watches, &churnWatch{r: r})
		}
	}
	if len(watches) == 0 || changes <= 0 {
		return
	}
	// Each namespace has its plan: the routers of one namespace (of one
	// kind) take the next changes of its plan in turn.
	taken := map[string]int{}
	for _, w := range watches {
		k := taken[w.r.ns]
		taken[w.r.ns]++
		ops := churnPlan(changes * (k + 1))[k*changes:]
		if k == 0 {
			// The warm-up of the namespace, not measured: the
			// routes the first deletions delete.
			for _, j := range liveBefore(ops[0]) {
				if _, err := createChurnObjects(ctx, c, w.r, j, ips[j%len(ips)]); err != nil {
					b.Fatalf("route churn, warm-up: %v", err)
				}
			}
		}
		resume := pauseOthers(b, routers, w.r)
		made := churnPhase(b, ctx, c, w, routers, ops, ips)
		resume()
		res := w.result(made)
		w.r.report.RouteChurn = res
		b.Logf("%s, route churn (the other routers paused): %d changes; additions p50 %.2f s, p99 %.2f s, max %.2f s; "+
			"deletions p50 %.2f s, p99 %.2f s, max %.2f s; not seen within %s: %d; reloads %d; steady requests to r0: %d, failed %d %v",
			w.r.Name, res.Changes, res.AddedP50, res.AddedP99, res.AddedMax, res.GoneP50, res.GoneP99, res.GoneMax,
			sbsChurnTimeout, res.NotSeen, res.Reloads, res.Requests, res.Failed, w.firstFailures)
		if w.r.reloadReasons != nil {
			b.Logf("%s: reloads by reason since it started: %s", w.r.Name, w.r.reloadReasons(ctx))
		}
		b.ReportMetric(res.AddedP99, w.r.Name+"-route-added-p99-s")
		b.ReportMetric(float64(res.Reloads), w.r.Name+"-route-churn-reloads")
		if ctx.Err() != nil {
			return
		}
	}
}

// pauseOthers stops (SIGSTOP) every router of routers but r, and returns
// the function that resumes them.
func pauseOthers(b *testing.B, routers []*sbsRouter, r *sbsRouter) func() {
	b.Helper()
	var paused []int
	for _, o := range routers {
		if o == r {
			continue
		}
		if p := o.routerPID(); p != 0 {
			if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
				b.Logf("route churn: pausing %s: %v", o.Name, err)
				continue
			}
			paused = append(paused, p)
		}
	}
	return func() {
		for _, p := range paused {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
}

// churnPhase measures w's router through the changes ops, once it serves
// the routes that live before them (the warm-up's, or those an earlier
// phase left), and returns the number of changes made.
func churnPhase(b *testing.B, ctx context.Context, c *kubetest.Cluster, w *churnWatch, routers []*sbsRouter, ops []churnOp, ips []string) int {
	b.Helper()
	deadline := time.Now().Add(sbsChurnTimeout)
	for _, j := range liveBefore(ops[0]) {
		if err := waitRouteAnswers(ctx, w.r, churnRouteName(j)+".bench.test", sbsBackendName(j%len(ips)), deadline); err != nil {
			b.Fatalf("route churn, before %s's changes: %v", w.r.Name, err)
		}
	}
	waitRoutersIdle(b, ctx, routers)
	churnCtx, stop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); w.steadyLoad(churnCtx) }()
	go func() { defer bg.Done(); w.countReloads(churnCtx) }()
	var changesWG sync.WaitGroup
	tick := time.NewTicker(sbsChurnPace)
	defer tick.Stop()
	began := time.Now()
	made := 0
	for _, op := range ops {
		if ctx.Err() != nil {
			break
		}
		host, want := churnRouteName(op.route)+".bench.test", ""
		var t0 time.Time
		var err error
		if op.add {
			want = sbsBackendName(op.route % len(ips))
			t0, err = createChurnObjects(ctx, c, w.r, op.route, ips[op.route%len(ips)])
		} else {
			t0, err = deleteChurnObjects(ctx, c, w.r, op.route)
		}
		if err != nil {
			b.Errorf("route churn, change %d: %v", made, err)
			break
		}
		made++
		changesWG.Add(1)
		go func() { defer changesWG.Done(); w.watch(ctx, host, want, t0) }()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	changesWG.Wait()
	stop()
	bg.Wait()
	b.Logf("route churn, %s: %d changes in %s", w.r.Name, made, time.Since(began).Round(time.Second))
	return made
}

// liveBefore returns the routes that live when change op of the churn
// plan comes: the sbsChurnLive-1 routes added last before it.
func liveBefore(op churnOp) []int {
	first := op.route - (sbsChurnLive - 1) // an addition: the routes before it
	if !op.add {
		first = op.route // a deletion: the route it deletes and those after it
	}
	var live []int
	for j := max(first, 0); len(live) < sbsChurnLive-1; j++ {
		live = append(live, j)
	}
	return live
}

func churnRouteName(j int) string { return fmt.Sprintf("c%d", j) }

// churnOp is one change of the route churn: route c<route> added or
// deleted.
type churnOp struct {
	route int
	add   bool
}

// churnPlan is the route churn's changes after the warm-up (routes c0 to
// c<sbsChurnLive-2> added before): an addition and the deletion of the
// route added sbsChurnLive-1 before it, in turn.
func churnPlan(changes int) []churnOp {
	var plan []churnOp
	for j := sbsChurnLive - 1; len(plan) < changes; j++ {
		plan = append(plan, churnOp{route: j, add: true})
		if len(plan) < changes {
			plan = append(plan, churnOp{route: j - (sbsChurnLive - 1)})
		}
	}
	return plan
}

// createChurnRoute creates Service c<j>, its EndpointSlice (one endpoint,
// ip) and Route c<j>, and returns when the route's create was sent.
func createChurnRoute(ctx context.Context, c *kubetest.Cluster, ns string, j int, ip string) (time.Time, error) {
	return createRouteObjects(ctx, c, ns, churnRouteName(j), churnRouteName(j), ip, nil)
}

// deleteChurnRoute deletes Route c<j>, then its Service and EndpointSlice,
// and returns when the route's delete was sent.
func deleteChurnRoute(ctx context.Context, c *kubetest.Cluster, ns string, j int) (time.Time, error) {
	name := churnRouteName(j)
	t0 := time.Now()
	if err := c.Routes.RouteV1().Routes(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("route %s: %w", name, err)
	}
	return t0, deleteServiceObjects(ctx, c, ns, name)
}

// deleteServiceObjects deletes Service name of ns and its EndpointSlice.
func deleteServiceObjects(ctx context.Context, c *kubetest.Cluster, ns, name string) error {
	if err := c.Kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name+"-1", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("endpoint slice %s-1: %w", name, err)
	}
	if err := c.Kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	return nil
}

// watch asks the router for host until it answers from backend want (an
// addition) or 503 (want "": a deletion), and records how long after t0.
func (w *churnWatch) watch(ctx context.Context, host, want string, t0 time.Time) {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("http://127.0.0.1:%d/", w.r.HTTPPort)
	deadline := t0.Add(sbsChurnTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if status, body, err := get(ctx, hc, url, host); err == nil {
			seen := status == w.r.goneStatus()
			if want != "" {
				seen = status == http.StatusOK && strings.HasPrefix(body, "backend="+want+" ")
			}
			if seen {
				d := time.Since(t0)
				w.mu.Lock()
				if want != "" {
					w.added = append(w.added, d)
				} else {
					w.gone = append(w.gone, d)
				}
				w.mu.Unlock()
				return
			}
		}
		sleepCtx(ctx, sbsChurnPoll)
	}
	w.mu.Lock()
	w.notSeen++
	w.mu.Unlock()
}

// steadyLoad sends requests through r0 (a route that stays) on new
// connections until ctx is done, counting the ones that fail.
func (w *churnWatch) steadyLoad(ctx context.Context) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("http://127.0.0.1:%d/", w.r.HTTPPort)
	want := "backend=" + sbsBackendName(0) + " "
	for ctx.Err() == nil {
		status, body, err := get(ctx, hc, url, routeName(0)+".bench.test")
		if ctx.Err() != nil {
			return
		}
		w.requests.Add(1)
		if err != nil || status != http.StatusOK || !strings.HasPrefix(body, want) {
			if w.failures.Add(1) <= 5 {
				w.mu.Lock()
				w.firstFailures = append(w.firstFailures, fmt.Sprintf("%d %v %.60q", status, err, body))
				w.mu.Unlock()
			}
		}
		sleepCtx(ctx, sbsChurnLoad)
	}
}

// countReloads counts the HAProxy processes of the router that appear
// until ctx is done: each reload starts one (a new worker under our
// master, a new haproxy with OpenShift's reload script).
func (w *churnWatch) countReloads(ctx context.Context) {
	seen := map[int]bool{}
	for _, pid := range w.r.haproxy() {
		seen[pid] = true
	}
	for ctx.Err() == nil {
		for _, pid := range w.r.haproxy() {
			if !seen[pid] {
				seen[pid] = true
				w.reloads.Add(1)
			}
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// result summarizes the watch of changes changes.
func (w *churnWatch) result(changes int) *benchreport.RouteChurn {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := func(ds []time.Duration, p float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return percentile(s, p).Round(10 * time.Millisecond).Seconds()
	}
	return &benchreport.RouteChurn{
		Changes:  changes,
		AddedP50: q(w.added, 50), AddedP99: q(w.added, 99), AddedMax: q(w.added, 100),
		GoneP50: q(w.gone, 50), GoneP99: q(w.gone, 99), GoneMax: q(w.gone, 100),
		NotSeen:  w.notSeen,
		Reloads:  int(w.reloads.Load()),
		Requests: int(w.requests.Load()),
		Failed:   int(w.failures.Load()),
	}
}

// get sends one GET for host to url and returns the status and the start
// of the body.
func get(ctx context.Context, hc *http.Client, url, host string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), nil
}

// TestChurnPhasesStartWithRoutesThatLive replays the churn plan: before
// every change, the routes liveBefore names have been added (by the
// warm-up or the plan) and not deleted, as a phase that starts there
// waits for them.
func TestChurnPhasesStartWithRoutesThatLive(t *testing.T) {
	live := map[int]bool{}
	for j := 0; j < sbsChurnLive-1; j++ {
		live[j] = true
	}
	for i, op := range churnPlan(41) {
		for _, j := range liveBefore(op) {
			if !live[j] {
				t.Fatalf("change %d (%+v): liveBefore names c%d, which does not live", i, op, j)
			}
		}
		if got := len(liveBefore(op)); got != sbsChurnLive-1 {
			t.Fatalf("change %d: liveBefore names %d routes, want %d", i, got, sbsChurnLive-1)
		}
		if op.add == live[op.route] {
			t.Fatalf("change %d (%+v): route already in that state", i, op)
		}
		live[op.route] = op.add
	}
}
