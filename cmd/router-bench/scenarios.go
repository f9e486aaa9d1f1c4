package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ---------------------------------------------------------------- cold start

type coldStartResult struct {
	Scenario           string  `json:"scenario"`
	Routes             int     `json:"routes"`
	ReadySeconds       float64 `json:"ready_seconds"`        // /healthz/ready answered 200
	FirstRouteSeconds  float64 `json:"first_route_seconds"`  // first route answered through haproxy
	AllAnsweredSeconds float64 `json:"all_answered_seconds"` // every route answered from its backend
	CheckSeconds       float64 `json:"check_seconds"`        // the check of every route itself
	CheckWorkers       int     `json:"check_workers"`
	Reloads            float64 `json:"reloads"` // starts + reloads until every route answered
	StopProblem        string  `json:"stop_problem,omitempty"`
}

func (r *coldStartResult) Line() string {
	return fmt.Sprintf("cold-start: %d routes all answered %s after the router started (ready %s, first route %s, checking all routes with %d workers took %s); haproxy starts+reloads: %.0f%s",
		r.Routes, seconds(secs(r.AllAnsweredSeconds)), seconds(secs(r.ReadySeconds)), seconds(secs(r.FirstRouteSeconds)),
		r.CheckWorkers, seconds(secs(r.CheckSeconds)), r.Reloads, stopNote(r.StopProblem))
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func stopNote(p string) string {
	if p == "" {
		return ""
	}
	return "; STOP PROBLEM: " + p
}

func runColdStart(ctx context.Context, cfg config, n int) (res *coldStartResult, err error) {
	cfg.logf("cold-start: %d routes", n)
	f, err := newFixture(cfg, n)
	if err != nil {
		return nil, err
	}
	res = &coldStartResult{Scenario: "cold-start", Routes: n, CheckWorkers: cfg.CheckWorkers}
	defer func() { closeFixture(f, &res.StopProblem, &err) }()
	if err := f.start(); err != nil {
		return nil, err
	}
	rt, err := f.waitAllRoutes(ctx)
	res.ReadySeconds, res.FirstRouteSeconds = rt.Ready.Seconds(), rt.FirstRoute.Seconds()
	res.AllAnsweredSeconds, res.CheckSeconds = rt.AllAnswered.Seconds(), rt.Sweep.Seconds()
	if err != nil {
		return res, err
	}
	c, err := f.Router.counters(ctx)
	if err != nil {
		return res, err
	}
	res.Reloads = c.Reloads
	return res, nil
}

// closeFixture closes f and records a stop that needed killing in *problem
// (and as the error, if there is none yet: leftovers are a router bug).
func closeFixture(f *fixture, problem *string, err *error) {
	if cerr := f.Close(); cerr != nil {
		*problem = cerr.Error()
		if *err == nil {
			*err = fmt.Errorf("stopping the router: %w", cerr)
		}
	}
}

// ---------------------------------------------------------------- memory

type memoryResult struct {
	Scenario          string  `json:"scenario"`
	Routes            int     `json:"routes"`
	AllAnsweredSecond float64 `json:"all_answered_seconds"`
	RouterPID         int     `json:"router_pid"`
	Router            memory  `json:"router"`
	HAProxy           memory  `json:"haproxy"` // master + workers, summed
	HAProxyProcesses  int     `json:"haproxy_processes"`
	HAProxyPerProcess []struct {
		PID int `json:"pid"`
		memory
	} `json:"haproxy_per_process"`
	// Then /metrics is read memoryScrapes times, memoryScrapeGap apart, as
	// Prometheus scrapes a router (HAProxy's statistics of every route
	// and server); RouterAfterScrapes is the router's memory a settle
	// later, ScrapeCPUSeconds the router CPU the scrapes took (the first
	// asks HAProxy, the next ones are answered from its result).
	Scrapes            int     `json:"scrapes"`
	ScrapeSeries       int     `json:"scrape_series"` // samples in the last scrape
	ScrapeCPUSeconds   float64 `json:"scrape_cpu_seconds"`
	RouterAfterScrapes memory  `json:"router_after_scrapes"`
	// RouterScrapeRSSKiB is the router's RSS memoryScrapeGap after each
	// scrape but the last (whose figure is RouterAfterScrapes).
	RouterScrapeRSSKiB []int64 `json:"router_scrape_rss_kib"`
	StopProblem        string  `json:"stop_problem,omitempty"`
}

// The memory scenario's scrapes of /metrics.
const (
	memoryScrapes   = 3
	memoryScrapeGap = time.Second
)

func (r *memoryResult) Line() string {
	return fmt.Sprintf("memory: %d routes loaded and answering: router RSS %s (PSS %s; %s of it its binary's pages; peak %s); haproxy RSS %s (PSS %s) in %d processes (master + workers); after %d scrapes of /metrics (%d samples, %.2f s router CPU in all): router RSS %s (%s after each before)%s",
		r.Routes, mib(r.Router.RSSKiB), mib(r.Router.PSSKiB), mib(r.Router.RSSFileKiB), mib(r.Router.PeakKiB),
		mib(r.HAProxy.RSSKiB), mib(r.HAProxy.PSSKiB), r.HAProxyProcesses,
		r.Scrapes, r.ScrapeSeries, r.ScrapeCPUSeconds, mib(r.RouterAfterScrapes.RSSKiB), mibs(r.RouterScrapeRSSKiB), stopNote(r.StopProblem))
}

func runMemory(ctx context.Context, cfg config, n int) (res *memoryResult, err error) {
	cfg.logf("memory: %d routes", n)
	f, err := newFixture(cfg, n)
	if err != nil {
		return nil, err
	}
	res = &memoryResult{Scenario: "memory", Routes: n}
	defer func() { closeFixture(f, &res.StopProblem, &err) }()
	if err := f.start(); err != nil {
		return nil, err
	}
	rt, err := f.waitAllRoutes(ctx)
	res.AllAnsweredSecond = rt.AllAnswered.Seconds()
	if err != nil {
		return res, err
	}
	f.settle(ctx)
	res.RouterPID = f.Router.PID()
	if res.Router, err = processMemory(res.RouterPID); err != nil {
		return res, fmt.Errorf("router memory: %w", err)
	}
	procs := f.Router.haproxyProcs()
	pids := append([]int{procs.Master}, procs.Workers...)
	pids = append(pids, procs.Other...)
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		m, err := processMemory(pid)
		if err != nil {
			continue // a worker that just ended
		}
		res.HAProxy.RSSKiB += m.RSSKiB
		res.HAProxy.PSSKiB += m.PSSKiB
		res.HAProxyProcesses++
		res.HAProxyPerProcess = append(res.HAProxyPerProcess, struct {
			PID int `json:"pid"`
			memory
		}{pid, m})
	}
	if res.HAProxyProcesses == 0 {
		return res, errors.New("no haproxy process found")
	}

	cpu0, err := cpuSeconds(res.RouterPID)
	if err != nil {
		return res, err
	}
	for i := 0; i < memoryScrapes; i++ {
		if i > 0 {
			sleepCtx(ctx, memoryScrapeGap)
			m, err := processMemory(res.RouterPID)
			if err != nil {
				return res, fmt.Errorf("router memory: %w", err)
			}
			res.RouterScrapeRSSKiB = append(res.RouterScrapeRSSKiB, m.RSSKiB)
		}
		n, err := f.Router.scrape(ctx)
		if err != nil {
			return res, err
		}
		res.Scrapes, res.ScrapeSeries = i+1, n
	}
	cpu1, err := cpuSeconds(res.RouterPID)
	if err != nil {
		return res, err
	}
	res.ScrapeCPUSeconds = cpu1 - cpu0
	f.settle(ctx)
	if res.RouterAfterScrapes, err = processMemory(res.RouterPID); err != nil {
		return res, fmt.Errorf("router memory: %w", err)
	}
	return res, nil
}

// ---------------------------------------------------------------- churn

type churnResult struct {
	Scenario       string       `json:"scenario"`
	Routes         int          `json:"routes"`
	LoadRoutes     int          `json:"load_routes"`
	ChangesWanted  int          `json:"changes_wanted"`
	Changes        int          `json:"changes"`          // made
	Observed       int          `json:"changes_observed"` // reached traffic within the change timeout
	TimedOut       int          `json:"changes_timed_out"`
	Latency        latencyStats `json:"latency"` // write of the file to the first request answered by the new backend
	ProbeFailures  int          `json:"probe_failures"`
	ReloadInterval string       `json:"reload_interval"`
	Reloads        float64      `json:"reloads"`
	ReloadFailures float64      `json:"reload_failures"`
	ReloadsAvoided *float64     `json:"reloads_avoided,omitempty"` // nil: the router has no such metric
	Load           loadStats    `json:"load"`
	PhaseSeconds   float64      `json:"phase_seconds"`
	// RouterCPUSeconds is the router's CPU from the first change until a
	// settle after the last (its coalesced writes of haproxy.config
	// included, and the manifests source reading the changed files);
	// CPUPerChangeMs is that per change made.
	RouterCPUSeconds float64  `json:"router_cpu_seconds"`
	CPUPerChangeMs   float64  `json:"router_cpu_ms_per_change"`
	PhaseTimeLimit   bool     `json:"phase_time_limit_reached"`
	Interrupted      bool     `json:"interrupted,omitempty"`
	StopProblem      string   `json:"stop_problem,omitempty"`
	TargetsMet       bool     `json:"targets_met"` // reloads 0, failed 0, p99 < 1s
	TargetsDetail    string   `json:"targets_detail"`
	ProbeFailureLog  []string `json:"probe_failure_examples,omitempty"`
}

func (r *churnResult) Line() string {
	avoided := ""
	if r.ReloadsAvoided != nil {
		avoided = fmt.Sprintf(" (reloads avoided: %.0f)", *r.ReloadsAvoided)
	}
	made := fmt.Sprintf("%d endpoint changes", r.Changes)
	if r.Changes < r.ChangesWanted {
		why := "phase time limit reached"
		if r.Interrupted {
			why = "interrupted"
		}
		made = fmt.Sprintf("%d of %d endpoint changes (%s)", r.Changes, r.ChangesWanted, why)
	}
	timedOut := ""
	if r.TimedOut > 0 {
		timedOut = fmt.Sprintf(", %d NOT SEEN within the change timeout", r.TimedOut)
	}
	return fmt.Sprintf("churn: %d routes, %s in %s: change-to-traffic p50 %s p99 %s max %s (%d measured%s); reloads %.0f%s, RELOAD_INTERVAL %s; router CPU %.1f ms per change; failed requests %d of %d (misrouted %d)%s; %s%s",
		r.Routes, made, seconds(secs(r.PhaseSeconds)), seconds(secs(r.Latency.P50)), seconds(secs(r.Latency.P99)), seconds(secs(r.Latency.Max)),
		r.Latency.Count, timedOut, r.Reloads, avoided, r.ReloadInterval, r.CPUPerChangeMs, r.Load.Failed, r.Load.Requests, r.Load.Misrouted,
		failureNote(r.Load), r.TargetsDetail, stopNote(r.StopProblem))
}

func failureNote(l loadStats) string {
	if len(l.Errors) == 0 {
		return ""
	}
	return " [" + topErrors(l.Errors, 3) + "]"
}

func runChurn(ctx context.Context, cfg config) (res *churnResult, err error) {
	n := cfg.ChurnRoutes
	cfg.logf("churn: %d routes, %d endpoint changes", n, cfg.ChurnChanges)
	f, err := newFixture(cfg, n)
	if err != nil {
		return nil, err
	}
	loadRoutes, churnRoutes := f.Routes[:n/2], f.Routes[n/2:]
	res = &churnResult{Scenario: "churn", Routes: n, LoadRoutes: len(loadRoutes), ChangesWanted: cfg.ChurnChanges, ReloadInterval: cfg.reloadIntervalLabel()}
	defer func() { closeFixture(f, &res.StopProblem, &err) }()
	before, err := f.startServing(ctx)
	if err != nil {
		return res, err
	}

	ld := startLoad(ctx, f.Router, loadRoutes, cfg.LoadWorkers, cfg.LoadRate, cfg.PhaseTimeout+time.Minute)
	sleepCtx(ctx, time.Second) // the load is steady before the first change
	cpu0, err := cpuSeconds(f.Router.PID())
	if err != nil {
		ld.stop()
		return res, err
	}
	start := time.Now()
	deadline := start.Add(cfg.PhaseTimeout)
	probe := newClient(f.Router.HTTPPort, 1)
	defer probe.close()
	var lats []time.Duration
	consecutiveTimeouts := 0
	for c := 0; c < cfg.ChurnChanges; c++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if time.Now().After(deadline) {
			res.PhaseTimeLimit = true
			break
		}
		rt := churnRoutes[c%len(churnRoutes)]
		rt.Backend = f.Backends[(rt.Backend.Index+1)%len(f.Backends)]
		t0 := time.Now()
		if err := f.writeFile(rt.Name+"-eps.yaml", endpointSliceYAML(rt), true); err != nil {
			ld.stop()
			return res, err
		}
		res.Changes++
		for {
			r := probe.get(ctx, rt.Host)
			if r.ok(rt.Backend) {
				lats = append(lats, time.Since(t0))
				consecutiveTimeouts = 0
				break
			}
			if r.failed() && ctx.Err() == nil {
				res.ProbeFailures++
				if len(res.ProbeFailureLog) < 5 {
					res.ProbeFailureLog = append(res.ProbeFailureLog, rt.Host+": "+r.describe())
				}
			}
			if ctx.Err() != nil {
				break // interrupted: neither seen nor timed out
			}
			if time.Since(t0) > cfg.ChangeTimeout {
				res.TimedOut++
				consecutiveTimeouts++
				break
			}
			sleepCtx(ctx, cfg.PollInterval)
		}
		if consecutiveTimeouts >= 3 {
			res.Load = ld.stop()
			return res, fmt.Errorf("3 endpoint changes in a row did not reach traffic within %s; router log:\n%s", cfg.ChangeTimeout, f.Router.LogTail(20))
		}
		if err := f.Router.exited(); err != nil {
			res.Load = ld.stop()
			return res, err
		}
	}
	res.PhaseSeconds = time.Since(start).Seconds()
	cfg.logf("churn: %d changes made in %s", res.Changes, seconds(time.Since(start)))
	res.Load = ld.stop()
	f.settle(ctx) // the last coalesced write of haproxy.config
	if cpu1, err := cpuSeconds(f.Router.PID()); err == nil && res.Changes > 0 {
		res.RouterCPUSeconds = cpu1 - cpu0
		res.CPUPerChangeMs = res.RouterCPUSeconds * 1000 / float64(res.Changes)
	}
	res.Observed = len(lats)
	res.Latency = summarize(lats)
	after, err := f.Router.counters(context.WithoutCancel(ctx)) // also when interrupted: the report is complete
	if err != nil {
		return res, err
	}
	res.Reloads = after.Reloads - before.Reloads
	res.ReloadFailures = after.ReloadFailures - before.ReloadFailures
	if after.HasAvoided {
		v := after.Avoided - before.Avoided
		res.ReloadsAvoided = &v
	}
	res.TargetsMet, res.TargetsDetail = churnTargets(res)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func churnTargets(r *churnResult) (bool, string) {
	var missed []string
	if r.Reloads != 0 {
		missed = append(missed, fmt.Sprintf("reloads %.0f", r.Reloads))
	}
	if r.Load.Failed != 0 {
		missed = append(missed, fmt.Sprintf("failed %d", r.Load.Failed))
	}
	if r.Latency.Count == 0 || r.Latency.P99 >= 1 || r.TimedOut > 0 {
		missed = append(missed, fmt.Sprintf("p99 %s", seconds(secs(r.Latency.P99))))
	}
	if r.Changes < r.ChangesWanted {
		missed = append(missed, "not all changes made")
	}
	if len(missed) == 0 {
		return true, "targets (reloads 0, failed 0, p99 < 1s) met"
	}
	return false, "targets (reloads 0, failed 0, p99 < 1s) NOT met: " + strings.Join(missed, ", ")
}

// ---------------------------------------------------------------- route churn

type routeChurnResult struct {
	Scenario         string      `json:"scenario"`
	Routes           int         `json:"routes"`
	Names            string      `json:"names"` // "new" or "same" (Config.RouteChurnNames)
	Kinds            []routeKind `json:"kinds"` // of the routes loaded and changed, round robin
	ChangesWanted    int         `json:"changes_wanted"`
	Added            int         `json:"added"`
	Deleted          int         `json:"deleted"`
	PaceSeconds      float64     `json:"pace_seconds"`
	PhaseSeconds     float64     `json:"phase_seconds"`
	PhaseTimeLimit   bool        `json:"phase_time_limit_reached"`
	Interrupted      bool        `json:"interrupted,omitempty"`
	ConvergedSeconds float64     `json:"converged_seconds"` // after the last change, until every added route answers and every deleted one does not
	// AddLatency: from writing an added route's file until it answers
	// from its backend; DeleteLatency: from removing a route's file until
	// it no longer does (fresh connections, polled every 10 ms).
	AddLatency    latencyStats `json:"add_to_traffic"`
	DeleteLatency latencyStats `json:"delete_to_traffic"`
	// ByKind is the same by kind of route.
	ByKind map[routeKind]kindLatency `json:"by_kind,omitempty"`
	// NotSeen counts changes not seen before the next change of their
	// route, or within the change timeout.
	NotSeen           int          `json:"changes_not_seen,omitempty"`
	ReloadInterval    string       `json:"reload_interval"`
	Reloads           float64      `json:"reloads"`
	ReloadFailures    float64      `json:"reload_failures"`
	ReloadsAvoided    *float64     `json:"reloads_avoided,omitempty"`
	Load              loadStats    `json:"load"`
	HAProxyAtEnd      int          `json:"haproxy_processes_at_end"`
	HAProxyMax        int          `json:"haproxy_processes_max"`
	HAProxyEndDetail  haproxyProcs `json:"haproxy_at_end"`
	HAProxyAfterLoad  int          `json:"haproxy_processes_after_load_stopped"`
	StopProblem       string       `json:"stop_problem,omitempty"`
	ConvergenceDetail string       `json:"convergence_detail,omitempty"`
}

func (r *routeChurnResult) Line() string {
	avoided := ""
	if r.ReloadsAvoided != nil {
		avoided = fmt.Sprintf(" (reloads avoided: %.0f)", *r.ReloadsAvoided)
	}
	limit := ""
	if r.PhaseTimeLimit {
		limit = fmt.Sprintf(" (of %d: phase time limit reached)", r.ChangesWanted)
	}
	if r.Interrupted {
		limit = fmt.Sprintf(" (of %d: interrupted)", r.ChangesWanted)
	}
	names := "new names"
	if r.Names == "same" {
		names = "one route deleted and created again"
	}
	names += fmt.Sprintf("; kinds %v", r.Kinds)
	notSeen := ""
	if r.NotSeen > 0 {
		notSeen = fmt.Sprintf(" (%d changes NOT seen before the next change of their route or the change timeout)", r.NotSeen)
	}
	return fmt.Sprintf("route-churn (%s): %d routes under load, %d additions + %d deletions%s every %s in %s; change to traffic: added p50 %s p99 %s max %s, deleted p50 %s p99 %s max %s%s; converged %s after the last; reloads %.0f%s (failed %.0f), RELOAD_INTERVAL %s; failed requests %d of %d (misrouted %d)%s; haproxy processes at the end %d (master + %d workers + %d other), max during the phase %d, %d once the load stopped%s",
		names, r.Routes, r.Added, r.Deleted, limit, seconds(secs(r.PaceSeconds)), seconds(secs(r.PhaseSeconds)),
		seconds(secs(r.AddLatency.P50)), seconds(secs(r.AddLatency.P99)), seconds(secs(r.AddLatency.Max)),
		seconds(secs(r.DeleteLatency.P50)), seconds(secs(r.DeleteLatency.P99)), seconds(secs(r.DeleteLatency.Max)), notSeen,
		seconds(secs(r.ConvergedSeconds)),
		r.Reloads, avoided, r.ReloadFailures, r.ReloadInterval, r.Load.Failed, r.Load.Requests, r.Load.Misrouted, failureNote(r.Load),
		r.HAProxyAtEnd, len(r.HAProxyEndDetail.Workers), len(r.HAProxyEndDetail.Other), r.HAProxyMax, r.HAProxyAfterLoad, stopNote(r.StopProblem)) + r.kindsLine()
}

// kindsLine is the change to traffic by kind of route (p50/p99 added,
// then deleted), in the order of Kinds.
func (r *routeChurnResult) kindsLine() string {
	if len(r.ByKind) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; by kind, p50/p99 added, deleted:")
	pair := func(l latencyStats) string {
		if l.Count == 0 {
			return "-"
		}
		return seconds(secs(l.P50)) + "/" + seconds(secs(l.P99))
	}
	for _, k := range r.Kinds {
		if l, ok := r.ByKind[k]; ok {
			fmt.Fprintf(&b, " %s %s, %s;", k, pair(l.Added), pair(l.Deleted))
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

func runRouteChurn(ctx context.Context, cfg config) (res *routeChurnResult, err error) {
	n := cfg.RouteChurnRoutes
	cfg.logf("route-churn: %d routes, %d route changes every %s", n, cfg.RouteChanges, cfg.RouteChangePace)
	f, err := newFixtureOf(cfg, n, cfg.routeChurnKinds())
	if err != nil {
		return nil, err
	}
	res = &routeChurnResult{Scenario: "route-churn", Routes: n, Names: cfg.RouteChurnNames, Kinds: f.Kinds, ChangesWanted: cfg.RouteChanges, PaceSeconds: cfg.RouteChangePace.Seconds(), ReloadInterval: cfg.reloadIntervalLabel()}
	defer func() { closeFixture(f, &res.StopProblem, &err) }()
	before, err := f.startServing(ctx)
	if err != nil {
		return res, err
	}

	ld := startLoad(ctx, f.Router, f.Routes, cfg.LoadWorkers, cfg.LoadRate, cfg.PhaseTimeout+cfg.ChangeTimeout+time.Minute)
	// Sample the haproxy processes while routes change.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	maxProcs := 0
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if c := len(haproxyPIDs(f.Router.WorkingDir)); c > maxProcs {
				maxProcs = c
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	sleepCtx(ctx, time.Second)

	// Changes: add x0, then alternately add x(j) and delete x(j-1). The end
	// state (the last one or two added routes present, every earlier one
	// deleted) can be checked. With the same names: x0 is there before the
	// phase, then deleted and created again, alternately.
	extra := func(j int) *route { return f.route(fmt.Sprintf("x%d", j), j) }
	seen := newChangeWatch(ctx, f, cfg.ChangeTimeout)
	present := map[int]bool{}
	same := cfg.RouteChurnNames == "same"
	if same {
		if before, err = f.preAdd(ctx, extra(0)); err != nil {
			stopSampling()
			sampler.Wait()
			ld.stop()
			return res, err
		}
		present[0] = true
	}
	start := time.Now()
	deadline := start.Add(cfg.PhaseTimeout)
	next := 0 // next route to add
	var opErr error
	for op := 0; op < cfg.RouteChanges; op++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if time.Now().After(deadline) {
			res.PhaseTimeLimit = true
			break
		}
		if same {
			rt := extra(0)
			if present[0] {
				opErr = seen.remove(rt)
				res.Deleted++
			} else {
				opErr = seen.add(rt)
				res.Added++
			}
			if opErr != nil {
				break
			}
			present[0] = !present[0]
			next = 1
		} else if op == 0 || op%2 == 1 {
			rt := extra(next)
			if opErr = seen.add(rt); opErr != nil {
				break
			}
			present[next] = true
			next++
			res.Added++
		} else {
			j := next - 2
			if opErr = seen.remove(extra(j)); opErr != nil {
				break
			}
			delete(present, j)
			res.Deleted++
		}
		sleepCtx(ctx, cfg.RouteChangePace)
	}
	res.PhaseSeconds = time.Since(start).Seconds()
	res.AddLatency, res.DeleteLatency, res.NotSeen = seen.wait()
	res.ByKind = seen.byKindStats()
	if opErr != nil {
		stopSampling()
		sampler.Wait()
		ld.stop()
		return res, opErr
	}

	// Convergence: every present route answers from its backend, every
	// deleted one does not answer from a backend.
	lastChange := time.Now()
	probe := newClient(f.Router.HTTPPort, 1).withHTTPS(f.Router.HTTPSPort)
	defer probe.close()
	converged := false
	for time.Since(lastChange) < cfg.ChangeTimeout && ctx.Err() == nil {
		pending := ""
		for j := 0; j < next && pending == ""; j++ {
			rt := extra(j)
			r := probe.getRoute(ctx, rt)
			switch {
			case present[j] && !r.ok(rt.Backend):
				pending = fmt.Sprintf("added %s: %s", rt.Host, r.describe())
			case !present[j] && r.Err == nil && r.Status == 200:
				pending = fmt.Sprintf("deleted %s still answers (%s)", rt.Host, r.describe())
			case !present[j] && r.Err != nil:
				pending = fmt.Sprintf("deleted %s: %s", rt.Host, r.describe())
			}
		}
		if pending == "" {
			converged = true
			break
		}
		res.ConvergenceDetail = pending
		sleepCtx(ctx, 50*time.Millisecond)
	}
	res.ConvergedSeconds = time.Since(lastChange).Seconds()
	procs := f.Router.haproxyProcs()
	res.HAProxyAtEnd, res.HAProxyEndDetail = procs.Count(), procs
	stopSampling()
	sampler.Wait()
	res.HAProxyMax = maxProcs
	if procs.Count() > res.HAProxyMax {
		res.HAProxyMax = procs.Count()
	}
	res.Load = ld.stop()
	after, err := f.Router.counters(context.WithoutCancel(ctx)) // also when interrupted: the report is complete
	if err != nil {
		return res, err
	}
	res.Reloads = after.Reloads - before.Reloads
	res.ReloadFailures = after.ReloadFailures - before.ReloadFailures
	if after.HasAvoided {
		v := after.Avoided - before.Avoided
		res.ReloadsAvoided = &v
	}
	// Old workers should leave once their connections are gone.
	sleepCtx(ctx, time.Second)
	res.HAProxyAfterLoad = f.Router.haproxyProcs().Count()
	if !converged {
		return res, fmt.Errorf("routes did not converge within %s after the last change: %s", cfg.ChangeTimeout, res.ConvergenceDetail)
	}
	res.ConvergenceDetail = ""
	return res, ctx.Err()
}

// changeWatch makes route changes and measures each one's time to
// traffic: a goroutine per change polls the route (fresh connections,
// every 10 ms, at most timeout) until it answers from its backend (added)
// or no longer does (deleted). A change whose route changes again before
// it was seen (an addition deleted before it answered) was not seen: the
// next change's watch starts then.
type changeWatch struct {
	ctx     context.Context
	f       *fixture
	timeout time.Duration
	wg      sync.WaitGroup

	mu          sync.Mutex
	added, gone []time.Duration
	byKind      map[routeKind]*[2][]time.Duration // added, gone
	notSeen     int
	pending     map[string]context.CancelFunc // changes still watched, by route name
}

func newChangeWatch(ctx context.Context, f *fixture, timeout time.Duration) *changeWatch {
	return &changeWatch{ctx: ctx, f: f, timeout: timeout, pending: map[string]context.CancelFunc{}, byKind: map[routeKind]*[2][]time.Duration{}}
}

// add writes route rt's file and watches it answer.
func (w *changeWatch) add(rt *route) error {
	w.supersede(rt)
	t0 := time.Now()
	if err := w.f.writeFile(rt.Name+".yaml", fullRouteYAML(rt), true); err != nil {
		return err
	}
	w.watch(rt, true, t0)
	return nil
}

// remove removes route rt's file and watches it stop answering.
func (w *changeWatch) remove(rt *route) error {
	w.supersede(rt)
	t0 := time.Now()
	if err := w.f.removeFile(rt.Name + ".yaml"); err != nil {
		return err
	}
	w.watch(rt, false, t0)
	return nil
}

// supersede ends the watch of rt's last change, if it still runs.
func (w *changeWatch) supersede(rt *route) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cancel, ok := w.pending[rt.Name]; ok {
		cancel()
		delete(w.pending, rt.Name)
	}
}

func (w *changeWatch) watch(rt *route, present bool, t0 time.Time) {
	ctx, cancel := context.WithDeadline(w.ctx, t0.Add(w.timeout))
	w.mu.Lock()
	w.pending[rt.Name] = cancel
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cancel()
		for ctx.Err() == nil {
			c := newClient(w.f.Router.HTTPPort, 1).withHTTPS(w.f.Router.HTTPSPort)
			ok := c.getRoute(ctx, rt).ok(rt.Backend)
			c.close()
			if ok == present {
				d := time.Since(t0)
				w.mu.Lock()
				k := w.byKind[rt.Kind]
				if k == nil {
					k = &[2][]time.Duration{}
					w.byKind[rt.Kind] = k
				}
				if present {
					w.added = append(w.added, d)
					k[0] = append(k[0], d)
				} else {
					w.gone = append(w.gone, d)
					k[1] = append(k[1], d)
				}
				w.mu.Unlock()
				return
			}
			sleepCtx(ctx, 10*time.Millisecond)
		}
		w.mu.Lock()
		w.notSeen++
		w.mu.Unlock()
	}()
}

// wait waits for every watch and summarises them.
func (w *changeWatch) wait() (added, gone latencyStats, notSeen int) {
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return summarize(w.added), summarize(w.gone), w.notSeen
}

// kindLatency is the change to traffic of one kind of route.
type kindLatency struct {
	Added   latencyStats `json:"add_to_traffic"`
	Deleted latencyStats `json:"delete_to_traffic"`
}

// byKindStats summarises the watches by kind of route (after wait).
func (w *changeWatch) byKindStats() map[routeKind]kindLatency {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[routeKind]kindLatency, len(w.byKind))
	for k, ds := range w.byKind {
		out[k] = kindLatency{Added: summarize(ds[0]), Deleted: summarize(ds[1])}
	}
	return out
}

// ---------------------------------------------------------------- data plane

type wrkStats struct {
	Routes       int       `json:"routes"`
	RPS          float64   `json:"requests_per_second"` // median over the rounds
	Rounds       []float64 `json:"rounds_requests_per_second"`
	Requests     int64     `json:"requests"`
	Non2xx       int64     `json:"non_2xx_3xx"`
	SocketErrors int64     `json:"socket_errors"`
	LatencyAvg   string    `json:"latency_avg"` // of the median round
}

type dataPlaneResult struct {
	Scenario  string   `json:"scenario"`
	WrkArgs   string   `json:"wrk_args"`
	Rounds    int      `json:"rounds"`
	One       wrkStats `json:"one_route"`
	Many      wrkStats `json:"many_routes"`
	Ratio     float64  `json:"ratio"` // many / one, medians
	TargetMet bool     `json:"target_met"`
	// Bare is the hand-written one-route HAProxy on r0's backend
	// (bareHAProxy), measured in the same alternation; ManyToBare and
	// OneToBare are the routers' medians over its median (issue 25's
	// target: many ≥ 0.9 of it).
	Bare          wrkStats `json:"bare_haproxy"`
	OneToBare     float64  `json:"one_route_to_bare"`
	ManyToBare    float64  `json:"many_routes_to_bare"`
	BareTargetMet bool     `json:"bare_target_met"`
	StopProblem   string   `json:"stop_problem,omitempty"`
}

func (r *dataPlaneResult) Line() string {
	target := "target ≥ 0.95 met"
	if !r.TargetMet {
		target = "target ≥ 0.95 NOT met"
	}
	errs := ""
	if n := r.One.Non2xx + r.One.SocketErrors + r.Many.Non2xx + r.Many.SocketErrors; n > 0 {
		errs = fmt.Sprintf("; ERRORS: non-2xx %d/%d, socket errors %d/%d", r.One.Non2xx, r.Many.Non2xx, r.One.SocketErrors, r.Many.SocketErrors)
	}
	bare := "target ≥ 0.9 met"
	if !r.BareTargetMet {
		bare = "target ≥ 0.9 NOT met"
	}
	if n := r.Bare.Non2xx + r.Bare.SocketErrors; n > 0 {
		errs += fmt.Sprintf("; ERRORS of the hand-written HAProxy: non-2xx %d, socket errors %d", r.Bare.Non2xx, r.Bare.SocketErrors)
	}
	return fmt.Sprintf("dataplane (wrk %s, median of %d alternating rounds): 1 route %.0f req/s (latency avg %s), %d routes %.0f req/s (latency avg %s); ratio %.3f, %s; a hand-written one-route HAProxy on the same backend %.0f req/s (latency avg %s): 1 route %.3f of it, %d routes %.3f, %s%s%s",
		r.WrkArgs, r.Rounds, r.One.RPS, r.One.LatencyAvg, r.Many.Routes, r.Many.RPS, r.Many.LatencyAvg, r.Ratio, target,
		r.Bare.RPS, r.Bare.LatencyAvg, r.OneToBare, r.Many.Routes, r.ManyToBare, bare, errs, stopNote(r.StopProblem))
}

// runDataPlane runs two routers side by side, one with 1 route and one with
// cfg.DataPlaneRoutes, and a hand-written one-route HAProxy on the backend
// of their route r0, and measures r0 of each (and the hand-written one)
// with wrk, alternating between them for cfg.WrkRounds rounds so that
// drift in the machine's speed hits all alike.
func runDataPlane(ctx context.Context, cfg config) (res *dataPlaneResult, err error) {
	res = &dataPlaneResult{Scenario: "dataplane", WrkArgs: cfg.WrkArgs, Rounds: cfg.WrkRounds}
	res.One.Routes, res.Many.Routes, res.Bare.Routes = 1, cfg.DataPlaneRoutes, 1
	var fs []*fixture
	var bare *bareHAProxy
	defer func() {
		if bare != nil {
			bare.Close()
		}
		for _, f := range fs {
			var problem string
			closeFixture(f, &problem, &err)
			res.StopProblem = joinNonEmpty("; ", res.StopProblem, problem)
		}
	}()
	for _, n := range []int{1, cfg.DataPlaneRoutes} {
		cfg.logf("dataplane: router with %d routes", n)
		f, err := newFixture(cfg, n)
		if err != nil {
			return res, err
		}
		fs = append(fs, f)
		if err := f.start(); err != nil {
			return res, err
		}
		if _, err := f.waitAllRoutes(ctx); err != nil {
			return res, err
		}
	}
	if bare, err = startBareHAProxy(ctx, cfg, fs[0].Dir, fs[0].Routes[0].Backend); err != nil {
		return res, err
	}
	fs[0].settle(ctx)
	type target struct {
		name string
		port int
		host string
	}
	targets := []target{
		{fmt.Sprintf("%d routes", 1), fs[0].Router.HTTPPort, fs[0].Routes[0].Host},
		{fmt.Sprintf("%d routes", cfg.DataPlaneRoutes), fs[1].Router.HTTPPort, fs[1].Routes[0].Host},
		{"hand-written HAProxy", bare.Port, fs[0].Routes[0].Host},
	}
	stats := []*wrkStats{&res.One, &res.Many, &res.Bare}
	outs := make([][]wrkStats, len(targets))
	for round := 0; round < cfg.WrkRounds; round++ {
		for i, tg := range targets {
			url := fmt.Sprintf("http://127.0.0.1:%d/", tg.port)
			host := tg.host
			if round == 0 && cfg.WrkWarmup > 0 {
				if _, err := wrk(ctx, cfg, withDuration(strings.Fields(cfg.WrkArgs), cfg.WrkWarmup), host, url); err != nil {
					return res, fmt.Errorf("wrk warm-up: %w", err)
				}
			}
			out, err := wrk(ctx, cfg, strings.Fields(cfg.WrkArgs), host, url)
			if err != nil {
				return res, err
			}
			var st wrkStats
			if err := parseWrk(out, &st); err != nil {
				return res, err
			}
			cfg.logf("dataplane: round %d, %s: %.0f req/s", round+1, tg.name, st.RPS)
			outs[i] = append(outs[i], st)
			stats[i].Rounds = append(stats[i].Rounds, st.RPS)
			stats[i].Requests += st.Requests
			stats[i].Non2xx += st.Non2xx
			stats[i].SocketErrors += st.SocketErrors
		}
	}
	for i := range stats {
		rounds := append([]wrkStats(nil), outs[i]...)
		sort.Slice(rounds, func(a, b int) bool { return rounds[a].RPS < rounds[b].RPS })
		if len(rounds) > 0 {
			med := rounds[(len(rounds)-1)/2]
			stats[i].RPS, stats[i].LatencyAvg = med.RPS, med.LatencyAvg
		}
	}
	if res.One.RPS > 0 {
		res.Ratio = res.Many.RPS / res.One.RPS
	}
	res.TargetMet = res.Ratio >= 0.95
	if res.Bare.RPS > 0 {
		res.OneToBare, res.ManyToBare = res.One.RPS/res.Bare.RPS, res.Many.RPS/res.Bare.RPS
	}
	res.BareTargetMet = res.ManyToBare >= 0.9
	return res, ctx.Err()
}

func wrk(ctx context.Context, cfg config, args []string, host, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args = append(append([]string(nil), args...), "-H", "Host: "+host, url)
	cmd := exec.CommandContext(ctx, cfg.Wrk, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v\n%s", cfg.Wrk, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// withDuration replaces wrk's -d/--duration in args by d.
func withDuration(args []string, d time.Duration) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" || a == "--duration":
			i++ // and its value
		case strings.HasPrefix(a, "-d") || strings.HasPrefix(a, "--duration="):
		default:
			out = append(out, a)
		}
	}
	secs := int(d.Round(time.Second).Seconds())
	if secs < 1 {
		secs = 1
	}
	return append(out, "-d", fmt.Sprintf("%ds", secs))
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkTotal    = regexp.MustCompile(`(?m)^\s*([0-9]+) requests in `)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+([0-9]+)`)
	wrkSockErr  = regexp.MustCompile(`(?m)^\s*Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)`)
	wrkLatency  = regexp.MustCompile(`(?m)^\s*Latency\s+(\S+)`)
	errNoWrkRPS = errors.New("wrk printed no Requests/sec")
)

func parseWrk(out string, st *wrkStats) error {
	m := wrkRPS.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("%w:\n%s", errNoWrkRPS, out)
	}
	st.RPS, _ = strconv.ParseFloat(m[1], 64)
	if m := wrkTotal.FindStringSubmatch(out); m != nil {
		st.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		st.Non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkSockErr.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			v, _ := strconv.ParseInt(s, 10, 64)
			st.SocketErrors += v
		}
	}
	if m := wrkLatency.FindStringSubmatch(out); m != nil {
		st.LatencyAvg = m[1]
	}
	return nil
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
