package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkingDirectoryIsTheRoutersUserOnly: haproxy.config (which holds
// STATS_PASSWORD in clear), the map files, the routes' certificates and
// keys, and the directories holding them, as the running router writes
// them, are open to the router's user only (HAProxy runs as the same
// user): 0600 files, 0700 directories — also after a change rewrites them.
func TestWorkingDirectoryIsTheRoutersUserOnly(t *testing.T) {
	be := startEnvBackend(t, "modes")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, map[string]string{
		"ROUTER_METRICS_TYPE": "", // HAProxy's stats page, with the password in haproxy.config
		"STATS_PORT":          fmt.Sprint(freePort(t)),
		"STATS_USERNAME":      "admin",
		"STATS_PASSWORD":      "s3cret-modes",
	})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.env.test", "/") }, "modes")
	check := func(t *testing.T) {
		config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
		must(t, err)
		if !strings.Contains(string(config), "s3cret-modes") {
			t.Fatal("haproxy.config does not hold the stats password: the test would prove nothing")
		}
		for _, d := range []string{"conf", "run", "router", "router/certs", "router/cacerts"} {
			if st, err := os.Stat(filepath.Join(r.WorkingDir, d)); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("directory %s: %v (%v), want 0700", d, st.Mode().Perm(), err)
			}
		}
		seen := map[string]bool{}
		for _, top := range []string{"conf", "router"} {
			must(t, filepath.WalkDir(filepath.Join(r.WorkingDir, top), func(p string, d fs.DirEntry, err error) error {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // a temporary file renamed or removed meanwhile
				}
				if err != nil {
					return err
				}
				info, err := d.Info()
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(r.WorkingDir, p)
				switch {
				case d.IsDir() && info.Mode().Perm() != 0o700:
					t.Errorf("directory %s: %v, want 0700", rel, info.Mode().Perm())
				case info.Mode().IsRegular() && info.Mode().Perm() != 0o600:
					t.Errorf("file %s: %v, want 0600", rel, info.Mode().Perm())
				}
				seen[filepath.Dir(rel)] = seen[filepath.Dir(rel)] || info.Mode().IsRegular()
				return nil
			}))
		}
		if !seen["conf"] || !seen[filepath.Join("router", "certs")] {
			t.Errorf("no files seen in conf/ and router/certs/: %v", seen)
		}
	}
	check(t)
	// A change: the maps and haproxy.config are written again.
	m.Write("more.yaml", routeYAML("env", "more", "more.env.test", "", "web", ""))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("more.env.test", "/") }, "modes")
	check(t)
}
