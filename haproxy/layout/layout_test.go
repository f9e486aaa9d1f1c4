package layout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestPathsAreUnderTheWorkingDirectory(t *testing.T) {
	l := New("/var/lib/haproxy")
	for _, tc := range []struct{ got, want string }{
		{l.Config(), "/var/lib/haproxy/conf/haproxy.config"},
		{l.Conf(), "/var/lib/haproxy/conf"},
		{l.DefaultCertificate(), "/var/lib/haproxy/conf/default_pub_keys.pem"},
		{l.Run(), "/var/lib/haproxy/run"},
		{l.RuntimeSocket(), "/var/lib/haproxy/run/haproxy.sock"},
		{l.PIDFile(), "/var/lib/haproxy/run/haproxy.pid"},
		{l.Certs(), "/var/lib/haproxy/router/certs"},
		{l.CACerts(), "/var/lib/haproxy/router/cacerts"},
		{l.Allowlists(), "/var/lib/haproxy/router/allowlists"},
		{l.MTLS(), "/var/lib/haproxy/mtls/latest"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestCheckSocketPathsRejectsALongWorkingDirectory(t *testing.T) {
	if err := New("/var/lib/haproxy").CheckSocketPaths(); err != nil {
		t.Fatalf("short directory refused: %v", err)
	}
	long := "/" + strings.Repeat("d", 90)
	if err := New(long).CheckSocketPaths(); err == nil {
		t.Fatalf("%d-character directory accepted", len(long))
	}
}

func TestPrepareCreatesTheDirectoriesHAProxyReads(t *testing.T) {
	l := New(t.TempDir())
	if err := l.Prepare(logr.Discard()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.Conf(), l.Run(), l.Certs(), l.CACerts()} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := New(blocker).Prepare(logr.Discard()); err == nil {
		t.Error("Prepare under a file succeeded")
	}
}

// TestPrepareRestrictsTheDirectoriesToTheRoutersUser: the directories of
// haproxy.config (which holds STATS_PASSWORD) and of the certificates are
// open to the router's user only, also when they exist already with wider
// modes (an image's); the working directory itself is left as it is.
func TestPrepareRestrictsTheDirectoriesToTheRoutersUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l := New(dir)
	if err := os.MkdirAll(l.Certs(), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Certs(), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare(logr.Discard()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.Conf(), l.Run(), filepath.Dir(l.Certs()), l.Certs(), l.CACerts()} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != DirMode {
			t.Errorf("%s: mode %v (%v), want %v", d, st.Mode().Perm(), err, DirMode)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("working directory: mode %v (%v), want it left at 0755", st.Mode().Perm(), err)
	}
}
