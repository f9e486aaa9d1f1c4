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

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	haproxymetrics "github.com/openshift-router-go/router/metrics/haproxy"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/controller"
	"github.com/openshift-router-go/router/router/mtls"
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

// maxSocketPath is the longest unix socket path the kernel accepts, less room.
const maxSocketPath = 100

func run(ctx context.Context, f runFlags) error {
	log := klog.NewKlogr().WithName("router")

	getenv := f.upstream.Getenv()
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	if err := f.upstream.check(getenv, log); err != nil {
		return err
	}

	workingDir, err := filepath.Abs(cfg.WorkingDir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	runDir := filepath.Join(workingDir, "run")
	if len(runDir)+len("/haproxy-no-sni.sock") > maxSocketPath {
		return fmt.Errorf("working directory %q is too long for unix socket paths (keep it under %d characters)", workingDir, maxSocketPath-len("/run/haproxy-no-sni.sock"))
	}
	for _, d := range []string{"conf", "run", "router/certs", "router/cacerts"} {
		if err := os.MkdirAll(filepath.Join(workingDir, d), 0o755); err != nil {
			return fmt.Errorf("preparing working directory: %w", err)
		}
	}

	logConfigNotes(cfg, log)
	fitCurves(ctx, cfg, f.haproxy, log)
	pipe, err := newPipeline(cfg, workingDir, log)
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
	proc, procProblem := newHAProxyProcess(cfg, f.haproxy, templates.OutputPath(workingDir, templates.ConfigTemplateName), runDir, log.WithName("haproxy"))
	obs := newRouterMetrics()
	pipe.Store = st
	pipe.Process = proc
	pipe.Logger = log.WithName("controller")
	pipe.Sources = []string{src.name}
	pipe.ReloadInterval = cfg.ReloadInterval
	pipe.BindEarly = !cfg.Kube.BindPortsAfterSync
	pipe.OnResults = func(results map[admission.Key]admission.Result) {
		if src.status != nil {
			src.status.Update(results)
		}
	}
	pipe.Observer = obs
	pipe.Runtime = &runtimeapi.Client{Path: filepath.Join(runDir, "haproxy.sock")}
	if h := cfg.HAProxy; h.MutualTLSAuth != "none" && h.MutualTLSClientCA {
		// The client CA copy and the CRLs it names (router/mtls).
		mgr, err := mtls.New(mtls.Options{CAFile: h.MutualTLSCA, CRLFile: h.MutualTLSCRL,
			Dir: filepath.Join(workingDir, "mtls", "latest"), Logger: log.WithName("mtls"), Changed: st.Poke})
		if err != nil {
			return err
		}
		pipe.ExtraFiles = mgr.Apply
		go mgr.Run(ctx)
	}
	ctrl := controller.New(pipe)
	gate := &processGate{readiness: ctrl, problem: procProblem}
	mdeps := metricsDeps{haproxySocket: filepath.Join(runDir, "haproxy.sock"), kube: src.kube,
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
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if proc.Running() {
		if err := proc.Stop(stopCtx); err != nil {
			log.Error(err, "stopping haproxy")
		}
	}
	log.Info("router stopped")
	return runErr
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

// fitMaxConnections raises the open-files limit to its hard limit (HAProxy
// inherits it) and lowers maxconn if HAProxy could not get the file
// descriptors it needs (about two per connection), which would make it
// refuse to start. It also returns the limit (0 if unknown), which the
// controller shares between namespaces for health-checked servers.
func fitMaxConnections(log logr.Logger, want int) (int, int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return want, 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Info("could not raise the open files limit", "err", err.Error())
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	// Listeners, sockets, files (1000), and a quarter of the limit for
	// health-checked servers: routes share it (router/controller's server
	// budget), and maxconn never changes because of them.
	reserved := 1000 + int64(lim.Cur)/4
	fit := (int64(lim.Cur) - reserved) / 2
	if fit < 100 {
		fit = 100
	}
	if int64(want) > fit {
		log.Info("ROUTER_MAX_CONNECTIONS lowered to fit the open files limit", "wanted", want, "using", fit, "openFilesLimit", lim.Cur)
		return int(fit), limitInt(lim.Cur)
	}
	return want, limitInt(lim.Cur)
}

func limitInt(v uint64) int {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}
