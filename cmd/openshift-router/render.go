package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/haproxy/process"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/hostname"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/mtls"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/source/manifests"
	"github.com/openshift-router-go/router/router/store"
)

// newPipeline prepares what the running router and render/check share: the
// inputs of every pass (router/pipeline) — the template, the default
// certificate and the admission, build, hostname and server options
// derived from the configuration. Both take them from here and run the same
// pipeline.Pass, so for the same input they produce the same files.
func newPipeline(cfg *config.Config, workingDir string, log logr.Logger) (pipeline.Inputs, error) {
	// These paths are written into haproxy.config as single words.
	for _, p := range []struct{ name, value string }{
		{"working directory (--working-dir / ROUTER_WORKING_DIR)", workingDir},
		{"DEFAULT_DESTINATION_CA_PATH", cfg.DefaultDestinationCAPath},
	} {
		if err := config.CheckConfigPath(p.value); err != nil {
			return pipeline.Inputs{}, fmt.Errorf("%s %q: %w", p.name, p.value, err)
		}
	}
	renderer, err := loadTemplate(cfg)
	if err != nil {
		return pipeline.Inputs{}, err
	}
	certPEM, certSrc, err := defaultcert.Load(cfg.DefaultCertificate, cfg.DefaultCertificatePath, cfg.DefaultCertificateDir)
	if err != nil {
		return pipeline.Inputs{}, err
	}
	if certSrc == defaultcert.SelfSigned {
		log.Info("no default certificate given (DEFAULT_CERTIFICATE, DEFAULT_CERTIFICATE_PATH, DEFAULT_CERTIFICATE_DIR): generated a self-signed one")
	} else {
		log.Info("default certificate loaded", "from", string(certSrc))
	}

	fdLimit := raiseOpenFilesLimit(log)
	maxConn := pipeline.FitMaxConnections(fdLimit, cfg.MaxConnections)
	if maxConn != cfg.MaxConnections {
		log.Info("ROUTER_MAX_CONNECTIONS lowered to fit the open files limit", "wanted", cfg.MaxConnections, "using", maxConn, "openFilesLimit", fdLimit)
	}
	wd := layout.New(workingDir)
	statsPort, statsUser, statsPassword := cfg.TemplateStats()
	layout := servers.Options{PoolSize: cfg.MaxDynamicServers}
	if cfg.BackendProcessEndpoints == "shuffle" {
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		layout.Shuffle = func(eps []model.Endpoint) {
			r.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		}
	}
	destCA := ""
	if cfg.DefaultDestinationCAPath != "" {
		if _, err := os.Stat(cfg.DefaultDestinationCAPath); err == nil {
			destCA = cfg.DefaultDestinationCAPath
		}
	}
	return pipeline.Inputs{
		Renderer:  renderer,
		Gateway:   gatewayOptions(cfg),
		Admission: admissionOptions(cfg),
		Build: builder.Options{
			WorkingDir:           workingDir,
			RunDir:               wd.Run(),
			DefaultCertificate:   wd.DefaultCertificate(),
			DefaultDestinationCA: destCA,
			WatchEndpoints:       cfg.WatchEndpoints,
			HTTPPort:             cfg.HTTPPort,
			HTTPSPort:            cfg.HTTPSPort,
			StatsPort:            statsPort,
			StatsUser:            statsUser,
			StatsPassword:        statsPassword,
			BindPorts:            true,
			DisableHTTP2:         cfg.DisableHTTP2,
			MaxConnections:       maxConn,
			HAProxy:              cfg.HAProxy,
		},
		DefaultCertificate: certPEM,
		// The manifests' Secrets; the cluster source replaces it with one
		// that checks permissions and watches the secrets (source.go).
		ExternalCertificates: extcert.New(extcert.Options{Enabled: cfg.ExternalCertificates, Logger: log.WithName("extcert")}),
		Servers:              layout,
		FDLimit:              fdLimit,
		Hostnames: hostname.Generator{
			Domain:          cfg.Kube.Domain,
			Subdomain:       cfg.Kube.Subdomain,
			Override:        cfg.Kube.OverrideHostname,
			OverrideDomains: cfg.Kube.OverrideDomains,
		},
	}, nil
}

// newMutualTLS returns the manager of the client CA copy and the CRLs it
// names (router/mtls) when the configuration asks for client certificates
// checked against a CA; nil otherwise. changed is called when the files
// change (nil: nobody is told).
func newMutualTLS(cfg *config.Config, wd layout.Layout, log logr.Logger, changed func()) (*mtls.Manager, error) {
	h := cfg.HAProxy
	if h.MutualTLSAuth == "none" || !h.MutualTLSClientCA {
		return nil, nil
	}
	return mtls.New(mtls.Options{CAFile: h.MutualTLSCA, CRLFile: h.MutualTLSCRL,
		Dir: wd.MTLS(), Logger: log.WithName("mtls"), Changed: changed})
}

// logConfigNotes logs the configuration's warnings (values ignored, as
// OpenShift's router ignores them) and notices (variables accepted without
// effect), at the default level: render and check show them too.
func logConfigNotes(cfg *config.Config, log logr.Logger) {
	for _, w := range cfg.Warnings {
		log.Info("configuration warning: " + w)
	}
	for _, n := range cfg.Notices {
		log.Info(n)
	}
}

// renderFlags are the flags of render and check.
type renderFlags struct {
	manifests string
	outputDir string
	haproxy   string
	// env are the router's env-backed flags (flags.go).
	env *envFlags
}

func (f *renderFlags) register(cmd *cobra.Command, check bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.manifests, "manifests", os.Getenv("ROUTER_MANIFESTS_DIR"), "directory of YAML manifests (Routes, Services, EndpointSlices, Endpoints, Namespaces, Secrets) to render (env ROUTER_MANIFESTS_DIR)")
	if check {
		// check renders into a temporary directory or --keep DIR.
		f.env = registerEnvFlags(fs, "working-dir")
		fs.StringVar(&f.haproxy, "haproxy", "haproxy", "haproxy binary")
		fs.StringVar(&f.outputDir, "keep", "", "render into this directory (as the working directory) and keep it, instead of a temporary one")
		return
	}
	// --working-dir is the directory the configuration refers to; nothing
	// is written there.
	f.env = registerEnvFlags(fs)
	fs.StringVar(&f.outputDir, "output-dir", "", "also write every file (configuration, maps, certificates) under this directory, at its path relative to the working directory")
}

func newRenderCommand() *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:   "render --manifests DIR [--template FILE] [--working-dir DIR] [--output-dir DIR]",
		Short: "Print the haproxy.config the router would write for a manifests directory",
		Long: `render loads the manifests once, admits the routes and renders the template
exactly as the running router does (same environment variables, same
--template and --working-dir give the same bytes), then prints haproxy.config
on stdout. The other files (maps, certificates) and the rejected routes are
listed on stderr; --output-dir writes them all. Nothing is run.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	f.register(cmd, false)
	return cmd
}

func newCheckCommand() *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:   "check --manifests DIR [--template FILE] [--keep DIR]",
		Short: "Render like render, then have HAProxy check the result (haproxy -c)",
		Long: `check renders the manifests like render, writes every file into a temporary
working directory (or --keep DIR) and runs "haproxy -c" on it. Template errors
name the template file and line; HAProxy's errors are printed, with the routes
they point at. The exit status is non-zero when anything fails.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	f.register(cmd, true)
	return cmd
}

// renderLogger logs to stderr at klog's verbosity (-v).
func renderLogger() logr.Logger {
	return klog.NewKlogr().WithName("render")
}

// renderFiles loads the manifests and renders every file for workingDir.
func renderFiles(f renderFlags, workingDir string, log logr.Logger) ([]files.File, admission.Decision, error) {
	if f.manifests == "" {
		return nil, admission.Decision{}, errors.New("--manifests DIR is required (a directory of YAML manifests)")
	}
	cfg, err := config.FromEnv(f.env.Getenv(os.LookupEnv))
	if err != nil {
		return nil, admission.Decision{}, err
	}
	logConfigNotes(cfg, log)
	fitCurves(context.Background(), cfg, f.haproxy, log)
	in, err := newPipeline(cfg, workingDir, log.V(1))
	if err != nil {
		return nil, admission.Decision{}, err
	}
	// The files a running router writes for mutual TLS (the client CA copy
	// and the CRLs it names, as they are before any is fetched).
	mgr, err := newMutualTLS(cfg, layout.New(workingDir), log, nil)
	if err != nil {
		return nil, admission.Decision{}, err
	}
	if mgr != nil {
		in.ExtraFiles = mgr.Apply
	}
	st := store.New()
	if err := manifests.LoadDir(f.manifests, st, log.WithName("manifests")); err != nil {
		return nil, admission.Decision{}, fmt.Errorf("--manifests %s: %w", f.manifests, err)
	}
	// The pass a running router makes first, on the same inputs.
	out, err := pipeline.Pass(st, in, pipeline.State{})
	if err != nil {
		return nil, admission.Decision{}, err
	}
	if out.Budget.Summary() != [3]int{} {
		log.Info(pipeline.BudgetMessage, out.Budget.KeysAndValues()...)
	}
	return out.Files, out.Decision, nil
}

func runRender(stdout, stderr io.Writer, f renderFlags) error {
	log := renderLogger()
	cfg, err := config.FromEnv(f.env.Getenv(os.LookupEnv))
	if err != nil {
		return err
	}
	workingDir, err := filepath.Abs(cfg.WorkingDir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	fs, decision, err := renderFiles(f, workingDir, log)
	if err != nil {
		return err
	}
	configPath := layout.New(workingDir).Config()
	var config []byte
	found := false
	for _, file := range fs {
		if filepath.Clean(file.Path) == configPath {
			config, found = file.Data, true
		}
	}
	if !found {
		return fmt.Errorf("the template rendered no %s", configPath)
	}
	if f.outputDir != "" {
		if err := writeRelocated(fs, workingDir, f.outputDir); err != nil {
			return err
		}
	}
	if _, err := stdout.Write(config); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	summarize(stderr, fs, configPath, decision)
	return nil
}

// writeRelocated writes files (paths under workingDir) under outDir.
func writeRelocated(fs []files.File, workingDir, outDir string) error {
	moved := make([]files.File, 0, len(fs))
	for _, file := range fs {
		rel, err := filepath.Rel(workingDir, file.Path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("file %s is outside the working directory %s", file.Path, workingDir)
		}
		moved = append(moved, files.File{Path: filepath.Join(outDir, rel), Data: file.Data, Mode: file.Mode})
	}
	return writeAll(moved)
}

// writeAll writes files, creating their directories.
func writeAll(fs []files.File) error {
	for _, file := range fs {
		if err := os.MkdirAll(filepath.Dir(file.Path), layout.DirMode); err != nil {
			return fmt.Errorf("writing %s: %w", file.Path, err)
		}
	}
	w := files.NewWriter()
	if _, err := w.Stage(fs); err != nil {
		return fmt.Errorf("writing files: %w", err)
	}
	w.Commit()
	return nil
}

// summarize lists the side files and the rejected routes.
func summarize(w io.Writer, fs []files.File, configPath string, d admission.Decision) {
	fmt.Fprintf(w, "# %s (%d bytes)\n", configPath, len(fileBytes(fs, configPath)))
	for _, file := range fs {
		if filepath.Clean(file.Path) != configPath {
			fmt.Fprintf(w, "# %s (%d bytes)\n", file.Path, len(file.Data))
		}
	}
	keys := make([]string, 0, len(d.Results))
	for k := range d.Results {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "# routes: %d admitted, %d rejected\n", len(d.Admitted), len(keys)-len(d.Admitted))
	for _, k := range keys {
		if r := d.Results[admission.Key(k)]; !r.Admitted {
			fmt.Fprintf(w, "# rejected %s (host %q): %s: %s\n", k, r.Host, r.Reason, r.Message)
		}
	}
}

func fileBytes(fs []files.File, path string) []byte {
	for _, file := range fs {
		if filepath.Clean(file.Path) == filepath.Clean(path) {
			return file.Data
		}
	}
	return nil
}

func runCheck(ctx context.Context, stdout, stderr io.Writer, f renderFlags) error {
	log := renderLogger()
	dir := f.outputDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "orc")
		if err != nil {
			return fmt.Errorf("temporary working directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	workingDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	wd := layout.New(workingDir)
	if err := wd.CheckSocketPaths(); err != nil {
		return err
	}
	fs, decision, err := renderFiles(f, workingDir, log)
	if err != nil {
		return err
	}
	if err := wd.Prepare(log); err != nil {
		return err
	}
	if err := writeAll(fs); err != nil {
		return err
	}
	configPath := wd.Config()
	proc := process.New(process.Options{
		Binary:     f.haproxy,
		ConfigPath: configPath,
		RunDir:     wd.Run(),
		Logger:     log.WithName("haproxy"),
	})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	summarize(stderr, fs, configPath, decision)
	if err := proc.Check(ctx, configPath); err != nil {
		var ce *process.CheckError
		if errors.As(err, &ce) && ce.Output != "" {
			fmt.Fprintf(stderr, "haproxy -c output:\n%s\n", strings.TrimRight(ce.Output, "\n"))
		}
		msg := err.Error()
		if culprits := pipeline.CheckCulprits(msg, fileBytes(fs, configPath), fs); len(culprits) > 0 {
			names := make([]string, len(culprits))
			for i, c := range culprits {
				names[i] = string(c)
			}
			sort.Strings(names)
			msg += "\nroutes it points at: " + strings.Join(names, ", ")
		}
		return errors.New(msg)
	}
	fmt.Fprintf(stdout, "configuration valid: %s (%d routes admitted)\n", configPath, len(decision.Admitted))
	return nil
}

// admissionOptions are admission's settings (with a validation memo of
// its own).
func admissionOptions(cfg *config.Config) admission.Options {
	return admission.Options{
		Memo:                           admission.NewValidationMemo(),
		ExtendedValidation:             cfg.ExtendedValidation,
		AllowWildcardRoutes:            cfg.Admission.AllowWildcardRoutes,
		DisableNamespaceOwnershipCheck: cfg.Admission.DisableNamespaceOwnershipCheck,
		AllowedDomains:                 cfg.Admission.AllowedDomains,
		DeniedDomains:                  cfg.Admission.DeniedDomains,
		MaxConfigBytes:                 cfg.Admission.MaxConfigBytes,
	}
}

// gatewayOptions are the Gateway API translation's settings: this router's
// controller name, each Gateway's own host name (ROUTER_GATEWAY_SUBDOMAIN),
// and the canonical hostname as the address of Gateways without one. NAMESPACE_LABELS applies in cluster mode (source).
func gatewayOptions(cfg *config.Config) *gateway.Options {
	o := &gateway.Options{ControllerName: cfg.Kube.GatewayControllerName, Subdomain: cfg.Kube.GatewaySubdomain, Memo: gateway.NewMemo()}
	if g := cfg.Kube.GatewayDefaultCertificateFrom; g != "" {
		o.DefaultCertificateFrom = store.Key(g)
	}
	if h := cfg.Kube.CanonicalHostname; h != "" {
		t := gatewayv1.HostnameAddressType
		o.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &t, Value: h}}
	}
	return o
}
