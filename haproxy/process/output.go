package process

import (
	"bufio"
	"io"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

const (
	// maxOutputLines bounds the lines of HAProxy output kept for error
	// messages.
	maxOutputLines = 500
	// maxLineBytes bounds one line of HAProxy output.
	maxLineBytes = 64 << 10
)

// outputLog keeps the last lines HAProxy (master and workers, which share
// the master's stdout/stderr in foreground master-worker mode) wrote, each
// with a sequence number so that a caller can ask for the lines written since
// a given point (e.g. since a reload was requested).
type outputLog struct {
	mu    sync.Mutex
	lines []string // ring of at most maxOutputLines
	first uint64   // sequence number of lines[0]
}

func (o *outputLog) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.lines) == maxOutputLines {
		copy(o.lines, o.lines[1:])
		o.lines = o.lines[:len(o.lines)-1]
		o.first++
	}
	o.lines = append(o.lines, line)
}

// seq returns the sequence number the next line will get.
func (o *outputLog) seq() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.first + uint64(len(o.lines))
}

// since returns the kept lines with a sequence number >= seq.
func (o *outputLog) since(seq uint64) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	start := 0
	if seq > o.first {
		start = int(seq - o.first)
	}
	if start >= len(o.lines) {
		return nil
	}
	return append([]string(nil), o.lines[start:]...)
}

// drain reads HAProxy's output until EOF (when every HAProxy process has
// closed it), logging each line and keeping it in o. It must keep reading
// whatever happens: HAProxy blocks if its stderr pipe fills up.
func (o *outputLog) drain(r io.Reader, log logr.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		o.add(line)
		switch {
		case knownHarmless(line):
			log.Info("haproxy output: the configuration's pidfile is ignored, the router's -p wins", "output", line)
		case noServerAvailable(line):
			// Routine with runtime changes: a deleted or moved route's
			// backend stays, its servers in maintenance, until the next
			// reload (OpenShift's router, reloading, never shows it).
			log.V(1).Info("haproxy: a backend has no server in service (a route deleted or moved, or its endpoints down)", "output", line)
		case strings.Contains(line, "[ALERT]"):
			log.Error(nil, "haproxy alert", "output", line)
		case strings.Contains(line, "[WARNING]"):
			log.V(1).Info("haproxy warning", "output", line)
		default:
			log.V(2).Info("haproxy output", "output", line)
		}
	}
	if err := sc.Err(); err != nil {
		log.Error(err, "reading haproxy output; discarding the rest")
		_, _ = io.Copy(io.Discard, r)
	}
}

// noServerAvailable reports whether line is HAProxy's alert that a
// backend's last server left service ("backend 'NAME' has no server
// available!").
func noServerAvailable(line string) bool {
	return strings.Contains(line, "[ALERT]") && strings.Contains(line, ": backend '") && strings.HasSuffix(line, "' has no server available!")
}

// diagnostics returns the [ALERT] and [WARNING] lines of out, or all of its
// non-empty lines when it has none of those, joined by newlines and bounded
// in size.
func diagnostics(lines []string) string {
	var picked []string
	for _, l := range lines {
		if (strings.Contains(l, "[ALERT]") || strings.Contains(l, "[WARNING]")) && !knownHarmless(l) {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				picked = append(picked, l)
			}
		}
	}
	const maxBytes = 8 << 10
	s := strings.Join(picked, "\n")
	if len(s) > maxBytes {
		s = "...\n" + s[len(s)-maxBytes:]
	}
	return s
}
