package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeMaster is a scripted HAProxy master CLI.
type fakeMaster struct {
	mu sync.Mutex
	// down makes every command fail to connect while > 0 (decremented per
	// attempt); downForever makes it fail always.
	down        int
	downForever bool
	masterPID   int
	reloads     int
	failed      int
	workers     []int
	nextWorker  int
	// reloadReply is the reply to "reload" (HAProxy 2.6: "").
	reloadReply string
	// reloadOutcome says what a reload does to the process list: "ok"
	// (a new worker), "fail" (failed counter up), "stuck" (nothing ever
	// changes), "restart" (a new master PID).
	reloadOutcome string
	// lag is how many "show proc" after a reload still fail to connect
	// (the master re-executing), then how many show the old state.
	lagRefused, lagStale int
	pending              func()
	commands             []string
}

func newFakeMaster() *fakeMaster {
	return &fakeMaster{masterPID: 100, workers: []int{101}, nextWorker: 102, reloadOutcome: "ok"}
}

func dialRefused() error {
	return fmt.Errorf("runtime API x: command \"show proc\": connect: %w",
		&net.OpError{Op: "dial", Net: "unix", Err: syscall.ECONNREFUSED})
}

func (f *fakeMaster) Exec(ctx context.Context, command string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commands = append(f.commands, command)
	if f.downForever {
		return "", dialRefused()
	}
	if f.down > 0 {
		f.down--
		return "", dialRefused()
	}
	switch command {
	case "show proc":
		if f.pending != nil {
			if f.lagRefused > 0 {
				f.lagRefused--
				return "", dialRefused()
			}
			if f.lagStale > 0 {
				f.lagStale--
				return f.showProc(), nil
			}
			f.pending()
			f.pending = nil
		}
		return f.showProc(), nil
	case "reload":
		switch f.reloadOutcome {
		case "ok":
			f.pending = func() {
				f.reloads++
				f.failed = 0
				f.workers = []int{f.nextWorker}
				f.nextWorker++
			}
		case "fail":
			f.pending = func() { f.reloads++; f.failed++ }
		case "restart":
			f.pending = func() { f.masterPID += 1000; f.reloads = 0; f.workers = []int{f.nextWorker}; f.nextWorker++ }
		case "stuck":
			f.pending = func() {}
		}
		return f.reloadReply, nil
	}
	return "Unknown command.\n", nil
}

func (f *fakeMaster) showProc() string {
	var b strings.Builder
	b.WriteString("#<PID>          <type>          <reloads>       <uptime>        <version>\n")
	fmt.Fprintf(&b, "%d             master          %d [failed: %d]   0d00h00m10s     2.6.12\n", f.masterPID, f.reloads, f.failed)
	b.WriteString("# workers\n")
	for _, w := range f.workers {
		fmt.Fprintf(&b, "%d             worker          0               0d00h00m01s     2.6.12\n", w)
	}
	b.WriteString("# programs\n\n")
	return b.String()
}

func (f *fakeMaster) count(command string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.commands {
		if c == command {
			n++
		}
	}
	return n
}

func fakeSidecar(t *testing.T, f *fakeMaster, o SidecarOptions) *Sidecar {
	t.Helper()
	o.AdminSocket = "/nonexistent/admin.sock"
	o.CLI = f
	o.Logger = testLogger(t)
	if o.PollInterval == 0 {
		o.PollInterval = time.Millisecond
	}
	if o.ReloadTimeout == 0 {
		o.ReloadTimeout = 2 * time.Second
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 2 * time.Second
	}
	return NewSidecar(o)
}

func TestSidecarReloadOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(f *fakeMaster)
		wantErr    string // "" means success
		wantNoPoll bool   // the reply alone decides
	}{
		{
			name:  "haproxy 2.6: empty reply, new worker after the master re-executes",
			setup: func(f *fakeMaster) { f.lagRefused, f.lagStale = 2, 2 },
		},
		{
			name:    "haproxy 2.6: empty reply, failed counter up and the old worker stays",
			setup:   func(f *fakeMaster) { f.reloadOutcome = "fail"; f.lagRefused = 1 },
			wantErr: "new configuration rejected",
		},
		{
			name:    "haproxy 2.6: a failure after earlier failures is still a failure",
			setup:   func(f *fakeMaster) { f.reloadOutcome = "fail"; f.failed = 3 },
			wantErr: "4 failed reloads in a row",
		},
		{
			name:       "haproxy 2.7+: Success=1 is success",
			setup:      func(f *fakeMaster) { f.reloadReply = "Success=1\n--\n[NOTICE] loaded\n"; f.reloadOutcome = "stuck" },
			wantNoPoll: true,
		},
		{
			name: "haproxy 2.7+: Success=0 is a failure carrying the startup messages",
			setup: func(f *fakeMaster) {
				f.reloadReply = "Success=0\n--\n[ALERT] config : parsing [x:3] : unknown keyword 'frobnicate'\n"
				f.reloadOutcome = "fail"
			},
			wantErr:    "frobnicate",
			wantNoPoll: true,
		},
		{
			name:       "an error text from the master is a failure",
			setup:      func(f *fakeMaster) { f.reloadReply = "Permission denied\n"; f.reloadOutcome = "stuck" },
			wantErr:    "Permission denied",
			wantNoPoll: true,
		},
		{
			name:    "a master that never re-executes times out",
			setup:   func(f *fakeMaster) { f.reloadOutcome = "stuck" },
			wantErr: "waiting for a new worker after reload",
		},
		{
			name:    "a master restarted meanwhile is not taken for a reload",
			setup:   func(f *fakeMaster) { f.reloadOutcome = "restart" },
			wantErr: "master restarted during the reload",
		},
		{
			name:  "a master briefly unreachable before the reload is retried with backoff",
			setup: func(f *fakeMaster) { f.down = 3 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMaster()
			tt.setup(f)
			s := fakeSidecar(t, f, SidecarOptions{ReloadTimeout: 300 * time.Millisecond})
			err := s.Reload(context.Background())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Reload: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Reload succeeded, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Reload error %q does not contain %q", err, tt.wantErr)
			}
			if got := f.count("reload"); got != 1 {
				t.Errorf("sent %d reload commands, want 1", got)
			}
			// One "show proc" before the reload (plus retries of an
			// unreachable master); none after it when the reply decided.
			if polls := f.count("show proc"); tt.wantNoPoll && polls != 1 {
				t.Errorf("%d show proc, want only the one before the reload", polls)
			}
			if s.Problem() != nil {
				t.Errorf("Problem() = %v after the master answered", s.Problem())
			}
		})
	}
}

func TestSidecarUnreachableMasterFailsReloadAndRecovers(t *testing.T) {
	f := newFakeMaster()
	f.downForever = true
	s := fakeSidecar(t, f, SidecarOptions{ConnectTimeout: 200 * time.Millisecond})
	began := time.Now()
	err := s.Reload(context.Background())
	if !errors.Is(err, ErrMasterUnreachable) {
		t.Fatalf("Reload error = %v, want ErrMasterUnreachable", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("gave up after %v, want about the 200ms ConnectTimeout", d)
	}
	if n := f.count("show proc"); n < 2 || n > 10 {
		t.Errorf("%d attempts in 200ms, want a few (backoff from 50ms)", n)
	}
	if f.count("reload") != 0 {
		t.Error("reload sent to an unreachable master")
	}
	if !errors.Is(s.Problem(), ErrMasterUnreachable) {
		t.Errorf("Problem() = %v, want ErrMasterUnreachable (readiness)", s.Problem())
	}

	f.mu.Lock()
	f.downForever = false
	f.mu.Unlock()
	if err := s.Reload(context.Background()); err != nil {
		t.Fatalf("Reload after the master came back: %v", err)
	}
	if s.Problem() != nil {
		t.Errorf("Problem() = %v after a successful reload", s.Problem())
	}
}

func TestSidecarStartWaitsForTheMasterThenLoadsTheConfiguration(t *testing.T) {
	f := newFakeMaster()
	f.down = 4
	s := fakeSidecar(t, f, SidecarOptions{StartTimeout: 3 * time.Second})
	if s.Running() {
		t.Fatal("Running before Start")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !s.Running() {
		t.Fatal("not Running after Start")
	}
	if f.count("reload") != 1 {
		t.Errorf("Start sent %d reloads, want 1 (the sidecar may run a placeholder configuration)", f.count("reload"))
	}
	if s.MasterPID() != 100 {
		t.Errorf("MasterPID = %d", s.MasterPID())
	}
	pids, err := s.WorkerPIDs(context.Background())
	if err != nil || len(pids) != 1 || pids[0] != 102 {
		t.Errorf("WorkerPIDs = %v, %v; want [102]", pids, err)
	}
	// Stop leaves HAProxy alone: it sends nothing.
	before := len(f.commands)
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.commands) != before {
		t.Errorf("Stop sent %q", f.commands[before:])
	}
}

func TestSidecarStartGivesUpWithoutAMaster(t *testing.T) {
	f := newFakeMaster()
	f.downForever = true
	s := fakeSidecar(t, f, SidecarOptions{StartTimeout: 200 * time.Millisecond})
	err := s.Start(context.Background())
	if !errors.Is(err, ErrMasterUnreachable) || !strings.Contains(err.Error(), "/nonexistent/admin.sock") {
		t.Fatalf("Start error = %v, want ErrMasterUnreachable naming the socket", err)
	}
	if s.Running() {
		t.Fatal("Running after a failed Start")
	}
}

func TestSidecarCheckNeedsABinary(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "haproxy.config")
	if err := os.WriteFile(bad, []byte("global\n  frobnicate widgets\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := fakeSidecar(t, newFakeMaster(), SidecarOptions{Binary: filepath.Join(dir, "no-such-haproxy"), ConfigPath: bad})
	if none.Checks() {
		t.Fatal("Checks() with a missing binary")
	}
	if err := none.Check(context.Background(), bad); err != nil {
		t.Fatalf("Check without a binary = %v, want nil (as OpenShift: no check)", err)
	}

	requireHAProxy(t)
	s := fakeSidecar(t, newFakeMaster(), SidecarOptions{Binary: "haproxy", ConfigPath: bad})
	err := s.Check(context.Background(), "")
	var ce *CheckError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("Check of a bad config = %v, want a CheckError naming the bad line", err)
	}
}

// sidecarHAProxy starts HAProxy the way OpenShift's ingress operator starts
// its sidecar container: "haproxy -W -db -S <admin.sock>,mode,600 -f
// <config>". It is ended by PID at cleanup.
func sidecarHAProxy(t *testing.T, f *fixture) (adminSock string, masterPID int) {
	t.Helper()
	adminSock = filepath.Join(f.dir, "admin.sock")
	cmd := exec.Command("haproxy", "-W", "-db", "-S", adminSock+",mode,600", "-f", f.cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGUSR1)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("sidecar haproxy output:\n%s", out.String())
			mu.Unlock()
		}
	})
	return adminSock, cmd.Process.Pid
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// TestSidecarWithRealHAProxy drives a HAProxy 2.6 started as OpenShift's
// sidecar: the first load, a reload (new worker, same master), a rejected
// reload caught by the check and one the master itself refuses (no check),
// and the worker PID through "show proc".
func TestSidecarWithRealHAProxy(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	adminSock, masterPID := sidecarHAProxy(t, f)
	ctx := ctxFor(t, 60*time.Second)

	s := NewSidecar(SidecarOptions{AdminSocket: adminSock, ConfigPath: f.cfgPath, Binary: "haproxy", Logger: testLogger(t), StartTimeout: 20 * time.Second})
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if s.MasterPID() != masterPID {
		t.Errorf("MasterPID = %d, want %d", s.MasterPID(), masterPID)
	}
	w1, err := WorkerPID(ctx, adminSock)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	w2, err := WorkerPID(ctx, adminSock)
	if err != nil {
		t.Fatal(err)
	}
	if w2 == w1 || w2 == masterPID {
		t.Fatalf("worker after reload %d (before %d, master %d): want a new worker", w2, w1, masterPID)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body = %q", body)
	}

	f.writeConfig(t, 0, "  frobnicate widgets\n")
	if err := s.Check(ctx, ""); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("Check of a bad config = %v", err)
	}
	// Without the check (no binary), the master refuses it by itself.
	unchecked := NewSidecar(SidecarOptions{AdminSocket: adminSock, ConfigPath: f.cfgPath, Logger: testLogger(t)})
	began := time.Now()
	err = unchecked.Reload(ctx)
	if err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("Reload of a bad config = %v, want rejected", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("rejection took %v to detect", d)
	}
	if w, _ := WorkerPID(ctx, adminSock); w != w2 {
		t.Errorf("worker after a rejected reload = %d, want the previous %d", w, w2)
	}
	if body := get(t, &http.Client{Timeout: 5 * time.Second}, f.url); body != "ok" {
		t.Fatalf("body after rejected reload = %q", body)
	}
	f.writeConfig(t, 0, "")
	if err := s.Reload(ctx); err != nil {
		t.Fatalf("Reload after fixing the config: %v", err)
	}
	if w, _ := WorkerPID(ctx, adminSock); w == w2 {
		t.Errorf("no new worker after the fixed reload")
	}
}
