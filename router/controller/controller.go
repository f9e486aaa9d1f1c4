// Package controller applies the router's pipeline: whenever the watched
// objects change it runs a pass (router/pipeline: admission, model,
// budget, rendered files), writes the files, and applies the change
// through HAProxy's runtime API where it can, or has HAProxy check the new
// configuration and reloads it — at most once per reload interval. A
// configuration HAProxy refuses is never loaded: the files are rolled back,
// and where the refusal (or a refused runtime API command) can be traced
// to a route, that route is rejected and the rest is served. It also
// restarts HAProxy, with backoff, when it exits. Endpoint changes alone
// skip the full pass: only the routes of the changed services are rebuilt
// and rendered (commitEndpoints).
package controller

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
)

// Process is the HAProxy process the controller drives.
type Process interface {
	// Check validates a configuration file (haproxy -c).
	Check(ctx context.Context, configPath string) error
	Start(ctx context.Context) error
	Reload(ctx context.Context) error
	Running() bool
}

// Observer receives the controller's measurements (for metrics). Methods
// are called from the controller's goroutine and must not block.
type Observer interface {
	// ObserveWriteConfig reports the time to admit, build, render and
	// write one configuration.
	ObserveWriteConfig(d time.Duration)
	// ObserveReload reports a start or reload of HAProxy and its outcome.
	ObserveReload(d time.Duration, err error)
	// ObserveAdmission reports every route's admission result after a commit.
	ObserveAdmission(results map[admission.Key]admission.Result)
	// ObserveReloadReason reports why a start or reload was needed.
	ObserveReloadReason(reason string)
	// ObserveRuntimeChange reports a change applied through the runtime
	// API instead of a reload.
	ObserveRuntimeChange(kind string)
	// ObserveRuntimeError reports a runtime API change that failed.
	ObserveRuntimeError()
	// ObserveRestart reports that HAProxy exited unexpectedly and is
	// being restarted.
	ObserveRestart()
	// ObserveApplyFailing reports whether passes fail with no route to
	// blame (the last good configuration keeps serving).
	ObserveApplyFailing(failing bool)
	// ObserveServicesOverEndpointLimit reports how many services have
	// more endpoints than the router renders.
	ObserveServicesOverEndpointLimit(n int)
	// ObserveUncheckedEndpoints reports how many endpoints are served on
	// spare slots without a health check.
	ObserveUncheckedEndpoints(n int)
}

type nopObserver struct{}

func (nopObserver) ObserveWriteConfig(time.Duration)                    {}
func (nopObserver) ObserveReload(time.Duration, error)                  {}
func (nopObserver) ObserveAdmission(map[admission.Key]admission.Result) {}
func (nopObserver) ObserveReloadReason(string)                          {}
func (nopObserver) ObserveRuntimeChange(string)                         {}
func (nopObserver) ObserveRuntimeError()                                {}
func (nopObserver) ObserveRestart()                                     {}
func (nopObserver) ObserveApplyFailing(bool)                            {}
func (nopObserver) ObserveServicesOverEndpointLimit(int)                {}
func (nopObserver) ObserveUncheckedEndpoints(int)                       {}

// Reasons for a start or reload besides those of haproxy/dynamic.
const (
	ReasonInitial = "initial"
	// ReasonRestart: HAProxy was not running (it exited).
	ReasonRestart = "restart"
	// ReasonRetry: the previous reload failed.
	ReasonRetry = "retry"
	// ReasonFiles: maps, certificates or other files changed.
	ReasonFiles = dynamic.ReasonFiles
	// ReasonRuntimeError: a runtime API change failed.
	ReasonRuntimeError = "runtime-error"
	// ReasonNoRuntimeAPI: changes without reload are off.
	ReasonNoRuntimeAPI = "no-runtime-api"
)

// Options configure the controller.
type Options struct {
	// Inputs are the settings of every pass (router/pipeline). A change
	// to the files of Inputs.ExtraFiles reloads HAProxy. With
	// Inputs.FDLimit set, every configuration is checked against it before
	// a start or reload (pipeline.Preflight).
	pipeline.Inputs
	Store   *store.Store
	Process Process
	Logger  logr.Logger
	// Sources must all have synced before the first configuration is written.
	Sources        []string
	ReloadInterval time.Duration
	// OnResults, if set, is called with every route's admission result
	// and the Gateway API's translation (nil without it) after each
	// successful commit (for route and Gateway API status; the
	// translation's statuses are finished with the results by
	// gateway.Result.Finish, which a pass leaves to the status writer:
	// a translation comes with its own pass's results, always, and is
	// finished once).
	OnResults func(map[admission.Key]admission.Result, *gateway.Result)
	// Observer receives measurements; nil means none.
	Observer Observer
	// BindEarly starts HAProxy with no routes before the sources have
	// synced, so the ports answer (503) at once; without it nothing is
	// bound until the initial state is loaded (ROUTER_BIND_PORTS_AFTER_SYNC).
	BindEarly bool
	// Runtime sends commands to the running HAProxy's runtime API; nil
	// turns changes without reload off.
	Runtime dynamic.Execer
	// SpareBackends is how many empty backends of each shape routes share
	// HAProxy loads with a configuration (ROUTER_SPARE_BACKENDS), for
	// routes of those shapes added before the next reload, written to
	// SparesFile, the second configuration file the Process loads; none
	// when SparesFile is "".
	SpareBackends int
	SparesFile    string
	// FirstLoadUnchecked loads the first configuration with routes
	// without Process.Check before it, for a Process that refuses a
	// configuration HAProxy rejects and keeps what it ran (the embedded
	// HAProxy's master): the check runs only then, to find the routes to
	// blame, and before every later load. At start-up the check would
	// parse the whole configuration once more before HAProxy does (about
	// 0.7 s at 10,000 routes, 7 s at 100,000).
	FirstLoadUnchecked bool
}

// maxCulpritRounds bounds how many times one commit retries after
// excluding the routes HAProxy's check blamed (it names one bad certificate
// at a time); past it, the next pass goes on where this one stopped.
const maxCulpritRounds = 10

// errExcludedMore says a commit excluded offending routes but ran out of
// rounds: not fatal, the next pass continues.
var errExcludedMore = errors.New("routes were rejected for configuration HAProxy refused; continuing at the next pass")

// Controller runs the pipeline.
type Controller struct {
	o      Options
	writer *files.Writer

	mu       sync.RWMutex
	ready    bool
	results  map[admission.Key]admission.Result
	reloads  int
	lastErr  error
	excluded map[admission.Key]pipeline.Exclusion
	// forceReload is set when what HAProxy runs may differ from the files
	// (a reload or a runtime change failed); forceReason says which.
	forceReload bool
	forceReason string
	// presync is true while committing the empty pre-sync configuration.
	presync bool
	// started is signalled after each start of HAProxy (for the supervisor).
	started chan struct{}
	// restarts counts restarts after HAProxy exited unexpectedly.
	restarts int
	// down is set when HAProxy exited unexpectedly and cleared when it was
	// started again: passes in between (no change, or changes through the
	// runtime API) must not make the router ready.
	down bool
	// everStarted is set once HAProxy has been started successfully.
	everStarted bool
	// loadsChecked is set once a configuration with routes was loaded or
	// an unchecked one refused: every load is checked from then on
	// (Options.FirstLoadUnchecked).
	loadsChecked bool
	// annotationProblems holds what was logged about each route's ignored
	// annotations, so each problem is logged once, not on every pass.
	annotationProblems map[model.ServiceAliasConfigKey]string
	// leftOut holds what was logged about services over the endpoint
	// limit: endpoints not rendered, by service.
	leftOut map[model.ServiceUnitKey]int
	// unchecked counts the endpoints HAProxy serves on spare slots without
	// a health check (until their backends are laid out afresh).
	unchecked int
	// running is the configuration the running HAProxy has (as loaded,
	// plus the runtime changes since), and layouts its backends' server
	// lines; both nil when unknown (before the first load, after a failure).
	running *dynamic.Config
	layouts servers.Layouts
	// draining are the servers of running whose lines went away: HAProxy
	// keeps them in maintenance until drain deletes them.
	draining map[dynamic.ServerRef]bool
	// last is the output of the last full pass HAProxy runs, with the
	// endpoint changes applied since (pipeline.UpdateEndpoints works out
	// the next against it); nil when unknown.
	last *pipeline.Output
	// text is last's haproxy.config cut into sections, with the sections
	// of the routes endpoint changes touched since replaced: what the
	// file on disk has (commitEndpoints), or is to have (unwritten); it
	// outlives last until the next full pass that HAProxy runs.
	text     *dynamic.Text
	textPath string
	// stale is set when endpoint changes were applied through the runtime
	// API but the configuration could not be brought up to date on disk:
	// the files lag behind what HAProxy runs until the next full pass (see
	// flushDelay).
	stale bool
	// unwritten is set when haproxy.config on disk does not have the
	// sections of endpoint changes yet (text has them): the file is larger
	// than syncWriteMax, so it is written later, coalesced (see
	// flushDelay). lastWriteTook is how long the last such write took.
	unwritten     bool
	lastWriteTook time.Duration
	// syncWriteMax is syncWriteMax (tests lower it).
	syncWriteMax int
	// fullPassTook is how long the last full pass took (admit, build,
	// render).
	fullPassTook time.Duration
	// loggedBudget is the last budget summary logged (capped, short, over).
	loggedBudget [3]int
	// loggedRouteFallback is the last reason logged for a route change
	// that needed the full pass (a template that does not qualify says so
	// once, not at every change).
	loggedRouteFallback string
}

// outcome says what one pass did.
type outcome struct {
	reloaded bool
	// runtime is true when changes were applied without a reload.
	runtime bool
	// deferred is true when a pass that could not reload found that a
	// reload is needed.
	deferred bool
}

// exitWatcher is implemented by processes that report unexpected exits
// (haproxy/process.Manager); the controller then restarts them.
type exitWatcher interface {
	// Exited receives when the process started by the last Start exits
	// unexpectedly; each Start makes a new channel.
	Exited() <-chan error
}

// Restart backoff after HAProxy exits unexpectedly: doubling from
// restartBackoffMin to restartBackoffMax, back to the minimum once HAProxy
// has run for restartBackoffReset.
const (
	restartBackoffMin   = time.Second
	restartBackoffMax   = 30 * time.Second
	restartBackoffReset = time.Minute
)

// failureBackoffMax caps the wait between retries of a pass that failed
// without a culprit (a read-only or full working directory, a failing
// reload); the first retry comes after ReloadInterval, then doubling.
const failureBackoffMax = 30 * time.Second

// failureBackoff is the wait before the retry that follows the n-th
// consecutive failed pass (n >= 1).
func failureBackoff(interval time.Duration, n int) time.Duration {
	limit := failureBackoffMax
	if interval > limit {
		limit = interval
	}
	d := interval
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	if d > limit {
		d = limit
	}
	return d
}

// New returns a controller.
func New(o Options) *Controller {
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 5 * time.Second
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Controller{o: o, writer: files.NewWriter(), excluded: map[admission.Key]pipeline.Exclusion{}, started: make(chan struct{}, 1), syncWriteMax: syncWriteMax}
}

// Ready reports whether the initial state has been loaded into HAProxy.
// Restarting reports whether HAProxy exited unexpectedly and has not been
// started again yet.
func (c *Controller) Restarting() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.down
}

func (c *Controller) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// Results returns the latest admission result of every route.
func (c *Controller) Results() map[admission.Key]admission.Result {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[admission.Key]admission.Result, len(c.results))
	for k, v := range c.results {
		out[k] = v
	}
	return out
}

// LastError returns why the last pass that could reload failed without a
// culprit (nil after a pass succeeds): the router is not ready meanwhile.
func (c *Controller) LastError() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.lastErr
}

// Commit renders and applies the current state once, through the runtime
// API where it can and with a start or reload of HAProxy otherwise. It
// reports whether HAProxy was started or reloaded.
func (c *Controller) Commit(ctx context.Context) (bool, error) {
	out, err := c.commit(ctx, true, false)
	return out.reloaded, err
}

// writeFactor: haproxy.config lagging behind endpoint changes is written
// no sooner than writeFactor times the last write's duration after the
// change, so that writing it costs at most about 1/writeFactor of a core
// under constant endpoint churn, and each change's share of the writes is
// at most 1/(writeFactor x the changes per second), whatever the number
// of routes (at 5 changes a second: 4 ms). The file lags behind what
// HAProxy runs by that delay at most (about 1 s at 10,000 routes): it is
// for people to read; every reload, restart and check renders it first.
const writeFactor = 50

// flushFactor: when it cannot be written from the sections (stale), a
// full pass renders it, no sooner than flushFactor times the last full
// pass's duration after the change.
const flushFactor = 10

// syncWriteMax: haproxy.config is written at once after an endpoint change
// while it is no larger than this (about 1,500 routes of the default
// template; writing it takes a few milliseconds); larger ones are written
// later, coalesced (flushDelay), as writing them costs more than the rest
// of the change.
const syncWriteMax = 2 << 20

// minFlushDelay is the shortest wait before a coalesced write.
const minFlushDelay = 100 * time.Millisecond

// flushDelay is how long after an endpoint change whose haproxy.config
// was not written the write runs: a full pass (not before the reload
// interval) when the file could not be brought up to date with the
// change's sections, otherwise the write of the file with the sections
// replaced. Until then the file on disk lags behind what HAProxy runs; a
// reload, restart or check runs a full pass first, so HAProxy only ever
// loads a configuration equal to a full render of the current state.
func (c *Controller) flushDelay() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.stale {
		return max(c.o.ReloadInterval, flushFactor*c.fullPassTook)
	}
	return max(minFlushDelay, writeFactor*c.lastWriteTook)
}

// lagging reports whether haproxy.config on disk lags behind what HAProxy
// runs: stale when a full pass has to write it, unwritten when the text
// with the endpoint changes' sections has to be.
func (c *Controller) lagging() (stale, unwritten bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stale, c.unwritten
}

// writeText writes haproxy.config with the sections of the endpoint
// changes applied since the last full pass (c.text); a failure leaves it
// to a full pass.
func (c *Controller) writeText() {
	c.mu.RLock()
	text, path := c.text, c.textPath
	c.mu.RUnlock()
	if text == nil {
		c.mu.Lock()
		c.unwritten = false
		c.mu.Unlock()
		return
	}
	began := time.Now()
	err := c.writer.Rewrite(path, 0, func(w io.Writer) error {
		_, err := text.WriteTo(w)
		return err
	})
	took := time.Since(began)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastWriteTook, c.unwritten = took, false
	if err != nil {
		c.o.Logger.Error(err, "writing the configuration after endpoint changes; the next full pass writes it")
		c.stale = true
	}
}

// keep records out as the output of the full pass HAProxy now runs, with
// the files written (c.mu held).
func (c *Controller) keep(out *pipeline.Output) {
	c.stale, c.unwritten = false, false
	c.text = nil
	if !c.presync && c.running != nil && out.Config != nil {
		c.last = out
		c.text, c.textPath = dynamic.NewText(out.Config), out.ConfigPath
	}
}

// commitEndpoints applies the changes since the last full pass when they
// are endpoint changes alone that the runtime API can follow: only the
// routes of the changed services are rebuilt and rendered
// (pipeline.UpdateEndpoints), the runtime API commands are those of their
// sections (dynamic.DiffSections), and haproxy.config on disk gets their
// sections replaced (dynamic.Text; the rest of the file is written as it
// was, not rendered again). It reports false when a full pass
// has to do it (other changes, a reload needed, a refused command: then
// with a reload).
func (c *Controller) commitEndpoints(ctx context.Context) (outcome, bool) {
	log := c.o.Logger
	c.mu.RLock()
	running, last, text := c.running, c.last, c.text
	ok := !c.forceReload && !c.presync && running != nil && last != nil && text != nil
	c.mu.RUnlock()
	if !ok || c.o.Runtime == nil || !c.o.Process.Running() {
		return outcome{}, false
	}
	began := time.Now()
	ch, err := pipeline.UpdateEndpoints(c.o.Store, c.o.Inputs, last)
	if err != nil {
		log.Error(err, "endpoint change not worked out alone; running a full pass")
		return outcome{}, false
	}
	if ch.Full != "" {
		log.V(2).Info("endpoint change needs a full pass", "reason", ch.Full)
		return outcome{}, false
	}
	change := dynamic.DiffSections(running, ch.Sections)
	if change.Reload {
		c.logNeedsReload("endpoint change needs a reload", change)
		return outcome{}, false
	}
	if len(change.Commands) > 0 {
		if n, err := dynamic.Apply(ctx, c.o.Runtime, change.Commands); err != nil {
			c.runtimeFailed(err, nil, n, len(change.Commands))
			c.mu.Lock()
			c.last = nil
			c.mu.Unlock()
			return outcome{}, false
		}
		c.o.Observer.ObserveRuntimeChange("endpoints")
	}
	replaced := len(ch.Routes) == 0 || text.Replace(ch.Config, ch.Sections.Headers())
	c.noteRemoved(change.Running)
	c.mu.Lock()
	running.Replace(change.Running)
	last.Apply(ch)
	for k, cfg := range ch.State {
		c.unchecked += servers.UncheckedEndpoints(cfg.Servers) - servers.UncheckedEndpoints(c.layouts[k])
		c.layouts[k] = cfg.Servers
	}
	c.observeUnchecked()
	if !replaced {
		// The sections are not where the text has them: the file waits
		// for a full pass.
		c.stale = true
	} else if len(ch.Routes) > 0 {
		c.unwritten = true
	}
	c.ready = c.ready || !c.down
	writeNow := c.unwritten && !c.stale && text.Len() <= c.syncWriteMax
	c.mu.Unlock()
	if writeNow {
		c.writeText()
	}
	c.o.Observer.ObserveWriteConfig(time.Since(began))
	if len(change.Commands) > 0 {
		log.V(1).Info("endpoint changes applied without a reload", "routes", len(ch.Routes), "serverCommands", len(change.Commands), "took", time.Since(began).String())
	}
	return outcome{runtime: true}, true
}

// reloadReason returns why a pass cannot even try the runtime API, or "".
func (c *Controller) reloadReason(force, incremental bool) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case !c.everStarted:
		return ReasonInitial
	case !c.o.Process.Running():
		return ReasonRestart
	case force:
		if c.forceReason != "" {
			return c.forceReason
		}
		return ReasonRetry
	case c.o.Runtime == nil:
		return ReasonNoRuntimeAPI
	case !incremental:
		return dynamic.ReasonConfig
	}
	return ""
}

// pass runs the pipeline on the store with the controller's exclusions
// and prev as the running layouts, keeps the exclusions still in force and
// logs the budget when it changed.
func (c *Controller) pass(prev servers.Layouts) (*pipeline.Output, error) {
	c.mu.RLock()
	excluded := c.excluded
	c.mu.RUnlock()
	out, err := pipeline.Pass(c.o.Store, c.o.Inputs, pipeline.State{Exclusions: excluded, Layouts: prev, NoRoutes: c.presync})
	if err != nil {
		return nil, err
	}
	c.adopt(out)
	return out, nil
}

// routeUpdate is which pipeline function works route changes out.
type routeUpdate int

const (
	// routesFollowing: any route change, the routes' backends following
	// what runs (pipeline.UpdateRoutesFollowing), for the runtime API.
	routesFollowing routeUpdate = iota
	// routesFresh: any route change, every backend laid out afresh
	// (pipeline.UpdateRoutesFresh), for a reload.
	routesFresh
)

// passRoutes works the route changes since last (the last pass's output)
// out without a full render; nil when the full pass has to run.
func (c *Controller) passRoutes(how routeUpdate, last *pipeline.Output) *pipeline.Output {
	c.mu.RLock()
	excluded := c.excluded
	ok := last != nil && c.running != nil && !c.forceReload && !c.presync
	c.mu.RUnlock()
	if !ok || !c.o.Process.Running() {
		return nil
	}
	st := pipeline.State{Exclusions: excluded}
	var out *pipeline.Output
	var full string
	var err error
	mode := "runtime"
	if how == routesFresh {
		mode = "reload"
		out, full, err = pipeline.UpdateRoutesFresh(c.o.Store, c.o.Inputs, st, last)
	} else {
		out, full, err = pipeline.UpdateRoutesFollowing(c.o.Store, c.o.Inputs, st, last)
	}
	if err != nil {
		c.o.Logger.Error(err, "route change not worked out alone; running a full pass")
		return nil
	}
	if full != "" {
		if full != c.loggedRouteFallback {
			c.loggedRouteFallback = full
			c.o.Logger.V(2).Info("route change needs a full pass", "reason", full)
		}
		return nil
	}
	c.loggedRouteFallback = ""
	c.adopt(out)
	c.o.Logger.V(1).Info("route changes worked out without a full render", "routes", len(out.Model.State), "for", mode)
	return out
}

// adopt takes the exclusions still in force from a pass's output and logs
// the budget when it changed.
func (c *Controller) adopt(out *pipeline.Output) {
	c.mu.Lock()
	c.excluded = out.Exclusions
	if c.excluded == nil {
		c.excluded = map[admission.Key]pipeline.Exclusion{}
	}
	c.mu.Unlock()
	b := out.Budget
	if state := b.Summary(); state != c.loggedBudget {
		c.loggedBudget = state
		if state != [3]int{} {
			c.o.Logger.Info(pipeline.BudgetMessage, b.KeysAndValues()...)
		}
	}
}

// exclude rejects the culprits of err until they change or go away; the
// log has err in full, each route's status only its culprit message.
func (c *Controller) exclude(found []pipeline.Culprit, err error) {
	_ = c.o.Store.Read(func(v store.View) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		byKey := map[admission.Key]*routev1.Route{}
		for _, r := range v.Routes() {
			byKey[admission.KeyOf(r)] = r
		}
		for _, cu := range found {
			r, ok := byKey[cu.Route]
			if !ok {
				continue
			}
			c.o.Logger.Error(err, "route rejected: the configuration it produces cannot be written or haproxy refuses it", "route", string(cu.Route))
			c.excluded[cu.Route] = pipeline.Exclusion{
				ResourceVersion: r.ResourceVersion,
				Generation:      r.Generation,
				Result:          admission.Result{Host: strings.ToLower(r.Spec.Host), Reason: admission.ReasonConfigCheckFailed, Message: cu.Message},
			}
		}
		return nil
	})
}

// logAnnotationProblems logs the ignored annotation values of routes whose
// problems changed since the last pass.
func (c *Controller) logAnnotationProblems(td *model.TemplateData) {
	next := make(map[model.ServiceAliasConfigKey]string)
	for _, key := range td.SortedStateKeys() {
		probs := td.State[key].AnnotationProblems
		if len(probs) == 0 {
			continue
		}
		joined := strings.Join(probs, "; ")
		next[key] = joined
		if c.annotationProblems[key] != joined {
			for _, p := range probs {
				c.o.Logger.Info("ignoring invalid route annotation", "route", string(key), "problem", p)
			}
		}
	}
	c.annotationProblems = next
	c.logEndpointsLeftOut(td)
}

// countUnchecked counts the endpoints on unchecked spare slots of td (the
// layouts HAProxy runs) and reports them. Call with c.mu held.
func (c *Controller) countUnchecked(td *model.TemplateData) {
	c.unchecked = 0
	for _, cfg := range td.State {
		c.unchecked += servers.UncheckedEndpoints(cfg.Servers)
	}
	c.observeUnchecked()
}

// observeUnchecked reports c.unchecked.
func (c *Controller) observeUnchecked() { c.o.Observer.ObserveUncheckedEndpoints(c.unchecked) }

// logEndpointsLeftOut logs the services whose endpoints beyond the
// per-service limit (router/servers) are not rendered, when that changes,
// and reports their number to an Observer that counts them.
func (c *Controller) logEndpointsLeftOut(td *model.TemplateData) {
	next := map[model.ServiceUnitKey]int{}
	for k, su := range td.ServiceUnits {
		if su.EndpointsLeftOut == 0 {
			continue
		}
		next[k] = su.EndpointsLeftOut
		if c.leftOut[k] != su.EndpointsLeftOut {
			c.o.Logger.Info("service has more endpoints than the router renders; a stable subset receives traffic", "service", su.Name,
				"rendered", len(su.EndpointTable), "leftOut", su.EndpointsLeftOut)
		}
	}
	c.leftOut = next
	c.o.Observer.ObserveServicesOverEndpointLimit(len(next))
}

// publish records the admission results and logs changes of them.
func (c *Controller) publish(out *pipeline.Output) {
	d := out.Decision
	c.mu.Lock()
	prev := c.results
	c.results = d.Results
	c.mu.Unlock()
	// Only the changed results are logged, in key order (sorting every
	// key would be a sort of all routes for each change).
	var keys []string
	for k, res := range d.Results {
		if old, ok := prev[k]; !ok || old != res {
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	for _, ks := range keys {
		res := d.Results[admission.Key(ks)]
		if res.Admitted {
			c.o.Logger.V(2).Info("route admitted", "route", ks, "host", res.Host)
		} else {
			kv := []any{"route", ks, "host", res.Host, "reason", res.Reason, "message", res.Message}
			if res.Holder != "" {
				// The status message does not name a route of another
				// namespace; the log does.
				kv = append(kv, "holder", string(res.Holder))
			}
			c.o.Logger.Info("route rejected", kv...)
		}
	}
	c.o.Observer.ObserveAdmission(d.Results)
	if c.o.OnResults != nil {
		c.o.OnResults(d.Results, out.Gateway)
	}
}

func (c *Controller) hasStarted() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.everStarted
}

// Restarts returns how many times HAProxy was restarted after exiting
// unexpectedly.
func (c *Controller) Restarts() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.restarts
}

// supervise restarts HAProxy, with backoff, when it exits unexpectedly: it
// marks the router not ready and has the pipeline run again, which starts
// HAProxy on the configuration on disk (the last good one).
func (c *Controller) supervise(ctx context.Context, p exitWatcher) {
	backoff := restartBackoffMin
	startedAt := time.Now()
	for {
		exited := p.Exited()
		select {
		case <-ctx.Done():
			return
		case <-c.started:
			startedAt = time.Now()
			continue
		case err := <-exited:
			if time.Since(startedAt) > restartBackoffReset {
				backoff = restartBackoffMin
			}
			c.o.Logger.Error(err, "haproxy exited unexpectedly; restarting it", "after", backoff)
			c.mu.Lock()
			c.ready, c.down = false, true
			c.restarts++
			c.mu.Unlock()
			c.o.Observer.ObserveRestart()
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff *= 2
			if backoff > restartBackoffMax {
				backoff = restartBackoffMax
			}
			c.o.Store.Poke()
		}
	}
}

// Backend resolves the name HAProxy runs a backend as to the backend of
// the configuration it stands for: a route added since the last reload
// may run in the backend of a route deleted before it (haproxy/dynamic,
// Diff); false for such a deleted route's backend, which HAProxy keeps
// until the next reload. For the metrics.
func (c *Controller) Backend(proxy string) (string, bool) {
	c.mu.RLock()
	running := c.running
	c.mu.RUnlock()
	if running == nil {
		return proxy, true
	}
	return running.Backend(proxy)
}

// DynamicServer returns the endpoint (its ID) that the spare server slot
// named slot of route namespace/route serves in the running configuration;
// false when the slot is free or unknown. Safe for concurrent use (metrics).
func (c *Controller) DynamicServer(namespace, route, slot string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.layouts[model.NewServiceAliasConfigKey(namespace, route)] {
		if s.Name == slot {
			if !s.Dynamic || s.Disabled || s.Endpoint.ID == "" {
				return "", false
			}
			return s.Endpoint.ID, true
		}
	}
	return "", false
}
