package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/openshift-router-go/router/haproxy/process"
	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/controller"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

type runFlags struct {
	manifests  string
	kubeconfig string
	resync     time.Duration
	template   string
	workingDir string
	reload     string
	haproxy    string
	verbosity  int
}

func (f *runFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.manifests, "manifests", os.Getenv("ROUTER_MANIFESTS_DIR"), "directory of YAML manifests (Routes, Services, EndpointSlices, Endpoints, Namespaces, Secrets) to serve; watched for changes (env ROUTER_MANIFESTS_DIR)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to watch (default: KUBECONFIG, then the in-cluster configuration); ignored with --manifests")
	fs.DurationVar(&f.resync, "resync-interval", 0, "informer resync period against a cluster (overrides ROUTER_RESYNC_INTERVAL; default 30m)")
	fs.StringVar(&f.template, "template", "", "template file (overrides TEMPLATE_FILE; default: the embedded template)")
	fs.StringVar(&f.workingDir, "working-dir", "", "directory for haproxy.config, maps and certificates (overrides ROUTER_WORKING_DIR; default /var/lib/haproxy)")
	fs.StringVar(&f.reload, "reload", "", "script to run instead of the built-in reload (overrides RELOAD_SCRIPT)")
	fs.StringVar(&f.haproxy, "haproxy", "haproxy", "haproxy binary")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity")
}

// maxSocketPath is the longest unix socket path the kernel accepts, less room.
const maxSocketPath = 100

func run(ctx context.Context, f runFlags) error {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", fmt.Sprint(f.verbosity))
	log := klog.NewKlogr().WithName("router")

	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	if f.template != "" {
		cfg.TemplateFile = f.template
	}
	if f.workingDir != "" {
		cfg.WorkingDir = f.workingDir
	}
	if f.reload != "" {
		cfg.ReloadScript = f.reload
	}
	if f.resync < 0 {
		return fmt.Errorf("--resync-interval %s: must not be negative", f.resync)
	}
	if f.resync > 0 {
		cfg.Kube.ResyncInterval = f.resync
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

	fitCurves(ctx, cfg, f.haproxy, log)
	pipe, err := newPipeline(cfg, workingDir, log)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	st := store.New()
	src, err := chooseSource(ctx, f, cfg, st, log)
	if err != nil {
		return err
	}
	proc := process.New(process.Options{
		Binary:       f.haproxy,
		ConfigPath:   templates.OutputPath(workingDir, templates.ConfigTemplateName),
		RunDir:       runDir,
		Logger:       log.WithName("haproxy"),
		ReloadScript: cfg.ReloadScript,
	})
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
	ctrl := controller.New(pipe)
	if err := startMetrics(ctx, cfg, log.WithName("metrics"), ctrl, filepath.Join(runDir, "haproxy.sock"), obs); err != nil {
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
	case <-ctx.Done():
	case runErr = <-errc:
	}
	stop()
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
