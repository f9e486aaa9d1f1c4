// Package conformance runs the Gateway API project's own conformance suite
// (sigs.k8s.io/gateway-api/conformance, the version go.mod requires) against
// the router: profiles GATEWAY-HTTP and GATEWAY-TLS, the features the router
// claims (gateway.SupportedFeatures), and writes the suite's report. `make
// conformance` runs it (about 5 minutes); `make test` runs it with the known
// failures skipped (conformance-check); `make unit` leaves it out.
//
// The cluster is test/kubetest's: etcd and kube-apiserver on loopback with
// the standard channel's Gateway CRDs, kube-controller-manager, and a test
// node whose Pods run echo-basic-compatible servers at their Pod IPs in a
// network namespace. The router runs in cluster mode with real HAProxy on
// free ports, and gives each Gateway a host name of its own under
// ROUTER_CANONICAL_HOSTNAME (ROUTER_GATEWAY_SUBDOMAIN) as its address; the
// suite's HTTP requests to those names' port 80 (443) are dialled to the
// router's HTTP (HTTPS) port on 127.0.0.1; its TLS tests, which dial
// themselves (and its WebSocket and h2c tests), get those names resolved
// (in-process, resolver_test.go) to an address of the test network
// namespace whose ports 443 and 80 forwarders pass to the router's HTTPS and
// HTTP ports on the host side. Nothing else is dialled.
//
// Environment:
//
//	CONFORMANCE_ROUTER_BIN      the router binary to test (default: built
//	                            from this checkout into the test's temp dir)
//	CONFORMANCE_ROUTER_VERSION  the implementation version in the report
//	                            (default: git describe --always --dirty of
//	                            this checkout, else "dev")
//	CONFORMANCE_REPORT          the report's path, relative to the repository
//	                            root (default bin/conformance-report.yaml)
//	CONFORMANCE_ROUTER_LOG      the router's log (default router.log in the
//	                            test's temp dir, removed with it)
//	CONFORMANCE_TRY_FEATURES    more features to run the tests of
//	                            (comma-separated names), beyond those claimed
//	CONFORMANCE_SKIP_KNOWN_FAILURES  if set, the tests of knownFailures are
//	                            skipped (make test)
//	CONFORMANCE_STATUS_LOG      every status the GatewayClasses, Gateways and
//	                            HTTPRoutes take during the run, one line each
//	                            (default status.log in the test's temp dir):
//	                            what the router wrote where a test only says
//	                            it timed out
//
// The suite's own flags go after -args (its package registers them on the
// global FlagSet), e.g. `go test ./test/conformance/ -run
// TestGatewayAPIConformance -args --run-test=HTTPRouteSimpleSameNamespace
// --debug`; the supported features, profile, class, implementation and
// report path are set here.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/prereq"
)

const (
	// gatewayClassName is the class the suite's Gateways name (its default).
	gatewayClassName = "gateway-conformance"
	// controllerName is the router's default ROUTER_GATEWAY_CONTROLLER_NAME.
	controllerName = "haproxy.router.openshift.io/gateway-controller"
	// canonicalHostname is the router's ROUTER_CANONICAL_HOSTNAME; each
	// Gateway's status address (type Hostname) is a name under it
	// (ROUTER_GATEWAY_SUBDOMAIN), the only hosts the suite's requests may
	// be dialled for.
	canonicalHostname = "gateway.conformance.test"
)

// TestGatewayAPIConformance runs the conformance suite, profile
// GATEWAY-HTTP with the core features, against the router and writes its
// report (CONFORMANCE_REPORT).
func TestGatewayAPIConformance(t *testing.T) {
	prereq.NeedBinary(t, "haproxy")
	root := repoRoot(t)
	bin := routerBinary(t, root)
	report := reportPath(t, root)

	began := time.Now()
	c := kubetest.Start(t, kubetest.WithGatewayCRDs(crdChannel), kubetest.WithControllerManager())
	netns := kubetest.NewNetNS(t)
	c.StartNode(t, netns, "conformance-node")
	t.Logf("cluster at %s, node in network namespace %s (%s), after %v", c.Host, netns.Name, netns.Subnet,
		time.Since(began).Round(time.Second))
	createGatewayClass(t, c)
	recordStatuses(t, c)
	r := startRouter(t, bin, c.KubeconfigPath)
	// The TLS, WebSocket and h2c tests dial the Gateways' addresses on
	// ports 443 and 80 directly: their names resolve to an address of the
	// test network namespace whose ports 443 and 80 are passed to the
	// router's HTTPS and HTTP ports (on the host side of the namespace's
	// link).
	gwIP := netns.AddAddress(t)
	netns.StartForwarder(t, gwIP, 443, "gateway-443", net.JoinHostPort(netns.HostIP, strconv.Itoa(r.httpsPort)))
	netns.StartForwarder(t, gwIP, 80, "gateway-80", net.JoinHostPort(netns.HostIP, strconv.Itoa(r.httpPort)))
	resolveGatewaysTo(t, netip.MustParseAddr(gwIP))

	opts := suiteOptions(t, c.KubeconfigPath, r, root, report)
	t.Logf("report: %s", report)
	t.Cleanup(func() { t.Logf("conformance run took %v", time.Since(began).Round(time.Second)) })
	conformance.RunConformanceWithOptions(t, opts)
}

// profiles are the conformance profiles run: HTTP and TLS (passthrough).
var profiles = []suite.ConformanceProfile{suite.GatewayHTTPConformanceProfile, suite.GatewayTLSConformanceProfile}

// claimedFeatures are the features of the profiles the router claims —
// those of gateway.SupportedFeatures (its GatewayClasses' status lists
// them) in a profile: the tests of the core ones and of the extended ones
// claimed run.
func claimedFeatures() []features.FeatureName {
	var out []features.FeatureName
	for _, f := range gateway.SupportedFeatures {
		name := features.FeatureName(f)
		for _, p := range profiles {
			if p.CoreFeatures.Has(name) || p.ExtendedFeatures.Has(name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// crdChannel is the channel of the Gateway API CRDs the run installs: the
// experimental one holds the fields of the experimental features claimed
// (HTTPRoute's retry); the standard channel's API server drops them.
const crdChannel = "experimental"

// knownFailures are the core tests the router fails, and why. With
// CONFORMANCE_SKIP_KNOWN_FAILURES set (make test) they are skipped (the
// report lists them so): the run then fails when any other test does.
var knownFailures = map[string]string{
	"TLSRouteHostnameIntersection": "the suite runs four Gateways at once whose TLSRoutes' hostnames overlap and expects each " +
		"Gateway's address to refuse the names of the others' routes; the router serves every Gateway on one address, " +
		"where TLS server names are one namespace (a *.com route of one Gateway takes non.matching.com for all)",
}

// suiteOptions are conformance.DefaultOptions (the suite's flags applied)
// for the cluster, with this router's class, features, profile,
// implementation, report and round tripper.
func suiteOptions(t *testing.T, kubeconfig string, r *router, root, report string) suite.ConformanceOptions {
	t.Helper()
	// DefaultOptions takes its clients from controller-runtime's
	// config.GetConfig: --kubeconfig, else $KUBECONFIG. (Not t.Setenv:
	// that forbids the suite's parallel subtests.)
	old, had := os.LookupEnv("KUBECONFIG")
	must(t, os.Setenv("KUBECONFIG", kubeconfig))
	t.Cleanup(func() {
		if had {
			_ = os.Setenv("KUBECONFIG", old)
		} else {
			_ = os.Unsetenv("KUBECONFIG")
		}
	})
	opts := conformance.DefaultOptions(t)
	opts.GatewayClassName = gatewayClassName
	opts.SupportedFeatures = claimedFeatures()
	for _, f := range strings.Split(os.Getenv("CONFORMANCE_TRY_FEATURES"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			opts.SupportedFeatures = append(opts.SupportedFeatures, features.FeatureName(f))
		}
	}
	opts.ExemptFeatures = nil
	opts.EnableAllSupportedFeatures = false
	for _, p := range profiles {
		opts.ConformanceProfiles = append(opts.ConformanceProfiles, p.Name)
	}
	opts.CleanupBaseResources = true
	// Two cores: the tests marked parallel run one after another too.
	opts.DisableParallelTests = true
	opts.Implementation = confv1.Implementation{
		Organization: "openshift-router-go",
		Project:      "router",
		URL:          "https://github.com/openshift-router-go/router",
		Version:      implementationVersion(root),
		Contact:      []string{"@openshift-router-go/maintainers"},
	}
	opts.ReportOutputPath = report
	if os.Getenv("CONFORMANCE_SKIP_KNOWN_FAILURES") != "" {
		for name, why := range knownFailures {
			t.Logf("skipped, known to fail: %s: %s", name, why)
			opts.SkipTests = append(opts.SkipTests, name)
		}
	}
	config.SetupTimeoutConfig(&opts.TimeoutConfig)
	opts.RoundTripper = &roundtripper.DefaultRoundTripper{
		Debug:             opts.Debug,
		TimeoutConfig:     opts.TimeoutConfig,
		CustomDialContext: r.dialGateway,
	}
	return opts
}

// dialGateway is the suite's dialer: a connection to the Gateways' address
// (a name under canonicalHostname: each Gateway's own) on port 80 goes to the router's HTTP port on
// 127.0.0.1, on port 443 to its HTTPS port; anything else is refused, so
// the suite never dials outside loopback.
func (r *router) dialGateway(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("conformance dialer: %s %q: %w", network, addr, err)
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h != canonicalHostname && !strings.HasSuffix(h, "."+canonicalHostname) {
		return nil, fmt.Errorf("conformance dialer: refusing %s %s: only the Gateways' address %s is dialled", network, addr, canonicalHostname)
	}
	var to int
	switch port {
	case "80":
		to = r.httpPort
	case "443":
		to = r.httpsPort
	default:
		return nil, fmt.Errorf("conformance dialer: refusing %s %s: only ports 80 and 443 are mapped to the router", network, addr)
	}
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("conformance dialer: refusing %s %s: TCP only", network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(to)))
}

// createGatewayClass creates the suite's GatewayClass for the router's
// controller; the suite waits for it to be Accepted.
func createGatewayClass(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	gc, err := gatewayclient.NewForConfig(c.RESTConfig)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = gc.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}, metav1.CreateOptions{})
	must(t, err)
}

// recordStatuses writes every status the GatewayClasses, Gateways and
// HTTPRoutes take (as JSON, without lastTransitionTime), and their
// deletions, to CONFORMANCE_STATUS_LOG, until the test ends.
func recordStatuses(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	path := os.Getenv("CONFORMANCE_STATUS_LOG")
	if path == "" {
		path = filepath.Join(t.TempDir(), "status.log")
	}
	f, err := os.Create(path)
	must(t, err)
	t.Logf("status log: %s", path)
	gc, err := gatewayclient.NewForConfig(c.RESTConfig)
	must(t, err)
	var mu sync.Mutex
	last := map[string]string{}
	write := func(kind string, obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		var m metav1.Object
		var status any
		switch o := obj.(type) {
		case *gatewayv1.GatewayClass:
			m, status = o, o.Status
		case *gatewayv1.Gateway:
			m, status = o, o.Status
		case *gatewayv1.HTTPRoute:
			m, status = o, o.Status
		default:
			return
		}
		key := kind + " " + m.GetNamespace() + "/" + m.GetName()
		b, err := json.Marshal(status)
		if err != nil {
			return
		}
		line := fmt.Sprintf("generation=%d status=%s", m.GetGeneration(), transitionTimes.ReplaceAll(b, nil))
		if deleted {
			line = "deleted"
		}
		mu.Lock()
		defer mu.Unlock()
		if last[key] == line {
			return
		}
		last[key] = line
		if deleted {
			delete(last, key)
		}
		fmt.Fprintf(f, "%s %s %s\n", time.Now().UTC().Format("15:04:05.000"), key, line)
	}
	factory := gatewayinformers.NewSharedInformerFactory(gc, 0)
	v1 := factory.Gateway().V1()
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"GatewayClass": v1.GatewayClasses().Informer(),
		"Gateway":      v1.Gateways().Informer(),
		"HTTPRoute":    v1.HTTPRoutes().Informer(),
	} {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { write(kind, obj, false) },
			UpdateFunc: func(_, obj any) { write(kind, obj, false) },
			DeleteFunc: func(obj any) { write(kind, obj, true) },
		})
		must(t, err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
		mu.Lock()
		defer mu.Unlock()
		f.Close()
	})
}

var transitionTimes = regexp.MustCompile(`"lastTransitionTime":"[^"]*",?`)

// router is the running router binary.
type router struct {
	cmd       *exec.Cmd
	logPath   string
	httpPort  int
	httpsPort int
	done      chan struct{}
	exitErr   error
}

// startRouter runs the router in cluster mode on free loopback ports, as
// test/e2e starts it, with ROUTER_CANONICAL_HOSTNAME, and waits until
// HAProxy listens on its HTTP port. The cleanup ends it (SIGTERM, then
// SIGKILL to its process group) and prints the end of its log if the test
// failed.
func startRouter(t *testing.T, bin, kubeconfig string) *router {
	t.Helper()
	ports, err := freeport.Ports(3)
	must(t, err)
	workDir, err := os.MkdirTemp("", "conf-rt") // short: HAProxy's sockets live there
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(workDir) })
	r := &router{httpPort: ports[0], httpsPort: ports[1], done: make(chan struct{})}
	r.logPath = os.Getenv("CONFORMANCE_ROUTER_LOG")
	if r.logPath == "" {
		r.logPath = filepath.Join(t.TempDir(), "router.log")
	}
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	must(t, err)
	t.Logf("router log: %s", r.logPath)

	r.cmd = exec.Command(bin, "--kubeconfig", kubeconfig, "--working-dir", workDir, "-v", "2")
	r.cmd.Env = append(kubetest.WithoutEnv(os.Environ(), "KUBECONFIG"),
		fmt.Sprintf("ROUTER_SERVICE_HTTP_PORT=%d", r.httpPort),
		fmt.Sprintf("ROUTER_SERVICE_HTTPS_PORT=%d", r.httpsPort),
		"RELOAD_INTERVAL=1s",
		"ROUTER_GRACEFUL_SHUTDOWN_DELAY=0s",
		"ROUTER_MAX_SHUTDOWN_TIMEOUT=10",
		"ROUTER_METRICS_TYPE=haproxy",
		fmt.Sprintf("ROUTER_LISTEN_ADDR=127.0.0.1:%d", ports[2]),
		"ROUTER_CANONICAL_HOSTNAME="+canonicalHostname,
		// Each Gateway its own host name (its status address): the
		// routes of listeners without a hostname apart from other
		// Gateways'.
		"ROUTER_GATEWAY_SUBDOMAIN=${name}-${namespace}."+canonicalHostname,
		"ROUTER_GATEWAY_CONTROLLER_NAME="+controllerName,
		// The suite gives each Gateway an address of its own; the router
		// has one: the Gateway whose HTTPS listener without a hostname
		// answers TLS clients naming hosts nobody has (the suite's
		// HTTPRouteHTTPSListener asks that of this one) is named, as an
		// administrator names it.
		"ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM="+suite.InfrastructureNamespace+"/same-namespace-with-https-listener",
	)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	// Its own process group (HAProxy with it), and SIGKILL if the test
	// process dies first.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := kubetest.StartCmd(r.cmd); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() {
		r.exitErr = r.cmd.Wait()
		logf.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		early := r.exited()
		r.stop(t)
		if early {
			t.Errorf("the router exited during the run: %v", r.exitErr)
		}
		if t.Failed() {
			t.Logf("router log %s, last 200 lines:\n%s", r.logPath, tail(r.logPath, 200))
		}
	})

	deadline := time.Now().Add(2 * time.Minute)
	for {
		conn, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.httpPort)), time.Second)
		if err == nil {
			conn.Close()
			return r
		}
		if r.exited() {
			t.Fatalf("the router exited: %v\n%s", r.exitErr, tail(r.logPath, 50))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router does not listen on 127.0.0.1:%d after 2m: %v\n%s", r.httpPort, err, tail(r.logPath, 50))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *router) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the router and waits up to 30 s, then sends SIGKILL
// to its process group (the router and its HAProxy processes).
func (r *router) stop(t *testing.T) {
	if r.exited() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return
	case <-time.After(30 * time.Second):
	}
	t.Errorf("the router (pid %d) did not stop within 30s after SIGTERM: killing its process group", r.cmd.Process.Pid)
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
}

// routerBinary is $CONFORMANCE_ROUTER_BIN, else the router built from the
// checkout at root into the test's temp dir.
func routerBinary(t *testing.T, root string) string {
	t.Helper()
	if bin := os.Getenv("CONFORMANCE_ROUTER_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		must(t, err)
		if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			t.Fatalf("CONFORMANCE_ROUTER_BIN=%s: not an executable file (%v)", bin, err)
		}
		t.Logf("router binary: %s (CONFORMANCE_ROUTER_BIN)", abs)
		return abs
	}
	bin := filepath.Join(t.TempDir(), "openshift-router")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/openshift-router")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the router in %s: %v\n%s", root, err, out)
	}
	t.Logf("router binary: built from %s", root)
	return bin
}

// repoRoot is the module's root directory (two levels above this file).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if ok {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		t.Fatalf("cannot find the repository root (go env GOMOD: %q, %v)", gomod, err)
	}
	return filepath.Dir(gomod)
}

// reportPath is $CONFORMANCE_REPORT (relative to root), else
// ROOT/bin/conformance-report.yaml; its directory is created.
func reportPath(t *testing.T, root string) string {
	t.Helper()
	p := os.Getenv("CONFORMANCE_REPORT")
	if p == "" {
		p = filepath.Join("bin", "conformance-report.yaml")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	return p
}

// implementationVersion is $CONFORMANCE_ROUTER_VERSION, else `git describe
// --always --dirty` of the checkout at root, else "dev".
func implementationVersion(root string) string {
	if v := os.Getenv("CONFORMANCE_ROUTER_VERSION"); v != "" {
		return v
	}
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		if v := strings.TrimSpace(string(out)); v != "" {
			return v
		}
	}
	return "dev"
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
