package main

import (
	"errors"
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
