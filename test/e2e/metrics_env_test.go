package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

// TestMetricsScrapeURIIsWhereHAProxysStatisticsAreRead: with
// ROUTER_METRICS_HAPROXY_SCRAPE_URI an http URL, the collector reads
// HAProxy's CSV statistics from it instead of the runtime socket. The URL is
// a stats page stand-in that serves the router's real "show stat" with one
// value changed (the public frontend's conn_tot set to 424242), and that
// value is what /metrics reports.
func TestMetricsScrapeURIIsWhereHAProxysStatisticsAreRead(t *testing.T) {
	var socket atomic.Value // the router's runtime socket, once known
	var hits atomic.Int64
	stats := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		path, _ := socket.Load().(string)
		if path == "" || !strings.HasSuffix(req.URL.Path, ";csv") {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		hits.Add(1)
		c := runtimeapi.Client{Path: path, Timeout: 5 * time.Second}
		csv, err := c.Exec(req.Context(), "show stat")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		lines := strings.Split(csv, "\n")
		for i, l := range lines {
			if f := strings.Split(l, ","); len(f) > 79 && f[0] == "public" && f[1] == "FRONTEND" {
				f[79] = "424242"
				lines[i] = strings.Join(f, ",")
			}
		}
		fmt.Fprint(w, strings.Join(lines, "\n"))
	}))
	t.Cleanup(stats.Close)

	be := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("sc", "one", be))
	m.Write("routes.yaml", routeYAML("sc", "one", "one.example.com", "", "one", ""))
	env, ms := metricsEnv(t)
	env["ROUTER_METRICS_HAPROXY_SCRAPE_URI"] = stats.URL + "/haproxy;csv"
	r := startRouter(t, m.Dir, env)
	socket.Store(filepath.Join(r.WorkingDir, "run", "haproxy.sock"))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")

	eventually(t, 20*time.Second, "public's connections from the scrape URI", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		v, err := s.value("haproxy_frontend_connections_total", map[string]string{"frontend": "public"})
		if err != nil {
			return err
		}
		if v != 424242 {
			return fmt.Errorf("haproxy_frontend_connections_total{frontend=public} = %v, want the scrape URI's 424242 (hits %d)", v, hits.Load())
		}
		return nil
	})
}

// TestMetricsReadyHTTPURLIsPartOfReadiness: ROUTER_METRICS_READY_HTTP_URL
// is probed by /healthz/ready ("backend-http"): ready while it answers 2xx,
// not ready while it answers 503, ready again after.
func TestMetricsReadyHTTPURLIsPartOfReadiness(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusOK)
	var probes atomic.Int64
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/ready-check" {
			probes.Add(1)
		}
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(probe.Close)

	be := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rd", "one", be))
	m.Write("routes.yaml", routeYAML("rd", "one", "one.example.com", "", "one", ""))
	env, ms := metricsEnv(t)
	env["ROUTER_METRICS_READY_HTTP_URL"] = probe.URL + "/ready-check"
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")

	readyIs := func(want int, body string) {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("/healthz/ready %d", want), func() error {
			st, b, err := ms.status("/healthz/ready", false)
			if err != nil {
				return err
			}
			if st != want || !strings.Contains(b, body) {
				return fmt.Errorf("/healthz/ready %d %q", st, b)
			}
			return nil
		})
	}
	readyIs(http.StatusOK, "")
	status.Store(http.StatusServiceUnavailable)
	readyIs(http.StatusServiceUnavailable, "[-]backend-http failed")
	status.Store(http.StatusNoContent)
	readyIs(http.StatusOK, "")
	if probes.Load() == 0 {
		t.Errorf("the URL was never probed")
	}
}
