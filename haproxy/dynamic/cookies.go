package dynamic

import (
	"bytes"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// Sticky cookies. A backend's sticky cookie ("cookie NAME insert ...")
// has the route's name for it, and HAProxy cannot change it at runtime: a
// backend taken over by another route (a spare, or a deleted route's)
// goes on inserting the name it was loaded with, and so does a backend
// whose route's cookie name changed. A configuration that reads the
// renames map (layout.StickyRenamesFile, with a "map(PATH)" on a line that
// is no comment) renames the cookie, in both directions,
// for the backends listed there: running backend name → "NAME|RUNS", the
// name clients see and the name HAProxy inserts. Such a configuration's
// backends differ by their cookie's name in nothing Diff compares (shape,
// others): a backend of another cookie name can stand for a new one, and
// the renames map gets the entry (cookieRenames); a reload loads every
// backend with its own name again, the map empty. A configuration
// without the renames map (OpenShift's template) keeps the name in the
// backend's shape: only a backend of the same cookie name stands for
// another.

// SpareCookie is the sticky cookie's name of the spare backends of a
// configuration that reads the renames map (see Spares): the routes
// that take them over get their own names through the map.
const SpareCookie = "_router_spare"

// renamesMap returns the path of the renames map configuration data
// reads (a map lookup, mapLookups, of a PATH ending in
// layout.StickyRenamesFile, on a line that is no comment), or "".
func renamesMap(data []byte) string {
	suffix := []byte("/" + layout.StickyRenamesFile + ")")
	for off := 0; ; {
		i := bytes.Index(data[off:], suffix)
		if i < 0 {
			return ""
		}
		end := off + i + len(suffix) - 1 // the ")"
		off = end
		lineStart := bytes.LastIndexByte(data[:end], '\n') + 1
		open := bytes.LastIndexByte(data[lineStart:end], '(')
		if open < 0 {
			continue
		}
		open += lineStart
		line := bytes.TrimSpace(data[lineStart:end])
		p := string(data[open+1 : end])
		if line[0] != '#' && hasAnySuffix(data[:open+1], mapLookups) && !strings.ContainsAny(p, " \t,") {
			return p
		}
	}
}

// unnamedCookie is a backend's "cookie NAME ..." line (trimmed) without
// the name.
func unnamedCookie(line []byte) []byte {
	f := bytes.Fields(line)
	out := append([]byte(nil), f[0]...)
	for _, w := range f[2:] {
		out = append(append(out, ' '), w...)
	}
	return out
}

// runningCookie is the name HAProxy inserts the sticky cookie of the
// backend s runs as ("" without one).
func (s *section) runningCookie() string {
	if s.cookieRuns != "" {
		return s.cookieRuns
	}
	return s.cookie
}

// renameEntry is the renames map's value for the backend s runs as: ""
// when it needs none (an orphan, or a backend inserting its own name).
func (s *section) renameEntry() string {
	if s.orphan || s.cookieRuns == "" || s.cookie == "" {
		return ""
	}
	return s.cookie + "|" + s.cookieRuns
}

// runningAs returns, for run (what HAProxy runs once a change is
// applied), the section of c (what it ran before) each section of run
// runs in: the one of the same runtime name, or nil.
func (c *Config) runningAs(run *Config) func(int) *section {
	idx := c.runtimeIndex()
	return func(i int) *section {
		if j, ok := idx[run.sections[i].name()]; ok && j >= 0 {
			return &c.sections[j]
		}
		return nil
	}
}

// cookieRenames are the renames map's commands that take its entries from
// what old runs to what run runs: was(i) is the section of old the
// section i of run runs in (nil: none).
func cookieRenames(old, run *Config, was func(int) *section) sectionCommands {
	var d sectionCommands
	if old.renames == "" {
		return d
	}
	for i := range run.sections {
		s := &run.sections[i]
		if !isBackend(s.header) || (s.cookie == "" && s.cookieRuns == "") {
			continue
		}
		before := ""
		if o := was(i); o != nil {
			before = o.renameEntry()
		}
		after := s.renameEntry()
		key := " " + old.renames + " " + s.name()
		switch {
		case before == after:
		case before == "":
			d.cmds = append(d.cmds, Command{Kind: "map", Text: "add map" + key + " " + after})
		case after == "":
			d.removes = append(d.removes, Command{Kind: "map", Text: "del map" + key})
		default:
			d.cmds = append(d.cmds, Command{Kind: "map", Text: "set map" + key + " " + after})
		}
	}
	return d
}
