package process

// # HAProxy as a sidecar (ROUTER_HAPROXY_ADMIN_UNIX_SOCKET)
//
// OpenShift 4.23+ runs HAProxy in its own container of the router pod,
// started as
//
//	haproxy -W -db -S /var/lib/haproxy/run/admin.sock,mode,600 -f /var/lib/haproxy/conf/haproxy.config
//
// on a volume it shares with the router. The router then writes the files
// as usual, never starts or signals HAProxy, and reloads it with the master
// CLI command "reload" on the admin socket. Statistics and changes without
// reload keep using the worker's "stats socket" (run/haproxy.sock), which the
// configuration the router writes declares.
//
// What the master CLI "reload" answers (checked by hand and in the tests):
//
//   - HAProxy 2.6 (2.6.12): nothing. The master re-executes itself (same
//     PID) right after reading the command and closes the connection; the
//     socket refuses connections for a few milliseconds meanwhile. Whether
//     the new configuration loaded is only visible in "show proc": the
//     master's reload counter goes up and a new worker is listed under
//     "# workers", or — when the configuration did not load — the counter
//     goes up, "[failed: N]" goes up and the old worker is still the only
//     current one. The reason ([ALERT] lines) goes to HAProxy's own output,
//     i.e. the HAProxy container's log.
//   - HAProxy 2.7 and later: the reload is synchronous and the reply starts
//     with "Success=1" or "Success=0", followed by the startup messages.
//
// Sidecar.Reload therefore reads "show proc" before the reload, sends
// "reload", trusts a "Success=" reply when there is one, and otherwise polls
// "show proc" (bounded) until a new worker or a failed reload shows up.
//
// Unlike OpenShift's router, which sends "reload" without checking anything,
// Sidecar.Check runs "haproxy -c" on the new configuration when a haproxy
// binary is available to the router, so a configuration HAProxy would refuse
// is rolled back before the sidecar ever sees it.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

const (
	defaultSidecarStartTimeout  = 2 * time.Minute
	defaultSidecarReloadTimeout = time.Minute
	// defaultSidecarConnectTimeout bounds how long a reload waits for an
	// unreachable master CLI before it fails.
	defaultSidecarConnectTimeout = 10 * time.Second
	// Backoff between attempts to reach the master CLI.
	sidecarBackoffMin = 50 * time.Millisecond
	sidecarBackoffMax = time.Second
)

// ErrMasterUnreachable is returned (wrapped) when the master CLI socket of
// the HAProxy sidecar does not answer.
var ErrMasterUnreachable = errors.New("haproxy master CLI unreachable")

// Execer sends one command to a HAProxy master CLI and returns the reply
// (runtimeapi.Client in production). A deadline of ctx bounds the call.
type Execer interface {
	Exec(ctx context.Context, command string) (string, error)
}

// SidecarOptions configures a Sidecar.
type SidecarOptions struct {
	// AdminSocket is the master CLI socket of the HAProxy sidecar
	// (ROUTER_HAPROXY_ADMIN_UNIX_SOCKET).
	AdminSocket string
	// ConfigPath is the haproxy.config the router writes (and the sidecar
	// loads).
	ConfigPath string
	// Binary is a haproxy executable the router can run to check
	// configurations ("haproxy -c") before asking for a reload. When empty
	// or not found, configurations are not checked (as OpenShift's router
	// does not check them in this mode).
	Binary string
	// Logger receives structured logs. Default logr.Discard().
	Logger logr.Logger

	// StartTimeout bounds how long Start waits for the master CLI to
	// answer with a worker. Default 2m.
	StartTimeout time.Duration
	// ReloadTimeout bounds one reload (the master loading the new
	// configuration). Default 1m, OpenShift's timeout of the command.
	ReloadTimeout time.Duration
	// ConnectTimeout bounds how long Reload retries (with backoff) an
	// unreachable master CLI. Default 10s.
	ConnectTimeout time.Duration

	// CLI replaces the master CLI client (tests). Default: a
	// runtimeapi.Client on AdminSocket.
	CLI Execer
	// PollInterval is the pause between "show proc" polls. Default 50ms.
	PollInterval time.Duration
}

// Sidecar drives a HAProxy that runs in its own container (started by
// someone else in master-worker mode with a master CLI socket): Check
// validates configurations, Start and Reload load them through the master
// CLI, Stop leaves HAProxy alone. It implements the controller's Process
// interface. Its methods are safe for concurrent use; Start and Reload are
// serialized.
type Sidecar struct {
	opts    SidecarOptions
	log     logr.Logger
	checker *Manager // nil: no binary, no check

	opMu sync.Mutex

	mu        sync.Mutex
	loaded    bool  // a Start succeeded
	masterPID int   // as last seen in "show proc"
	problem   error // non-nil while the master CLI is unreachable
}

// NewSidecar returns a Sidecar; nothing is contacted yet.
func NewSidecar(o SidecarOptions) *Sidecar {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultSidecarStartTimeout
	}
	if o.ReloadTimeout <= 0 {
		o.ReloadTimeout = defaultSidecarReloadTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultSidecarConnectTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = pollInterval
	}
	if o.CLI == nil {
		// The per-call deadline comes from ctx; this only caps it.
		o.CLI = &runtimeapi.Client{Path: o.AdminSocket, Timeout: o.ReloadTimeout + cliTimeout}
	}
	s := &Sidecar{opts: o, log: o.Logger}
	if o.Binary != "" {
		if bin, err := exec.LookPath(o.Binary); err == nil {
			s.checker = New(Options{Binary: bin, ConfigPath: o.ConfigPath, Logger: o.Logger})
		}
	}
	if s.checker == nil {
		s.log.Info("no haproxy binary available to the router: configurations are not checked before the sidecar reloads them (as OpenShift's router)", "binary", o.Binary)
	}
	return s
}

// AdminSocket is the master CLI socket the Sidecar talks to.
func (s *Sidecar) AdminSocket() string { return s.opts.AdminSocket }

// Checks reports whether Check runs "haproxy -c".
func (s *Sidecar) Checks() bool { return s.checker != nil }

// Check runs "haproxy -c -f configPath" when a haproxy binary is available;
// otherwise it accepts every configuration.
func (s *Sidecar) Check(ctx context.Context, configPath string) error {
	if s.checker == nil {
		return nil
	}
	if configPath == "" {
		configPath = s.opts.ConfigPath
	}
	return s.checker.Check(ctx, configPath)
}

// Start waits (bounded by StartTimeout and ctx) until the sidecar's master
// CLI answers and lists a worker, then has it load the configuration the
// router wrote. HAProxy may have been started before the router wrote its
// first configuration (with a placeholder one) or after: either way it runs
// the router's configuration when Start returns nil.
func (s *Sidecar) Start(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	began := time.Now()
	pl, err := s.waitMaster(ctx, s.opts.StartTimeout, true)
	if err != nil {
		return fmt.Errorf("haproxy sidecar start: %w", err)
	}
	s.log.Info("haproxy sidecar found", "adminSocket", s.opts.AdminSocket, "masterPID", pl.Master.PID,
		"workers", pl.currentPIDs(), "waited", time.Since(began).Round(time.Millisecond))
	if err := s.reload(ctx, pl); err != nil {
		return fmt.Errorf("haproxy sidecar start: %w", err)
	}
	s.mu.Lock()
	s.loaded = true
	s.mu.Unlock()
	return nil
}

// Reload has the sidecar's master load the configuration again and waits
// (bounded by ReloadTimeout and ctx) until a new worker runs it. An
// unreachable master CLI is retried with backoff for up to ConnectTimeout;
// the error then wraps ErrMasterUnreachable. A configuration the master
// refuses is an error; its previous worker keeps serving.
func (s *Sidecar) Reload(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	pl, err := s.waitMaster(ctx, s.opts.ConnectTimeout, false)
	if err != nil {
		return fmt.Errorf("haproxy sidecar reload: %w", err)
	}
	if err := s.reload(ctx, pl); err != nil {
		return fmt.Errorf("haproxy sidecar reload: %w", err)
	}
	return nil
}

// Running reports whether the sidecar has loaded the router's configuration
// once. The router does not supervise the sidecar: an unreachable master
// makes reloads fail (and Problem report it) instead.
func (s *Sidecar) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// Problem returns why the sidecar cannot be reloaded (its master CLI did
// not answer at the last attempt), or nil. For readiness.
func (s *Sidecar) Problem() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.problem
}

// Stop leaves HAProxy running: its own container stops it (the pod's
// SIGTERM reaches it directly).
func (s *Sidecar) Stop(context.Context) error {
	s.log.Info("sidecar mode: HAProxy is left running; its own container stops it", "adminSocket", s.opts.AdminSocket)
	return nil
}

// MasterPID returns the master's PID as last seen, or 0.
func (s *Sidecar) MasterPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterPID
}

// WorkerPIDs returns the PIDs of the current workers followed by those of
// the old workers still finishing their connections ("show proc").
func (s *Sidecar) WorkerPIDs(ctx context.Context) ([]int, error) {
	pl, err := s.showProc(ctx)
	if err != nil {
		return nil, fmt.Errorf("haproxy worker pids: %w", err)
	}
	pids := pl.currentPIDs()
	for _, e := range pl.Old {
		pids = append(pids, e.PID)
	}
	return pids, nil
}

// WorkerPID returns the PID of the current worker of the HAProxy whose
// master CLI socket is masterSocket ("show proc"; the newest one if several
// are listed). It serves the haproxy_process_* metrics in both modes: the
// embedded master's socket is Manager.MasterSocketPath, the sidecar's is
// ROUTER_HAPROXY_ADMIN_UNIX_SOCKET.
func WorkerPID(ctx context.Context, masterSocket string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	c := runtimeapi.Client{Path: masterSocket, Timeout: cliTimeout}
	out, err := c.Exec(ctx, "show proc")
	if err != nil {
		return 0, fmt.Errorf("haproxy worker pid: %w", err)
	}
	pl, err := parseShowProc(out)
	if err != nil {
		return 0, fmt.Errorf("haproxy worker pid: master CLI %s: %w", masterSocket, err)
	}
	if len(pl.Current) == 0 {
		return 0, fmt.Errorf("haproxy worker pid: master CLI %s lists no current worker", masterSocket)
	}
	// The newest worker has lived through the fewest reloads.
	best := pl.Current[0]
	for _, e := range pl.Current[1:] {
		if e.Reloads < best.Reloads {
			best = e
		}
	}
	return best.PID, nil
}

// showProc runs "show proc" once (bounded by cliTimeout).
func (s *Sidecar) showProc(ctx context.Context) (procList, error) {
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	out, err := s.opts.CLI.Exec(ctx, "show proc")
	if err != nil {
		return procList{}, err
	}
	pl, err := parseShowProc(out)
	if err != nil {
		return procList{}, fmt.Errorf("master CLI %s: %w", s.opts.AdminSocket, err)
	}
	return pl, nil
}

// waitMaster polls "show proc" with backoff until the master answers (and
// lists a current worker when needWorker is set), for at most bound. It
// records the outcome for Problem.
func (s *Sidecar) waitMaster(ctx context.Context, bound time.Duration, needWorker bool) (procList, error) {
	deadline := time.Now().Add(bound)
	backoff := sidecarBackoffMin
	attempts := 0
	for {
		attempts++
		pl, err := s.showProc(ctx)
		if err == nil && needWorker && len(pl.Current) == 0 {
			err = errors.New("the master lists no worker yet")
		}
		if err == nil {
			s.mu.Lock()
			s.problem, s.masterPID = nil, pl.Master.PID
			s.mu.Unlock()
			return pl, nil
		}
		if ctx.Err() != nil || !time.Now().Add(backoff).Before(deadline) {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			err = fmt.Errorf("%w at %s after %d attempts in %v: %v", ErrMasterUnreachable, s.opts.AdminSocket, attempts, bound, err)
			s.mu.Lock()
			s.problem = err
			s.mu.Unlock()
			return procList{}, err
		}
		if attempts == 1 || attempts%20 == 0 {
			s.log.Info("waiting for the haproxy sidecar's master CLI", "adminSocket", s.opts.AdminSocket, "err", err.Error())
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff *= 2
		if backoff > sidecarBackoffMax {
			backoff = sidecarBackoffMax
		}
	}
}

// reload sends "reload" and decides whether the new configuration was
// loaded; before is "show proc" from just before.
func (s *Sidecar) reload(ctx context.Context, before procList) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReloadTimeout)
	defer cancel()

	reply, err := s.opts.CLI.Exec(ctx, "reload")
	reply = strings.TrimSpace(reply)
	if err != nil {
		if isConnectError(err) {
			s.mu.Lock()
			s.problem = fmt.Errorf("%w: %v", ErrMasterUnreachable, err)
			s.mu.Unlock()
			return fmt.Errorf("%w: sending reload: %v", ErrMasterUnreachable, err)
		}
		// The command was sent; the master may have re-executed while
		// the reply was read. "show proc" tells.
		s.log.V(1).Info("no complete reply to reload; checking the process list", "err", err.Error())
		reply = ""
	}
	switch {
	case strings.HasPrefix(reply, "Success=1"):
		// HAProxy 2.7+: the reload is done.
		s.log.Info("haproxy reloaded", "mode", "sidecar", "masterPID", before.Master.PID,
			"oldWorkers", before.currentPIDs(), "duration", time.Since(began).Round(time.Millisecond))
		s.log.V(2).Info("haproxy reload output", "output", reply)
		return nil
	case strings.HasPrefix(reply, "Success="):
		return fmt.Errorf("new configuration rejected by the haproxy master, previous worker %v still serving:\n%s",
			before.currentPIDs(), truncate(reply, 8<<10))
	case reply != "":
		// An error text (permission denied, unknown command).
		return fmt.Errorf("unexpected reply of the haproxy master to \"reload\": %s", truncate(reply, 1<<10))
	}
	return s.awaitReload(ctx, before, began)
}

// awaitReload polls "show proc" after a reload that gave no verdict
// (HAProxy 2.6) until a new worker or a failed reload shows up.
func (s *Sidecar) awaitReload(ctx context.Context, before procList, began time.Time) error {
	oldWorkers := map[int]bool{}
	for _, e := range before.Current {
		oldWorkers[e.PID] = true
	}
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a new worker after reload: %w (last: %v)", ctx.Err(), lastErr)
		case <-tick.C:
		}
		// The socket is briefly unavailable while the master re-executes.
		pl, err := s.showProc(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		if pl.Master.PID != before.Master.PID {
			s.mu.Lock()
			s.masterPID = pl.Master.PID
			s.mu.Unlock()
			return fmt.Errorf("the haproxy master restarted during the reload (pid %d, was %d); reloading again", pl.Master.PID, before.Master.PID)
		}
		if pl.Master.Reloads <= before.Master.Reloads {
			lastErr = errors.New("master has not re-executed yet")
			continue
		}
		var fresh []int
		for _, e := range pl.Current {
			if !oldWorkers[e.PID] {
				fresh = append(fresh, e.PID)
			}
		}
		if len(fresh) > 0 {
			s.log.Info("haproxy reloaded", "mode", "sidecar", "masterPID", pl.Master.PID, "workers", fresh,
				"oldWorkers", before.currentPIDs(), "duration", time.Since(began).Round(time.Millisecond))
			return nil
		}
		if pl.MasterFailed > 0 {
			msg := "see the HAProxy container's log for the reason"
			if s.checker == nil {
				msg += " (no haproxy binary here to check configurations first)"
			}
			return fmt.Errorf("new configuration rejected by the haproxy master (%d failed reloads in a row), previous worker %v still serving; %s",
				pl.MasterFailed, pl.currentPIDs(), msg)
		}
		lastErr = errors.New("master re-executed but lists no new worker yet")
	}
}

// isConnectError reports whether err is a failure to connect (nothing was
// sent).
func isConnectError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
