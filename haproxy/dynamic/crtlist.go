package dynamic

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Certificates of routes come and go as crt-list lines. HAProxy 2.6
// cannot delete a crt-list line whose certificate's name has a colon ("del
// ssl crt-list" reads what follows the first colon as a line number), and
// route certificate files are named "namespace:name.pem" (OpenShift's
// paths). So a certificate added at runtime is given a name without a
// colon (crtName); a line HAProxy loaded from the file, whose route is
// deleted, stays as a tombstone: its certificate replaced by the bind
// line's default certificate, so the host is shown what a fresh load
// shows it (unless the bind line has strict-sni: then a reload). A route
// created again gets its tombstone back.

// crtEntry is what HAProxy runs for a crt-list line when it differs from
// the file: the name HAProxy has the certificate by, and, for a
// tombstone, the line it still has.
type crtEntry struct {
	name, tombstone string
}

// crtName is the name a certificate added at runtime gets: its path with
// the colons of its file name replaced, and a prefix no route's file name
// has (a namespace has no dot).
func crtName(p string) string {
	dir, base := filepath.Split(p)
	if !strings.Contains(base, ":") && !strings.Contains(dir, ":") {
		return p
	}
	return strings.ReplaceAll(dir, ":", "_") + "rt." + strings.ReplaceAll(base, ":", "_")
}

// crtListLines parses a crt-list: certificate file → its line, in order;
// false when a file is there twice or a line cannot be sent as it is.
func crtListLines(data []byte) (files []string, lines map[string]string, ok bool) {
	lines = map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if _, dup := lines[f[0]]; dup || !cliWord(f[0]) || strings.ContainsAny(line, ";\\") {
			return nil, nil, false
		}
		files = append(files, f[0])
		lines[f[0]] = strings.Join(f, " ")
	}
	return files, lines, true
}

// crtListChange collects the commands of the crt-lists that changed.
type crtListChange struct {
	entryCommands
	// certs are the certificate commands (added, revived, tombstoned),
	// before adds; count is how many certificates they add or replace.
	certs []Command
	count int
	// handled are the certificate files whose commands are here (the
	// caller does not replace them again); entries is the running state
	// of the lines, updated.
	handled map[string]bool
	entries map[string]crtEntry
}

func newCrtListChange(running *Config) *crtListChange {
	c := &crtListChange{handled: map[string]bool{}, entries: map[string]crtEntry{}}
	if running != nil {
		for k, v := range running.crt {
			c.entries[k] = v
		}
	}
	return c
}

// name is the name HAProxy has the certificate of file p by.
func (c *crtListChange) name(p string) string {
	if e, ok := c.entries[p]; ok && e.name != "" {
		return e.name
	}
	return p
}

// add works out the commands of the crt-list at p; false when it needs a
// reload (contents not known, a line changed in place, a certificate not
// among the changed files, a line that cannot be removed).
func (c *crtListChange) add(p string, in Files, fits func(string, []byte) bool) bool {
	oldData, known := in.Old[p]
	if in.Old == nil || !known {
		return false
	}
	oldFiles, oldLines, ok := crtListLines(oldData)
	if !ok {
		return false
	}
	newFiles, newLines, ok := crtListLines(in.New[p])
	if !ok {
		return false
	}
	for _, f := range newFiles {
		l, had := oldLines[f]
		if had {
			if l != newLines[f] {
				return false
			}
			continue
		}
		pem, ok := in.New[filepath.Clean(f)]
		if !ok || !fits(f, pem) {
			return false
		}
		c.handled[filepath.Clean(f)] = true
		c.count++
		if e := c.entries[f]; e.tombstone != "" {
			// Created again: its line is still there.
			if e.tombstone != newLines[f] {
				return false
			}
			c.certs = append(c.certs, CertificateCommands(c.name(f), pem)...)
			c.entries[f] = crtEntry{name: e.name}
			continue
		}
		name := crtName(f)
		c.certs = append(c.certs, Command{Kind: "ssl-new", Text: "new ssl cert " + name})
		c.certs = append(c.certs, CertificateCommands(name, pem)...)
		line := name + strings.TrimPrefix(newLines[f], f)
		c.adds = append(c.adds, Command{Kind: "crt-list-add", Text: "add ssl crt-list " + p, Payload: line})
		c.entries[f] = crtEntry{name: name}
	}
	for _, f := range oldFiles {
		if _, has := newLines[f]; has {
			continue
		}
		c.handled[filepath.Clean(f)] = true
		name := c.name(f)
		if !strings.Contains(name, ":") {
			c.dels = append(c.dels, Command{Kind: "crt-list-del", Text: "del ssl crt-list " + p + " " + name})
			if !bytes.Contains(in.Config, []byte(name)) {
				c.dels = append(c.dels, Command{Kind: "ssl-del", Text: "del ssl cert " + name})
			}
			delete(c.entries, f)
			continue
		}
		def, ok := defaultCertificate(in, p)
		if !ok {
			return false
		}
		c.certs = append(c.certs, CertificateCommands(name, def)...)
		c.entries[f] = crtEntry{name: c.entries[f].name, tombstone: oldLines[f]}
	}
	return true
}

// defaultCertificate is the certificate of the bind line that loads the
// crt-list at p ("crt FILE"), as a tombstone's stand-in; false when there
// is none, it cannot be read, or the line has strict-sni (a host without a
// line of its own is refused: no stand-in shows that).
func defaultCertificate(in Files, p string) ([]byte, bool) {
	if in.ReadFile == nil {
		return nil, false
	}
	for _, line := range strings.Split(string(in.Config), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "bind" || !strings.Contains(line, " crt-list "+p) {
			continue
		}
		crt := ""
		for i := 1; i < len(f); i++ {
			if f[i] == "strict-sni" {
				return nil, false
			}
			if f[i] == "crt" && i+1 < len(f) {
				crt = f[i+1]
			}
		}
		if crt == "" {
			return nil, false
		}
		data, err := in.ReadFile(crt)
		return data, err == nil && len(data) > 0
	}
	return nil, false
}
