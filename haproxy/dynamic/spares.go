package dynamic

import (
	"bytes"
	"fmt"
	"strings"
)

// SparePrefix starts the names of spare backends (Spares).
const SparePrefix = "be_spare:"

// MaxSpareSection bounds the text of a backend section Spares copies
// (the default template's route sections take well under 1 KiB).
const MaxSpareSection = 4096

// Spares returns backend sections to append to config before HAProxy
// loads it: empty backends that a route added before the next reload can
// run in (see Diff: the next configuration does not have them, so they
// are orphans from the start). A spare copies the lines of a backend
// section whose shape (its lines but for its name, servers and
// dynamic-cookie-key) at least two backends of config share — lines that
// do not depend on the route, so a new route with the same settings
// renders them too (a passthrough route, a route without a sticky cookie
// of its own). perShape spares are made of each such shape, total at
// most, in the order the shapes first appear; none of a shape whose
// sections name no backend or have no server line, nor of one whose lines
// are longer than MaxSpareSection (routes' own header actions, say: the
// spares of one tenant's routes must not make every configuration large).
// Where config reads the renames map (see cookies.go), a spare's sticky
// cookie is SpareCookie, whichever route's name its shape had.
func Spares(config []byte, perShape, total int) []byte {
	if perShape <= 0 || total <= 0 {
		return nil
	}
	type shape struct {
		count int
		lines []string
	}
	shapes := map[[32]byte]*shape{}
	var order [][32]byte
	renames := renamesMap(config)
	for _, sec := range rawSections(config) {
		if !isBackend(sec.header) || strings.HasPrefix(backendName(sec.header), SparePrefix) {
			continue
		}
		if len(sec.text) > MaxSpareSection+len(sec.header) {
			continue // its servers count here too: a bound, not a measure
		}
		p := parse([]byte(sec.text), renames)
		if len(p.sections) != 1 || len(p.sections[0].servers) == 0 {
			continue
		}
		h := p.sections[0].shape
		s, ok := shapes[h]
		if !ok {
			s = &shape{lines: sec.body}
			shapes[h] = s
			order = append(order, h)
		}
		s.count++
	}
	var out bytes.Buffer
	n := 0
	for _, h := range order {
		s := shapes[h]
		if s.count < 2 {
			continue
		}
		for i := 0; i < perShape && n < total; i++ {
			name := fmt.Sprintf("%s%d", SparePrefix, n)
			fmt.Fprintf(&out, "\nbackend %s\n", name)
			for _, l := range s.lines {
				f := strings.Fields(l)
				switch {
				case len(f) > 0 && f[0] == "server":
					continue
				case len(f) >= 2 && f[0] == "dynamic-cookie-key":
					fmt.Fprintf(&out, "  dynamic-cookie-key %s\n", name)
				case len(f) >= 2 && f[0] == "cookie" && renames != "":
					f[1] = SpareCookie
					out.WriteString("  " + strings.Join(f, " ") + "\n")
				default:
					out.WriteString(l + "\n")
				}
			}
			n++
		}
	}
	return out.Bytes()
}

// rawSection is a section of a configuration as written: its header and
// its lines (without blank and comment lines), and its text.
type rawSection struct {
	header string
	body   []string
	text   string
}

// rawSections splits a configuration into sections as Parse does.
func rawSections(config []byte) []rawSection {
	var out []rawSection
	var cur *rawSection
	var text strings.Builder
	flush := func() {
		if cur != nil {
			cur.text = text.String()
			out = append(out, *cur)
		}
		text.Reset()
	}
	for _, line := range strings.Split(string(config), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			word, _, _ := strings.Cut(trimmed, " ")
			word, _, _ = strings.Cut(word, "\t")
			if sectionKeywords[word] {
				flush()
				cur = &rawSection{header: strings.Join(strings.Fields(trimmed), " ")}
				text.WriteString(line + "\n")
				continue
			}
		}
		if cur == nil {
			continue
		}
		cur.body = append(cur.body, line)
		text.WriteString(line + "\n")
	}
	flush()
	return out
}

// spareBudget caps the spare backends one namespace takes between two
// reloads (the next reload brings a fresh set): half of the spares of a
// shape, at least one. One tenant adding routes of a shared shape then
// leaves the other half to the others, whose additions would otherwise
// wait for a reload.
type spareBudget struct {
	total map[[32]byte]int
	used  map[namespaceShape]int
}

type namespaceShape struct {
	namespace string
	shape     [32]byte
}

// newSpareBudget counts the spares of c, HAProxy's running configuration,
// by shape, and those taken by the backends of each namespace.
func newSpareBudget(c *Config) spareBudget {
	b := spareBudget{total: map[[32]byte]int{}, used: map[namespaceShape]int{}}
	for i := range c.sections {
		s := &c.sections[i]
		if !strings.HasPrefix(s.name(), SparePrefix) {
			continue
		}
		b.total[s.shape]++
		if !s.orphan {
			b.used[namespaceShape{backendNamespace(backendName(s.header)), s.shape}]++
		}
	}
	return b
}

// take reports whether the backend named backend may run in the orphan o:
// always when o is not a spare; when it is, while backend's namespace has
// taken fewer than half of o's shape's spares. A spare granted is counted.
func (b spareBudget) take(o *section, backend string) bool {
	if !strings.HasPrefix(o.name(), SparePrefix) {
		return true
	}
	k := namespaceShape{backendNamespace(backend), o.shape}
	if b.used[k] >= max(1, b.total[o.shape]/2) {
		return false
	}
	b.used[k]++
	return true
}

// backendNamespace is the namespace of a route's backend named
// PREFIX:NAMESPACE:NAME (OpenShift's names); another name is its own.
func backendNamespace(name string) string {
	if parts := strings.SplitN(name, ":", 3); len(parts) == 3 {
		return parts[1]
	}
	return name
}
