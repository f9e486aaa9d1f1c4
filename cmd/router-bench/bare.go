package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/openshift-router-go/router/test/freeport"
)

// bareHAProxy is the data plane's reference: a hand-written one-route
// HAProxy (one frontend, one backend, one server, HAProxy's defaults: its
// maxconn derived from the file descriptor limit) on
// the same binary and the same backend as a router's route.
type bareHAProxy struct {
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// bareConfig is the reference configuration: what an operator would
// write by hand to send one host's traffic to one server.
func bareConfig(port int, server string) string {
	return fmt.Sprintf(`global
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:%d
  default_backend be
backend be
  server s %s
`, port, server)
}

// startBareHAProxy starts the reference HAProxy in dir in front of b and
// waits until it listens.
func startBareHAProxy(ctx context.Context, cfg config, dir string, b *backend) (*bareHAProxy, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bare-haproxy.cfg")
	if err := os.WriteFile(path, []byte(bareConfig(ports[0], net.JoinHostPort(b.IP, fmt.Sprint(b.Port)))), 0o644); err != nil {
		return nil, err
	}
	bin := cfg.HAProxy
	if bin == "" {
		bin = "haproxy"
	}
	log, err := os.Create(filepath.Join(dir, "bare-haproxy.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the reference HAProxy: %w", err)
	}
	h := &bareHAProxy{Port: ports[0], cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", h.Port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			cfg.logf("dataplane: reference HAProxy (one frontend, one backend, one server) on %s, pid %d", addr, cmd.Process.Pid)
			return h, nil
		}
		select {
		case <-h.done:
			return nil, fmt.Errorf("the reference HAProxy exited; its log: %s", fileTail(log.Name(), 10))
		case <-ctx.Done():
			h.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.Close()
			return nil, fmt.Errorf("the reference HAProxy does not listen on %s after 10s", addr)
		}
	}
}

// Close stops the reference HAProxy (by its PID) and waits for it.
func (h *bareHAProxy) Close() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}
