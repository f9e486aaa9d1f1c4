package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/process"
	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	"github.com/openshift-router-go/router/test/testcerts"
)

// sidecar is a HAProxy started the way OpenShift's ingress operator starts
// its "haproxy" container: haproxy -W -db -S <dir>/run/admin.sock,mode,600
// -f <dir>/conf/haproxy.config, on the directory the router writes to.
type sidecar struct {
	Dir       string
	AdminSock string
	PID       int
	out       *syncBuffer
	done      chan struct{}
}

// startSidecarHAProxy starts HAProxy on dir/conf/haproxy.config. With
// httpPort non-zero it first writes a placeholder configuration (as the
// image's files are, before the router writes its own) whose frontend
// answers 503 on httpPort: HAProxy then starts first in the pod, as the
// operator's native sidecar does. With 0 the configuration must exist. It
// is ended by PID at cleanup.
func startSidecarHAProxy(t *testing.T, dir string, httpPort int) *sidecar {
	t.Helper()
	for _, d := range []string{"conf", "run"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	cfg := filepath.Join(dir, "conf", "haproxy.config")
	if httpPort != 0 {
		writePlaceholderConfig(t, cfg, httpPort)
	}
	s := &sidecar{Dir: dir, AdminSock: filepath.Join(dir, "run", "admin.sock"), out: &syncBuffer{}, done: make(chan struct{})}
	cmd := exec.Command("haproxy", "-W", "-db", "-S", s.AdminSock+",mode,600", "-f", cfg)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	// Its own group (a last-resort kill reaches its workers too); killed
	// if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	s.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		// Soft stop (what the operator's start-haproxy does on SIGTERM),
		// bounded, then the whole group by PID.
		_ = syscall.Kill(s.PID, syscall.SIGUSR1)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.PID, syscall.SIGKILL)
			<-s.done
		}
		if t.Failed() {
			t.Logf("sidecar haproxy output:\n%s", s.out.String())
		}
	})
	eventually(t, 10*time.Second, "sidecar HAProxy answers on its master CLI", func() error {
		_, err := process.WorkerPID(context.Background(), s.AdminSock)
		return err
	})
	return s
}

func writePlaceholderConfig(t *testing.T, path string, httpPort int) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(fmt.Sprintf(`global
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend placeholder
  bind 127.0.0.1:%d
  http-request return status 503 content-type text/plain string placeholder
`, httpPort)), 0o644))
}

// showProc returns the master's PID and reload counter and the current
// worker's PID.
func (s *sidecar) showProc(t *testing.T) (master, reloads, worker int) {
	t.Helper()
	c := &runtimeapi.Client{Path: s.AdminSock, Timeout: 5 * time.Second}
	var out string
	eventually(t, 10*time.Second, "show proc on the master CLI", func() error {
		var err error
		out, err = c.Exec(context.Background(), "show proc")
		if err == nil && !strings.Contains(out, "master") {
			err = fmt.Errorf("unexpected reply %q", out)
		}
		return err
	})
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "master" {
			master, _ = strconv.Atoi(f[0])
			reloads, _ = strconv.Atoi(f[2])
		}
	}
	w, err := process.WorkerPID(context.Background(), s.AdminSock)
	must(t, err)
	return master, reloads, w
}

// haproxyChildren lists the router's child processes that run haproxy for
// anything but a configuration check ("haproxy -c").
func haproxyChildren(r *router) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(r.cmd.Process.Pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if strings.Contains(args[0], "haproxy") && !(len(args) > 1 && args[1] == "-c") {
			found = append(found, e.Name()+": "+strings.Join(args, " "))
		}
	}
	return found
}

// TestSidecarModeServesAndReloadsThroughTheMasterSocket runs HAProxy as
// OpenShift 4.23+ does — its own process, started first with the image's
// placeholder configuration, master CLI on run/admin.sock — and the router
// with ROUTER_HAPROXY_ADMIN_UNIX_SOCKET on the same directory: the router
// never starts HAProxy, loads its configuration and reloads through the
// master socket (new worker, same master), changes endpoints through the
// worker's stats socket without a reload, answers its health checks, and
// leaves HAProxy running when it stops.
func TestSidecarModeServesAndReloadsThroughTheMasterSocket(t *testing.T) {
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	edgeCert, err := routeCA.Issue("edge.example.com", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	reencCert, err := routeCA.Issue("reencrypt.example.com", []string{"reencrypt.example.com"}, time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	ptCert, err := backendCA.Issue("passthrough backend", []string{"passthrough.example.com"}, time.Hour)
	must(t, err)

	plain := startBackend(t, "plain")
	plain2 := startBackend(t, "plain-2")
	secure := startTLSBackend(t, "secure", backendCert.CertPEM, backendCert.KeyPEM)
	pt := startTLSBackend(t, "passthrough", ptCert.CertPEM, ptCert.KeyPEM)

	m := newManifests(t)
	services := func(plainBackends ...*backend) string {
		return serviceYAML("apps", "plain", plainBackends...) + "---\n" + serviceYAML("apps", "secure", secure) + "---\n" + serviceYAML("apps", "pt", pt)
	}
	routes := []string{
		routeYAML("apps", "unsecured", "www.example.com", "", "plain", ""),
		routeYAML("apps", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "", map[string]string{
			"certificate": edgeCert.CertPEM, "key": edgeCert.KeyPEM, "caCertificate": routeCA.CertPEM})),
		routeYAML("apps", "passthrough", "passthrough.example.com", "", "pt", tlsYAML("passthrough", "", nil)),
		routeYAML("apps", "reencrypt", "reencrypt.example.com", "", "secure", tlsYAML("reencrypt", "", map[string]string{
			"certificate": reencCert.CertPEM, "key": reencCert.KeyPEM, "destinationCACertificate": backendCA.CertPEM})),
	}
	m.Write("svc.yaml", services(plain))
	m.Write("routes.yaml", strings.Join(routes, "---\n"))

	dir := shortTempDir(t, "sc")
	httpPort, httpsPort := freePort(t), freePort(t)
	sc := startSidecarHAProxy(t, dir, httpPort)
	expectStatus(t, 5*time.Second, func() (response, error) {
		return doRequest(fmt.Sprintf("http://127.0.0.1:%d/", httpPort), "www.example.com", nil)
	}, 503)
	master0, reloads0, worker0 := sc.showProc(t)
	if master0 != sc.PID {
		t.Fatalf("master CLI answered by pid %d, want the sidecar's master %d", master0, sc.PID)
	}

	env, ms := metricsEnv(t)
	env["ROUTER_HAPROXY_ADMIN_UNIX_SOCKET"] = sc.AdminSock
	env["ROUTER_SERVICE_HTTP_PORT"] = strconv.Itoa(httpPort)
	env["ROUTER_SERVICE_HTTPS_PORT"] = strconv.Itoa(httpsPort)
	env["ROUTER_GRACEFUL_SHUTDOWN_DELAY"] = "1s"
	// The framework's own working directory stays unused (and its check
	// that the router's HAProxy processes end with it finds none); the
	// router writes into the sidecar's directory.
	r := startRouter(t, m.Dir, env, "--working-dir", dir)
	r.HTTPPort, r.HTTPSPort = httpPort, httpsPort

	t.Run("every route type is served", func(t *testing.T) {
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.example.com", "/") }, "plain")
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.example.com", "/") }, "plain")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "edge.example.com" {
			t.Errorf("edge: client saw %v, want the route's certificate", subject(resp))
		}
		resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("passthrough.example.com", "/") }, "passthrough")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "passthrough backend" {
			t.Errorf("passthrough: client saw %v, want the backend's certificate", subject(resp))
		}
		resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("reencrypt.example.com", "/") }, "secure")
		if !strings.Contains(resp.Body, "tls=true") {
			t.Errorf("reencrypt: backend saw no TLS: %s", resp.Body)
		}
	})
	waitReady(t, ms)

	master1, reloads1, worker1 := sc.showProc(t)
	t.Run("the router loaded its configuration through the master socket and started no HAProxy", func(t *testing.T) {
		if master1 != master0 || reloads1 <= reloads0 || worker1 == worker0 {
			t.Errorf("master %d reloads %d worker %d, were %d/%d/%d: want the same master reloaded with a new worker",
				master1, reloads1, worker1, master0, reloads0, worker0)
		}
		if kids := haproxyChildren(r); len(kids) > 0 {
			t.Errorf("the router started haproxy processes: %q", kids)
		}
		if _, err := os.Stat(filepath.Join(dir, "run", "master.sock")); err == nil {
			t.Error("run/master.sock exists: the router ran a HAProxy master of its own")
		}
		expectLogLine(t, r, "haproxy reloaded", "sidecar")
	})

	t.Run("/healthz and /healthz/ready answer", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/healthz/ready"} {
			if st, body, err := ms.status(p, false); err != nil || st != 200 {
				t.Errorf("%s: %d %v %.200s", p, st, err, body)
			}
		}
	})

	t.Run("an endpoint change goes through the worker's stats socket without a reload", func(t *testing.T) {
		m.Write("svc.yaml", services(plain, plain2))
		expectExactly(t, 30*time.Second, r, "www.example.com", "plain", "plain-2")
		master, reloads, worker := sc.showProc(t)
		if master != master1 || reloads != reloads1 || worker != worker1 {
			t.Errorf("master %d reloads %d worker %d, were %d/%d/%d: the endpoint change reloaded HAProxy",
				master, reloads, worker, master1, reloads1, worker1)
		}
	})

	t.Run("a route change reloads through the master socket: new worker, same master", func(t *testing.T) {
		_, reloadsBefore, workerBefore := sc.showProc(t)
		m.Write("routes.yaml", strings.Join(append(routes, routeYAML("apps", "added", "added.example.com", "", "secure", "")), "---\n"))
		eventually(t, loadTimeout, "the added route answers", func() error {
			resp, err := r.httpGet("added.example.com", "/")
			if err != nil {
				return err
			}
			// An unsecured route to a TLS backend: HAProxy speaks plain
			// HTTP to it and gets 400; what matters is that the route
			// exists (not 503).
			if resp.Status == 503 {
				return fmt.Errorf("still 503")
			}
			return nil
		})
		master, reloads, worker := sc.showProc(t)
		if master != sc.PID || reloads <= reloadsBefore || worker == workerBefore {
			t.Errorf("master %d reloads %d worker %d, were %d/%d/%d: want the same master with a new worker",
				master, reloads, worker, sc.PID, reloadsBefore, workerBefore)
		}
		if kids := haproxyChildren(r); len(kids) > 0 {
			t.Errorf("the router started haproxy processes: %q", kids)
		}
	})

	t.Run("the router stops after the shutdown delay and leaves HAProxy serving", func(t *testing.T) {
		began := time.Now()
		must(t, r.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Fatal("router did not stop within 20s")
		}
		if d := time.Since(began); d < time.Second {
			t.Errorf("router stopped after %v, before its 1s ROUTER_GRACEFUL_SHUTDOWN_DELAY", d)
		}
		if err := syscall.Kill(sc.PID, 0); err != nil {
			t.Fatalf("sidecar master %d gone after the router stopped: %v", sc.PID, err)
		}
		expectBackend(t, 5*time.Second, func() (response, error) { return r.httpGet("www.example.com", "/") }, "plain")
		expectLogLine(t, r, "HAProxy is left running")
	})
}

// TestGracefulShutdownDelayFailsReadinessWhileServing: on SIGTERM the
// router's readiness fails at once, HAProxy keeps serving routes for
// ROUTER_GRACEFUL_SHUTDOWN_DELAY, then the router stops HAProxy and exits.
func TestGracefulShutdownDelayFailsReadinessWhileServing(t *testing.T) {
	be := startBackend(t, "web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "web", be))
	m.Write("route.yaml", routeYAML("apps", "web", "web.example.com", "", "web", ""))
	env, ms := metricsEnv(t)
	const delay = 4 * time.Second
	env["ROUTER_GRACEFUL_SHUTDOWN_DELAY"] = delay.String()
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("web.example.com", "/") }, "web")
	waitReady(t, ms)
	pids := r.haproxyPIDs()
	if len(pids) == 0 {
		t.Fatal("no haproxy processes found")
	}

	began := time.Now()
	must(t, r.cmd.Process.Signal(syscall.SIGTERM))
	eventually(t, time.Second, "readiness fails after SIGTERM", func() error {
		st, body, err := ms.status("/healthz/ready", false)
		if err != nil || st != 503 {
			return fmt.Errorf("ready: %d %v", st, err)
		}
		if !strings.Contains(body, "terminating") {
			return fmt.Errorf("ready body does not say why: %.300s", body)
		}
		return nil
	})
	// During the rest of the delay: HAProxy serves and liveness holds.
	for time.Since(began) < delay-time.Second {
		if resp, err := r.httpGet("web.example.com", "/"); err != nil || resp.Status != 200 || resp.backend() != "web" {
			t.Fatalf("at %v after SIGTERM the route answered %d %v", time.Since(began).Round(time.Millisecond), resp.Status, err)
		}
		if st, _, err := ms.status("/healthz", false); err != nil || st != 200 {
			t.Fatalf("at %v after SIGTERM /healthz: %d %v", time.Since(began).Round(time.Millisecond), st, err)
		}
		if exited, _ := r.Exited(); exited {
			t.Fatalf("router exited %v after SIGTERM, before the %v delay", time.Since(began), delay)
		}
		time.Sleep(250 * time.Millisecond)
	}
	select {
	case <-r.done:
	case <-time.After(delay + 20*time.Second):
		t.Fatal("router did not exit after the delay")
	}
	if d := time.Since(began); d < delay {
		t.Errorf("router exited %v after SIGTERM, before the %v delay", d, delay)
	}
	if r.exitErr != nil {
		t.Errorf("router exit: %v\n%s", r.exitErr, r.Log())
	}
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("haproxy %d still running after the router exited", pid)
		}
	}
	expectLogLine(t, r, "shutdown requested", "ROUTER_GRACEFUL_SHUTDOWN_DELAY")
}

// TestSidecarStartedAfterTheRouterWroteItsConfiguration: the other start
// order. The router comes up first, writes its configuration and waits for
// the master CLI; HAProxy started afterwards on that configuration is
// picked up (and reloaded once) and serves the routes.
func TestSidecarStartedAfterTheRouterWroteItsConfiguration(t *testing.T) {
	be := startBackend(t, "web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "web", be))
	m.Write("route.yaml", routeYAML("apps", "web", "web.example.com", "", "web", ""))
	dir := shortTempDir(t, "sc")
	env, ms := metricsEnv(t)
	env["ROUTER_HAPROXY_ADMIN_UNIX_SOCKET"] = filepath.Join(dir, "run", "admin.sock")
	r := startRouter(t, m.Dir, env, "--working-dir", dir)
	cfg := filepath.Join(dir, "conf", "haproxy.config")
	eventually(t, loadTimeout, "the router wrote haproxy.config", func() error {
		_, err := os.Stat(cfg)
		return err
	})
	expectLogLine(t, r, "waiting for the haproxy sidecar")
	if st, _, err := ms.status("/healthz/ready", false); err == nil && st == 200 {
		t.Fatal("ready before any HAProxy runs")
	}
	sc := startSidecarHAProxy(t, dir, 0)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("web.example.com", "/") }, "web")
	waitReady(t, ms)
	if master, reloads, _ := sc.showProc(t); master != sc.PID || reloads < 1 {
		t.Errorf("master %d with %d reloads: want the sidecar's master %d, reloaded by the router", master, reloads, sc.PID)
	}
	if kids := haproxyChildren(r); len(kids) > 0 {
		t.Errorf("the router started haproxy processes: %q", kids)
	}
}
