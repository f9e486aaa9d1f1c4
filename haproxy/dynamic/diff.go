// Package dynamic works out how a running HAProxy can be brought from one
// configuration to the next without a reload, and applies it through the
// runtime API.
//
// It compares the text of two rendered haproxy.config files. When they
// differ only in the address, weight or maintenance state ("disabled") of
// existing server lines, the difference is a list of runtime API commands
// ("set server b/s addr|weight|state") that leave the running process exactly
// as a reload on the new file would. Anything else — another line, a server
// line added, removed, renamed, moved or with other options — needs a reload,
// and Diff says why. Working on the rendered text makes it independent of the
// template: a custom template that renders endpoints its own way simply gets
// reloads.
package dynamic

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/netip"
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
	// ReasonServerAddress: a server's new address is not an IP and port.
	ReasonServerAddress = "server-address"
)

// Config is a parsed haproxy.config, as far as Diff needs it.
type Config struct {
	sections []section
}

type section struct {
	header string
	// others hashes the section's lines other than server lines.
	others  [sha256.Size]byte
	servers []server
}

type server struct {
	name     string
	addr     string
	weight   string // "" when not set
	disabled bool
	// options are the other words of the line, as written.
	options string
}

// sectionKeywords start a section of an HAProxy configuration.
var sectionKeywords = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "program": true, "cache": true,
	"ring": true, "http-errors": true, "mailers": true, "crt-store": true, "log-forward": true,
}

// Parse reads the sections and server lines of a configuration.
func Parse(data []byte) *Config {
	c := &Config{}
	var cur *section
	h := sha256.New()
	flush := func() {
		if cur != nil {
			copy(cur.others[:], h.Sum(nil))
			c.sections = append(c.sections, *cur)
		}
		h.Reset()
	}
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
				flush()
				cur = &section{header: strings.Join(strings.Fields(string(trimmed)), " ")}
				continue
			}
		}
		if cur == nil {
			cur = &section{}
		}
		if bytes.HasPrefix(trimmed, []byte("server ")) || bytes.HasPrefix(trimmed, []byte("server\t")) {
			if s, ok := parseServer(string(trimmed)); ok {
				cur.servers = append(cur.servers, s)
				continue
			}
		}
		h.Write(trimmed)
		h.Write([]byte{'\n'})
	}
	flush()
	return c
}

func parseServer(line string) (server, bool) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return server{}, false
	}
	s := server{name: f[1], addr: f[2]}
	var opts []string
	for i := 3; i < len(f); i++ {
		switch {
		case f[i] == "weight" && i+1 < len(f):
			s.weight = f[i+1]
			i++
		case f[i] == "disabled":
			s.disabled = true
		default:
			opts = append(opts, f[i])
		}
	}
	s.options = strings.Join(opts, " ")
	return s, true
}

// Command is one runtime API command.
type Command struct {
	// Text is the command as sent.
	Text string
	// Kind is "addr", "weight" or "state" (set server), "ssl-set" or
	// "ssl-commit" (certificates).
	Kind string
	// Payload is the multi-line payload of an "ssl-set" command.
	Payload string
}

// Change is what Diff found.
type Change struct {
	// Commands bring the running process from the old configuration to
	// the new one; empty when nothing differs.
	Commands []Command
	// Reload is true when the difference cannot be applied at runtime;
	// Reason says why and Where names the section.
	Reload bool
	Reason string
	Where  string
}

// Diff compares two parsed configurations.
func Diff(old, new *Config) Change {
	if len(old.sections) != len(new.sections) {
		return Change{Reload: true, Reason: ReasonConfig, Where: "sections added or removed"}
	}
	var cmds []Command
	for i := range new.sections {
		o, n := &old.sections[i], &new.sections[i]
		if o.header != n.header || o.others != n.others {
			return Change{Reload: true, Reason: ReasonConfig, Where: n.header}
		}
		if len(o.servers) != len(n.servers) {
			return Change{Reload: true, Reason: ReasonServers, Where: n.header}
		}
		backend := ""
		if f := strings.Fields(n.header); len(f) == 2 && (f[0] == "backend" || f[0] == "listen") {
			backend = f[1]
		}
		for j := range n.servers {
			so, sn := &o.servers[j], &n.servers[j]
			if so.name != sn.name {
				return Change{Reload: true, Reason: ReasonServers, Where: n.header}
			}
			if so.options != sn.options || backend == "" {
				if *so != *sn {
					return Change{Reload: true, Reason: ReasonServerOptions, Where: n.header + " server " + sn.name}
				}
				continue
			}
			c, ok := serverCommands(backend, so, sn)
			if !ok {
				return Change{Reload: true, Reason: ReasonServerAddress, Where: n.header + " server " + sn.name}
			}
			cmds = append(cmds, c...)
		}
	}
	return Change{Commands: cmds}
}

func serverCommands(backend string, o, n *server) ([]Command, bool) {
	if *o == *n {
		return nil, true
	}
	target := backend + "/" + n.name
	var addr, weight []Command
	if o.addr != n.addr {
		ip, port, ok := splitAddr(n.addr)
		if !ok {
			return nil, false
		}
		addr = []Command{{Kind: "addr", Text: fmt.Sprintf("set server %s addr %s port %d", target, ip, port)}}
	}
	if o.weight != n.weight {
		w := n.weight
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
