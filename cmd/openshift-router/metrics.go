package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/kubernetes"

	haproxymetrics "github.com/openshift-router-go/router/metrics/haproxy"
	"github.com/openshift-router-go/router/metrics/routermetrics"
	"github.com/openshift-router-go/router/metrics/server"
	"github.com/openshift-router-go/router/router/config"
)

// routerMetrics is one router's Prometheus registry and the controller
// observer that records into it.
type routerMetrics struct {
	*routermetrics.Metrics
	registry *prometheus.Registry
}

// newRouterMetrics creates the registry with the router's own metrics and
// the Go runtime and process collectors. Pass it to controller.Options as
// the Observer, then call startMetrics.
func newRouterMetrics() *routerMetrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := routermetrics.New(reg)
	if err != nil {
		panic(fmt.Sprintf("registering router metrics: %v", err)) // a programming error
	}
	return &routerMetrics{Metrics: m, registry: reg}
}

// readiness is what the health checks need to know of the controller.
type readiness interface {
	// Ready reports whether the initial configuration is loaded into HAProxy.
	Ready() bool
	// DynamicServer resolves a spare server slot to its endpoint.
	DynamicServer(namespace, route, slot string) (string, bool)
	// Backend resolves the name HAProxy runs a backend as to the route
	// backend it stands for (false: a deleted route's, left out).
	Backend(proxy string) (string, bool)
	// Restarts counts HAProxy restarts after unexpected exits.
	Restarts() int
	// Restarting is true from an unexpected exit of HAProxy until it runs
	// again.
	Restarting() bool
	// LastError is why the last pass failed without a culprit (nil once
	// one succeeds).
	LastError() error
}

// metricsDeps are what the metrics server needs besides the configuration.
type metricsDeps struct {
	// haproxySocket is HAProxy's stats socket ("show stat", "show info").
	haproxySocket string
	// haproxyPID returns HAProxy's current worker PID for the
	// haproxy_process_* metrics; ROUTER_METRICS_HAPROXY_PID_FILE overrides it.
	haproxyPID haproxymetrics.PIDFunc
	// kube, when the router watches a cluster, authorises /metrics by bearer
	// token (TokenReview + SubjectAccessReview); nil otherwise.
	kube kubernetes.Interface
}

// startMetrics starts the metrics and health server in metrics mode
// (ROUTER_METRICS_TYPE=haproxy, or this router's none, with a stats port;
// config.Metrics.Enabled) and serves it until ctx is done. HAProxy's
// statistics are read from its stats socket (ROUTER_METRICS_TYPE=haproxy).
// Outside metrics mode nothing is started: HAProxy's own stats listener
// answers /healthz (templates). An address that cannot be bound or a
// certificate that cannot be loaded is a start-up error.
func startMetrics(ctx context.Context, cfg *config.Config, log logr.Logger, ctrl readiness, deps metricsDeps, m *routerMetrics) error {
	mc := cfg.Metrics
	if !mc.Enabled() {
		port := cfg.StatsPort
		if port == 0 {
			port = config.DefaultStatsPort
		}
		log.Info("metrics server not started (set ROUTER_METRICS_TYPE=haproxy and STATS_PORT or ROUTER_LISTEN_ADDR for it); HAProxy's stats listener answers /healthz",
			"statsPort", port, "statsPage", cfg.StatsPort > 0 && cfg.StatsUser != "" && cfg.StatsPassword != "")
		return nil
	}
	haproxySocket := deps.haproxySocket
	var streams []server.FamilyStreamer
	if mc.Type == config.MetricsTypeHAProxy {
		collector, err := haproxymetrics.New(haproxymetrics.Options{
			Source:             statsSource(mc.HAProxyScrapeURI, haproxySocket, mc.HAProxyTimeout),
			Timeout:            mc.HAProxyTimeout,
			BaseScrapeInterval: mc.HAProxyBaseScrapeInterval,
			ServerThreshold:    mc.HAProxyServerThreshold,
			Columns:            mc.HAProxyExported,
			Logger:             log.WithName("haproxy"),
			DynamicServer:      ctrl.DynamicServer,
			Backend:            ctrl.Backend,
		})
		if err != nil {
			return fmt.Errorf("ROUTER_METRICS_HAPROXY_EXPORTED: %w", err)
		}
		// Streamed, not registered: with many routes HAProxy's statistics
		// are hundreds of thousands of series (server.FamilyStreamer).
		streams = append(streams, collector)
		pid := deps.haproxyPID
		if mc.HAProxyPIDFile != "" {
			pid = haproxymetrics.PIDFile(mc.HAProxyPIDFile)
		}
		if pid != nil {
			// Errors (HAProxy not running yet) leave the series out.
			pc := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "haproxy", PidFn: pid})
			if err := m.registry.Register(pc); err != nil {
				return fmt.Errorf("registering HAProxy process metrics: %w", err)
			}
		}
	}

	haproxyAnswers := server.HAProxyAnswers(haproxySocket)
	live := server.Check{Name: "haproxy", Run: func(ctx context.Context) error {
		if !ctrl.Ready() {
			// Not started before the initial sync; readiness says so.
			return nil
		}
		return haproxyAnswers(ctx)
	}}
	synced := server.Check{Name: "has-synced", Run: func(context.Context) error {
		if !ctrl.Ready() {
			if ctrl.Restarting() {
				return fmt.Errorf("haproxy exited unexpectedly and is being restarted (restarts so far: %d)", ctrl.Restarts())
			}
			if err := ctrl.LastError(); err != nil {
				return fmt.Errorf("the configuration could not be applied; the previous one keeps serving, retrying with backoff: %w", err)
			}
			return errors.New("the initial configuration is not loaded into HAProxy yet")
		}
		return nil
	}}
	ready := []server.Check{processRunningCheck(ctrl), synced, {Name: "haproxy", Run: haproxyAnswers}}
	if mc.ReadyHTTPURL != "" {
		ready = append(ready, readyHTTPCheck(mc.ReadyHTTPURL, cfg.HAProxy.UseProxyProtocol))
	}
	var authz server.Authorizer
	if deps.kube != nil {
		authz = &server.KubeAuthorizer{Client: deps.kube, RouterName: cfg.Kube.RouterName, Logger: log.WithName("authz")}
	}
	srv, err := server.Listen(server.Options{
		Addr:            mc.ListenAddr,
		Network:         mc.ListenNetwork,
		Gatherer:        m.registry,
		Streams:         streams,
		Registerer:      m.registry,
		Username:        cfg.StatsUser,
		Password:        cfg.StatsPassword,
		Authorizer:      authz,
		TLSCertFile:     mc.TLSCertFile,
		TLSKeyFile:      mc.TLSKeyFile,
		TLSMinVersion:   mc.TLSMinVersion,
		TLSCipherSuites: mc.TLSCipherSuites,
		TLSCurves:       mc.TLSCurves,
		Live:            []server.Check{live},
		Ready:           ready,
		Logger:          log,
	})
	switch {
	case errors.Is(err, server.ErrListen):
		return fmt.Errorf("ROUTER_LISTEN_ADDR=%s (or STATS_PORT): %w", mc.ListenAddr, err)
	case errors.Is(err, server.ErrTLS):
		return fmt.Errorf("ROUTER_METRICS_TLS_CERT_FILE/ROUTER_METRICS_TLS_KEY_FILE: %w", err)
	case err != nil:
		return err
	}
	log.Info("metrics and health server listening", "addr", srv.Addr().String(), "metricsType", mc.Type,
		"tls", mc.TLSCertFile != "", "basicAuth", cfg.StatsUser != "" || cfg.StatsPassword != "", "bearerTokens", authz != nil)
	go func() {
		if err := srv.Serve(ctx); err != nil {
			log.Error(err, "metrics and health server stopped")
		}
	}()
	return nil
}
