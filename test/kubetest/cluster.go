// Package kubetest is the end-to-end test infrastructure for the Kubernetes
// API source: a real etcd and a real kube-apiserver on loopback with the real
// Route CRD from the github.com/openshift/api module (Start, Shared), and test
// hosts in a network namespace that run HTTP backends (NewNetNS).
//
// Prerequisites, installed by `make test` (hack/test-deps.sh):
//   - etcd (Debian package etcd-server),
//   - kube-apiserver built by hack/kube-apiserver.sh and cached outside the
//     repository (see KubeAPIServerPath),
//   - root, for network namespaces.
//
// When one is missing the test fails naming it and how to install it; it is
// skipped only on the quick path (package prereq: make unit,
// ROUTER_TEST_QUICK=1).
//
// The cluster is an API server only unless a test asks for more: no
// kube-controller-manager, scheduler or nodes. Nothing creates
// EndpointSlices or Endpoints for a Service (tests write them, with their
// NetNS addresses: the API refuses loopback ones), no default service
// account appears in a namespace, and a deleted namespace is finalized by
// CreateNamespace's cleanup (DeleteNamespace), not by a controller. Service
// cluster IPs come from ServiceClusterIPRange (loopback). With
// WithControllerManager, kube-controller-manager (built by
// hack/kube-controller-manager.sh) runs too, and StartNode adds a node
// whose Pods run echo servers on NetNS addresses: Deployments,
// EndpointSlices made from Pods, as the Gateway API conformance suite
// needs them; WithGatewayCRDs installs the Gateway API's CRDs.
//
// Everything is ended and removed in t.Cleanup: processes by PID (and by
// Pdeathsig if the test process dies), temporary directories, network
// namespaces and links. Leftovers of a test process that was killed are
// removed by the next one.
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/testcerts"
)

// KubeVersion is the kube-apiserver version the tests run against; it must
// match hack/kube-apiserver.sh.
const KubeVersion = "v1.32.4"

// ServiceClusterIPRange is the API server's service IP range: loopback, so a
// ClusterIP is never routed off the machine.
const ServiceClusterIPRange = "127.1.0.0/16"

// Cluster is a running etcd and kube-apiserver with the Route CRD applied.
type Cluster struct {
	// KubeconfigPath is a kubeconfig file for the admin user (token auth,
	// the API server's CA), for the router binary's --kubeconfig.
	KubeconfigPath string
	// RESTConfig is the admin client configuration (from that kubeconfig).
	RESTConfig *rest.Config
	// Kube is a client for the core APIs.
	Kube kubernetes.Interface
	// Routes is a client for route.openshift.io.
	Routes routeclient.Interface
	// Dynamic is a dynamic client (CRDs, unstructured objects).
	Dynamic dynamic.Interface
	// Host is the API server's URL, https://127.0.0.1:PORT.
	Host string
	// Token is the admin bearer token (user admin, group system:masters).
	Token string
	// CAFile is the CA that signed the API server's serving certificate.
	CAFile string
	// EtcdURL is etcd's client URL, http://127.0.0.1:PORT.
	EtcdURL string
	// Dir is the cluster's temporary directory (certificates, logs).
	Dir string

	etcdDataDir string
	etcd        *process
	apiBin      string
	apiArgs     []string
	apiLog      string
	httpc       *http.Client
	routeCRD    bool

	mu                sync.Mutex
	apiserver         *process
	controllerManager *process
	stopOnce          sync.Once
}

// Option changes how Start starts a cluster.
type Option func(*options)

type options struct {
	apiserverFlags    []string
	noRouteCRD        bool
	authzWebhook      string
	controllerManager bool
	gatewayChannel    string
}

// WithAPIServerFlags adds flags to kube-apiserver's command line.
func WithAPIServerFlags(flags ...string) Option {
	return func(o *options) { o.apiserverFlags = append(o.apiserverFlags, flags...) }
}

// WithAuthorizationWebhook makes kube-apiserver ask the webhook at url
// (http or https on loopback; https is not verified) to authorize every
// request not made by system:masters, before RBAC
// (--authorization-mode=Webhook,RBAC), with authorization.k8s.io/v1
// SubjectAccessReviews and without caching its answers: a review it
// answers with neither allowed nor denied falls through to RBAC, and one
// it fails (HTTP 5xx, after kube-apiserver's retries) too, with the
// failure as the review's evaluationError.
func WithAuthorizationWebhook(url string) Option {
	return func(o *options) { o.authzWebhook = url }
}

// WithoutRouteCRD starts the cluster without applying the Route CRD.
func WithoutRouteCRD() Option {
	return func(o *options) { o.noRouteCRD = true }
}

// KubeAPIServerPath returns where the kube-apiserver binary is expected:
// $KUBE_APISERVER, else $KUBE_APISERVER_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test/kube-apiserver-v1.32.4
// (where hack/kube-apiserver.sh puts it).
func KubeAPIServerPath() string {
	return kubeBinaryPath("kube-apiserver", "KUBE_APISERVER", "KUBE_APISERVER_CACHE")
}

// Start starts etcd and kube-apiserver on loopback, applies the Route CRD and
// returns the cluster; t.Cleanup ends the processes and removes the files.
// It takes a few seconds once kube-apiserver is built.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	c, err := start(&o)
	if err != nil {
		prereq.Require(t, err)
	}
	t.Cleanup(c.shutdown)
	return c
}

func start(o *options) (c *Cluster, err error) {
	apiBin := KubeAPIServerPath()
	if st, serr := os.Stat(apiBin); serr != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, &prereq.Missing{Component: "kube-apiserver", Detail: fmt.Sprintf("%s not found at %s; "+
			"KUBE_APISERVER names another binary", KubeVersion, apiBin)}
	}
	etcdBin, lerr := prereq.Binary("etcd")
	if lerr != nil {
		return nil, lerr
	}
	began := time.Now()
	removeStaleDirs()
	dir, err := os.MkdirTemp("", tempPrefix(""))
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, apiBin: apiBin, apiLog: filepath.Join(dir, "kube-apiserver.log")}
	defer func() {
		if err != nil {
			c.shutdown()
			c = nil
		}
	}()

	// etcd's data goes to tmpfs when there is one: etcd fsyncs every write.
	dataParent := ""
	if st, serr := os.Stat("/dev/shm"); serr == nil && st.IsDir() {
		dataParent = "/dev/shm"
	}
	if c.etcdDataDir, err = os.MkdirTemp(dataParent, tempPrefix("e")); err != nil {
		return c, err
	}
	if err = c.startEtcd(etcdBin); err != nil {
		return c, err
	}
	if err = c.writeCredentials(); err != nil {
		return c, err
	}
	flags := o.apiserverFlags
	if o.authzWebhook != "" {
		var wf []string
		if wf, err = c.authzWebhookFlags(o.authzWebhook); err != nil {
			return c, err
		}
		flags = append(wf, flags...)
	}
	if err = c.startAPIServerFirst(flags); err != nil {
		return c, err
	}
	if err = c.makeClients(); err != nil {
		return c, err
	}
	if c.routeCRD = !o.noRouteCRD; c.routeCRD {
		if err = c.applyRouteCRD(); err != nil {
			return c, err
		}
	}
	if o.gatewayChannel != "" {
		if err = c.applyGatewayCRDs(o.gatewayChannel); err != nil {
			return c, err
		}
	}
	if o.controllerManager {
		if err = c.startControllerManager(); err != nil {
			return c, err
		}
	}
	if os.Getenv("KUBETEST_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "kubetest: cluster at %s ready in %v\n", c.Host, time.Since(began).Round(time.Millisecond))
	}
	return c, nil
}

func (c *Cluster) startEtcd(bin string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freeport.Ports(2)
		if err != nil {
			return err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		os.RemoveAll(c.etcdDataDir)
		p, err := startProcess("etcd", filepath.Join(c.Dir, "etcd.log"), bin,
			"--name=kubetest",
			"--data-dir="+c.etcdDataDir,
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=kubetest="+peer,
			"--initial-cluster-state=new",
			"--log-level=warn",
		)
		if err != nil {
			return err
		}
		hc := &http.Client{Timeout: 2 * time.Second}
		if err = waitHTTP(p, 30*time.Second, func() bool {
			resp, err := hc.Get(client + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}); err == nil {
			c.etcd, c.EtcdURL = p, client
			return nil
		}
		lastErr = fmt.Errorf("etcd did not become healthy: %v\n%s", err, p.logTail(30))
		_ = p.stop(5 * time.Second)
	}
	return lastErr
}

// waitHTTP polls ok every 100 ms until it is true, the process exits, or
// timeout passes.
func waitHTTP(p *process, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		if ok() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: not ready after %v", p.name, timeout)
}

// writeCredentials writes the serving certificate and its CA, the service
// account key pair and the token file.
func (c *Cluster) writeCredentials() error {
	ca, err := testcerts.NewCA("kubetest-ca", 24*time.Hour)
	if err != nil {
		return err
	}
	serving, err := ca.Issue("kube-apiserver", []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc"}, 24*time.Hour)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saPriv, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	c.Token = hex.EncodeToString(tok)
	c.CAFile = filepath.Join(c.Dir, "ca.crt")
	files := map[string][]byte{
		"ca.crt":      []byte(ca.CertPEM),
		"serving.crt": []byte(serving.CertPEM),
		"serving.key": []byte(serving.KeyPEM),
		"sa.key":      pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saPriv}),
		"sa.pub":      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"tokens.csv":  []byte(c.Token + ",admin,admin,system:masters\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), b, 0o600); err != nil {
			return err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca.CertPEM))
	c.httpc = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true},
	}
	return nil
}

func (c *Cluster) apiserverArgs(port int, extra []string) []string {
	d := c.Dir
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(d, "certs"),
		"--tls-cert-file=" + filepath.Join(d, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(d, "serving.key"),
		// Services get loopback cluster IPs: if anything ever dialled one
		// (e.g. an idled service's IP), it stays on this machine.
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--token-auth-file=" + filepath.Join(d, "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(d, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(d, "sa.key"),
		// No kube-controller-manager and no nodes: keep the apiserver from
		// publishing its own (loopback) address as an endpoint.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	mode := "--authorization-mode=RBAC"
	for _, f := range extra {
		if strings.HasPrefix(f, "--authorization-mode=") {
			mode = ""
		}
	}
	if mode != "" {
		args = append(args, mode)
	}
	return append(args, extra...)
}

// authzWebhookFlags writes the kubeconfig of an authorization webhook at
// url and returns kube-apiserver's flags to use it (WithAuthorizationWebhook).
func (c *Cluster) authzWebhookFlags(url string) ([]string, error) {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: authz
  cluster:
    server: %s
    insecure-skip-tls-verify: %t
users:
- name: apiserver
contexts:
- name: authz
  context:
    cluster: authz
    user: apiserver
current-context: authz
`, url, strings.HasPrefix(url, "https:"))
	p := filepath.Join(c.Dir, "authz-webhook.kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return []string{"--authorization-mode=Webhook,RBAC", "--authorization-webhook-config-file=" + p,
		"--authorization-webhook-version=v1",
		"--authorization-webhook-cache-authorized-ttl=0s", "--authorization-webhook-cache-unauthorized-ttl=0s"}, nil
}

// startAPIServerFirst picks a port and starts kube-apiserver, trying another
// port if the first was taken meanwhile.
func (c *Cluster) startAPIServerFirst(extra []string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freeport.Ports(1)
		if err != nil {
			return err
		}
		c.apiArgs = c.apiserverArgs(ports[0], extra)
		c.Host = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		if lastErr = c.runAPIServer(); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

// runAPIServer starts kube-apiserver with c.apiArgs and waits for /readyz.
func (c *Cluster) runAPIServer() error {
	p, err := startProcess("kube-apiserver", c.apiLog, c.apiBin, c.apiArgs...)
	if err != nil {
		return err
	}
	if err := waitHTTP(p, 90*time.Second, func() bool { return c.ready() }); err != nil {
		_ = p.stop(5 * time.Second)
		return fmt.Errorf("kube-apiserver: %v\n%s", err, p.logTail(40))
	}
	c.apiserver = p
	return nil
}

// ready reports whether /readyz answers ok.
func (c *Cluster) ready() bool {
	req, _ := http.NewRequest(http.MethodGet, c.Host+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.httpc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *Cluster) makeClients() error {
	cfg := clientcmdapi.NewConfig()
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: c.Token}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "kubetest"
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.KubeconfigPath); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	rc.UserAgent = "kubetest"
	c.RESTConfig = rc
	if c.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if c.Routes, err = routeclient.NewForConfig(rc); err != nil {
		return err
	}
	c.Dynamic, err = dynamic.NewForConfig(rc)
	return err
}

// StopAPIServer ends kube-apiserver (SIGTERM, then SIGKILL after 30 s);
// etcd keeps running and the API's data stays. A no-op when it is stopped.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver == nil {
		return nil
	}
	err := c.apiserver.stop(30 * time.Second)
	c.apiserver = nil
	return err
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// port with the same etcd, certificates and tokens, and waits until it is
// ready and serves routes. A no-op when it is running.
func (c *Cluster) StartAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver != nil && !c.apiserver.exited() {
		return nil
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		// The old listening socket may linger for a moment.
		if err = c.runAPIServer(); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil || !c.routeCRD {
		return err
	}
	return c.waitRoutesServed(60 * time.Second)
}

// APIServerRunning reports whether kube-apiserver is running.
func (c *Cluster) APIServerRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver != nil && !c.apiserver.exited()
}

// APIServerLog returns the path of kube-apiserver's log (all its runs).
func (c *Cluster) APIServerLog() string { return c.apiLog }

// shutdown ends kube-apiserver and etcd (by PID) and removes the files.
func (c *Cluster) shutdown() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		if c.controllerManager != nil {
			_ = c.controllerManager.stop(10 * time.Second)
			c.controllerManager = nil
		}
		if c.apiserver != nil {
			_ = c.apiserver.stop(10 * time.Second)
			c.apiserver = nil
		}
		c.mu.Unlock()
		if c.etcd != nil {
			_ = c.etcd.stop(10 * time.Second)
		}
		if c.etcdDataDir != "" {
			os.RemoveAll(c.etcdDataDir)
		}
		os.RemoveAll(c.Dir)
	})
}

// tempPrefix names kubetest's temporary directories kt<kind><pid>-…, so that
// removeStaleDirs can tell those of test processes that died.
func tempPrefix(kind string) string {
	return fmt.Sprintf("kt%s%d-", kind, os.Getpid())
}

var staleDirName = regexp.MustCompile(`^kt[en]?([0-9]+)-`)

// removeStaleDirs removes kubetest directories left by test processes that
// no longer exist (killed before their cleanup ran); etcd's in /dev/shm hold
// about 128 MB of memory each.
func removeStaleDirs() {
	for _, parent := range []string{os.TempDir(), "/dev/shm"} {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			m := staleDirName.FindStringSubmatch(e.Name())
			if m == nil || !e.IsDir() {
				continue
			}
			pid, err := strconv.Atoi(m[1])
			if err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
