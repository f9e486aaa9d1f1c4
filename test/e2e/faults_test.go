package e2e

// Faults (issue 13): each fault with its own test, the real binary and
// HAProxy, and a figure logged as "FIGURE <name>: <value>" for docs/performance.md.
// TestKubeAPIOutage (kube_test.go) is the API server fault.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// figure logs a measured figure in a greppable form.
func figure(t *testing.T, name string, d time.Duration) {
	t.Helper()
	t.Logf("FIGURE %s: %s", name, d.Round(time.Millisecond))
}

// firstOK polls get every 10 ms until it answers 200 from backend want,
// and returns when that happened; the test fails after timeout.
func firstOK(t *testing.T, timeout time.Duration, get func() (response, error), want string) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := get(); err == nil && resp.Status == 200 && resp.backend() == want {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 200 from %s within %s", want, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expectNotReady waits until /healthz/ready answers 503 with a body that
// contains want.
func expectNotReady(t *testing.T, ms *metricsClient, want string) {
	t.Helper()
	eventually(t, 10*time.Second, "not ready: "+want, func() error {
		st, body, err := ms.status("/healthz/ready", false)
		if err != nil || st != 503 || !strings.Contains(body, want) {
			return fmt.Errorf("%d %v %.300s", st, err, body)
		}
		return nil
	})
}

// killHAProxy sends SIGKILL to r's HAProxy master and workers by PID.
func killHAProxy(t *testing.T, r *router) {
	t.Helper()
	pids := r.haproxyPIDs()
	if len(pids) == 0 {
		t.Fatal("no haproxy process found")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestFaultHAProxyKilledServesAgainWithin2s: HAProxy's master and workers
// killed with SIGKILL; the router starts it again on the last good
// configuration, serving within 2 s of the kill.
func TestFaultHAProxyKilledServesAgainWithin2s(t *testing.T) {
	v1 := startBackend(t, "v1")
	m := newManifests(t)
	m.Write("all.yaml", serviceYAML("k", "v1", v1)+"---\n"+routeYAML("k", "r", "r.example.com", "", "v1", ""))
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	get := func() (response, error) { return r.httpGet("r.example.com", "/") }
	expectBackend(t, loadTimeout, get, "v1")
	waitReady(t, ms)
	killed := time.Now()
	killHAProxy(t, r)
	took := firstOK(t, 10*time.Second, get, "v1").Sub(killed)
	figure(t, "haproxy-killed-serving-again", took)
	if took > 2*time.Second {
		t.Errorf("served again %s after HAProxy was killed, want within 2s", took)
	}
	waitReady(t, ms)
	if exited, err := r.Exited(); exited {
		t.Fatalf("router exited: %v", err)
	}
}

// TestFaultUnwritableWorkingDirectory: the configuration directory turns
// read-only (a read-only bind mount over it: root ignores modes) or full (a
// small tmpfs over it, filled up); the last good configuration keeps
// serving, /healthz/ready says why it is not ready and
// template_router_config_apply_failing is 1, and once the directory is
// writable again the router recovers by itself and applies the route added
// meanwhile.
func TestFaultUnwritableWorkingDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	run := func(t *testing.T, cmd ...string) error {
		t.Helper()
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(cmd, " "), err, out)
		}
		return nil
	}
	cases := []struct {
		name string
		// spoil makes conf unwritable and returns what makes it writable
		// again; mounts it makes are undone in cleanup.
		spoil func(t *testing.T, conf string) func()
		log   string
	}{
		{"read-only", func(t *testing.T, conf string) func() {
			if err := run(t, "mount", "--bind", conf, conf); err != nil {
				t.Skip(err)
			}
			mounted := true
			unmount := func() {
				if mounted {
					if err := run(t, "umount", conf); err != nil {
						t.Error(err)
						return
					}
					mounted = false
				}
			}
			t.Cleanup(unmount)
			must(t, run(t, "mount", "-o", "remount,ro,bind", conf))
			return unmount
		}, "read-only file system"},
		{"full", func(t *testing.T, conf string) func() {
			saved := t.TempDir()
			must(t, run(t, "cp", "-a", conf+"/.", saved))
			if err := run(t, "mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", conf); err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() {
				if err := run(t, "umount", conf); err != nil {
					t.Error(err)
				}
			})
			must(t, run(t, "cp", "-a", saved+"/.", conf))
			filler := filepath.Join(conf, "filler")
			_ = run(t, "dd", "if=/dev/zero", "of="+filler, "bs=64k", "count=64") // stops when full
			return func() { must(t, os.Remove(filler)) }
		}, "no space left on device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steadyBE, laterBE := startBackend(t, "steady"), startBackend(t, "later")
			m := newManifests(t)
			m.Write("steady.yaml", serviceYAML("uw", "steady", steadyBE)+"---\n"+routeYAML("uw", "steady", "steady.example.com", "", "steady", ""))
			env, ms := metricsEnv(t)
			r := startRouter(t, m.Dir, env)
			steady := func() (response, error) { return r.httpGet("steady.example.com", "/") }
			expectBackend(t, loadTimeout, steady, "steady")
			waitReady(t, ms)

			conf := filepath.Join(r.WorkingDir, "conf")
			restore := c.spoil(t, conf)
			if err := os.WriteFile(filepath.Join(conf, "probe"), make([]byte, 8192), 0o644); err == nil {
				t.Fatal("the configuration directory is still writable")
			}

			traffic := startSteadyTraffic(steady, "steady")
			m.Write("later.yaml", serviceYAML("uw", "later", laterBE)+"---\n"+routeYAML("uw", "later", "later.example.com", "", "later", ""))
			expectNotReady(t, ms, "the configuration could not be applied")
			expectLogLine(t, r, "configuration not applied; the previous configuration keeps serving; retrying", c.log)
			expectApplyFailing(t, ms, 1)
			time.Sleep(3 * time.Second) // a few retries while unwritable
			if st, _, _ := ms.status("/healthz/ready", false); st != 503 {
				t.Errorf("ready %d while the directory is unwritable", st)
			}
			restore()
			writable := time.Now()
			served := firstOK(t, 40*time.Second, func() (response, error) { return r.httpGet("later.example.com", "/") }, "later")
			figure(t, c.name+"-dir-recovered", served.Sub(writable))
			waitReady(t, ms)
			expectApplyFailing(t, ms, 0)
			traffic.Stop(t, "the existing route while the directory was unwritable")
		})
	}
}

// expectApplyFailing waits for template_router_config_apply_failing to be
// want.
func expectApplyFailing(t *testing.T, ms *metricsClient, want float64) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("template_router_config_apply_failing %v", want), func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_config_apply_failing", nil); err != nil || v != want {
			return fmt.Errorf("%v %v", v, err)
		}
		return nil
	})
}

// TestFaultReloadScriptFailing: RELOAD_SCRIPT exits 1; the running
// configuration keeps serving, the failure is logged and counted
// (template_router_reload_failure 1), the router is not ready, and it
// recovers by itself once the script works again.
func TestFaultReloadScriptFailing(t *testing.T) {
	steadyBE, laterBE := startBackend(t, "steady"), startBackend(t, "later")
	m := newManifests(t)
	m.Write("steady.yaml", serviceYAML("rs", "steady", steadyBE)+"---\n"+routeYAML("rs", "steady", "steady.example.com", "", "steady", ""))
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	script := filepath.Join(dir, "reload.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nif [ -e "+broken+" ]; then echo 'reload script: simulated failure' >&2; exit 1; fi\nexec kill -USR2 $(head -1 \"$(dirname \"$RELOAD_CONFIG\")/../run/haproxy.pid\")\n"), 0o755))
	env, ms := metricsEnv(t)
	env["RELOAD_SCRIPT"] = script
	r := startRouter(t, m.Dir, env)
	steady := func() (response, error) { return r.httpGet("steady.example.com", "/") }
	expectBackend(t, loadTimeout, steady, "steady")
	waitReady(t, ms)

	traffic := startSteadyTraffic(steady, "steady")
	must(t, os.WriteFile(broken, nil, 0o644))
	m.Write("later.yaml", serviceYAML("rs", "later", laterBE)+"---\n"+routeYAML("rs", "later", "later.example.com", "", "later", ""))
	expectNotReady(t, ms, "the configuration could not be applied")
	expectLogLine(t, r, "configuration not applied; the previous configuration keeps serving; retrying")
	if !strings.Contains(r.Log(), "reload script: simulated failure") {
		t.Error("the script's output is not logged")
	}
	eventually(t, 10*time.Second, "reload failure reported", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_failure", nil); err != nil || v != 1 {
			return fmt.Errorf("template_router_reload_failure %v %v", v, err)
		}
		return nil
	})
	expectApplyFailing(t, ms, 1)
	later := func() (response, error) { return r.httpGet("later.example.com", "/") }
	if resp, err := later(); err == nil && resp.backend() == "later" {
		t.Fatal("the route added while reloads fail is served")
	}
	must(t, os.Remove(broken))
	fixed := time.Now()
	served := firstOK(t, 40*time.Second, later, "later")
	figure(t, "reload-script-recovered", served.Sub(fixed))
	waitReady(t, ms)
	eventually(t, 10*time.Second, "reload failure cleared", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_failure", nil); err != nil || v != 0 {
			return fmt.Errorf("template_router_reload_failure %v %v", v, err)
		}
		return nil
	})
	expectApplyFailing(t, ms, 0)
	traffic.Stop(t, "the existing route while the reload script failed")
}

// TestFaultTemplateEditedAtRuntime: as OpenShift's router, the template
// (TEMPLATE_FILE, a ConfigMap file) is read once at start. Edited into
// something invalid while the router runs, it changes nothing: the running
// configuration keeps serving and later route changes are still rendered
// with the template read at start. A router started with the broken
// template exits non-zero naming the template line, so a rollout of the
// edit stops at the first pod while the old ones keep serving.
func TestFaultTemplateEditedAtRuntime(t *testing.T) {
	steadyBE, laterBE := startBackend(t, "steady"), startBackend(t, "later")
	m := newManifests(t)
	m.Write("steady.yaml", serviceYAML("tp", "steady", steadyBE)+"---\n"+routeYAML("tp", "steady", "steady.example.com", "", "steady", ""))
	good, err := os.ReadFile("../../templates/haproxy-config.template")
	must(t, err)
	path := filepath.Join(t.TempDir(), "haproxy-config.template")
	must(t, os.WriteFile(path, good, 0o644))
	r := startRouter(t, m.Dir, map[string]string{"TEMPLATE_FILE": path})
	steady := func() (response, error) { return r.httpGet("steady.example.com", "/") }
	expectBackend(t, loadTimeout, steady, "steady")

	traffic := startSteadyTraffic(steady, "steady")
	// A ConfigMap update replaces the file (kubelet swaps a symlink; a
	// rename is the same for a reader).
	tmp := path + ".new"
	must(t, os.WriteFile(tmp, []byte(string(good)+"\n{{ if }}\n"), 0o644))
	must(t, os.Rename(tmp, path))
	m.Write("later.yaml", serviceYAML("tp", "later", laterBE)+"---\n"+routeYAML("tp", "later", "later.example.com", "", "later", ""))
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("later.example.com", "/") }, "later")
	traffic.Stop(t, "the existing route after the template was edited")
	if exited, err := r.Exited(); exited {
		t.Fatalf("router exited after the template was edited: %v", err)
	}

	lines := strings.Count(string(good), "\n") + 2
	began := time.Now()
	r2 := startRouter(t, m.Dir, map[string]string{"TEMPLATE_FILE": path})
	eventually(t, 15*time.Second, "router with the broken template exits", func() error {
		if exited, _ := r2.Exited(); !exited {
			return errString("still running")
		}
		return nil
	})
	figure(t, "broken-template-start-refused", time.Since(began))
	if _, err := r2.Exited(); err == nil {
		t.Fatal("router with a broken template exited 0")
	}
	if want := fmt.Sprintf("haproxy-config.template:%d", lines); !strings.Contains(r2.Log(), want) {
		t.Errorf("start error does not name %s: %s", want, r2.Log())
	}
	if resp, err := steady(); err != nil || resp.backend() != "steady" {
		t.Errorf("the running router stopped serving after another failed to start: %d %v", resp.Status, err)
	}
}

// TestFaultRouterKilledRestartsReadyOnlyWhenServing: the router (and its
// HAProxy, as when a container dies) killed with SIGKILL and started
// again: /healthz/ready turns green only once every route is served, so no
// request a ready router gets answers 503.
func TestFaultRouterKilledRestartsReadyOnlyWhenServing(t *testing.T) {
	const routes = 40
	m := newManifests(t)
	hosts := make([]string, routes)
	for i := range hosts {
		name := fmt.Sprintf("r%02d", i)
		be := startBackend(t, name)
		hosts[i] = name + ".example.com"
		m.Write(name+".yaml", serviceYAML("rk", name, be)+"---\n"+routeYAML("rk", name, hosts[i], "", name, ""))
	}
	env, ms := metricsEnv(t)
	r := startRouter(t, m.Dir, env)
	for i, h := range hosts {
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet(h, "/") }, fmt.Sprintf("r%02d", i))
	}
	waitReady(t, ms)

	haproxy := r.haproxyPIDs()
	must(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL))
	for _, pid := range haproxy {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-r.done

	env, ms = metricsEnv(t)
	began := time.Now()
	r = startRouter(t, m.Dir, env)
	// Poll readiness tightly; the moment it is green, every route must
	// answer from its backend.
	deadline := began.Add(60 * time.Second)
	for {
		if st, _, err := ms.status("/healthz/ready", false); err == nil && st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("router not ready within 60s of the restart")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ready := time.Since(began)
	for i, h := range hosts {
		if resp, err := r.httpGet(h, "/"); err != nil || resp.Status != 200 || resp.backend() != fmt.Sprintf("r%02d", i) {
			t.Errorf("ready, but %s answers %d from %q (%v)", h, resp.Status, resp.backend(), err)
		}
	}
	figure(t, fmt.Sprintf("router-killed-restart-ready-%d-routes", routes), ready)
}
