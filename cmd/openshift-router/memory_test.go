package main

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/admission"
)

// countingObserver counts the reloads it was told of.
type countingObserver struct{ reloads int }

func (o *countingObserver) ObserveWriteConfig(time.Duration)                    {}
func (o *countingObserver) ObserveReload(time.Duration, error)                  { o.reloads++ }
func (o *countingObserver) ObserveAdmission(map[admission.Key]admission.Result) {}
func (o *countingObserver) ObserveReloadReason(string)                          {}
func (o *countingObserver) ObserveRuntimeChange(string)                         {}
func (o *countingObserver) ObserveRuntimeError()                                {}
func (o *countingObserver) ObserveRestart()                                     {}
func (o *countingObserver) ObserveApplyFailing(bool)                            {}
func (o *countingObserver) ObserveServicesOverEndpointLimit(int)                {}
func (o *countingObserver) ObserveUncheckedEndpoints(int)                       {}

func TestMemoryTrimmerTrimsOnceAfterSuccessfulReloads(t *testing.T) {
	tests := []struct {
		name string
		// reloads are the outcomes of the reloads before the timer fires.
		reloads   []error
		wantTimer int
	}{
		{"a successful reload schedules a trim", []error{nil}, 1},
		{"a failed reload does not", []error{errors.New("refused")}, 0},
		{"reloads while a trim is pending schedule no other", []error{nil, nil, errors.New("refused"), nil}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &countingObserver{}
			m := newMemoryTrimmer(obs, logr.Discard())
			frees := 0
			m.free = func() { frees++ }
			var timers []func()
			m.after = func(d time.Duration, f func()) {
				if d != trimDelay {
					t.Errorf("delay %s, want %s", d, trimDelay)
				}
				timers = append(timers, f)
			}
			for _, err := range tt.reloads {
				m.ObserveReload(time.Millisecond, err)
			}
			if obs.reloads != len(tt.reloads) {
				t.Errorf("observer told of %d reloads, want %d", obs.reloads, len(tt.reloads))
			}
			if len(timers) != tt.wantTimer {
				t.Fatalf("%d trims scheduled, want %d", len(timers), tt.wantTimer)
			}
			for _, f := range timers {
				f()
			}
			if frees != tt.wantTimer {
				t.Errorf("heap freed %d times, want %d", frees, tt.wantTimer)
			}
			// Once the trim ran, the next reload schedules another.
			m.ObserveReload(time.Millisecond, nil)
			if len(timers) != tt.wantTimer+1 {
				t.Errorf("after the trim, a reload scheduled %d trims in all, want %d", len(timers), tt.wantTimer+1)
			}
		})
	}
}

func TestMemoryTrimmerTrimsAQuietRouterHoldingMuchUnusedHeap(t *testing.T) {
	const mib = 1 << 20
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// sinceWork is the time since the last pass; pending is a trim
		// scheduled after a reload.
		sinceWork      time.Duration
		pending        bool
		resident, live uint64
		wantTrim       bool
	}{
		{"quiet with half the live heap unused trims", time.Minute, false, 150 * mib, 75 * mib, true},
		{"a pass within quietFor waits", quietFor - time.Second, false, 150 * mib, 75 * mib, false},
		{"quiet for exactly quietFor trims", quietFor, false, 150 * mib, 75 * mib, true},
		{"little unused heap is not worth a collection", time.Minute, false, 79 * mib, 75 * mib, false},
		{"a sixteenth of the live heap unused trims", time.Minute, false, 170 * mib, 160 * mib, true},
		{"less than a sixteenth of the live heap unused waits", time.Minute, false, 170*mib - 1, 160 * mib, false},
		{"a small heap needs minIdleTrim unused", time.Minute, false, 11 * mib, 8 * mib, false},
		{"a small heap with minIdleTrim unused trims", time.Minute, false, 12 * mib, 8 * mib, true},
		{"a trim pending after a reload is not doubled", time.Minute, true, 150 * mib, 75 * mib, false},
		{"unreadable metrics never trim", time.Minute, false, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMemoryTrimmer(&countingObserver{}, logr.Discard())
			frees := 0
			m.free = func() { frees++ }
			m.after = func(time.Duration, func()) {}
			now := start
			m.now = func() time.Time { return now }
			m.heap = func() (uint64, uint64) { return tt.resident, tt.live }
			m.ObserveWriteConfig(time.Millisecond)
			if tt.pending {
				m.ObserveReload(time.Millisecond, nil)
			}
			now = now.Add(tt.sinceWork)
			m.idleTrim()
			if got := frees == 1; got != tt.wantTrim || frees > 1 {
				t.Errorf("heap freed %d times, want trim %v", frees, tt.wantTrim)
			}
		})
	}
}

func TestHeapUseReadsTheRuntimesHeap(t *testing.T) {
	runtime.GC()
	resident, live := heapUse()
	if live == 0 || resident < live {
		t.Errorf("heapUse() = resident %d, live %d; want live > 0 and resident >= live", resident, live)
	}
}
