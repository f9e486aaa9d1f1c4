package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenShiftProfileWritesTheProfileAsked: OPENSHIFT_PROFILE's modes
// write their file into the working directory when the profile stops;
// other values profile nothing.
func TestOpenShiftProfileWritesTheProfileAsked(t *testing.T) {
	for mode, file := range map[string]string{"cpu": "cpu.pprof", "mem": "mem.pprof", "block": "block.pprof", "mutex": "mutex.pprof", "trace": "trace.out"} {
		t.Run(mode, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stop, err := startProfile(mode)
			if err != nil || stop == nil {
				t.Fatalf("startProfile(%q): %v", mode, err)
			}
			stop()
			stop() // once
			fi, err := os.Stat(file)
			if err != nil || fi.Size() == 0 {
				t.Fatalf("%s: %v (%v)", file, err, fi)
			}
		})
	}
	t.Run("tmp suffix", func(t *testing.T) {
		t.Chdir(t.TempDir())
		t.Setenv("TMPDIR", t.TempDir())
		stop, err := startProfile("mem-tmp")
		if err != nil {
			t.Fatal(err)
		}
		stop()
		if _, err := os.Stat("mem.pprof"); err == nil {
			t.Fatal("mem-tmp wrote into the working directory")
		}
	})
	for _, mode := range []string{"", "web", "heap"} {
		if stop, err := startProfile(mode); stop != nil || err != nil {
			t.Errorf("startProfile(%q) = %v, %v: want no profile", mode, stop != nil, err)
		}
	}
	if matches, _ := filepath.Glob("*.pprof"); len(matches) > 0 {
		t.Errorf("profiles left in the package directory: %v", matches)
	}
}
