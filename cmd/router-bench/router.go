package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/test/freeport"
)

// controlledEnv are the variables the bench sets itself; inherited values
// are dropped so that they cannot change what is measured unnoticed.
var controlledEnv = []string{"KUBECONFIG", "RELOAD_INTERVAL", "ROUTER_SERVICE_HTTP_PORT",
	"ROUTER_SERVICE_HTTPS_PORT", "ROUTER_LISTEN_ADDR", "ROUTER_METRICS_TYPE", "STATS_PORT", "ROUTER_MANIFESTS_DIR", "ROUTER_WORKING_DIR"}

// routerProc is a running openshift-router.
type routerProc struct {
	cfg        config
	cmd        *exec.Cmd
	WorkingDir string
	LogPath    string
	HTTPPort   int
	HTTPSPort  int
	Metrics    string // host:port of /metrics and /healthz
	logFile    *os.File
	done       chan struct{}
	exitErr    error
}

// startRouter starts the router on manifestsDir; its working directory and
// log go under dir.
func startRouter(cfg config, dir, manifestsDir string) (*routerProc, error) {
	return startRouterOn(cfg, dir, []string{"--manifests", manifestsDir})
}

// startRouterOn starts the router with the given source arguments
// (--manifests DIR, or --kubeconfig FILE); its working directory and log go
// under dir.
func startRouterOn(cfg config, dir string, sourceArgs []string) (*routerProc, error) {
	r := &routerProc{cfg: cfg, WorkingDir: filepath.Join(dir, "wd"), LogPath: filepath.Join(dir, "router.log"), done: make(chan struct{})}
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	r.HTTPPort, r.HTTPSPort = ports[0], ports[1]
	r.Metrics = fmt.Sprintf("127.0.0.1:%d", ports[2])
	if r.logFile, err = os.Create(r.LogPath); err != nil {
		return nil, err
	}
	args := append(append([]string{}, sourceArgs...), "--working-dir", r.WorkingDir)
	if cfg.HAProxy != "" {
		args = append(args, "--haproxy", cfg.HAProxy)
	}
	cmd := exec.Command(cfg.RouterBin, args...)
	env := withoutEnv(os.Environ(), controlledEnv...)
	env = append(env,
		fmt.Sprintf("ROUTER_SERVICE_HTTP_PORT=%d", r.HTTPPort),
		fmt.Sprintf("ROUTER_SERVICE_HTTPS_PORT=%d", r.HTTPSPort),
		"ROUTER_LISTEN_ADDR="+r.Metrics,
		"ROUTER_GRACEFUL_SHUTDOWN_DELAY=0s", // no load balancer to drain from
		// Metrics mode: the router's own metrics and health server (else
		// HAProxy's stats listener takes the port and /metrics is absent).
		"ROUTER_METRICS_TYPE=haproxy",
	)
	if cfg.ReloadInterval != "" {
		env = append(env, "RELOAD_INTERVAL="+cfg.ReloadInterval)
	}
	cmd.Env = append(env, cfg.RouterEnv...)
	cmd.Stdout, cmd.Stderr = r.logFile, r.logFile
	// Its own process group, so that a router that does not stop can be
	// killed with whatever it started (and a Ctrl-C of the bench reaches it
	// only through the bench's clean-up); SIGTERM if the bench dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		r.logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", cfg.RouterBin, err)
	}
	r.cmd = cmd
	go func() {
		r.exitErr = cmd.Wait()
		close(r.done)
	}()
	cfg.logf("router started: pid %d, http 127.0.0.1:%d, metrics %s, log %s", cmd.Process.Pid, r.HTTPPort, r.Metrics, r.LogPath)
	return r, nil
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// lostPort waits (up to within) until the router's HAProxy runs ("haproxy
// running" in its log: its ports bound) or the router exits, and reports
// whether it exited because a port was in use.
func (r *routerProc) lostPort(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return strings.Contains(r.LogTail(20), "Address already in use")
		default:
		}
		if log, err := os.ReadFile(r.LogPath); err == nil && strings.Contains(string(log), `"haproxy running"`) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// PID is the router's process id.
func (r *routerProc) PID() int { return r.cmd.Process.Pid }

// exited returns an error if the router has ended.
func (r *routerProc) exited() error {
	select {
	case <-r.done:
		return fmt.Errorf("router exited (%v); last log lines:\n%s", r.exitErr, r.LogTail(20))
	default:
		return nil
	}
}

// LogTail returns the last n lines of the router's log.
func (r *routerProc) LogTail(n int) string { return fileTail(r.LogPath, n) }

// fileTail returns the last n lines of the file at path ("" if it cannot
// be read).
func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop ends the router with SIGTERM (bounded wait, then SIGKILL of its
// process group) and makes sure no haproxy process of its working directory
// survives. It reports what it had to kill: a clean stop returns nil.
func (r *routerProc) Stop() error {
	defer r.logFile.Close()
	var problems []string
	select {
	case <-r.done:
		problems = append(problems, fmt.Sprintf("router had already exited (%v)", r.exitErr))
	default:
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			problems = append(problems, "router did not stop within 30s of SIGTERM; killed")
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := haproxyPIDs(r.WorkingDir)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			problems = append(problems, fmt.Sprintf("haproxy processes %v still running 10s after the router stopped; killed", pids))
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// haproxyPIDs lists the haproxy processes (master and workers: the workers
// are forks of the master and share its command line) whose command line
// names workingDir.
func haproxyPIDs(workingDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) == 0 || !strings.Contains(filepath.Base(string(args[0])), "haproxy") {
			continue
		}
		if bytes.Contains(cmdline, []byte(workingDir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// haproxyProcs describes the haproxy processes of the router: the master
// (from the pid file the master writes in <working dir>/run) and the
// processes whose parent it is.
type haproxyProcs struct {
	Master  int   `json:"master_pid"`
	Workers []int `json:"worker_pids"`
	Other   []int `json:"other_pids,omitempty"` // haproxy processes of this working dir that are not the master's children
}

func (h haproxyProcs) Count() int {
	n := len(h.Workers) + len(h.Other)
	if h.Master != 0 {
		n++
	}
	return n
}

func (r *routerProc) haproxyProcs() haproxyProcs {
	var h haproxyProcs
	if b, err := os.ReadFile(layout.New(r.WorkingDir).PIDFile()); err == nil {
		h.Master, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	for _, pid := range haproxyPIDs(r.WorkingDir) {
		switch {
		case pid == h.Master:
		case h.Master != 0 && parentPID(pid) == h.Master:
			h.Workers = append(h.Workers, pid)
		default:
			h.Other = append(h.Other, pid)
		}
	}
	if h.Master != 0 && syscall.Kill(h.Master, 0) != nil {
		h.Other = append(h.Other, h.Workers...)
		h.Workers, h.Master = nil, 0
	}
	return h
}

func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// cpuSeconds is the user + system CPU time the process has used
// (/proc/PID/stat, clock ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// After "pid (comm)": state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime ...
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / 100, nil
}

// memory is the resident memory of a process, in KiB: VmRSS from
// /proc/PID/status and Pss (shared pages split between their users) from
// /proc/PID/smaps_rollup; the peak (VmHWM) and the part that is pages of
// mapped files (RssFile: for the router, its own binary) from
// /proc/PID/status too.
type memory struct {
	RSSKiB     int64 `json:"rss_kib"`
	PSSKiB     int64 `json:"pss_kib"`
	PeakKiB    int64 `json:"peak_rss_kib"`
	RSSFileKiB int64 `json:"rss_file_kib"`
}

func processMemory(pid int) (memory, error) {
	var m memory
	var err error
	if m.RSSKiB, err = procKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:"); err != nil {
		return m, err
	}
	m.PSSKiB, _ = procKiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	m.PeakKiB, _ = procKiB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
	m.RSSFileKiB, _ = procKiB(fmt.Sprintf("/proc/%d/status", pid), "RssFile:")
	return m, nil
}

func procKiB(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, key) {
			f := strings.Fields(strings.TrimPrefix(line, key))
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}

// metricsClient reads the router's /metrics and health checks.
var metricsClient = &http.Client{Timeout: 30 * time.Second}

// routerCounters are the router's own counters this bench reports.
type routerCounters struct {
	Reloads        float64 `json:"reloads"` // template_router_reload_seconds_count: starts and reloads
	ReloadFailures float64 `json:"reload_failures"`
	Avoided        float64 `json:"reloads_avoided"` // template_router_reloads_avoided_total, all kinds
	HasAvoided     bool    `json:"has_reloads_avoided"`
}

func (r *routerProc) counters(ctx context.Context) (routerCounters, error) {
	var c routerCounters
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Metrics+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return c, fmt.Errorf("reading /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("reading /metrics: %s", resp.Status)
	}
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		name, value, ok := metricLine(sc.Text())
		if !ok {
			continue
		}
		switch {
		case name == "template_router_reload_seconds_count":
			c.Reloads, found = value, true
		case name == "template_router_reload_failures_total":
			c.ReloadFailures = value
		case name == "template_router_reloads_avoided_total" || strings.HasPrefix(name, "template_router_reloads_avoided_total{"):
			c.Avoided += value
			c.HasAvoided = true
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("reading /metrics: %w", err)
	}
	if !found {
		return c, errors.New("/metrics has no template_router_reload_seconds_count")
	}
	return c, nil
}

// scrape reads /metrics once, as Prometheus does, and counts its samples.
func (r *routerProc) scrape(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Metrics+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reading /metrics: %s", resp.Status)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if _, _, ok := metricLine(sc.Text()); ok {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("reading /metrics: %w", err)
	}
	return n, nil
}

// reloadReasons reads /metrics once and returns the router's reloads by
// reason (template_router_reloads_total), or why it could not.
func (r *routerProc) reloadReasons(ctx context.Context) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Metrics+"/metrics", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if name, v, ok := metricLine(sc.Text()); ok && strings.HasPrefix(name, "template_router_reloads_total{") {
			out = append(out, fmt.Sprintf("%s %g", strings.TrimPrefix(name, "template_router_reloads_total"), v))
		}
	}
	return strings.Join(out, ", ")
}

// metricLine splits a Prometheus text-format sample line into its name
// (with labels) and value.
func metricLine(line string) (string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	var name, rest string
	if i := strings.IndexByte(line, '}'); i >= 0 && strings.IndexByte(line, '{') >= 0 && strings.IndexByte(line, '{') < i {
		name, rest = line[:i+1], line[i+1:]
	} else if i := strings.IndexByte(line, ' '); i >= 0 {
		name, rest = line[:i], line[i:]
	} else {
		return "", 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", 0, false
	}
	return name, v, true
}

// ready reports whether /healthz/ready answers 200.
func (r *routerProc) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Metrics+"/healthz/ready", nil)
	if err != nil {
		return false
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
