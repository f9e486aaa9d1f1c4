package routermetrics

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/controller"
)

var _ controller.Observer = (*Metrics)(nil)

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func newMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestReloadAndWriteConfig(t *testing.T) {
	m, reg := newMetrics(t)
	g := gather(t, reg)
	if n := g["template_router_reload_seconds"].GetMetric()[0].GetSummary().GetSampleCount(); n != 0 {
		t.Fatalf("reloads before any: %d", n)
	}
	m.ObserveWriteConfig(30 * time.Millisecond)
	m.ObserveReload(200*time.Millisecond, nil)
	m.ObserveReload(100*time.Millisecond, errors.New("haproxy refused"))
	g = gather(t, reg)
	reload := g["template_router_reload_seconds"].GetMetric()[0].GetSummary()
	if reload.GetSampleCount() != 2 || reload.GetSampleSum() < 0.299 || reload.GetSampleSum() > 0.301 {
		t.Errorf("reload summary count %d sum %v", reload.GetSampleCount(), reload.GetSampleSum())
	}
	write := g["template_router_write_config_seconds"].GetMetric()[0].GetSummary()
	if write.GetSampleCount() != 1 || write.GetSampleSum() < 0.0299 || write.GetSampleSum() > 0.0301 {
		t.Errorf("write summary count %d sum %v", write.GetSampleCount(), write.GetSampleSum())
	}
	if v := g["template_router_reload_failure"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("reload_failure after a failed reload = %v", v)
	}
	if v := g["template_router_reload_failures_total"].GetMetric()[0].GetCounter().GetValue(); v != 1 {
		t.Errorf("reload_failures_total = %v", v)
	}
	m.ObserveReload(time.Millisecond, nil)
	g = gather(t, reg)
	if v := g["template_router_reload_failure"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("reload_failure after a good reload = %v", v)
	}
	if v := g["template_router_reload_failures_total"].GetMetric()[0].GetCounter().GetValue(); v != 1 {
		t.Errorf("reload_failures_total = %v after a good reload", v)
	}
}

func TestRuntimeChanges(t *testing.T) {
	m, reg := newMetrics(t)
	avoided := func() map[string]float64 {
		out := map[string]float64{}
		for _, x := range gather(t, reg)["template_router_reloads_avoided_total"].GetMetric() {
			out[x.GetLabel()[0].GetValue()] = x.GetCounter().GetValue()
		}
		return out
	}
	if got := avoided(); len(got) != 3 || got["endpoints"] != 0 || got["certificate"] != 0 || got["routes"] != 0 {
		t.Fatalf("before any change: %v", got)
	}
	m.ObserveRuntimeChange("endpoints")
	m.ObserveRuntimeChange("endpoints")
	m.ObserveRuntimeChange("certificate")
	if got := avoided(); got["endpoints"] != 2 || got["certificate"] != 1 {
		t.Fatalf("after changes: %v", got)
	}
	// Reload reasons, runtime API errors and restarts count up.
	m.ObserveReloadReason("config")
	m.ObserveReloadReason("config")
	m.ObserveRuntimeError()
	m.ObserveRestart()
	g := gather(t, reg)
	for name, want := range map[string]float64{
		"template_router_reloads_total":            2,
		"template_router_runtime_api_errors_total": 1,
		"template_router_haproxy_restarts_total":   1,
	} {
		if ms := g[name].GetMetric(); len(ms) != 1 || ms[0].GetCounter().GetValue() != want {
			t.Errorf("%s: %v, want one series at %v", name, ms, want)
		}
	}
}

// TestApplyFailing: the gauge is 0 until a pass fails with no route to
// blame, 1 while passes fail, 0 again once one succeeds.
func TestApplyFailing(t *testing.T) {
	m, reg := newMetrics(t)
	value := func() float64 {
		ms := gather(t, reg)["template_router_config_apply_failing"].GetMetric()
		if len(ms) != 1 {
			t.Fatalf("series: %v", ms)
		}
		return ms[0].GetGauge().GetValue()
	}
	for i, step := range []struct {
		failing *bool
		want    float64
	}{{nil, 0}, {ptr(true), 1}, {ptr(true), 1}, {ptr(false), 0}} {
		if step.failing != nil {
			m.ObserveApplyFailing(*step.failing)
		}
		if got := value(); got != step.want {
			t.Errorf("step %d: %v, want %v", i, got, step.want)
		}
	}
}

func ptr(b bool) *bool { return &b }

func TestRoutesByAdmission(t *testing.T) {
	m, reg := newMetrics(t)
	rejected := func() map[string]float64 {
		out := map[string]float64{}
		for _, x := range gather(t, reg)["template_router_routes_rejected"].GetMetric() {
			out[x.GetLabel()[0].GetValue()] = x.GetGauge().GetValue()
		}
		return out
	}
	admitted := func() float64 {
		return gather(t, reg)["template_router_routes_admitted"].GetMetric()[0].GetGauge().GetValue()
	}
	if got := rejected(); len(got) != 8 || got[admission.ReasonHostAlreadyClaimed] != 0 {
		t.Fatalf("known reasons are reported at 0 from the start: %v", got)
	}
	m.ObserveAdmission(map[admission.Key]admission.Result{
		"a/one":   {Admitted: true},
		"a/two":   {Admitted: true},
		"b/three": {Reason: admission.ReasonHostAlreadyClaimed},
		"b/four":  {Reason: admission.ReasonHostAlreadyClaimed},
		"c/five":  {Reason: admission.ReasonExtendedValidationFailed},
		"c/six":   {Reason: "SomethingNew"},
	})
	if got := admitted(); got != 2 {
		t.Errorf("admitted %v, want 2", got)
	}
	got := rejected()
	if got[admission.ReasonHostAlreadyClaimed] != 2 || got[admission.ReasonExtendedValidationFailed] != 1 || got["SomethingNew"] != 1 || got[admission.ReasonInvalidHost] != 0 {
		t.Errorf("rejected %v", got)
	}
	// The next result replaces the previous one; reasons drop to 0.
	m.ObserveAdmission(map[admission.Key]admission.Result{"a/one": {Admitted: true}})
	got = rejected()
	if admitted() != 1 || got[admission.ReasonHostAlreadyClaimed] != 0 || got["SomethingNew"] != 0 {
		t.Errorf("after the second result: admitted %v rejected %v", admitted(), got)
	}
}

func TestBuildInfo(t *testing.T) {
	_, reg := newMetrics(t)
	mf := gather(t, reg)["openshift_router_build_info"]
	if mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("build info: %v", mf)
	}
	labels := map[string]string{}
	for _, l := range mf.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["revision"] == "" {
		t.Errorf("labels %v", labels)
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	// Two routers in one process (tests) each have their own registry.
	m1, reg1 := newMetrics(t)
	_, reg2 := newMetrics(t)
	m1.ObserveReload(time.Second, errors.New("x"))
	if v := gather(t, reg2)["template_router_reload_failure"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("a second registry saw the first's reload failure")
	}
	if v := gather(t, reg1)["template_router_reload_failure"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("first registry: %v", v)
	}
}

// TestCountGauges: the gauges follow the last count reported (present at
// 0 from the start).
func TestCountGauges(t *testing.T) {
	for name, observe := range map[string]func(*Metrics, int){
		"template_router_services_over_endpoint_limit": (*Metrics).ObserveServicesOverEndpointLimit,
		"template_router_unchecked_endpoints":          (*Metrics).ObserveUncheckedEndpoints,
	} {
		m, reg := newMetrics(t)
		for _, want := range []int{-1, 2, 0} {
			if want >= 0 {
				observe(m, want)
			}
			ms := gather(t, reg)[name].GetMetric()
			if len(ms) != 1 || ms[0].GetGauge().GetValue() != float64(max(want, 0)) {
				t.Fatalf("%s after %d: %v", name, want, ms)
			}
		}
	}
}
