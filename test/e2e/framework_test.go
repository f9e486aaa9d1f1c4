// Package e2e runs the real openshift-router binary with a real HAProxy on a
// manifests directory and sends real HTTP/HTTPS requests through it.
package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/kubetest"
)

// routerBin is the binary built once for all tests.
var routerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "router-bin")
	if err != nil {
		panic(err)
	}
	if err := useHAProxyFromEnv(dir); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if _, err := prereq.Binary("haproxy"); err != nil {
		os.RemoveAll(dir)
		os.Exit(prereq.MainExit(err))
	}
	routerBin = filepath.Join(dir, "openshift-router")
	build := exec.Command("go", "build", "-o", routerBin, "../../cmd/openshift-router")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building openshift-router:", err)
		os.Exit(1)
	}
	code := kubetest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// haproxyEnv names another haproxy binary for every router the tests start
// and every haproxy they run themselves (`make test` runs the core tests
// again with HAProxy 3.0 from hack/haproxy3.sh this way). Unset: haproxy
// from PATH.
const haproxyEnv = "HAPROXY"

// useHAProxyFromEnv puts $HAPROXY first on PATH under the name haproxy (a
// symbolic link in dir), so the routers (--haproxy defaults to haproxy from
// PATH, and their haproxy's master re-executes itself by that name) and the
// tests' own exec of haproxy all run it. Nothing to do when it is unset.
func useHAProxyFromEnv(dir string) error {
	bin := os.Getenv(haproxyEnv)
	if bin == "" {
		return nil
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", haproxyEnv, bin, err)
	}
	version, err := haproxyVersion(abs)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", haproxyEnv, bin, err)
	}
	linkDir := filepath.Join(dir, "haproxy-from-env")
	if err := os.Mkdir(linkDir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(abs, filepath.Join(linkDir, "haproxy")); err != nil {
		return err
	}
	if err := os.Setenv("PATH", linkDir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: %s=%s: HAProxy %s for every router and haproxy run\n", haproxyEnv, abs, version)
	return nil
}

// haproxyVersion is the version `bin -v` reports (e.g. 3.0.11-1+deb13u4).
func haproxyVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -v: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	f := strings.Fields(string(out))
	if len(f) < 3 || f[0] != "HAProxy" || f[1] != "version" {
		return "", fmt.Errorf("%s -v does not tell a HAProxy version: %q", bin, bytes.TrimSpace(out))
	}
	return f[2], nil
}

// router is a running openshift-router under test.
type router struct {
	t          *testing.T
	cmd        *exec.Cmd
	Manifests  string
	WorkingDir string
	HTTPPort   int
	HTTPSPort  int
	log        *syncBuffer
	done       chan struct{}
	exitErr    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freePort returns a currently unused loopback TCP port.
func freePort(t *testing.T) int {
	t.Helper()
	// The kernel may hand the same ephemeral port out again once it is
	// closed: never give a test a port this process already gave out.
	for i := 0; i < 100; i++ {
		ports, err := freeport.Ports(1)
		if err != nil {
			t.Fatal(err)
		}
		port := ports[0]
		if _, dup := givenPorts.LoadOrStore(port, true); !dup {
			return port
		}
	}
	t.Fatal("no unused free port after 100 tries")
	return 0
}

// givenPorts holds the ports freePort returned.
var givenPorts sync.Map

// shortTempDir returns a temp dir with a short path (unix socket paths
// inside it must stay under 108 bytes).
func shortTempDir(t *testing.T, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// startRouter starts the binary on manifestsDir with extra env vars.
func startRouter(t *testing.T, manifestsDir string, env map[string]string, args ...string) *router {
	t.Helper()
	return startRouterWith(t, manifestsDir, env, append([]string{"--manifests", manifestsDir}, args...)...)
}

// startKubeRouter starts the binary on a cluster (kubeconfig) with extra env vars.
func startKubeRouter(t *testing.T, kubeconfig string, env map[string]string, args ...string) *router {
	t.Helper()
	return startRouterWith(t, "", env, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func startRouterWith(t *testing.T, manifestsDir string, env map[string]string, args ...string) *router {
	t.Helper()
	return startRouterWrapped(t, nil, manifestsDir, env, args...)
}

// startRouterWrapped is startRouterWith with the command line passed
// through wrap (e.g. to run the router under a pseudo-terminal).
func startRouterWrapped(t *testing.T, wrap func(argv []string) []string, manifestsDir string, env map[string]string, args ...string) *router {
	t.Helper()
	r := &router{
		t:          t,
		Manifests:  manifestsDir,
		WorkingDir: shortTempDir(t, "rt"),
		HTTPPort:   freePort(t),
		HTTPSPort:  freePort(t),
		log:        &syncBuffer{},
		done:       make(chan struct{}),
	}
	argv := append([]string{routerBin, "--working-dir", r.WorkingDir, "-v", "2"}, args...)
	if wrap != nil {
		argv = wrap(argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(kubetest.WithoutEnv(os.Environ(), "KUBECONFIG"),
		fmt.Sprintf("ROUTER_SERVICE_HTTP_PORT=%d", r.HTTPPort),
		fmt.Sprintf("ROUTER_SERVICE_HTTPS_PORT=%d", r.HTTPSPort),
		"RELOAD_INTERVAL=1s",
		// No load balancer to drain from; tests of the delay set their own.
		"ROUTER_GRACEFUL_SHUTDOWN_DELAY=0s",
		// HAProxy's soft stop within Stop's 20 s (OpenShift's default is
		// 30 s); tests of the timeout set their own.
		"ROUTER_MAX_SHUTDOWN_TIMEOUT=10",
	)
	// Metrics mode by default, as OpenShift's deployments run: the router's
	// own metrics and health server on a port of its own (outside metrics
	// mode HAProxy's stats listener would take 0.0.0.0:1936 in every
	// router). A test that sets ROUTER_METRICS_TYPE (even to "") or
	// STATS_PORT chooses the mode and port itself.
	if _, ok := env["ROUTER_METRICS_TYPE"]; !ok {
		cmd.Env = append(cmd.Env, "ROUTER_METRICS_TYPE=haproxy")
	}
	_, setsListen := env["ROUTER_LISTEN_ADDR"]
	_, setsStats := env["STATS_PORT"]
	if !setsListen && !setsStats {
		cmd.Env = append(cmd.Env, "ROUTER_LISTEN_ADDR="+metricsListenDefault(t))
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd = cmd
	go func() {
		r.exitErr = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("router log:\n%s", r.log.String())
		}
	})
	return r
}

// metricsListenDefault is a free loopback port for routers whose test
// does not look at metrics (port 0 would mean "no metrics server"). An
// IPv6 loopback port cannot collide with the IPv4 ports the tests pick for
// haproxy.
func metricsListenDefault(t *testing.T) string {
	// The router refuses a stats port equal to its HTTP or HTTPS port
	// whatever the addresses: a port of [::1] is given out once too.
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			break
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, dup := givenPorts.LoadOrStore(port, true); !dup {
			return fmt.Sprintf("[::1]:%d", port)
		}
	}
	return fmt.Sprintf("127.0.0.1:%d", freePort(t))
}

// Stop sends SIGTERM and waits (bounded) for the router, and checks that it
// took its haproxy processes with it.
func (r *router) Stop() {
	select {
	case <-r.done:
		return
	default:
	}
	pids := r.haproxyPIDs()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.t.Errorf("router did not stop within 20s after SIGTERM")
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			r.t.Errorf("haproxy process %d still running after the router stopped", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// haproxyPIDs lists the haproxy processes whose command line names this
// router's working directory.
func (r *router) haproxyPIDs() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		// A configuration check (haproxy -c) serves nothing.
		if bytes.Contains(cmdline, []byte("haproxy")) && bytes.Contains(cmdline, []byte(r.WorkingDir)) &&
			!bytes.Contains(cmdline, []byte("\x00-c\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Log returns what the router has logged so far.
func (r *router) Log() string { return r.log.String() }

// Exited reports whether the router process has ended, and how.
func (r *router) Exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.exitErr
	default:
		return false, nil
	}
}

// response is what a request through the router got.
type response struct {
	Status   int
	Body     string
	Header   http.Header
	PeerCert *x509.Certificate
}

func (resp response) backend() string {
	for _, f := range strings.Fields(resp.Body) {
		if strings.HasPrefix(f, "backend=") {
			return strings.TrimPrefix(f, "backend=")
		}
	}
	return ""
}

// httpGet sends a plain HTTP request for host+path to the router.
func (r *router) httpGet(host, path string) (response, error) {
	return doRequest(fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, path), host, nil)
}

// httpsGet sends an HTTPS request with SNI=host (unless sni is given as "")
// and returns the certificate the client was shown.
func (r *router) httpsGet(host, path string) (response, error) {
	return r.httpsGetSNI(host, host, path)
}

func (r *router) httpsGetSNI(sni, host, path string) (response, error) {
	return doRequest(fmt.Sprintf("https://127.0.0.1:%d%s", r.HTTPSPort, path), host, &tls.Config{
		ServerName:         sni,
		InsecureSkipVerify: true, // the tests inspect the certificate themselves
	})
}

func doRequest(url, host string, tlsConf *tls.Config) (response, error) {
	tr := &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true, ForceAttemptHTTP2: false}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return response{}, err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	out := response{Status: resp.StatusCode, Body: string(body), Header: resp.Header}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		out.PeerCert = resp.TLS.PeerCertificates[0]
	}
	return out, nil
}

// eventually retries fn until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		// The verdict is that of a check begun after the deadline: a
		// slow check begun before it may have seen the state before
		// the change it waits for.
		started := time.Now()
		if err = fn(); err == nil {
			return
		}
		if started.After(deadline) {
			t.Fatalf("%s: not true within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// expectBackend waits until a request answers from the named backend.
func expectBackend(t *testing.T, timeout time.Duration, get func() (response, error), want string) response {
	t.Helper()
	var last response
	eventually(t, timeout, "answer from "+want, func() error {
		resp, err := get()
		if err != nil {
			return err
		}
		last = resp
		if resp.Status != 200 || resp.backend() != want {
			return fmt.Errorf("got %d from %q: %.200s", resp.Status, resp.backend(), resp.Body)
		}
		return nil
	})
	return last
}

// expectStatus waits until a request answers with the status.
func expectStatus(t *testing.T, timeout time.Duration, get func() (response, error), want int) response {
	t.Helper()
	var last response
	eventually(t, timeout, fmt.Sprintf("status %d", want), func() error {
		resp, err := get()
		if err != nil {
			return err
		}
		last = resp
		if resp.Status != want {
			return fmt.Errorf("got %d from %q: %.200s", resp.Status, resp.backend(), resp.Body)
		}
		return nil
	})
	return last
}

// backend is a test HTTP(S) server on loopback that names itself.
type backend struct {
	Name string
	IP   string
	Port int
	srv  *httptest.Server
}

func handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend=%s host=%s path=%s x-forwarded-proto=%s tls=%v\n",
			name, r.Host, r.URL.RequestURI(), r.Header.Get("X-Forwarded-Proto"), r.TLS != nil)
	})
}

// startBackend starts a plain HTTP backend.
func startBackend(t *testing.T, name string) *backend {
	t.Helper()
	srv := httptest.NewServer(handler(name))
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// startTLSBackend starts an HTTPS backend with the given certificate.
func startTLSBackend(t *testing.T, name, certPEM, keyPEM string) *backend {
	t.Helper()
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler(name))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

func newBackend(t *testing.T, name string, srv *httptest.Server) *backend {
	addr := srv.Listener.Addr().(*net.TCPAddr)
	return &backend{Name: name, IP: addr.IP.String(), Port: addr.Port, srv: srv}
}

// manifests is a manifests directory the test writes to.
type manifests struct {
	t   *testing.T
	Dir string
}

func newManifests(t *testing.T) *manifests {
	return &manifests{t: t, Dir: t.TempDir()}
}

// Write writes a file atomically (as an editor or kubectl would).
func (m *manifests) Write(name, content string) {
	m.t.Helper()
	tmp := filepath.Join(m.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		m.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.Dir, name)); err != nil {
		m.t.Fatal(err)
	}
}

func (m *manifests) Remove(name string) {
	m.t.Helper()
	if err := os.Remove(filepath.Join(m.Dir, name)); err != nil {
		m.t.Fatal(err)
	}
}

// serviceYAML is a Service with an EndpointSlice for each of the given
// backends (all ready), in namespace ns.
func serviceYAML(ns, name string, backends ...*backend) string {
	pods := make([]pod, len(backends))
	for i, be := range backends {
		pods[i] = pod{be: be}
	}
	return podServiceYAML(ns, name, pods...)
}

// pod is an endpoint: a backend, and the pod it stands for ("" for none).
type pod struct {
	name string
	be   *backend
	// notReady marks the endpoint not ready (ready: false).
	notReady bool
}

// podServiceYAML is a Service with one EndpointSlice per pod (test backends
// listen on different ports); a named pod's endpoint refers to it, so the
// router names the server pod:<pod>:<service>:<port name>:<ip>:<port>.
func podServiceYAML(ns, name string, pods ...pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  ports:\n  - name: web\n    port: 80\n", name, ns)
	for i, p := range pods {
		fmt.Fprintf(&b, `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s-%d
  namespace: %s
  labels:
    kubernetes.io/service-name: %s
addressType: IPv4
ports:
- name: web
  port: %d
endpoints:
- addresses: ["%s"]
`, name, i, ns, name, p.be.Port, p.be.IP)
		if p.name != "" {
			fmt.Fprintf(&b, "  targetRef:\n    kind: Pod\n    name: %s\n    namespace: %s\n", p.name, ns)
		}
		if p.notReady {
			b.WriteString("  conditions:\n    ready: false\n")
		}
	}
	return b.String()
}

// routeYAML returns a Route; extra is YAML appended under spec (indented by 2).
func routeYAML(ns, name, host, path, service, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  host: %s\n", name, ns, host)
	if path != "" {
		fmt.Fprintf(&b, "  path: %s\n", path)
	}
	fmt.Fprintf(&b, "  to:\n    kind: Service\n    name: %s\n", service)
	b.WriteString(extra)
	return b.String()
}

// tlsYAML returns a spec.tls block.
func tlsYAML(termination, policy string, fields map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  tls:\n    termination: %s\n", termination)
	if policy != "" {
		fmt.Fprintf(&b, "    insecureEdgeTerminationPolicy: %s\n", policy)
	}
	for _, k := range []string{"certificate", "key", "caCertificate", "destinationCACertificate"} {
		if v, ok := fields[k]; ok {
			fmt.Fprintf(&b, "    %s: |\n", k)
			for _, l := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
				fmt.Fprintf(&b, "      %s\n", l)
			}
		}
	}
	return b.String()
}

var errNoCert = errors.New("no peer certificate")
