package kubetest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/openshift-router-go/router/test/testcerts"
)

const echoImage = "registry.k8s.io/gateway-api/echo-basic:v1.5.1"

// echoDeployment is a Deployment of echo-basic as the Gateway API
// conformance suite's base manifests write them.
func echoDeployment(name string, replicas int32, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{
		Name: name, Image: echoImage,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
	}}}
	if mutate != nil {
		mutate(&spec)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// withCertificate mounts the TLS Secret secret as the suite's base
// manifests do (/etc/secret-volume/crt and key) and names the files in
// TLS_SERVER_CERT and keyEnv (echo-basic's HTTP server reads
// TLS_SERVER_PRIVKEY, its TCP server TLS_SERVER_PRIV_KEY).
func withCertificate(secret, keyEnv string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env,
			corev1.EnvVar{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"},
			corev1.EnvVar{Name: keyEnv, Value: "/etc/secret-volume/key"})
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume"}}
		s.Volumes = []corev1.Volume{{Name: "secret-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret,
			Items:      []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}}}}}}
	}
}

func echoService(name string, port, target int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}}},
	}
}

// readyAddresses waits until the Service's EndpointSlices list want ready
// endpoints, and returns their addresses.
func readyAddresses(t *testing.T, c *Cluster, ns, svc string, want int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		got = nil
		slices, err := c.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx(t), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err == nil {
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						got = append(got, e.Addresses...)
					}
				}
			}
		}
		if len(got) == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s/%s: %d ready endpoints %v after 90s, want %d (%v)", ns, svc, len(got), got, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// echoAnswer is what echo-pod answers (echo-basic's JSON, the fields the
// conformance suite reads).
type echoAnswer struct {
	Path      string              `json:"path"`
	Host      string              `json:"host"`
	Method    string              `json:"method"`
	Headers   map[string][]string `json:"headers"`
	Namespace string              `json:"namespace"`
	Pod       string              `json:"pod"`
	TLS       *struct {
		ServerName string `json:"serverName"`
	} `json:"tls"`
}

func echoGet(t *testing.T, client *http.Client, url string, header http.Header) (echoAnswer, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a echoAnswer
	if resp.StatusCode == http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %s: Content-Type %q, want application/json (the suite parses nothing else)", url, ct)
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, body)
		}
	}
	return a, resp
}

// TestNodeRunsTheDeploymentsPods: with kube-controller-manager and a test
// node, a Deployment's Pods get addresses in the network namespace, run
// the echo server there and are Ready, so their Service's EndpointSlices
// list them; each answers as echo-basic, under its own Pod name; a Pod
// whose Secret volume is created after it waits for it, then serves TLS
// with it; scaling down ends a Pod and deletes it.
func TestNodeRunsTheDeploymentsPods(t *testing.T) {
	c := Start(t, WithControllerManager(), WithoutRouteCRD())
	netns := NewNetNS(t)
	node := c.StartNode(t, netns, "test-node")
	ns := c.CreateNamespace(t, "pods", nil).Name
	waitServiceAccount(t, c, ns)

	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx(t), echoDeployment("web", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx(t), echoService("web", 8080, 3000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addrs := readyAddresses(t, c, ns, "web", 2)
	checkEchoPods(t, node, netns, ns, addrs)
	pool := checkSecretVolumeWaits(t, c, ns)
	checkTCPPod(t, c, ns, pool)
	checkScaleDownEndsAPod(t, c, ns, addrs)
	checkEndedProgramStartsAgain(t, node, c, ns)
	checkPodsWithoutAProgramAreReady(t, c, ns)
	checkNamespaceDeleted(t, c, ns)
}

// checkEndedProgramStartsAgain: the program of a Pod killed is started
// again on the Pod's address.
func checkEndedProgramStartsAgain(t *testing.T, node *Node, c *Cluster, ns string) {
	t.Helper()
	ip := readyAddresses(t, c, ns, "web", 1)[0]
	node.mu.Lock()
	var proc *process
	for _, run := range node.runs {
		if run.ip == ip {
			proc = run.proc
		}
	}
	node.mu.Unlock()
	if proc == nil {
		t.Fatalf("no program runs on %s", ip)
	}
	_ = proc.cmd.Process.Kill()
	<-proc.done
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + net.JoinHostPort(ip, "3000") + "/health")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed Pod's program did not answer again on %s within 30s: %v", ip, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkPodsWithoutAProgramAreReady: Pods of other images (coredns, and
// echo-basic as a gRPC server) run nothing but are Ready, as the
// conformance suite waits for every Pod of its namespaces.
func checkPodsWithoutAProgramAreReady(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	dns := echoDeployment("dns", 1, func(s *corev1.PodSpec) { s.Containers[0].Image = "registry.k8s.io/coredns/coredns:v1.12.2" })
	grpc := echoDeployment("grpc", 1, func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "GRPC_ECHO_SERVER", Value: "1"})
	})
	for _, d := range []*appsv1.Deployment{dns, grpc} {
		if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx(t), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Kube.CoreV1().Services(ns).Create(ctx(t), echoService(d.Name, 53, 53), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		readyAddresses(t, c, ns, d.Name, 1)
	}
}

// checkNamespaceDeleted: kube-controller-manager's namespace controller
// deletes the namespace's objects, the node ends and deletes its Pods,
// and the namespace goes.
func checkNamespaceDeleted(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx(t), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := c.Kube.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			pods, _ := c.Kube.CoreV1().Pods(ns).List(ctx(t), metav1.ListOptions{})
			t.Fatalf("namespace %s not deleted within 90s (%v); pods left: %d", ns, err, len(pods.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkEchoPods: each address answers as echo-basic under its own Pod
// name, a Deployment's, and the Pod's output has the request.
func checkEchoPods(t *testing.T, node *Node, netns *NetNS, ns string, addrs []string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	pods := map[string]bool{}
	for _, ip := range addrs {
		if !strings.HasPrefix(ip, strings.TrimSuffix(netns.Subnet, "0/24")) {
			t.Fatalf("pod address %s is not in the test subnet %s", ip, netns.Subnet)
		}
		a, resp := echoGet(t, client, "http://"+net.JoinHostPort(ip, "3000")+"/some//path?x=1", http.Header{
			"Host": {"echo.example.com"}, "X-Echo-Set-Header": {"X-One: 1,X-Two:2"}})
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(a.Pod, "web-") || a.Namespace != ns || a.Host != "echo.example.com" ||
			a.Path != "/some//path?x=1" || a.Method != http.MethodGet {
			t.Fatalf("pod at %s answered %d %+v", ip, resp.StatusCode, a)
		}
		if resp.Header.Get("X-One") != "1" || resp.Header.Get("X-Two") != "2" {
			t.Fatalf("X-Echo-Set-Header not echoed: %v", resp.Header)
		}
		pods[a.Pod] = true
		// The Deployment's Pod names, as the suite's weight tests read
		// them (the backend's name before the last two parts).
		if parts := strings.Split(a.Pod, "-"); len(parts) != 3 || parts[0] != "web" {
			t.Fatalf("pod name %q is not a Deployment's", a.Pod)
		}
		if log := node.PodLog(ns, a.Pod); !strings.Contains(log, "Echoing back request made to /some//path?x=1 to client") {
			t.Fatalf("pod %s printed %q", a.Pod, log)
		}
		if _, resp := echoGet(t, client, "http://"+net.JoinHostPort(ip, "3000")+"/status/418", nil); resp.StatusCode != 418 {
			t.Fatalf("/status/418 answered %d", resp.StatusCode)
		}
		if _, resp := echoGet(t, client, "http://"+net.JoinHostPort(ip, "3001")+"/", nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("the h2c port answered HTTP/1.1 without an upgrade with %d, want 400", resp.StatusCode)
		}
	}
	if len(pods) != len(addrs) {
		t.Fatalf("%d endpoints answered as %v", len(addrs), pods)
	}
}

// checkSecretVolumeWaits: a Pod that mounts a Secret created after it is
// not Ready until the Secret exists (the suite creates its certificates
// after applying the Deployments), then serves TLS with it.
func checkSecretVolumeWaits(t *testing.T, c *Cluster, ns string) *x509.CertPool {
	t.Helper()
	tlsDeployment := echoDeployment("secure", 1, withCertificate("secure-cert", "TLS_SERVER_PRIVKEY"))
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx(t), tlsDeployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx(t), echoService("secure", 443, 8443), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if got := readyCount(t, c, ns, "secure"); got != 0 {
		t.Fatalf("%d ready endpoints of a Pod whose Secret does not exist", got)
	}
	ca, err := testcerts.NewCA("node-test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("secure", []string{"secure.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Secrets(ns).Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "secure-cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(cert.CertPEM), "tls.key": []byte(cert.KeyPEM)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secure := readyAddresses(t, c, ns, "secure", 1)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example.com"}}}
	if a, resp := echoGet(t, tc, "https://"+net.JoinHostPort(secure[0], "8443")+"/tls", nil); resp.StatusCode != http.StatusOK ||
		a.TLS == nil || a.TLS.ServerName != "secure.example.com" || !strings.HasPrefix(a.Pod, "secure-") {
		t.Fatalf("the TLS pod answered %d %+v", resp.StatusCode, a)
	}
	return pool
}

// checkTCPPod: a Pod of echo-basic's TCP server (TCP_ECHO_SERVER, as the
// suite's tcp-backend) answers on its TLS port with the welcome line, and
// TEST with its Pod name, the SNI and isTLS.
func checkTCPPod(t *testing.T, c *Cluster, ns string, pool *x509.CertPool) {
	t.Helper()
	d := echoDeployment("tcp", 1, func(s *corev1.PodSpec) {
		withCertificate("secure-cert", "TLS_SERVER_PRIV_KEY")(s)
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "TCP_ECHO_SERVER", Value: "1"})
	})
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx(t), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx(t), echoService("tcp", 8443, 8443), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip := readyAddresses(t, c, ns, "tcp", 1)[0]
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, "8443"),
		&tls.Config{RootCAs: pool, ServerName: "secure.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	if welcome, err := r.ReadString('\n'); err != nil || welcome != "Gateway API Test TCP Server\n" {
		t.Fatalf("welcome %q %v", welcome, err)
	}
	if _, err := conn.Write([]byte("TEST\n")); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Pod   string `json:"pod"`
		IsTLS bool   `json:"isTLS"`
		TLS   struct {
			ServerName string `json:"serverName"`
		} `json:"tls"`
	}
	if err := json.Unmarshal([]byte(line), &a); err != nil || !strings.HasPrefix(a.Pod, "tcp-") || !a.IsTLS ||
		a.TLS.ServerName != "secure.example.com" {
		t.Fatalf("TEST answered %q (%v)", line, err)
	}
}

// checkScaleDownEndsAPod: scaling the Deployment of addrs down to one
// ends a Pod: it is deleted, its endpoint goes, and nothing answers on
// its address any more.
func checkScaleDownEndsAPod(t *testing.T, c *Cluster, ns string, addrs []string) {
	t.Helper()
	scale, err := c.Kube.AppsV1().Deployments(ns).GetScale(ctx(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := c.Kube.AppsV1().Deployments(ns).UpdateScale(ctx(t), "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	left := readyAddresses(t, c, ns, "web", 1)
	gone := addrs[0]
	if gone == left[0] {
		gone = addrs[1]
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := c.Kube.CoreV1().Pods(ns).List(ctx(t), metav1.ListOptions{LabelSelector: "app=web"})
		if err == nil && len(list.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scaled-down Pod was not deleted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(gone, "3000"), 2*time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("the ended Pod's address %s still answers", gone)
	}
}

func readyCount(t *testing.T, c *Cluster, ns, svc string) int {
	t.Helper()
	slices, err := c.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx(t), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

// waitServiceAccount waits for the namespace's default ServiceAccount
// (kube-controller-manager makes it; Pods are refused until it exists).
func waitServiceAccount(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if _, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("no default service account in %s after 60s: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
