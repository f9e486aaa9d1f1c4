package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
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

	t.Run("sized replies are the replies", func(t *testing.T) {
		want, err := c.Exec(ctx, "show stat")
		if err != nil || !strings.Contains(want, "fe,FRONTEND") {
			t.Fatalf("show stat: err=%v\n%s", err, want)
		}
		// A hint too small, about right, and far too large: the same reply.
		for _, hint := range []int{0, 10, len(want), 10 * len(want)} {
			got, err := c.ExecSized(ctx, "show stat", hint)
			if err != nil || !sameStatRows(got, want) {
				t.Errorf("ExecSized(hint %d) = %v\n%s\nwant the rows of\n%s", hint, err, got, want)
			}
		}
		if _, err := c.ExecSized(ctx, "show stat; shutdown frontend fe", 100); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("ExecSized of two commands = %v, want ErrInvalidCommand", err)
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

// sameStatRows compares two "show stat" replies by their rows' proxy,
// server and type (the counters move between two asks).
func sameStatRows(a, b string) bool {
	key := func(text string) []string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			f := strings.Split(l, ",")
			if len(f) > 32 {
				out = append(out, f[0]+","+f[1]+","+f[32])
			}
		}
		return out
	}
	ka, kb := key(a), key(b)
	return len(ka) > 0 && strings.Join(ka, "\n") == strings.Join(kb, "\n")
}

func TestReadStringReadsEverythingWhateverTheHint(t *testing.T) {
	text := strings.Repeat("be_http:ns:route,BACKEND,0,0,1,2\n", 80000) // 2.6 MB: three chunks
	for _, hint := range []int{-1, 0, 1, len(text) - 1, len(text), len(text) + 1, 4 * len(text)} {
		got, err := ReadString(strings.NewReader(text), hint)
		if err != nil || got != text {
			t.Errorf("hint %d: %d bytes, err %v; want %d bytes", hint, len(got), err, len(text))
		}
	}
	// What reading allocates: about the text with the right hint, about
	// twice the text without one (a buffer grown as the text arrives
	// would allocate about five times the text).
	// And for the short replies most commands get, without a hint: about
	// the reply, not a chunk of a megabyte.
	for _, tc := range []struct {
		text string
		hint int
		most float64 // bytes allocated, at most
	}{
		{text, len(text), 1.1 * float64(len(text))},
		{text, 0, 2.5 * float64(len(text))},
		{text[:100], 0, 1024},
		{text[:600], 0, 6 << 10},
		{text[:4000], 0, 16 << 10},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, _ := ReadString(struct{ io.Reader }{strings.NewReader(tc.text)}, tc.hint) // read as from a socket
		runtime.ReadMemStats(&after)
		if n := float64(after.TotalAlloc - before.TotalAlloc); got != tc.text || n > tc.most {
			t.Errorf("%d bytes, hint %d: %.0f bytes allocated, want at most %.0f", len(tc.text), tc.hint, n, tc.most)
		}
	}
	got, err := ReadString(iotest.TimeoutReader(strings.NewReader(text)), len(text))
	if err == nil || !strings.HasPrefix(text, got) {
		t.Errorf("a failing read: %d bytes, err %v; want what was read and the error", len(got), err)
	}
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
