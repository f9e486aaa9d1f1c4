package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// seenBackends sends n requests and returns the backends that answered
// (each once, sorted); a failed request is an error.
func seenBackends(r *router, host string, n int) ([]string, error) {
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		resp, err := r.httpGet(host, "/")
		if err != nil {
			return nil, err
		}
		if resp.Status != 200 {
			return nil, fmt.Errorf("status %d", resp.Status)
		}
		seen[resp.backend()] = true
	}
	out := make([]string, 0, len(seen))
	for b := range seen {
		out = append(out, b)
	}
	sort.Strings(out)
	return out, nil
}

// expectExactly waits until n requests in a row reach exactly want, and
// returns how long that took.
func expectExactly(t *testing.T, timeout time.Duration, r *router, host string, want ...string) time.Duration {
	t.Helper()
	sort.Strings(want)
	began := time.Now()
	eventually(t, timeout, fmt.Sprintf("traffic to %s reaches exactly %v", host, want), func() error {
		got, err := seenBackends(r, host, 8*len(want))
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("reached %v", got)
		}
		return nil
	})
	return time.Since(began)
}

// runtimeServers returns, for each server of backend, "addr:port" and
// whether HAProxy has it in maintenance, read through the runtime API.
func runtimeServers(t *testing.T, r *router, backend string) map[string]string {
	t.Helper()
	c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
	out, err := c.Exec(context.Background(), "show stat")
	must(t, err)
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		t.Fatalf("show stat: %.200s", out)
	}
	cols := map[string]int{}
	for i, c := range strings.Split(strings.TrimPrefix(lines[0], "# "), ",") {
		cols[c] = i
	}
	servers := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) < len(cols) || f[cols["pxname"]] != backend || f[cols["svname"]] == "BACKEND" {
			continue
		}
		servers[f[cols["svname"]]] = fmt.Sprintf("%s maint=%v", f[cols["addr"]], strings.HasPrefix(f[cols["status"]], "MAINT"))
	}
	return servers
}

// diskServers returns the same description of backend's server lines in
// the haproxy.config on disk.
func diskServers(t *testing.T, r *router, backend string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	servers := map[string]string{}
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, " ") && l != "" {
			in = l == "backend "+backend
			continue
		}
		f := strings.Fields(l)
		if !in || len(f) < 3 || f[0] != "server" {
			continue
		}
		servers[f[1]] = fmt.Sprintf("%s maint=%v", f[2], strings.HasSuffix(l, " disabled"))
	}
	return servers
}

// waitReady waits until /healthz/ready answers 200: the reload that loaded
// the initial routes is complete, and counted in the metrics.
func waitReady(t *testing.T, ms *metricsClient) {
	t.Helper()
	eventually(t, loadTimeout, "router ready", func() error {
		if st, _, err := ms.status("/healthz/ready", false); err != nil || st != 200 {
			return fmt.Errorf("ready: %d %v", st, err)
		}
		return nil
	})
}

func haproxyPIDSet(r *router) []int {
	pids := r.haproxyPIDs()
	sort.Ints(pids)
	return pids
}

// TestEndpointChangesNeedNoReload: scaling a service 1 → 5 → 1 (with a
// not-ready endpoint throughout) reaches exactly the ready endpoints,
// through the runtime API: no new haproxy process, no reload counted, the
// changes counted as avoided reloads — and the configuration on disk
// describes exactly what HAProxy runs.
func TestEndpointChangesNeedNoReload(t *testing.T) {
	var bes []*backend
	for i := 1; i <= 6; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("web-%d", i)))
	}
	pods := func(ready int) []pod {
		var out []pod
		for i := 0; i < ready; i++ {
			out = append(out, pod{name: bes[i].Name, be: bes[i]})
		}
		// web-6 exists but is never ready.
		return append(out, pod{name: bes[5].Name, be: bes[5], notReady: true})
	}
	names := func(n int) []string { return backendNames(bes[:n]) }
	m := newManifests(t)
	m.Write("svc.yaml", podServiceYAML("dyn", "web", pods(1)...))
	m.Write("route.yaml", routeYAML("dyn", "r", "r.example.com", "", "web", ""))
	env, ms := metricsEnv(t)
	// A reload would have to wait a minute: anything faster is the
	// runtime API.
	env["RELOAD_INTERVAL"] = "60s"
	r := startRouter(t, m.Dir, env)
	expectExactly(t, loadTimeout, r, "r.example.com", names(1)...)
	waitReady(t, ms)

	counters := func() (reloads, avoided float64) {
		t.Helper()
		return ms.mustValue(t, "template_router_reload_seconds_count", nil),
			ms.mustValue(t, "template_router_reloads_avoided_total", map[string]string{"kind": "endpoints"})
	}
	reloads0, avoided0 := counters()
	pids0 := haproxyPIDSet(r)
	if len(pids0) != 2 {
		t.Fatalf("haproxy processes %v, want a master and one worker", pids0)
	}
	const backend = "be_http:dyn:r"

	for step, n := range []int{5, 1, 3} {
		m.Write("svc.yaml", podServiceYAML("dyn", "web", pods(n)...))
		took := expectExactly(t, 30*time.Second, r, "r.example.com", names(n)...)
		t.Logf("scaled to %d: traffic followed in %v", n, took.Round(time.Millisecond))
		if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
			t.Fatalf("step %d: haproxy processes %v, were %v (a reload or restart happened)", step, pids, pids0)
		}
		reloads, avoided := counters()
		if reloads != reloads0 {
			t.Errorf("step %d: reloads %v, were %v", step, reloads, reloads0)
		}
		if avoided <= avoided0 {
			t.Errorf("step %d: reloads avoided %v, were %v", step, avoided, avoided0)
		}
		avoided0 = avoided
		// The servers of the endpoints that went away are deleted once
		// drained: then HAProxy runs what the file says.
		runsWhatDiskSays(t, r, backend)
		// Endpoints in spare slots are reported under their pod's name;
		// free slots are not reported.
		eventually(t, 10*time.Second, "server metrics name the pods", func() error {
			s, err := ms.get()
			if err != nil {
				return err
			}
			var pods []string
			for _, m := range s.families["haproxy_server_up"].GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["route"] == "r" && m.GetGauge().GetValue() == 1 {
					pods = append(pods, labels["pod"])
				}
				if strings.HasPrefix(labels["server"], "_dynamic") {
					return fmt.Errorf("slot reported: %v", labels)
				}
			}
			sort.Strings(pods)
			if want := names(n); !reflect.DeepEqual(pods, want) {
				return fmt.Errorf("servers up: %v, want %v", pods, want)
			}
			return nil
		})
	}
	if strings.Contains(r.Log(), "runtime API change failed") {
		t.Errorf("runtime API errors logged")
	}
}

// TestEndpointMovesLeaveNoConnectionToTheOldEndpoint: a route's only
// endpoint moves a → b → c → d through spare slots while a request to b is
// in flight, and a client on a kept-alive connection reaches exactly the
// current endpoint after each move. HAProxy returns the connection of a
// request that ends after its server changed address to the server's pool
// and reuses it (it does not compare addresses): a slot freed by a change
// must not take the new endpoint in the same change. A slot reused by a
// later change serves its new endpoint only ("set server addr" closes the
// idle connections it pooled meanwhile).
func TestEndpointMovesLeaveNoConnectionToTheOldEndpoint(t *testing.T) {
	a, c, d := startBackend(t, "a"), startBackend(t, "c"), startBackend(t, "d")
	b := slowPathBackend(t, "b", 2*time.Second)
	const host = "mv.example.com"
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("mv", "web", a))
	// Two slots: the third move has to take the slot of the first (free
	// slots are reused least recently freed first; with more, d would take
	// one never used).
	m.Write("route.yaml", strings.Replace(routeYAML("mv", "r", host, "", "web", ""),
		"  namespace: mv\n", "  namespace: mv\n  annotations:\n    router.openshift.io/pool-size: \"2\"\n", 1))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "60s" // anything faster than a minute is the runtime API
	r := startRouter(t, m.Dir, env)
	expectExactly(t, loadTimeout, r, host, "a")
	waitReady(t, ms)
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)

	// Kept-alive connections to HAProxy: requests after a connection's
	// first may go over HAProxy's idle server connections (http-reuse
	// safe), and a request on one leaves its server connection open.
	newClient := func() *http.Client {
		tr := &http.Transport{MaxIdleConnsPerHost: 1, ForceAttemptHTTP2: false}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	client, slowClient := newClient(), newClient()
	get := func(client *http.Client, path string) (string, error) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, path), nil)
		if err != nil {
			return "", err
		}
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		return response{Body: string(body)}.backend(), nil
	}
	// only checks that 20 requests in a row (on client's connection)
	// reach want.
	only := func(client *http.Client, want string) error {
		for i := 0; i < 20; i++ {
			got, err := get(client, "/")
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("request %d answered by %q", i, got)
			}
		}
		return nil
	}
	// serving waits until HAProxy runs be and no other server (through the
	// runtime API: no traffic meanwhile, whose connections could be the
	// ones reused). The new server is made ready before the old one is put
	// in maintenance, so be alone running is what marks the move done.
	serving := func(be *backend) {
		t.Helper()
		eventually(t, 30*time.Second, "HAProxy serves "+be.Name+" alone", func() error {
			want := fmt.Sprintf("%s:%d maint=false", be.IP, be.Port)
			servers := runtimeServers(t, r, "be_http:mv:r")
			found := false
			for _, s := range servers {
				switch {
				case s == want:
					found = true
				case strings.HasSuffix(s, " maint=false"):
					return fmt.Errorf("servers %v", servers)
				}
			}
			if !found {
				return fmt.Errorf("servers %v", servers)
			}
			return nil
		})
	}

	m.Write("svc.yaml", serviceYAML("mv", "web", b))
	serving(b)
	if err := only(client, "b"); err != nil {
		t.Fatal(err)
	}
	// A request to b in flight while b's slot is retired, over a server
	// connection that served a request before (HAProxy shares only those
	// with other clients).
	if got, err := get(slowClient, "/"); err != nil || got != "b" {
		t.Fatalf("answered by %q (%v)", got, err)
	}
	slow := make(chan error, 1)
	go func() {
		got, err := get(slowClient, "/slow")
		if err == nil && got != "b" {
			err = fmt.Errorf("answered by %q", got)
		}
		slow <- err
	}()
	time.Sleep(300 * time.Millisecond)
	m.Write("svc.yaml", serviceYAML("mv", "web", c))
	serving(c)
	if err := <-slow; err != nil {
		t.Errorf("request in flight across the move: %v", err)
	}
	// Its connection to b is idle now: the traffic goes to c only, on
	// that client's connection too.
	if err := only(slowClient, "c"); err != nil {
		t.Errorf("after the move to c: %v", err)
	}
	if err := only(client, "c"); err != nil {
		t.Errorf("after the move to c: %v", err)
	}
	// d takes the slot b had (free since the previous change, the one
	// freed longest ago, with the connection to b in its pool: "set server
	// addr" closes idle ones).
	m.Write("svc.yaml", serviceYAML("mv", "web", d))
	serving(d)
	for _, client := range []*http.Client{slowClient, client} {
		if err := only(client, "d"); err != nil {
			t.Errorf("after the move to d: %v", err)
		}
	}
	if got, want := diskServers(t, r, "be_http:mv:r")["_dynamic-pod-1"], fmt.Sprintf("%s:%d maint=false", d.IP, d.Port); got != want {
		t.Errorf("d is not in b's slot: _dynamic-pod-1 is %q, want %q", got, want)
	}

	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Errorf("reloads %v, were %v: the moves should go through the runtime API", reloads, reloads0)
	}
	runsWhatDiskSays(t, r, "be_http:mv:r")
}

// runsWhatDiskSays waits until HAProxy runs exactly the servers the
// haproxy.config on disk has for backend (servers of lines that went away
// are deleted once drained: once their last request is done and HAProxy
// has closed their idle connections, pool-purge-delay later, which takes
// longer on a busy machine).
func runsWhatDiskSays(t *testing.T, r *router, backend string) {
	t.Helper()
	eventually(t, 30*time.Second, "running servers as haproxy.config on disk", func() error {
		if mem, disk := runtimeServers(t, r, backend), diskServers(t, r, backend); !reflect.DeepEqual(mem, disk) {
			return fmt.Errorf("running servers differ from haproxy.config on disk:\nrunning %v\ndisk    %v", mem, disk)
		}
		return nil
	})
}

// TestEndpointsBeyondThePoolAreAddedAtRuntime: a route with pool-size 1
// that gains two endpoints gets the second as a server added through the
// runtime API, without a reload; its sticky cookie is the one a fresh
// render gives it (a client keeps its endpoint across a later reload);
// scaled down again, the servers of the endpoints that went away are
// deleted once drained, still without a reload.
func TestEndpointsBeyondThePoolAreAddedAtRuntime(t *testing.T) {
	var bes []*backend
	for i := 1; i <= 3; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("p-%d", i)))
	}
	const host, backendName = "pool.example.com", "be_http:pool:r"
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("pool", "web", bes[0]))
	m.Write("route.yaml", strings.Replace(routeYAML("pool", "r", host, "", "web", ""),
		"  namespace: pool\n", "  namespace: pool\n  annotations:\n    router.openshift.io/pool-size: \"1\"\n", 1))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	expectExactly(t, loadTimeout, r, host, "p-1")
	waitReady(t, ms)
	if got := len(diskServers(t, r, backendName)); got != 2 {
		t.Fatalf("backend has %d server lines, want one endpoint and one slot", got)
	}
	reloads0 := ms.settledReloads(t)
	pids0 := oneWorker(t, r)

	m.Write("svc.yaml", serviceYAML("pool", "web", bes...))
	expectExactly(t, 30*time.Second, r, host, "p-1", "p-2", "p-3")
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v (%s), were %v: the endpoint beyond the pool should be added at runtime",
			reloads, ms.reloadReasons(), reloads0)
	}
	if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
		t.Fatalf("haproxy processes %v, were %v (a reload or restart happened)", pids, pids0)
	}
	runsWhatDiskSays(t, r, backendName)

	// The cookies HAProxy gives the servers now, the added one included.
	cookies := stickyCookies(t, r, host, "p-1", "p-2", "p-3")
	// A reload (a route added elsewhere) lays the backend out afresh: the
	// cookies stay, so clients keep their endpoints.
	m.Write("other.yaml", routeYAML("pool", "other", "other.pool.example.com", "", "web", ""))
	eventually(t, 30*time.Second, "a reload", func() error {
		if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads <= reloads0 {
			return fmt.Errorf("reloads %v", reloads)
		}
		return nil
	})
	expectExactly(t, 30*time.Second, r, "other.pool.example.com", "p-1", "p-2", "p-3")
	for be, cookie := range cookies {
		for i := 0; i < 5; i++ {
			resp, err := doRequestWithCookie(r, host, cookie)
			if err != nil || resp.backend() != be {
				t.Fatalf("after the reload, cookie %q reached %q (%v), want %s", cookie, resp.backend(), err, be)
			}
		}
	}

	// Scaled down: drained and deleted at runtime.
	reloads1 := ms.settledReloads(t)
	m.Write("svc.yaml", serviceYAML("pool", "web", bes[1]))
	expectExactly(t, 30*time.Second, r, host, "p-2")
	runsWhatDiskSays(t, r, backendName)
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads1 {
		t.Errorf("reloads %v (%s), were %v: a scale-down needs none", reloads, ms.reloadReasons(), reloads1)
	}
}

// oneWorker waits until HAProxy runs as a master and one worker (a worker
// of a load before may still be finishing) and returns their PIDs.
func oneWorker(t *testing.T, r *router) []int {
	t.Helper()
	eventually(t, 30*time.Second, "a master and one worker", func() error {
		if pids := haproxyPIDSet(r); len(pids) != 2 {
			return fmt.Errorf("haproxy processes %v", pids)
		}
		return nil
	})
	return haproxyPIDSet(r)
}

// stickyCookies returns the sticky cookie HAProxy sets for each of the
// backends (by name) behind host, and checks that it pins a client to it.
func stickyCookies(t *testing.T, r *router, host string, backends ...string) map[string]string {
	t.Helper()
	cookies := map[string]string{}
	eventually(t, 30*time.Second, "a sticky cookie for every backend", func() error {
		resp, err := doRequestWithCookie(r, host, "")
		if err != nil {
			return err
		}
		if c := resp.Header.Get("Set-Cookie"); c != "" {
			cookies[resp.backend()] = strings.SplitN(c, ";", 2)[0]
		}
		if len(cookies) < len(backends) {
			return fmt.Errorf("cookies %v", cookies)
		}
		return nil
	})
	for _, be := range backends {
		cookie, ok := cookies[be]
		if !ok || strings.HasSuffix(cookie, "=") {
			t.Fatalf("no cookie for %s: %v", be, cookies)
		}
		for i := 0; i < 5; i++ {
			if resp, err := doRequestWithCookie(r, host, cookie); err != nil || resp.backend() != be {
				t.Fatalf("cookie %q reached %q (%v), want %s", cookie, resp.backend(), err, be)
			}
		}
	}
	return cookies
}

// doRequestWithCookie sends one plain HTTP request for host with cookie
// ("" for none) on a connection of its own.
func doRequestWithCookie(r *router, host, cookie string) (response, error) {
	var hdr http.Header
	if cookie != "" {
		hdr = http.Header{"Cookie": {cookie}}
	}
	return annRequest(r, false, host, "/", hdr)
}

// TestKubeEndpointSliceScalingNeedsNoReload: the same through a real API
// server: EndpointSlice updates scale a service 1 → 5 → 1 without a new
// haproxy process or a reload.
func TestKubeEndpointSliceScalingNeedsNoReload(t *testing.T) {
	c := kubetest.Shared(t)
	netns := kubetest.NewNetNS(t)
	var bes []*kubetest.Backend
	for i := 1; i <= 5; i++ {
		ip := netns.IP()
		if i > 1 {
			ip = netns.AddAddress(t)
		}
		bes = append(bes, netns.StartBackend(t, ip, 8080, fmt.Sprintf("pod-%d", i)))
	}
	names := func(n int) []string {
		var out []string
		for _, b := range bes[:n] {
			out = append(out, b.Name)
		}
		return out
	}
	ns := c.CreateNamespace(t, "dyn-", nil).Name
	kubeService(t, c, ns, "web", bes[0])
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "60s"
	kubeRoute(t, c, ns, "web", "dyn.example.com", "web", nil)
	r := startKubeRouter(t, c.KubeconfigPath, env)
	expectExactly(t, loadTimeout, r, "dyn.example.com", names(1)...)
	reloads := func() float64 {
		t.Helper()
		return ms.mustValue(t, "template_router_reload_seconds_count", nil)
	}
	waitReady(t, ms)
	reloads0 := reloads()
	pids0 := haproxyPIDSet(r)
	for _, n := range []int{5, 1} {
		setEndpoints(t, c, ns, "web", bes[:n]...)
		took := expectExactly(t, 30*time.Second, r, "dyn.example.com", names(n)...)
		t.Logf("EndpointSlice with %d endpoints: traffic followed in %v", n, took.Round(time.Millisecond))
		if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
			t.Fatalf("haproxy processes %v, were %v", pids, pids0)
		}
		if v := reloads(); v != reloads0 {
			t.Errorf("reloads %v, were %v", v, reloads0)
		}
	}
}

// TestCertificateChangesNeedNoReload: rotating an edge route's certificate
// is applied with "set ssl cert" / "commit ssl cert" — same haproxy
// processes, no reload — and the new certificate is served.
func TestCertificateChangesNeedNoReload(t *testing.T) {
	ca1, err := testcerts.NewCA("route CA 1", time.Hour)
	must(t, err)
	ca2, err := testcerts.NewCA("route CA 2", time.Hour)
	must(t, err)
	cert1, err := ca1.Issue("edge one", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	cert2, err := ca2.Issue("edge two", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	plain := startBackend(t, "plain")

	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("certs", "plain", plain))
	route := func(edge *testcerts.Pair) string {
		return routeYAML("certs", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "", map[string]string{
			"certificate": edge.CertPEM, "key": edge.KeyPEM, "caCertificate": ca1.CertPEM + ca2.CertPEM}))
	}
	m.Write("routes.yaml", route(cert1))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "60s"
	r := startRouter(t, m.Dir, env)
	edgeSubject := func() (string, error) { return servedCommonName(r, "edge.example.com") }
	eventually(t, loadTimeout, "edge serves certificate one", func() error {
		if cn, err := edgeSubject(); err != nil || cn != "edge one" {
			return fmt.Errorf("%q %v", cn, err)
		}
		return nil
	})
	waitReady(t, ms)
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	pids0 := haproxyPIDSet(r)

	m.Write("routes.yaml", route(cert2))
	eventually(t, 30*time.Second, "edge serves certificate two", func() error {
		if cn, err := edgeSubject(); err != nil || cn != "edge two" {
			return fmt.Errorf("%q %v", cn, err)
		}
		return nil
	})
	if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
		t.Fatalf("haproxy processes %v, were %v", pids, pids0)
	}
	eventually(t, 10*time.Second, "certificate change counted, no reload", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_seconds_count", nil); err != nil || v != reloads0 {
			return fmt.Errorf("reloads %v (were %v) %v", v, reloads0, err)
		}
		if v, err := s.value("template_router_reloads_avoided_total", map[string]string{"kind": "certificate"}); err != nil || v != 1 {
			return fmt.Errorf("certificate changes without reload %v %v", v, err)
		}
		return nil
	})
	// The file on disk is the certificate HAProxy serves.
	data, err := os.ReadFile(filepath.Join(r.WorkingDir, "router", "certs", "certs:edge.pem"))
	must(t, err)
	if !strings.Contains(string(data), strings.TrimSpace(cert2.CertPEM)) {
		t.Errorf("certificate file on disk is not the new certificate")
	}
}

// slowPathBackend answers /slow after d and everything else at once.
func slowPathBackend(t *testing.T, name string, d time.Duration) *backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/slow" {
			select {
			case <-time.After(d):
			case <-req.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "backend=%s path=%s\n", name, req.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// TestRouteChangesUnderLoadLoseNoRequests: while requests flow to one route
// (new and kept-alive connections) and a slow request is in flight, other
// routes are added, changed and removed — several reloads — and no request
// fails.
func TestRouteChangesUnderLoadLoseNoRequests(t *testing.T) {
	stable := slowPathBackend(t, "stable", 3*time.Second)
	other := startBackend(t, "other")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("load", "stable", stable)+"---\n"+serviceYAML("load", "other", other))
	m.Write("stable.yaml", routeYAML("load", "stable", "stable.example.com", "", "stable", ""))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("stable.example.com", "/") }, "stable")
	waitReady(t, ms)
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct{ ok, failed int }
	results := make(chan result, 4)
	url := fmt.Sprintf("http://127.0.0.1:%d/", r.HTTPPort)
	for w := 0; w < 4; w++ {
		keepAlive := w%2 == 0
		go func() {
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
			var res result
			for i := 0; i < 100000 && ctx.Err() == nil; i++ {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Host = "stable.example.com"
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					res.failed++
					t.Logf("request failed: %v", err)
				} else {
					res.ok++
				}
				time.Sleep(5 * time.Millisecond)
			}
			results <- res
		}()
	}
	// A request that is in flight across the reloads.
	slow := make(chan error, 1)
	go func() {
		resp, err := r.httpGet("stable.example.com", "/slow")
		if err == nil && resp.Status != 200 {
			err = fmt.Errorf("status %d", resp.Status)
		}
		slow <- err
	}()
	time.Sleep(200 * time.Millisecond)
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("extra-%d", i)
		// Each of a backend shape of its own (a rewrite target no other
		// has), so that no free backend can stand for it: a reload each.
		m.Write(name+".yaml", annotatedRouteYAML("load", name, name+".example.com", "", "other", "",
			map[string]string{"haproxy.router.openshift.io/rewrite-target": fmt.Sprintf("/r%d", i)}))
		expectBackend(t, 30*time.Second, func() (response, error) { return r.httpGet(name+".example.com", "/") }, "other")
		if i > 0 {
			prev := fmt.Sprintf("extra-%d", i-1)
			m.Remove(prev + ".yaml")
			expectStatus(t, 30*time.Second, func() (response, error) { return r.httpGet(prev+".example.com", "/") }, 503)
		}
	}
	if err := <-slow; err != nil {
		t.Errorf("request in flight across reloads: %v", err)
	}
	cancel()
	total := result{}
	for w := 0; w < 4; w++ {
		res := <-results
		total.ok += res.ok
		total.failed += res.failed
	}
	reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	t.Logf("%d requests, %d failed, %v reloads", total.ok+total.failed, total.failed, reloads-reloads0)
	if reloads-reloads0 < 4 {
		t.Errorf("only %v reloads during the test", reloads-reloads0)
	}
	if total.failed != 0 || total.ok == 0 {
		t.Errorf("%d of %d requests failed", total.failed, total.ok+total.failed)
	}
}

// TestHardStopAfterBoundsOldProcesses: with ROUTER_HARD_STOP_AFTER, an old
// HAProxy process kept alive by a long request after a reload ends after
// that time, not when the request would.
func TestHardStopAfterBoundsOldProcesses(t *testing.T) {
	slowBE := slowPathBackend(t, "slow", 60*time.Second)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("hs", "slow", slowBE))
	m.Write("a.yaml", routeYAML("hs", "a", "a.example.com", "", "slow", ""))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_HARD_STOP_AFTER": "2s", "ROUTER_DEFAULT_SERVER_TIMEOUT": "5m"})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("a.example.com", "/") }, "slow")
	before := haproxyPIDSet(r)
	go func() { _, _ = r.httpGet("a.example.com", "/slow") }()
	time.Sleep(300 * time.Millisecond)
	m.Write("b.yaml", routeYAML("hs", "b", "b.example.com", "", "slow", ""))
	expectBackend(t, 30*time.Second, func() (response, error) { return r.httpGet("b.example.com", "/") }, "slow")
	reloaded := time.Now()
	// The old worker (in before, not the master) must be gone well before
	// the 60 s request would end.
	pidData, err := os.ReadFile(filepath.Join(r.WorkingDir, "run", "haproxy.pid"))
	must(t, err)
	var master int
	_, _ = fmt.Sscanf(string(pidData), "%d", &master)
	var old []int
	for _, p := range before {
		if p != master {
			old = append(old, p)
		}
	}
	if len(old) == 0 {
		t.Fatalf("no old worker among %v (master %d)", before, master)
	}
	eventually(t, 20*time.Second, "old worker ended by hard-stop-after", func() error {
		for _, p := range old {
			if syscall.Kill(p, 0) == nil {
				return fmt.Errorf("old worker %d still running", p)
			}
		}
		return nil
	})
	t.Logf("old worker gone %v after the reload", time.Since(reloaded).Round(100*time.Millisecond))
}

// TestRuntimeAPIFailureFallsBackToReload: a route balanced by source
// (consistent hashing) scales without a reload; when the runtime API cannot
// be reached, the change is applied by a reload instead — counted as a
// runtime API error and a reload for that reason — and HAProxy ends up
// running exactly what is on disk.
func TestRuntimeAPIFailureFallsBackToReload(t *testing.T) {
	var bes []*backend
	for i := 1; i <= 3; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("s-%d", i)))
	}
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rtf", "web", bes[0]))
	m.Write("route.yaml", strings.Replace(routeYAML("rtf", "r", "rtf.example.com", "", "web", ""),
		"  namespace: rtf\n", "  namespace: rtf\n  annotations:\n    haproxy.router.openshift.io/balance: source\n", 1))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("rtf.example.com", "/") }, "s-1")
	waitReady(t, ms)
	const backend = "be_http:rtf:r"
	enabled := func(servers map[string]string) int {
		n := 0
		for _, s := range servers {
			if strings.HasSuffix(s, "maint=false") {
				n++
			}
		}
		return n
	}
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)

	m.Write("svc.yaml", serviceYAML("rtf", "web", bes[:2]...))
	eventually(t, 30*time.Second, "second server enabled at runtime", func() error {
		if mem := runtimeServers(t, r, backend); enabled(mem) != 2 {
			return fmt.Errorf("running servers %v", mem)
		}
		return nil
	})
	if v := ms.mustValue(t, "template_router_reload_seconds_count", nil); v != reloads0 {
		t.Errorf("reloads %v, were %v: scaling a source-balanced route reloaded", v, reloads0)
	}

	sock := filepath.Join(r.WorkingDir, "run", "haproxy.sock")
	must(t, os.Rename(sock, sock+".moved"))
	m.Write("svc.yaml", serviceYAML("rtf", "web", bes...))
	eventually(t, 30*time.Second, "failed runtime change replaced by a reload", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_runtime_api_errors_total", nil); err != nil || v != 1 {
			return fmt.Errorf("runtime API errors %v %v", v, err)
		}
		if v, err := s.value("template_router_reloads_total", map[string]string{"reason": "runtime-error"}); err != nil || v != 1 {
			return fmt.Errorf("runtime-error reloads %v %v", v, err)
		}
		return nil
	})
	// The reloaded worker inherits the listening socket (moved with it):
	// move it back to read what HAProxy runs.
	must(t, os.Rename(sock+".moved", sock))
	eventually(t, 30*time.Second, "HAProxy runs what is on disk", func() error {
		mem, disk := runtimeServers(t, r, backend), diskServers(t, r, backend)
		if !reflect.DeepEqual(mem, disk) || enabled(mem) != 3 {
			return fmt.Errorf("running %v, disk %v", mem, disk)
		}
		return nil
	})
}

// servedCommonName is the common name of the certificate host is served
// with over HTTPS, when the request answers 200.
func servedCommonName(r *router, host string) (string, error) {
	resp, err := r.httpsGet(host, "/")
	if err != nil {
		return "", err
	}
	if resp.PeerCert == nil || resp.Status != 200 {
		return "", fmt.Errorf("status %d, certificate %v", resp.Status, resp.PeerCert != nil)
	}
	return resp.PeerCert.Subject.CommonName, nil
}

// TestScaleUpsUnderATightOpenFilesLimitNeedNoReload: under an open-files
// limit that leaves no descriptor for health checks (1,200 with maxconn
// 100), the router still gives the route its spare slots — rendered
// without "check", they cost HAProxy no descriptor — so a scale-up 1 → 3
// is applied through the runtime API: traffic reaches the new pods, no
// reload, the endpoints counted as served without health checks. A later
// reload lays the backend out afresh and keeps serving every route (none
// is rejected for the budget).
func TestScaleUpsUnderATightOpenFilesLimitNeedNoReload(t *testing.T) {
	var bes []*backend
	for i := 1; i <= 3; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("tight-%d", i)))
	}
	pods := func(n int) []pod {
		var out []pod
		for i := 0; i < n; i++ {
			out = append(out, pod{name: bes[i].Name, be: bes[i]})
		}
		return out
	}
	names := func(n int) []string { return backendNames(bes[:n]) }
	m := newManifests(t)
	m.Write("svc.yaml", podServiceYAML("tight", "web", pods(1)...))
	m.Write("route.yaml", routeYAML("tight", "r", "r.tight.example.com", "", "web", ""))
	env, ms := metricsEnv(t)
	env["ROUTER_MAX_CONNECTIONS"] = "100"
	env["RELOAD_INTERVAL"] = "2s"
	env["ROUTER_MAX_DYNAMIC_SERVERS"] = "5"
	prlimit := func(argv []string) []string {
		return append([]string{"prlimit", "--nofile=1200:1200", "--"}, argv...)
	}
	r := startRouterWrapped(t, prlimit, m.Dir, env, "--manifests", m.Dir)
	expectExactly(t, loadTimeout, r, "r.tight.example.com", names(1)...)
	waitReady(t, ms)
	const backend = "be_http:tight:r"
	slots := 0
	for name := range diskServers(t, r, backend) {
		if strings.HasPrefix(name, "_dynamic-pod-") {
			slots++
		}
	}
	if slots != 5 {
		t.Fatalf("%d spare slots, want ROUTER_MAX_DYNAMIC_SERVERS' 5", slots)
	}
	cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	if strings.Contains(string(cfg), " check inter ") {
		t.Fatalf("health checks rendered with no descriptor for them:\n%s", cfg)
	}
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	pids0 := haproxyPIDSet(r)

	m.Write("svc.yaml", podServiceYAML("tight", "web", pods(3)...))
	expectExactly(t, 30*time.Second, r, "r.tight.example.com", names(3)...)
	if pids := haproxyPIDSet(r); !reflect.DeepEqual(pids, pids0) {
		t.Fatalf("haproxy processes %v, were %v (a reload or restart happened)", pids, pids0)
	}
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Fatalf("reloads %v, were %v", reloads, reloads0)
	}
	eventually(t, 10*time.Second, "two endpoints counted unchecked", func() error {
		if n := ms.mustValue(t, "template_router_unchecked_endpoints", nil); n != 2 {
			return fmt.Errorf("template_router_unchecked_endpoints %v, want 2", n)
		}
		return nil
	})
	for addr, st := range runtimeCheckStatus(t, r, backend) {
		if st != "/no check" {
			t.Errorf("server %s: check status %q, want none", addr, st)
		}
	}

	// A route change reloads: laid out afresh, both routes are served by
	// the three pods, and no endpoint is on a slot any more.
	m.Write("route2.yaml", routeYAML("tight", "r2", "r2.tight.example.com", "", "web", ""))
	expectExactly(t, 30*time.Second, r, "r2.tight.example.com", names(3)...)
	expectExactly(t, 10*time.Second, r, "r.tight.example.com", names(3)...)
	eventually(t, 10*time.Second, "no endpoint counted unchecked after the reload", func() error {
		if n := ms.mustValue(t, "template_router_unchecked_endpoints", nil); n != 0 {
			return fmt.Errorf("template_router_unchecked_endpoints %v, want 0", n)
		}
		return nil
	})
	if strings.Contains(r.Log(), "Cannot raise FD limit") || strings.Contains(r.Log(), "route rejected") {
		t.Fatalf("haproxy refused the limit or a route was rejected:\n%s", r.Log())
	}
}

// backendNames returns the names of bes, in order.
func backendNames(bes []*backend) []string {
	out := make([]string, 0, len(bes))
	for _, be := range bes {
		out = append(out, be.Name)
	}
	return out
}
