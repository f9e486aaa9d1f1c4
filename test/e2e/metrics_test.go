package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsCountTrafficPerRoute: requests sent to two routes make exactly
// those routes' server (and backend) counters rise, with the route's
// labels; a third route stays at zero; the server of a stopped endpoint
// goes down.
func TestMetricsCountTrafficPerRoute(t *testing.T) {
	alpha1 := startBackend(t, "alpha-1")
	beta1, beta2 := startBackend(t, "beta-1"), startBackend(t, "beta-2")
	gamma1 := startBackend(t, "gamma-1")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		podServiceYAML("mx", "alpha", pod{name: "alpha-1", be: alpha1}),
		podServiceYAML("mx", "beta", pod{name: "beta-1", be: beta1}, pod{name: "beta-2", be: beta2}),
		podServiceYAML("mx", "gamma", pod{name: "gamma-1", be: gamma1}),
	}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("mx", "alpha", "alpha.example.com", "", "alpha", ""),
		routeYAML("mx", "beta", "beta.example.com", "", "beta", ""),
		routeYAML("mx", "gamma", "gamma.example.com", "", "gamma", ""),
	}, "---\n"))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("alpha.example.com", "/") }, "alpha-1")
	expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("beta.example.com", "/") }, 200)

	server := func(route, pod string, be *backend) map[string]string {
		return map[string]string{"backend": "http", "namespace": "mx", "route": route, "service": route, "pod": pod,
			"server": fmt.Sprintf("%s:%d", be.IP, be.Port)}
	}
	servers := map[string]map[string]string{
		"alpha-1": server("alpha", "alpha-1", alpha1),
		"beta-1":  server("beta", "beta-1", beta1),
		"beta-2":  server("beta", "beta-2", beta2),
		"gamma-1": server("gamma", "gamma-1", gamma1),
	}
	counters := []string{"haproxy_server_http_responses_total", "haproxy_server_connections_total", "haproxy_server_bytes_in_total", "haproxy_server_bytes_out_total"}
	type reading map[string]float64 // "metric/pod" -> value
	read := func(s scrape) (reading, error) {
		out := reading{}
		for pod, labels := range servers {
			for _, name := range counters {
				l := labels
				if name == "haproxy_server_http_responses_total" {
					l = withLabel(labels, "code", "2xx")
				}
				v, err := s.value(name, l)
				if err != nil {
					return nil, err
				}
				out[name+"/"+pod] = v
			}
		}
		for _, route := range []string{"alpha", "beta", "gamma"} {
			v, err := s.value("haproxy_backend_connections_total", map[string]string{"backend": "http", "namespace": "mx", "route": route})
			if err != nil {
				return nil, err
			}
			out["backend/"+route] = v
		}
		return out, nil
	}
	var before reading
	eventually(t, loadTimeout, "server metrics of all routes", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		before, err = read(s)
		return err
	})

	const n = 10
	for i := 0; i < n; i++ {
		for _, host := range []string{"alpha.example.com", "beta.example.com"} {
			resp, err := r.httpGet(host, fmt.Sprintf("/page-%d", i))
			must(t, err)
			if resp.Status != 200 {
				t.Fatalf("%s: %d %s", host, resp.Status, resp.Body)
			}
		}
	}

	var after reading
	var last scrape
	eventually(t, loadTimeout, "counters of alpha and beta rising by the requests sent", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		last = s
		if after, err = read(s); err != nil {
			return err
		}
		d := func(name, pod string) float64 { return after[name+"/"+pod] - before[name+"/"+pod] }
		if got := d("haproxy_server_http_responses_total", "alpha-1"); got != n {
			return fmt.Errorf("alpha-1 2xx rose by %v, want %d", got, n)
		}
		if got := d("haproxy_server_http_responses_total", "beta-1") + d("haproxy_server_http_responses_total", "beta-2"); got != n {
			return fmt.Errorf("beta's servers' 2xx rose by %v, want %d", got, n)
		}
		return nil
	})
	d := func(name, pod string) float64 { return after[name+"/"+pod] - before[name+"/"+pod] }
	if got := d("haproxy_server_connections_total", "alpha-1"); got != n {
		t.Errorf("alpha-1 connections rose by %v, want %d", got, n)
	}
	for _, name := range []string{"haproxy_server_bytes_in_total", "haproxy_server_bytes_out_total"} {
		if d(name, "alpha-1") <= 0 || d(name, "beta-1")+d(name, "beta-2") <= 0 {
			t.Errorf("%s did not rise for alpha and beta: %v", name, after)
		}
	}
	// The route that got no traffic did not move.
	for _, name := range counters {
		if got := d(name, "gamma-1"); got != 0 {
			t.Errorf("%s of gamma (no traffic) changed by %v", name, got)
		}
	}
	// Backends report the "B" set (servers are within the threshold).
	for route, want := range map[string]float64{"alpha": n, "beta": n, "gamma": 0} {
		if got := after["backend/"+route] - before["backend/"+route]; got != want {
			t.Errorf("backend %s connections rose by %v, want %v", route, got, want)
		}
		if v, err := last.value("haproxy_backend_up", map[string]string{"backend": "http", "namespace": "mx", "route": route}); err != nil || v != 1 {
			t.Errorf("backend %s up: %v %v", route, v, err)
		}
	}
	if last.has("haproxy_backend_bytes_in_total") {
		t.Error("backend bytes reported while server metrics are (the B set has no bytes)")
	}
	if v, err := last.value("haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "2xx"}); err != nil || v < 2*n {
		t.Errorf("public frontend 2xx = %v (%v), want at least %d", v, err, 2*n)
	}

	// Stopping one of beta's two endpoints (health-checked every 5s, down
	// after 3 failed checks) takes its server down; the other stays up.
	for _, p := range []string{"beta-1", "beta-2"} {
		if v, err := last.value("haproxy_server_up", servers[p]); err != nil || v != 1 {
			t.Fatalf("%s up before its endpoint stops: %v %v", p, v, err)
		}
	}
	beta2.srv.Close()
	eventually(t, 30*time.Second, "beta-2 reported down", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		v, err := s.value("haproxy_server_up", servers["beta-2"])
		if err != nil {
			return err
		}
		if v != 0 {
			return fmt.Errorf("haproxy_server_up{pod=beta-2} = %v", v)
		}
		if v, err := s.value("haproxy_server_up", servers["beta-1"]); err != nil || v != 1 {
			return fmt.Errorf("beta-1 up = %v %v", v, err)
		}
		if v, err := s.value("haproxy_server_check_failures_total", servers["beta-2"]); err != nil || v < 1 {
			return fmt.Errorf("beta-2 check failures = %v %v", v, err)
		}
		return nil
	})
}

// TestMetricsServerThresholdSwitchesToBackends: with more servers than
// ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD, per-server metrics give way to
// the full set of backend metrics.
func TestMetricsServerThresholdSwitchesToBackends(t *testing.T) {
	a1, b1, b2 := startBackend(t, "a1"), startBackend(t, "b1"), startBackend(t, "b2")
	m := newManifests(t)
	m.Write("svc.yaml", podServiceYAML("th", "a", pod{name: "a-1", be: a1})+"---\n"+podServiceYAML("th", "b", pod{name: "b-1", be: b1}))
	m.Write("routes.yaml", routeYAML("th", "a", "a.example.com", "", "a", "")+"---\n"+routeYAML("th", "b", "b.example.com", "", "b", ""))
	env, ms := metricsEnv(t)
	// fe_sni and fe_no_sni (the TLS hand-off servers) + a-1 + b-1 = 4.
	env["ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD"] = "4"
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("a.example.com", "/") }, "a1")

	routeA := map[string]string{"backend": "http", "namespace": "th", "route": "a"}
	eventually(t, loadTimeout, "server metrics at the threshold", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("haproxy_exporter_server_threshold", map[string]string{"type": "current"}); err != nil || v != 4 {
			return fmt.Errorf("servers %v %v", v, err)
		}
		if _, err := s.value("haproxy_server_up", withLabel(routeA, "pod", "a-1")); err != nil {
			return err
		}
		if s.has("haproxy_backend_bytes_in_total") {
			return fmt.Errorf("backend bytes reported while servers are")
		}
		return nil
	})

	// A second endpoint for b: 5 servers > 4.
	m.Write("svc.yaml", podServiceYAML("th", "a", pod{name: "a-1", be: a1})+"---\n"+podServiceYAML("th", "b", pod{name: "b-1", be: b1}, pod{name: "b-2", be: b2}))
	var base float64
	eventually(t, loadTimeout, "backend metrics above the threshold", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("haproxy_exporter_server_threshold", map[string]string{"type": "current"}); err != nil || v != 5 {
			return fmt.Errorf("servers %v %v", v, err)
		}
		if v, err := s.value("haproxy_exporter_server_threshold", map[string]string{"type": "limit"}); err != nil || v != 4 {
			return fmt.Errorf("limit %v %v", v, err)
		}
		for name := range s.families {
			if strings.HasPrefix(name, "haproxy_server_") {
				return fmt.Errorf("%s still reported above the threshold", name)
			}
		}
		base, err = s.value("haproxy_backend_bytes_in_total", routeA)
		return err
	})
	for i := 0; i < 5; i++ {
		resp, err := r.httpGet("a.example.com", "/")
		must(t, err)
		if resp.Status != 200 {
			t.Fatalf("a: %d", resp.Status)
		}
	}
	eventually(t, loadTimeout, "backend byte and response counters of route a rising", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		in, err := s.value("haproxy_backend_bytes_in_total", routeA)
		if err != nil {
			return err
		}
		if in <= base {
			return fmt.Errorf("bytes in %v, not above %v", in, base)
		}
		if v, err := s.value("haproxy_backend_http_responses_total", withLabel(routeA, "code", "2xx")); err != nil || v < 5 {
			return fmt.Errorf("2xx %v %v", v, err)
		}
		routeB := map[string]string{"backend": "http", "namespace": "th", "route": "b"}
		if v, err := s.value("haproxy_backend_bytes_in_total", routeB); err != nil || v != 0 {
			return fmt.Errorf("route b (no traffic since the reload) bytes in %v %v", v, err)
		}
		return nil
	})
}

// TestMetricsRouterMetricsAfterAChange: a change is written and loaded;
// the write-config and reload summaries count it, route admission is
// counted by reason, and HAProxy's counters restart with the new process.
func TestMetricsRouterMetricsAfterAChange(t *testing.T) {
	one := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", podServiceYAML("rm", "one", pod{name: "one-1", be: one}))
	m.Write("routes.yaml", routeYAML("rm", "one", "one.example.com", "", "one", ""))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")
	for i := 0; i < 3; i++ {
		_, err := r.httpGet("one.example.com", "/")
		must(t, err)
	}
	srv := map[string]string{"route": "one", "pod": "one-1", "code": "2xx"}
	var reloads, writes float64
	eventually(t, loadTimeout, "initial router metrics", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if reloads, err = s.value("template_router_reload_seconds_count", nil); err != nil || reloads < 1 {
			return fmt.Errorf("reloads %v %v", reloads, err)
		}
		if writes, err = s.value("template_router_write_config_seconds_count", nil); err != nil || writes < 1 {
			return fmt.Errorf("writes %v %v", writes, err)
		}
		if v, err := s.value("template_router_routes_admitted", nil); err != nil || v != 1 {
			return fmt.Errorf("admitted %v %v", v, err)
		}
		if v, err := s.value("haproxy_server_http_responses_total", srv); err != nil || v < 4 {
			return fmt.Errorf("one-1 2xx %v %v", v, err)
		}
		return nil
	})

	// A new route, and one that claims the same host (rejected).
	m.Write("routes.yaml", routeYAML("rm", "one", "one.example.com", "", "one", "")+"---\n"+
		routeYAML("rm", "two", "two.example.com", "", "one", "")+"---\n"+
		strings.Replace(routeYAML("other", "thief", "one.example.com", "", "one", ""), "  namespace: other\n", "  namespace: other\n  creationTimestamp: \"2030-01-01T00:00:00Z\"\n", 1))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("two.example.com", "/") }, "one")
	eventually(t, loadTimeout, "router metrics after the change", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_seconds_count", nil); err != nil || v <= reloads {
			return fmt.Errorf("reloads %v (before %v) %v", v, reloads, err)
		}
		if v, err := s.value("template_router_reload_seconds_sum", nil); err != nil || v <= 0 {
			return fmt.Errorf("reload seconds sum %v %v", v, err)
		}
		if v, err := s.value("template_router_write_config_seconds_count", nil); err != nil || v <= writes {
			return fmt.Errorf("writes %v (before %v) %v", v, writes, err)
		}
		if v, err := s.value("template_router_reload_failure", nil); err != nil || v != 0 {
			return fmt.Errorf("reload failure %v %v", v, err)
		}
		if v, err := s.value("template_router_routes_admitted", nil); err != nil || v != 2 {
			return fmt.Errorf("admitted %v %v", v, err)
		}
		if v, err := s.value("template_router_routes_rejected", map[string]string{"reason": "HostAlreadyClaimed"}); err != nil || v != 1 {
			return fmt.Errorf("rejected HostAlreadyClaimed %v %v", v, err)
		}
		if v, err := s.value("template_router_reloads_avoided_total", map[string]string{"kind": "endpoints"}); err != nil || v != 0 {
			return fmt.Errorf("reloads avoided %v %v", v, err)
		}
		if _, err := s.value("openshift_router_build_info", nil); err != nil {
			return err
		}
		// The reload started a new HAProxy worker: its counters begin at
		// zero (plus the one request expectBackend sent to two, not one).
		if v, err := s.value("haproxy_server_http_responses_total", srv); err != nil || v != 0 {
			return fmt.Errorf("one-1 2xx after the reload %v %v", v, err)
		}
		return nil
	})
}

// TestMetricsAuthAndHealthBeforeAndAfterSync: /healthz/ready is 503 until
// the initial configuration is loaded into HAProxy and 200 after; health
// checks need no credentials, /metrics does when STATS_USERNAME is set.
func TestMetricsAuthAndHealthBeforeAndAfterSync(t *testing.T) {
	one := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("hz", "one", one))
	m.Write("routes.yaml", routeYAML("hz", "one", "one.example.com", "", "one", ""))
	// haproxy runs only once the gate file exists, which holds the router
	// before its first configuration is loaded.
	real, err := exec.LookPath("haproxy")
	must(t, err)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	wrapper := filepath.Join(dir, "haproxy-gated")
	must(t, os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %q ]; do sleep 0.05; done\nexec %q \"$@\"\n", gate, real)), 0o755))

	env, ms := metricsEnv(t)
	env["STATS_USERNAME"] = "scraper"
	env["STATS_PASSWORD"] = "t0ps3cret"
	ms.user, ms.password = "scraper", "t0ps3cret"
	r := startRouter(t, m.Dir, env, "--haproxy", wrapper)

	eventually(t, loadTimeout, "health server up", func() error {
		st, _, err := ms.status("/healthz", false)
		if err != nil {
			return err
		}
		if st != 200 {
			return fmt.Errorf("/healthz %d", st)
		}
		return nil
	})
	st, body, err := ms.status("/healthz/ready", false)
	must(t, err)
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "has-synced failed") {
		t.Fatalf("/healthz/ready before the first sync: %d %q", st, body)
	}
	st, body, err = ms.status("/metrics", false)
	must(t, err)
	if st != http.StatusUnauthorized {
		t.Fatalf("/metrics without credentials: %d %q", st, body)
	}
	s, err := ms.get()
	must(t, err)
	if v, err := s.value("haproxy_exporter_up", nil); err != nil || v != 0 {
		t.Errorf("haproxy_exporter_up before haproxy runs: %v %v", v, err)
	}

	must(t, os.WriteFile(gate, nil, 0o644))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")
	eventually(t, loadTimeout, "ready after the first sync", func() error {
		st, body, err := ms.status("/healthz/ready", false)
		if err != nil {
			return err
		}
		if st != 200 {
			return fmt.Errorf("/healthz/ready %d %q", st, body)
		}
		return nil
	})
	if st, body, err := ms.status("/healthz", false); err != nil || st != 200 {
		t.Errorf("/healthz after sync: %d %q %v", st, body, err)
	}
	eventually(t, loadTimeout, "haproxy statistics with credentials", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("haproxy_exporter_up", nil); err != nil || v != 1 {
			return fmt.Errorf("haproxy_exporter_up %v %v", v, err)
		}
		return nil
	})
	// Wrong credentials are refused.
	ms.password = "wrong"
	if st, _, err := ms.status("/metrics", true); err != nil || st != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong password: %d %v", st, err)
	}
}

// TestMetricsTypeNoneAndListenErrors: ROUTER_METRICS_TYPE=none keeps the
// router's own metrics and drops HAProxy's; an address in use is a start-up
// error naming ROUTER_LISTEN_ADDR.
func TestMetricsTypeNoneAndListenErrors(t *testing.T) {
	one := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("tn", "one", one))
	m.Write("routes.yaml", routeYAML("tn", "one", "one.example.com", "", "one", ""))

	env, ms := metricsEnv(t)
	env["ROUTER_METRICS_TYPE"] = "none"
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")
	eventually(t, loadTimeout, "router metrics without HAProxy's", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_seconds_count", nil); err != nil || v < 1 {
			return fmt.Errorf("reloads %v %v", v, err)
		}
		for name := range s.families {
			if strings.HasPrefix(name, "haproxy_") {
				return fmt.Errorf("%s reported with ROUTER_METRICS_TYPE=none", name)
			}
		}
		return nil
	})

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer busy.Close()
	r2 := startRouter(t, m.Dir, map[string]string{"ROUTER_LISTEN_ADDR": busy.Addr().String()})
	eventually(t, loadTimeout, "router exits", func() error {
		if exited, _ := r2.Exited(); !exited {
			return fmt.Errorf("still running")
		}
		return nil
	})
	if _, err := r2.Exited(); err == nil {
		t.Error("router exited 0 with its listen address in use")
	}
	if log := r2.Log(); !strings.Contains(log, "ROUTER_LISTEN_ADDR="+busy.Addr().String()) || !strings.Contains(log, "address already in use") {
		t.Errorf("start-up error does not name ROUTER_LISTEN_ADDR and the cause:\n%s", log)
	}
}

// --- helpers for the metrics tests ---

// metricsClient scrapes one router's metrics server.
type metricsClient struct {
	addr           string
	user, password string
}

// metricsEnv returns environment for a router whose metrics server listens
// on a free loopback port, scraping HAProxy at most once a second.
//
// It sets credentials: against a cluster, /metrics without them is
// authorised by bearer token, as in OpenShift's router.
func metricsEnv(t *testing.T) (map[string]string, *metricsClient) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	return map[string]string{
		"ROUTER_LISTEN_ADDR":                          addr,
		"ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL": "1s",
		"STATS_USERNAME":                              "e2e-scraper",
		"STATS_PASSWORD":                              "e2e-scraper-password",
	}, &metricsClient{addr: addr, user: "e2e-scraper", password: "e2e-scraper-password"}
}

func (c *metricsClient) status(path string, auth bool) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+c.addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	if auth {
		req.SetBasicAuth(c.user, c.password)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scrape is one /metrics reply parsed by the Prometheus text parser.
type scrape struct {
	families map[string]*dto.MetricFamily
}

func (c *metricsClient) get() (scrape, error) {
	st, body, err := c.status("/metrics", c.user != "" || c.password != "")
	if err != nil {
		return scrape{}, err
	}
	if st != 200 {
		return scrape{}, fmt.Errorf("/metrics: %d %.200s", st, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return scrape{}, fmt.Errorf("/metrics is not valid Prometheus text: %w", err)
	}
	return scrape{families: fams}, nil
}

func (s scrape) has(name string) bool { return len(s.families[name].GetMetric()) > 0 }

// value returns the one sample of name whose labels include want; for a
// summary, name may end in _count or _sum.
func (s scrape) value(name string, want map[string]string) (float64, error) {
	family, part := name, ""
	if _, ok := s.families[name]; !ok {
		for _, suffix := range []string{"_count", "_sum"} {
			if strings.HasSuffix(name, suffix) {
				family, part = strings.TrimSuffix(name, suffix), suffix
			}
		}
	}
	mf, ok := s.families[family]
	if !ok {
		return 0, fmt.Errorf("no metric %s", family)
	}
	var found []*dto.Metric
	for _, m := range mf.GetMetric() {
		match := true
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%s%v: %d samples match", name, want, len(found))
	}
	m := found[0]
	switch {
	case part == "_count" && m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount()), nil
	case part == "_sum" && m.Summary != nil:
		return m.GetSummary().GetSampleSum(), nil
	case m.Counter != nil:
		return m.GetCounter().GetValue(), nil
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), nil
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), nil
	}
	return 0, fmt.Errorf("%s: unexpected type %v", name, mf.GetType())
}

// mustValue scrapes /metrics and returns one sample (see scrape.value),
// failing the test if it cannot.
func (c *metricsClient) mustValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	s, err := c.get()
	must(t, err)
	v, err := s.value(name, want)
	must(t, err)
	return v
}

// reloadReasons lists the router's reloads by reason
// (template_router_reloads_total), for failure messages.
func (c *metricsClient) reloadReasons() string {
	s, err := c.get()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, m := range s.families["template_router_reloads_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" {
				out = append(out, fmt.Sprintf("%s=%v", l.GetValue(), m.GetCounter().GetValue()))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// settledReloads waits until the router's reload count
// (template_router_reload_seconds_count) has stayed the same for two
// seconds (a reload already asked for has happened) and returns it.
func (c *metricsClient) settledReloads(t *testing.T) float64 {
	t.Helper()
	return c.reloadsQuietFor(t, 2*time.Second)
}

// reloadsQuietFor is settledReloads with the time the count must stay
// the same (longer than RELOAD_INTERVAL, for a reload still deferred).
func (c *metricsClient) reloadsQuietFor(t *testing.T, quiet time.Duration) float64 {
	t.Helper()
	last, since := -1.0, time.Now()
	var v float64
	eventually(t, 30*time.Second, "the reload count to settle", func() error {
		v = c.mustValue(t, "template_router_reload_seconds_count", nil)
		if v != last {
			last, since = v, time.Now()
		}
		if time.Since(since) < quiet {
			return fmt.Errorf("reloads %v (%s), last changed %v ago", v, c.reloadReasons(), time.Since(since))
		}
		return nil
	})
	return v
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}
