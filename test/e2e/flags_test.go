package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openshift-router-go/router/test/kubetest"
)

// TestUpstreamFlagsConfigureTheRouter starts the router with OpenShift's
// command-line flags instead of their variables (some variables set to
// other values, which the flags must beat) and checks each flag's effect:
// --allowed-domains rejects a route outside the domain, --listen-addr and
// --metrics-type serve the metrics there behind --stats-user and
// --stats-password, --template renders the given template, --working-dir
// holds the files, --interval sets the reload interval, --enable-ingress is
// a deprecated no-op.
func TestUpstreamFlagsConfigureTheRouter(t *testing.T) {
	in, out := startBackend(t, "in"), startBackend(t, "out")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("fl", "in", in)+"---\n"+serviceYAML("fl", "out", out))
	m.Write("routes.yaml", routeYAML("fl", "in", "in.apps.example.com", "", "in", "")+"---\n"+
		routeYAML("fl", "out", "out.other.example.org", "", "out", ""))

	// The embedded template with a marker, as a custom template.
	def, err := exec.Command(routerBin, "template", "default").Output()
	must(t, err)
	const marker = "# rendered from the --template file"
	define := `{{- define "/var/lib/haproxy/conf/haproxy.config" -}}`
	if !strings.Contains(string(def), define) {
		t.Fatalf("the default template has no %s", define)
	}
	tmpl := filepath.Join(t.TempDir(), "custom.tmpl")
	must(t, os.WriteFile(tmpl, []byte(strings.Replace(string(def), define, define+"\n"+marker, 1)), 0o644))

	workingDir := shortTempDir(t, "fw")
	ms := &metricsClient{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), user: "scraper", password: "fl4gs"}
	env := map[string]string{
		// The flags below beat these.
		"ROUTER_ALLOWED_DOMAINS":                      "other.example.org",
		"ROUTER_LISTEN_ADDR":                          "[::1]:0",
		"STATS_USERNAME":                              "env-user",
		"ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL": "1s",
	}
	r := startRouter(t, m.Dir, env,
		"--allowed-domains=apps.example.com",
		"--metrics-type=haproxy",
		"--listen-addr="+ms.addr,
		"--stats-user="+ms.user, "--stats-password="+ms.password,
		"--template", tmpl,
		"--working-dir="+workingDir,
		"--interval=2s",
		"--enable-ingress",
		"--include-udp-endpoints",
	)
	// The last --working-dir wins over the framework's own.
	r.WorkingDir = workingDir

	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("in.apps.example.com", "/") }, "in")
	resp, err := r.httpGet("out.other.example.org", "/")
	must(t, err)
	if resp.Status != http.StatusServiceUnavailable {
		t.Errorf("route outside --allowed-domains: got %d from %q, want 503", resp.Status, resp.backend())
	}
	expectLogLine(t, r, `host="out.other.example.org"`, `reason="RouteNotAdmitted"`, `message="host not in the allowed list of domains"`)

	cfg, err := os.ReadFile(filepath.Join(workingDir, "conf", "haproxy.config"))
	must(t, err)
	if !strings.Contains(string(cfg), marker) {
		t.Errorf("haproxy.config in --working-dir was not rendered from --template")
	}
	expectLogLine(t, r, `"router started"`, `reloadInterval="2s"`, `workingDir="`+workingDir+`"`)
	expectLogLine(t, r, "Flag --enable-ingress has been deprecated, Ingress resources are now synchronized to routes automatically.")
	expectLogLine(t, r, "--include-udp-endpoints accepted without effect")

	if st, body, err := ms.status("/metrics", false); err != nil || st != http.StatusUnauthorized {
		t.Errorf("/metrics on --listen-addr without credentials: %d %.100q %v; want 401", st, body, err)
	}
	eventually(t, loadTimeout, "HAProxy's metrics on --listen-addr with the --stats-user/--stats-password credentials", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("haproxy_up", nil); err == nil && v == 1 {
			return nil
		}
		if v, err := s.value("haproxy_exporter_up", nil); err != nil || v != 1 {
			return fmt.Errorf("neither haproxy_up nor haproxy_exporter_up is 1: %v %v", v, err)
		}
		return nil
	})
}

// TestUpstreamFlagErrors: an unknown flag or argument exits 1 with
// OpenShift's message and nothing else; version prints the version.
func TestUpstreamFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--foo"}, "error: unknown flag: --foo\n"},
		{[]string{"--manifests", "/nonexistent", "--stats-port"}, "error: flag needs an argument: --stats-port\n"},
		{[]string{"--interval=soon"}, "error: invalid argument \"soon\" for \"--interval\" flag: time: invalid duration \"soon\"\n"},
	} {
		cmd := exec.Command(routerBin, c.args...)
		output, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%q: exit %v, want status 1", c.args, err)
		}
		if string(output) != c.want {
			t.Errorf("%q printed %q, want %q", c.args, output, c.want)
		}
	}
	output, err := exec.Command(routerBin, "version").Output()
	must(t, err)
	if !strings.HasPrefix(string(output), "openshift-router\n\nmajorFromGit: ") || !strings.Contains(string(output), "\nversionFromGit: ") {
		t.Errorf("version printed %q", output)
	}
}

// TestRenderTakesTheRouterFlags: render reads the same flags as the
// router: --allowed-domains rejects the route outside the domain.
func TestRenderTakesTheRouterFlags(t *testing.T) {
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("fl", "in", &backend{Name: "in", IP: "127.0.0.1", Port: 8080}))
	m.Write("routes.yaml", routeYAML("fl", "in", "in.apps.example.com", "", "in", "")+"---\n"+
		routeYAML("fl", "out", "out.other.example.org", "", "in", ""))
	cmd := exec.Command(routerBin, "render", "--manifests", m.Dir, "--allowed-domains", "apps.example.com", "--working-dir", "/srv/flags")
	cmd.Env = append(kubetest.WithoutEnv(os.Environ(), "ROUTER_ALLOWED_DOMAINS"), "ROUTER_ALLOWED_DOMAINS=other.example.org")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	must(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("render: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("render did not finish within 30s")
	}
	if want := "# rejected fl/out"; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "host not in the allowed list of domains") {
		t.Errorf("render with --allowed-domains did not reject fl/out:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "# routes: 1 admitted, 1 rejected") {
		t.Errorf("render summary:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "/srv/flags/") {
		t.Errorf("haproxy.config does not refer to --working-dir /srv/flags")
	}
}

// TestKubeNamespaceFlagLimitsTheWatch: against a real API server, a router
// given the cluster with OpenShift's --config and --namespace serves the
// routes of that namespace only; --namespace with --namespace-labels is
// refused as OpenShift refuses it.
func TestKubeNamespaceFlagLimitsTheWatch(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod")
	nsA := c.CreateNamespace(t, "flag-ns-a-", nil).Name
	nsB := c.CreateNamespace(t, "flag-ns-b-", nil).Name
	for _, ns := range []string{nsA, nsB} {
		kubeService(t, c, ns, "web", b)
		kubeRoute(t, c, ns, "web", "web-"+ns+".example.com", "web", nil)
	}
	r := startRouterWith(t, "", nil, "--config", c.KubeconfigPath, "--namespace", nsA, "--name", "flag-ns")
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("web-"+nsA+".example.com", "/") }, "pod")
	ingressOf(t, c, nsA, "web", "flag-ns", admitted(corev1.ConditionTrue, ""))
	if resp, err := r.httpGet("web-"+nsB+".example.com", "/"); err != nil || resp.Status != http.StatusServiceUnavailable {
		t.Errorf("route of another namespace served with --namespace %s: %d %v", nsA, resp.Status, err)
	}
	expectLogLine(t, r, `"router started"`, `namespace="`+nsA+`"`)

	refused := startRouterWith(t, "", nil, "--config", c.KubeconfigPath, "-n", nsA, "--namespace-labels", "team=a")
	eventually(t, 10*time.Second, "router exits", func() error {
		if exited, _ := refused.Exited(); !exited {
			return errString("still running")
		}
		return nil
	})
	if _, err := refused.Exited(); err == nil {
		t.Error("--namespace with --namespace-labels: exit 0")
	}
	if !strings.Contains(refused.Log(), "error: only one of --namespace-labels and --namespace may be used") {
		t.Errorf("--namespace with --namespace-labels:\n%s", refused.Log())
	}
}
