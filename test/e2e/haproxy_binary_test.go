package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

// TestRoutersRunTheHAProxyUnderTest proves that the routers the tests start
// run the haproxy named by HAPROXY (haproxy from PATH when it is unset), the
// master and every worker, also after a reload, and that it is the version
// that binary reports: the HAProxy 3.0 run of `make test` tests HAProxy 3.0.
// HAProxy loads the default template's configuration without a warning
// (HAProxy 3.0 warns about things 2.6 took silently).
func TestRoutersRunTheHAProxyUnderTest(t *testing.T) {
	want := os.Getenv(haproxyEnv)
	if want == "" {
		p, err := exec.LookPath("haproxy")
		must(t, err)
		want = p
	}
	want, err := filepath.Abs(want)
	must(t, err)
	want, err = filepath.EvalSymlinks(want)
	must(t, err)
	wantVersion, err := haproxyVersion(want)
	must(t, err)

	be := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "one", be))
	m.Write("routes.yaml", routeYAML("apps", "first", "first.example.com", "", "one", "")+"---\n"+
		routeYAML("apps", "edge", "edge.example.com", "", "one", tlsYAML("edge", "Redirect", nil))+"---\n"+
		routeYAML("apps", "pt", "pt.example.com", "", "one", tlsYAML("passthrough", "", nil)))
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("first.example.com", "/") }, "one")

	check := func(t *testing.T) {
		t.Helper()
		// A reload may be under way (the router's first configuration
		// has no routes; the master re-executes itself and is not
		// listed meanwhile): wait a little for master and worker.
		pids := r.haproxyPIDs()
		for deadline := time.Now().Add(10 * time.Second); len(pids) < 2 && time.Now().Before(deadline); pids = r.haproxyPIDs() {
			time.Sleep(50 * time.Millisecond)
		}
		if len(pids) < 2 {
			t.Fatalf("want a master and a worker haproxy process, found %v", pids)
		}
		for _, pid := range pids {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil {
				continue // ended meanwhile (an old worker after a reload)
			}
			if exe != want {
				t.Errorf("haproxy process %d runs %s, want %s", pid, exe, want)
			}
		}
		c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
		info, err := c.Exec(context.Background(), "show info")
		must(t, err)
		if !strings.Contains(info, "\nVersion: "+wantVersion+"\n") {
			t.Errorf("runtime API's show info does not report version %s:\n%.300s", wantVersion, info)
		}
	}
	t.Run("after start", check)

	// A second route's backend is a new proxy: a reload (a new worker from
	// the master, which re-executes itself).
	m.Write("routes.yaml", routeYAML("apps", "first", "first.example.com", "", "one", "")+"---\n"+
		routeYAML("apps", "edge", "edge.example.com", "", "one", tlsYAML("edge", "Redirect", nil))+"---\n"+
		routeYAML("apps", "pt", "pt.example.com", "", "one", tlsYAML("passthrough", "", nil))+"---\n"+
		routeYAML("apps", "second", "second.example.com", "", "one", ""))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("second.example.com", "/") }, "one")
	t.Run("after a reload", check)

	t.Run("no configuration warnings from HAProxy", func(t *testing.T) {
		// The router checks every configuration (haproxy -c) before it
		// loads it and logs each warning at -v 1; the tests run it at -v 2.
		checks := 0
		for _, l := range strings.Split(r.Log(), "\n") {
			if strings.Contains(l, `"haproxy config check passed"`) {
				checks++
			}
			if strings.Contains(l, `"haproxy config check warning"`) {
				t.Errorf("HAProxy %s warned: %s", wantVersion, l)
			}
		}
		if checks == 0 {
			t.Errorf("no configuration check logged: cannot tell whether HAProxy warned")
		}
	})
}
