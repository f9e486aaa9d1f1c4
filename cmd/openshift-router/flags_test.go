package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openshift-router-go/router/router/config"
)

// upstreamEnvOfFlag is OpenShift's openshift-router flag → environment
// variable mapping (pkg/cmd/infra/router: TemplateRouter, RouterStats and
// RouterSelection Bind), written out independently of envFlagTable.
// working-dir and resync-interval have no variable upstream; here they map
// to this router's ROUTER_WORKING_DIR and ROUTER_RESYNC_INTERVAL.
var upstreamEnvOfFlag = map[string]string{
	"working-dir":                       "ROUTER_WORKING_DIR",
	"default-certificate":               "DEFAULT_CERTIFICATE",
	"default-certificate-path":          "DEFAULT_CERTIFICATE_PATH",
	"default-certificate-dir":           "DEFAULT_CERTIFICATE_DIR",
	"default-destination-ca-path":       "DEFAULT_DESTINATION_CA_PATH",
	"template":                          "TEMPLATE_FILE",
	"reload":                            "RELOAD_SCRIPT",
	"interval":                          "RELOAD_INTERVAL",
	"bind-ports-after-sync":             "ROUTER_BIND_PORTS_AFTER_SYNC",
	"max-connections":                   "ROUTER_MAX_CONNECTIONS",
	"ciphers":                           "ROUTER_CIPHERS",
	"strict-sni":                        "ROUTER_STRICT_SNI",
	"metrics-type":                      "ROUTER_METRICS_TYPE",
	"haproxy-config-manager":            "ROUTER_HAPROXY_CONFIG_MANAGER",
	"commit-interval":                   "COMMIT_INTERVAL",
	"blueprint-route-namespace":         "ROUTER_BLUEPRINT_ROUTE_NAMESPACE",
	"blueprint-route-labels":            "ROUTER_BLUEPRINT_ROUTE_LABELS",
	"blueprint-route-pool-size":         "ROUTER_BLUEPRINT_ROUTE_POOL_SIZE",
	"capture-http-request-headers":      "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS",
	"capture-http-response-headers":     "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS",
	"capture-http-cookie":               "ROUTER_CAPTURE_HTTP_COOKIE",
	"http-header-name-case-adjustments": "ROUTER_H1_CASE_ADJUST",
	"set-delete-http-response-header":   "ROUTER_HTTP_RESPONSE_HEADERS",
	"set-delete-http-request-header":    "ROUTER_HTTP_REQUEST_HEADERS",
	"max-dynamic-servers":               "ROUTER_MAX_DYNAMIC_SERVERS",
	"stats-port":                        "STATS_PORT",
	"stats-password-file":               "STATS_PASSWORD_FILE",
	"stats-user-file":                   "STATS_USERNAME_FILE",
	"stats-password":                    "STATS_PASSWORD",
	"stats-user":                        "STATS_USERNAME",
	"name":                              "ROUTER_SERVICE_NAME",
	"router-canonical-hostname":         "ROUTER_CANONICAL_HOSTNAME",
	"update-status":                     "ROUTER_UPDATE_STATUS",
	"resync-interval":                   "ROUTER_RESYNC_INTERVAL",
	"hostname-template":                 "ROUTER_SUBDOMAIN",
	"router-domain":                     "ROUTER_DOMAIN",
	"override-hostname":                 "ROUTER_OVERRIDE_HOSTNAME",
	"override-domains":                  "ROUTER_OVERRIDE_DOMAINS",
	"labels":                            "ROUTE_LABELS",
	"fields":                            "ROUTE_FIELDS",
	"project-labels":                    "PROJECT_LABELS",
	"namespace-labels":                  "NAMESPACE_LABELS",
	"denied-domains":                    "ROUTER_DENIED_DOMAINS",
	"allowed-domains":                   "ROUTER_ALLOWED_DOMAINS",
	"allow-wildcard-routes":             "ROUTER_ALLOW_WILDCARD_ROUTES",
	"disable-namespace-ownership-check": "ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK",
	"extended-validation":               "EXTENDED_VALIDATION",
	"upgrade-validation":                "UPGRADE_VALIDATION",
	"debug-upgrade-validation-force-add-condition":    "DEBUG_UPGRADE_VALIDATION_FORCE_ADD_CONDITION",
	"debug-upgrade-validation-force-remove-condition": "DEBUG_UPGRADE_VALIDATION_FORCE_REMOVE_CONDITION",
	"listen-addr":                 "ROUTER_LISTEN_ADDR",
	"watch-endpoints":             "ROUTER_WATCH_ENDPOINTS",
	"allow-external-certificates": "ROUTER_ENABLE_EXTERNAL_CERTIFICATE",
}

// upstreamOtherFlags are OpenShift's flags without a variable: the client
// (kubeconfig) flags, --include-udp-endpoints, --enable-ingress and klog's.
var upstreamOtherFlags = []string{
	"include-udp-endpoints", "enable-ingress",
	"config", "server", "token", "certificate-authority", "client-certificate", "client-key",
	"insecure-skip-tls-verify", "tls-server-name", "proxy-url", "disable-compression",
	"as", "as-uid", "as-group", "cluster", "user", "namespace", "context", "request-timeout",
	"v", "vmodule", "log_dir", "log_file", "log_file_max_size", "logtostderr", "alsologtostderr",
	"stderrthreshold", "skip_headers", "skip_log_headers", "add_dir_header", "one_output", "log_backtrace_at",
}

// flagValue is a value of the flag's kind and what it means as a variable.
func flagValue(k flagKind) (arg, env string) {
	switch k {
	case kindBool:
		return "false", "false"
	case kindDuration:
		return "90s", "1m30s"
	case kindInt:
		return "17", "17"
	case kindList:
		return "a.example.com,b.example.com", "a.example.com,b.example.com"
	}
	return "from-flag", "from-flag"
}

func mapGetenv(m map[string]string) config.Getenv {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// rootFlags parses args (flags only) as the root command does and returns
// the flags it would run with and what it printed.
func rootFlags(t *testing.T, args ...string) (*cobra.Command, *upstreamFlags, *bytes.Buffer) {
	t.Helper()
	cmd, f := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return cmd, f.upstream, &out
}

func TestEveryUpstreamFlagIsRegisteredWithItsVariable(t *testing.T) {
	table := envFlagTable()
	seenFlag, seenEnv := map[string]bool{}, map[string]bool{}
	for _, e := range table {
		if seenFlag[e.name] || seenEnv[e.env] {
			t.Errorf("--%s / %s: listed twice", e.name, e.env)
		}
		seenFlag[e.name], seenEnv[e.env] = true, true
		if want, ok := upstreamEnvOfFlag[e.name]; !ok {
			t.Errorf("--%s: not an OpenShift router flag", e.name)
		} else if e.env != want {
			t.Errorf("--%s maps to %s, OpenShift's is %s", e.name, e.env, want)
		}
	}
	for name := range upstreamEnvOfFlag {
		if !seenFlag[name] {
			t.Errorf("--%s: missing from envFlagTable", name)
		}
	}
	root := newRootCommand()
	for name := range upstreamEnvOfFlag {
		if root.Flags().Lookup(name) == nil {
			t.Errorf("--%s: not registered on openshift-router", name)
		}
	}
	for _, name := range upstreamOtherFlags {
		if root.Flags().Lookup(name) == nil && root.PersistentFlags().Lookup(name) == nil {
			t.Errorf("--%s: not registered on openshift-router", name)
		}
	}
	for _, name := range []string{"username", "password"} {
		if root.Flags().Lookup(name) != nil {
			t.Errorf("--%s: OpenShift's router has no such flag", name)
		}
	}
	if f := root.Flags().ShorthandLookup("n"); f == nil || f.Name != "namespace" {
		t.Errorf("-n is not --namespace")
	}
	if f := root.PersistentFlags().ShorthandLookup("v"); f == nil || f.Name != "v" {
		t.Errorf("-v is not klog's --v")
	}
	// This router's own flags keep working.
	for _, name := range []string{"manifests", "kubeconfig", "haproxy"} {
		if root.Flags().Lookup(name) == nil {
			t.Errorf("--%s: no longer registered", name)
		}
	}
}

func TestFlagBeatsVariableAndVariableAppliesWithoutFlag(t *testing.T) {
	for _, e := range envFlagTable() {
		t.Run(e.name, func(t *testing.T) {
			arg, want := flagValue(e.kind)
			env := map[string]string{e.env: "from-env"}

			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			s := registerEnvFlags(fs)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			if v, ok := s.Getenv(mapGetenv(env))(e.env); !ok || v != "from-env" {
				t.Errorf("without the flag: %s = %q, %v; want the variable's from-env", e.env, v, ok)
			}
			if v, ok := s.Getenv(mapGetenv(nil))(e.env); ok {
				t.Errorf("with neither: %s = %q, want unset", e.env, v)
			}

			fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
			s = registerEnvFlags(fs)
			if err := fs.Parse([]string{"--" + e.name + "=" + arg}); err != nil {
				t.Fatal(err)
			}
			getenv := s.Getenv(mapGetenv(env))
			if v, ok := getenv(e.env); !ok || v != want {
				t.Errorf("--%s=%s: %s = %q, %v; want %q", e.name, arg, e.env, v, ok, want)
			}
			if v, ok := getenv("SOME_OTHER_VARIABLE"); ok {
				t.Errorf("an unrelated variable became %q", v)
			}
		})
	}
}

func TestBoolFlagWithoutValueMeansTrue(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	s := registerEnvFlags(fs)
	if err := fs.Parse([]string{"--strict-sni", "--update-status=false"}); err != nil {
		t.Fatal(err)
	}
	getenv := s.Getenv(mapGetenv(map[string]string{"ROUTER_STRICT_SNI": "false", "ROUTER_UPDATE_STATUS": "true"}))
	for name, want := range map[string]string{"ROUTER_STRICT_SNI": "true", "ROUTER_UPDATE_STATUS": "false"} {
		if v, _ := getenv(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
}

func TestListFlagIsRepeatable(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	s := registerEnvFlags(fs)
	if err := fs.Parse([]string{"--allowed-domains=a.example.com", "--allowed-domains", "b.example.com,c.example.com"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Getenv(mapGetenv(nil))("ROUTER_ALLOWED_DOMAINS"); v != "a.example.com,b.example.com,c.example.com" {
		t.Errorf("ROUTER_ALLOWED_DOMAINS = %q", v)
	}
}

func TestFlagValuesReachTheConfiguration(t *testing.T) {
	_, u, _ := rootFlags(t,
		"--allowed-domains=apps.example.com", "--denied-domains", "bad.apps.example.com",
		"--max-connections=1234", "--interval=7s", "--working-dir=/srv/router",
		"--template=/srv/t.tmpl", "--reload=/srv/reload.sh", "--name=shard-a",
		"--resync-interval=2m", "--update-status=false", "--stats-port=1937",
		"--stats-user=admin", "--stats-password=secret", "--listen-addr=127.0.0.1:1938",
		"--hostname-template=${name}-${namespace}.apps.example.com", "--labels=shard=a",
		"--allow-wildcard-routes", "--strict-sni")
	env := map[string]string{
		"ROUTER_ALLOWED_DOMAINS": "other.example.org", // the flag wins
		"RELOAD_INTERVAL":        "1s",
		"ROUTER_SERVICE_NAME":    "from-env",
	}
	cfg, err := config.FromEnv(u.env.Getenv(mapGetenv(env)))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"allowed domains", cfg.Admission.AllowedDomains, []string{"apps.example.com"}},
		{"denied domains", cfg.Admission.DeniedDomains, []string{"bad.apps.example.com"}},
		{"max connections", cfg.MaxConnections, 1234},
		{"reload interval", cfg.ReloadInterval, 7 * time.Second},
		{"working dir", cfg.WorkingDir, "/srv/router"},
		{"template", cfg.TemplateFile, "/srv/t.tmpl"},
		{"reload script", cfg.ReloadScript, "/srv/reload.sh"},
		{"router name", cfg.Kube.RouterName, "shard-a"},
		{"resync", cfg.Kube.ResyncInterval, 2 * time.Minute},
		{"update status", cfg.Kube.UpdateStatus, false},
		// ROUTER_LISTEN_ADDR's port wins over STATS_PORT, as upstream.
		{"stats port", cfg.StatsPort, 1938},
		{"stats user", cfg.StatsUser, "admin"},
		{"stats password", cfg.StatsPassword, "secret"},
		{"listen addr", cfg.Metrics.ListenAddr, "127.0.0.1:1938"},
		{"subdomain", cfg.Kube.Subdomain, "${name}-${namespace}.apps.example.com"},
		{"route labels", cfg.Kube.RouteLabels.String(), "shard=a"},
		{"wildcards", cfg.Admission.AllowWildcardRoutes, true},
		{"strict sni", cfg.HAProxy.StrictSNI, true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

// TestMalformedFlagValueIsJudgedByTheConfiguration: a flag's value goes
// through the same validation as its variable — ignored with a warning
// where OpenShift ignores it, refused where OpenShift refuses it.
func TestMalformedFlagValueIsJudgedByTheConfiguration(t *testing.T) {
	_, u, _ := rootFlags(t, "--allowed-domains=*.example.com")
	cfg, err := config.FromEnv(u.env.Getenv(mapGetenv(nil)))
	if err != nil {
		t.Fatalf("--allowed-domains=*.example.com: refused: %v", err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "ROUTER_ALLOWED_DOMAINS") {
		t.Fatalf("--allowed-domains=*.example.com: warnings %q, want one naming ROUTER_ALLOWED_DOMAINS", cfg.Warnings)
	}
	_, u, _ = rootFlags(t, "--labels=a in (")
	if _, err := config.FromEnv(u.env.Getenv(mapGetenv(nil))); err == nil || !strings.Contains(err.Error(), "ROUTE_LABELS") {
		t.Fatalf("--labels='a in (': err = %v, want one naming ROUTE_LABELS", err)
	}
}

func TestFlagErrorsAsOpenShift(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--foo"}, "unknown flag: --foo"},
		{[]string{"-x"}, "unknown shorthand flag: 'x' in -x"},
		{[]string{"--stats-port"}, "flag needs an argument: --stats-port"},
		{[]string{"--interval=abc"}, `invalid argument "abc" for "--interval" flag`},
		{[]string{"--blueprint-route-pool-size=x"}, `invalid argument "x" for "--blueprint-route-pool-size" flag`},
		{[]string{"foo"}, `unknown command "foo" for "openshift-router"`},
		{[]string{"render", "--foo"}, "unknown flag: --foo"},
	} {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.args, err, c.want)
		}
		if strings.Contains(out.String(), "Usage:") {
			t.Errorf("%q: printed the usage, OpenShift does not:\n%s", c.args, out.String())
		}
	}
}

func TestEnableIngressIsDeprecatedNoOp(t *testing.T) {
	_, _, out := rootFlags(t, "--enable-ingress")
	want := "Flag --enable-ingress has been deprecated, Ingress resources are now synchronized to routes automatically."
	if !strings.Contains(out.String(), want) {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	help := newRootCommand()
	var b bytes.Buffer
	help.SetOut(&b)
	_ = help.Usage()
	if strings.Contains(b.String(), "enable-ingress") {
		t.Errorf("--enable-ingress is shown in the help; OpenShift hides it")
	}
}

func TestRenderAndCheckTakeTheEnvBackedFlags(t *testing.T) {
	render, check := newRenderCommand(), newCheckCommand()
	for _, e := range envFlagTable() {
		if render.Flags().Lookup(e.name) == nil {
			t.Errorf("render: --%s missing", e.name)
		}
		if e.name == "working-dir" {
			continue // check renders into a temporary directory or --keep
		}
		if check.Flags().Lookup(e.name) == nil {
			t.Errorf("check: --%s missing", e.name)
		}
	}
	if check.Flags().Lookup("working-dir") != nil {
		t.Errorf("check: --working-dir registered; check uses --keep")
	}
}

func TestNamespaceExcludesNamespaceAndProjectLabels(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--namespace=team-a", "--namespace-labels=shard=a"}, nil, "only one of --namespace-labels and --namespace may be used"},
		{[]string{"-n", "team-a"}, map[string]string{"PROJECT_LABELS": "shard=a"}, "only one of --project-labels and --namespace may be used"},
		{[]string{"--namespace=team-a"}, nil, ""},
		{[]string{"--namespace-labels=shard=a"}, nil, ""},
	} {
		_, u, _ := rootFlags(t, c.args...)
		err := u.check(u.env.Getenv(mapGetenv(c.env)), logr.Discard())
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("%q %v: err = %v, want %q", c.args, c.env, err, c.want)
		}
	}
}

func TestNamespaceDropsTypePrefixes(t *testing.T) {
	for _, ns := range []string{"team-a", "ns/team-a", "namespace/team-a", "namespaces/team-a"} {
		_, u, _ := rootFlags(t, "--namespace="+ns)
		if got := u.namespace(); got != "team-a" {
			t.Errorf("--namespace=%s: %q, want team-a", ns, got)
		}
	}
}

func TestClientFlagsBuildTheClusterConfiguration(t *testing.T) {
	for _, v := range []string{"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_MASTER"} {
		t.Setenv(v, "")
	}
	_, u, _ := rootFlags(t)
	if c, _, err := u.restConfig(""); c != nil || err != nil {
		t.Errorf("no flags, no KUBECONFIG, not in a pod: config %v, err %v; want neither", c, err)
	}

	_, u, _ = rootFlags(t, "--server=https://127.0.0.1:6443", "--token=abc", "--insecure-skip-tls-verify", "--request-timeout=7s")
	c, _, err := u.restConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "https://127.0.0.1:6443" || c.BearerToken != "abc" || !c.Insecure || c.Timeout != 7*time.Second {
		t.Errorf("config host %q token %q insecure %v timeout %s", c.Host, c.BearerToken, c.Insecure, c.Timeout)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: u
  user: {token: from-file}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--config=" + kubeconfig}, {"--kubeconfig=" + kubeconfig}} {
		cmd, u, _ := rootFlags(t, append(args, "--token=from-flag")...)
		kc, _ := cmd.Flags().GetString("kubeconfig")
		c, _, err = u.restConfig(kc)
		if err != nil {
			t.Fatal(err)
		}
		if c.Host != "https://127.0.0.1:7443" || c.BearerToken != "from-flag" {
			t.Errorf("%q: host %q token %q; want the file's server and the flag's token", args, c.Host, c.BearerToken)
		}
	}
	_, u, _ = rootFlags(t, "--config="+kubeconfig)
	if _, _, err := u.restConfig("/other/kubeconfig"); err == nil {
		t.Errorf("--config and a different --kubeconfig: no error")
	}
}

func TestVersionPrintsBuildInformation(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abc"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	want := "majorFromGit: \nminorFromGit: \ncommitFromGit: 0123abc\nversionFromGit: unknown\ngitTreeState: dirty\nbuildDate: 2025-01-02T03:04:05Z\n"
	if got := versionString(info, true); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "openshift-router\n\nmajorFromGit: ") || !strings.Contains(out.String(), "versionFromGit: ") {
		t.Errorf("version printed %q", out.String())
	}
}
