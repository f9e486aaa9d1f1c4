package main

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/go-logr/logr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// OPENSHIFT_ON_PANIC, as OpenShift's router reads it (library-go's
// serviceability.BehaviorOnPanic): what happens when a panic is caught by
// Kubernetes' crash handler (k8s.io/apimachinery's runtime.HandleCrash),
// which client-go's informers, reflectors, work queues and leader election
// run their goroutines under. A panic elsewhere in the router ends it, as
// in any Go program.
//
//   - unset or empty: the panic is logged and the goroutine's work goes on
//     (HandleCrash's ReallyCrash off);
//   - "crash": the process ends at the panic;
//   - "crash-after-delay:<Go duration>": logged, and the process ends that
//     long after (time to collect what it logged); a duration that does not
//     parse: "crash";
//   - a JSON list of these ("[\"crash-after-delay:30s\"]"): each applied in
//     order;
//   - anything else: logged as unrecognised and otherwise ignored, which
//     leaves HandleCrash's own default, crash (as in OpenShift).
const onPanicEnv = "OPENSHIFT_ON_PANIC"

// panicBehavior is what OPENSHIFT_ON_PANIC asks of HandleCrash.
type panicBehavior struct {
	// reallyCrash is utilruntime.ReallyCrash after the modes are applied
	// to initial.
	reallyCrash bool
	// delays are the crash-after-delay handlers to add.
	delays []time.Duration
	// messages are logged at start (err marks errors).
	messages []panicMessage
}

type panicMessage struct {
	text string
	err  bool
}

// parseOnPanic applies the modes of value to HandleCrash's current
// ReallyCrash (initial), as BehaviorOnPanic does.
func parseOnPanic(value string, initial bool) panicBehavior {
	b := panicBehavior{reallyCrash: initial}
	var modes []string
	if err := json.Unmarshal([]byte(value), &modes); err != nil {
		modes = []string{value}
	}
	for _, mode := range modes {
		switch {
		case mode == "crash":
			b.reallyCrash = true
			b.messages = append(b.messages, panicMessage{text: "Process will terminate as soon as a panic occurs."})
		case strings.HasPrefix(mode, "crash-after-delay:"):
			s := strings.TrimPrefix(mode, "crash-after-delay:")
			d, err := time.ParseDuration(s)
			if err != nil {
				b.reallyCrash = true
				b.messages = append(b.messages, panicMessage{text: "Unable to start crash-after-delay. Crashing immediately instead: " + err.Error(), err: true})
				continue
			}
			b.reallyCrash = false
			b.delays = append(b.delays, d)
			b.messages = append(b.messages, panicMessage{text: "Process will terminate " + s + " after a panic occurs."})
		case mode == "":
			b.reallyCrash = false
		default:
			b.messages = append(b.messages, panicMessage{text: "Unrecognized panic behavior " + onPanicEnv + "=" + value + " (crash, crash-after-delay:<duration>, or a JSON list of them): HandleCrash keeps crashing at a panic", err: true})
		}
	}
	return b
}

// applyOnPanic sets Kubernetes' crash handler up for OPENSHIFT_ON_PANIC's
// value. It changes k8s.io/apimachinery's process-wide settings, so it runs
// once, in main, before anything starts.
func applyOnPanic(value string, log logr.Logger) {
	b := parseOnPanic(value, utilruntime.ReallyCrash)
	for _, m := range b.messages {
		if m.err {
			log.Error(nil, m.text, "variable", onPanicEnv)
		} else {
			log.Info(m.text, "variable", onPanicEnv)
		}
	}
	utilruntime.ReallyCrash = b.reallyCrash
	for _, d := range b.delays {
		utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, crashAfter(d, log))
	}
}

// crashAfter is the crash-after-delay handler: it panics again, outside any
// handler, d after the caught panic.
func crashAfter(d time.Duration, log logr.Logger) func(context.Context, any) {
	return func(_ context.Context, r any) {
		go func() {
			log.Error(nil, "Panic happened. Process will crash in "+d.String()+".", "variable", onPanicEnv)
			time.Sleep(d)
			panic(r)
		}()
	}
}
