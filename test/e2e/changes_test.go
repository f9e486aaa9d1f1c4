package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/testcerts"
)

// TestEditingManifestsChangesRouting: adding, editing and deleting files
// changes what HAProxy serves within RELOAD_INTERVAL + 2s, without a restart.
func TestEditingManifestsChangesRouting(t *testing.T) {
	v1, v2 := startBackend(t, "v1"), startBackend(t, "v2")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("e", "v1", v1)+"---\n"+serviceYAML("e", "v2", v2))
	m.Write("route.yaml", routeYAML("e", "app", "app.example.com", "", "v1", ""))
	r := startRouter(t, m.Dir, nil) // RELOAD_INTERVAL=1s
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("app.example.com", "/") }, "v1")
	pid := r.cmd.Process.Pid

	const within = 3 * time.Second // RELOAD_INTERVAL + 2s
	t.Run("editing a route switches its service", func(t *testing.T) {
		m.Write("route.yaml", routeYAML("e", "app", "app.example.com", "", "v2", ""))
		expectBackend(t, within, func() (response, error) { return r.httpGet("app.example.com", "/") }, "v2")
	})
	t.Run("adding a file adds a route", func(t *testing.T) {
		m.Write("new.yaml", routeYAML("e", "new", "new.example.com", "", "v1", ""))
		expectBackend(t, within, func() (response, error) { return r.httpGet("new.example.com", "/") }, "v1")
	})
	t.Run("deleting a file removes its route", func(t *testing.T) {
		m.Remove("new.yaml")
		expectStatus(t, within, func() (response, error) { return r.httpGet("new.example.com", "/") }, 503)
	})
	t.Run("changing endpoints moves traffic", func(t *testing.T) {
		m.Write("svc.yaml", serviceYAML("e", "v1", v1)+"---\n"+serviceYAML("e", "v2", v1))
		expectBackend(t, within, func() (response, error) { return r.httpGet("app.example.com", "/") }, "v1")
	})
	if r.cmd.Process.Pid != pid {
		t.Fatal("router restarted")
	}
	if exited, err := r.Exited(); exited {
		t.Fatalf("router exited: %v", err)
	}
}

// TestBadInputLeavesEverythingElseServing: a malformed file and an invalid
// route are reported and skipped; the rest keeps serving.
func TestBadInputLeavesEverythingElseServing(t *testing.T) {
	good := startBackend(t, "good")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("b", "good", good))
	m.Write("good.yaml", routeYAML("b", "good", "good.example.com", "", "good", ""))
	m.Write("broken.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: broken\n  namespace: b\nspec:\n  host: [unterminated\n")
	m.Write("invalid.yaml", routeYAML("b", "invalid", "invalid.example.com", "/a\"b", "good", "")+"---\n"+
		routeYAML("b", "inject", "inject.example.com", "", "good", "  path: \"/x\\n  server evil 127.0.0.1:1\"\n"))
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("good.example.com", "/") }, "good")

	eventually(t, loadTimeout, "malformed file reported with file and line", func() error {
		if !strings.Contains(r.Log(), "broken.yaml:1") {
			return errString("no broken.yaml:1 in log")
		}
		return nil
	})
	for _, host := range []string{"invalid.example.com", "inject.example.com"} {
		resp, err := r.httpGet(host, "/x")
		must(t, err)
		if resp.Status != 503 {
			t.Errorf("%s: invalid route served: %d %q", host, resp.Status, resp.Body)
		}
	}
	eventually(t, 5*time.Second, "invalid route reported in the log", func() error {
		if !strings.Contains(r.Log(), "ExtendedValidationFailed") || !strings.Contains(r.Log(), `route="b/invalid"`) {
			return errString("no rejection of b/invalid in the log")
		}
		return nil
	})
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	if strings.Contains(string(config), "evil") {
		t.Fatalf("injected directive reached haproxy.config")
	}

	t.Run("fixing a malformed file serves it", func(t *testing.T) {
		m.Write("broken.yaml", routeYAML("b", "broken", "broken.example.com", "", "good", ""))
		expectBackend(t, 3*time.Second, func() (response, error) { return r.httpGet("broken.example.com", "/") }, "good")
	})
	t.Run("breaking a serving file keeps its last good objects", func(t *testing.T) {
		m.Write("broken.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: broken\n  namespace: b\nspec:\n  hots: typo.example.com\n")
		time.Sleep(2500 * time.Millisecond)
		resp, err := r.httpGet("broken.example.com", "/")
		must(t, err)
		if resp.Status != 200 {
			t.Fatalf("route lost after a malformed edit: %d", resp.Status)
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }

// customTemplate is the default template with a directive taken verbatim
// from an annotation: a template author's mistake that lets one route's
// annotation break the whole configuration.
func customTemplate(t *testing.T) string {
	t.Helper()
	def := templates.Default()
	marker := "  timeout check 5000ms\n  {{- /* X-Forwarded-Host,"
	if !strings.Contains(def, marker) {
		t.Fatal("default template changed: update customTemplate")
	}
	custom := strings.Replace(def, marker,
		"  timeout check 5000ms\n  {{- with index $cfg.Annotations \"example.com/raw\" }}\n  {{ . }}\n  {{- end }}\n  {{- /* X-Forwarded-Host,", 1)
	path := filepath.Join(t.TempDir(), "custom.template")
	must(t, os.WriteFile(path, []byte(custom), 0o644))
	return path
}

// refusedRouteYAML is route c/bad (service good) whose example.com/raw
// annotation customTemplate writes into its backend: a directive HAProxy
// refuses.
const refusedRouteYAML = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: bad\n  namespace: c\n  annotations:\n    example.com/raw: \"no-such-directive on\"\nspec:\n  host: bad.example.com\n  to:\n    kind: Service\n    name: good\n"

// expectRefusedRouteRejected waits until r names route c/bad
// (refusedRouteYAML) as rejected with ConfigCheckFailed, and checks that
// it is not served.
func expectRefusedRouteRejected(t *testing.T, r *router) {
	t.Helper()
	eventually(t, 5*time.Second, "offending route named in the log", func() error {
		if !strings.Contains(r.Log(), "c/bad") || !strings.Contains(r.Log(), "ConfigCheckFailed") {
			return errString("c/bad / ConfigCheckFailed not in log")
		}
		return nil
	})
	resp, err := r.httpGet("bad.example.com", "/")
	must(t, err)
	if resp.Status != 503 {
		t.Errorf("refused route served: %d", resp.Status)
	}
}

// TestRefusedConfigKeepsServing: when the template renders something
// HAProxy refuses for one route, the last good configuration keeps serving,
// the offending route is named, and the others are served.
func TestRefusedConfigKeepsServing(t *testing.T) {
	good := startBackend(t, "good")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("c", "good", good))
	m.Write("good.yaml", routeYAML("c", "good", "good.example.com", "", "good", ""))
	r := startRouter(t, m.Dir, nil, "--template", customTemplate(t))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("good.example.com", "/") }, "good")
	configPath := filepath.Join(r.WorkingDir, "conf", "haproxy.config")
	before, err := os.ReadFile(configPath)
	must(t, err)

	m.Write("bad.yaml", refusedRouteYAML)
	m.Write("later.yaml", routeYAML("c", "later", "later.example.com", "", "good", ""))
	expectBackend(t, 5*time.Second, func() (response, error) { return r.httpGet("later.example.com", "/") }, "good")
	expectRefusedRouteRejected(t, r)
	after, err := os.ReadFile(configPath)
	must(t, err)
	if strings.Contains(string(after), "no-such-directive") {
		t.Fatal("refused configuration left on disk")
	}
	if string(after) == string(before) {
		t.Fatal("configuration did not take the valid new route")
	}

	t.Run("fixing the route admits it", func(t *testing.T) {
		m.Write("bad.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: bad\n  namespace: c\n  annotations:\n    example.com/raw: \"http-request set-header X-Fixed yes\"\nspec:\n  host: bad.example.com\n  to:\n    kind: Service\n    name: good\n")
		expectBackend(t, 5*time.Second, func() (response, error) { return r.httpGet("bad.example.com", "/") }, "good")
	})
}

// TestARouteHAProxyRefusesAtStartIsRejectedAndTheOthersServed: the first
// configuration with routes is loaded without a separate "haproxy -c";
// when HAProxy refuses it because of one route that is there from the
// start, the check then names that route, which is rejected, and the
// others are served — whether HAProxy was bound early (a reload of the
// pre-sync configuration) or starts with the routes.
func TestARouteHAProxyRefusesAtStartIsRejectedAndTheOthersServed(t *testing.T) {
	for _, bindAfterSync := range []string{"false", "true"} {
		t.Run("ROUTER_BIND_PORTS_AFTER_SYNC="+bindAfterSync, func(t *testing.T) {
			good := startBackend(t, "good")
			m := newManifests(t)
			m.Write("svc.yaml", serviceYAML("c", "good", good))
			m.Write("good.yaml", routeYAML("c", "good", "good.example.com", "", "good", ""))
			m.Write("bad.yaml", refusedRouteYAML)
			r := startRouter(t, m.Dir, map[string]string{"ROUTER_BIND_PORTS_AFTER_SYNC": bindAfterSync}, "--template", customTemplate(t))
			expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("good.example.com", "/") }, "good")
			expectRefusedRouteRejected(t, r)
			cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
			must(t, err)
			if strings.Contains(string(cfg), "no-such-directive") {
				t.Error("refused route left in haproxy.config")
			}
			if !strings.Contains(r.Log(), "did not load the first configuration with routes") {
				t.Error("the first configuration was not loaded unchecked: no refused load in the log")
			}
			if exited, err := r.Exited(); exited {
				t.Fatalf("router exited: %v", err)
			}
		})
	}
}

// TestBrokenTemplateFailsAtStart: a template that cannot produce a valid
// configuration is a clear error and a non-zero exit.
func TestBrokenTemplateFailsAtStart(t *testing.T) {
	cases := map[string]string{
		"syntax error names the line": "{{ define \"/var/lib/haproxy/conf/haproxy.config\" }}\nglobal\n{{ if }}\n{{ end }}",
		"haproxy refuses the config":  "{{ define \"/var/lib/haproxy/conf/haproxy.config\" }}\nglobal\n  no-such-keyword\n{{ end }}",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.template")
			must(t, os.WriteFile(path, []byte(text), 0o644))
			r := startRouter(t, newManifests(t).Dir, nil, "--template", path)
			eventually(t, 15*time.Second, "router exits", func() error {
				if exited, _ := r.Exited(); !exited {
					return errString("still running")
				}
				return nil
			})
			_, err := r.Exited()
			if err == nil {
				t.Fatal("router exited 0")
			}
			if name == "syntax error names the line" && !strings.Contains(r.Log(), "bad.template:3") {
				t.Errorf("error does not name the template line: %s", r.Log())
			}
			if name == "haproxy refuses the config" && !strings.Contains(r.Log(), "no-such-keyword") {
				t.Errorf("error does not carry haproxy's message: %s", r.Log())
			}
		})
	}
}

// TestDefaultCertificateSources: DEFAULT_CERTIFICATE, _PATH and _DIR are
// used in that precedence; without them a self-signed one is generated.
func TestDefaultCertificateSources(t *testing.T) {
	ca, err := testcerts.NewCA("ca", time.Hour)
	must(t, err)
	mk := func(cn string) *testcerts.Pair {
		p, err := ca.Issue(cn, []string{cn}, time.Hour)
		must(t, err)
		return p
	}
	fromEnv, fromPath, fromDir := mk("from-env"), mk("from-path"), mk("from-dir")
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "path.pem"), []byte(fromPath.CertPEM+fromPath.KeyPEM), 0o600))
	certDir := filepath.Join(dir, "certdir")
	must(t, os.MkdirAll(certDir, 0o755))
	must(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), []byte(fromDir.CertPEM), 0o600))
	must(t, os.WriteFile(filepath.Join(certDir, "tls.key"), []byte(fromDir.KeyPEM), 0o600))

	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"DEFAULT_CERTIFICATE wins", map[string]string{"DEFAULT_CERTIFICATE": fromEnv.CertPEM + fromEnv.KeyPEM, "DEFAULT_CERTIFICATE_PATH": filepath.Join(dir, "path.pem"), "DEFAULT_CERTIFICATE_DIR": certDir}, "from-env"},
		{"DEFAULT_CERTIFICATE_PATH before DIR", map[string]string{"DEFAULT_CERTIFICATE_PATH": filepath.Join(dir, "path.pem"), "DEFAULT_CERTIFICATE_DIR": certDir}, "from-path"},
		{"DEFAULT_CERTIFICATE_DIR with tls.crt and tls.key", map[string]string{"DEFAULT_CERTIFICATE_DIR": certDir}, "from-dir"},
		{"self-signed when none given", nil, "router-default.local"},
	}
	plain := startBackend(t, "plain")
	m := newManifests(t)
	m.Write("all.yaml", serviceYAML("d", "plain", plain)+"---\n"+routeYAML("d", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "", nil)))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := startRouter(t, m.Dir, c.env)
			resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.example.com", "/") }, "plain")
			if got := subject(resp); got != "CN="+c.want {
				t.Fatalf("default certificate %s, want CN=%s", got, c.want)
			}
			if c.env == nil && !strings.Contains(r.Log(), "generated a self-signed one") {
				t.Errorf("self-signed certificate not announced in the log")
			}
		})
	}
	t.Run("an unusable default certificate is a start-up error", func(t *testing.T) {
		r := startRouter(t, m.Dir, map[string]string{"DEFAULT_CERTIFICATE": fromEnv.CertPEM + fromPath.KeyPEM})
		eventually(t, 10*time.Second, "router exits", func() error {
			if exited, _ := r.Exited(); !exited {
				return errString("still running")
			}
			return nil
		})
		if _, err := r.Exited(); err == nil || !strings.Contains(r.Log(), "DEFAULT_CERTIFICATE") {
			t.Fatalf("want a non-zero exit naming DEFAULT_CERTIFICATE, got %v: %s", err, r.Log())
		}
	})
}

// TestReloadScriptIsCalled: RELOAD_SCRIPT replaces the built-in reload.
func TestReloadScriptIsCalled(t *testing.T) {
	v1 := startBackend(t, "v1")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("s", "v1", v1))
	m.Write("r1.yaml", routeYAML("s", "r1", "r1.example.com", "", "v1", ""))
	marker := filepath.Join(t.TempDir(), "called")
	script := filepath.Join(t.TempDir(), "reload.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"$RELOAD_CONFIG\" >> "+marker+"\nexec kill -USR2 $(cat \"$(dirname \"$RELOAD_CONFIG\")/../run/haproxy.pid\" | head -1)\n"), 0o755))
	r := startRouter(t, m.Dir, map[string]string{"RELOAD_SCRIPT": script})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("r1.example.com", "/") }, "v1")
	m.Write("r2.yaml", routeYAML("s", "r2", "r2.example.com", "", "v1", ""))
	eventually(t, 5*time.Second, "reload script called", func() error {
		data, err := os.ReadFile(marker)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), "haproxy.config") {
			return errString("RELOAD_CONFIG not passed: " + string(data))
		}
		return nil
	})
}

// TestHAProxyIsRestartedWhenItDies: killing HAProxy brings it back, with
// the same configuration, without restarting the router.
func TestHAProxyIsRestartedWhenItDies(t *testing.T) {
	v1 := startBackend(t, "v1")
	m := newManifests(t)
	m.Write("all.yaml", serviceYAML("k", "v1", v1)+"---\n"+routeYAML("k", "r", "r.example.com", "", "v1", ""))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("r.example.com", "/") }, "v1")
	// Traffic flows as soon as the first worker runs (the master bound the
	// listeners), before the router's start of HAProxy is complete (the
	// master CLI lists the worker tens of milliseconds later, more on
	// HAProxy 3.0 than on 2.6). A kill in between fails the router's start,
	// which is not what this test is about: kill a running HAProxy.
	waitReady(t, ms)
	for round := 1; round <= 2; round++ {
		pidData, err := os.ReadFile(filepath.Join(r.WorkingDir, "run", "haproxy.pid"))
		must(t, err)
		var master int
		if _, err := fmt.Sscanf(string(pidData), "%d", &master); err != nil || master <= 1 {
			t.Fatalf("pid file %q", pidData)
		}
		before := r.haproxyPIDs()
		// While HAProxy is down (restart backoff: 1 s, then 2 s),
		// readiness fails and says why: watched from before the kill,
		// every 20 ms, so a quick restart cannot slip between two looks.
		sawRestart := make(chan string, 1)
		go func() {
			last := ""
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				st, body, err := ms.status("/healthz/ready", false)
				if err == nil && st == 503 && strings.Contains(body, "haproxy exited unexpectedly and is being restarted") {
					sawRestart <- ""
					return
				}
				last = fmt.Sprintf("%d %v %.300s", st, err, body)
			}
			sawRestart <- last
		}()
		must(t, syscall.Kill(master, syscall.SIGKILL))
		for _, pid := range before {
			if pid != master {
				_ = syscall.Kill(pid, syscall.SIGKILL) // the workers go with their master
			}
		}
		expectStatusErr(t, 5*time.Second, func() (response, error) { return r.httpGet("r.example.com", "/") })
		if last := <-sawRestart; last != "" {
			t.Fatalf("round %d: readiness never reported the restart; last answer: %s", round, last)
		}
		expectBackend(t, 20*time.Second, func() (response, error) { return r.httpGet("r.example.com", "/") }, "v1")
		if !strings.Contains(r.Log(), "haproxy exited unexpectedly; restarting it") {
			t.Errorf("round %d: restart not logged", round)
		}
		eventually(t, 10*time.Second, "restart counted", func() error {
			s, err := ms.get()
			if err != nil {
				return err
			}
			if v, err := s.value("template_router_haproxy_restarts_total", nil); err != nil || v != float64(round) {
				return fmt.Errorf("restarts %v %v", v, err)
			}
			if v, err := s.value("template_router_reloads_total", map[string]string{"reason": "restart"}); err != nil || v != float64(round) {
				return fmt.Errorf("restart starts %v %v", v, err)
			}
			return nil
		})
	}
	if exited, err := r.Exited(); exited {
		t.Fatalf("router exited: %v", err)
	}
}

// expectStatusErr waits until a request fails (the listener is gone).
func expectStatusErr(t *testing.T, timeout time.Duration, get func() (response, error)) {
	t.Helper()
	eventually(t, timeout, "request fails", func() error {
		if _, err := get(); err == nil {
			return errString("still answering")
		}
		return nil
	})
}
