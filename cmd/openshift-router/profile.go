package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
)

// OPENSHIFT_PROFILE, as OpenShift's router reads it: "cpu", "mem",
// "block", "mutex" or "trace" profile the process and write cpu.pprof,
// mem.pprof, block.pprof, mutex.pprof or trace.out into the working
// directory (with the suffix "-tmp", e.g. "mem-tmp", into a new temporary
// directory instead) when the router is asked to stop (SIGTERM or
// SIGINT) — while its state is still live, so a heap profile shows what
// the running router holds — or, failing that, when it exits. Any other
// value profiles nothing.
const profileEnv = "OPENSHIFT_PROFILE"

// profiler is a profile being taken; stop writes it (once).
type profiler struct {
	once  sync.Once
	path  string
	write func(w io.Writer) error
	end   func()
	// gc is set when the profile is written at exit: a heap profile then
	// collects first (at a signal it is the last collection's, made
	// while the router's state was live: the router tears its state
	// down at the same signal).
	gc   bool
	quit chan os.Signal
}

// startProfile starts the profile mode asks for and returns the function
// that writes it (nil for no profile). The profile is also written at the
// first SIGTERM or SIGINT; the router's own handling of the signal goes on.
func startProfile(mode string) (func(), error) {
	dir := "."
	if m, ok := strings.CutSuffix(mode, "-tmp"); ok {
		mode = m
		dir = ""
	}
	p := &profiler{end: func() {}}
	name := ""
	switch mode {
	case "cpu":
		name = "cpu.pprof"
	case "mem":
		name = "mem.pprof"
		runtime.MemProfileRate = 4096
		p.write = func(w io.Writer) error {
			if p.gc {
				runtime.GC()
			}
			return pprof.Lookup("heap").WriteTo(w, 0)
		}
	case "block":
		name = "block.pprof"
		runtime.SetBlockProfileRate(1)
		p.write = func(w io.Writer) error { return pprof.Lookup("block").WriteTo(w, 0) }
	case "mutex":
		name = "mutex.pprof"
		runtime.SetMutexProfileFraction(1)
		p.write = func(w io.Writer) error { return pprof.Lookup("mutex").WriteTo(w, 0) }
	case "trace":
		name = "trace.out"
	default:
		return nil, nil
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "profile")
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", profileEnv, mode, err)
		}
		dir = d
	}
	p.path = filepath.Join(dir, name)
	if mode == "cpu" || mode == "trace" {
		// Streamed from the start: the file is open all along.
		f, err := os.Create(p.path)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", profileEnv, mode, err)
		}
		if mode == "cpu" {
			err = pprof.StartCPUProfile(f)
			p.end = pprof.StopCPUProfile
		} else {
			err = trace.Start(f)
			p.end = trace.Stop
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s=%s: %w", profileEnv, mode, err)
		}
		end := p.end
		p.end = func() {
			end()
			f.Close()
		}
	}
	p.quit = make(chan os.Signal, 1)
	signal.Notify(p.quit, syscall.SIGTERM, os.Interrupt)
	go func() {
		if _, ok := <-p.quit; ok {
			p.once.Do(p.flush)
		}
	}()
	return func() {
		p.once.Do(func() {
			p.gc = true
			p.flush()
		})
	}, nil
}

// flush ends the profile and writes it (once, under p.once).
func (p *profiler) flush() {
	func() {
		signal.Stop(p.quit)
		p.end()
		if p.write != nil {
			f, err := os.Create(p.path)
			if err == nil {
				err = p.write(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: writing %s: %v\n", profileEnv, p.path, err)
				return
			}
		}
		fmt.Fprintf(os.Stderr, "%s: profile written to %s\n", profileEnv, p.path)
	}()
}
