package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// panicChildEnv makes the test binary the child of
// TestOnPanicDecidesWhetherACaughtPanicEndsTheProcess instead of running
// the tests.
const panicChildEnv = "ROUTER_TEST_ON_PANIC_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(panicChildEnv) == "1" {
		panicChild()
		return
	}
	os.Exit(m.Run())
}

// panicChild applies OPENSHIFT_ON_PANIC as main does, panics in a goroutine
// run under Kubernetes' crash handler (as client-go runs its informers) and
// says "survived" if the process is still there 2 s later.
func panicChild() {
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	applyOnPanic(os.Getenv(onPanicEnv), log)
	go func() {
		defer utilruntime.HandleCrash()
		panic("boom in an informer")
	}()
	time.Sleep(2 * time.Second)
	fmt.Println("survived")
	os.Exit(0)
}

func TestParseOnPanicFollowsOpenShiftsModes(t *testing.T) {
	tests := []struct {
		value      string
		initial    bool
		wantCrash  bool
		wantDelays []time.Duration
		wantErr    bool
	}{
		{value: "", initial: true, wantCrash: false},
		{value: "crash", initial: false, wantCrash: true},
		{value: "crash-after-delay:30s", initial: true, wantCrash: false, wantDelays: []time.Duration{30 * time.Second}},
		{value: "crash-after-delay:soon", initial: false, wantCrash: true, wantErr: true},
		{value: `["crash-after-delay:1m","crash"]`, initial: false, wantCrash: true, wantDelays: []time.Duration{time.Minute}},
		{value: "bogus", initial: true, wantCrash: true, wantErr: true},
	}
	for _, tc := range tests {
		b := parseOnPanic(tc.value, tc.initial)
		if b.reallyCrash != tc.wantCrash || !reflect.DeepEqual(b.delays, tc.wantDelays) {
			t.Errorf("%q: crash %v delays %v, want %v %v", tc.value, b.reallyCrash, b.delays, tc.wantCrash, tc.wantDelays)
		}
		gotErr := false
		for _, m := range b.messages {
			gotErr = gotErr || m.err
		}
		if gotErr != tc.wantErr {
			t.Errorf("%q: error message %v, want %v (%+v)", tc.value, gotErr, tc.wantErr, b.messages)
		}
	}
}

// TestOnPanicDecidesWhetherACaughtPanicEndsTheProcess runs a process that
// panics under Kubernetes' crash handler with each OPENSHIFT_ON_PANIC value.
func TestOnPanicDecidesWhetherACaughtPanicEndsTheProcess(t *testing.T) {
	tests := []struct {
		value        string
		wantSurvives bool
		atLeast      time.Duration // before the process ends
		wantOutput   string
	}{
		{value: "", wantSurvives: true, wantOutput: "boom in an informer"},
		{value: "crash", wantOutput: "Process will terminate as soon as a panic occurs"},
		{value: "crash-after-delay:700ms", atLeast: 700 * time.Millisecond, wantOutput: "Process will crash in 700ms"},
		{value: `["crash-after-delay:500ms"]`, atLeast: 500 * time.Millisecond, wantOutput: "Process will crash in 500ms"},
		{value: "bogus", wantOutput: "Unrecognized panic behavior"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("OPENSHIFT_ON_PANIC=%q", tc.value), func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), panicChildEnv+"=1", onPanicEnv+"="+tc.value)
			started := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(started)
			survived := strings.Contains(string(out), "survived")
			if survived != tc.wantSurvives {
				t.Fatalf("survived %v (%v after %v), want %v; output:\n%s", survived, err, took, tc.wantSurvives, out)
			}
			var exit *exec.ExitError
			if !tc.wantSurvives && (!errors.As(err, &exit) || exit.ExitCode() == 0) {
				t.Errorf("exit %v, want a crash", err)
			}
			if !tc.wantSurvives && (took < tc.atLeast || took > 1900*time.Millisecond) {
				t.Errorf("ended after %v, want between %v and the 2 s it would live", took, tc.atLeast)
			}
			if !strings.Contains(string(out), tc.wantOutput) {
				t.Errorf("output lacks %q:\n%s", tc.wantOutput, out)
			}
		})
	}
}
