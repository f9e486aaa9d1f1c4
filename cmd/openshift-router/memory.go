package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/controller"
)

const (
	// trimDelay is how long after a HAProxy start or reload the router
	// returns its unused heap to the operating system.
	trimDelay = time.Second
	// idleCheck is how often the router looks whether it has been quiet
	// long enough, with enough unused heap, to trim: at most one trim per
	// idleCheck apart from those after reloads.
	idleCheck = 15 * time.Second
	// quietFor is how long no configuration pass must have run before an
	// idle trim.
	quietFor = 30 * time.Second
	// minIdleTrim is the least unused heap an idle trim returns.
	minIdleTrim = 4 << 20
	// idleTrimShare: an idle trim also needs at least 1/idleTrimShare of
	// the live heap unused (a collection costs about the live heap's
	// marking: at 10,000 routes, some tens of milliseconds).
	idleTrimShare = 16
)

// memoryTrimmer returns the heap the router's work left unused to the
// operating system. A full pass at 10,000 routes holds about twice the
// router's steady heap for a moment, and Go's collector keeps the heap at
// that size (its goal is twice the live heap of the last collection) until
// much later: an idle router would keep ~250 MiB resident instead of
// ~110 MiB. The same happens, more slowly, after hours of route changes
// and status writes applied without a reload. The trim
// (debug.FreeOSMemory: a collection, then the free pages released) follows
// starts and reloads (several within trimDelay trim once), and, checked
// every idleCheck, a quiet period of quietFor without a pass when the
// unused heap is at least a sixteenth of the live heap and minIdleTrim —
// never the frequent passes themselves. Status writes run no pass: the
// garbage they leave (a route version and a request per write) is
// returned once it is worth a collection, whatever the collector's goal.
// GOGC and GOMEMLIMIT keep their usual meaning.
type memoryTrimmer struct {
	controller.Observer
	log logr.Logger
	// free, after, now and heap are debug.FreeOSMemory, time.AfterFunc,
	// time.Now and heapUse (tests replace them).
	free  func()
	after func(time.Duration, func())
	now   func() time.Time
	heap  func() (resident, live uint64)

	mu       sync.Mutex
	pending  bool
	lastWork time.Time
}

func newMemoryTrimmer(obs controller.Observer, log logr.Logger) *memoryTrimmer {
	return &memoryTrimmer{Observer: obs, log: log, free: debug.FreeOSMemory,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		now:   time.Now, heap: heapUse}
}

// ObserveWriteConfig records the pass as work the idle trim waits out.
func (m *memoryTrimmer) ObserveWriteConfig(d time.Duration) {
	m.Observer.ObserveWriteConfig(d)
	m.mu.Lock()
	m.lastWork = m.now()
	m.mu.Unlock()
}

// ObserveReload records the reload and, when it succeeded, schedules a
// trim unless one is pending.
func (m *memoryTrimmer) ObserveReload(d time.Duration, err error) {
	m.Observer.ObserveReload(d, err)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending {
		return
	}
	m.pending = true
	m.after(trimDelay, m.trim)
}

// Run checks every idleCheck, until ctx ends, whether to trim.
func (m *memoryTrimmer) Run(ctx context.Context) {
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.idleTrim()
		}
	}
}

// idleTrim trims when no pass ran for quietFor, no trim is pending, and
// the heap holds enough unused memory to be worth a collection.
func (m *memoryTrimmer) idleTrim() {
	m.mu.Lock()
	quiet := !m.pending && m.now().Sub(m.lastWork) >= quietFor
	m.mu.Unlock()
	if !quiet {
		return
	}
	resident, live := m.heap()
	if resident < live || resident-live < max(minIdleTrim, live/idleTrimShare) {
		return
	}
	m.trim()
}

func (m *memoryTrimmer) trim() {
	m.mu.Lock()
	m.pending = false
	m.mu.Unlock()
	began := time.Now()
	m.free()
	m.log.V(4).Info("returned unused heap to the operating system", "duration", time.Since(began).String())
}

// heapUse reports the heap the process holds from the operating system
// (the heap's objects, live and not yet collected, its unused parts of
// spans and its free pages not yet returned) and the part of it the last
// collection found live.
func heapUse() (resident, live uint64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0, 0
		}
	}
	return s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64(), s[3].Value.Uint64()
}
