package controller

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// loop is the state of Run between changes.
type loop struct {
	c *Controller
	// last is when the last pass that could reload ran.
	last time.Time
	// pending is set when a change needs a reload that waits for the
	// interval; reload fires when it may run.
	pending bool
	reload  timer
	// failures counts consecutive passes that failed without a culprit;
	// retry fires when the next retry is due.
	failures int
	retry    timer
	// flush fires when the configuration files, behind what HAProxy runs
	// after endpoint changes, are to be written by a full pass.
	flush timer
}

// timer is a one-shot timer whose channel is nil while it is not armed.
type timer struct {
	t *time.Timer
	C <-chan time.Time
}

func (t *timer) arm(d time.Duration) {
	t.stop()
	t.t = time.NewTimer(d)
	t.C = t.t.C
}

func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
	t.t, t.C = nil, nil
}

// fired clears a timer whose channel delivered.
func (t *timer) fired() { t.t, t.C = nil, nil }

// Run processes changes until ctx is done. A change that can be applied
// to the running HAProxy without a reload (endpoints: see haproxy/dynamic)
// is applied at once; one that needs a reload waits until ReloadInterval
// has passed since the last pass that could reload, so reloads are
// coalesced.
func (c *Controller) Run(ctx context.Context) error {
	if p, ok := c.o.Process.(exitWatcher); ok {
		go c.supervise(ctx, p)
	}
	if c.o.BindEarly && !c.o.Store.HasSynced(c.o.Sources...) {
		c.presync = true
		_, err := c.Commit(ctx)
		c.presync = false
		if err != nil {
			return fmt.Errorf("binding the ports before the initial sync: %w", err)
		}
	}
	l := &loop{c: c}
	defer l.reload.stop()
	defer l.retry.stop()
	defer l.flush.stop()
	drainTick := time.NewTicker(drainInterval)
	defer drainTick.Stop()
	for {
		// full: this pass is a full one (endpoint changes alone are
		// otherwise worked out without one).
		full := false
		select {
		case <-ctx.Done():
			return nil
		case <-c.o.Store.Changed():
		case <-l.reload.C:
			l.reload.fired()
		case <-l.retry.C:
			l.retry.fired()
		case <-drainTick.C:
			c.drain(ctx)
			continue
		case <-l.flush.C:
			l.flush.fired()
			var again bool
			if full, again = l.flushed(); !again {
				continue
			}
		}
		if !c.o.Store.HasSynced(c.o.Sources...) {
			continue
		}
		if wait := time.Until(l.last.Add(c.o.ReloadInterval)); wait > 0 {
			l.withoutReload(ctx, full, wait)
			continue
		}
		if err := l.withReload(ctx, full); err != nil {
			return err
		}
	}
}

// flushed handles the flush timer: a file only lagging behind is written
// (no pass); a stale one needs a full pass (full, pass).
func (l *loop) flushed() (full, pass bool) {
	stale, unwritten := l.c.lagging()
	if !stale && unwritten {
		l.c.writeText()
		l.armFlush()
		return false, false
	}
	return stale, stale
}

func (l *loop) armFlush() {
	if stale, unwritten := l.c.lagging(); l.flush.C == nil && (stale || unwritten) {
		l.flush.arm(l.c.flushDelay())
	}
}

// withoutReload applies what can be applied without a reload while the
// reload interval runs (wait is left of it); a change that needs a reload
// is pending until then.
func (l *loop) withoutReload(ctx context.Context, full bool, wait time.Duration) {
	if !l.pending {
		out, err := l.c.commit(ctx, false, !full)
		if err != nil {
			l.c.o.Logger.Error(err, "change not applied without a reload; reloading at the next interval")
		}
		l.pending = out.deferred || err != nil
	}
	l.armFlush()
	if l.pending && l.reload.C == nil {
		l.reload.arm(wait)
	}
}

// withReload runs a pass that may reload. It returns an error only when
// HAProxy never ran (fatal); other failures are retried with backoff.
func (l *loop) withReload(ctx context.Context, full bool) error {
	c := l.c
	l.reload.stop()
	l.pending = false
	// Changes that arrived meanwhile are part of this commit.
	select {
	case <-c.o.Store.Changed():
	default:
	}
	_, err := c.commit(ctx, true, !full)
	// Every pass that could reload counts for the interval, reload or
	// not: passes that change nothing HAProxy sees (status updates,
	// unrelated services) are coalesced too.
	l.last = time.Now()
	l.armFlush()
	switch {
	case errors.Is(err, errExcludedMore):
		c.o.Logger.Info(err.Error())
		c.o.Store.Poke()
	case err != nil && !c.hasStarted():
		// HAProxy never ran: a configuration that cannot be loaded at
		// start (a broken template, a port in use) is fatal. Once it has
		// run, failures (a crash mid-reload included) are retried.
		return fmt.Errorf("initial configuration: %w", err)
	case err != nil:
		l.failed(err)
	default:
		l.succeeded()
	}
	return nil
}

// failed records a pass that failed without a route to blame (a read-only
// or full working directory, a failing reload): the last good
// configuration keeps serving, the router is not ready, and the pass is
// tried again with backoff even without a new change.
func (l *loop) failed(err error) {
	c := l.c
	l.failures++
	wait := failureBackoff(c.o.ReloadInterval, l.failures)
	c.mu.Lock()
	c.ready, c.lastErr = false, err
	c.mu.Unlock()
	c.o.Observer.ObserveApplyFailing(true)
	c.o.Logger.Error(err, "configuration not applied; the previous configuration keeps serving; retrying", "failures", l.failures, "retryIn", wait)
	l.retry.arm(wait)
}

func (l *loop) succeeded() {
	if l.failures == 0 {
		return
	}
	c := l.c
	c.o.Logger.Info("configuration applied again after failed passes", "failures", l.failures)
	l.failures = 0
	c.mu.Lock()
	c.lastErr = nil
	c.mu.Unlock()
	c.o.Observer.ObserveApplyFailing(false)
}
