package dynamic

import "strings"

// ServerRef names a server of a backend.
type ServerRef struct{ Backend, Name string }

func (r ServerRef) String() string { return r.Backend + "/" + r.Name }

// backendName is the proxy a section header names when servers can be
// changed in it at runtime (a backend or listen section), else "".
func backendName(header string) string {
	if f := strings.Fields(header); len(f) == 2 && (f[0] == "backend" || f[0] == "listen") {
		return f[1]
	}
	return ""
}

// Removed lists the servers HAProxy still runs, in maintenance, whose
// lines c no longer has (see Diff): each is deleted (DeleteCommand) once
// its connections are done, after which Forget drops it from c. A server
// with a ca-file is left out: it stays in maintenance until the next
// reload (see deletable).
func (c *Config) Removed() []ServerRef {
	var out []ServerRef
	for i := range c.sections {
		s := &c.sections[i]
		for j := range s.servers {
			if s.servers[j].removed && deletable(s.servers[j].options) {
				out = append(out, ServerRef{Backend: s.name(), Name: s.servers[j].name()})
			}
		}
	}
	return out
}

// IsRemoved reports whether r is a removed server of c: its line is gone
// and it was not added back since.
func (c *Config) IsRemoved(r ServerRef) bool {
	_, _, ok := c.removed(r)
	return ok
}

// Forget drops r, a removed server, from c once HAProxy deleted it; it
// reports false when r is not (or no longer) a removed server of c. The
// section's servers are copied, not changed in place.
func (c *Config) Forget(r ServerRef) bool {
	i, j, ok := c.removed(r)
	if !ok {
		return false
	}
	s := &c.sections[i]
	servers := make([]server, 0, len(s.servers)-1)
	servers = append(append(servers, s.servers[:j]...), s.servers[j+1:]...)
	s.servers = servers
	return true
}

func (c *Config) removed(r ServerRef) (section, server int, ok bool) {
	i, found := c.runtimeIndex()[r.Backend]
	if !found || i < 0 {
		return 0, 0, false
	}
	for j := range c.sections[i].servers {
		if sv := &c.sections[i].servers[j]; sv.name() == r.Name {
			return i, j, sv.removed
		}
	}
	return 0, 0, false
}

// runtimeIndex maps the names HAProxy runs c's backend and listen sections
// as to their positions (-1: the name is there more than once), built
// once.
func (c *Config) runtimeIndex() map[string]int {
	if c.byName != nil {
		return c.byName
	}
	c.byName = make(map[string]int, len(c.sections))
	for i := range c.sections {
		name := c.sections[i].name()
		if name == "" {
			continue
		}
		if _, dup := c.byName[name]; dup {
			c.byName[name] = -1
			continue
		}
		c.byName[name] = i
	}
	return c.byName
}

// DeleteCommand deletes a removed server from the running HAProxy, which
// refuses it while the server still has connections (tried again later).
func DeleteCommand(r ServerRef) Command {
	return Command{Kind: "del", Text: "del server " + r.String()}
}

// deletable reports whether a server with these options may be deleted
// at runtime. Not one that verifies its TLS peer with a ca-file (a
// re-encrypt route's destination CA, or DEFAULT_DESTINATION_CA_PATH):
// measured on HAProxy 2.6.12, "del server" of such a server after it had
// served requests corrupted the heap ("malloc(): unaligned tcache chunk
// detected"; the worker aborted) — the CA store is shared with the other
// servers using that file. In maintenance it takes no traffic; the next
// reload drops it.
func deletable(options string) bool {
	for _, w := range strings.Fields(options) {
		if w == "ca-file" {
			return false
		}
	}
	return true
}
