package dynamic

import (
	"bytes"
	"strings"
)

// How a configuration uses a file (fileUse).
type use int

const (
	usedNowhere use = iota
	// usedAsMap: only by exact or prefix map lookups.
	usedAsMap
	// usedAsCrtList: only as a bind line's crt-list.
	usedAsCrtList
	// usedAsIPList: only as the patterns of "src" ACLs (acl NAME src -f).
	usedAsIPList
	// usedAsServerCA: only as the "ca-file" of server lines.
	usedAsServerCA
	usedOtherwise
)

// mapLookups are the converters whose lookups do not depend on the order
// of the map's entries: exact matches and prefixes are indexed in trees
// (measured on HAProxy 2.6: map_beg returns the longest prefix whatever
// order the entries were added in); map_str_int is an exact match that
// returns an integer.
var mapLookups = []string{"map(", "map_str(", "map_beg(", "map_str_int("}

// fileUse tells how config uses the file at path p.
func fileUse(config []byte, p string) use {
	u := usedNowhere
	for rest, off := config, 0; ; {
		i := bytes.Index(rest, []byte(p))
		if i < 0 {
			return u
		}
		at := off + i
		end := at + len(p)
		rest, off = config[end:], end
		// The whole path, not the start of a longer one.
		if end < len(config) && !strings.ContainsRune(" \t\n),", rune(config[end])) {
			continue
		}
		before := config[:at]
		var this use
		switch {
		case hasAnySuffix(before, mapLookups) && end < len(config) && (config[end] == ')' || config[end] == ','):
			this = usedAsMap
		case bytes.HasSuffix(before, []byte("crt-list ")):
			this = usedAsCrtList
		case ipListACL(before):
			this = usedAsIPList
		case serverCAOption(before):
			this = usedAsServerCA
		default:
			return usedOtherwise
		}
		if u != usedNowhere && u != this {
			return usedOtherwise
		}
		u = this
	}
}

// ipListACL reports whether the configuration text before a file's path
// ends an "acl NAME src -f" line start.
func ipListACL(before []byte) bool {
	line := before[bytes.LastIndexByte(before, '\n')+1:]
	f := strings.Fields(string(line))
	return len(f) == 4 && f[0] == "acl" && f[2] == "src" && f[3] == "-f" && bytes.HasSuffix(line, []byte(" "))
}

func hasAnySuffix(b []byte, suffixes []string) bool {
	for _, s := range suffixes {
		if bytes.HasSuffix(b, []byte(s)) {
			return true
		}
	}
	return false
}

// mapEntries parses a map file: key → value in file order. It reports
// false for what the runtime API cannot take as it is: a key twice (the
// first would win, by position), a value with blanks, a word with a
// character the CLI gives a meaning to (but for a ';' in a value, which
// cliValue escapes).
func mapEntries(data []byte) (keys []string, values map[string]string, ok bool) {
	values = map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := mapLineFields(line)
		if f == nil {
			continue
		}
		if len(f) != 2 || !cliWord(f[0]) || !cliWord(strings.ReplaceAll(f[1], ";", "")) {
			return nil, nil, false
		}
		if _, dup := values[f[0]]; dup {
			return nil, nil, false
		}
		keys = append(keys, f[0])
		values[f[0]] = f[1]
	}
	return keys, values, true
}

// mapLineFields returns the words of a map file's line, nil for a blank
// line or a comment.
func mapLineFields(line string) []string {
	f := strings.Fields(line)
	if len(f) == 0 || f[0][0] == '#' {
		return nil
	}
	return f
}

// cliValue is a map value as a word of a runtime API command: its ';'
// (a command separator) escaped, as HAProxy's CLI takes it ("\;").
func cliValue(v string) string { return strings.ReplaceAll(v, ";", `\;`) }

// cliWord reports whether w can be sent as one word of a runtime API
// command as it is: no blank, no ';' (a command separator), no quote,
// backslash or '#', no control character.
func cliWord(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(";\\'\"#", c) >= 0 {
			return false
		}
	}
	return w != ""
}

// entryCommands are a map's or crt-list's commands: adds (and sets) go
// after the server commands, dels last.
type entryCommands struct{ adds, dels []Command }

// entry adds the commands of a map entry HAProxy has, key k → value v,
// that is to be k → nv: a key naming a backend that moved (see
// movedBackends) is added under its new name and deleted under the old;
// a value that changed, or names a backend that moved, is set.
func (out *entryCommands) entry(p, k, v, nv string, name, wasName func(string) string, moved map[string]bool) {
	switch {
	case moved[k]:
		out.adds = append(out.adds, Command{Kind: "map", Text: "add map " + p + " " + name(k) + " " + cliValue(name(nv))})
		out.dels = append(out.dels, Command{Kind: "map", Text: "del map " + p + " " + wasName(k)})
	case v != nv || moved[nv]:
		out.adds = append(out.adds, Command{Kind: "map", Text: "set map " + p + " " + name(k) + " " + cliValue(name(nv))})
	}
}

// movedCommands are the commands of a map at p whose entries are as
// HAProxy has them (data) but for the backends that moved.
func movedCommands(p string, data []byte, in Files, moved map[string]bool) (entryCommands, bool) {
	var out entryCommands
	keys, values, ok := mapEntries(data)
	if !ok {
		return out, false
	}
	name := func(v string) string { return in.Running.RuntimeName(v) }
	wasName := func(v string) string { return in.WasRunning.RuntimeName(v) }
	for _, k := range keys {
		if moved[k] || moved[values[k]] {
			out.entry(p, k, values[k], values[k], name, wasName, moved)
		}
	}
	return out, true
}

// movedBackends are the backends of now (a configuration as HAProxy runs
// it) that HAProxy ran under another name in was, where they were not
// orphans: routes that moved to another backend (see Diff). Map entries
// that name them must follow.
func movedBackends(was, now *Config) map[string]bool {
	if was == nil || now == nil || was == now {
		return nil
	}
	var out map[string]bool
	idx := was.index()
	for i := range now.sections {
		s := &now.sections[i]
		if s.orphan || !isBackend(s.header) {
			continue
		}
		j, ok := idx[s.header]
		if !ok || j < 0 || was.sections[j].orphan || was.sections[j].name() == s.name() {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[backendName(s.header)] = true
	}
	return out
}

// mapCommands are the commands that bring the map at p from its old to its
// new entries; moved are the backends that HAProxy runs under another name
// once the change is applied (see movedBackends).
func mapCommands(p string, in Files, moved map[string]bool) (entryCommands, bool) {
	var out entryCommands
	oldData, known := in.Old[p]
	if in.Old == nil || !known {
		return out, false
	}
	newData := in.New[p]
	if len(moved) == 0 {
		// Only the lines between the first and the last that differ can
		// need a command (a change of one route touches one or two lines
		// of a map of every route).
		var ok bool
		if oldData, newData, ok = changedLines(oldData, newData); !ok {
			return out, false
		}
	}
	oldKeys, oldValues, ok := mapEntries(oldData)
	if !ok {
		return out, false
	}
	newKeys, newValues, ok := mapEntries(newData)
	if !ok {
		return out, false
	}
	name := func(v string) string {
		if in.Running != nil {
			return in.Running.RuntimeName(v)
		}
		return v
	}
	// Keys and values that name a backend are sent with the name HAProxy
	// runs it as (forwarded_headers.map is keyed by backend): a key added
	// or set with the name once the change is applied, a key removed with
	// the name HAProxy has its entry under now (a deleted backend that ran
	// under another name). A key removed whose runtime name another one's
	// key now has is that one's entry: set, not added and removed.
	wasName := name
	if in.WasRunning != nil {
		wasName = func(v string) string { return in.WasRunning.RuntimeName(v) }
	}
	added := map[string]int{}
	for _, k := range newKeys {
		v, had := oldValues[k]
		if !had {
			added[name(k)] = len(out.adds)
			out.adds = append(out.adds, Command{Kind: "map", Text: "add map " + p + " " + name(k) + " " + cliValue(name(newValues[k]))})
			continue
		}
		out.entry(p, k, v, newValues[k], name, wasName, moved)
	}
	for _, k := range oldKeys {
		if _, has := newValues[k]; has {
			continue
		}
		if i, ok := added[wasName(k)]; ok {
			out.adds[i].Text = "set" + strings.TrimPrefix(out.adds[i].Text, "add")
			continue
		}
		out.dels = append(out.dels, Command{Kind: "map", Text: "del map " + p + " " + wasName(k)})
	}
	return out, true
}

// maxChangedKeys bounds the keys changedLines looks for, one at a time, in
// the lines that did not change; more and the whole files are compared.
const maxChangedKeys = 64

// changedLines returns the lines of a map's old and new contents from the
// first line that differs to the last, whole lines: the lines before and
// after are the same in both, and their entries need no command. It
// reports false when a key of those lines is also the key of a line kept
// before or after (the entry HAProxy has is the first of a key: a command
// cannot tell which). Past maxChangedKeys lines it returns old and new
// whole.
func changedLines(old, new []byte) ([]byte, []byte, bool) {
	n := min(len(old), len(new))
	i := 0
	for i < n && old[i] == new[i] {
		i++
	}
	if i == len(old) && i == len(new) {
		return nil, nil, true
	}
	head := bytes.LastIndexByte(new[:i], '\n') + 1
	oldRest, newRest := old[head:], new[head:]
	k := 0
	for k < len(oldRest) && k < len(newRest) && oldRest[len(oldRest)-1-k] == newRest[len(newRest)-1-k] {
		k++
	}
	// The kept tail starts a line in both: where the common end starts,
	// if a line starts there in both, else after its first line end.
	tail := len(newRest) - k
	lineStart := func(b []byte, at int) bool { return at == 0 || b[at-1] == '\n' }
	if !lineStart(newRest, tail) || !lineStart(oldRest, len(oldRest)-k) {
		if j := bytes.IndexByte(newRest[tail:], '\n'); j >= 0 {
			tail += j + 1
		} else {
			tail = len(newRest)
		}
		k = len(newRest) - tail
	}
	oldMid, newMid := oldRest[:len(oldRest)-k], newRest[:tail]
	if bytes.Count(oldMid, []byte{'\n'})+bytes.Count(newMid, []byte{'\n'}) > maxChangedKeys {
		return old, new, true
	}
	kept := [2][]byte{new[:head], newRest[tail:]}
	for _, mid := range [2][]byte{oldMid, newMid} {
		for _, line := range strings.Split(string(mid), "\n") {
			f := mapLineFields(line)
			if f == nil {
				continue
			}
			if key := []byte(f[0]); hasKeyLine(kept[0], key) || hasKeyLine(kept[1], key) {
				return nil, nil, false
			}
		}
	}
	return oldMid, newMid, true
}

// hasKeyLine reports whether a line of data has key as its first word.
func hasKeyLine(data, key []byte) bool {
	for off := 0; ; {
		j := bytes.Index(data[off:], key)
		if j < 0 {
			return false
		}
		at := off + j
		off = at + 1
		end := at + len(key)
		if end < len(data) && data[end] != ' ' && data[end] != '\t' && data[end] != '\n' && data[end] != '\r' {
			continue
		}
		b := at
		for b > 0 && (data[b-1] == ' ' || data[b-1] == '\t') {
			b--
		}
		if b == 0 || data[b-1] == '\n' {
			return true
		}
	}
}
