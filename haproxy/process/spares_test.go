package process

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// showBackends asks the runtime API of the fixture's HAProxy for its
// backends.
func showBackends(t *testing.T, f *fixture) string {
	t.Helper()
	c, err := net.DialTimeout("unix", filepath.Join(f.dir, "haproxy.sock"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("show backend\n")); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestSparesFileIsLoadedAtStartReloadAndCheck: the second configuration
// file (Options.SparesPath) is created empty when missing, checked with
// the configuration, and loaded at start and again at every reload.
func TestSparesFileIsLoadedAtStartReloadAndCheck(t *testing.T) {
	requireHAProxy(t)
	f := newFixture(t)
	f.writeConfig(t, 0, "")
	spares := filepath.Join(f.dir, "spares.cfg")
	m := f.manager(t, Options{SparesPath: spares})
	ctx := ctxFor(t, 60*time.Second)

	if err := m.Check(ctx, ""); err != nil {
		t.Fatalf("Check without a spares file: %v", err)
	}
	if _, err := os.Stat(spares); err != nil {
		t.Fatalf("spares file not created: %v", err)
	}
	if err := os.WriteFile(spares, []byte("backend x\n  no-such-keyword\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Check(ctx, ""); err == nil {
		t.Fatal("Check passed a spares file HAProxy refuses: it was not read")
	}
	if err := os.WriteFile(spares, []byte("backend be_spare:0\n  mode http\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := showBackends(t, f); !strings.Contains(got, "be_spare:0") {
		t.Fatalf("backends after start:\n%s", got)
	}
	if err := os.WriteFile(spares, []byte("backend be_spare:1\n  mode http\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	eventuallyTrue(t, 10*time.Second, func() bool { return strings.Contains(showBackends(t, f), "be_spare:1") })
}

func eventuallyTrue(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("not true in time")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
