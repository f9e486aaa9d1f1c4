// Package process runs and supervises the router's HAProxy in master-worker
// mode: it starts the master as a child of the router, checks configurations,
// performs seamless reloads and stops HAProxy.
//
// # Process model
//
// HAProxy is started as
//
//	haproxy -W -db -S <RunDir>/master.sock,mode,600 -f <ConfigPath> -p <RunDir>/haproxy.pid
//
// without -D and with -db (which overrides a "daemon" keyword of the
// configuration; see keywords.go for every process keyword a template may
// carry), so the master stays in the foreground as a direct child of the
// router (which reaps it and sees it exit) and forks the worker that serves
// traffic. The master runs in its own process group (so a terminal's Ctrl-C
// does not reach it and Stop can, as a last resort, kill the whole group) and
// gets SIGTERM if the router dies (Pdeathsig, from an OS thread kept locked
// for the master's lifetime so that the signal only fires when the router
// really goes away). Master and workers share one pipe for stdout and stderr;
// each line is logged and the last lines are kept for error messages.
//
// The master CLI (-S) is used to watch the processes: "show proc" lists the
// master with its reload counter ("<n> [failed: <m>]"), the current workers
// and the old workers that are still finishing their connections.
//
// # Seamless reloads: findings for HAProxy 2.6
//
// A reload is requested with SIGUSR2 to the master (equivalent to the master
// CLI "reload" command). The master re-executes itself (same PID) with extra
// arguments and forks a new worker. Verified with HAProxy 2.6.12 by reading
// /proc/<new worker>/cmdline after a reload:
//
//	haproxy -sf <old worker PIDs> -x sockpair@3 -W -db -S ... -f ... -p ...
//
// So in master-worker mode HAProxy 2.6 passes -x by itself, and not with the
// stats socket but with "sockpair@<fd>": the master's end of the internal
// socketpair of the current worker, over which the worker always exposes its
// listening sockets. The new process takes over the very same listening
// sockets (same kernel accept queues), so no connection is refused while the
// old worker hands over; the old worker then soft-stops (-sf): it stops
// accepting, finishes in-flight requests and exits. The tests check both: no
// failed request over 10 reloads under a new-connection-per-request load, and
// an in-flight slow request that completes across a reload.
//
// Consequently the Manager adds no -x of its own. The "expose-fd listeners"
// option on the router's stats socket is not needed for master-worker
// reloads; it is harmless and still useful to tools that reload a
// non-master-worker HAProxy with "-x <stats socket>" (e.g. a RELOAD_SCRIPT).
// A test reloads under load with no stats socket at all and still loses no
// request. As a control, classic reloads of a plain (non master-worker)
// HAProxy with "-sf" and no -x, under the same load, reset a few connections
// in most runs.
//
// A reload whose configuration does not load does not kill HAProxy: the
// master logs [ALERT] lines, counts the failure ("[failed: 1]") and stays in
// wait mode with the previous worker still serving. Reload detects this (the
// master's reload counter moved but no new worker appeared) and returns the
// [ALERT] lines. Callers should still run Check before Reload.
//
// Other observations: HAProxy 2.6's master CLI only closes a non-interactive
// session after the client half-closes its side (see package runtimeapi);
// when the master is killed its workers exit by themselves shortly after,
// and the Manager also SIGKILLs whatever is left of the master's process
// group as soon as it has reaped the master (orphaned workers are reparented
// to PID 1, which has to reap them); the master removes neither its socket
// nor its pid file, Stop does.
package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

const (
	masterSocketName = "master.sock"
	pidFileName      = "haproxy.pid" // layout.PIDFile under RunDir

	defaultBinary        = "haproxy"
	defaultStartTimeout  = 30 * time.Second
	defaultReloadTimeout = 10 * time.Second
	defaultStopTimeout   = 10 * time.Second
	// maxConfigLoadTime bounds how long StartTimeout and ReloadTimeout are
	// extended while the master is still loading a configuration (its
	// socket does not answer yet, or it has not re-executed yet): at
	// 100,000 routes HAProxy 2.6 parses for longer than 10 s, and a
	// reload that is merely slow is not a failure.
	maxConfigLoadTime = 5 * time.Minute

	// hardStopTimeout bounds each of the SIGTERM and SIGKILL steps of Stop.
	hardStopTimeout = 5 * time.Second
	// softStopRepeat is how often the soft stop (SIGUSR1) is sent again to
	// the master while it runs.
	softStopRepeat = 250 * time.Millisecond
	pollInterval   = 50 * time.Millisecond
	cliTimeout     = 2 * time.Second
	// maxUnixPath is the longest usable unix socket path on Linux
	// (sizeof(sun_path) - 1).
	maxUnixPath = 107
)

// ErrNotRunning is returned (wrapped) by operations that need a running
// HAProxy master when there is none.
var ErrNotRunning = errors.New("haproxy is not running")

// Options configures a Manager.
type Options struct {
	// Binary is the haproxy executable, looked up in PATH when it has no
	// slash. Default "haproxy".
	Binary string
	// ConfigPath is the haproxy.config the router writes.
	ConfigPath string
	// SparesPath, if set, is a second configuration file HAProxy loads
	// after ConfigPath, at every start, reload and check (the router's
	// spare backends); created empty when missing. Not for a
	// ReloadScript, which runs HAProxy with its own arguments.
	SparesPath string
	// RunDir holds the master socket and the pid file. Keep it short: unix
	// socket paths must be shorter than 108 bytes. It is created if missing.
	RunDir string
	// Logger receives structured logs. Default logr.Discard().
	Logger logr.Logger
	// ReloadScript, if set (RELOAD_SCRIPT), is run by Reload instead of the
	// built-in reload, with RELOAD_CONFIG=<ConfigPath> added to its
	// environment. A non-zero exit is an error carrying its output.
	ReloadScript string

	// StartTimeout bounds how long Start waits for a worker. Default 30s.
	// It is extended, up to 5 minutes in all, while the master is still
	// loading the configuration (its socket does not answer yet).
	StartTimeout time.Duration
	// ReloadTimeout bounds how long Reload waits for a new worker.
	// Default 10s. It is extended, up to 5 minutes in all, while the
	// master is still loading the new configuration (it has not
	// re-executed yet).
	ReloadTimeout time.Duration
	// StopTimeout is the grace period of the soft stop (SIGUSR1) before Stop
	// escalates to SIGTERM and then SIGKILL. Default 10s.
	StopTimeout time.Duration
}

// Manager runs one HAProxy master (and through it its workers). Its methods
// are safe for concurrent use; Start, Reload and Stop are serialized.
type Manager struct {
	opts Options
	log  logr.Logger

	// opMu serializes Start, Reload and Stop.
	opMu sync.Mutex

	mu  sync.Mutex
	run *run // the last started master, nil before the first Start
	// idleExited is what Exited returns before the first Start.
	idleExited chan error
	// keywordSummary is what was last logged about the configuration's
	// process keywords (guarded by opMu).
	keywordSummary string
}

// run is one started master process.
type run struct {
	cmd *exec.Cmd
	pid int
	out *outputLog

	done    chan struct{} // closed once the master has been reaped
	waitErr error         // the master's exit status; set before done is closed
	outDone chan struct{} // closed once all output has been read

	exited chan error // buffered(1): receives an unexpected exit

	// stateMu guards the flags deciding whether an exit is unexpected:
	// only the exit of a master that Start reported as running and that
	// Stop was not asked to stop is sent on exited.
	stateMu  sync.Mutex
	ready    bool // Start returned nil
	stopping bool // Stop (or a failed Start) is stopping it
	gone     bool // onExit has run
}

// markReady records that Start succeeded; false if the master already exited.
func (r *run) markReady() bool {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	if r.gone {
		return false
	}
	r.ready = true
	return true
}

func (r *run) markStopping() {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.stopping = true
}

// markGone records the exit and reports whether it was unexpected.
func (r *run) markGone() (unexpected bool) {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.gone = true
	return r.ready && !r.stopping
}

func (r *run) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// New returns a Manager; nothing is started.
func New(o Options) *Manager {
	if o.Binary == "" {
		o.Binary = defaultBinary
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultStartTimeout
	}
	if o.ReloadTimeout <= 0 {
		o.ReloadTimeout = defaultReloadTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = defaultStopTimeout
	}
	return &Manager{
		opts:       o,
		log:        o.Logger,
		idleExited: make(chan error, 1),
	}
}

// MasterSocketPath is the path of the master CLI socket (<RunDir>/master.sock).
func (m *Manager) MasterSocketPath() string {
	return filepath.Join(m.opts.RunDir, masterSocketName)
}

// PIDFilePath is the path of the pid file the master writes.
func (m *Manager) PIDFilePath() string {
	return filepath.Join(m.opts.RunDir, pidFileName)
}

// Check runs "haproxy -c -f configPath" (ConfigPath when configPath is
// empty). When HAProxy rejects the configuration the error is a *CheckError
// whose message carries HAProxy's [ALERT]/[WARNING] lines.
func (m *Manager) Check(ctx context.Context, configPath string) error {
	if configPath == "" {
		configPath = m.opts.ConfigPath
	}
	if configPath == "" {
		return errors.New("haproxy config check: no configuration path")
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	args := []string{"-c", "-f", configPath}
	if m.opts.SparesPath != "" {
		if err := ensureFile(m.opts.SparesPath); err != nil {
			return fmt.Errorf("haproxy config check: %w", err)
		}
		args = append(args, "-f", m.opts.SparesPath)
	}
	cmd := exec.CommandContext(ctx, m.opts.Binary, args...)
	noTerminal(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return &CheckError{Path: configPath, Output: string(out), Diagnostics: diagnostics(lines), Err: err}
	}
	for _, l := range lines {
		if strings.Contains(l, "[WARNING]") || strings.Contains(l, "[ALERT]") {
			m.log.V(1).Info("haproxy config check warning", "config", configPath, "output", l)
		}
	}
	m.log.V(2).Info("haproxy config check passed", "config", configPath)
	return nil
}

// CheckError is returned by Check when HAProxy rejects a configuration (or
// could not be run).
type CheckError struct {
	Path        string
	Output      string // HAProxy's whole output
	Diagnostics string // the [ALERT]/[WARNING] lines of Output
	Err         error  // the exec error (exit status)
}

func (e *CheckError) Error() string {
	msg := fmt.Sprintf("haproxy config check of %s failed: %v", e.Path, e.Err)
	if e.Diagnostics != "" {
		msg += ":\n" + e.Diagnostics
	}
	return msg
}

func (e *CheckError) Unwrap() error { return e.Err }

// Start starts the master and waits (bounded by StartTimeout and ctx) until
// "show proc" on the master CLI lists a worker. If the master exits early
// the error carries HAProxy's output; if no worker shows up in time HAProxy
// is killed and an error returned. ctx only bounds the wait: it does not
// stop HAProxy once Start has returned nil.
func (m *Manager) Start(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()

	if r := m.current(); r != nil && !r.isDone() {
		return fmt.Errorf("haproxy start: already running (master pid %d)", r.pid)
	}
	if err := m.validateForStart(); err != nil {
		return fmt.Errorf("haproxy start: %w", err)
	}
	bin, err := exec.LookPath(m.opts.Binary)
	if err != nil {
		return fmt.Errorf("haproxy start: %w", err)
	}
	if err := os.MkdirAll(m.opts.RunDir, 0o700); err != nil {
		return fmt.Errorf("haproxy start: create run dir: %w", err)
	}
	// A socket or pid file left by a master that was killed would be
	// misleading (the master replaces them, but only later).
	for _, p := range []string{m.MasterSocketPath(), m.PIDFilePath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("haproxy start: remove stale %s: %w", p, err)
		}
	}

	m.prepareProcessKeywords()
	// -db: a configuration that says "daemon" (OpenShift's template does)
	// must not send the master into the background (keywords.go).
	args := []string{
		"-W", "-db",
		"-S", m.MasterSocketPath() + ",mode,600",
		"-f", m.opts.ConfigPath,
		"-p", m.PIDFilePath(),
	}
	if m.opts.SparesPath != "" {
		// The master reads both again at every reload: the file must
		// stay (the router only replaces it).
		if err := ensureFile(m.opts.SparesPath); err != nil {
			return fmt.Errorf("haproxy start: %w", err)
		}
		args = append(args, "-f", m.opts.SparesPath)
	}
	r, err := m.spawn(bin, args)
	if err != nil {
		return fmt.Errorf("haproxy start: %w", err)
	}
	m.mu.Lock()
	m.run = r
	m.mu.Unlock()
	m.log.Info("haproxy master started", "masterPID", r.pid, "binary", bin, "config", m.opts.ConfigPath)

	workers, err := m.waitReady(ctx, r)
	if err == nil && !r.markReady() {
		err = fmt.Errorf("master (pid %d) exited right after startup (%s)", r.pid, exitStatus(r.waitErr))
	}
	if err != nil {
		if !r.isDone() {
			if kerr := m.stopRun(context.Background(), r, false); kerr != nil {
				err = errors.Join(err, kerr)
			}
		}
		return fmt.Errorf("haproxy start: %w", err)
	}
	m.log.Info("haproxy running", "masterPID", r.pid, "workers", workers)
	return nil
}

func (m *Manager) validateForStart() error {
	if m.opts.ConfigPath == "" {
		return errors.New("no ConfigPath")
	}
	if m.opts.RunDir == "" {
		return errors.New("no RunDir")
	}
	if strings.Contains(m.opts.RunDir, ",") {
		// -S takes "<path>,<bind option>,...".
		return fmt.Errorf("RunDir %q must not contain a comma", m.opts.RunDir)
	}
	if p := m.MasterSocketPath(); len(p) > maxUnixPath {
		return fmt.Errorf("master socket path %q is %d bytes, longer than the %d a unix socket allows; use a shorter RunDir", p, len(p), maxUnixPath)
	}
	return nil
}

// commandTimeout bounds "haproxy -c" and the reload script.
const commandTimeout = 2 * time.Minute

// noTerminal runs cmd in its own session, without a controlling terminal,
// stdin from /dev/null: nothing it runs (OpenSSL asking for a passphrase)
// can wait for input.
func noTerminal(cmd *exec.Cmd) {
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// spawn starts the master and the goroutines that read its output and reap
// it.
func (m *Manager) spawn(bin string, args []string) (*run, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = haproxyEnv(os.Environ())
	cmd.Stdout = pw
	cmd.Stderr = pw
	// Its own session (no controlling terminal: OpenSSL can never prompt
	// for a passphrase) and so its own process group; stdin is /dev/null.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:    true,
		Pdeathsig: syscall.SIGTERM,
	}
	r := &run{
		cmd:     cmd,
		out:     &outputLog{},
		done:    make(chan struct{}),
		outDone: make(chan struct{}),
		exited:  make(chan error, 1),
	}

	started := make(chan error, 1)
	go func() {
		// Pdeathsig is delivered when the OS thread that forked the
		// child exits, not the process. Keep this goroutine (blocked in
		// Wait) on its thread for the master's lifetime so that Go never
		// retires that thread under a running master.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			started <- err
			return
		}
		r.pid = cmd.Process.Pid
		go func() {
			defer close(r.outDone)
			defer pr.Close()
			r.out.drain(pr, m.log.WithValues("masterPID", r.pid))
		}()
		started <- nil
		werr := cmd.Wait()
		m.onExit(r, werr)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("exec %s: %w", bin, err)
	}
	return r, nil
}

// onExit runs once the master has been reaped.
func (m *Manager) onExit(r *run, werr error) {
	// Workers exit by themselves when their master is gone; make sure of
	// it. The group is the master's (Setsid), which only holds processes
	// the master forked; ESRCH when none is left.
	if err := syscall.Kill(-r.pid, syscall.SIGKILL); err == nil {
		m.log.Info("killed haproxy processes left in the master's process group", "masterPID", r.pid)
	}
	r.waitErr = werr
	unexpected := r.markGone()
	close(r.done)

	if !unexpected {
		m.log.V(1).Info("haproxy master exited", "masterPID", r.pid, "status", exitStatus(werr))
		return
	}
	// Give the output reader a moment so that the last lines (often the
	// reason) are in the error.
	select {
	case <-r.outDone:
	case <-time.After(time.Second):
	}
	err := fmt.Errorf("haproxy master (pid %d) exited unexpectedly: %s", r.pid, exitStatus(werr))
	if d := diagnostics(r.out.since(0)); d != "" {
		err = fmt.Errorf("%w; last output:\n%s", err, lastLines(d, 20))
	}
	m.log.Error(err, "haproxy master exited unexpectedly", "masterPID", r.pid)
	r.exited <- err // buffered, only send for this run
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls "show proc" until the master (our child) lists a worker.
func (m *Manager) waitReady(ctx context.Context, r *run) ([]int, error) {
	started := time.Now()
	timeout := time.NewTimer(m.opts.StartTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	loading, logged := false, false
	for {
		pl, err := m.showProc(ctx)
		loading = err != nil
		switch {
		case err != nil:
			lastErr = err
		case pl.Master.PID != r.pid:
			lastErr = fmt.Errorf("master socket %s is served by pid %d, not by our master %d", m.MasterSocketPath(), pl.Master.PID, r.pid)
		case len(pl.Current) > 0:
			return pl.currentPIDs(), nil
		default:
			lastErr = errors.New("master lists no worker yet")
		}
		select {
		case <-r.done:
			select { // the output explains why
			case <-r.outDone:
			case <-time.After(2 * time.Second):
			}
			return nil, fmt.Errorf("master (pid %d) exited during startup (%s):\n%s", r.pid, exitStatus(r.waitErr), diagnostics(r.out.since(0)))
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a worker: %w (last: %v)", ctx.Err(), lastErr)
		case <-timeout.C:
			if m.stillLoading(loading, started, r, &logged) {
				timeout.Reset(m.opts.StartTimeout)
				continue
			}
			return nil, fmt.Errorf("no worker after %v (last: %v); output:\n%s", time.Since(started).Round(time.Second), lastErr, diagnostics(r.out.since(0)))
		case <-tick.C:
		}
	}
}

// stillLoading reports whether a wait that timed out goes on: the master
// is still loading a configuration and has not taken maxConfigLoadTime yet.
// It logs the first extension of a wait (logged).
func (m *Manager) stillLoading(loading bool, started time.Time, r *run, logged *bool) bool {
	if !loading || time.Since(started) >= maxConfigLoadTime {
		return false
	}
	if !*logged {
		*logged = true
		m.log.Info("haproxy is still loading the configuration; waiting longer", "masterPID", r.pid, "waited", time.Since(started).Round(time.Millisecond), "atMost", maxConfigLoadTime)
	}
	return true
}

// Reload performs a seamless reload: it signals the master (SIGUSR2) and
// waits (bounded by ReloadTimeout and ctx) until "show proc" lists a new
// current worker. If HAProxy rejects the new configuration the error carries
// its [ALERT] lines (the previous worker keeps serving). With ReloadScript
// set, the script is run instead. Without a running master (and no script)
// the error wraps ErrNotRunning.
func (m *Manager) Reload(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()

	if m.opts.ReloadScript != "" {
		return m.runReloadScript(ctx)
	}

	r := m.current()
	if r == nil || r.isDone() {
		return fmt.Errorf("haproxy reload: %w", ErrNotRunning)
	}
	seq := r.out.seq()
	before, err := m.signalReload(ctx, r)
	if err != nil {
		return err
	}
	oldWorkers := map[int]bool{}
	for _, e := range before.Current {
		oldWorkers[e.PID] = true
	}
	started := time.Now()

	timeout := time.NewTimer(m.opts.ReloadTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	loading, logged := true, false
	for {
		select {
		case <-r.done:
			return fmt.Errorf("haproxy reload: master (pid %d) exited (%s):\n%s", r.pid, exitStatus(r.waitErr), diagnostics(r.out.since(seq)))
		case <-ctx.Done():
			return fmt.Errorf("haproxy reload: waiting for a new worker: %w (last: %v)", ctx.Err(), lastErr)
		case <-timeout.C:
			if m.stillLoading(loading, started, r, &logged) {
				timeout.Reset(m.opts.ReloadTimeout)
				continue
			}
			return fmt.Errorf("haproxy reload: no new worker after %v (last: %v); output:\n%s", time.Since(started).Round(time.Second), lastErr, diagnostics(r.out.since(seq)))
		case <-tick.C:
		}

		// The socket is unavailable while the master re-executes and
		// loads the new configuration.
		pl, err := m.showProc(ctx)
		if err != nil {
			lastErr, loading = err, true
			continue
		}
		if pl.Master.Reloads <= before.Master.Reloads {
			lastErr, loading = errors.New("master has not re-executed yet"), true
			continue
		}
		loading = false
		var fresh []int
		for _, e := range pl.Current {
			if !oldWorkers[e.PID] {
				fresh = append(fresh, e.PID)
			}
		}
		if len(fresh) > 0 {
			m.log.Info("haproxy reloaded", "masterPID", r.pid, "workers", fresh,
				"oldWorkers", before.currentPIDs(), "duration", time.Since(started).Round(time.Millisecond))
			return nil
		}
		if pl.MasterFailed > 0 {
			// The master is back (in wait mode) with the old worker
			// only: the new configuration did not load.
			return fmt.Errorf("haproxy reload: new configuration rejected, previous worker %v still serving:\n%s",
				pl.currentPIDs(), diagnostics(r.out.since(seq)))
		}
		lastErr = errors.New("master re-executed but lists no new worker yet")
	}
}

// signalReload asks master r to reload (SIGUSR2) once its socket shows
// it is ours, and returns the process list from before.
func (m *Manager) signalReload(ctx context.Context, r *run) (procList, error) {
	before, err := m.showProc(ctx)
	if err != nil {
		return procList{}, fmt.Errorf("haproxy reload: reading process list before reload: %w", err)
	}
	if before.Master.PID != r.pid {
		return procList{}, fmt.Errorf("haproxy reload: master socket %s is served by pid %d, not by our master %d", m.MasterSocketPath(), before.Master.PID, r.pid)
	}
	m.prepareProcessKeywords()
	if err := r.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return procList{}, fmt.Errorf("haproxy reload: signal master pid %d: %w", r.pid, err)
	}
	m.log.V(1).Info("haproxy reload requested", "masterPID", r.pid, "oldWorkers", before.currentPIDs())
	return before, nil
}

func (m *Manager) runReloadScript(ctx context.Context) error {
	script := m.opts.ReloadScript
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	noTerminal(cmd)
	cmd.Env = append(os.Environ(), "RELOAD_CONFIG="+m.opts.ConfigPath)
	cmd.WaitDelay = 5 * time.Second
	started := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		msg := strings.TrimSpace(string(out))
		if len(msg) > 8<<10 {
			msg = "..." + msg[len(msg)-8<<10:]
		}
		return fmt.Errorf("haproxy reload: reload script %s failed: %w; output:\n%s", script, err, msg)
	}
	m.log.Info("haproxy reloaded by script", "script", script, "duration", time.Since(started).Round(time.Millisecond))
	if s := strings.TrimSpace(string(out)); s != "" {
		m.log.V(2).Info("reload script output", "script", script, "output", s)
	}
	return nil
}

// Stop stops HAProxy: a soft stop (SIGUSR1: stop listening, finish the
// running requests) for up to StopTimeout (cut short when ctx ends), then
// SIGTERM (hard stop) and finally SIGKILL to the master's process group.
// When Stop returns nil the master and every worker have exited. Stopping a
// Manager that is not running is a no-op.
func (m *Manager) Stop(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	r := m.current()
	if r == nil {
		return nil
	}
	if r.isDone() {
		m.removeRunFiles()
		return nil
	}
	return m.stopRun(ctx, r, true)
}

// stopRun stops r's master, softly first if soft is set.
func (m *Manager) stopRun(ctx context.Context, r *run, soft bool) error {
	r.markStopping()
	type step struct {
		sig   syscall.Signal
		group bool
		wait  time.Duration
	}
	steps := []step{
		{syscall.SIGTERM, false, hardStopTimeout},
		{syscall.SIGKILL, true, hardStopTimeout},
	}
	if soft {
		// The soft stop is repeated while it runs: a stop that comes
		// during a reload (the router shutting down right after a route
		// change) would otherwise miss the worker the re-executing master
		// forks moments later, which then serves until the SIGTERM
		// (TestStopDuringAReloadSoftStopsTheNewWorker). The master passes
		// each SIGUSR1 on to the workers it knows; a second one changes
		// nothing for a process already stopping. Not to the group: a
		// worker still initialising can crash on it (HAProxy 2.6.12,
		// exit status 139).
		steps = append([]step{{syscall.SIGUSR1, false, m.opts.StopTimeout}}, steps...)
	}
	started := time.Now()
	for _, s := range steps {
		if s.sig == syscall.SIGUSR1 && ctx.Err() != nil {
			continue
		}
		var err error
		if s.group {
			err = syscall.Kill(-r.pid, s.sig)
		} else {
			err = r.cmd.Process.Signal(s.sig)
		}
		if err != nil && !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH) {
			m.log.Error(err, "signalling haproxy", "masterPID", r.pid, "signal", s.sig.String())
		}
		m.log.V(1).Info("signalled haproxy master", "masterPID", r.pid, "signal", s.sig.String())

		t := time.NewTimer(s.wait)
		var ctxDone <-chan struct{}
		if s.sig == syscall.SIGUSR1 {
			ctxDone = ctx.Done() // only the grace period yields to ctx
		}
		var again <-chan time.Time
		if s.sig == syscall.SIGUSR1 {
			tick := time.NewTicker(softStopRepeat)
			defer tick.Stop()
			again = tick.C
		}
	wait:
		for {
			select {
			case <-r.done:
			case <-t.C:
			case <-ctxDone:
			case <-again:
				_ = r.cmd.Process.Signal(s.sig)
				continue
			}
			break wait
		}
		t.Stop()
		if r.isDone() {
			break
		}
		m.log.Info("haproxy master still running, escalating", "masterPID", r.pid, "afterSignal", s.sig.String(), "after", time.Since(started).Round(time.Millisecond))
	}
	if !r.isDone() {
		return fmt.Errorf("haproxy stop: master pid %d did not exit after SIGKILL", r.pid)
	}
	m.removeRunFiles()
	m.log.Info("haproxy stopped", "masterPID", r.pid, "status", exitStatus(r.waitErr), "duration", time.Since(started).Round(time.Millisecond))
	return nil
}

func (m *Manager) removeRunFiles() {
	for _, p := range []string{m.MasterSocketPath(), m.PIDFilePath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Error(err, "removing haproxy run file", "path", p)
		}
	}
}

// Running reports whether a master started by this Manager is alive.
func (m *Manager) Running() bool {
	r := m.current()
	return r != nil && !r.isDone()
}

// MasterPID returns the running master's PID, or 0.
func (m *Manager) MasterPID() int {
	r := m.current()
	if r == nil || r.isDone() {
		return 0
	}
	return r.pid
}

// WorkerPIDs returns the PIDs of the current workers followed by those of
// the old workers still finishing their connections, from the master CLI's
// "show proc".
func (m *Manager) WorkerPIDs(ctx context.Context) ([]int, error) {
	r := m.current()
	if r == nil || r.isDone() {
		return nil, fmt.Errorf("haproxy worker pids: %w", ErrNotRunning)
	}
	pl, err := m.showProc(ctx)
	if err != nil {
		return nil, fmt.Errorf("haproxy worker pids: %w", err)
	}
	pids := pl.currentPIDs()
	for _, e := range pl.Old {
		pids = append(pids, e.PID)
	}
	return pids, nil
}

// Exited returns a channel that receives one error when the master started
// by the last Start exits without Stop having been called (crash, kill,
// worker failure). Each Start makes a new channel, so call Exited after
// Start. Before the first Start the channel never receives.
func (m *Manager) Exited() <-chan error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == nil {
		return m.idleExited
	}
	return m.run.exited
}

func (m *Manager) current() *run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run
}

func (m *Manager) showProc(ctx context.Context) (procList, error) {
	c := runtimeapi.Client{Path: m.MasterSocketPath(), Timeout: cliTimeout}
	out, err := c.Exec(ctx, "show proc")
	if err != nil {
		return procList{}, err
	}
	pl, err := parseShowProc(out)
	if err != nil {
		return procList{}, fmt.Errorf("master CLI %s: %w", m.MasterSocketPath(), err)
	}
	return pl, nil
}

// haproxyEnv is the environment HAProxy runs with: only what it needs
// (PATH, locale, time zone) and HAPROXY_* variables. The router's own
// environment holds secrets (DEFAULT_CERTIFICATE's private key,
// STATS_PASSWORD) that a configuration could otherwise read back with
// %[env(NAME)] or "${NAME}".
func haproxyEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "TZ", name == "LANG", name == "LC_ALL", strings.HasPrefix(name, "HAPROXY_"):
			out = append(out, kv)
		}
	}
	return out
}

// ensureFile creates an empty file at p (the router's user only) unless
// one is there.
func ensureFile(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	return f.Close()
}
