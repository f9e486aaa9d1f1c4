package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
)

// startHAProxy runs a real HAProxy (foreground, no master-worker) with an
// admin stats socket and returns the socket path. The process is killed by
// PID and reaped in t.Cleanup.
func startHAProxy(t *testing.T) string {
	t.Helper()
	bin := prereq.NeedBinary(t, "haproxy")
	// os.MkdirTemp rather than t.TempDir: unix socket paths must stay
	// below 108 bytes.
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	sock := filepath.Join(dir, "admin.sock")
	cfg := fmt.Sprintf(`global
  stats socket %s mode 600 level admin

defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s

frontend fe
  bind 127.0.0.1:%d
  http-request return status 200 content-type text/plain string ok
`, sock, port)
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	cmd := exec.Command(bin, "-f", cfgPath)
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-waitErr:
		case <-time.After(10 * time.Second):
			t.Errorf("haproxy pid %d did not exit after SIGKILL", cmd.Process.Pid)
		}
	})

	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return sock
		}
		select {
		case err := <-waitErr:
			t.Fatalf("haproxy exited early: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats socket %s not ready after 10s: %v", sock, err)
		}
	}
}

func TestExecAgainstHAProxy(t *testing.T) {
	sock := startHAProxy(t)
	c := &Client{Path: sock, Timeout: 5 * time.Second}
	ctx := context.Background()

	t.Run("show info", func(t *testing.T) {
		out, err := c.Exec(ctx, "show info")
		if err != nil {
			t.Fatalf("show info: %v", err)
		}
		if !strings.Contains(out, "Version:") {
			t.Fatalf("show info reply has no Version: line:\n%s", out)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		out, err := c.Exec(ctx, "frobnicate the widgets")
		if err != nil {
			t.Fatalf("unexpected transport error: %v", err)
		}
		if !strings.Contains(out, "Unknown command") {
			t.Fatalf("expected HAProxy's error text, got:\n%s", out)
		}
	})

	t.Run("repeated calls", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			out, err := c.Exec(ctx, "show info")
			if err != nil || !strings.Contains(out, "Version:") {
				t.Fatalf("call %d: err=%v out=%q", i, err, out)
			}
		}
	})

	t.Run("refused commands", func(t *testing.T) {
		for _, cmd := range []string{
			"show info\nshutdown frontend fe",
			"show info\rshutdown frontend fe",
			"show info; shutdown frontend fe",
			"show info\x00",
			"",
			"   ",
		} {
			_, err := c.Exec(ctx, cmd)
			if !errors.Is(err, ErrInvalidCommand) {
				t.Errorf("Exec(%q) = %v, want ErrInvalidCommand", cmd, err)
			}
		}
		// The frontend must still be there: nothing was sent.
		out, err := c.Exec(ctx, "show stat")
		if err != nil || !strings.Contains(out, "fe,FRONTEND") {
			t.Fatalf("frontend missing after refused commands: err=%v\n%s", err, out)
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.Exec(cctx, "show info"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Exec with cancelled ctx = %v, want context.Canceled", err)
		}
	})
}

func TestExecMissingSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "nope.sock")
	c := &Client{Path: path}
	_, err = c.Exec(context.Background(), "show info")
	if err == nil {
		t.Fatal("expected an error for a missing socket")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "show info") {
		t.Fatalf("error should name the socket path and command: %v", err)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error should wrap ENOENT: %v", err)
	}
}

// TestExecTimeout checks that a server that never answers does not hang Exec.
func TestExecTimeout(t *testing.T) {
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mute.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	defer func() {
		select {
		case c := <-accepted:
			c.Close()
		default:
		}
	}()

	c := &Client{Path: path, Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err = c.Exec(context.Background(), "show info")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec against a mute server = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Exec took %v despite a 200ms timeout", d)
	}
}

func TestValidateCommand(t *testing.T) {
	for cmd, ok := range map[string]bool{
		"show info":                     true,
		"set server be/s1 state ready":  true,
		"@1 show info":                  true,
		"show info\n":                   false,
		"a;b":                           false,
		"a\rb":                          false,
		"":                              false,
		"set map #1 key value;injected": false,
		// an escaped ';' is part of an argument
		`set map #1 key max-age=1\;preload`: true,
		`set map #1 key value\\;injected`:   false,
		";show info":                        false,
	} {
		err := validateCommand(cmd)
		if (err == nil) != ok {
			t.Errorf("validateCommand(%q) = %v, want ok=%v", cmd, err, ok)
		}
	}
}
