package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	haproxymetrics "github.com/openshift-router-go/router/metrics/haproxy"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/controller"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

type runFlags struct {
	manifests  string
	kubeconfig string
	haproxy    string
	// enableIngress runs the ingress-to-route controller in-process
	// (cluster mode).
	enableIngress bool
	// upstream are OpenShift's flags (flags.go).
	upstream *upstreamFlags
}

func (f *runFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.manifests, "manifests", os.Getenv("ROUTER_MANIFESTS_DIR"), "directory of YAML manifests (Routes, Services, EndpointSlices, Endpoints, Namespaces, Secrets, Ingresses, IngressClasses) to serve; watched for changes (env ROUTER_MANIFESTS_DIR)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to watch (default: KUBECONFIG, then the in-cluster configuration); ignored with --manifests")
	fs.StringVar(&f.haproxy, "haproxy", "haproxy", "haproxy binary")
	enableIngress, _ := strconv.ParseBool(os.Getenv("ROUTER_ENABLE_INGRESS"))
	// Not --enable-ingress: OpenShift's router accepts that flag, deprecated,
	// without effect, and deployments that pass it must not start a second
	// controller beside OpenShift's route-controller-manager.
	fs.BoolVar(&f.enableIngress, "ingress-to-route", enableIngress, "cluster mode: also run the ingress-to-route controller (Routes for Ingresses, one replica at a time through a Lease); for clusters without OpenShift's (env ROUTER_ENABLE_INGRESS)")
	f.upstream = registerUpstreamFlags(fs)
}

func run(ctx context.Context, f runFlags) error {
	log := klog.NewKlogr().WithName("router")

	cfg, wd, err := setUp(f, log)
	if err != nil {
		return err
	}
	workingDir := wd.Dir

	logConfigNotes(cfg, log)
	fitCurves(ctx, cfg, f.haproxy, log)
	inputs, err := newPipeline(cfg, workingDir, log)
	if err != nil {
		return err
	}

	sigCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	parent := ctx
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()

	st := store.New()
	src, err := chooseSource(ctx, f, cfg, st, log)
	if err != nil {
		return err
	}
	inputs.Gateway.NamespaceLabels = src.namespaceLabels
	spares := sparesPath(cfg, wd)
	proc, procProblem := newHAProxyProcess(cfg, f.haproxy, wd.Config(), spares, wd.Run(), log.WithName("haproxy"))
	obs := newRouterMetrics()
	pipe := controllerOptions(ctx, cfg, inputs, st, src, proc, spares, wd, obs, log)
	mgr, err := newMutualTLS(cfg, wd, log, st.Poke)
	if err != nil {
		return err
	}
	if mgr != nil {
		pipe.ExtraFiles = mgr.Apply
		go mgr.Run(ctx)
	}
	ctrl := controller.New(pipe)
	gate := &processGate{readiness: ctrl, problem: procProblem}
	mdeps := metricsDeps{haproxySocket: wd.RuntimeSocket(), kube: src.metricsKube,
		haproxyPID: haproxymetrics.FirstPID(proc.WorkerPIDs, 2*time.Second)}
	if err := startMetrics(ctx, cfg, log.WithName("metrics"), gate, mdeps, obs); err != nil {
		return err
	}

	errc := make(chan error, 2)
	go func() { errc <- src.run(ctx) }()
	go func() { errc <- ctrl.Run(ctx) }()
	if src.status != nil {
		go src.status.Run(ctx, 2)
	}
	if src.gatewayStatus != nil {
		go src.gatewayStatus.Run(ctx, 1)
	}
	log.Info("router started", append(src.desc, "workingDir", workingDir,
		"httpPort", cfg.HTTPPort, "httpsPort", cfg.HTTPSPort, "reloadInterval", cfg.ReloadInterval)...)

	var runErr error
	select {
	case <-sigCtx.Done():
		stop() // a second signal ends the router at once
		if parent.Err() == nil {
			runErr = gate.drain(parent, log, cfg.Process.GracefulShutdownDelay, errc)
		}
	case runErr = <-errc:
	}
	stop()
	cancelRun()
	stopCtx, cancel := context.WithTimeout(context.Background(), stopBound(cfg))
	defer cancel()
	if proc.Running() {
		if err := proc.Stop(stopCtx); err != nil {
			log.Error(err, "stopping haproxy")
		}
	}
	log.Info("router stopped")
	return runErr
}

// setUp reads the router's settings and prepares its working directory.
func setUp(f runFlags, log logr.Logger) (*config.Config, layout.Layout, error) {
	getenv := f.upstream.Getenv()
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return nil, layout.Layout{}, err
	}
	if err := f.upstream.check(getenv, log); err != nil {
		return nil, layout.Layout{}, err
	}
	workingDir, err := filepath.Abs(cfg.WorkingDir)
	if err != nil {
		return nil, layout.Layout{}, fmt.Errorf("working directory: %w", err)
	}
	wd := layout.New(workingDir)
	if err := wd.CheckSocketPaths(); err != nil {
		return nil, layout.Layout{}, err
	}
	if err := wd.Prepare(log); err != nil {
		return nil, layout.Layout{}, err
	}
	return cfg, wd, nil
}

// controllerOptions are the controller's options for the router's
// sources, HAProxy process and settings; the memory trimmer runs until ctx
// ends.
func controllerOptions(ctx context.Context, cfg *config.Config, inputs pipeline.Inputs, st *store.Store, src *source, proc haproxyProcess, spares string, wd layout.Layout, obs *routerMetrics, log logr.Logger) controller.Options {
	pipe := controller.Options{Inputs: inputs, Store: st, Process: proc, Logger: log.WithName("controller"),
		Sources: []string{src.name}, ReloadInterval: cfg.ReloadInterval,
		SpareBackends: cfg.SpareBackends, SparesFile: spares, BindEarly: !cfg.Kube.BindPortsAfterSync,
		// The embedded HAProxy's master keeps what it ran when it
		// refuses a configuration; a reload script or a sidecar are
		// checked first.
		FirstLoadUnchecked: cfg.ReloadScript == "" && cfg.Process.HAProxyAdminSocket == "",
		Runtime:            &runtimeapi.Client{Path: wd.RuntimeSocket()},
	}
	pipe.OnResults = func(results map[admission.Key]admission.Result, gw *gateway.Result) {
		if src.status != nil {
			src.status.Update(results, gw.Made)
		}
		if src.gatewayStatus != nil {
			// After the commit, and only with a status writer: the
			// statuses take admission's results of every HTTPRoute's
			// routes (a walk over all of them each pass).
			gw.Finish(results)
			src.gatewayStatus.Update(gw)
		}
		if src.gatewaySecrets != nil && gw != nil {
			src.gatewaySecrets.Want(gw.Secrets)
		}
	}
	trimmer := newMemoryTrimmer(obs, log.WithName("memory"))
	go trimmer.Run(ctx)
	pipe.Observer = trimmer
	if src.extcert != nil {
		pipe.ExternalCertificates = src.extcert
	}
	return pipe
}

func loadTemplate(cfg *config.Config) (*templates.Renderer, error) {
	name, text := "default", templates.Default()
	if cfg.TemplateFile != "" {
		data, err := os.ReadFile(cfg.TemplateFile)
		if err != nil {
			return nil, fmt.Errorf("TEMPLATE_FILE: %w", err)
		}
		name, text = cfg.TemplateFile, string(data)
	}
	funcs := templates.FuncMap(templates.FuncOptions{BackendProcessEndpoints: cfg.BackendProcessEndpoints})
	r, err := templates.Parse(name, text, funcs)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return r, nil
}

// raiseOpenFilesLimit raises the open-files limit to its hard limit
// (HAProxy inherits it) and returns it (0 if unknown): maxconn is fitted to
// it (pipeline.FitMaxConnections) and the controller shares what maxconn
// leaves between namespaces for health-checked servers.
func raiseOpenFilesLimit(log logr.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Info("could not raise the open files limit", "err", err.Error())
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return limitInt(lim.Cur)
}

func limitInt(v uint64) int {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}
