package dynamic

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Destination CA files (a re-encrypt route's destinationCACertificate,
// read by its server lines' "ca-file"): HAProxy reads them at load, and
// the runtime API adds one (measured on HAProxy 2.6.12: "new ssl ca-file
// P", "set ssl ca-file P" with the certificates, "commit ssl ca-file P";
// a server added afterwards with "ca-file P" verifies with it). The
// servers already using a file keep the store they were created with
// after "set ssl ca-file P" and "commit ssl ca-file P" (measured on 2.6.12
// and 3.0.11), while servers added after it read the new contents: a file
// whose contents change is committed and the backends whose servers read
// it move to free backends (Config.RenewServers, which Diff needs to be
// told of before FileCommands runs: ChangedCAFiles), or the change
// reloads. A file removed (its route deleted) stays in HAProxy until the
// next reload: the router keeps what HAProxy holds of it, and the same
// file written again needs nothing.

// ChangedCAFiles returns the destination CA files among changed whose
// contents in newData differ from those in oldData, both
// known: the files whose servers Diff has to renew (Config.RenewServers).
func ChangedCAFiles(caDir string, changed []string, newData, oldData map[string][]byte) []string {
	var out []string
	prefix := caDir + string(filepath.Separator)
	for _, p := range changed {
		p = filepath.Clean(p)
		if !strings.HasPrefix(p, prefix) || !strings.HasSuffix(p, ".pem") {
			continue
		}
		n, written := newData[p]
		o, had := oldData[p]
		if written && had && !bytes.Equal(n, o) {
			out = append(out, p)
		}
	}
	return out
}

// caHeld is a destination CA file HAProxy holds whose file is gone: the
// hash of the contents it holds (known: false when they are not known).
type caHeld struct {
	hash  [sha256.Size]byte
	known bool
}

// caChange collects the commands of the destination CA files of one
// change, and what HAProxy holds of the files removed.
type caChange struct {
	cmds  []Command
	count int
	held  map[string]caHeld
}

func newCAChange(running *Config) *caChange {
	c := &caChange{held: map[string]caHeld{}}
	if running != nil {
		maps.Copy(c.held, running.ca)
	}
	return c
}

// add works out the commands of the destination CA file at p, changed;
// false when it needs a reload: contents not known, a file whose contents
// change, a file used otherwise than by server lines, too large.
func (c *caChange) add(p string, in Files, fits func(string, []byte) bool) bool {
	if in.Old == nil {
		return false
	}
	data, written := in.New[p]
	old, had := in.Old[p]
	switch {
	case !written:
		// Removed: HAProxy keeps it (a backend it runs may still use it).
		c.held[p] = caHeld{hash: sha256.Sum256(old), known: had}
		return true
	case had && bytes.Equal(old, data):
		return true
	case had:
		// New contents: only when the Diff moved the servers reading the
		// file to free backends, their servers added anew after these
		// commands (Renewed; else the servers would keep the old CA).
		if !slices.Contains(in.Renewed, p) || fileUse(in.Config, p) != usedAsServerCA || !fits(p, data) {
			return false
		}
		c.cmds = append(c.cmds,
			Command{Kind: "ca-set", Text: "set ssl ca-file " + p, Payload: string(data)},
			Command{Kind: "ca-commit", Text: "commit ssl ca-file " + p})
		c.count++
		return true
	}
	if h, ok := c.held[p]; ok {
		// Written again: what HAProxy holds must be what is written.
		if !h.known || h.hash != sha256.Sum256(data) {
			return false
		}
		delete(c.held, p)
		return true
	}
	if fileUse(in.Config, p) != usedAsServerCA || !fits(p, data) {
		return false
	}
	c.cmds = append(c.cmds,
		Command{Kind: "ca-new", Text: "new ssl ca-file " + p},
		Command{Kind: "ca-set", Text: "set ssl ca-file " + p, Payload: string(data)},
		Command{Kind: "ca-commit", Text: "commit ssl ca-file " + p})
	c.count++
	return true
}

// serverCAOption reports whether the configuration text before a file's
// path ends "ca-file " on a server line.
func serverCAOption(before []byte) bool {
	line := before[bytes.LastIndexByte(before, '\n')+1:]
	return bytes.HasSuffix(line, []byte(" ca-file ")) && strings.HasPrefix(strings.TrimSpace(string(line)), "server ")
}
