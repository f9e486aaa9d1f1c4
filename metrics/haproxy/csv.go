package haproxy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Row types of HAProxy's CSV statistics (column 32, "type").
const (
	typeFrontend = 0
	typeBackend  = 1
	typeServer   = 2
	typeListener = 3

	typeColumn   = 32
	statusColumn = 17
)

// Row is one line of "show stat": a frontend, backend, server or listener.
type Row struct {
	Proxy  string
	Server string
	Type   int
	Fields []string
}

// ErrNotCSV is returned (wrapped) when HAProxy's reply is not CSV
// statistics at all, e.g. an error message of the runtime API.
var ErrNotCSV = errors.New("reply is not HAProxy CSV statistics")

// ParseStats parses the reply to "show stat". minFields is the number of
// columns a row must have (one more than the highest index used). Rows
// that cannot be used (broken CSV, too few columns, an unknown type) are
// skipped and returned as errors; a reply without the "# pxname" header is
// an error wrapping ErrNotCSV. Each returned row has its own Fields; the
// collector reads rows with eachRow, which copies nothing.
func ParseStats(reply string, minFields int) ([]Row, []error, error) {
	var rows []Row
	bad, err := eachRow(reply, minFields, func(r Row) {
		r.Fields = slices.Clone(r.Fields)
		rows = append(rows, r)
	})
	if err != nil {
		return nil, nil, err
	}
	return rows, bad, nil
}

// eachRow calls fn with every usable row of a "show stat" reply, in order,
// and returns the rows it skipped as errors (see ParseStats). A row's
// strings are substrings of reply (a quoted field is unquoted into a new
// string) and its Fields slice is reused for the next row: fn copies what
// it keeps. Nothing is allocated per row or per field otherwise, so that a
// reply of 70,000 rows (10,000 routes with their spare server slots) costs
// little more than the reply itself.
func eachRow(reply string, minFields int, fn func(Row)) ([]error, error) {
	if minFields < typeColumn+1 {
		minFields = typeColumn + 1
	}
	var (
		bad       []error
		sawHeader bool
		fields    []string
	)
	for n, rest := 0, reply; rest != ""; n++ {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(line, "#")), "pxname,svname,") {
				sawHeader = true
			}
			continue
		}
		if !sawHeader {
			return nil, fmt.Errorf("%w: %q", ErrNotCSV, truncate(line, 120))
		}
		// Each line is read on its own, so a broken line cannot swallow
		// the next ones (HAProxy never writes multi-line fields).
		var err error
		fields, err = splitCSVLine(line, fields[:0])
		if err != nil {
			bad = append(bad, fmt.Errorf("line %d: %w", n+1, err))
			continue
		}
		if len(fields) < minFields {
			bad = append(bad, fmt.Errorf("line %d: %d columns, want at least %d", n+1, len(fields), minFields))
			continue
		}
		typ, err := strconv.Atoi(fields[typeColumn])
		if err != nil || typ < typeFrontend || typ > typeListener {
			bad = append(bad, fmt.Errorf("line %d: unknown row type %q", n+1, fields[typeColumn]))
			continue
		}
		if fields[0] == "" || fields[1] == "" {
			bad = append(bad, fmt.Errorf("line %d: empty proxy or server name", n+1))
			continue
		}
		fn(Row{Proxy: fields[0], Server: fields[1], Type: typ, Fields: fields})
	}
	if !sawHeader {
		return nil, fmt.Errorf("%w: empty reply", ErrNotCSV)
	}
	return bad, nil
}

// Errors of splitCSVLine, as encoding/csv words them.
var (
	errBareQuote = errors.New(`bare " in non-quoted-field`)
	errQuote     = errors.New(`extraneous or missing " in quoted-field`)
)

// splitCSVLine splits one line of CSV (RFC 4180, as HAProxy writes it: a
// field is quoted when it holds a comma or a quote, a quote inside is
// doubled) and appends its fields to dst. Unquoted fields are substrings
// of line. A quote inside an unquoted field, or a quoted field not closed
// before the end of the line or followed by anything but a comma, is an
// error, as with encoding/csv.
func splitCSVLine(line string, dst []string) ([]string, error) {
	for {
		if line == "" || line[0] != '"' {
			i := strings.IndexByte(line, ',')
			field := line
			if i >= 0 {
				field = line[:i]
			}
			if strings.IndexByte(field, '"') >= 0 {
				return dst, errBareQuote
			}
			dst = append(dst, field)
			if i < 0 {
				return dst, nil
			}
			line = line[i+1:]
			continue
		}
		// Quoted: up to the quote that is not doubled.
		var b strings.Builder
		line = line[1:]
		for {
			i := strings.IndexByte(line, '"')
			if i < 0 {
				return dst, errQuote
			}
			b.WriteString(line[:i])
			line = line[i+1:]
			if strings.HasPrefix(line, `"`) {
				b.WriteByte('"')
				line = line[1:]
				continue
			}
			break
		}
		dst = append(dst, b.String())
		switch {
		case line == "":
			return dst, nil
		case line[0] == ',':
			line = line[1:]
		default:
			return dst, errQuote
		}
	}
}

// parseValue converts one CSV value. The status column becomes 1 (UP,
// including "UP 1/3" while failing checks, "no check" and OPEN) or 0
// (DOWN, "DOWN 1/2" while recovering, NOLB, MAINT, DRAIN, ...).
func parseValue(index int, v string) (float64, error) {
	if index == statusColumn {
		if strings.HasPrefix(v, "UP") || v == "no check" || v == "OPEN" {
			return 1, nil
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %d: %q is not an integer", index, truncate(v, 40))
	}
	return float64(n), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
