package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
)

// commitRun is one commit's state across its rounds: a round renders,
// stages the files and applies them through the runtime API or a reload;
// another round follows when routes were excluded for what HAProxy
// refused, or when a reload needs the backends laid out afresh.
type commitRun struct {
	allowReload bool
	// routes is the route changes worked out without a full render (used
	// by the first round only).
	routes *pipeline.Output
	// lastBefore is the last pass's output, kept when the change is
	// deferred.
	lastBefore *pipeline.Output
	// freshLayout is set once a reload is needed: every backend is laid
	// out afresh; carried is the reason found before that.
	freshLayout bool
	carried     string
	// culprits counts the rounds that excluded routes.
	culprits int
}

// roundResult is what one round of a commit came to.
type roundResult struct {
	outcome
	// again: another round follows.
	again bool
}

// commit applies the store's changes: endpoint changes alone through the
// runtime API (commitEndpoints), anything else through a pass, for the
// runtime API first and a reload when allowReload (else the change is
// deferred).
func (c *Controller) commit(ctx context.Context, allowReload, endpoints bool) (outcome, error) {
	if endpoints {
		if out, done := c.commitEndpoints(ctx); done {
			return out, nil
		}
	}
	run := c.startCommit(allowReload)
	if run.routes != nil && run.routes.RendersNothing() {
		// Objects no route uses changed: what runs and what is written
		// stay; the output moves on to the store's generation.
		c.mu.Lock()
		c.last = run.routes
		c.mu.Unlock()
		c.o.Logger.V(2).Info("changes affect no route; nothing to apply")
		// Statuses may still change (an HTTPRoute that makes no
		// route, say): they are published all the same.
		c.publish(run.routes)
		return outcome{}, nil
	}
	for {
		res, err := c.commitRound(ctx, run)
		if err != nil || !res.again {
			return res.outcome, err
		}
	}
}

// startCommit works the route changes out without a full render where it
// can, following what runs, for the runtime API first.
func (c *Controller) startCommit(allowReload bool) *commitRun {
	c.mu.RLock()
	run := &commitRun{allowReload: allowReload, lastBefore: c.last}
	c.mu.RUnlock()
	run.routes = c.passRoutes(routesFollowing, run.lastBefore)
	// The last pass's output describes what HAProxy runs until this
	// commit changes it; a change deferred to the reload leaves it so.
	c.mu.Lock()
	c.last = nil
	c.mu.Unlock()
	return run
}

// keepLast puts back the last pass's output of a deferred change.
func (c *Controller) keepLast(run *commitRun) {
	c.mu.Lock()
	if c.last == nil {
		c.last = run.lastBefore
	}
	c.mu.Unlock()
}

// commitRound renders (or takes the route changes' output), stages the
// files, and applies them: nothing to do, the runtime API, or a reload.
func (c *Controller) commitRound(ctx context.Context, run *commitRun) (roundResult, error) {
	began := time.Now()
	c.mu.RLock()
	force := c.forceReload || !c.o.Process.Running()
	running, prevLayouts := c.running, c.layouts
	c.mu.RUnlock()
	incremental := !force && !run.freshLayout && running != nil && c.o.Runtime != nil
	if !incremental {
		prevLayouts = nil
	}
	if !run.allowReload && !incremental {
		c.keepLast(run)
		return roundResult{outcome: outcome{deferred: true}}, nil
	}
	out, err := c.roundOutput(run, prevLayouts, began)
	if err != nil {
		return roundResult{}, err
	}
	changed, err := c.writer.Stage(out.Files)
	if err != nil {
		// A file that cannot be written for one route (its name, its
		// size) rejects that route; anything else is an error.
		if found := pipeline.Culprits(err, out.Files, nil); len(found) > 0 {
			return c.retryWithout(run, found, err)
		}
		return roundResult{}, fmt.Errorf("writing the configuration files: %w", err)
	}
	c.o.Observer.ObserveWriteConfig(time.Since(began))
	if len(changed) == 0 && !force {
		c.writer.Commit()
		c.finish(out, false, nil)
		return roundResult{}, nil
	}
	reason := c.roundReason(run, force, incremental)
	if reason == "" {
		res, reason2, err := c.commitRuntime(ctx, run, out, running, changed)
		if err != nil || reason2 == "" {
			return res, err
		}
		reason = reason2
	}
	if !run.allowReload {
		c.rollback("a change deferred to a reload")
		c.o.Logger.V(2).Info("change needs a reload; waiting for the reload interval", "reason", reason)
		c.keepLast(run)
		return roundResult{outcome: outcome{deferred: true}}, nil
	}
	if incremental && !out.Compact() {
		// A reload loads the backends laid out afresh, with every spare
		// slot free again and health checks as planned.
		if err := c.writer.Rollback(); err != nil {
			return roundResult{}, fmt.Errorf("rolling back before a reload: %w", err)
		}
		run.freshLayout, run.carried = true, reason
		return roundResult{again: true}, nil
	}
	return c.load(ctx, run, out, reason, changed)
}

// roundOutput is what a round stages: the route changes' output in the
// first round, the route changes laid out afresh once a reload is needed,
// else a full pass on prevLayouts.
func (c *Controller) roundOutput(run *commitRun, prevLayouts servers.Layouts, began time.Time) (*pipeline.Output, error) {
	switch {
	case run.routes != nil && run.culprits == 0 && !run.freshLayout:
		return run.routes, nil
	case run.routes != nil && run.freshLayout:
		// The route changes need a reload after all: every backend laid
		// out afresh, still without a full render.
		if out := c.passRoutes(routesFresh, run.lastBefore); out != nil {
			return out, nil
		}
	}
	out, err := c.pass(prevLayouts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.fullPassTook = time.Since(began)
	c.mu.Unlock()
	return out, nil
}

// roundReason is why a round cannot even try the runtime API, or "".
func (c *Controller) roundReason(run *commitRun, force, incremental bool) string {
	if run.carried != "" {
		return run.carried
	}
	return c.reloadReason(force, incremental)
}

// commitRuntime applies a staged round through the runtime API. It returns
// the round's result when it did, else why a reload is needed.
func (c *Controller) commitRuntime(ctx context.Context, run *commitRun, out *pipeline.Output, running *dynamic.Config, changed []string) (roundResult, string, error) {
	var old []files.File
	if run.lastBefore != nil {
		old = run.lastBefore.Files
	}
	reason, parsed := c.tryRuntime(ctx, running, changed, out, old)
	if reason != "" {
		return roundResult{}, reason, nil
	}
	c.writer.Commit()
	c.finish(out, true, parsed)
	return roundResult{outcome: outcome{runtime: true}}, "", nil
}

// finish records out as what HAProxy runs after a round that needed no
// reload (runtime: applied through the runtime API, parsed is then what
// runs), and publishes its decisions.
func (c *Controller) finish(out *pipeline.Output, runtime bool, parsed *dynamic.Config) {
	c.mu.Lock()
	if runtime {
		c.running, c.layouts = parsed, servers.Of(out.Model)
		c.countUnchecked(out.Model)
		c.ready = c.ready || (!c.presync && !c.down)
	} else {
		c.ready = c.ready || (!c.presync && !c.down && c.o.Process.Running())
	}
	c.keep(out)
	c.mu.Unlock()
	c.publish(out)
	c.logAnnotationProblems(out.Model)
}

// retryWithout excludes the routes found to blame for err and asks for
// another round, unless the commit ran out of rounds (errExcludedMore).
func (c *Controller) retryWithout(run *commitRun, found []pipeline.Culprit, err error) (roundResult, error) {
	c.exclude(found, err)
	run.culprits++
	if run.culprits >= maxCulpritRounds {
		return roundResult{}, errExcludedMore
	}
	return roundResult{again: true}, nil
}

// rollback puts the staged files back, logging a failure (what is about
// to be retried or deferred does not depend on it).
func (c *Controller) rollback(what string) {
	if err := c.writer.Rollback(); err != nil {
		c.o.Logger.Error(err, "rolling back "+what)
	}
}

// load checks a staged configuration and starts or reloads HAProxy with
// it: a configuration HAProxy could not start under the open-files limit
// (Preflight) or refuses ("haproxy -c") excludes the routes it names. With
// Options.FirstLoadUnchecked the first configuration with routes is
// loaded without the check, which runs only if HAProxy refuses it.
func (c *Controller) load(ctx context.Context, run *commitRun, out *pipeline.Output, reason string, changed []string) (roundResult, error) {
	if found, err := pipeline.Preflight(out.Config, c.o.FDLimit); err != nil {
		// What HAProxy would refuse at start, "haproxy -c" does not see.
		c.rollback("a configuration haproxy could not start")
		if len(found) == 0 {
			return roundResult{}, err
		}
		return c.retryWithout(run, found, err)
	}
	spares := c.writeSpares(out.Config)
	unchecked := c.o.FirstLoadUnchecked && !c.loadsChecked && !c.presync
	if !unchecked {
		var err error
		if spares, err = c.checkWithSpares(ctx, out, spares); err != nil {
			return c.refused(run, out, err)
		}
	}
	start := !c.o.Process.Running()
	if err := c.startOrReload(ctx, start, reason); err != nil {
		if unchecked {
			// Not checked before: the check tells a refused
			// configuration's routes, and checks every load from now on.
			c.loadsChecked = true
			c.o.Logger.Error(err, "haproxy did not load the first configuration with routes (loaded without a check); checking it")
			if _, cerr := c.checkWithSpares(ctx, out, spares); cerr != nil {
				return c.refused(run, out, cerr)
			}
		}
		// The files go back to what HAProxy runs (a HAProxy that is
		// restarted, e.g. a sidecar's container, then loads the last
		// configuration that was loaded, not the one it refused).
		c.rollback("a configuration haproxy did not load")
		return roundResult{}, fmt.Errorf("loading configuration into haproxy: %w", err)
	}
	c.loadsChecked = c.loadsChecked || !c.presync
	c.writer.Commit()
	c.loaded(out, spares, start, reason, len(changed))
	return roundResult{outcome: outcome{reloaded: true}}, nil
}

// refused rolls back a configuration HAProxy's check refused (err) and
// excludes the routes it names for another round.
func (c *Controller) refused(run *commitRun, out *pipeline.Output, err error) (roundResult, error) {
	c.rollback("refused configuration")
	found := pipeline.Culprits(err, out.Files, out.Config)
	if len(found) == 0 {
		return roundResult{}, fmt.Errorf("haproxy refused the new configuration: %w", err)
	}
	return c.retryWithout(run, found, err)
}

// startOrReload starts HAProxy (start) or reloads it, counted with reason.
func (c *Controller) startOrReload(ctx context.Context, start bool, reason string) error {
	began := time.Now()
	var err error
	if start {
		err = c.o.Process.Start(ctx)
	} else {
		err = c.o.Process.Reload(ctx)
	}
	c.o.Observer.ObserveReload(time.Since(began), err)
	c.o.Observer.ObserveReloadReason(reason)
	c.mu.Lock()
	c.forceReload, c.forceReason = err != nil, ReasonRetry
	c.running, c.layouts = nil, nil
	c.mu.Unlock()
	return err
}

// loaded records out as what HAProxy loaded and publishes its decisions.
// spares are the spare backends HAProxy loaded with it (writeSpares).
func (c *Controller) loaded(out *pipeline.Output, spares []byte, start bool, reason string, changedFiles int) {
	td := out.Model
	c.o.Logger.Info("configuration loaded", "started", start, "reason", reason, "routes", len(td.State), "changedFiles", changedFiles)
	parsed := parseLoaded(out.Config, spares)
	c.mu.Lock()
	c.running, c.layouts = parsed, servers.Of(td)
	c.countUnchecked(td)
	c.keep(out)
	c.everStarted = true
	if start {
		c.down = false
	}
	if !c.presync && !c.down {
		c.ready = true
	}
	c.reloads++
	c.mu.Unlock()
	if start {
		select {
		case c.started <- struct{}{}:
		default:
		}
	}
	if !c.presync {
		c.publish(out)
		c.logAnnotationProblems(td)
	}
}

// tryRuntime applies the change from the running configuration to the
// staged one through the runtime API. It returns "" and the new parsed
// configuration when it did, or why a reload is needed: a command HAProxy
// refused, or a runtime API that failed, falls back to a reload.
//
// With out.Sections (the routes' sections an output rendered again, the
// rest of its configuration being as HAProxy runs it:
// pipeline.UpdateRoutesFollowing) only those and out.Gone are compared
// with what runs (dynamic.DiffSections, dynamic.DiffMoved), not the whole
// configuration parsed again. old are the files before.
func (c *Controller) tryRuntime(ctx context.Context, running *dynamic.Config, changed []string, out *pipeline.Output, old []files.File) (string, *dynamic.Config) {
	fs, config := out.Files, out.Config
	wd := layout.New(out.Model.WorkingDir)
	newData, oldData := changedData(fs, changed), changedData(old, changed)
	renew := dynamic.ChangedCAFiles(wd.CACerts(), changed, newData, oldData)
	change, sections := diffRunning(running, config, out.Sections, out.Gone, renew)
	if change.Reload {
		c.logNeedsReload("change needs a reload", change)
		return change.Reason, nil
	}
	// The names HAProxy runs the backends as: the whole configuration's
	// once the change is applied, or (sections: no backend comes or goes)
	// those it runs now.
	names := change.Running
	if sections != nil {
		names = running
	}
	fc := dynamic.FileCommands(dynamic.Files{WD: wd, Config: config, Changed: changed,
		New: newData, Old: oldData, Running: names, WasRunning: running, Renewed: renew, ReadFile: os.ReadFile,
		All: func() map[string][]byte { return allData(fs) }})
	if fc.Reload {
		if fc.TooLarge {
			c.o.Logger.V(1).Info("certificate too large for the runtime API; reloading", "file", fc.File)
		} else {
			c.o.Logger.V(2).Info("change needs a reload", "reason", ReasonFiles, "file", fc.File)
		}
		return ReasonFiles, nil
	}
	// runs is what runs once the change is applied.
	runs := func() *dynamic.Config {
		cfg := change.Running
		if sections != nil {
			running.Replace(change.Running) // DiffSections' Running has the new sections only
			cfg = running
		}
		cfg.KeepFiles(fc)
		return cfg
	}
	cmds := runtimeOrder(change, fc)
	if len(cmds) == 0 {
		// Only comments or blank lines changed.
		return "", runs()
	}
	began := time.Now()
	if n, err := dynamic.Apply(ctx, c.o.Runtime, cmds); err != nil {
		c.runtimeFailed(err, fs, n, len(cmds))
		return ReasonRuntimeError, nil
	}
	c.observeRuntime(change.Commands, fc)
	c.o.Logger.V(1).Info("changes applied without a reload", "serverCommands", len(change.Commands), "certificates", fc.Certificates,
		"entries", fc.Entries, "took", time.Since(began).String())
	c.noteRemoved(change.Running)
	return "", runs()
}

// runtimeOrder is the order a change's commands go in: destination CA
// files first (a server added names its file), then servers added and
// changed, then the map entries and certificates that lead traffic to them,
// then what goes out of service (servers whose route moved to another
// backend or was deleted: after the map entries moved the route), then the
// entries and certificates removed.
func runtimeOrder(change dynamic.Change, fc dynamic.FileChange) []dynamic.Command {
	n := len(change.Commands) - change.Removals
	return slices.Concat(fc.Before, change.Commands[:n], fc.Commands, change.Commands[n:], fc.Removals)
}

// observeRuntime counts a change applied through the runtime API by what
// it changed: servers ("endpoints"), certificates, and map entries and
// crt-list lines ("routes"), the sticky cookie renames a server change
// brings among them (dynamic: map commands in change).
func (c *Controller) observeRuntime(change []dynamic.Command, fc dynamic.FileChange) {
	entries := fc.Entries
	for _, cmd := range change {
		if cmd.Kind == "map" {
			entries++
		}
	}
	if len(change) > entries-fc.Entries {
		c.o.Observer.ObserveRuntimeChange("endpoints")
	}
	if fc.Certificates > 0 {
		c.o.Observer.ObserveRuntimeChange("certificate")
	}
	if entries > 0 {
		c.o.Observer.ObserveRuntimeChange("routes")
	}
}

// runtimeFailed records a runtime API change that failed after n of total
// commands (counted): what HAProxy runs is now unknown, only a reload fixes
// it. A command HAProxy refused for one route is logged with that route,
// which is reloaded, not rejected: the reload loads it as a fresh start
// would, and a configuration HAProxy's check refuses is still traced to
// its route and that route alone excluded.
func (c *Controller) runtimeFailed(err error, fs []files.File, n, total int) {
	c.o.Observer.ObserveRuntimeError()
	c.mu.Lock()
	c.forceReload, c.forceReason = true, ReasonRuntimeError
	c.running, c.layouts = nil, nil
	c.mu.Unlock()
	if cu, ok := pipeline.RuntimeCulprit(err, fs); ok {
		c.o.Logger.Error(err, "runtime API change refused for one route; reloading instead", "route", string(cu.Route), "applied", n, "of", total)
		return
	}
	c.o.Logger.Error(err, "runtime API change failed; reloading instead", "applied", n, "of", total)
}

// diffRunning compares what HAProxy runs with the staged configuration:
// with sections (see tryRuntime) only those, unless backends go (gone) or
// a route's backend has to move to another (dynamic.DiffSections says
// ReasonBackends), which dynamic.DiffMoved works out from sections and
// gone; the whole configuration's diff does when a destination CA file
// changed (renew: the backends whose servers read it, whichever they are,
// move to free backends). The sections returned are nil unless the change
// holds those sections only.
func diffRunning(running *dynamic.Config, config []byte, sections *dynamic.Config, gone, renew []string) (dynamic.Change, *dynamic.Config) {
	if sections != nil {
		sections.RenewServers(renew)
		if len(gone) == 0 {
			if ch := dynamic.DiffSections(running, sections); !ch.Reload || ch.Reason != dynamic.ReasonBackends {
				return ch, sections
			}
		}
		if len(renew) == 0 {
			return dynamic.DiffMoved(running, sections, gone), nil
		}
	}
	parsed := dynamic.Parse(config)
	parsed.RenewServers(renew)
	return dynamic.Diff(running, parsed), nil
}

// allData returns the contents of every file of fs, by cleaned path.
func allData(fs []files.File) map[string][]byte {
	out := make(map[string][]byte, len(fs))
	for _, f := range fs {
		out[filepath.Clean(f.Path)] = f.Data
	}
	return out
}

// changedData returns the contents of the changed files among fs, by
// cleaned path.
func changedData(fs []files.File, changed []string) map[string][]byte {
	want := make(map[string]bool, len(changed))
	for _, p := range changed {
		want[filepath.Clean(p)] = true
	}
	out := make(map[string][]byte, len(changed))
	for _, f := range fs {
		if p := filepath.Clean(f.Path); want[p] {
			out[p] = f.Data
		}
	}
	return out
}

// logNeedsReload logs why a runtime diff needs a reload. A server line the
// runtime API cannot take (a "cookie" or another option dynamic servers
// refuse, a map-based hash balance, an address that is not an IP) is a
// route's own template or settings falling back: logged at the default
// level, naming the backend and server, and counted by the reload's
// reason (template_router_reloads_total); the rest is routine.
func (c *Controller) logNeedsReload(msg string, change dynamic.Change) {
	switch change.Reason {
	case dynamic.ReasonServers, dynamic.ReasonServerOptions, dynamic.ReasonServerAddress:
		c.o.Logger.Info(msg+": a server line the runtime API cannot take", "reason", change.Reason, "where", change.Where)
	default:
		c.o.Logger.V(2).Info(msg, "reason", change.Reason, "where", change.Where)
	}
}
