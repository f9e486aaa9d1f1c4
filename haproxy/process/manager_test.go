package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// requireHAProxy fails the test (skips it on the quick path) when no haproxy
// binary is installed.
func requireHAProxy(t *testing.T) {
	t.Helper()
	prereq.NeedBinary(t, "haproxy")
}

// testLogger logs through t.Log until the test's cleanup runs (HAProxy's
// output reader may still log a line after the test ended, and t.Log would
// then panic).
func testLogger(t *testing.T) logr.Logger {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Log(prefix, args)
		}
	}, funcr.Options{Verbosity: 1})
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type fixture struct {
	dir     string // RunDir and config directory
	cfgPath string
	port    int
	url     string
	// noStatsSocket leaves the "stats socket ... expose-fd listeners" line
	// out of the configuration.
	noStatsSocket bool
}

// newFixture makes a short temp dir (unix socket paths must stay under 108
// bytes, which t.TempDir does not guarantee) and a free port.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port := freePort(t)
	return &fixture{
		dir:     dir,
		cfgPath: filepath.Join(dir, "haproxy.config"),
		port:    port,
		url:     fmt.Sprintf("http://127.0.0.1:%d/", port),
	}
}

// writeConfig writes a configuration whose frontend answers "ok" to every
// request (except /slow ones when backendPort is not 0, which go to a
// backend on 127.0.0.1:backendPort). extra is appended verbatim.
func (f *fixture) writeConfig(t *testing.T, backendPort int, extra string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("global\n")
	if !f.noStatsSocket {
		fmt.Fprintf(&b, "  stats socket %s/haproxy.sock mode 600 level admin expose-fd listeners\n", f.dir)
	}
	fmt.Fprintf(&b, `
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s

frontend fe
  bind 127.0.0.1:%d
`, f.port)
	if backendPort == 0 {
		b.WriteString("  http-request return status 200 content-type text/plain string ok\n")
	} else {
		fmt.Fprintf(&b, `  http-request return status 200 content-type text/plain string ok unless { path_beg /slow }
  default_backend be_slow

backend be_slow
  server s1 127.0.0.1:%d
`, backendPort)
	}
	b.WriteString(extra)
	if err := os.WriteFile(f.cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// manager returns a Manager for the fixture, stopped (and, whatever
// happens, its master killed by PID) at the end of the test.
func (f *fixture) manager(t *testing.T, o Options) *Manager {
	t.Helper()
	o.ConfigPath = f.cfgPath
	o.RunDir = f.dir
	o.Logger = testLogger(t)
	m := New(o)
	t.Cleanup(func() {
		pid := m.MasterPID()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Stop(ctx); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
		if pid > 0 && !processGone(pid, false) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// processGone reports whether pid no longer exists. A zombie counts as gone
// when allowZombie is set: orphaned workers are reparented to PID 1, which
// may be slow (or, in some sandboxes, fail) to reap them.
func processGone(pid int, allowZombie bool) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if !allowZombie {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// waitGone waits (bounded) until every pid is gone.
func waitGone(t *testing.T, pids []int, allowZombie bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for !processGone(pid, allowZombie) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still exists after %v", pid, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	return string(body)
}

func workerPIDs(t *testing.T, m *Manager) []int {
	t.Helper()
	pids, err := m.WorkerPIDs(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatalf("WorkerPIDs: %v", err)
	}
	return pids
}

func contains(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

func TestCheck(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 30*time.Second)

	f.writeConfig(t, 0, "")
	if err := m.Check(ctx, f.cfgPath); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if err := m.Check(ctx, ""); err != nil {
		t.Fatalf("valid config (default path) rejected: %v", err)
	}

	bad := filepath.Join(f.dir, "bad.config")
	if err := os.WriteFile(bad, []byte("frontend fe\n  bind 127.0.0.1:1\n  frobnicate widgets\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := m.Check(ctx, bad)
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *CheckError: %v", err, err)
	}
	msg := err.Error()
	for _, want := range []string{"[ALERT]", "frobnicate", bad} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}

	if err := m.Check(ctx, filepath.Join(f.dir, "missing.config")); err == nil {
		t.Fatal("missing config accepted")
	}
}

func TestStartStop(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)

	if m.Running() || m.MasterPID() != 0 {
		t.Fatal("running before Start")
	}
	if _, err := m.WorkerPIDs(ctx); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("WorkerPIDs before Start = %v, want ErrNotRunning", err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	master := m.MasterPID()
	if !m.Running() || master <= 0 {
		t.Fatalf("after Start: Running=%v MasterPID=%d", m.Running(), master)
	}
	workers := workerPIDs(t, m)
	if len(workers) != 1 || workers[0] == master {
		t.Fatalf("workers = %v (master %d), want one worker", workers, master)
	}
	if pidFile, err := os.ReadFile(m.PIDFilePath()); err != nil || strings.TrimSpace(string(pidFile)) != strconv.Itoa(master) {
		t.Errorf("pid file = %q, %v; want %d", pidFile, err, master)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body = %q", body)
	}
	if err := m.Start(ctx); err == nil {
		t.Fatal("second Start succeeded")
	}

	if err := m.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if m.Running() || m.MasterPID() != 0 {
		t.Fatal("still running after Stop")
	}
	// The master reaps its workers and we reap the master: both must be
	// fully gone, not zombies.
	waitGone(t, append([]int{master}, workers...), false, 5*time.Second)
	if _, err := os.Stat(m.MasterSocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("master socket left behind: %v", err)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", f.port), time.Second); err == nil {
		c.Close()
		t.Error("frontend port still accepts connections after Stop")
	}
	select {
	case err := <-m.Exited():
		t.Fatalf("Exited reported a Stop: %v", err)
	default:
	}
	if err := m.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// A stopped Manager can start again.
	if err := m.Start(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body after restart = %q", body)
	}
}

func TestStartInvalidConfig(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "  frobnicate widgets\n")
	m := f.manager(t, Options{})
	start := time.Now()
	err := m.Start(ctxFor(t, 30*time.Second))
	if err == nil {
		t.Fatal("Start with an invalid config succeeded")
	}
	if !strings.Contains(err.Error(), "frobnicate") || !strings.Contains(err.Error(), "[ALERT]") {
		t.Fatalf("error lacks haproxy's alert:\n%v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Start took %v to notice the early exit", d)
	}
	if m.Running() {
		t.Fatal("Running after a failed Start")
	}
	select {
	case err := <-m.Exited():
		t.Fatalf("Exited reported a failed Start: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestReload(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)

	if err := m.Reload(ctx); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Reload before Start = %v, want ErrNotRunning", err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	master := m.MasterPID()
	before := workerPIDs(t, m)

	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	after := workerPIDs(t, m)
	if len(after) == 0 || contains(before, after[0]) {
		t.Fatalf("no new current worker: before %v, after %v", before, after)
	}
	if m.MasterPID() != master {
		t.Fatalf("master PID changed from %d to %d", master, m.MasterPID())
	}
	// The old worker has no connection to finish: it exits promptly.
	waitGone(t, before, false, 10*time.Second)
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body = %q", body)
	}
}

func TestReloadRejectedConfig(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	before := workerPIDs(t, m)

	f.writeConfig(t, 0, "  frobnicate widgets\n")
	start := time.Now()
	err := m.Reload(ctx)
	if err == nil {
		t.Fatal("Reload with an invalid config succeeded")
	}
	if !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("error lacks haproxy's alert:\n%v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failed reload took %v to be detected", d)
	}
	// The previous worker keeps serving.
	if !m.Running() {
		t.Fatal("master gone after a rejected reload")
	}
	if got := workerPIDs(t, m); len(got) == 0 || got[0] != before[0] {
		t.Fatalf("workers after rejected reload = %v, want %v", got, before)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body = %q", body)
	}

	// Fixing the config recovers.
	f.writeConfig(t, 0, "")
	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload after fixing the config: %v", err)
	}
	if got := workerPIDs(t, m); len(got) == 0 || contains(before, got[0]) {
		t.Fatalf("no new worker after fixed reload: %v (before %v)", got, before)
	}
}

// TestReloadNoFailedRequests runs a new-connection-per-request load while
// reloading 10 times: every request must succeed.
func TestReloadNoFailedRequests(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	reloadUnderLoad(t, f)
}

// TestReloadNoFailedRequestsWithoutExposeFD is the same without any stats
// socket in the configuration: in master-worker mode the listening sockets
// are handed over through the worker's socketpair ("-x sockpair@<fd>"), so
// "expose-fd listeners" is not what makes reloads seamless.
func TestReloadNoFailedRequestsWithoutExposeFD(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.noStatsSocket = true
	f.writeConfig(t, 0, "")
	reloadUnderLoad(t, f)
}

func reloadUnderLoad(t *testing.T, f *fixture) {
	t.Helper()
	reloadUnderLoadWith(t, f, f.manager(t, Options{}))
}

func reloadUnderLoadWith(t *testing.T, f *fixture, m *Manager) {
	t.Helper()
	ctx := ctxFor(t, 90*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	const reloads = 10

	l := startLoad(f.url)
	defer l.finish()
	l.waitFor(50, 5*time.Second) // let the load ramp up, then reload under it

	var reloadErr error
	seen := map[int]bool{}
	for _, p := range workerPIDs(t, m) {
		seen[p] = true
	}
	for i := 0; i < reloads; i++ {
		if err := m.Reload(ctx); err != nil {
			reloadErr = fmt.Errorf("reload %d: %w", i+1, err)
			break
		}
		w := workerPIDs(t, m)
		if seen[w[0]] {
			reloadErr = fmt.Errorf("reload %d: current worker %d is not new", i+1, w[0])
			break
		}
		seen[w[0]] = true
		time.Sleep(50 * time.Millisecond)
	}
	duringReloads := l.total()
	time.Sleep(200 * time.Millisecond)
	ok, failed, errs, timedOut := l.finish()

	if reloadErr != nil {
		t.Fatal(reloadErr)
	}
	if timedOut {
		t.Errorf("load hit its %v time bound before the reloads finished", maxLoadTime)
	}
	t.Logf("%d requests ok, %d failed (%d sent by the end of the reloads) across %d reloads", ok, failed, duringReloads, reloads)
	if failed != 0 {
		t.Fatalf("%d requests failed, first errors: %q", failed, errs)
	}
	if duringReloads < 100 {
		t.Fatalf("only %d requests sent during the reloads: load too light to prove anything", duringReloads)
	}
}

const (
	loadClients      = 4
	maxPerClient     = 4000
	maxLoadTime      = 20 * time.Second
	loadRequestPause = time.Millisecond
)

// load is a bounded HTTP load: loadClients goroutines each doing at most
// maxPerClient GETs, each on a new connection, for at most maxLoadTime.
type load struct {
	ok, failed atomic.Int64
	errMu      sync.Mutex
	errs       []string
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	once       sync.Once
	timedOut   bool
}

func startLoad(url string) *load {
	l := &load{}
	l.ctx, l.cancel = context.WithTimeout(context.Background(), maxLoadTime)
	tr := &http.Transport{DisableKeepAlives: true}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for i := 0; i < loadClients; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < maxPerClient && l.ctx.Err() == nil; n++ {
				if err := getOK(client, url); err != nil {
					l.failed.Add(1)
					l.errMu.Lock()
					if len(l.errs) < 5 {
						l.errs = append(l.errs, err.Error())
					}
					l.errMu.Unlock()
				} else {
					l.ok.Add(1)
				}
				time.Sleep(loadRequestPause)
			}
		}()
	}
	return l
}

func getOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("status %d body %q", resp.StatusCode, body)
	}
	return nil
}

func (l *load) total() int64 { return l.ok.Load() + l.failed.Load() }

// waitFor waits (bounded) until n requests were made.
func (l *load) waitFor(n int64, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); l.total() < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the load, waits for its goroutines and returns its counts
// and first errors, and whether it hit its time bound.
func (l *load) finish() (ok, failed int64, errs []string, timedOut bool) {
	l.once.Do(func() {
		l.timedOut = l.ctx.Err() != nil
		l.cancel()
		l.wg.Wait()
	})
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.ok.Load(), l.failed.Load(), append([]string(nil), l.errs...), l.timedOut
}

// TestReloadKeepsInflightRequest checks that a request in flight on a
// keep-alive connection to the old worker completes across a reload.
func TestReloadKeepsInflightRequest(t *testing.T) {
	requireHAProxy(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		// A slow backend: answer once the test has reloaded, after at
		// least a second, and in any case within 10s.
		time.Sleep(time.Second)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "slow")
	}))
	defer backend.Close()
	backendPort := backend.Listener.Addr().(*net.TCPAddr).Port

	f := newFixture(t)
	f.writeConfig(t, backendPort, "")
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	oldWorkers := workerPIDs(t, m)

	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	// Open the keep-alive connection (to the old worker).
	if body := get(t, client, f.url+"fast"); body != "ok" {
		t.Fatalf("body = %q", body)
	}

	type result struct {
		body string
		err  error
	}
	slow := make(chan result, 1)
	var reused atomic.Bool
	go func() {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, f.url+"slow", nil)
		if err != nil {
			slow <- result{err: err}
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		slow <- result{body: string(b), err: err}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("slow request never reached the backend")
	}
	if !reused.Load() {
		t.Fatal("the slow request did not reuse the keep-alive connection")
	}

	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	during := workerPIDs(t, m)
	if contains(oldWorkers, during[0]) {
		t.Fatalf("no new current worker: %v (old %v)", during, oldWorkers)
	}
	// The old worker is still there, finishing the request.
	for _, p := range oldWorkers {
		if !contains(during, p) {
			t.Fatalf("old worker %d not listed during its in-flight request: %v", p, during)
		}
		if processGone(p, false) {
			t.Fatalf("old worker %d exited with a request in flight", p)
		}
	}
	close(release)

	select {
	case r := <-slow:
		if r.err != nil || r.body != "slow" {
			t.Fatalf("in-flight request across reload: body %q, err %v", r.body, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("in-flight request did not complete")
	}
	waitGone(t, oldWorkers, false, 10*time.Second)
	// The client keeps working (on a new connection, to the new worker).
	if body := get(t, client, f.url+"fast"); body != "ok" {
		t.Fatalf("body after reload = %q", body)
	}
}

func TestReloadScript(t *testing.T) {
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "haproxy.config")
	seen := filepath.Join(dir, "seen")

	okScript := filepath.Join(dir, "ok.sh")
	writeScript(t, okScript, fmt.Sprintf("#!/bin/sh\nprintf '%%s' \"$RELOAD_CONFIG\" > %s\necho reloaded\n", seen))
	m := New(Options{ConfigPath: cfg, RunDir: dir, ReloadScript: okScript, Logger: testLogger(t)})
	if err := m.Reload(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatalf("Reload with a succeeding script: %v", err)
	}
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("script did not run: %v", err)
	}
	if string(got) != cfg {
		t.Fatalf("RELOAD_CONFIG = %q, want %q", got, cfg)
	}

	badScript := filepath.Join(dir, "bad.sh")
	writeScript(t, badScript, "#!/bin/sh\necho 'boom: cannot reload' >&2\nexit 3\n")
	m = New(Options{ConfigPath: cfg, RunDir: dir, ReloadScript: badScript, Logger: testLogger(t)})
	err = m.Reload(ctxFor(t, 30*time.Second))
	if err == nil {
		t.Fatal("Reload with a failing script succeeded")
	}
	for _, want := range []string{"boom: cannot reload", "exit status 3", badScript} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q: %v", want, err)
		}
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
}

func TestMasterKilledReportsExit(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	master := m.MasterPID()
	workers := workerPIDs(t, m)
	exited := m.Exited()

	if err := syscall.Kill(master, syscall.SIGKILL); err != nil {
		t.Fatalf("kill master: %v", err)
	}
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(err.Error(), "unexpectedly") || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("Exited() = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Exited() did not report the killed master")
	}
	if m.Running() || m.MasterPID() != 0 {
		t.Fatal("Running after the master was killed")
	}
	waitGone(t, []int{master}, false, 5*time.Second)
	// The orphaned workers are reparented to PID 1, hence zombies allowed.
	waitGone(t, workers, true, 10*time.Second)
	if err := m.Stop(ctx); err != nil {
		t.Fatalf("Stop after the master died: %v", err)
	}

	// The caller can restart it.
	if err := m.Start(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body after restart = %q", body)
	}
}

func TestNewDefaultsAndValidation(t *testing.T) {
	m := New(Options{})
	if m.opts.Binary != "haproxy" || m.opts.ReloadTimeout != defaultReloadTimeout {
		t.Fatalf("defaults not applied: %+v", m.opts)
	}
	select {
	case <-m.Exited():
		t.Fatal("Exited fired before Start")
	default:
	}
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "ConfigPath") {
		t.Fatalf("Start without ConfigPath = %v", err)
	}
	long := "/tmp/" + strings.Repeat("d", 120)
	m = New(Options{ConfigPath: "/x", RunDir: long})
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "unix socket") {
		t.Fatalf("Start with a too long RunDir = %v", err)
	}
	if err := m.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of a never started Manager: %v", err)
	}
}

func TestParseShowProc(t *testing.T) {
	out := `#<PID>          <type>          <reloads>       <uptime>        <version>      
5135            master          3 [failed: 1]   0d00h11m01s     2.6.12-1+deb12u4
# workers
17148           worker          0               0d00h00m01s     2.6.12-1+deb12u4
# old workers
16420           worker          1               0d00h00m12s     2.6.12-1+deb12u4
16000           worker          2               0d00h00m20s     2.6.12-1+deb12u4
# programs
17000           dataplane       0               0d00h00m20s     -
`
	pl, err := parseShowProc(out)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Master.PID != 5135 || pl.Master.Reloads != 3 || pl.MasterFailed != 1 {
		t.Errorf("master = %+v failed %d", pl.Master, pl.MasterFailed)
	}
	if got := pl.currentPIDs(); len(got) != 1 || got[0] != 17148 {
		t.Errorf("current = %v", got)
	}
	if len(pl.Old) != 2 || pl.Old[0].PID != 16420 || pl.Old[1].PID != 16000 {
		t.Errorf("old = %+v", pl.Old)
	}
	if _, err := parseShowProc("Unknown command.\n"); err == nil {
		t.Error("garbage parsed without error")
	}
}

// TestStopEscalates checks that a soft stop held up by a long request ends
// with a hard stop after StopTimeout, and that nothing is left running.
func TestStopEscalates(t *testing.T) {
	requireHAProxy(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer backend.Close()
	defer close(release)

	f := newFixture(t)
	f.writeConfig(t, backend.Listener.Addr().(*net.TCPAddr).Port, "")
	m := f.manager(t, Options{StopTimeout: 300 * time.Millisecond})
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	master := m.MasterPID()
	workers := workerPIDs(t, m)

	reqDone := make(chan error, 1)
	go func() {
		c := &http.Client{Timeout: 15 * time.Second}
		resp, err := c.Get(f.url + "slow")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		reqDone <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("request never reached the backend")
	}

	start := time.Now()
	if err := m.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v with a 300ms grace period", d)
	}
	waitGone(t, append([]int{master}, workers...), false, 5*time.Second)
	select {
	case err := <-reqDone:
		if err == nil {
			t.Error("the request held by a hard-stopped worker succeeded")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("client not released after the hard stop")
	}
}

func TestHAProxyDoesNotInheritTheRoutersSecrets(t *testing.T) {
	got := haproxyEnv([]string{"PATH=/usr/bin", "DEFAULT_CERTIFICATE=-----BEGIN PRIVATE KEY-----", "STATS_PASSWORD=s", "HAPROXY_X=1", "LANG=C"})
	want := []string{"PATH=/usr/bin", "HAPROXY_X=1", "LANG=C"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestSlowLoadsAreNotFailures: a configuration HAProxy takes longer to
// load than StartTimeout and ReloadTimeout (a backend of 6,000 servers
// with cookies: HAProxy 2.6 compares every cookie with every other one's
// while it loads) is waited for while the master is still loading it, at
// start and at reload, instead of being reported as a failed start or
// reload (at 100,000 routes a reload takes longer than the default 10 s).
func TestSlowLoadsAreNotFailures(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	var slow strings.Builder
	slow.WriteString("\nbackend be_many\n  balance roundrobin\n  cookie SRV insert indirect nocache\n")
	for i := 0; i < 6000; i++ {
		fmt.Fprintf(&slow, "  server s%d 127.0.0.1:%d cookie c%d\n", i, 10000+i%50000, i)
	}
	f.writeConfig(t, 0, slow.String())
	began := time.Now()
	check := exec.Command("haproxy", "-c", "-q", "-f", f.cfgPath)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	load := time.Since(began)
	timeout := load / 4
	t.Logf("haproxy -c took %v; start and reload timeouts %v", load, timeout)
	m := f.manager(t, Options{StartTimeout: timeout, ReloadTimeout: timeout})
	ctx := ctxFor(t, 3*time.Minute)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	before := workerPIDs(t, m)
	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if after := workerPIDs(t, m); len(after) == 0 || contains(before, after[0]) {
		t.Fatalf("no new worker: before %v, after %v", before, after)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body = %q", body)
	}
}
