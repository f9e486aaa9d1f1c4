package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/openshift-router-go/router/router/deploy"
)

type admRouterFlags struct {
	opts        deploy.Options
	output      string
	defaultCert string
	template    string
	apply       bool
	dryRun      bool
	kubeconfig  string
}

func newAdmCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adm",
		Short: "Administrative commands (like oc adm)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAdmRouterCommand())
	return cmd
}

func newAdmRouterCommand() *cobra.Command {
	var f admRouterFlags
	cmd := &cobra.Command{
		Use:   "router NAME [flags]",
		Short: "Print (or --apply) everything needed to run a router in a cluster",
		Long: `router prints the objects that run a router named NAME in a cluster, as
"oc adm router" did: a ServiceAccount, the minimal ClusterRole and a
ClusterRoleBinding, a Deployment (host networking by default; rolling updates
never put two routers on the same host ports of a node), a Service (HTTP,
HTTPS and the metrics port) and, with --default-cert, --stats-password or
--template, the Secret or ConfigMap they need.

The output (YAML, or a JSON List with -o json) can be piped to
"kubectl apply -f -", or created directly with --apply (server-side apply:
running it again changes nothing). --dry-run with --apply has the API server
validate everything without persisting it.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.opts.Name = args[0]
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
	fs.IntVar(&o.MetricsPort, "metrics-port", deploy.DefaultMetricsPort, "port of the metrics and health server (ROUTER_LISTEN_ADDR; probes /healthz and /healthz/ready)")
	fs.IntVar(&o.StatsPort, "stats-port", 0, "port of HAProxy's stats page (STATS_PORT); 0: none")
	fs.StringVar(&o.StatsUser, "stats-user", "", "user of the stats page (STATS_USERNAME)")
	fs.StringVar(&o.StatsPassword, "stats-password", "", "password of the stats page (STATS_PASSWORD, stored in Secret NAME-stats)")
	fs.StringVar(&f.defaultCert, "default-cert", "", "PEM file with the default certificate (chain) and its key; stored in Secret NAME-certs, mounted at "+deploy.DefaultCertificateDir+" (DEFAULT_CERTIFICATE_DIR)")
	fs.StringVar(&f.template, "template", "", "custom template file; stored in ConfigMap NAME-template, mounted at "+deploy.CustomTemplateDir+" (TEMPLATE_FILE)")
	fs.StringVar(&o.Ciphers, "ciphers", "", "TLS cipher list of the frontends (ROUTER_CIPHERS)")
	fs.BoolVar(&o.StrictSNI, "strict-sni", false, "refuse TLS connections whose SNI matches no certificate (ROUTER_STRICT_SNI)")
	fs.BoolVar(&o.DisableNamespaceOwnershipCheck, "disable-namespace-ownership-check", false, "let routes of different namespaces share a host (ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK)")
	fs.StringVar(&o.CanonicalHostname, "router-canonical-hostname", "", "host name of the router written in route status (ROUTER_CANONICAL_HOSTNAME)")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "service account of the router pods (default NAME)")
	fs.IntVar(&o.MaxConnections, "max-connections", 0, "HAProxy's maxconn (ROUTER_MAX_CONNECTIONS); 0: the router's default")
	fs.StringVar(&o.RouteLabels, "route-labels", "", "serve only routes matching this label selector (ROUTE_LABELS)")
	fs.StringVar(&o.NamespaceLabels, "namespace-labels", "", "serve only routes of namespaces matching this label selector (NAMESPACE_LABELS)")
	fs.StringVar(&o.AllowedDomains, "allowed-domains", "", "comma-separated domains route hosts must be in (ROUTER_ALLOWED_DOMAINS)")
	fs.StringVar(&o.DeniedDomains, "denied-domains", "", "comma-separated domains route hosts must not be in (ROUTER_DENIED_DOMAINS)")
	fs.BoolVar(&f.apply, "apply", false, "create or update the objects in the cluster (server-side apply) instead of printing them")
	fs.BoolVar(&f.dryRun, "dry-run", false, "change nothing: print the objects; with --apply, have the API server validate them without persisting")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --apply (default: KUBECONFIG, then the in-cluster configuration)")
	return cmd
}

func runAdmRouter(cmd *cobra.Command, f admRouterFlags) error {
	if f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", f.output)
	}
	if f.defaultCert != "" {
		data, err := os.ReadFile(f.defaultCert)
		if err != nil {
			return fmt.Errorf("--default-cert: %w", err)
		}
		f.opts.DefaultCert, f.opts.DefaultCertFile = data, f.defaultCert
	}
	if f.template != "" {
		data, err := os.ReadFile(f.template)
		if err != nil {
			return fmt.Errorf("--template: %w", err)
		}
		f.opts.Template, f.opts.TemplateFile = data, f.template
	}
	objs, err := deploy.Objects(f.opts)
	if err != nil {
		return err
	}
	us, err := deploy.ToUnstructured(objs)
	if err != nil {
		return err
	}
	if !f.apply {
		var out []byte
		if f.output == "json" {
			out, err = deploy.JSON(us)
		} else {
			out, err = deploy.YAML(us)
		}
		if err != nil {
			return err
		}
		if _, err := cmd.OutOrStdout().Write(out); err != nil {
			return fmt.Errorf("writing the objects: %w", err)
		}
		return nil
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
	lines, err := deploy.Apply(ctx, client, us, f.dryRun)
	for _, l := range lines {
		fmt.Fprintln(cmd.OutOrStdout(), l)
	}
	if err != nil {
		return fmt.Errorf("%s (%s): %w", where, restConfig.Host, err)
	}
	return nil
}
