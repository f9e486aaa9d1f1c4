package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

// processKeywordsGlobal is what OpenShift-style templates put in their global
// section about HAProxy's process: OpenShift's own says daemon and binds its
// own stats socket; others add master-worker, a pidfile and nbthread. The
// pidfile's directory does not exist; neither does the extra socket's.
const processKeywordsGlobal = `global
  daemon
  master-worker
  pidfile /nonexistent-openshift-router-test/haproxy.pid
  nbthread 2
  stats socket {{ .WorkingDir }}/openshift-run/haproxy.sock mode 600 level admin expose-fd listeners
`

// parentPID returns the parent of pid, or 0.
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// procThreads returns the number of threads of pid, or 0.
func procThreads(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// masterAndWorkers splits the router's haproxy processes into the master
// (the router's child) and its workers.
func masterAndWorkers(r *router) (master int, workers []int) {
	pids := r.haproxyPIDs()
	for _, p := range pids {
		if parentPID(p) == r.cmd.Process.Pid {
			master = p
		}
	}
	for _, p := range pids {
		if master != 0 && parentPID(p) == master {
			workers = append(workers, p)
		}
	}
	return master, workers
}

// TestTemplateWithProcessKeywordsRunsUnderTheRouter: a template written in
// OpenShift's style whose global section carries daemon, master-worker,
// pidfile, nbthread and a stats socket of its own runs: routes are served,
// HAProxy's master stays the router's child (daemon does not send it to the
// background, as it did before: "master (pid …) exited during startup (exit
// status 0)"), a reload works and the router keeps running, nbthread is
// honoured, both stats sockets answer (the router keeps its own), and the
// router stops HAProxy when it exits.
func TestTemplateWithProcessKeywordsRunsUnderTheRouter(t *testing.T) {
	base, err := os.ReadFile("testdata/openshift-style.template")
	must(t, err)
	if strings.Count(string(base), "\nglobal\n") != 1 {
		t.Fatal("testdata/openshift-style.template: no single global section to extend")
	}
	tmpl := filepath.Join(t.TempDir(), "process-keywords.template")
	must(t, os.WriteFile(tmpl, []byte(strings.Replace(string(base), "\nglobal\n", "\n"+processKeywordsGlobal, 1)), 0o600))

	web, other := startBackend(t, "web-1"), startBackend(t, "other-1")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "web", web)+"---\n"+serviceYAML("apps", "other", other))
	m.Write("routes.yaml", routeYAML("apps", "web", "web.example.com", "", "web", ""))
	r := startRouter(t, m.Dir, nil, "--template", tmpl)

	expectExactly(t, loadTimeout, r, "web.example.com", "web-1")
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	for _, want := range []string{"\n  daemon\n", "\n  master-worker\n", "\n  nbthread 2\n", "\n  pidfile /nonexistent-openshift-router-test/haproxy.pid\n"} {
		if !strings.Contains(string(config), want) {
			t.Fatalf("haproxy.config lacks %q: the test does not test the keywords", want)
		}
	}
	master, workers := masterAndWorkers(r)
	if master == 0 || len(workers) != 1 {
		t.Fatalf("haproxy processes %v: master %d (the router's child), workers %v", r.haproxyPIDs(), master, workers)
	}
	if n := procThreads(workers[0]); n != 2 {
		t.Errorf("worker %d runs %d threads, want nbthread 2", workers[0], n)
	}
	expectLogLine(t, r, "the configuration carries process keywords", `daemon="overridden`, `nbthread="2 honoured"`, "openshift-run/haproxy.sock")
	expectLogLine(t, r, "created the missing directory of the configuration's stats socket", "openshift-run")
	if line := logLine(r, "haproxy alert", "pidfile"); line != "" {
		t.Errorf("the ignored pidfile was logged as an alert: %s", line)
	}
	for _, sock := range []string{filepath.Join(r.WorkingDir, "run", "haproxy.sock"), filepath.Join(r.WorkingDir, "openshift-run", "haproxy.sock")} {
		c := runtimeapi.Client{Path: sock, Timeout: 2 * time.Second}
		out, err := c.Exec(t.Context(), "show info")
		if err != nil || !strings.Contains(out, fmt.Sprintf("Pid: %d\n", workers[0])) {
			t.Errorf("stats socket %s: %v %.200q", sock, err, out)
		}
	}

	// A new route needs a reload.
	m.Write("routes.yaml", routeYAML("apps", "web", "web.example.com", "", "web", "")+"---\n"+
		routeYAML("apps", "other", "other.example.com", "", "other", ""))
	expectExactly(t, loadTimeout, r, "other.example.com", "other-1")
	expectExactly(t, loadTimeout, r, "web.example.com", "web-1")
	expectLogLine(t, r, "haproxy reloaded")
	if exited, err := r.Exited(); exited {
		t.Fatalf("the router exited after the reload: %v", err)
	}
	master2, _ := masterAndWorkers(r)
	if master2 != master {
		t.Fatalf("after the reload the master is %d, was %d (the router's child)", master2, master)
	}
	eventually(t, 10*time.Second, "the old worker is gone", func() error {
		if _, w := masterAndWorkers(r); len(w) != 1 || w[0] == workers[0] {
			return fmt.Errorf("workers %v (before the reload %v)", w, workers)
		}
		return nil
	})

	// The router stops HAProxy when it exits.
	pids := r.haproxyPIDs()
	r.Stop()
	if exited, err := r.Exited(); !exited || err != nil {
		t.Fatalf("router exit: %v %v", exited, err)
	}
	for _, p := range pids {
		if parentPID(p) != 0 {
			t.Errorf("haproxy process %d still exists after the router stopped", p)
		}
	}
}
