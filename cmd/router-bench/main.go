// Command router-bench measures the real openshift-router binary with a real
// HAProxy on a manifests directory: cold start, endpoint churn, route churn,
// memory and data-plane throughput. Backends are small HTTP servers it runs
// itself on 127.0.0.x loopback addresses; everything it starts is stopped by
// PID and every temporary directory is removed when it ends.
//
//	router-bench -router bin/openshift-router -scenario cold-start -routes 1000
//	router-bench -router bin/openshift-router -scenario churn,route-churn
//	router-bench -router bin/openshift-router -scenario memory -routes 10000
//	router-bench -router bin/openshift-router -scenario dataplane -dataplane-routes 10000
//
// Each scenario prints one human-readable result line on stdout (progress
// goes to stderr); -json FILE also appends one JSON object per scenario.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// scenarioNames lists the scenarios in the order they run.
var scenarioNames = []string{"cold-start", "churn", "route-churn", "memory", "dataplane", "request-cost"}

// config is everything a scenario needs; flags fill it.
type config struct {
	RouterBin      string        // openshift-router binary
	HAProxy        string        // haproxy binary passed to the router ("" = haproxy from PATH)
	Wrk            string        // wrk binary
	TempDir        string        // parent of the temporary directories ("" = os.TempDir())
	Keep           bool          // keep temporary directories (manifests, working dir, router log)
	ReloadInterval string        // RELOAD_INTERVAL for the router ("" = the router's default, 5s)
	RouterEnv      []string      // extra KEY=VALUE for the router
	Backends       int           // backend servers (routes are spread over them)
	CheckWorkers   int           // concurrent requests while checking that routes answer
	ReadyTimeout   time.Duration // bound on start-up until every route answers
	Settle         time.Duration // wait after the routes answer, before measuring

	Routes int // cold-start and memory: routes loaded

	LoadWorkers int // steady-load client workers (churn, route churn)
	LoadRate    int // steady-load total requests per second

	ChurnRoutes   int           // churn: routes loaded
	ChurnChanges  int           // churn: endpoint changes
	ChangeTimeout time.Duration // churn: bound on one change-to-traffic wait
	PollInterval  time.Duration // churn: polling interval while waiting for a change
	PhaseTimeout  time.Duration // churn, route churn: bound on the measured phase

	RouteChurnRoutes int           // route churn: routes loaded
	RouteChanges     int           // route churn: additions + deletions
	RouteChangePace  time.Duration // route churn: time between two changes
	// RouteChurnNames: "new" (each addition a route of a new name) or
	// "same" (one route deleted and created again).
	RouteChurnNames string
	// RouteChurnKinds are the kinds of the routes loaded and changed,
	// comma-separated, round robin.
	RouteChurnKinds string
	// Kinds are the kinds of the routes of the other scenarios (cold
	// start, memory, endpoint churn, data plane), comma-separated, round
	// robin.
	Kinds string

	DataPlaneRoutes int           // data plane: routes loaded in the second run
	WrkArgs         string        // data plane: wrk's load arguments
	WrkWarmup       time.Duration // data plane: warm-up run before the first measurement of each router
	WrkRounds       int           // data plane: alternating measurements of each router (the median counts)

	CostRequests int // request cost: requests counted (the count for twice as many less this one's)

	Log io.Writer // progress
}

func defaultConfig() config {
	return config{
		RouterBin:        "bin/openshift-router",
		Wrk:              "wrk",
		Backends:         50,
		CheckWorkers:     32,
		ReadyTimeout:     10 * time.Minute,
		Settle:           2 * time.Second,
		Routes:           1000,
		LoadWorkers:      4,
		LoadRate:         200,
		ChurnRoutes:      2000,
		ChurnChanges:     500,
		ChangeTimeout:    30 * time.Second,
		PollInterval:     10 * time.Millisecond,
		PhaseTimeout:     20 * time.Minute,
		RouteChurnRoutes: 2000,
		RouteChanges:     200,
		RouteChangePace:  250 * time.Millisecond,
		RouteChurnNames:  "new",
		RouteChurnKinds:  "unsecured,edge,edge-cert,passthrough,reencrypt,reencrypt-ca",
		Kinds:            "unsecured",
		DataPlaneRoutes:  10000,
		WrkArgs:          "-t2 -c32 -d10s",
		WrkWarmup:        2 * time.Second,
		WrkRounds:        3,
		CostRequests:     2000,
		Log:              os.Stderr,
	}
}

// result is what every scenario returns: a line for people and an object
// for -json.
type result interface {
	Line() string
}

func main() {
	cfg := defaultConfig()
	var scenarios, jsonOut, routerEnv string
	fs := flag.NewFlagSet("router-bench", flag.ExitOnError)
	fs.StringVar(&scenarios, "scenario", "cold-start", "comma-separated scenarios to run: "+strings.Join(scenarioNames, ", ")+", or all")
	fs.StringVar(&cfg.RouterBin, "router", cfg.RouterBin, "openshift-router binary (make build)")
	fs.StringVar(&cfg.HAProxy, "haproxy", "", "haproxy binary for the router (default: haproxy from PATH)")
	fs.StringVar(&cfg.Wrk, "wrk", cfg.Wrk, "wrk binary (data plane)")
	fs.StringVar(&cfg.TempDir, "tmp", "", "parent of the temporary directories (default $TMPDIR or /tmp; keep it short: unix sockets live there)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temporary directories (manifests, router working dir and log)")
	fs.StringVar(&cfg.ReloadInterval, "reload-interval", "", "RELOAD_INTERVAL for the router (default: the router's own default, 5s)")
	fs.StringVar(&routerEnv, "router-env", "", "extra comma-separated KEY=VALUE environment for the router")
	fs.IntVar(&cfg.Backends, "backends", cfg.Backends, "backend HTTP servers on 127.0.0.x (routes are spread over them)")
	fs.IntVar(&cfg.CheckWorkers, "check-workers", cfg.CheckWorkers, "concurrent requests when checking that every route answers")
	fs.DurationVar(&cfg.ReadyTimeout, "ready-timeout", cfg.ReadyTimeout, "bound on a start until every route answers")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "wait after the routes answer before measuring")
	fs.IntVar(&cfg.Routes, "routes", cfg.Routes, "cold-start, memory: routes")
	fs.IntVar(&cfg.LoadWorkers, "load-workers", cfg.LoadWorkers, "churn, route-churn: steady-load workers")
	fs.IntVar(&cfg.LoadRate, "load-rate", cfg.LoadRate, "churn, route-churn: steady-load requests per second (all workers)")
	fs.IntVar(&cfg.ChurnRoutes, "churn-routes", cfg.ChurnRoutes, "churn: routes (half carry the load, half are changed)")
	fs.IntVar(&cfg.ChurnChanges, "churn-changes", cfg.ChurnChanges, "churn: endpoint changes, one after another")
	fs.DurationVar(&cfg.ChangeTimeout, "change-timeout", cfg.ChangeTimeout, "churn, route-churn: bound on waiting for one change to reach traffic")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", cfg.PollInterval, "churn: interval of the requests that wait for a change")
	fs.DurationVar(&cfg.PhaseTimeout, "phase-timeout", cfg.PhaseTimeout, "churn, route-churn: bound on the measured phase (changes not made by then are reported as not made)")
	fs.IntVar(&cfg.RouteChurnRoutes, "route-churn-routes", cfg.RouteChurnRoutes, "route-churn: routes carrying the load")
	fs.IntVar(&cfg.RouteChanges, "route-changes", cfg.RouteChanges, "route-churn: route additions and deletions (alternating)")
	fs.DurationVar(&cfg.RouteChangePace, "route-change-pace", cfg.RouteChangePace, "route-churn: time between two route changes")
	fs.StringVar(&cfg.RouteChurnNames, "route-churn-names", cfg.RouteChurnNames, `route-churn: "new" (every addition a route of a new name, the one added before deleted) or "same" (one route deleted and created again)`)
	fs.StringVar(&cfg.RouteChurnKinds, "route-churn-kinds", cfg.RouteChurnKinds, "route-churn: kinds of the routes loaded and changed, round robin: "+fmt.Sprint(routeKinds))
	fs.StringVar(&cfg.Kinds, "kinds", cfg.Kinds, "cold-start, memory, churn, dataplane: kinds of the routes, round robin: "+fmt.Sprint(routeKinds))
	fs.IntVar(&cfg.DataPlaneRoutes, "dataplane-routes", cfg.DataPlaneRoutes, "dataplane: routes loaded in the second run (the first has 1)")
	fs.StringVar(&cfg.WrkArgs, "wrk-args", cfg.WrkArgs, "dataplane: wrk load arguments")
	fs.DurationVar(&cfg.WrkWarmup, "wrk-warmup", cfg.WrkWarmup, "dataplane: warm-up wrk run before the first measurement of each router (0: none)")
	fs.IntVar(&cfg.WrkRounds, "wrk-rounds", cfg.WrkRounds, "dataplane: measurements of each router, alternating between them; the median counts")
	fs.IntVar(&cfg.CostRequests, "cost-requests", cfg.CostRequests, "request-cost: requests counted through r0 (the instructions of twice as many less theirs, over them)")
	fs.StringVar(&jsonOut, "json", "", "also append one JSON object per scenario (a line each) to this file (- for stdout)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "router-bench: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if routerEnv != "" {
		cfg.RouterEnv = strings.Split(routerEnv, ",")
	}
	selected, err := parseScenarios(scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, "router-bench:", err)
		os.Exit(2)
	}
	if err := cfg.check(selected); err != nil {
		fmt.Fprintln(os.Stderr, "router-bench:", err)
		os.Exit(2)
	}

	var jsonW io.Writer
	if jsonOut == "-" {
		jsonW = os.Stdout
	} else if jsonOut != "" {
		f, err := os.OpenFile(jsonOut, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "router-bench:", err)
			os.Exit(1)
		}
		defer f.Close()
		jsonW = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	for _, name := range selected {
		res, err := runScenario(ctx, cfg, name)
		if res != nil {
			fmt.Println(res.Line())
			if jsonW != nil {
				b, _ := json.Marshal(res)
				fmt.Fprintf(jsonW, "%s\n", b)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "router-bench: %s: %v\n", name, err)
			failed = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed {
		stop()
		os.Exit(1)
	}
}

func parseScenarios(s string) ([]string, error) {
	want := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == "all" {
			for _, n := range scenarioNames {
				want[n] = true
			}
			continue
		}
		known := false
		for _, n := range scenarioNames {
			known = known || n == name
		}
		if !known {
			return nil, fmt.Errorf("unknown scenario %q (known: %s, all)", name, strings.Join(scenarioNames, ", "))
		}
		want[name] = true
	}
	var out []string
	for _, n := range scenarioNames {
		if want[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no scenario selected")
	}
	return out, nil
}

// check validates the configuration and finds the binaries the selected
// scenarios need.
func (c *config) check(scenarios []string) error {
	if _, err := os.Stat(c.RouterBin); err != nil {
		return fmt.Errorf("router binary: %v (build it with make build, or pass -router)", err)
	}
	hap := c.HAProxy
	if hap == "" {
		hap = "haproxy"
	}
	if _, err := exec.LookPath(hap); err != nil {
		return fmt.Errorf("haproxy: %v (apt-get install haproxy)", err)
	}
	for _, s := range scenarios {
		if s == "dataplane" {
			if _, err := exec.LookPath(c.Wrk); err != nil {
				return fmt.Errorf("wrk: %v (apt-get install wrk)", err)
			}
		}
		if s == "request-cost" {
			for _, bin := range []string{"valgrind", "callgrind_control"} {
				if _, err := exec.LookPath(bin); err != nil {
					return fmt.Errorf("%s: %v (apt-get install valgrind)", bin, err)
				}
			}
		}
	}
	switch {
	case c.Backends < 2:
		return errors.New("-backends must be at least 2 (churn moves endpoints between backends)")
	case c.Backends > 250*200:
		return errors.New("-backends: at most 50000")
	case c.CheckWorkers < 1 || c.LoadWorkers < 1 || c.LoadRate < 1 || c.WrkRounds < 1:
		return errors.New("-check-workers, -load-workers, -load-rate and -wrk-rounds must be positive")
	case c.Routes < 1 || c.DataPlaneRoutes < 1 || c.CostRequests < 1:
		return errors.New("-routes, -dataplane-routes and -cost-requests must be positive")
	case c.RouteChurnNames != "new" && c.RouteChurnNames != "same":
		return fmt.Errorf("-route-churn-names: %q, want new or same", c.RouteChurnNames)
	case c.routeChurnKindsErr() != nil:
		return fmt.Errorf("-route-churn-kinds: %w", c.routeChurnKindsErr())
	case c.kindsErr() != nil:
		return fmt.Errorf("-kinds: %w", c.kindsErr())
	case c.ChurnRoutes < 2 || c.RouteChurnRoutes < 1:
		return errors.New("-churn-routes must be at least 2, -route-churn-routes at least 1")
	case c.ChurnChanges < 0 || c.RouteChanges < 0:
		return errors.New("-churn-changes and -route-changes must not be negative")
	case c.PollInterval <= 0 || c.ChangeTimeout <= 0 || c.PhaseTimeout <= 0 || c.ReadyTimeout <= 0:
		return errors.New("-poll-interval, -change-timeout, -phase-timeout and -ready-timeout must be positive")
	}
	if c.ReloadInterval != "" {
		if _, err := time.ParseDuration(c.ReloadInterval); err != nil {
			if _, err2 := fmt.Sscanf(c.ReloadInterval, "%d", new(int)); err2 != nil {
				return fmt.Errorf("-reload-interval %q: a Go duration or whole seconds", c.ReloadInterval)
			}
		}
	}
	for _, kv := range c.RouterEnv {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("-router-env %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

func runScenario(ctx context.Context, cfg config, name string) (result, error) {
	switch name {
	case "cold-start":
		return runColdStart(ctx, cfg, cfg.Routes)
	case "churn":
		return runChurn(ctx, cfg)
	case "route-churn":
		return runRouteChurn(ctx, cfg)
	case "memory":
		return runMemory(ctx, cfg, cfg.Routes)
	case "dataplane":
		return runDataPlane(ctx, cfg)
	case "request-cost":
		return runRequestCost(ctx, cfg)
	}
	return nil, fmt.Errorf("unknown scenario %q", name)
}

func (c config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

// routeChurnKinds are the route churn's route kinds.
func (c config) routeChurnKinds() []routeKind {
	k, _ := parseRouteKinds(c.RouteChurnKinds)
	return k
}

// kinds are the kinds of the routes of the scenarios other than
// route-churn (-kinds).
func (c config) kinds() []routeKind {
	k, _ := parseRouteKinds(c.Kinds)
	return k
}

func (c config) kindsErr() error {
	_, err := parseRouteKinds(c.Kinds)
	return err
}

func (c config) routeChurnKindsErr() error {
	_, err := parseRouteKinds(c.RouteChurnKinds)
	return err
}

// reloadIntervalLabel is the RELOAD_INTERVAL in effect, for reports.
func (c config) reloadIntervalLabel() string {
	if c.ReloadInterval == "" {
		return "5s (router default)"
	}
	return c.ReloadInterval
}
