package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/store"
)

// writeRouteFiles writes n routes as router-bench does: r<i>.yaml with the
// Route and its Service, r<i>-eps.yaml with one EndpointSlice.
func writeRouteFiles(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("r%d", i)
		routeService := fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %[1]s
  namespace: heap
spec:
  host: %[1]s.heap.test
  to:
    kind: Service
    name: %[1]s
---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: heap
spec:
  ports:
  - name: web
    port: 80
    targetPort: 8080
`, name)
		slice := fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  namespace: heap
  labels:
    kubernetes.io/service-name: %[1]s
addressType: IPv4
ports:
- name: web
  port: 8080
endpoints:
- addresses: ["10.0.%[2]d.%[3]d"]
  conditions:
    ready: true
`, name, i/250, 1+i%250)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(routeService), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-eps.yaml"), []byte(slice), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSourceHeap reports the heap a running source and the store it
// feeds keep for N routes (a Route, a Service and an EndpointSlice each, in
// two files, as router-bench writes them): live-MiB is the live heap after
// the initial load, minus the heap before it. It is a measurement, not an
// assertion.
//
//	go test -run '^$' -bench SourceHeap -benchtime 1x ./router/source/manifests/
func BenchmarkSourceHeap(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			writeRouteFiles(b, dir, n)
			for i := 0; i < b.N; i++ {
				before := liveHeap()
				st := store.New()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				src := New(dir, st, logr.Discard())
				go func() { done <- src.Run(ctx) }()
				deadline := time.Now().Add(5 * time.Minute)
				for !st.HasSynced(SourceName) {
					if time.Now().After(deadline) {
						cancel()
						b.Fatal("source did not sync")
					}
					time.Sleep(10 * time.Millisecond)
				}
				after := liveHeap()
				var objects int
				_ = st.Read(func(v store.View) error {
					objects = len(v.Routes())
					return nil
				})
				if objects != n {
					b.Fatalf("store has %d routes, want %d", objects, n)
				}
				b.ReportMetric(float64(after-before)/(1<<20), "live-MiB")
				b.ReportMetric(float64(after-before)/float64(n), "live-B/route")
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
