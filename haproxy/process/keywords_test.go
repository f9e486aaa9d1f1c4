package process

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

func TestScanProcessKeywordsReadsOnlyTheGlobalSections(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want ProcessKeywords
	}{
		{
			name: "OpenShift's style: daemon, nbthread, its own stats socket",
			conf: "global\n  maxconn 50000\n  nbthread 4\n\n  daemon\n  stats socket /var/lib/haproxy/run/haproxy.sock mode 600 level admin expose-fd listeners\n  stats timeout 2m\ndefaults\n  mode http\n",
			want: ProcessKeywords{Daemon: true, NbThread: "4", StatsSockets: []string{"/var/lib/haproxy/run/haproxy.sock"}},
		},
		{
			name: "every keyword, tabs, comments and quotes",
			conf: "global # the process\n\tmaster-worker\n\tpidfile \"/run/my haproxy.pid\" # quoted\n\t# daemon\n\tdaemon\n\tstats socket unix@/tmp/a.sock level admin\n\tstats socket ipv4@127.0.0.1:9999 level admin\n",
			want: ProcessKeywords{Daemon: true, MasterWorker: true, PIDFile: "/run/my haproxy.pid", StatsSockets: []string{"unix@/tmp/a.sock", "ipv4@127.0.0.1:9999"}},
		},
		{
			name: "the same words outside global do not count",
			conf: "defaults\n  daemon\nbackend daemon\n  nbthread 2\nlisten stats\n  stats socket /tmp/x.sock\n  pidfile /tmp/p\n",
			want: ProcessKeywords{},
		},
		{
			name: "a second global section counts",
			conf: "global\n  nbthread 2\nfrontend fe\n  bind :80\nglobal\n  daemon\n",
			want: ProcessKeywords{Daemon: true, NbThread: "2"},
		},
		{
			name: "none",
			conf: "global\n  maxconn 100\n",
			want: ProcessKeywords{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanProcessKeywords(strings.NewReader(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if got.Empty() != reflect.DeepEqual(tc.want, ProcessKeywords{}) {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestUnixSocketPathOfStatsSocketAddresses(t *testing.T) {
	for addr, want := range map[string]string{
		"/var/lib/haproxy/run/haproxy.sock": "/var/lib/haproxy/run/haproxy.sock",
		"unix@/tmp//a.sock":                 "/tmp/a.sock",
		"ipv4@127.0.0.1:9999":               "",
		"127.0.0.1:9999":                    "",
		"abns@router":                       "",
		"run/haproxy.sock":                  "",
	} {
		if got := unixSocketPath(addr); got != want {
			t.Errorf("unixSocketPath(%q) = %q, want %q", addr, got, want)
		}
	}
}

// processKeywordsConfig is a configuration written in the style of
// OpenShift's template with every process keyword: daemon, master-worker, a
// pidfile in a directory that does not exist, nbthread and a stats socket of
// its own in a directory that does not exist yet, beside the router's
// runtime socket.
func processKeywordsConfig(f *fixture, extraSocket string, threads int) string {
	return fmt.Sprintf(`global
  master-worker
  nbthread %d
  daemon
  pidfile /nonexistent-%d/haproxy.pid
  stats socket %s/haproxy.sock mode 600 level admin expose-fd listeners
  stats socket %s mode 600 level admin expose-fd listeners
  stats timeout 2m

defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s

frontend fe
  bind 127.0.0.1:%d
  http-request return status 200 content-type text/plain string ok
`, threads, os.Getpid(), f.dir, extraSocket, f.port)
}

// threadsOf returns the number of threads of pid (/proc/<pid>/status).
func threadsOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no Threads line in /proc/%d/status", pid)
	return 0
}

// parentOf returns the parent PID of pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// TestConfigurationWithProcessKeywordsRunsInTheForeground: a configuration
// that says daemon, master-worker, pidfile, nbthread and binds its own stats
// socket starts, stays the Manager's child across a reload, honours
// nbthread, answers on both stats sockets and stops.
func TestConfigurationWithProcessKeywordsRunsInTheForeground(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	extraDir := filepath.Join(f.dir, "openshift-run")
	extraSocket := filepath.Join(extraDir, "haproxy.sock")
	if err := os.WriteFile(f.cfgPath, []byte(processKeywordsConfig(f, extraSocket, 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	m := f.manager(t, Options{})
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	master := m.MasterPID()
	if ppid := parentOf(t, master); ppid != os.Getpid() {
		t.Fatalf("master %d has parent %d, not the router (%d): it went to the background", master, ppid, os.Getpid())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if body := get(t, client, f.url); body != "ok" {
		t.Fatalf("body %q", body)
	}
	workers := workerPIDs(t, m)
	if n := threadsOf(t, workers[0]); n != 3 {
		t.Errorf("worker runs %d threads, want nbthread 3", n)
	}
	if st, err := os.Stat(extraDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the extra socket's directory: %v %v", st, err)
	}
	for _, sock := range []string{filepath.Join(f.dir, "haproxy.sock"), extraSocket} {
		c := runtimeapi.Client{Path: sock, Timeout: 2 * time.Second}
		if out, err := c.Exec(ctx, "show info"); err != nil || !strings.Contains(out, "Pid: "+strconv.Itoa(workers[0])) {
			t.Errorf("stats socket %s: %v %q", sock, err, out)
		}
	}
	if b, err := os.ReadFile(m.PIDFilePath()); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(master) {
		t.Errorf("router's pid file: %q %v, want %d", b, err, master)
	}

	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if m.MasterPID() != master || !m.Running() || parentOf(t, master) != os.Getpid() {
		t.Fatalf("after reload: master %d (was %d), running %v", m.MasterPID(), master, m.Running())
	}
	after := workerPIDs(t, m)
	if contains(workers, after[0]) {
		t.Fatalf("no new worker: %v then %v", workers, after)
	}
	if body := get(t, client, f.url); body != "ok" {
		t.Fatalf("body after reload %q", body)
	}
	select {
	case err := <-m.Exited():
		t.Fatalf("master exited: %v", err)
	default:
	}
	if err := m.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitGone(t, append([]int{master}, after...), false, 10*time.Second)
}

// TestDaemonConfigurationWithoutDBLeavesTheForeground is the control of the
// test above: run as before -db was added ("-W -S ... -f ... -p ..."), the
// same configuration sends the master into the background and the process
// the router started exits with status 0 at once.
func TestDaemonConfigurationWithoutDBLeavesTheForeground(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	extraSocket := filepath.Join(f.dir, "haproxy-extra.sock")
	if err := os.WriteFile(f.cfgPath, []byte(processKeywordsConfig(f, extraSocket, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(f.dir, "haproxy.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "haproxy", "-W", "-S", filepath.Join(f.dir, "master.sock")+",mode,600", "-f", f.cfgPath, "-p", pidFile)
	out, err := cmd.CombinedOutput()
	// Whatever went to the background is ended by PID.
	defer func() {
		if b, rerr := os.ReadFile(pidFile); rerr == nil {
			if pid, aerr := strconv.Atoi(strings.TrimSpace(string(b))); aerr == nil && pid > 0 {
				p, _ := os.FindProcess(pid)
				_ = p.Kill()
				waitGone(t, []int{pid}, true, 10*time.Second)
			}
		}
	}()
	if err != nil {
		t.Fatalf("haproxy without -db: %v\n%s", err, out)
	}
	if ctx.Err() != nil {
		t.Fatal("haproxy without -db stayed in the foreground: the control shows nothing")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no pid file of the backgrounded master: %v", err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == cmd.Process.Pid {
		t.Fatalf("the pid file names the exited process %d", pid)
	}
}

// TestStopDuringAReloadSoftStopsTheNewWorker: a stop that comes while a
// reload is under way (the router shutting down right after a route change)
// soft-stops the worker the reload just forked too, so HAProxy exits at once
// rather than after StopTimeout. Signalled through the master alone, a
// worker forked moments before the SIGUSR1 missed it and served until the
// SIGTERM.
func TestStopDuringAReloadSoftStopsTheNewWorker(t *testing.T) {
	requireHAProxy(t)
	for round := 0; round < 4; round++ {
		f := newFixture(t)
		f.writeConfig(t, 0, "")
		m := f.manager(t, Options{StopTimeout: 8 * time.Second})
		if err := m.Start(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatalf("Start: %v", err)
		}
		reloadCtx, cancel := context.WithTimeout(context.Background(), time.Duration(20+round*40)*time.Millisecond)
		_ = m.Reload(reloadCtx) // cut short while the new worker starts
		cancel()
		started := time.Now()
		if err := m.Stop(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if d := time.Since(started); d > 4*time.Second {
			t.Fatalf("round %d: Stop during a reload took %v: a worker missed the soft stop", round, d.Round(time.Millisecond))
		}
	}
}
