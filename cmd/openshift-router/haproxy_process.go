package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/openshift-router-go/router/haproxy/layout"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/process"
	"github.com/openshift-router-go/router/metrics/server"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/controller"
)

// haproxyProcess is HAProxy as the router drives it: started and supervised
// by the router (process.Manager) or running as a sidecar reloaded through
// its master CLI (process.Sidecar).
type haproxyProcess interface {
	controller.Process
	Stop(ctx context.Context) error
	// WorkerPIDs are the current workers (show proc), for haproxy_process_*.
	WorkerPIDs(ctx context.Context) ([]int, error)
}

// newHAProxyProcess returns the sidecar driver when
// ROUTER_HAPROXY_ADMIN_UNIX_SOCKET is set, else the embedded HAProxy.
func newHAProxyProcess(cfg *config.Config, binary, configPath, sparesPath, runDir string, log logr.Logger) (haproxyProcess, func() error) {
	if sock := cfg.Process.HAProxyAdminSocket; sock != "" {
		if !filepath.IsAbs(sock) {
			if abs, err := filepath.Abs(sock); err == nil {
				sock = abs
			}
		}
		if cfg.ReloadScript != "" {
			log.Info("RELOAD_SCRIPT is not run in sidecar mode: HAProxy is reloaded through ROUTER_HAPROXY_ADMIN_UNIX_SOCKET (as OpenShift's router)", "script", cfg.ReloadScript)
		}
		log.Info("sidecar mode: HAProxy runs in its own container; the router writes its files and reloads it through the master CLI", "adminSocket", sock)
		s := process.NewSidecar(process.SidecarOptions{
			AdminSocket: sock,
			ConfigPath:  configPath,
			Binary:      binary,
			Logger:      log,
		})
		return s, s.Problem
	}
	o := embeddedOptions(cfg, binary, configPath, runDir, log)
	o.SparesPath = sparesPath
	return process.New(o), nil
}

// sparesPath is where the spare backends go (ROUTER_SPARE_BACKENDS), or ""
// when there are none: with a RELOAD_SCRIPT or a sidecar HAProxy, HAProxy
// runs with arguments of its own and would not load them.
func sparesPath(cfg *config.Config, wd layout.Layout) string {
	if cfg.SpareBackends == 0 || cfg.ReloadScript != "" || cfg.Process.HAProxyAdminSocket != "" {
		return ""
	}
	return wd.Spares()
}

// embeddedOptions are the options of the HAProxy the router runs itself.
func embeddedOptions(cfg *config.Config, binary, configPath, runDir string, log logr.Logger) process.Options {
	return process.Options{
		Binary:        binary,
		ConfigPath:    configPath,
		RunDir:        runDir,
		Logger:        log,
		ReloadScript:  cfg.ReloadScript,
		ReloadTimeout: reloadWait(cfg.Process.MaxReloadWaitTime),
		StopTimeout:   softStopTimeout(cfg.Process.MaxShutdownTimeout),
	}
}

// reloadWait is MAX_RELOAD_WAIT_TIME as the Manager's ReloadTimeout: 0
// (OpenShift's script then checks once) is one second here, the shortest
// wait that sees a new worker reliably.
func reloadWait(d time.Duration) time.Duration {
	return max(d, time.Second)
}

// softStopTimeout is ROUTER_MAX_SHUTDOWN_TIMEOUT as the Manager's
// StopTimeout: 0 stops HAProxy hard at once, as OpenShift's script does
// with 0 (the Manager reads 0 as its default, hence a nanosecond).
func softStopTimeout(d time.Duration) time.Duration {
	return max(d, time.Nanosecond)
}

// stopBound bounds the whole of stopping HAProxy at exit: the soft stop
// (ROUTER_MAX_SHUTDOWN_TIMEOUT) and the Manager's SIGTERM and SIGKILL steps
// (5 s each).
func stopBound(cfg *config.Config) time.Duration {
	return cfg.Process.MaxShutdownTimeout + 15*time.Second
}

// processGate adds to the controller's readiness what the process knows:
// not ready once shutdown began (ROUTER_GRACEFUL_SHUTDOWN_DELAY) or while
// the HAProxy sidecar's master CLI does not answer.
type processGate struct {
	readiness
	draining atomic.Bool
	problem  func() error // nil or the sidecar's Problem
}

// NotReady returns why the router must not get new traffic, or nil.
func (g *processGate) NotReady() error {
	if g.draining.Load() {
		return errors.New("process is terminating (ROUTER_GRACEFUL_SHUTDOWN_DELAY)")
	}
	if g.problem != nil {
		return g.problem()
	}
	return nil
}

// processRunningCheck is the readiness check of processGate: shutdown
// under way (OpenShift's "process-running" fails then too; the metrics
// server's own check of that name covers the server) or a sidecar HAProxy
// whose master does not answer.
func processRunningCheck(r readiness) server.Check {
	return server.Check{Name: "haproxy-process", Run: func(context.Context) error {
		if g, ok := r.(interface{ NotReady() error }); ok {
			return g.NotReady()
		}
		return nil
	}}
}

// drain fails readiness and waits delay with HAProxy still serving, so that
// load balancers take the router out of rotation before it stops. It ends
// early when the router fails (errc) or parent is cancelled; the returned
// error is the router's failure, if any.
func (g *processGate) drain(parent context.Context, log logr.Logger, delay time.Duration, errc <-chan error) error {
	g.draining.Store(true)
	log.Info(fmt.Sprintf("shutdown requested: readiness fails now; waiting %s (ROUTER_GRACEFUL_SHUTDOWN_DELAY) for new connections to cease while HAProxy keeps serving", delay))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-parent.Done():
		return nil
	case err := <-errc:
		return err
	}
}
