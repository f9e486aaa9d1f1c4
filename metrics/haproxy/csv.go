package haproxy

import (
	"encoding/csv"
	"errors"
	"fmt"
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
// an error wrapping ErrNotCSV.
func ParseStats(reply string, minFields int) ([]Row, []error, error) {
	if minFields < typeColumn+1 {
		minFields = typeColumn + 1
	}
	var (
		rows      []Row
		bad       []error
		sawHeader bool
	)
	for n, line := range strings.Split(reply, "\n") {
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
			return nil, nil, fmt.Errorf("%w: %q", ErrNotCSV, truncate(line, 120))
		}
		// Each line is read on its own, so a broken line cannot swallow
		// the next ones (HAProxy never writes multi-line fields).
		r := csv.NewReader(strings.NewReader(line))
		r.FieldsPerRecord = -1
		fields, err := r.Read()
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
		rows = append(rows, Row{Proxy: fields[0], Server: fields[1], Type: typ, Fields: fields})
	}
	if !sawHeader {
		return nil, nil, fmt.Errorf("%w: empty reply", ErrNotCSV)
	}
	return rows, bad, nil
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
