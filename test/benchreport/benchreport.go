// Package benchreport is the JSON form of the results of
// BenchmarkDataPlaneSideBySide (cmd/router-bench): what the benchmark writes
// with ROUTER_BENCH_SIDEBYSIDE_JSON=FILE, what docs/performance/ keeps of
// the current results, and what hack/benchplot draws.
package benchreport

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// SideBySide is one run of the side-by-side benchmark.
type SideBySide struct {
	Benchmark string `json:"benchmark"` // BenchmarkDataPlaneSideBySide
	// Provenance says where the numbers come from: the benchmark run, or,
	// for results reconstructed from a report, which one.
	Provenance   string   `json:"provenance"`
	Date         string   `json:"date"` // YYYY-MM-DD of the run
	Machine      string   `json:"machine,omitempty"`
	HAProxy      string   `json:"haproxy"` // `haproxy -v`'s first line, for every router
	OtherRouter  string   `json:"other_router,omitempty"`
	Routes       int      `json:"routes"`        // routes of the full routers
	UpdateStatus bool     `json:"update_status"` // ROUTER_UPDATE_STATUS
	WrkArgs      string   `json:"wrk_args"`
	Rounds       int      `json:"rounds"`
	Routers      []Router `json:"routers"`
}

// Router is one router of the run: ours or the other one, with one route
// or with all of them. Zero values were not measured.
type Router struct {
	Name   string `json:"name"` // ours-1, ours-10000, other-1, other-10000
	Who    string `json:"who"`  // ours, gw (ours on HTTPRoutes) or other
	Routes int    `json:"routes"`
	// AnsweredSeconds: from its start until it answered r0 (and r<N-1>).
	AnsweredSeconds float64 `json:"answered_seconds,omitempty"`
	// EveryRouteSeconds: from its start until every route it serves had
	// answered from its backend.
	EveryRouteSeconds float64 `json:"every_route_answered_seconds,omitempty"`
	// StatusesSeconds: from its start until every route it serves carried
	// its Admitted status.
	StatusesSeconds float64 `json:"statuses_written_seconds,omitempty"`
	RouterRSSMiB    float64 `json:"router_rss_mib,omitempty"`
	// RouterFileMiB is the part of the router's RSS that is its binary's
	// pages.
	RouterFileMiB float64 `json:"router_binary_pages_mib,omitempty"`
	HAProxyRSSMiB float64 `json:"haproxy_rss_mib,omitempty"` // master and workers
	// RoundsRPS are wrk's requests/s through r0, one per round.
	RoundsRPS []float64 `json:"requests_per_second_rounds,omitempty"`
	MedianRPS float64   `json:"requests_per_second_median,omitempty"`
	// PairedRatio (full routers only): the median over the rounds of this
	// router's requests/s over its 1-route twin's in the same round.
	PairedRatio float64 `json:"paired_ratio_median,omitempty"`
	// RouteChurn (full routers only): the route churn after the rounds.
	RouteChurn *RouteChurn `json:"route_churn,omitempty"`
}

// RouteChurn is how one router followed routes added and deleted through
// the API server, one change a second: seconds from the API call to the
// answer (200 from its backend, 503 once deleted).
type RouteChurn struct {
	Changes  int     `json:"changes"`
	AddedP50 float64 `json:"added_p50_seconds"`
	AddedP99 float64 `json:"added_p99_seconds"`
	AddedMax float64 `json:"added_max_seconds"`
	GoneP50  float64 `json:"deleted_p50_seconds"`
	GoneP99  float64 `json:"deleted_p99_seconds"`
	GoneMax  float64 `json:"deleted_max_seconds"`
	// NotSeen are the changes not answered as they should within the
	// benchmark's bound.
	NotSeen int `json:"not_seen"`
	// Reloads are the HAProxy processes that appeared meanwhile.
	Reloads int `json:"reloads"`
	// Requests and Failed: the steady load through a route that stayed.
	Requests int `json:"steady_requests"`
	Failed   int `json:"steady_failed"`
}

// Find returns the router of who ("ours", "gw" or "other") with routes routes.
func (s *SideBySide) Find(who string, routes int) *Router {
	for i := range s.Routers {
		if s.Routers[i].Who == who && s.Routers[i].Routes == routes {
			return &s.Routers[i]
		}
	}
	return nil
}

// Read reads a SideBySide from a JSON file and checks that it names its
// benchmark and provenance and has routers.
func Read(path string) (*SideBySide, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s SideBySide
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case s.Benchmark == "":
		return nil, fmt.Errorf("%s: no benchmark", path)
	case s.Provenance == "":
		return nil, fmt.Errorf("%s: no provenance", path)
	case len(s.Routers) == 0:
		return nil, fmt.Errorf("%s: no routers", path)
	}
	return &s, nil
}

// Write writes s to path as indented JSON.
func Write(path string, s *SideBySide) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
