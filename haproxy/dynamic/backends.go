package dynamic

import (
	"slices"
	"strings"
)

// ReasonBackends: a backend was added that no backend HAProxy runs can
// stand for (HAProxy creates no backend at runtime).
const ReasonBackends = "backends"

// Backends come and go with routes. HAProxy (2.6 to 3.2) creates no
// backend at runtime, but a removed one costs nothing once no map entry
// leads to it, and a backend is only its lines: Diff lets a configuration
// drop backend sections (the running HAProxy keeps them as orphans, their
// servers in maintenance, until the next reload) and add backend sections
// that an orphan can stand for. An orphan stands for a new section whose
// lines are the same but for its name, its servers, its
// dynamic-cookie-key and, where the configuration reads the renames map
// (cookies.go), its sticky cookie's name: a route deleted and created
// again, or another route of the same kind and settings. The new section
// then runs under the orphan's name, and the map entries that name the
// new backend are sent with that name (RuntimeName). Sections other than backends must stay
// as they are, in the same order.

// name is the backend HAProxy runs the section as, "" when the section is
// not a backend or listen section.
func (s *section) name() string {
	if s.runsAs != "" {
		return s.runsAs
	}
	return backendName(s.header)
}

// isBackend reports whether a section header opens a backend section.
func isBackend(header string) bool { return strings.HasPrefix(header, "backend ") }

// sameHeaders reports whether old and new have the same sections in the
// same order and no orphans (Diff's common case).
func sameHeaders(old, new *Config) bool {
	if len(old.sections) != len(new.sections) {
		return false
	}
	for i := range old.sections {
		if old.sections[i].header != new.sections[i].header || old.sections[i].orphan || old.sections[i].runsAs != "" {
			return false
		}
	}
	return true
}

// diffBackends is Diff for configurations whose backend sections differ:
// the other sections pair up in order, backends by header; a backend
// section new adds takes over an orphan of old with its shape, or the
// change needs a reload; a backend section new drops becomes an orphan.
func diffBackends(old, new *Config) Change {
	x, r := indexBackends(old, new)
	if r != nil {
		return *r
	}
	free := x.free(old)
	budget := newSpareBudget(old)
	var all sectionCommands
	running := &Config{sections: make([]section, 0, len(new.sections)+len(free)), crt: old.crt, ca: old.ca, renames: old.renames}
	taken := map[int]bool{}
	moved := map[int]bool{} // old backends whose route moved to another
	oi := 0
	for i := range new.sections {
		n := &new.sections[i]
		var run section
		var d sectionCommands
		var r *Change
		switch j, had := x.oldBackends[n.header]; {
		case !isBackend(n.header) && n.unchanged:
			run = old.sections[x.oldOther[oi]]
			oi++
		case !isBackend(n.header):
			run, d, r = diffSection(&old.sections[x.oldOther[oi]], n)
			oi++
		case had && !old.sections[j].orphan && n.unchanged:
			run = old.sections[j] // as it runs (DiffMoved)
		case had && !old.sections[j].orphan:
			var why *Change
			run, d, r, why = diffInPlace(&old.sections[j], n)
			if why == nil {
				break
			}
			// The route's backend lines changed in what HAProxy cannot
			// change at runtime (its balance, say, or its servers' TLS
			// options, or the destination CA they read): it moves to a
			// free backend of its new shape, and the one it ran in
			// becomes an orphan.
			k, ok := pickOrphan(old, free[n.shape], taken, budget, n)
			if !ok {
				return *why
			}
			taken[k], moved[j] = true, true
			run, d, r = takeOver(&old.sections[k], n)
		case had && len(n.renew) == 0:
			// An orphan of this very backend: its route came back.
			taken[j] = true
			run, d, r = takeOver(&old.sections[j], n)
		default:
			j, ok := pickOrphan(old, free[n.shape], taken, budget, n)
			if !ok {
				return Change{Reload: true, Reason: movedReason(n), Where: n.header}
			}
			taken[j] = true
			run, d, r = takeOver(&old.sections[j], n)
		}
		if r != nil {
			return *r
		}
		all.append(d)
		running.sections = append(running.sections, run)
	}
	// What new drops and nothing took over stays, an orphan; so does
	// what a route moved out of, under a header of its own (the route's
	// is the moved section's).
	for i := range old.sections {
		s := &old.sections[i]
		if !isBackend(s.header) || (x.newBackends[s.header] && !moved[i]) || taken[i] {
			continue
		}
		run, d := orphan(s)
		if moved[i] {
			run.header = movedOutHeader(run.runsAs)
		}
		all.append(d)
		running.sections = append(running.sections, run)
	}
	running.aliases = aliases(running)
	all.append(cookieRenames(old, running, old.runningAs(running)))
	return all.change(running)
}

// reshaped reports whether n, the same backend as o (HAProxy runs o),
// changed in lines HAProxy cannot change at runtime (its balance, its
// cookie, its header actions, rate limiting turned on...): lines other
// than servers and the dynamic-cookie-key.
func reshaped(o, n *section) bool { return isBackend(n.header) && o.shape != n.shape }

// restyled reports whether the diff of a backend found a server whose
// options changed (r is diffSection's reload): the runtime API cannot
// change a server's TLS settings, say, in place, but a free backend of
// the same shape takes the servers with their new lines.
func restyled(r *Change) bool { return r != nil && r.Reason == ReasonServerOptions }

// movedOutHeader is the header of the orphan a route moved out of, HAProxy
// running it as runsAs: no configuration has it (a backend section has one
// name), and no other section of a running configuration (each runs as a
// name of its own).
func movedOutHeader(runsAs string) string { return "backend " + runsAs + " moved-out" }

// backendIndex locates the sections of two configurations: backends by
// header, the other sections by their order.
type backendIndex struct {
	oldBackends        map[string]int // header → index in old
	newBackends        map[string]bool
	oldOther, newOther []int // indexes of the sections that are no backends
}

// indexBackends indexes old and new, or says why they need a reload:
// a backend header twice, an orphan that is no backend, sections other
// than backends added or removed.
func indexBackends(old, new *Config) (backendIndex, *Change) {
	reload := func(where string) (backendIndex, *Change) {
		return backendIndex{}, &Change{Reload: true, Reason: ReasonConfig, Where: where}
	}
	x := backendIndex{oldBackends: map[string]int{}, newBackends: map[string]bool{}}
	for i := range old.sections {
		s := &old.sections[i]
		switch {
		case isBackend(s.header):
			if _, dup := x.oldBackends[s.header]; dup {
				return reload(s.header)
			}
			x.oldBackends[s.header] = i
		case s.orphan:
			return reload(s.header)
		default:
			x.oldOther = append(x.oldOther, i)
		}
	}
	for i := range new.sections {
		h := new.sections[i].header
		if !isBackend(h) {
			x.newOther = append(x.newOther, i)
			continue
		}
		if x.newBackends[h] {
			return reload(h)
		}
		x.newBackends[h] = true
	}
	if len(x.oldOther) != len(x.newOther) {
		return reload("sections added or removed")
	}
	return x, nil
}

// free lists the orphans free to take over, by shape: the old backends
// new drops, and the orphans already there that new does not bring back;
// each list in order, the same choice whatever the map's order.
func (x backendIndex) free(old *Config) map[[32]byte][]int {
	free := map[[32]byte][]int{}
	for h, i := range x.oldBackends {
		if !x.newBackends[h] {
			s := &old.sections[i]
			free[s.shape] = append(free[s.shape], i)
		}
	}
	for _, l := range free {
		slices.Sort(l)
	}
	return free
}

// pickOrphan chooses, among the orphans at indexes l of old (of one
// shape, in order), the first not taken yet that the backend named
// backend may run in: a spare only within its namespace's budget.
func pickOrphan(old *Config, l []int, taken map[int]bool, budget spareBudget, n *section) (int, bool) {
	backend := backendName(n.header)
	for _, j := range l {
		o := &old.sections[j]
		if !taken[j] && !readsAny(o, n.renew) && budget.take(o, backend) {
			return j, true
		}
	}
	return 0, false
}

// diffInPlace diffs n against o, the same backend as HAProxy runs it; why
// is set (and the rest is not) when the backend has to move to a free one
// instead: its lines other than servers changed, its servers' options
// changed, or they read a destination CA file whose contents changed.
func diffInPlace(o, n *section) (run section, d sectionCommands, r, why *Change) {
	switch {
	case len(n.renew) > 0:
		return run, d, nil, &Change{Reload: true, Reason: ReasonDestinationCA, Where: n.header}
	case reshaped(o, n):
		return run, d, nil, &Change{Reload: true, Reason: ReasonBackends, Where: n.header}
	}
	run, d, r = diffSection(o, n)
	if restyled(r) {
		return section{}, sectionCommands{}, nil, r
	}
	return run, d, r, nil
}

// movedReason is why a backend section that found no free backend to run
// in needs a reload.
func movedReason(n *section) string {
	if len(n.renew) > 0 {
		return ReasonDestinationCA
	}
	return ReasonBackends
}

// readsAny reports whether a server of s reads one of the files paths
// ("ca-file PATH").
func readsAny(s *section, paths []string) bool {
	for _, p := range paths {
		for j := range s.servers {
			if readsFile(s.servers[j].options, "ca-file", p) {
				return true
			}
		}
	}
	return false
}

// readsFile reports whether server options name path after keyword.
func readsFile(options, keyword, path string) bool {
	f := strings.Fields(options)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == keyword && f[i+1] == path {
			return true
		}
	}
	return false
}

// RenewServers marks the backend sections of c whose servers read one of
// the destination CA files paths ("ca-file"), whose contents changed: a
// Diff or DiffSections against c moves such a backend to a free one (its
// servers added anew, which read the new contents once "commit ssl
// ca-file" has run, see FileCommands), or says ReasonDestinationCA.
func (c *Config) RenewServers(paths []string) {
	if len(paths) == 0 {
		return
	}
	for i := range c.sections {
		s := &c.sections[i]
		if !isBackend(s.header) {
			continue
		}
		for _, p := range paths {
			if readsAny(s, []string{p}) {
				s.renew = append(s.renew, p)
			}
		}
	}
}

// aliases maps the names HAProxy runs c's backends as to the backends of
// the configuration they stand for ("" for an orphan), where they differ.
func aliases(c *Config) map[string]string {
	var out map[string]string
	for i := range c.sections {
		s := &c.sections[i]
		if s.runsAs == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if s.orphan {
			if _, taken := out[s.runsAs]; !taken {
				out[s.runsAs] = ""
			}
			continue
		}
		out[s.runsAs] = backendName(s.header)
	}
	return out
}

// Backend returns the backend of the configuration that the backend
// HAProxy runs as proxy stands for: proxy itself but for a backend taken
// over (see Diff); false for an orphan.
func (c *Config) Backend(proxy string) (string, bool) {
	name, ok := c.aliases[proxy]
	if !ok {
		return proxy, true
	}
	return name, name != ""
}

// takeOver runs the new section n as the orphan (or the removed backend) o
// of the same shape: its servers are o's, changed to n's.
func takeOver(o, n *section) (section, sectionCommands, *Change) {
	if o.shape != n.shape {
		return section{}, sectionCommands{}, &Change{Reload: true, Reason: ReasonBackends, Where: n.header}
	}
	return diffServers(o, n)
}

// orphan is a backend section no longer in the configuration, as HAProxy
// keeps running it: every server in maintenance (the drain deletes them
// once their connections are done).
func orphan(o *section) (section, sectionCommands) {
	var d sectionCommands
	run := *o
	run.orphan = true
	if run.runsAs == "" {
		run.runsAs = backendName(o.header)
	}
	run.servers = make([]server, len(o.servers))
	for j, sv := range o.servers {
		if !sv.disabled {
			d.removes = append(d.removes, Command{Kind: "state", Text: "set server " + run.runsAs + "/" + sv.name() + " state maint"})
		}
		sv.disabled, sv.removed = true, true
		run.servers[j] = sv
	}
	return run, d
}

// RuntimeName returns the name HAProxy runs the backend named name (in
// the configuration) as: name itself unless another backend stands for it
// (see Diff).
func (c *Config) RuntimeName(name string) string {
	if i, ok := c.index()["backend "+name]; ok && i >= 0 {
		return c.sections[i].name()
	}
	return name
}
