package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/openshift-router-go/router/router/deploy"
)

type admRouterFlags struct {
	opts         deploy.Options
	output       string
	defaultCert  string
	template     string
	mtlsCA       string
	mtlsCRL      string
	metricsPort  int
	apply        bool
	dryRun       bool
	kubeconfig   string
	createNoop   bool
	statsPortSet bool
	metricsSet   bool
}

func newAdmCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adm",
		Short: "Administrative commands (like oc adm)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAdmRouterCommand(), newAdmIngressToRouteCommand())
	return cmd
}

func newAdmRouterCommand() *cobra.Command {
	var f admRouterFlags
	cmd := &cobra.Command{
		Use:   "router [NAME] [flags]",
		Short: "Print (or --apply) everything needed to run a router in a cluster",
		Long: `router prints the objects that run a router named NAME (default "router") in
a cluster, as "oc adm router" did: a ServiceAccount, the minimal ClusterRole
and a ClusterRoleBinding, the router-monitoring ClusterRole and its binding to
Prometheus' service account, a Deployment (host networking by default;
rolling updates never put two routers on the same host ports of a node), a
Service (HTTP, HTTPS and the stats/metrics port), the Secret with the stats
password and, with --default-cert, --mutual-tls-auth-ca/-crl or --template,
the Secret or ConfigMap they need. --monitoring adds a ServiceMonitor and a
PrometheusRule (Prometheus Operator). --ingress adds the ingress-to-route
controller as a Deployment of its own with its own service account: the
controller reads every Secret of the cluster, the router's service account
reads none (a tenant lets it read one external certificate secret with a
Role).

--stats-port (default 1936, 0: none) is oc adm router's: the port of the
metrics and health server (STATS_PORT, ROUTER_LISTEN_ADDR=0.0.0.0:PORT,
ROUTER_METRICS_TYPE=haproxy); the probes use it.

The output (YAML, or a JSON List with -o json) can be piped to
"kubectl apply -f -", or created directly with --apply (server-side apply:
running it again changes nothing). --dry-run with --apply has the API server
validate everything without persisting it.`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.opts.Name = "router"
			if len(args) == 1 {
				f.opts.Name = args[0]
			}
			f.statsPortSet = cmd.Flags().Changed("stats-port")
			f.metricsSet = cmd.Flags().Changed("metrics-port")
			return runAdmRouter(cmd, f)
		},
	}
	fs := cmd.Flags()
	o := &f.opts
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	fs.StringVarP(&o.Namespace, "namespace", "n", "default", "namespace of the router's objects (must exist)")
	fs.StringVar(&o.Image, "image", deploy.DefaultImage, "router image")
	fs.Int32Var(&o.Replicas, "replicas", 1, "number of router pods")
	fs.StringVar(&o.NodeSelector, "selector", "", "node selector of the router pods (key=value[,key=value...])")
	fs.StringVar(&o.Labels, "labels", "", "labels of the router and its objects; they select its pods (default router=NAME)")
	fs.StringVar(&o.Ports, "ports", "80:80,443:443", "HTTP and HTTPS ports: CONTAINERPORT[:HOSTPORT],CONTAINERPORT[:HOSTPORT]")
	fs.BoolVar(&o.HostNetwork, "host-network", true, "run the router pods on the host network")
	fs.BoolVar(&o.HostPorts, "host-ports", true, "without host networking, expose the HTTP and HTTPS ports on the node (hostPort)")
	fs.IntVar(&o.StatsPort, "stats-port", deploy.DefaultStatsPort, "port of the metrics and health server (STATS_PORT, ROUTER_LISTEN_ADDR, ROUTER_METRICS_TYPE=haproxy; probes /healthz and /healthz/ready); 0: none")
	fs.IntVar(&f.metricsPort, "metrics-port", deploy.DefaultStatsPort, "the same as --stats-port")
	_ = fs.MarkDeprecated("metrics-port", "use --stats-port (the metrics and health port, as in oc adm router)")
	fs.StringVar(&o.StatsUser, "stats-user", deploy.DefaultStatsUser, "user for /metrics basic auth (STATS_USERNAME)")
	fs.StringVar(&o.StatsPassword, "stats-password", "", "password for /metrics basic auth (STATS_PASSWORD, stored in Secret NAME-stats); default: the Secret's with --apply, else random")
	fs.StringVar(&f.defaultCert, "default-cert", "", "PEM file with the default certificate (chain) and its key; stored in Secret NAME-certs, mounted at "+deploy.DefaultCertificateDir+" (DEFAULT_CERTIFICATE_DIR)")
	fs.StringVar(&f.template, "template", "", "custom template file; stored in ConfigMap NAME-template, mounted at "+deploy.CustomTemplateDir+" (TEMPLATE_FILE)")
	fs.StringVar(&o.Ciphers, "ciphers", "", "TLS cipher list of the frontends (ROUTER_CIPHERS)")
	fs.BoolVar(&o.StrictSNI, "strict-sni", false, "refuse TLS connections whose SNI matches no certificate (ROUTER_STRICT_SNI)")
	fs.BoolVar(&o.DisableNamespaceOwnershipCheck, "disable-namespace-ownership-check", false, "let routes of different namespaces share a host (ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK)")
	fs.StringVar(&o.CanonicalHostname, "router-canonical-hostname", "", "host name of the router written in route status (ROUTER_CANONICAL_HOSTNAME)")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "service account of the router pods (default NAME)")
	fs.StringVar(&o.MaxConnections, "max-connections", "", "HAProxy's maxconn (ROUTER_MAX_CONNECTIONS): a number or auto; empty: the router's default")
	fs.IntVar(&o.Threads, "threads", 0, "HAProxy threads (ROUTER_THREADS); 0: HAProxy's default")
	fs.StringVar(&o.Subdomain, "subdomain", "", "host name template for routes without a host, e.g. ${name}-${namespace}.apps.example.com (ROUTER_SUBDOMAIN)")
	fs.StringVar(&o.ForceSubdomain, "force-subdomain", "", "like --subdomain, and override the host of every route (ROUTER_SUBDOMAIN, ROUTER_OVERRIDE_HOSTNAME=true)")
	fs.StringVar(&o.MutualTLSAuth, "mutual-tls-auth", "none", "client certificates: required, optional or none (ROUTER_MUTUAL_TLS_AUTH)")
	fs.StringVar(&f.mtlsCA, "mutual-tls-auth-ca", "", "PEM file of the CAs that sign client certificates; Secret NAME-mutual-tls-auth, mounted at "+deploy.MutualTLSDir+" (ROUTER_MUTUAL_TLS_AUTH_CA)")
	fs.StringVar(&f.mtlsCRL, "mutual-tls-auth-crl", "", "PEM file of a certificate revocation list; Secret NAME-mutual-tls-auth (ROUTER_MUTUAL_TLS_AUTH_CRL)")
	fs.StringVar(&o.MutualTLSAuthFilter, "mutual-tls-auth-filter", "", "regular expression client certificate subjects must match (ROUTER_MUTUAL_TLS_AUTH_FILTER)")
	fs.StringVar(&o.RouteLabels, "route-labels", "", "serve only routes matching this label selector (ROUTE_LABELS)")
	fs.StringVar(&o.NamespaceLabels, "namespace-labels", "", "serve only routes of namespaces matching this label selector (NAMESPACE_LABELS)")
	fs.StringVar(&o.AllowedDomains, "allowed-domains", "", "comma-separated domains route hosts must be in (ROUTER_ALLOWED_DOMAINS)")
	fs.StringVar(&o.DeniedDomains, "denied-domains", "", "comma-separated domains route hosts must not be in (ROUTER_DENIED_DOMAINS)")
	fs.StringVar(&o.MetricsCertSecret, "metrics-cert-secret", "", "kubernetes.io/tls Secret for HTTPS on the stats port, mounted at "+deploy.MetricsCertDir+" (ROUTER_METRICS_TLS_CERT_FILE/KEY_FILE); the Service asks OpenShift's service CA for it")
	fs.StringVar(&o.PrometheusServiceAccount, "prometheus-service-account", deploy.DefaultPrometheusServiceAccount, "NAMESPACE/NAME of the service account whose token may read /metrics (router-monitoring); empty: none")
	fs.BoolVar(&o.Ingress, "ingress", false, "also print the ingress-to-route controller (Routes for Ingresses, for clusters without OpenShift's controller) as a Deployment NAME-ingress-to-route of its own, with its own service account, ClusterRole, Lease Role and bindings (what adm ingress-to-route prints): it reads every Secret, the router none")
	fs.BoolVar(&o.Monitoring, "monitoring", false, "also print a ServiceMonitor and a PrometheusRule (HAProxyDown, HAProxyReloadFail) for the Prometheus Operator")
	fs.StringVar(&o.MonitoringCAFile, "monitoring-ca-file", deploy.DefaultMonitoringCAFile, "with --metrics-cert-secret: the CA file, in the Prometheus pod, that checks the metrics certificate")
	fs.BoolVar(&f.createNoop, "create", false, "no effect (oc adm router's deprecated flag)")
	_ = fs.MarkDeprecated("create", "it has no effect; use --apply to create the objects")
	fs.BoolVar(&f.apply, "apply", false, "create or update the objects in the cluster (server-side apply) instead of printing them")
	fs.BoolVar(&f.dryRun, "dry-run", false, "change nothing: print the objects; with --apply, have the API server validate them without persisting")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --apply (default: KUBECONFIG, then the in-cluster configuration)")
	return cmd
}

func readFlagFile(flag, file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return data, nil
}

func runAdmRouter(cmd *cobra.Command, f admRouterFlags) error {
	if f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", f.output)
	}
	if f.metricsSet {
		if f.statsPortSet && f.metricsPort != f.opts.StatsPort {
			return fmt.Errorf("--metrics-port %d and --stats-port %d: the same port, give only --stats-port", f.metricsPort, f.opts.StatsPort)
		}
		f.opts.StatsPort = f.metricsPort
	}
	var err error
	if f.opts.DefaultCert, err = readFlagFile("--default-cert", f.defaultCert); err != nil {
		return err
	}
	f.opts.DefaultCertFile = f.defaultCert
	if f.opts.Template, err = readFlagFile("--template", f.template); err != nil {
		return err
	}
	f.opts.TemplateFile = f.template
	if f.opts.MutualTLSAuthCA, err = readFlagFile("--mutual-tls-auth-ca", f.mtlsCA); err != nil {
		return err
	}
	f.opts.MutualTLSAuthCAFile = f.mtlsCA
	if f.opts.MutualTLSAuthCRL, err = readFlagFile("--mutual-tls-auth-crl", f.mtlsCRL); err != nil {
		return err
	}
	f.opts.MutualTLSAuthCRLFile = f.mtlsCRL

	var client dynamic.Interface
	var where, host string
	if f.apply {
		restConfig, w, err := clusterConfig(f.kubeconfig)
		if err != nil {
			return err
		}
		if restConfig == nil {
			return errors.New("--apply needs a cluster: give --kubeconfig FILE or set KUBECONFIG")
		}
		restConfig.UserAgent = "openshift-router"
		if client, err = dynamic.NewForConfig(restConfig); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
		where, host = w, restConfig.Host
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()

	generated := false
	if f.opts.StatsPort != 0 && f.opts.StatsPassword == "" {
		// Keep the password of an earlier --apply, so that re-running it
		// changes nothing.
		if client != nil {
			f.opts.StatsPassword = existingStatsPassword(ctx, client, f.opts)
		}
		if f.opts.StatsPassword == "" {
			if f.opts.StatsPassword, err = deploy.GeneratePassword(); err != nil {
				return err
			}
			generated = true
		}
	}
	objs, err := deploy.Objects(f.opts)
	if err != nil {
		return err
	}
	if generated {
		fmt.Fprintf(cmd.ErrOrStderr(), "info: generated a random password for stats user %s (Secret %s, key password)\n",
			f.opts.StatsUser, deploy.StatsSecretName(f.opts.Name))
	}
	us, err := deploy.ToUnstructured(objs)
	if err != nil {
		return err
	}
	if !f.apply {
		return printObjects(cmd.OutOrStdout(), us, f.output)
	}
	sa := f.opts.ServiceAccount
	if sa == "" {
		sa = f.opts.Name
	}
	if err := deploy.CheckNotBound(ctx, client, f.opts.Namespace, sa, deploy.IngressClusterRoleName,
		"a router's service account must not hold it (it reads every Secret): delete that binding (the output of adm router --ingress before the controller had a Deployment of its own made one) or give the router another --service-account"); err != nil {
		return fmt.Errorf("%s (%s): %w", where, host, err)
	}
	return applyObjects(ctx, cmd.OutOrStdout(), client, us, f.dryRun, where, host)
}

// existingStatsPassword returns the password in the router's stats Secret,
// or "" when there is none (or it cannot be read: a new one is generated).
func existingStatsPassword(ctx context.Context, client dynamic.Interface, o deploy.Options) string {
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	u, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).
		Get(ctx, deploy.StatsSecretName(o.Name), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	enc, _, _ := unstructured.NestedString(u.Object, "data", "password")
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return ""
	}
	return string(b)
}

type admIngressFlags struct {
	opts       deploy.IngressToRouteOptions
	output     string
	apply      bool
	dryRun     bool
	kubeconfig string
}

func newAdmIngressToRouteCommand() *cobra.Command {
	var f admIngressFlags
	cmd := &cobra.Command{
		Use:   "ingress-to-route [NAME] [flags]",
		Short: "Print (or --apply) a Deployment of the ingress-to-route controller and its RBAC",
		Long: `ingress-to-route prints the objects that run the ingress-to-route controller
named NAME (default "ingress-to-route") as a Deployment of its own: a
ServiceAccount, the ClusterRole openshift-router-ingress-to-route and its
binding, a Role and binding for its Lease, and the Deployment (2 replicas by
default; one leads). For clusters without OpenShift's route-controller-manager.
The controller reads every Secret of the cluster: give NAME a service account
of its own, never a router's (adm router NAME --ingress prints the same
objects as NAME-ingress-to-route).`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.opts.Name = "ingress-to-route"
			if len(args) == 1 {
				f.opts.Name = args[0]
			}
			return runAdmIngressToRoute(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.opts.Namespace, "namespace", "n", "default", "namespace of the controller's objects and Lease (must exist)")
	fs.StringVar(&f.opts.Image, "image", deploy.DefaultImage, "router image")
	fs.Int32Var(&f.opts.Replicas, "replicas", 2, "replicas (one leads)")
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	fs.BoolVar(&f.apply, "apply", false, "create or update the objects in the cluster (server-side apply) instead of printing them")
	fs.BoolVar(&f.dryRun, "dry-run", false, "with --apply, have the API server validate the objects without persisting them")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --apply (default: KUBECONFIG, then the in-cluster configuration)")
	return cmd
}

func runAdmIngressToRoute(cmd *cobra.Command, f admIngressFlags) error {
	if f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", f.output)
	}
	objs, err := deploy.IngressToRouteObjects(f.opts)
	if err != nil {
		return err
	}
	us, err := deploy.ToUnstructured(objs)
	if err != nil {
		return err
	}
	if !f.apply {
		return printObjects(cmd.OutOrStdout(), us, f.output)
	}
	restConfig, where, err := clusterConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if restConfig == nil {
		return errors.New("--apply needs a cluster: give --kubeconfig FILE or set KUBECONFIG")
	}
	restConfig.UserAgent = "openshift-router"
	client, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()
	if err := deploy.CheckNotBound(ctx, client, f.opts.Namespace, f.opts.Name, deploy.ClusterRoleName,
		"that is a router's service account, and the controller reads every Secret; give the controller another NAME"); err != nil {
		return fmt.Errorf("%s (%s): %w", where, restConfig.Host, err)
	}
	return applyObjects(ctx, cmd.OutOrStdout(), client, us, f.dryRun, where, restConfig.Host)
}

// printObjects writes the objects as YAML or JSON (output "json").
func printObjects(w io.Writer, us []*unstructured.Unstructured, output string) error {
	var out []byte
	var err error
	if output == "json" {
		out, err = deploy.JSON(us)
	} else {
		out, err = deploy.YAML(us)
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("writing the objects: %w", err)
	}
	return nil
}

// applyObjects applies the objects (server-side apply, or its dry run) and
// prints a line per object; errors name the cluster (where, host).
func applyObjects(ctx context.Context, w io.Writer, client dynamic.Interface, us []*unstructured.Unstructured, dryRun bool, where, host string) error {
	lines, err := deploy.Apply(ctx, client, us, dryRun)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if err != nil {
		return fmt.Errorf("%s (%s): %w", where, host, err)
	}
	return nil
}
