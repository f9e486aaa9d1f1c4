// Package routermetrics holds the router's own Prometheus metrics: how long
// writing the configuration and reloading HAProxy take, whether the last
// reload failed, changes applied without a reload, routes admitted and
// rejected (by reason), and build information. Metrics implements the
// controller's Observer.
package routermetrics

import (
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openshift-router-go/router/router/admission"
)

// knownReasons are reported (as 0) even before a route is rejected for
// them, so alerts on "> 0" work from the start.
var knownReasons = []string{
	admission.ReasonRouteNotAdmitted,
	admission.ReasonNoHostValue,
	admission.ReasonInvalidHost,
	admission.ReasonExtendedValidationFailed,
	admission.ReasonHostAlreadyClaimed,
	admission.ReasonCertificateNotLoadable,
	admission.ReasonConfigCheckFailed,
	admission.ReasonConfigBudgetExceeded,
}

// Metrics records the controller's measurements. Its methods are safe for
// concurrent use and do not block.
type Metrics struct {
	writeConfig    prometheus.Summary
	reload         prometheus.Summary
	reloadFailure  prometheus.Gauge
	reloadFailures prometheus.Counter
	avoided        *prometheus.CounterVec
	reloadReasons  *prometheus.CounterVec
	runtimeErrors  prometheus.Counter
	restarts       prometheus.Counter
	applyFailing   prometheus.Gauge
	overLimit      prometheus.Gauge
	unchecked      prometheus.Gauge

	admittedDesc *prometheus.Desc
	rejectedDesc *prometheus.Desc

	mu       sync.Mutex
	admitted int
	rejected map[string]int
}

var objectives = map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}

// New creates the metrics and registers them, with the build information,
// on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		writeConfig: prometheus.NewSummary(prometheus.SummaryOpts{
			Name:       "template_router_write_config_seconds",
			Help:       "Measures the time spent writing out the router configuration to disk in seconds.",
			Objectives: objectives,
		}),
		reload: prometheus.NewSummary(prometheus.SummaryOpts{
			Name:       "template_router_reload_seconds",
			Help:       "Measures the time spent reloading the router in seconds.",
			Objectives: objectives,
		}),
		reloadFailure: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "template_router_reload_failure",
			Help: "1 if the most recent start or reload of HAProxy failed, 0 if it succeeded.",
		}),
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "template_router_reload_failures_total",
			Help: "Starts and reloads of HAProxy that failed.",
		}),
		avoided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "template_router_reloads_avoided_total",
			Help: "Changes applied to the running HAProxy through its runtime API instead of a reload, by kind of change.",
		}, []string{"kind"}),
		reloadReasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "template_router_reloads_total",
			Help: "Starts and reloads of HAProxy, by the reason the change could not be applied without one.",
		}, []string{"reason"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "template_router_haproxy_restarts_total",
			Help: "Times HAProxy exited unexpectedly and was restarted by the router.",
		}),
		applyFailing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "template_router_config_apply_failing",
			Help: "1 while the configuration cannot be applied and no route is to blame (e.g. a read-only or full working directory, a failing reload): the last good configuration keeps serving and the router retries with backoff; else 0.",
		}),
		overLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "template_router_services_over_endpoint_limit",
			Help: "Services of admitted routes with more ready endpoints than the router renders (1,000 per service); only a stable subset of their endpoints receives traffic.",
		}),
		unchecked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "template_router_unchecked_endpoints",
			Help: "Endpoints served on spare server slots without a health check: they came without a reload into slots the open-files budget could not afford checks for, and are checked from the next reload.",
		}),
		runtimeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "template_router_runtime_api_errors_total",
			Help: "Runtime API commands HAProxy refused or that could not be sent; each falls back to a reload.",
		}),
		admittedDesc: prometheus.NewDesc("template_router_routes_admitted",
			"Routes the router currently serves.", nil, nil),
		rejectedDesc: prometheus.NewDesc("template_router_routes_rejected",
			"Routes the router currently rejects, by reason.", []string{"reason"}, nil),
		rejected: map[string]int{},
	}
	// Present from the start (at 0), so queries and alerts see the series.
	m.avoided.WithLabelValues("endpoints")
	m.avoided.WithLabelValues("certificate")
	m.avoided.WithLabelValues("routes")
	for _, c := range []prometheus.Collector{m.writeConfig, m.reload, m.reloadFailure, m.reloadFailures, m.avoided,
		m.reloadReasons, m.runtimeErrors, m.restarts, m.applyFailing, m.overLimit, m.unchecked, routesCollector{m}, buildInfo()} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveServicesOverEndpointLimit records how many services have more
// ready endpoints than are rendered.
func (m *Metrics) ObserveServicesOverEndpointLimit(n int) { m.overLimit.Set(float64(n)) }

// ObserveUncheckedEndpoints records how many endpoints are served on spare
// slots without a health check.
func (m *Metrics) ObserveUncheckedEndpoints(n int) { m.unchecked.Set(float64(n)) }

// ObserveWriteConfig records the time to admit, build, render and write one
// configuration.
func (m *Metrics) ObserveWriteConfig(d time.Duration) { m.writeConfig.Observe(d.Seconds()) }

// ObserveReload records a start or reload of HAProxy and its outcome.
func (m *Metrics) ObserveReload(d time.Duration, err error) {
	m.reload.Observe(d.Seconds())
	if err != nil {
		m.reloadFailure.Set(1)
		m.reloadFailures.Inc()
		return
	}
	m.reloadFailure.Set(0)
}

// ObserveRuntimeChange records a change applied through HAProxy's runtime
// API instead of a reload; kind names the change (e.g. "endpoints").
func (m *Metrics) ObserveRuntimeChange(kind string) { m.avoided.WithLabelValues(kind).Inc() }

// ObserveReloadReason records why a start or reload was needed (e.g.
// "initial", "config", "servers").
func (m *Metrics) ObserveReloadReason(reason string) { m.reloadReasons.WithLabelValues(reason).Inc() }

// ObserveRuntimeError records a runtime API change that failed (and fell
// back to a reload).
func (m *Metrics) ObserveRuntimeError() { m.runtimeErrors.Inc() }

// ObserveRestart records a restart of HAProxy after it exited unexpectedly.
func (m *Metrics) ObserveRestart() { m.restarts.Inc() }

// ObserveApplyFailing records whether passes fail with no route to blame.
func (m *Metrics) ObserveApplyFailing(failing bool) {
	if failing {
		m.applyFailing.Set(1)
		return
	}
	m.applyFailing.Set(0)
}

// ObserveAdmission records the current admission result of every route.
func (m *Metrics) ObserveAdmission(results map[admission.Key]admission.Result) {
	admitted := 0
	rejected := map[string]int{}
	for _, r := range results {
		if r.Admitted {
			admitted++
			continue
		}
		reason := r.Reason
		if reason == "" {
			reason = "Unknown"
		}
		rejected[reason]++
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.admitted = admitted
	// Reasons seen before stay reported, at 0.
	for reason := range m.rejected {
		m.rejected[reason] = 0
	}
	for reason, n := range rejected {
		m.rejected[reason] = n
	}
}

type routesCollector struct{ m *Metrics }

func (c routesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.admittedDesc
	ch <- c.m.rejectedDesc
}

func (c routesCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	admitted := m.admitted
	rejected := make(map[string]int, len(m.rejected)+len(knownReasons))
	for _, r := range knownReasons {
		rejected[r] = 0
	}
	for r, n := range m.rejected {
		rejected[r] = n
	}
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.admittedDesc, prometheus.GaugeValue, float64(admitted))
	reasons := make([]string, 0, len(rejected))
	for r := range rejected {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		ch <- prometheus.MustNewConstMetric(m.rejectedDesc, prometheus.GaugeValue, float64(rejected[r]), r)
	}
}

// BuildInfo returns the module version, VCS revision and Go version the
// binary was built from ("unknown" where the build did not record it).
func BuildInfo() (version, revision, goVersion string) {
	version, revision, goVersion = "unknown", "unknown", runtime.Version()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			revision = s.Value
		}
	}
	return
}

func buildInfo() prometheus.Collector {
	version, revision, goVersion := BuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "openshift_router_build_info",
		Help:        "A metric with a constant '1' value labeled by the version, VCS revision and Go version the router was built from.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	return g
}
