package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/prereq"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// quietRoutes are the route counts BenchmarkQuietRouter runs at; the
// environment variable ROUTER_BENCH_QUIET_ROUTES (comma-separated) replaces
// them.
func quietRoutes(tb testing.TB) []int {
	v := os.Getenv("ROUTER_BENCH_QUIET_ROUTES")
	if v == "" {
		return []int{1000}
	}
	var out []int
	for _, f := range splitComma(v) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			tb.Fatalf("ROUTER_BENCH_QUIET_ROUTES: %q is not a route count", f)
		}
		out = append(out, n)
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// BenchmarkQuietRouter runs the real router binary against a real
// kube-apiserver with N routes (one service, one endpoint that is never
// sent traffic) and measures the router process's CPU:
//
//   - cpu-ms/initial-status: from start until every route shows this
//     router's Admitted status, divided by N (the first configuration pass
//     and HAProxy start included: an upper bound of the status cost);
//   - idle-cpu-s/30s: each iteration is 30 s of a router with nothing to
//     do after that (statuses written, no change).
//
// Run: go test -run XXX -bench QuietRouter -benchtime 1x ./cmd/router-bench/
// (ROUTER_BENCH_QUIET_ROUTES=1000,10000 for other sizes).
func BenchmarkQuietRouter(b *testing.B) {
	prereq.NeedBinary(b, "haproxy")
	// ROUTER_BENCH_ROUTER_BIN measures another build (e.g. an older one
	// for a comparison); by default this tree's router is built.
	routerBin := os.Getenv("ROUTER_BENCH_ROUTER_BIN")
	if routerBin == "" {
		routerBin = filepath.Join(b.TempDir(), "openshift-router")
		build := exec.Command("go", "build", "-o", routerBin, "../openshift-router")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building openshift-router: %v\n%s", err, out)
		}
	}
	c := kubetest.Shared(b)
	for _, n := range quietRoutes(b) {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) { benchQuiet(b, c, routerBin, n) })
	}
}

func benchQuiet(b *testing.B, c *kubetest.Cluster, routerBin string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	ns := c.CreateNamespace(b, "quiet-", nil).Name
	createQuietFixture(b, ctx, c, ns, n)

	cfg := defaultConfig()
	cfg.RouterBin = routerBin
	cfg.Log = testWriter{b}
	cfg.RouterEnv = []string{"ROUTER_SERVICE_NAME=bench"}
	r, err := startRouterOn(cfg, b.TempDir(), []string{"--kubeconfig", c.KubeconfigPath, "--namespace", ns})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.Stop(); err != nil {
			b.Error(err)
		}
	}()
	start := time.Now()
	waitStatuses(b, ctx, c, ns, n, r)
	statusWall := time.Since(start)
	cpu, err := cpuSeconds(r.PID())
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	var idle float64
	for i := 0; i < b.N; i++ {
		cpu0, err := cpuSeconds(r.PID())
		if err != nil {
			b.Fatal(err)
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(30 * time.Second):
		}
		cpu1, err := cpuSeconds(r.PID())
		if err != nil {
			b.Fatal(err)
		}
		idle += cpu1 - cpu0
	}
	b.StopTimer()
	// After ResetTimer, which clears reported metrics.
	b.ReportMetric(cpu*1000/float64(n), "cpu-ms/initial-status")
	b.ReportMetric(statusWall.Seconds(), "s-to-all-statuses")
	b.ReportMetric(idle/float64(b.N), "idle-cpu-s/30s")
}

// createQuietFixture creates Service web with one EndpointSlice endpoint
// and n routes to it.
func createQuietFixture(b *testing.B, ctx context.Context, c *kubetest.Cluster, ns string, n int) {
	b.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.51.100.10"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		rt := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Name: routeName(i)},
			Spec: routev1.RouteSpec{Host: routeName(i) + ".bench.test", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.Routes.RouteV1().Routes(ns).Create(ctx, rt, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("creating routes: %v", err)
	}
}

// waitStatuses polls (by listing, every 2 s) until every route of ns has the
// router's Admitted=True entry.
func waitStatuses(b *testing.B, ctx context.Context, c *kubetest.Cluster, ns string, n int, r *routerProc) {
	b.Helper()
	for {
		if err := r.exited(); err != nil {
			b.Fatal(err)
		}
		list, err := c.Routes.RouteV1().Routes(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, rt := range list.Items {
			for _, ing := range rt.Status.Ingress {
				if ing.RouterName == "bench" && len(ing.Conditions) > 0 && ing.Conditions[0].Status == corev1.ConditionTrue {
					done++
				}
			}
		}
		if done == n {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d statuses written: %v", done, n, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
