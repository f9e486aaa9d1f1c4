package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/openshift-router-go/router/test/testcerts"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func testRoute(name, host string) *routev1.Route {
	return &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: routev1.RouteSpec{
			Host: host,
			Path: "/app",
			To:   routev1.RouteTargetReference{Kind: "Service", Name: "web", Weight: ptr.To[int32](100)},
			Port: &routev1.RoutePort{TargetPort: intstr.FromString("http")},
			TLS:  &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyRedirect},
		},
	}
}

func TestRouteRoundTrip(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ns := c.CreateNamespace(t, "routes-", map[string]string{"team": "a"}).Name
	created, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), testRoute("web", "web.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != created.UID || got.Spec.Host != "web.example.com" || got.Spec.Path != "/app" ||
		got.Spec.To.Name != "web" || got.Spec.TLS == nil || got.Spec.TLS.Termination != routev1.TLSTerminationEdge {
		t.Fatalf("route read back differs: %+v", got.Spec)
	}
	// The CRD's defaulting is active: wildcardPolicy defaults to None.
	if got.Spec.WildcardPolicy != routev1.WildcardPolicyNone {
		t.Errorf("wildcardPolicy = %q, want the CRD default None", got.Spec.WildcardPolicy)
	}
	// The kubeconfig file works on its own.
	rc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(rc)
	if _, err := kc.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("kubeconfig %s: %v", c.KubeconfigPath, err)
	}
}

func TestRouteCRDValidation(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ns := c.CreateNamespace(t, "invalid-", nil).Name
	cases := map[string]*routev1.Route{
		"host with spaces": testRoute("spaces", "bad host.example.com"),
		// A CEL rule (x-kubernetes-validations) of the CRD.
		"passthrough with insecure Allow": func() *routev1.Route {
			r := testRoute("passthrough-allow", "pt.example.com")
			r.Spec.Path = ""
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough,
				InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyAllow}
			return r
		}(),
	}
	for name, r := range cases {
		_, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), r, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: want Invalid from the CRD's validation, got %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestEndpointSliceAddresses(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ns := c.CreateNamespace(t, "eps-", nil).Name
	slice := func(name, ip string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx(t), slice("web-test-host", "198.51.100.10"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("an EndpointSlice with a test host address: %v", err)
	}
	_, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx(t), slice("web-loopback", "127.0.0.1"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("an EndpointSlice with 127.0.0.1: want Invalid, got %v", err)
	}
}

func TestNetNSBackend(t *testing.T) {
	n := NewNetNS(t)
	second := n.AddAddress(t)
	if want := strings.TrimSuffix(n.Subnet, ".0/24") + ".11"; second != want {
		t.Fatalf("second address %s, want %s", second, want)
	}
	b1 := n.StartBackend(t, n.IP(), 8080, "one")
	b2 := n.StartBackend(t, second, 0, "two")
	for _, b := range []*Backend{b1, b2} {
		body := getBounded(t, b.URL+"/some/path", "test.example.com")
		want := "backend=" + b.Name + " host=test.example.com path=/some/path "
		if !strings.HasPrefix(body, want) {
			t.Fatalf("%s answered %q, want prefix %q", b.URL, body, want)
		}
	}
	// TLS, for passthrough and re-encrypt routes.
	ca, err := testcerts.NewCA("netns-test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("secure", []string{"secure.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tb := n.StartTLSBackend(t, second, 8443, "secure", cert.CertPEM, cert.KeyPEM)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example.com"}}}
	resp, err := tc.Get(tb.URL + "/tls")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "backend=secure ") || !strings.Contains(string(body), "tls=true") {
		t.Fatalf("%s answered %q", tb.URL, body)
	}
	// The backend runs in the namespace: its address is not the host's.
	out, err := exec.Command("ip", "-o", "addr", "show", "to", n.IP()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("the host has %s itself: %s %v", n.IP(), out, err)
	}
	b1.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(b1.URL + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("stopped backend still answers")
	}
}

// TestNetNSTwoAtOnce: two namespaces at once get different subnets. Other
// test processes (go test ./...) may hold the second subnet for a while; the
// second NewNetNS waits for it (up to slotWait).
func TestNetNSTwoAtOnce(t *testing.T) {
	a := NewNetNS(t)
	b := NewNetNS(t)
	if a.Subnet == b.Subnet {
		t.Fatalf("both namespaces have %s", a.Subnet)
	}
	ba := a.StartBackend(t, a.IP(), 80, "a")
	bb := b.StartBackend(t, b.IP(), 80, "b")
	for _, be := range []*Backend{ba, bb} {
		if body := getBounded(t, be.URL+"/", "x"); !strings.HasPrefix(body, "backend="+be.Name+" ") {
			t.Fatalf("%s answered %q", be.URL, body)
		}
	}
}

// getBounded GETs url from the host side with the Host header, retrying for
// up to 10 s, and returns the body.
func getBounded(t *testing.T, url, host string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for i := 0; i < 50; i++ {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := client.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = rerr
			if err == nil {
				err = &statusError{resp.StatusCode}
			}
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", url, lastErr)
	return ""
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

func TestStopStartAPIServer(t *testing.T) {
	t.Parallel()
	c := Start(t) // its own cluster: it takes the API away
	ns := c.CreateNamespace(t, "restart", nil).Name
	if _, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), testRoute("before", "before.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	if c.APIServerRunning() {
		t.Fatal("APIServerRunning after StopAPIServer")
	}
	short, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Kube.CoreV1().Namespaces().Get(short, ns, metav1.GetOptions{}); err == nil {
		t.Fatal("a request succeeded while the API server was stopped")
	}
	began = time.Now()
	if err := c.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %v", time.Since(began).Round(time.Millisecond))
	// Same port, same etcd: the same clients see the data from before.
	got, err := c.Routes.RouteV1().Routes(ns).Get(ctx(t), "before", metav1.GetOptions{})
	if err != nil || got.Spec.Host != "before.example.com" {
		t.Fatalf("route after restart: %v %+v", err, got)
	}
	if _, err := c.Routes.RouteV1().Routes(ns).Create(ctx(t), testRoute("after", "after.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
