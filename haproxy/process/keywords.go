package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// # Process keywords of a configuration
//
// Templates written for OpenShift's router carry keywords of the global
// section that concern HAProxy's process rather than its traffic: OpenShift's
// own template says "daemon" and binds its own "stats socket"
// (/var/lib/haproxy/run/haproxy.sock), and others add "master-worker",
// "pidfile" or "nbthread". OpenShift's reload script starts HAProxy with them
// as they are. This router keeps HAProxy's master in the foreground as its
// child, and does so with command-line flags, never by editing the
// configuration (so the configuration on disk is byte for byte what the
// template rendered):
//
//   - daemon: overridden by -db ("only disables background mode"). Verified
//     with HAProxy 2.6.12: with "daemon" in the global section, "-W -db" keeps
//     the master in the foreground, at start and across reloads (the master
//     re-executes itself with the same arguments); without -db the master
//     forks into the background and the router's child exits with status 0.
//   - master-worker: the router already runs HAProxy with -W; no effect.
//   - pidfile: the router's "-p <RunDir>/haproxy.pid" wins; HAProxy ignores
//     the configuration's line and says so ("[ALERT] ... 'pidfile' already
//     specified. Continuing."), which the output reader logs as information,
//     not as an alert (knownHarmless). The configuration's path is never
//     written, so a directory that does not exist there breaks nothing.
//   - nbthread: honoured (the worker runs that many threads).
//   - stats socket: each is bound by the worker in addition to the router's
//     own runtime socket, which the router keeps using. A unix socket whose
//     directory does not exist makes HAProxy refuse to start ("cannot bind
//     UNIX socket (No such file or directory)"; "haproxy -c" does not bind and
//     so does not notice), so the Manager creates that directory (mode 0700)
//     before starting or reloading HAProxy, as OpenShift's image provides
//     /var/lib/haproxy/run.

// ProcessKeywords are the process keywords found in a configuration's global
// section(s).
type ProcessKeywords struct {
	Daemon       bool
	MasterWorker bool
	// PIDFile is the argument of "pidfile", "" if none.
	PIDFile string
	// NbThread is the argument of "nbthread", "" if none.
	NbThread string
	// StatsSockets are the addresses of the "stats socket" lines, in order.
	StatsSockets []string
}

// Empty reports whether no process keyword was found.
func (k ProcessKeywords) Empty() bool {
	return !k.Daemon && !k.MasterWorker && k.PIDFile == "" && k.NbThread == "" && len(k.StatsSockets) == 0
}

// sectionKeywords start a section of an HAProxy configuration.
var sectionKeywords = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "program": true, "mailers": true,
	"ring": true, "http-errors": true, "cache": true, "fcgi-app": true, "log-forward": true,
	"crt-store": true, "traces": true,
}

// maxKeywordLine bounds one configuration line while scanning.
const maxKeywordLine = 1 << 20

// ScanProcessKeywords reads a configuration and returns the process keywords
// of its global sections. Only global sections are looked at: the same words
// elsewhere (a "stats socket" cannot appear elsewhere; a backend named
// "daemon" can) do not count.
func ScanProcessKeywords(r io.Reader) (ProcessKeywords, error) {
	var k ProcessKeywords
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxKeywordLine)
	inGlobal := false
	for sc.Scan() {
		words := configWords(sc.Text())
		if len(words) == 0 {
			continue
		}
		if sectionKeywords[words[0]] {
			inGlobal = words[0] == "global"
			continue
		}
		if !inGlobal {
			continue
		}
		switch words[0] {
		case "daemon":
			k.Daemon = true
		case "master-worker":
			k.MasterWorker = true
		case "pidfile":
			if len(words) > 1 {
				k.PIDFile = words[1]
			}
		case "nbthread":
			if len(words) > 1 {
				k.NbThread = words[1]
			}
		case "stats":
			if len(words) > 2 && words[1] == "socket" {
				k.StatsSockets = append(k.StatsSockets, words[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return k, err
	}
	return k, nil
}

// configWords splits one configuration line into words: blanks separate
// them, "#" starts a comment, a backslash escapes the next character and
// double or single quotes group (HAProxy's own rules, without environment
// variable expansion).
func configWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '"' || c == '\'':
			quote = c
			inWord = true
		case c == '#':
			i = len(line)
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// unixSocketPath returns the file system path of a "stats socket" address,
// or "" when it is not an absolute unix socket path (an IP address, an
// abstract socket, a relative path).
func unixSocketPath(addr string) string {
	p := strings.TrimPrefix(addr, "unix@")
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	return filepath.Clean(p)
}

// describe is the log line's account of what the router does with k.
func (k ProcessKeywords) describe(pidFile, runtimeSocket string) []any {
	var kv []any
	if k.Daemon {
		kv = append(kv, "daemon", "overridden: HAProxy runs with -db and stays in the foreground as the router's child")
	}
	if k.MasterWorker {
		kv = append(kv, "master-worker", "no effect: the router runs HAProxy with -W")
	}
	if k.PIDFile != "" {
		kv = append(kv, "pidfile", fmt.Sprintf("%s ignored: the router's -p %s wins", k.PIDFile, pidFile))
	}
	if k.NbThread != "" {
		kv = append(kv, "nbthread", k.NbThread+" honoured")
	}
	if len(k.StatsSockets) > 0 {
		var extra []string
		for _, s := range k.StatsSockets {
			if unixSocketPath(s) != filepath.Clean(runtimeSocket) {
				extra = append(extra, s)
			}
		}
		if len(extra) > 0 {
			kv = append(kv, "extraStatsSockets", extra)
		}
	}
	return kv
}

// prepareProcessKeywords scans the configuration HAProxy is about to load,
// logs what the router does with its process keywords (when that changed
// since the last start or reload) and creates the missing directories of its
// unix stats sockets. Called with opMu held. A configuration that cannot be
// read is left to HAProxy to report.
func (m *Manager) prepareProcessKeywords() {
	data, err := os.ReadFile(m.opts.ConfigPath)
	if err != nil {
		return
	}
	k, err := ScanProcessKeywords(bytes.NewReader(data))
	if err != nil {
		m.log.Error(err, "scanning the configuration's process keywords", "config", m.opts.ConfigPath)
		return
	}
	for _, s := range k.StatsSockets {
		p := unixSocketPath(s)
		if p == "" {
			continue
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			m.log.Error(err, "creating the directory of the configuration's stats socket; HAProxy will not be able to bind it", "socket", p, "dir", dir)
			continue
		}
		m.log.Info("created the missing directory of the configuration's stats socket", "socket", p, "dir", dir)
	}
	kv := k.describe(m.PIDFilePath(), m.runtimeSocketHint())
	summary := fmt.Sprint(kv...)
	if summary == m.keywordSummary {
		return
	}
	m.keywordSummary = summary
	if len(kv) == 0 {
		return
	}
	m.log.Info("the configuration carries process keywords; the router keeps HAProxy in the foreground it manages", append([]any{"config", m.opts.ConfigPath}, kv...)...)
}

// runtimeSocketHint is the router's own runtime API socket as RunDir lays
// it out (layout.RuntimeSocket): a stats socket there is not an extra one.
func (m *Manager) runtimeSocketHint() string {
	return filepath.Join(m.opts.RunDir, filepath.Base(layout.RuntimeSocket))
}

// knownHarmless reports whether an [ALERT] line of HAProxy's output is one
// that the router's own command line causes and that changes nothing: the
// configuration's "pidfile" ignored because -p was given.
func knownHarmless(line string) bool {
	return strings.Contains(line, "'pidfile' already specified")
}
