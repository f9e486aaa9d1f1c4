package main

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/controller"
)

// trimDelay is how long after a HAProxy start or reload the router returns
// its unused heap to the operating system.
const trimDelay = time.Second

// memoryTrimmer returns the heap a full pass left unused to the operating
// system once HAProxy has loaded the configuration. A full pass at 10,000
// routes holds about twice the router's steady heap for a moment, and Go's
// collector keeps the heap at that size (its goal is twice the live heap
// of the last collection) until much later: an idle router would keep
// ~250 MiB resident instead of ~110 MiB. The trim (debug.FreeOSMemory: a
// collection, then the free pages released) follows starts and reloads
// only, which are rare and cost HAProxy far more, never the frequent passes
// applied through the runtime API, and several reloads within trimDelay
// trim once. GOGC and GOMEMLIMIT keep their usual meaning.
type memoryTrimmer struct {
	controller.Observer
	log logr.Logger
	// free and after are debug.FreeOSMemory and time.AfterFunc (tests
	// replace them).
	free  func()
	after func(time.Duration, func())

	mu      sync.Mutex
	pending bool
}

func newMemoryTrimmer(obs controller.Observer, log logr.Logger) *memoryTrimmer {
	return &memoryTrimmer{Observer: obs, log: log, free: debug.FreeOSMemory,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
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

func (m *memoryTrimmer) trim() {
	m.mu.Lock()
	m.pending = false
	m.mu.Unlock()
	began := time.Now()
	m.free()
	m.log.V(4).Info("returned unused heap to the operating system", "duration", time.Since(began).String())
}
