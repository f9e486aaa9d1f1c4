// Package dynamic works out how a running HAProxy can be brought from one
// configuration to the next without a reload, and applies it through the
// runtime API.
//
// It compares the text of two rendered haproxy.config files. When they
// differ only in the address, weight or maintenance state ("disabled") of
// existing server lines, the difference is a list of runtime API commands
// ("set server b/s addr|weight|state") that leave the running process exactly
// as a reload on the new file would. A server line added to or removed from
// a backend is followed too, the way OpenShift's dynamic configuration
// manager does it, so that templates that write one line per endpoint (as
// OpenShift's does) scale without reloads: an added line becomes
// "add server" (then "enable server", and "enable health" with "check"),
// when its options are ones HAProxy accepts on a dynamic server and the
// backend's balance algorithm is dynamic; a removed line's server is put in
// maintenance (its connections finish, no new ones come) and stays there
// until the next reload. Anything else — another line, a server line
// renamed or with other options, a line HAProxy could not add — needs a
// reload, and Diff says why.
package dynamic

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Reasons a difference needs a reload.
const (
	// ReasonConfig: a line other than a server line changed.
	ReasonConfig = "config"
	// ReasonServers: server lines were added, removed, renamed or reordered.
	ReasonServers = "servers"
	// ReasonServerOptions: a server line changed in something other than
	// its address, weight or maintenance state.
	ReasonServerOptions = "server-options"
	// ReasonDestinationCA: a destination CA file's contents changed and
	// no free backend was left for the routes using it to move to.
	ReasonDestinationCA = "destination-ca"
	// ReasonServerAddress: a server's new address is not an IP and port.
	ReasonServerAddress = "server-address"
)

// Config is a parsed haproxy.config, as far as Diff needs it.
type Config struct {
	sections []section
	// crt is what HAProxy runs of the crt-lists where it differs from
	// the files (see crtEntry), by certificate file.
	crt map[string]crtEntry
	// ca is what HAProxy holds of destination CA files since removed
	// (see caChange), by file.
	ca map[string]caHeld
	// aliases maps the names HAProxy runs backends as to the backends
	// they stand for, where they differ ("" for an orphan; see Backend).
	// Set once, never changed.
	aliases map[string]string
	// byHeader indexes sections by header (see index), byName by the
	// name HAProxy runs them as (see runtimeIndex); nil until used.
	byHeader, byName map[string]int
	// renames is the path of the sticky cookie renames map the
	// configuration reads (see cookies.go), "" when it reads none.
	renames string
}

type section struct {
	header string
	// runsAs is the name HAProxy knows the backend by when it is not the
	// header's: a backend HAProxy loaded for a route since removed, taken
	// over at runtime by a new route whose section is the same but for
	// its name (see Diff).
	runsAs string
	// orphan: the section is no longer in the configuration, but the
	// running HAProxy still has the backend (no map entry leads to it, its
	// servers are in maintenance) until a reload; a new backend with the
	// same shape can take it over.
	orphan bool
	// others hashes the section's lines other than server lines; shape
	// hashes them without the dynamic-cookie-key's value (which the
	// runtime API sets). Where the configuration reads a renames map,
	// neither has a backend's sticky cookie name (see cookies.go).
	others, shape [sha256.Size]byte
	// cookie is the name of a backend's sticky cookie ("cookie NAME
	// ..."), as the configuration has it; cookieRuns the name HAProxy
	// inserts instead, where it runs the backend with another (a backend
	// taken over, or whose route's cookie name changed: see cookies.go).
	cookie, cookieRuns string
	servers            []server
	// staticLB is set when the section's balance algorithm does not
	// allow servers to be added at runtime (static-rr, or a hash without
	// "hash-type consistent").
	staticLB bool
	// cookieKey is the section's dynamic-cookie-key: servers added at
	// runtime get their cookie from it once it is set again (HAProxy 2.6
	// computes dynamic cookies of configured servers only).
	cookieKey string
	// renew are the destination CA files whose contents changed that the
	// section's servers read (RenewServers): HAProxy's servers keep the
	// certificates they were created with, so the backend moves to a
	// free one whose servers are added anew.
	renew []string
	// lastID is the highest server id the running backend has given out:
	// HAProxy numbers the servers of a loaded backend 1, 2, ... in order,
	// and the router gives each server it adds the next one. (HAProxy
	// 2.6.12 numbers added servers itself, but with "balance random" the
	// servers added together then collide in its hash tree and some get
	// no traffic; with explicit ids every one does.)
	lastID uint32
	// unchanged marks a section of a configuration DiffMoved puts
	// together that is the running section itself: nothing to compare.
	unchanged bool
}

type server struct {
	// fields holds the server's name, address, weight ("" when not set)
	// and cookie value ("" when not set), one after the other, up to
	// nameEnd, addrEnd and weightEnd and the end. It is a substring of one
	// string for all the servers of a Parse: a configuration is kept
	// parsed for as long as HAProxy runs it (60,000 server lines at
	// 10,000 routes with their spare slots).
	fields                      string
	nameEnd, addrEnd, weightEnd uint32
	// options are the other words of the line, as written (shared
	// between the servers of a Parse that have the same).
	options  string
	disabled bool
	// removed: the line is gone from the configuration, but the running
	// HAProxy still has the server, in maintenance, until a reload.
	removed bool
}

func (s *server) name() string   { return s.fields[:s.nameEnd] }
func (s *server) addr() string   { return s.fields[s.nameEnd:s.addrEnd] }
func (s *server) weight() string { return s.fields[s.addrEnd:s.weightEnd] }
func (s *server) cookie() string { return s.fields[s.weightEnd:] }

// sectionKeywords start a section of an HAProxy configuration.
var sectionKeywords = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "program": true, "cache": true,
	"ring": true, "http-errors": true, "mailers": true, "crt-store": true, "log-forward": true,
}

// Parse reads the sections and server lines of a configuration.
func Parse(data []byte) *Config {
	return parse(data, renamesMap(data))
}

// parse is Parse for a configuration that reads the renames map at path
// renames ("" for none).
func parse(data []byte, renames string) *Config {
	c := &Config{renames: renames}
	p := serverParser{options: map[string]string{}}
	sp := sectionParser{renames: renames, others: sha256.New(), shape: sha256.New()}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if !indented {
			word := string(trimmed)
			if i := bytes.IndexAny(trimmed, " \t"); i >= 0 {
				word = string(trimmed[:i])
			}
			if sectionKeywords[word] {
				sp.flush(c)
				sp.cur = &section{header: strings.Join(strings.Fields(string(trimmed)), " ")}
				continue
			}
		}
		if sp.cur == nil {
			sp.cur = &section{}
		}
		if bytes.HasPrefix(trimmed, []byte("server ")) || bytes.HasPrefix(trimmed, []byte("server\t")) {
			if s, ok := p.parse(trimmed); ok {
				sp.cur.servers = append(sp.cur.servers, s)
				continue
			}
		}
		sp.line(trimmed)
	}
	sp.flush(c)
	p.finish(c)
	return c
}

// sectionParser reads the lines of one section after another (Parse):
// the lines other than servers go into the section's hashes, and those
// that set its balance, hash type, cookie and dynamic cookie key are noted.
type sectionParser struct {
	renames                      string // see Config.renames
	cur                          *section
	others, shape                hash.Hash
	balance, hashType, cookieKey string
}

// line reads a line (trimmed) of the current section that is no server.
func (sp *sectionParser) line(trimmed []byte) {
	shapeLine, othersLine := trimmed, trimmed
	if word, arg, ok := firstWords(trimmed); ok {
		switch word {
		case "balance":
			sp.balance = arg
		case "hash-type":
			sp.hashType = arg
		case "dynamic-cookie-key":
			sp.cookieKey = arg
			shapeLine = []byte(word)
		case "cookie":
			if isBackend(sp.cur.header) {
				sp.cur.cookie = arg
				if sp.renames != "" {
					shapeLine = unnamedCookie(trimmed)
					othersLine = shapeLine
				}
			}
		}
	}
	sp.others.Write(othersLine)
	sp.others.Write([]byte{'\n'})
	sp.shape.Write(shapeLine)
	sp.shape.Write([]byte{'\n'})
}

// flush adds the current section, if any, to c and starts over.
func (sp *sectionParser) flush(c *Config) {
	if cur := sp.cur; cur != nil {
		copy(cur.others[:], sp.others.Sum(nil))
		copy(cur.shape[:], sp.shape.Sum(nil))
		cur.staticLB = staticBalance(sp.balance, sp.hashType)
		cur.cookieKey = sp.cookieKey
		cur.lastID = uint32(len(cur.servers))
		if cap(cur.servers) > len(cur.servers) {
			cur.servers = slices.Clone(cur.servers) // kept: no spare capacity
		}
		c.sections = append(c.sections, *cur)
	}
	sp.cur = nil
	sp.others.Reset()
	sp.shape.Reset()
	sp.balance, sp.hashType, sp.cookieKey = "", "", ""
}

// firstWords returns the keyword and first argument of a section line
// (trimmed) that sets the balance, hash type, cookie or dynamic cookie key; false
// for any other line (most lines: without splitting them into words).
func firstWords(line []byte) (string, string, bool) {
	i := bytes.IndexAny(line, " \t")
	if i < 0 {
		return "", "", false
	}
	switch string(line[:i]) {
	case "balance", "hash-type", "dynamic-cookie-key", "cookie":
	default:
		return "", "", false
	}
	f := strings.Fields(string(line))
	if len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// staticBalance reports whether a balance algorithm (and hash-type)
// refuses servers added at runtime: HAProxy adds servers only to backends
// with a dynamic algorithm.
func staticBalance(balance, hashType string) bool {
	switch balance {
	case "", "roundrobin", "leastconn", "first", "random":
		return false
	case "static-rr":
		return true
	}
	// source, uri, url_param, hdr, rdp-cookie, hash: map-based unless
	// consistent.
	return hashType != "consistent"
}

// dynamicServerKeywords are the server options a server added through
// the runtime API may have (HAProxy 2.6 refuses, among others, "cookie"
// on dynamic servers). Each maps to the number of arguments it takes.
var dynamicServerKeywords = map[string]int{
	"check": 0, "no-check": 0, "inter": 1, "fastinter": 1, "downinter": 1, "rise": 1, "fall": 1,
	"maxconn": 1, "minconn": 1, "maxqueue": 1, "ssl": 0, "no-ssl": 0, "verify": 1, "verifyhost": 1,
	"ca-file": 1, "crl-file": 1, "alpn": 1, "proto": 1, "sni": 1, "send-proxy": 0, "send-proxy-v2": 0,
	"check-ssl": 0, "check-sni": 1, "check-alpn": 1, "ssl-min-ver": 1, "ssl-max-ver": 1, "ciphers": 1,
	"ciphersuites": 1, "backup": 0, "observe": 1, "error-limit": 1, "on-error": 1, "slowstart": 1,
}

// dynamicOptions reports whether a server's options are all accepted on
// a server added at runtime.
func dynamicOptions(options string) bool {
	f := strings.Fields(options)
	for i := 0; i < len(f); i++ {
		n, ok := dynamicServerKeywords[f[i]]
		if !ok || i+n > len(f)-1 {
			return false
		}
		i += n
	}
	return true
}

// serverParser parses server lines compactly: a configuration with many
// servers is kept parsed for as long as HAProxy runs it (tens of
// thousands of servers at 10,000 routes).
type serverParser struct {
	// options interns the options of the lines parsed: the servers of a
	// backend mostly have the same (the cookie and weight aside).
	options map[string]string
	buf     []byte
	// fields are the fields of every server parsed, one after the other
	// (see server.fields), and lens their lengths; finish makes them one
	// string.
	fields []byte
	lens   []int
}

// parse reads a server line: its name, address, weight and cookie go to
// p.fields (the server's fields are set by finish), its other options
// are an interned string.
func (p *serverParser) parse(line []byte) (server, bool) {
	f := bytes.Fields(line)
	if len(f) < 3 {
		return server{}, false
	}
	var weight, cookie []byte
	disabled := false
	p.buf = p.buf[:0]
	for i := 3; i < len(f); i++ {
		switch {
		case string(f[i]) == "weight" && i+1 < len(f):
			weight = f[i+1]
			i++
		case string(f[i]) == "cookie" && i+1 < len(f):
			cookie = f[i+1]
			i++
		case string(f[i]) == "disabled":
			disabled = true
		default:
			if len(p.buf) > 0 {
				p.buf = append(p.buf, ' ')
			}
			p.buf = append(p.buf, f[i]...)
		}
	}
	options, ok := p.options[string(p.buf)]
	if !ok {
		options = string(p.buf)
		p.options[options] = options
	}
	start := len(p.fields)
	p.fields = append(p.fields, f[1]...)
	nameEnd := len(p.fields) - start
	p.fields = append(p.fields, f[2]...)
	addrEnd := len(p.fields) - start
	p.fields = append(p.fields, weight...)
	weightEnd := len(p.fields) - start
	p.fields = append(p.fields, cookie...)
	p.lens = append(p.lens, len(p.fields)-start)
	return server{nameEnd: uint32(nameEnd), addrEnd: uint32(addrEnd), weightEnd: uint32(weightEnd),
		disabled: disabled, options: options}, true
}

// finish gives the servers of c, in the order they were parsed, their
// fields: substrings of one string.
func (p *serverParser) finish(c *Config) {
	all := string(p.fields)
	pos, n := 0, 0
	for i := range c.sections {
		for j := range c.sections[i].servers {
			l := p.lens[n]
			c.sections[i].servers[j].fields = all[pos : pos+l]
			pos += l
			n++
		}
	}
}

// Command is one runtime API command.
type Command struct {
	// Text is the command as sent.
	Text string
	// Kind is "addr", "weight" or "state" (set server), "add" (add
	// server), "cookie-key" (set dynamic-cookie-key), "del" (del server),
	// "ssl-new", "ssl-set", "ssl-commit" or "ssl-del" (certificates),
	// "map" (add, set or del map), "crt-list-add" or "crt-list-del",
	// "ca-new", "ca-set" or "ca-commit" (destination CA files).
	Kind string
	// Payload is the payload of an "ssl-set" or "crt-list-add" command.
	Payload string
}

// Change is what Diff found.
type Change struct {
	// Commands bring the running process from the old configuration to
	// the new one; empty when nothing differs.
	Commands []Command
	// Removals is how many of the last Commands take something out of
	// service (servers put in maintenance, renames deleted): they may go
	// after the map entries that lead traffic elsewhere (a route moved to
	// another backend is served by the new one before the old one stops).
	Removals int
	// Running is what the process runs once Commands are applied: the new
	// configuration, plus the servers of removed lines, in maintenance.
	// Diff the next configuration against it.
	Running *Config
	// Reload is true when the difference cannot be applied at runtime;
	// Reason says why and Where names the section.
	Reload bool
	Reason string
	Where  string
}

// Diff compares two parsed configurations: old as HAProxy runs it (a
// Change's Running, or the file it loaded), new as rendered.
func Diff(old, new *Config) Change {
	if !sameHeaders(old, new) {
		return diffBackends(old, new)
	}
	var all sectionCommands
	running := &Config{sections: make([]section, len(new.sections)), crt: old.crt, ca: old.ca, renames: old.renames}
	for i := range new.sections {
		if reshaped(&old.sections[i], &new.sections[i]) || len(new.sections[i].renew) > 0 {
			return diffBackends(old, new) // the route moves to another backend
		}
		run, d, reload := diffSection(&old.sections[i], &new.sections[i])
		if restyled(reload) && isBackend(new.sections[i].header) {
			return diffBackends(old, new) // the route moves to another backend
		}
		if reload != nil {
			return *reload
		}
		all.append(d)
		running.sections[i] = run
	}
	all.append(cookieRenames(old, running, func(i int) *section { return &old.sections[i] }))
	return all.change(running)
}

// DiffSections compares some sections only: every section of part (a
// configuration rendered for a few routes, see Sections) with the
// section of old that has the same header. The change's Running holds
// the new sections only: once the commands are applied, old.Replace(it)
// brings old up to date. A section of part that old does not have (or
// has twice) needs a reload. It takes time in the size of part, not of
// old (after old's first use).
func DiffSections(old, part *Config) Change {
	var all sectionCommands
	running := &Config{sections: make([]section, len(part.sections))}
	idx := old.index()
	seen := make(map[string]bool, len(part.sections))
	for i := range part.sections {
		n := &part.sections[i]
		j, ok := idx[n.header]
		if !ok && isBackend(n.header) {
			// A backend renamed (a route's TLS termination changed): Diff
			// on the whole configuration sees the one that goes too.
			return Change{Reload: true, Reason: ReasonBackends, Where: n.header}
		}
		if !ok || j < 0 || seen[n.header] {
			return Change{Reload: true, Reason: ReasonConfig, Where: n.header}
		}
		if reshaped(&old.sections[j], n) || len(n.renew) > 0 || old.sections[j].orphan {
			// The route moves to another backend, or comes back to its
			// orphan: Diff on the whole configuration, or DiffMoved,
			// finds it one.
			return Change{Reload: true, Reason: ReasonBackends, Where: n.header}
		}
		seen[n.header] = true
		run, d, reload := diffSection(&old.sections[j], n)
		if restyled(reload) && isBackend(n.header) {
			// Its servers' options changed: the route moves to another
			// backend, as above.
			return Change{Reload: true, Reason: ReasonBackends, Where: n.header}
		}
		if reload != nil {
			return *reload
		}
		all.append(d)
		running.sections[i] = run
	}
	all.append(cookieRenames(old, running, old.runningAs(running)))
	return all.change(running)
}

// Sections returns the sections of c whose headers base does not have:
// with c rendered for a few routes and base for none, the routes' own
// sections (their backends).
func (c *Config) Sections(base *Config) *Config {
	have := base.index()
	out := &Config{}
	for _, s := range c.sections {
		if _, ok := have[s.header]; !ok {
			out.sections = append(out.sections, s)
		}
	}
	return out
}

// Headers returns the headers of c's sections, in order.
func (c *Config) Headers() []string {
	out := make([]string, len(c.sections))
	for i, s := range c.sections {
		out[i] = s.header
	}
	return out
}

// Replace puts the sections of part in place of the sections of c that
// have the same headers (part is a Running of DiffSections on c).
func (c *Config) Replace(part *Config) {
	idx := c.index()
	for _, s := range part.sections {
		if j, ok := idx[s.header]; ok && j >= 0 {
			c.sections[j] = s
		}
	}
}

// index maps section headers to their position in c (-1: the header is
// there more than once), built once.
func (c *Config) index() map[string]int {
	if c.byHeader != nil {
		return c.byHeader
	}
	c.byHeader = make(map[string]int, len(c.sections))
	for i, s := range c.sections {
		if _, dup := c.byHeader[s.header]; dup {
			c.byHeader[s.header] = -1
			continue
		}
		c.byHeader[s.header] = i
	}
	return c.byHeader
}

// sectionCommands are the commands of one section, by kind.
type sectionCommands struct{ adds, cmds, removes []Command }

// append adds the commands of one more section.
func (c *sectionCommands) append(d sectionCommands) {
	c.adds, c.cmds, c.removes = append(c.adds, d.adds...), append(c.cmds, d.cmds...), append(c.removes, d.removes...)
}

// ordered lists the commands in the order they are applied: new servers
// first, so that capacity is there before any goes, then the changes,
// then the removals.
func (c sectionCommands) ordered() []Command {
	return append(append(c.adds, c.cmds...), c.removes...)
}

// change is the Change of these commands, HAProxy then running running.
func (c sectionCommands) change(running *Config) Change {
	return Change{Commands: c.ordered(), Removals: len(c.removes), Running: running}
}

// diffSection compares one section as HAProxy runs it (o) with the same
// section as rendered (n): what runs once the commands are applied, the
// commands, or the change that says why a reload is needed.
func diffSection(o, n *section) (section, sectionCommands, *Change) {
	reload := func(reason, where string) (section, sectionCommands, *Change) {
		return section{}, sectionCommands{}, &Change{Reload: true, Reason: reason, Where: where}
	}
	if o.header != n.header || o.others != n.others || o.orphan {
		return reload(ReasonConfig, n.header)
	}
	return diffServers(o, n)
}

// diffServers compares the servers of a section as HAProxy runs it (o)
// with those of a section as rendered (n) that HAProxy runs as o (the
// same section, or a new one taking o over: see Diff).
func diffServers(o, n *section) (section, sectionCommands, *Change) {
	sd := newServerDiff(o, n)
	oldByName := make(map[string]*server, len(o.servers))
	for j := range o.servers {
		oldByName[o.servers[j].name()] = &o.servers[j]
	}
	newNames := make(map[string]bool, len(n.servers))
	for j := range n.servers {
		sn := &n.servers[j]
		newNames[sn.name()] = true
		var c *Change
		if so, had := oldByName[sn.name()]; had {
			c = sd.change(so, sn)
		} else {
			c = sd.add(sn, false)
		}
		if c != nil {
			return section{}, sectionCommands{}, c
		}
	}
	sd.setCookieKey()
	sd.d.adds = append(sd.d.adds, sd.enables...)
	for j := range o.servers {
		if newNames[o.servers[j].name()] {
			continue
		}
		if c := sd.retire(o.servers[j]); c != nil {
			return section{}, sectionCommands{}, c
		}
	}
	return sd.run, sd.d, nil
}

// serverDiff collects the commands that take the servers of one section
// as HAProxy runs it (o) to those rendered (n), and what runs then.
type serverDiff struct {
	o, n    *section
	run     section // the section as HAProxy runs it once the commands are applied
	backend string  // the name HAProxy runs it as ("" when it is no backend)
	d       sectionCommands
	enables []Command // health checks and states of added servers, after the cookie key
}

func newServerDiff(o, n *section) *serverDiff {
	run := *n
	run.runsAs, run.orphan, run.renew = o.name(), false, nil
	run.cookieRuns = ""
	if c := o.runningCookie(); c != n.cookie {
		run.cookieRuns = c
	}
	if run.runsAs == backendName(n.header) {
		run.runsAs = "" // its own backend
	}
	run.servers = append([]server(nil), n.servers...)
	run.lastID = max(o.lastID, uint32(len(o.servers)))
	return &serverDiff{o: o, n: n, run: run, backend: run.name()}
}

func (sd *serverDiff) reload(reason string, s *server) *Change {
	return &Change{Reload: true, Reason: reason, Where: sd.n.header + " server " + s.name()}
}

// add adds server sn at runtime; replace deletes the draining server of
// the same name first.
func (sd *serverDiff) add(sn *server, replace bool) *Change {
	if !addable(sd.backend, sd.n, sn) {
		return sd.reload(ReasonServers, sn)
	}
	sd.run.lastID++
	add, en, ok := addCommands(sd.backend, sn, sd.run.lastID)
	if !ok {
		return sd.reload(ReasonServerAddress, sn)
	}
	if replace {
		sd.d.adds = append(sd.d.adds, DeleteCommand(ServerRef{Backend: sd.backend, Name: sn.name()}))
	}
	sd.d.adds = append(sd.d.adds, add)
	sd.enables = append(sd.enables, en...)
	return nil
}

// change takes server so, as HAProxy runs it, to its rendered line sn.
func (sd *serverDiff) change(so, sn *server) *Change {
	was := *so
	was.removed = false
	if was.options != sn.options || was.cookie() != sn.cookie() || sd.backend == "" {
		if was == *sn {
			return nil
		}
		if !so.removed {
			return sd.reload(ReasonServerOptions, sn)
		}
		// A server still draining whose line comes back with other
		// options (an endpoint that was alone, unchecked, back among
		// others): deleted (it is in maintenance; HAProxy refuses while
		// it still has connections, and a reload follows) and added anew.
		if !addable(sd.backend, sd.n, sn) {
			return sd.reload(ReasonServerOptions, sn)
		}
		return sd.add(sn, true)
	}
	c, ok := serverCommands(sd.backend, &was, sn)
	if !ok {
		return sd.reload(ReasonServerAddress, sn)
	}
	if !was.disabled && sn.disabled {
		// A server going out of rotation goes after every server coming
		// in (a moved endpoint: its slot is ready before its old line is
		// in maintenance), so that the backend is never left without a
		// server in between.
		sd.d.removes = append(sd.d.removes, c...)
		return nil
	}
	sd.d.cmds = append(sd.d.cmds, c...)
	return nil
}

// setCookieKey sets the backend's dynamic-cookie-key (again) when servers
// were added or the key changed: that gives every server of the backend
// its dynamic cookie, the added ones included, before they serve; a
// backend taken over by another route gets that route's key.
func (sd *serverDiff) setCookieKey() {
	if sd.n.cookieKey != "" && (len(sd.enables) > 0 || len(sd.d.adds) > 0 || sd.o.cookieKey != sd.n.cookieKey) {
		sd.d.adds = append(sd.d.adds, Command{Kind: "cookie-key", Text: "set dynamic-cookie-key backend " + sd.backend + " " + sd.n.cookieKey})
	}
}

// retire puts server so, no longer rendered, in maintenance: it stays
// until the next reload.
func (sd *serverDiff) retire(so server) *Change {
	if sd.backend == "" {
		return sd.reload(ReasonServers, &so)
	}
	if !so.disabled {
		sd.d.removes = append(sd.d.removes, Command{Kind: "state", Text: "set server " + sd.backend + "/" + so.name() + " state maint"})
	}
	so.disabled, so.removed = true, true
	sd.run.servers = append(sd.run.servers, so)
	return nil
}

// addable reports whether server s of section n (backend, "" when the
// section is none) can be added at runtime: a backend with a dynamic
// balance algorithm, and a line without a cookie or any other option
// dynamic servers refuse.
func addable(backend string, n *section, s *server) bool {
	return backend != "" && !n.staticLB && s.cookie() == "" && dynamicOptions(s.options)
}

// addCommands adds server s to backend at runtime: "add server" (a
// dynamic server starts in maintenance with health checks off), then,
// unless the line is disabled, the commands that enable its health checks
// and the server.
func addCommands(backend string, s *server, id uint32) (Command, []Command, bool) {
	ip, port, ok := splitAddr(s.addr())
	if !ok {
		return Command{}, nil, false
	}
	w := s.weight()
	if w == "" {
		w = "1"
	}
	if _, err := strconv.ParseUint(w, 10, 16); err != nil {
		return Command{}, nil, false
	}
	target := backend + "/" + s.name()
	text := fmt.Sprintf("add server %s %s weight %s id %d", target, netip.AddrPortFrom(ip, port), w, id)
	if s.options != "" {
		text += " " + s.options
	}
	add := Command{Kind: "add", Text: text}
	if s.disabled {
		return add, nil, true
	}
	var en []Command
	if strings.Contains(" "+s.options+" ", " check ") {
		en = append(en, Command{Kind: "state", Text: "enable health " + target})
	}
	return add, append(en, Command{Kind: "state", Text: "enable server " + target}), true
}

func serverCommands(backend string, o, n *server) ([]Command, bool) {
	if *o == *n {
		return nil, true
	}
	target := backend + "/" + n.name()
	var addr, weight []Command
	if o.addr() != n.addr() {
		ip, port, ok := splitAddr(n.addr())
		if !ok {
			return nil, false
		}
		addr = []Command{{Kind: "addr", Text: fmt.Sprintf("set server %s addr %s port %d", target, ip, port)}}
	}
	if o.weight() != n.weight() {
		w := n.weight()
		if w == "" {
			w = "1" // HAProxy's default weight
		}
		if _, err := strconv.ParseUint(w, 10, 16); err != nil {
			return nil, false
		}
		weight = []Command{{Kind: "weight", Text: fmt.Sprintf("set server %s weight %s", target, w)}}
	}
	switch {
	case !o.disabled && n.disabled:
		// Out of rotation first, then the rest.
		out := []Command{{Kind: "state", Text: "set server " + target + " state maint"}}
		return append(append(out, addr...), weight...), true
	case o.disabled && !n.disabled:
		out := append(addr, weight...)
		return append(out, Command{Kind: "state", Text: "set server " + target + " state ready"}), true
	case len(addr) > 0 && !n.disabled:
		// A live server's idle connections to the old address would
		// still be reused after "set server addr": maintenance closes
		// them, so the new address takes all the traffic at once.
		// Connections of requests still in flight are not closed: when
		// such a request ends, HAProxy 2.6 puts its connection in the
		// server's pool and reuses it for the new address. The server
		// layout (router/servers) therefore never moves a line that
		// served until this change.
		out := []Command{{Kind: "state", Text: "set server " + target + " state maint"}}
		out = append(append(append(out, addr...), weight...), Command{Kind: "state", Text: "set server " + target + " state ready"})
		return out, true
	default:
		return append(addr, weight...), true
	}
}

// splitAddr splits "ip:port" or "[ipv6]:port".
func splitAddr(a string) (netip.Addr, uint16, bool) {
	ap, err := netip.ParseAddrPort(a)
	if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return netip.Addr{}, 0, false
	}
	return ap.Addr(), ap.Port(), true
}
