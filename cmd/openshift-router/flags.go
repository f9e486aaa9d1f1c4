package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/openshift-router-go/router/router/config"
)

// OpenShift's openshift-router takes a command-line flag for most of its
// environment variables; the variable is the flag's default. Here every such
// flag maps to its variable: a flag given on the command line replaces the
// variable in the lookup passed to config.FromEnv, so the configuration is
// parsed and validated in one place and a flag and its variable always mean
// the same thing.

// flagKind is the type of a flag's value, as OpenShift declares it (so a
// malformed value is refused by the flag parser with the same message).
type flagKind int

const (
	kindString   flagKind = iota
	kindBool              // --flag, --flag=true|false
	kindDuration          // Go duration
	kindInt               // whole number
	kindList              // comma-separated, repeatable
)

// envFlag is one flag backed by an environment variable.
type envFlag struct {
	name string
	env  string
	kind flagKind
	// def is the default used when neither the flag nor the variable is
	// given (help text only; router/config applies it).
	def   string
	usage string
}

// envFlagTable lists the env-backed flags: OpenShift's template router,
// stats and router selection flags. --working-dir and --resync-interval
// have no variable in OpenShift; they map to this router's
// ROUTER_WORKING_DIR and ROUTER_RESYNC_INTERVAL.
func envFlagTable() []envFlag {
	return []envFlag{
		// Template router.
		{"working-dir", "ROUTER_WORKING_DIR", kindString, "/var/lib/haproxy", "directory for haproxy.config, maps, certificates and run/ (sockets, pid)"},
		{"default-certificate", "DEFAULT_CERTIFICATE", kindString, "", "PEM contents of the default certificate (certificate chain and key)"},
		{"default-certificate-path", "DEFAULT_CERTIFICATE_PATH", kindString, "", "file with the default certificate (PEM)"},
		{"default-certificate-dir", "DEFAULT_CERTIFICATE_DIR", kindString, "", "directory with tls.crt (and tls.key); used if neither of the two above is given"},
		{"default-destination-ca-path", "DEFAULT_DESTINATION_CA_PATH", kindString, "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt", "CA bundle that verifies re-encrypt backends without a destinationCACertificate"},
		{"template", "TEMPLATE_FILE", kindString, "the embedded template", "template file rendered into haproxy.config"},
		{"reload", "RELOAD_SCRIPT", kindString, "the built-in reload", "script run to reload HAProxy"},
		{"interval", "RELOAD_INTERVAL", kindDuration, "5s", "minimum time between reloads; changes in between are coalesced"},
		{"bind-ports-after-sync", "ROUTER_BIND_PORTS_AFTER_SYNC", kindBool, "false", "bind the HTTP/HTTPS ports only once the initial sync is loaded"},
		{"max-connections", "ROUTER_MAX_CONNECTIONS", kindString, "50000", "HAProxy's global maxconn (auto: HAProxy's own)"},
		{"ciphers", "ROUTER_CIPHERS", kindString, "intermediate", "TLS ciphers of the frontends: modern, intermediate, old or a ':' list"},
		{"strict-sni", "ROUTER_STRICT_SNI", kindBool, "false", "refuse TLS connections whose SNI matches no certificate"},
		{"metrics-type", "ROUTER_METRICS_TYPE", kindString, "", "haproxy: serve HAProxy's and the router's metrics on the stats port"},
		{"haproxy-config-manager", "ROUTER_HAPROXY_CONFIG_MANAGER", kindBool, "false", "OpenShift's dynamic configuration manager (changes without reloads are built in here)"},
		{"commit-interval", "COMMIT_INTERVAL", kindDuration, "1h", "dynamic configuration manager's commit interval"},
		{"blueprint-route-namespace", "ROUTER_BLUEPRINT_ROUTE_NAMESPACE", kindString, "", "namespace of the dynamic configuration manager's blueprint routes"},
		{"blueprint-route-labels", "ROUTER_BLUEPRINT_ROUTE_LABELS", kindString, "", "label selector of the blueprint routes"},
		{"blueprint-route-pool-size", "ROUTER_BLUEPRINT_ROUTE_POOL_SIZE", kindInt, "10", "blueprint route pool size"},
		{"capture-http-request-headers", "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", kindString, "", "request headers to log: name:maxLength,..."},
		{"capture-http-response-headers", "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS", kindString, "", "response headers to log: name:maxLength,..."},
		{"capture-http-cookie", "ROUTER_CAPTURE_HTTP_COOKIE", kindString, "", "cookie to log: name[=]:maxLength"},
		{"http-header-name-case-adjustments", "ROUTER_H1_CASE_ADJUST", kindString, "", "HTTP/1 header names whose case is restored (comma-separated)"},
		{"set-delete-http-response-header", "ROUTER_HTTP_RESPONSE_HEADERS", kindString, "", "response headers to set or delete: name:value:Set or name:Delete, comma-separated, %-encoded"},
		{"set-delete-http-request-header", "ROUTER_HTTP_REQUEST_HEADERS", kindString, "", "request headers to set or delete: name:value:Set or name:Delete, comma-separated, %-encoded"},
		{"max-dynamic-servers", "ROUTER_MAX_DYNAMIC_SERVERS", kindInt, "5", "spare server slots per backend for endpoints added without a reload"},
		// Stats.
		{"stats-port", "STATS_PORT", kindString, "", "stats/metrics port; ignored if --listen-addr is given"},
		{"stats-user", "STATS_USERNAME", kindString, "", "user of the stats page and /metrics"},
		{"stats-password", "STATS_PASSWORD", kindString, "", "password of the stats page and /metrics"},
		{"stats-user-file", "STATS_USERNAME_FILE", kindString, "", "file with the stats user (used with --stats-password-file)"},
		{"stats-password-file", "STATS_PASSWORD_FILE", kindString, "", "file with the stats password (used with --stats-user-file)"},
		// Router selection.
		{"name", "ROUTER_SERVICE_NAME", kindString, "public", "name of this router in route status"},
		{"router-canonical-hostname", "ROUTER_CANONICAL_HOSTNAME", kindString, "", "external host name of the router, written into route status"},
		{"update-status", "ROUTER_UPDATE_STATUS", kindBool, "true", "write the status of admitted and rejected routes"},
		{"resync-interval", "ROUTER_RESYNC_INTERVAL", kindDuration, "30m", "interval of the full relist of the watched objects"},
		{"hostname-template", "ROUTER_SUBDOMAIN", kindString, "", "host of routes without spec.host, e.g. ${name}-${namespace}.apps.example.com"},
		{"router-domain", "ROUTER_DOMAIN", kindString, "", "domain of routes with spec.subdomain and without spec.host"},
		{"override-hostname", "ROUTER_OVERRIDE_HOSTNAME", kindBool, "false", "replace every route's host with --hostname-template"},
		{"override-domains", "ROUTER_OVERRIDE_DOMAINS", kindList, "", "domains whose route hosts are replaced with --hostname-template"},
		{"labels", "ROUTE_LABELS", kindString, "", "label selector of the routes to serve"},
		{"fields", "ROUTE_FIELDS", kindString, "", "field selector of the routes to serve"},
		{"project-labels", "PROJECT_LABELS", kindString, "", "label selector of the projects whose routes to serve ('*': all)"},
		{"namespace-labels", "NAMESPACE_LABELS", kindString, "", "label selector of the namespaces whose routes to serve"},
		{"denied-domains", "ROUTER_DENIED_DOMAINS", kindList, "", "domains whose routes are refused"},
		{"allowed-domains", "ROUTER_ALLOWED_DOMAINS", kindList, "", "if given, only routes in these domains are admitted"},
		{"allow-wildcard-routes", "ROUTER_ALLOW_WILDCARD_ROUTES", kindBool, "false", "admit routes with wildcardPolicy Subdomain"},
		{"disable-namespace-ownership-check", "ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", kindBool, "false", "let routes of different namespaces share a host or subdomain"},
		{"extended-validation", "EXTENDED_VALIDATION", kindBool, "true", "validate route certificates and keys"},
		{"upgrade-validation", "UPGRADE_VALIDATION", kindBool, "true", "OpenShift's upgrade validation of routes"},
		{"debug-upgrade-validation-force-add-condition", "DEBUG_UPGRADE_VALIDATION_FORCE_ADD_CONDITION", kindBool, "false", "testing: force the upgrade validation condition"},
		{"debug-upgrade-validation-force-remove-condition", "DEBUG_UPGRADE_VALIDATION_FORCE_REMOVE_CONDITION", kindBool, "false", "testing: force the removal of the upgrade validation condition"},
		{"listen-addr", "ROUTER_LISTEN_ADDR", kindString, "", "host:port of the metrics and health server; overrides --stats-port"},
		{"watch-endpoints", "ROUTER_WATCH_ENDPOINTS", kindBool, "false", "watch Endpoints instead of EndpointSlices"},
		{"allow-external-certificates", "ROUTER_ENABLE_EXTERNAL_CERTIFICATE", kindBool, "true", "routes may take their certificate from a secret (spec.tls.externalCertificate)"},
	}
}

// envFlags are the registered env-backed flags of one command.
type envFlags struct {
	fs    *pflag.FlagSet
	table []envFlag
	// value returns a flag's value written as its variable.
	value map[string]func() string
}

// registerEnvFlags registers the table's flags on fs, except those named in
// skip. The registered defaults are empty: a flag only counts when given.
func registerEnvFlags(fs *pflag.FlagSet, skip ...string) *envFlags {
	s := &envFlags{fs: fs, value: map[string]func() string{}}
	skipped := map[string]bool{}
	for _, n := range skip {
		skipped[n] = true
	}
	for _, e := range envFlagTable() {
		if skipped[e.name] {
			continue
		}
		usage := fmt.Sprintf("%s (env %s", e.usage, e.env)
		if e.def != "" && e.def != "false" {
			usage += "; default " + e.def
		}
		usage += ")"
		switch e.kind {
		case kindString:
			p := fs.String(e.name, "", usage)
			s.value[e.name] = func() string { return *p }
		case kindBool:
			p := fs.Bool(e.name, false, usage)
			s.value[e.name] = func() string { return strconv.FormatBool(*p) }
		case kindDuration:
			p := fs.Duration(e.name, 0, usage)
			s.value[e.name] = func() string { return p.String() }
		case kindInt:
			p := fs.Int(e.name, 0, usage)
			s.value[e.name] = func() string { return strconv.Itoa(*p) }
		case kindList:
			p := fs.StringSlice(e.name, nil, usage)
			s.value[e.name] = func() string { return strings.Join(*p, ",") }
		}
		s.table = append(s.table, e)
	}
	return s
}

// Getenv returns base overlaid with the flags given on the command line.
func (s *envFlags) Getenv(base config.Getenv) config.Getenv {
	overlay := map[string]string{}
	for _, e := range s.table {
		if s.fs.Changed(e.name) {
			overlay[e.env] = s.value[e.name]()
		}
	}
	return func(name string) (string, bool) {
		if v, ok := overlay[name]; ok {
			return v, true
		}
		return base(name)
	}
}

// upstreamFlags are OpenShift's flags of the running router: the env-backed
// ones, the client (kubeconfig) ones and those handled on their own.
type upstreamFlags struct {
	env *envFlags
	// config is --config, OpenShift's name for the kubeconfig file.
	config    string
	overrides clientcmd.ConfigOverrides
	// includeUDP is --include-udp-endpoints.
	includeUDP bool
}

// registerUpstreamFlags registers OpenShift's router flags on fs.
func registerUpstreamFlags(fs *pflag.FlagSet) *upstreamFlags {
	u := &upstreamFlags{env: registerEnvFlags(fs)}
	fs.BoolVar(&u.includeUDP, "include-udp-endpoints", false, "accepted for compatibility: HAProxy proxies TCP only, so UDP endpoint ports are never servers here")
	fs.Bool("enable-ingress", false, "Enable configuration via ingress resources.")
	_ = fs.MarkDeprecated("enable-ingress", "Ingress resources are now synchronized to routes automatically.")
	fs.StringVar(&u.config, "config", "", "kubeconfig file of the cluster to watch (same as --kubeconfig)")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// OpenShift's router does not register basic authentication flags.
	names.AuthOverrideFlags.Username.LongName = ""
	names.AuthOverrideFlags.Password.LongName = ""
	names.ContextOverrideFlags.Namespace.Description = "namespace whose routes, services and endpoints are watched (default: all namespaces)"
	clientcmd.BindOverrideFlags(&u.overrides, fs, names)
	return u
}

// Getenv is the environment overlaid with the flags given.
func (u *upstreamFlags) Getenv() config.Getenv {
	return u.env.Getenv(os.LookupEnv)
}

// namespace is --namespace without OpenShift's accepted type prefixes.
func (u *upstreamFlags) namespace() string {
	ns := u.overrides.Context.Namespace
	for _, p := range []string{"namespaces/", "namespace/", "ns/"} {
		ns = strings.TrimPrefix(ns, p)
	}
	return ns
}

// check refuses the combinations OpenShift refuses and logs the flags
// accepted without effect.
func (u *upstreamFlags) check(getenv config.Getenv, log logr.Logger) error {
	if u.namespace() != "" {
		if v, _ := getenv("PROJECT_LABELS"); v != "" {
			return errors.New("only one of --project-labels and --namespace may be used")
		}
		if v, _ := getenv("NAMESPACE_LABELS"); v != "" {
			return errors.New("only one of --namespace-labels and --namespace may be used")
		}
	}
	if u.includeUDP {
		log.Info("--include-udp-endpoints accepted without effect: HAProxy proxies TCP only, so UDP endpoint ports are never used as servers")
	}
	return nil
}

// restConfig is the client configuration from --config/--kubeconfig (or
// KUBECONFIG), the in-cluster service account, and the client flags
// (--server, --token, ...), as OpenShift's router builds it. It returns nil
// when none of them names a cluster.
func (u *upstreamFlags) restConfig(kubeconfig string) (*rest.Config, string, error) {
	if u.config != "" && kubeconfig != "" && u.config != kubeconfig {
		return nil, "", fmt.Errorf("--config %s and --kubeconfig %s: give one kubeconfig file", u.config, kubeconfig)
	}
	if kubeconfig == "" {
		kubeconfig = u.config
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	where := "kubeconfig " + kubeconfig
	if kubeconfig == "" {
		rules.Precedence = filepath.SplitList(os.Getenv("KUBECONFIG"))
		where = "KUBECONFIG " + os.Getenv("KUBECONFIG")
	}
	overrides := u.overrides
	overrides.Context.Namespace = u.namespace()
	overrides.ClusterDefaults = clientcmdapi.Cluster{Server: os.Getenv("KUBERNETES_MASTER")}
	inCluster := false
	if kubeconfig == "" && len(rules.Precedence) == 0 {
		switch {
		case overrides.ClusterInfo.Server != "" || overrides.ClusterDefaults.Server != "":
			where = "--server " + overrides.ClusterInfo.Server
			if overrides.ClusterInfo.Server == "" {
				where = "KUBERNETES_MASTER " + overrides.ClusterDefaults.Server
			}
		case os.Getenv("KUBERNETES_SERVICE_HOST") != "" && fileExists(inClusterTokenFile):
			where, inCluster = "in-cluster configuration", true
		default:
			return nil, "", nil
		}
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides).ClientConfig()
	if err != nil {
		if inCluster {
			return nil, "", fmt.Errorf("in-cluster configuration: %w", err)
		}
		return nil, "", fmt.Errorf("%s: %w", where, err)
	}
	return c, where, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// addKlogFlags adds klog's flags (-v/--v, --vmodule, --logtostderr, ...) to
// cmd and its subcommands, as OpenShift's router does.
func addKlogFlags(cmd *cobra.Command) {
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	cmd.PersistentFlags().AddGoFlagSet(gfs)
}

// newVersionCommand prints the version as OpenShift's router does, from the
// build information Go records.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Display version",
		Long:  "Display version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n\n%s\n", cmd.Root().Name(), versionString(debug.ReadBuildInfo()))
			return err
		},
	}
}

// versionString formats build information like OpenShift's version.String().
// OpenShift fills these fields with -ldflags -X at build time; here they come
// from what Go records in every build (runtime/debug.ReadBuildInfo): the
// commit (vcs.revision), its time (vcs.time) and whether the tree had local
// changes (vcs.modified). Go records them when it builds in a git checkout
// with -buildvcs=auto or true (the Makefile passes true); built otherwise,
// the fields are empty.
func versionString(info *debug.BuildInfo, ok bool) string {
	version, commit, state, date := "unknown", "", "", ""
	if ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					date = t.UTC().Format("2006-01-02T15:04:05Z")
				}
			case "vcs.modified":
				state = "clean"
				if s.Value == "true" {
					state = "dirty"
				}
			}
		}
	}
	return fmt.Sprintf("majorFromGit: \nminorFromGit: \ncommitFromGit: %s\nversionFromGit: %s\ngitTreeState: %s\nbuildDate: %s\n",
		commit, version, state, date)
}
