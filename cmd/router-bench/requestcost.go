package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openshift-router-go/router/test/freeport"
)

// ---------------------------------------------------------------- request cost

// requestCostResult is what HAProxy's work per request through route r0
// costs, counted in instructions by valgrind's callgrind: the same count
// for the same binary, configuration and requests, whatever else the
// machine does (wrk's requests per second on a shared 2-core machine move
// by 10 % from run to run; this does not).
type requestCostResult struct {
	Scenario string `json:"scenario"`
	Routes   int    `json:"routes"`
	Kinds    string `json:"kinds"`
	Requests int    `json:"requests"`
	// Router is the instructions per request of the router's HAProxy
	// configuration, Bare those of the hand-written one-route HAProxy
	// (bareConfig) on the same backend; Ratio is Router / Bare.
	Router      int64   `json:"router_instructions_per_request"`
	Bare        int64   `json:"bare_instructions_per_request"`
	Ratio       float64 `json:"router_to_bare"`
	StopProblem string  `json:"stop_problem,omitempty"`
}

func (r *requestCostResult) Line() string {
	return fmt.Sprintf("request-cost (callgrind, HAProxy instructions per request through r0, %d requests on one keep-alive connection): %d routes of kinds %s: %d; a hand-written one-route HAProxy on the same backend: %d; ratio %.3f%s",
		r.Requests, r.Routes, r.Kinds, r.Router, r.Bare, r.Ratio, stopNote(r.StopProblem))
}

// runRequestCost loads cfg.DataPlaneRoutes routes, waits until the router
// serves them all, stops it (its files stay) and runs its HAProxy
// configuration under callgrind, then the hand-written one-route
// configuration on r0's backend, and counts the instructions each runs
// per request through r0 (HTTP, so r0 must be of a kind served over
// HTTP: unsecured or httproute).
func runRequestCost(ctx context.Context, cfg config) (res *requestCostResult, err error) {
	res = &requestCostResult{Scenario: "request-cost", Routes: cfg.DataPlaneRoutes, Kinds: cfg.Kinds, Requests: cfg.CostRequests}
	f, err := newFixture(cfg, cfg.DataPlaneRoutes)
	if err != nil {
		return res, err
	}
	defer closeFixture(f, &res.StopProblem, &err)
	r0 := f.Routes[0]
	if r0.Kind.overTLS() {
		return res, fmt.Errorf("request-cost: route r0 is of kind %s; it measures a route served over HTTP (-kinds unsecured or httproute first)", r0.Kind)
	}
	if err := f.start(); err != nil {
		return res, err
	}
	if _, err := f.waitAllRoutes(ctx); err != nil {
		return res, err
	}
	conf, port := filepath.Join(f.Router.WorkingDir, "conf", "haproxy.config"), f.Router.HTTPPort
	// The router's HAProxy stops with it; the files it ran stay.
	stopErr := f.Router.Stop()
	f.Router = nil
	if stopErr != nil {
		return res, fmt.Errorf("stopping the router: %w", stopErr)
	}
	if res.Router, err = callgrindCost(ctx, cfg, f.Dir, "router", conf, port, r0.Host, res.Requests); err != nil {
		return res, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return res, err
	}
	bare := filepath.Join(f.Dir, "bare-haproxy.cfg")
	server := net.JoinHostPort(r0.Backend.IP, strconv.Itoa(r0.Backend.Port))
	if err := os.WriteFile(bare, []byte(bareConfig(ports[0], server)), 0o644); err != nil {
		return res, err
	}
	if res.Bare, err = callgrindCost(ctx, cfg, f.Dir, "bare", bare, ports[0], r0.Host, res.Requests); err != nil {
		return res, err
	}
	if res.Bare > 0 {
		res.Ratio = float64(res.Router) / float64(res.Bare)
	}
	return res, ctx.Err()
}

// callgrindCost runs HAProxy on configuration conf under callgrind (in
// dir, its files named after name), waits until it answers host on port,
// and returns the instructions it runs per request: the count for 2n
// requests less the count for n, over n (start-up, idle polling and the
// connection's set-up cancel out).
func callgrindCost(ctx context.Context, cfg config, dir, name, conf string, port int, host string, n int) (int64, error) {
	bin := cfg.HAProxy
	if bin == "" {
		bin = "haproxy"
	}
	out := filepath.Join(dir, "callgrind."+name)
	log, err := os.Create(filepath.Join(dir, "callgrind-"+name+".log"))
	if err != nil {
		return 0, err
	}
	defer log.Close()
	// The options the dumps are read with, whatever VALGRIND_OPTS or a
	// .valgrindrc say: one file a dump, named OUT.N, with the
	// instructions alone, and callgrind_control able to reach it.
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out, "--separate-threads=no",
		"--combine-dumps=no", "--cache-sim=no", "--branch-sim=no", "--vgdb=yes", bin, "-db", "-f", conf)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting HAProxy under callgrind: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		// The dump at exit: the whole run's, not needed.
		_ = os.Remove(out)
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if err := awaitAnswer(ctx, client, url, host, done); err != nil {
		return 0, fmt.Errorf("HAProxy under callgrind (%s): %w; its log: %s", name, err, fileTail(log.Name(), 10))
	}
	cfg.logf("request-cost: %s: HAProxy under callgrind answers (pid %d)", name, cmd.Process.Pid)
	var counts [2]int64
	for i, requests := range []int{n, 2 * n} {
		if err := callgrindControl(ctx, "-z", cmd.Process.Pid); err != nil {
			return 0, err
		}
		for j := 0; j < requests; j++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if err := getOK(client, url, host); err != nil {
				return 0, fmt.Errorf("request %d through %s: %w", j+1, name, err)
			}
		}
		if err := callgrindControl(ctx, "-d", cmd.Process.Pid); err != nil {
			return 0, err
		}
		if counts[i], err = lastCallgrindSummary(out); err != nil {
			return 0, err
		}
	}
	cfg.logf("request-cost: %s: %d instructions for %d requests, %d for %d", name, counts[0], n, counts[1], 2*n)
	if counts[0] <= 0 || counts[1] <= counts[0] {
		return 0, fmt.Errorf("callgrind counted %d instructions for %d requests and %d for %d: not a count of the requests", counts[0], n, counts[1], 2*n)
	}
	return (counts[1] - counts[0]) / int64(n), nil
}

// awaitAnswer waits until url answers host with a 200, or the process
// whose done it is exits. Start-up under callgrind is some 50 times
// slower than without: minutes for 10,000 routes.
func awaitAnswer(ctx context.Context, client *http.Client, url, host string, done <-chan struct{}) error {
	for deadline := time.Now().Add(10 * time.Minute); ; {
		err := getOK(client, url, host)
		if err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("does not answer %s: %w", host, err)
		}
		select {
		case <-done:
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// getOK requests url with Host host and fails unless the answer is a 200.
func getOK(client *http.Client, url, host string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// callgrindControl runs callgrind_control with flag (-z: zero the counts,
// -d: dump them) on the process pid, for a minute at most. It exits 0 when
// it finds no such run, saying so: that output is a failure too.
func callgrindControl(ctx context.Context, flag string, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "callgrind_control", flag, strconv.Itoa(pid)).CombinedOutput()
	if err == nil {
		for _, failed := range []string{"Error", "not detected", "No active"} {
			if strings.Contains(string(out), failed) {
				err = fmt.Errorf("%q", failed)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("callgrind_control %s %d: %v: %s", flag, pid, err, out)
	}
	return nil
}

// lastCallgrindSummary returns the instruction count ("summary:") of the
// latest dump callgrind wrote for the output file prefix out (OUT.N, N
// counting the dumps), waiting a little for it to appear.
func lastCallgrindSummary(out string) (int64, error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		files, _ := filepath.Glob(out + ".*")
		sort.Slice(files, func(a, b int) bool { return dumpSeq(files[a]) < dumpSeq(files[b]) })
		if len(files) > 0 {
			if v, ok := callgrindSummary(files[len(files)-1]); ok {
				// Read, the dump is not counted again.
				_ = os.Remove(files[len(files)-1])
				return v, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no callgrind dump with a summary at %s.*", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dumpSeq is the N of a dump file OUT.N (-1 if none).
func dumpSeq(path string) int {
	n, err := strconv.Atoi(path[strings.LastIndexByte(path, '.')+1:])
	if err != nil {
		return -1
	}
	return n
}

// callgrindSummary reads the "summary: N" line of a callgrind dump, once
// it is whole (its "totals:" line written).
func callgrindSummary(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var n int64
	summary, totals := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "summary: "); ok {
			// The first event is the instructions (Ir).
			var err error
			n, err = strconv.ParseInt(strings.Fields(v + " 0")[0], 10, 64)
			summary = err == nil
		}
		// The last line: the dump is whole.
		totals = totals || strings.HasPrefix(sc.Text(), "totals: ")
	}
	return n, summary && totals
}
