package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/test/prereq"
)

// oneServiceManifests is a route to one service with n ready endpoints
// (EndpointSlices of at most 1,000, as the API allows), as YAML a user could
// apply.
func oneServiceManifests(n int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: big, namespace: tenant}
spec:
  host: big.example.com
  to: {kind: Service, name: big}
---
apiVersion: v1
kind: Service
metadata: {name: big, namespace: tenant}
spec:
  ports: [{name: http, port: 80}]
`)
	for s := 0; s < n; s += 1000 {
		fmt.Fprintf(&b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: big-%d\n  namespace: tenant\n  labels: {kubernetes.io/service-name: big}\naddressType: IPv4\nports: [{name: http, port: 8080}]\nendpoints:\n", s)
		for i := s; i < n && i < s+1000; i++ {
			fmt.Fprintf(&b, "- addresses: [\"10.%d.%d.%d\"]\n  conditions: {ready: true}\n", i/65536, (i/256)%256, i%256)
		}
	}
	return b.String()
}

// BenchmarkHAProxyCheckOneService renders, with the real router's render
// subcommand, one route whose service has 1,000 / 5,000 / 19,000 ready
// endpoints and times `haproxy -c` of the result (one op = one check). The
// router renders at most servers.MaxEndpointsPerService of them, so the
// check costs what 1,000 servers cost whatever the service's size (without
// the limit HAProxy 2.6 checks one backend in time growing with the square
// of its servers: docs/performance.md).
func BenchmarkHAProxyCheckOneService(b *testing.B) {
	prereq.NeedBinary(b, "haproxy")
	dir := b.TempDir()
	routerBin := filepath.Join(dir, "openshift-router")
	if out, err := exec.Command("go", "build", "-o", routerBin, "../openshift-router").CombinedOutput(); err != nil {
		b.Fatalf("building openshift-router: %v\n%s", err, out)
	}
	for _, n := range []int{1000, 5000, 19000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			d := filepath.Join(dir, fmt.Sprint(n))
			manifests := filepath.Join(d, "manifests")
			if err := os.MkdirAll(manifests, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(manifests, "big.yaml"), []byte(oneServiceManifests(n)), 0o644); err != nil {
				b.Fatal(err)
			}
			wd := filepath.Join(d, "wd")
			render := exec.Command(routerBin, "render", "--manifests", manifests, "--working-dir", wd, "--output-dir", wd)
			var stderr bytes.Buffer
			render.Stdout, render.Stderr = nil, &stderr
			if err := render.Run(); err != nil {
				b.Fatalf("render: %v\n%s", err, stderr.String())
			}
			cfgPath := filepath.Join(wd, "conf", "haproxy.config")
			cfg, err := os.ReadFile(cfgPath)
			if err != nil {
				b.Fatal(err)
			}
			rendered := bytes.Count(cfg, []byte("\n  server ept:big:"))
			if want := min(n, servers.MaxEndpointsPerService); rendered != want {
				b.Fatalf("%d server lines rendered for %d endpoints, want %d\n%s", rendered, n, want, stderr.String())
			}
			b.ResetTimer()

			for i := 0; i < b.N; i++ {
				if out, err := exec.Command("haproxy", "-c", "-f", cfgPath).CombinedOutput(); err != nil {
					b.Fatalf("haproxy -c: %v\n%s", err, out)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(rendered), "servers")
		})
	}
}
