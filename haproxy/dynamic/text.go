package dynamic

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"sync"
)

// Text is the text of a configuration cut into its sections, so that the
// sections of a few routes can be replaced (by their text rendered for
// those routes alone) and the whole written without rendering or copying
// the rest. A section's text runs from the comments and blank lines just
// before its header to those just before the next header.
type Text struct {
	data []byte
	// spans are the sections by header (start < 0: the header is there
	// twice), cut on the first Replace: most texts are replaced whole
	// by the next pass's before a section of theirs is.
	spans    map[string]span
	cutSpans sync.Once
	repl     map[string][]byte
}

type span struct{ start, end int }

// NewText cuts data (a rendered haproxy.config) into its sections.
func NewText(data []byte) *Text {
	return &Text{data: data, repl: map[string][]byte{}}
}

// cut returns the span of every section of data by header.
func cut(data []byte) map[string]span {
	out := map[string]span{}
	for _, s := range Cut(data) {
		add(out, s.Header, span{s.Start, s.End})
	}
	return out
}

// Span is one section of a configuration's text: its header (words
// joined by one blank) and where its text runs, from the comments and
// blank lines just before its header to those just before the next.
type Span struct {
	Header     string
	Start, End int
}

// Cut cuts data into its sections, in order. Text before the first
// section is in none.
func Cut(data []byte) []Span {
	var out []Span
	cur := ""
	start := -1 // of the current section
	lead := 0   // start of the comments and blank lines before a header
	leadOpen := false
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		line := data[pos:next]
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(trimmed) == 0 || trimmed[0] == '#':
			if !leadOpen {
				lead, leadOpen = pos, true
			}
		case line[0] != ' ' && line[0] != '\t' && sectionKeywords[firstWord(trimmed)]:
			from := pos
			if leadOpen {
				from = lead
			}
			if start >= 0 {
				out = append(out, Span{cur, start, from})
			}
			cur, start = strings.Join(strings.Fields(string(trimmed)), " "), from
			leadOpen = false
		default:
			leadOpen = false
		}
		pos = next
	}
	if start >= 0 {
		out = append(out, Span{cur, start, len(data)})
	}
	return out
}

// Tail returns where the trailing comments and blank lines of data begin
// (len(data) if there are none): the part of the last section's text that
// follows its last line.
func Tail(data []byte) int {
	end := len(data)
	for end > 0 {
		lineEnd := end
		if data[end-1] == '\n' {
			lineEnd = end - 1
		}
		start := bytes.LastIndexByte(data[:lineEnd], '\n') + 1
		if line := bytes.TrimSpace(data[start:lineEnd]); len(line) != 0 && line[0] != '#' {
			return end
		}
		end = start
	}
	return 0
}

func add(m map[string]span, header string, s span) {
	if _, dup := m[header]; dup {
		m[header] = span{-1, -1}
		return
	}
	m[header] = s
}

func firstWord(trimmed []byte) string {
	if i := bytes.IndexAny(trimmed, " \t"); i >= 0 {
		return string(trimmed[:i])
	}
	return string(trimmed)
}

// Replace puts the sections named in headers, as part (a configuration
// rendered for a few routes) has them, in place of the same sections of
// t. It reports false, changing nothing, when t or part does not have
// one of them exactly once.
func (t *Text) Replace(part []byte, headers []string) bool {
	t.cutSpans.Do(func() { t.spans = cut(t.data) })
	spans := cut(part)
	repl := make(map[string][]byte, len(headers))
	for _, h := range headers {
		s, ok := spans[h]
		own, have := t.spans[h]
		if !ok || s.start < 0 || !have || own.start < 0 {
			return false
		}
		repl[h] = part[s.start:s.end]
	}
	for h, b := range repl {
		t.repl[h] = b
	}
	return true
}

// WriteTo writes the text, replaced sections included.
func (t *Text) WriteTo(w io.Writer) (int64, error) {
	type piece struct {
		span
		text []byte
	}
	pieces := make([]piece, 0, len(t.repl))
	for h, b := range t.repl {
		pieces = append(pieces, piece{t.spans[h], b})
	}
	sort.Slice(pieces, func(i, j int) bool { return pieces[i].start < pieces[j].start })
	var n int64
	pos := 0
	for _, p := range pieces {
		for _, b := range [][]byte{t.data[pos:p.start], p.text} {
			m, err := w.Write(b)
			n += int64(m)
			if err != nil {
				return n, err
			}
		}
		pos = p.end
	}
	m, err := w.Write(t.data[pos:])
	return n + int64(m), err
}

// Len returns the length of the text, replaced sections included.
func (t *Text) Len() int {
	n := len(t.data)
	for h, b := range t.repl {
		s := t.spans[h]
		n += len(b) - (s.end - s.start)
	}
	return n
}

// Bytes returns the text, replaced sections included.
func (t *Text) Bytes() []byte {
	var b bytes.Buffer
	b.Grow(len(t.data))
	_, _ = t.WriteTo(&b)
	return b.Bytes()
}
