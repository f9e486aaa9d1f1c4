package deploy

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openshift-router-go/router/metrics/haproxy"
	"github.com/openshift-router-go/router/metrics/routermetrics"
)

// exportedMetrics returns the names of the series the router exports with
// its default settings, from the collectors themselves: HAProxy's
// (default columns) and the router's own (summaries as NAME, NAME_count
// and NAME_sum).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	c, err := haproxy.New(haproxy.Options{Source: haproxy.SourceFunc(func(context.Context, string) (string, error) { return "", nil })})
	if err != nil {
		t.Fatal(err)
	}
	reg := &recordingRegistry{Registry: prometheus.NewRegistry()}
	if _, err := routermetrics.New(reg); err != nil {
		t.Fatal(err)
	}
	// Every described metric (vectors without series yet included) ...
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, col := range append(reg.collectors, c) {
		ch := make(chan *prometheus.Desc, 1000)
		col.Describe(ch)
		close(ch)
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names[m[1]] = true
		}
	}
	// ... and the series of summaries.
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		names[f.GetName()] = true
		if f.GetType().String() == "SUMMARY" {
			names[f.GetName()+"_count"], names[f.GetName()+"_sum"] = true, true
		}
	}
	if !names["haproxy_frontend_http_responses_total"] || !names["template_router_reload_seconds_count"] || len(names) < 20 {
		t.Fatalf("the collectors' names look wrong: %v", names)
	}
	return names
}

// recordingRegistry keeps the collectors registered on it.
type recordingRegistry struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recordingRegistry) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

// routerMetric matches the names of the router's metrics in a PromQL
// expression.
var routerMetric = regexp.MustCompile(`\b(?:haproxy|template_router|openshift_router)_[a-z0-9_]+\b`)

// TestGrafanaDashboardQueriesExportedMetrics: docs/grafana's dashboard is
// valid JSON, has a panel for each promised topic, and every metric it
// queries is one the router exports by default.
func TestGrafanaDashboardQueriesExportedMetrics(t *testing.T) {
	data, err := os.ReadFile("../../docs/grafana/openshift-router.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("title %q uid %q", dash.Title, dash.UID)
	}
	exported := exportedMetrics(t)
	queried := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := routerMetric.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q query %s: no router metric", p.Title, q.RefID)
			}
			for _, n := range names {
				queried[n] = true
				if !exported[n] {
					t.Errorf("panel %q queries %s, which the router does not export", p.Title, n)
				}
			}
		}
	}
	for _, topic := range []string{
		"haproxy_frontend_http_responses_total",                     // requests, errors
		"haproxy_backend_http_responses_total",                      // per route above the threshold
		"template_router_reload_seconds_count",                      // reloads
		"template_router_reloads_avoided_total",                     // reloads avoided
		"template_router_routes_admitted",                           // route admission
		"template_router_routes_rejected",                           // route admission
		"haproxy_server_http_average_response_latency_milliseconds", // response time
	} {
		if !queried[topic] {
			t.Errorf("the dashboard does not query %s", topic)
		}
	}
	if t.Failed() {
		var all []string
		for n := range exported {
			all = append(all, n)
		}
		sort.Strings(all)
		t.Logf("exported: %s", strings.Join(all, " "))
	}
}
