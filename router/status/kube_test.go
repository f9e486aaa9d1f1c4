package status_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	routeclient "github.com/openshift/client-go/route/clientset/versioned"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/source/kube"
	"github.com/openshift-router-go/router/router/status"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// harness is the status writer wired as the router wires it: the kube
// source's informer cache as Routes, its status-change events as Recheck,
// against a real API server.
type harness struct {
	c       *kubetest.Cluster
	ns      string
	w       *status.Writer
	st      *store.Store
	src     *kube.Source
	routes  routeclient.Interface
	stop    context.CancelFunc
	stopped sync.WaitGroup
}

// start runs the source and the writer for namespace ns until the test ends.
func start(tb testing.TB, c *kubetest.Cluster, ns string, log logr.Logger) *harness {
	tb.Helper()
	// The router's own client settings (client-go's defaults are 5 QPS,
	// burst 10; the router keeps them).
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.QPS, cfg.Burst = 0, 0
	rc, err := routeclient.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness{c: c, ns: ns, st: store.New(), routes: rc}
	var w *status.Writer
	h.src = kube.New(kube.Options{Kube: c.Kube, Routes: c.Routes, Sink: h.st, Logger: log, Namespace: ns,
		StatusChanged: func(namespace, name string) { w.Recheck(namespace, name) }})
	w = status.New(status.Options{Client: rc, Routes: h.src, Logger: log, RouterName: "public", CanonicalHostname: "router.example.com"})
	h.w = w
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.stopped.Add(2)
	go func() { defer h.stopped.Done(); _ = h.src.Run(ctx) }()
	go func() { defer h.stopped.Done(); w.Run(ctx, 2) }()
	tb.Cleanup(func() { cancel(); h.stopped.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for !h.st.HasSynced(kube.SourceName) {
		if time.Now().After(deadline) {
			tb.Fatal("informers did not sync within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return h
}

func newRoute(name string) *routev1.Route {
	return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: routev1.RouteSpec{Host: name + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}
}

func createRoutes(tb testing.TB, c *kubetest.Cluster, ns string, n int) []admission.Key {
	tb.Helper()
	keys := make([]admission.Key, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("r%d", i)
		keys[i] = admission.Key(ns + "/" + name)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := c.Routes.RouteV1().Routes(ns).Create(ctx, newRoute(name), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("creating routes: %v", err)
	}
	return keys
}

// ours returns this router's entry of the cached route, if any.
func (h *harness) ours(name string) *routev1.RouteIngress {
	r := h.src.Route(h.ns, name)
	if r == nil {
		return nil
	}
	for i := range r.Status.Ingress {
		if r.Status.Ingress[i].RouterName == "public" {
			return &r.Status.Ingress[i]
		}
	}
	return nil
}

// waitAdmitted polls the cache until every key has this router's entry
// with the wanted Admitted status (bounded).
func (h *harness) waitAdmitted(tb testing.TB, keys []admission.Key, want corev1.ConditionStatus, timeout time.Duration) {
	tb.Helper()
	h.waitAdmittedEvery(tb, keys, want, timeout, 50*time.Millisecond)
}

func (h *harness) waitAdmittedEvery(tb testing.TB, keys []admission.Key, want corev1.ConditionStatus, timeout, every time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing := 0
		for _, k := range keys {
			name := string(k)[len(h.ns)+1:]
			ing := h.ours(name)
			if ing == nil || len(ing.Conditions) != 1 || ing.Conditions[0].Status != want {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d routes without this router's %s status after %s", missing, len(keys), want, timeout)
		}
		time.Sleep(every)
	}
}

func ctx(tb testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return c
}

func TestWriterKeepsOtherRoutersEntriesAndPutsItsOwnBack(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "status-", nil).Name
	r, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), newRoute("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	other := routev1.RouteIngress{Host: "web.example.com", RouterName: "other", WildcardPolicy: routev1.WildcardPolicyNone,
		Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue, LastTransitionTime: &now}}}
	r.Status.Ingress = []routev1.RouteIngress{other}
	if _, err := c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx(t), r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h := start(t, c, ns, testr.New(t))
	key := admission.Key(ns + "/web")
	h.w.Update(map[admission.Key]admission.Result{key: {Admitted: true, Host: "web.example.com"}}, nil)
	h.waitAdmitted(t, []admission.Key{key}, corev1.ConditionTrue, 30*time.Second)

	// Someone rewrites this router's entry: the writer puts it back and
	// leaves the other router's entry alone.
	got, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Ingress) != 2 || got.Status.Ingress[0].RouterName != "other" {
		t.Fatalf("entries after the first write: %+v", got.Status.Ingress)
	}
	got.Status.Ingress[1].Conditions[0].Status = corev1.ConditionFalse
	got.Status.Ingress[1].Conditions[0].Reason = "Tampered"
	if _, err := c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cur.Status.Ingress) == 2 && cur.Status.Ingress[1].Conditions[0].Status == corev1.ConditionTrue {
			if cur.Status.Ingress[0].RouterName != "other" || cur.Status.Ingress[0].Conditions[0].Status != corev1.ConditionTrue {
				t.Fatalf("other router's entry changed: %+v", cur.Status.Ingress[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tampered entry not put back within 30s: %+v", cur.Status.Ingress)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Idle: the same results again and time passing write nothing.
	writes := h.w.Writes()
	before, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.w.Update(map[admission.Key]admission.Result{key: {Admitted: true, Host: "web.example.com"}}, nil)
	time.Sleep(2 * time.Second)
	after, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.w.Writes() != writes || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("idle writer wrote: writes %d -> %d, resourceVersion %s -> %s", writes, h.w.Writes(), before.ResourceVersion, after.ResourceVersion)
	}

	// A changed result is written.
	h.w.Update(map[admission.Key]admission.Result{key: {Host: "web.example.com", Reason: "HostAlreadyClaimed", Message: "taken"}}, nil)
	h.waitAdmitted(t, []admission.Key{key}, corev1.ConditionFalse, 30*time.Second)
}

// staleRoutes serves a copy of a route older than the API server's.
type staleRoutes struct{ r *routev1.Route }

func (s staleRoutes) Route(namespace, name string) *routev1.Route { return s.r }

func TestWriterRetriesFromAFreshCopyWhenTheCacheIsBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		// mine: whether the stale copy already holds this router's entry.
		mine bool
	}{
		{name: "adding its entry", mine: false},
		{name: "replacing its entry", mine: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubetest.Shared(t)
			ns := c.CreateNamespace(t, "stale-", nil).Name
			r, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), newRoute("web"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			now := metav1.Now()
			entry := func(router string, st corev1.ConditionStatus) routev1.RouteIngress {
				return routev1.RouteIngress{Host: "web.example.com", RouterName: router, WildcardPolicy: routev1.WildcardPolicyNone,
					Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: st, LastTransitionTime: &now}}}
			}
			if tc.mine {
				r.Status.Ingress = []routev1.RouteIngress{entry("public", corev1.ConditionFalse)}
				if r, err = c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx(t), r, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			stale := r.DeepCopy()
			// Another router writes its entry first (at the front, so
			// that index-based replacement would hit the wrong entry).
			r.Status.Ingress = append([]routev1.RouteIngress{entry("other", corev1.ConditionTrue)}, r.Status.Ingress...)
			if _, err := c.Routes.RouteV1().Routes(ns).UpdateStatus(ctx(t), r, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			w := status.New(status.Options{Client: c.Routes, Routes: staleRoutes{stale}, Logger: testr.New(t), RouterName: "public"})
			key := admission.Key(ns + "/web")
			w.Update(map[admission.Key]admission.Result{key: {Admitted: true, Host: "web.example.com"}}, nil)
			rctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); w.Run(rctx, 1) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				cur, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ings := cur.Status.Ingress
				if len(ings) == 2 && ings[1].RouterName == "public" && ings[1].Conditions[0].Status == corev1.ConditionTrue {
					if ings[0].RouterName != "other" || ings[0].Conditions[0].Status != corev1.ConditionTrue {
						t.Fatalf("other router's entry overwritten: %+v", ings)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("status not written from a fresh copy within 30s: %+v", ings)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// cpuTime is this process's user + system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStatusWriterInitialStatus writes the initial status of b.N
// routes through the real informer and API server, the router's client
// settings included, and reports the CPU of this process (writer, informer
// and client: the router's side) per route, and the writes sent per route.
// Run it at two sizes to see that the per-route cost does not grow with the
// number of routes: -benchtime=1000x and -benchtime=10000x.
func BenchmarkStatusWriterInitialStatus(b *testing.B) {
	c := kubetest.Shared(b)
	ns := c.CreateNamespace(b, "bench-status-", nil).Name
	keys := createRoutes(b, c, ns, b.N)
	h := start(b, c, ns, logr.Discard())
	results := make(map[admission.Key]admission.Result, len(keys))
	for _, k := range keys {
		results[k] = admission.Result{Admitted: true, Host: string(k)[len(ns)+1:] + ".example.com"}
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	h.w.Update(results, nil)
	// Polled rarely: the poll scans every route and is not the writer's
	// cost.
	h.waitAdmittedEvery(b, keys, corev1.ConditionTrue, 60*time.Minute, 2*time.Second)
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/route")
	b.ReportMetric(float64(h.w.Writes())/float64(b.N), "writes/route")
	// The same results again, as every later pass gives them: nothing to
	// do, and nothing done.
	writes := h.w.Writes()
	cpu0 = cpuTime(b)
	h.w.Update(results, nil)
	time.Sleep(2 * time.Second)
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000, "idle-cpu-ms/2s")
	if h.w.Writes() != writes {
		b.Fatalf("unchanged results wrote %d statuses again", h.w.Writes()-writes)
	}
}
