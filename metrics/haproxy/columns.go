package haproxy

import (
	"fmt"
	"sort"
	"strings"
)

// Usage says for which rows of HAProxy's CSV statistics a column is
// exported. The letters are those of OpenShift's metrics table:
//
//	F  frontends
//	b  backends while server metrics are not shown (more servers than the threshold)
//	B  backends while server metrics are shown
//	S  servers (only while their number is within the threshold)
type Usage string

func (u Usage) has(c byte) bool { return strings.IndexByte(string(u), c) >= 0 }

// Column describes one exported column of HAProxy's "show stat" CSV.
type Column struct {
	// Index is the column's position in the CSV (0 is pxname). HAProxy
	// keeps these positions stable across versions.
	Index int
	// Field is HAProxy's name of the column (header of "show stat").
	Field string
	// Name is the metric name after haproxy_frontend_, haproxy_backend_
	// or haproxy_server_.
	Name string
	Help string
	// Code is the value of the "code" label (http_responses_total only).
	Code  string
	Usage Usage
	// Counter is true for columns that only grow (until HAProxy reloads).
	Counter bool
}

// columns lists every column the collector can export: the columns
// OpenShift's router knows (index, F/b/B/S usage as in OpenShift's metrics
// table, metric name). Frontends count connections from column 79
// (conn_tot), not 7, as OpenShift's router does.
var columns = []Column{
	{Index: 2, Field: "qcur", Name: "current_queue", Help: "Current number of queued requests not assigned to any server.", Usage: "bBS"},
	{Index: 4, Field: "scur", Name: "current_sessions", Help: "Current number of active sessions.", Usage: "FbS"},
	{Index: 5, Field: "smax", Name: "max_sessions", Help: "Maximum observed number of active sessions.", Usage: "FbS"},
	{Index: 7, Field: "stot", Name: "connections_total", Help: "Total number of connections.", Usage: "bBS", Counter: true},
	{Index: 8, Field: "bin", Name: "bytes_in_total", Help: "Current total of incoming bytes.", Usage: "FbS", Counter: true},
	{Index: 9, Field: "bout", Name: "bytes_out_total", Help: "Current total of outgoing bytes.", Usage: "FbS", Counter: true},
	{Index: 13, Field: "econ", Name: "connection_errors_total", Help: "Total of connection errors.", Usage: "bS", Counter: true},
	{Index: 14, Field: "eresp", Name: "response_errors_total", Help: "Total of response errors.", Usage: "bS", Counter: true},
	{Index: 17, Field: "status", Name: "up", Help: "Current health status of the backend or server (1 = UP, 0 = DOWN).", Usage: "bBS"},
	{Index: 21, Field: "chkfail", Name: "check_failures_total", Help: "Total number of failed health checks.", Usage: "S", Counter: true},
	{Index: 24, Field: "downtime", Name: "downtime_seconds_total", Help: "Total downtime in seconds.", Usage: "S", Counter: true},
	{Index: 33, Field: "rate", Name: "current_session_rate", Help: "Current number of sessions per second over last elapsed second.", Usage: "FbS"},
	{Index: 35, Field: "rate_max", Name: "max_session_rate", Help: "Maximum observed number of sessions per second.", Usage: "FbS"},
	{Index: 40, Field: "hrsp_2xx", Name: "http_responses_total", Code: "2xx", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 43, Field: "hrsp_5xx", Name: "http_responses_total", Code: "5xx", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 60, Field: "rtime", Name: "http_average_response_latency_milliseconds", Help: "Average response latency of the last 1024 requests in milliseconds.", Usage: "bS"},

	{Index: 3, Field: "qmax", Name: "max_queue", Help: "Maximum observed number of queued requests not assigned to any server.", Usage: "bBS"},
	{Index: 6, Field: "slim", Name: "limit_sessions", Help: "Configured session limit.", Usage: "FbS"},
	{Index: 10, Field: "dreq", Name: "requests_denied_total", Help: "Total of requests denied for security.", Usage: "F", Counter: true},
	{Index: 12, Field: "ereq", Name: "request_errors_total", Help: "Total of request errors.", Usage: "F", Counter: true},
	{Index: 15, Field: "wretr", Name: "retry_warnings_total", Help: "Total of retry warnings.", Usage: "bS", Counter: true},
	{Index: 16, Field: "wredis", Name: "redispatch_warnings_total", Help: "Total of redispatch warnings.", Usage: "bS", Counter: true},
	{Index: 18, Field: "weight", Name: "weight", Help: "Weight of the server, or total weight of the backend's servers.", Usage: "bS"},
	{Index: 34, Field: "rate_lim", Name: "limit_session_rate", Help: "Configured limit on new sessions per second.", Usage: "F"},
	{Index: 38, Field: "check_duration", Name: "check_duration_milliseconds", Help: "Duration of the last health check in milliseconds.", Usage: "S"},
	{Index: 39, Field: "hrsp_1xx", Name: "http_responses_total", Code: "1xx", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 41, Field: "hrsp_3xx", Name: "http_responses_total", Code: "3xx", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 42, Field: "hrsp_4xx", Name: "http_responses_total", Code: "4xx", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 44, Field: "hrsp_other", Name: "http_responses_total", Code: "other", Help: "Total of HTTP responses.", Usage: "FbS", Counter: true},
	{Index: 48, Field: "req_tot", Name: "http_requests_total", Help: "Total HTTP requests.", Usage: "F", Counter: true},
	{Index: 58, Field: "qtime", Name: "http_average_queue_latency_milliseconds", Help: "Average time spent in the queue of the last 1024 requests in milliseconds.", Usage: "bS"},
	{Index: 59, Field: "ctime", Name: "http_average_connect_latency_milliseconds", Help: "Average connect time of the last 1024 requests in milliseconds.", Usage: "bS"},
	{Index: 79, Field: "conn_tot", Name: "connections_total", Help: "Total number of connections.", Usage: "F", Counter: true},
	{Index: 85, Field: "reuse", Name: "connections_reused_total", Help: "Total number of connections reused.", Usage: "bBS", Counter: true},
}

// defaultColumns are the columns OpenShift's router exports by default.
var defaultColumns = []int{2, 4, 5, 7, 8, 9, 13, 14, 17, 21, 24, 33, 35, 39, 40, 41, 42, 43, 44, 58, 59, 60, 79, 85}

// DefaultColumns returns the columns exported when
// ROUTER_METRICS_HAPROXY_EXPORTED is not set: OpenShift's router's default
// list (every HTTP response class, the latencies, the frontends' connection
// count from column 79 and the connections reused from column 85).
func DefaultColumns() []int {
	return append([]int(nil), defaultColumns...)
}

// KnownColumns returns the indices that can be exported, sorted.
func KnownColumns() []int {
	out := make([]int, 0, len(columns))
	for _, c := range columns {
		out = append(out, c.Index)
	}
	sort.Ints(out)
	return out
}

// ColumnByIndex returns the column at a CSV index.
func ColumnByIndex(i int) (Column, bool) {
	for _, c := range columns {
		if c.Index == i {
			return c, true
		}
	}
	return Column{}, false
}

// ValidateColumns checks a list of column indices: each must be known and
// appear once.
func ValidateColumns(idx []int) error {
	if len(idx) == 0 {
		return fmt.Errorf("no columns")
	}
	seen := map[int]bool{}
	for _, i := range idx {
		if _, ok := ColumnByIndex(i); !ok {
			return fmt.Errorf("column %d is not an exportable HAProxy statistic (known: %s)", i, joinInts(KnownColumns()))
		}
		if seen[i] {
			return fmt.Errorf("column %d is listed twice", i)
		}
		seen[i] = true
	}
	return nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
