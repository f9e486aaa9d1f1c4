package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	"github.com/openshift-router-go/router/test/kubetest"
)

// startBackendAt starts a plain HTTP backend listening on addr
// ("127.0.0.x:0").
func startBackendAt(t *testing.T, name, addr string) *backend {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler(name))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// idledServiceYAML is a Service annotated as idled by OpenShift's idler,
// whose cluster IP and port are those of clusterIP, with an EndpointSlice
// without endpoints (the deployment was scaled to zero).
func idledServiceYAML(ns, name string, clusterIP *backend) string {
	return idledServiceAtYAML(ns, name, clusterIP.IP, clusterIP.Port)
}

// idledServiceAtYAML is idledServiceYAML with the cluster IP and port given.
func idledServiceAtYAML(ns, name, clusterIP string, port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[2]s
  namespace: %[1]s
  annotations:
    idling.alpha.openshift.io/idled-at: "2026-11-23T21:00:00Z"
spec:
  clusterIP: %[3]s
  ports:
  - name: web
    port: %[4]d
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[2]s-0
  namespace: %[1]s
  labels:
    kubernetes.io/service-name: %[2]s
addressType: IPv4
ports:
- name: web
  port: 8080
endpoints: []
`, ns, name, clusterIP, port)
}

// runtimeCheckStatus returns, for each server address of backend, HAProxy's
// health check status (show stat's check_status: "L4OK" for a checked
// server that answers, "" for a server without health checks) and its
// status ("no check" without health checks), read through the runtime API.
func runtimeCheckStatus(t *testing.T, r *router, backend string) map[string]string {
	t.Helper()
	c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
	out, err := c.Exec(context.Background(), "show stat")
	must(t, err)
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		t.Fatalf("show stat: %.200s", out)
	}
	cols := map[string]int{}
	for i, c := range strings.Split(strings.TrimPrefix(lines[0], "# "), ",") {
		cols[c] = i
	}
	servers := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) < len(cols) || f[cols["pxname"]] != backend || f[cols["svname"]] == "BACKEND" {
			continue
		}
		if strings.HasPrefix(f[cols["status"]], "MAINT") {
			continue
		}
		servers[f[cols["addr"]]] = f[cols["check_status"]] + "/" + f[cols["status"]]
	}
	return servers
}

// An idled service (OpenShift's `oc idle`: annotated idled-at, scaled to
// zero) is served as OpenShift's router serves it: requests go to the
// service's cluster IP, where the cluster wakes the pods up, and that
// server is never health-checked (a check would wake the service). When the
// pods are back the route serves them again, health-checked.
func TestIdledServiceServedThroughClusterIPWithoutHealthChecks(t *testing.T) {
	// The "cluster IP": what kube-proxy and the unidling machinery answer
	// on, here a loopback listener.
	clusterIP := startBackendAt(t, "cluster-ip", "127.0.0.77:0")
	// Two live endpoints of another service of the same route (weight 0):
	// they are health-checked, so the absence of checks on the idled
	// server is the idling rule, not a backend without checks.
	live1, live2 := startBackend(t, "live-1"), startBackend(t, "live-2")
	pod := startBackend(t, "pod")
	m := newManifests(t)
	m.Write("web.yaml", serviceYAML("idle", "web", pod))
	m.Write("other.yaml", serviceYAML("idle", "other", live1, live2))
	m.Write("route.yaml", routeYAML("idle", "r", "idle.example.com", "", "web",
		"  alternateBackends:\n  - kind: Service\n    name: other\n    weight: 0\n"))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_BACKEND_CHECK_INTERVAL": "200ms"})
	get := func() (response, error) { return r.httpGet("idle.example.com", "/") }
	expectBackend(t, 30*time.Second, get, "pod")

	addr := func(be *backend) string { return fmt.Sprintf("%s:%d", be.IP, be.Port) }
	checks := func(want map[string]string) func() error {
		return func() error {
			got := runtimeCheckStatus(t, r, "be_http:idle:r")
			for a, w := range want {
				if got[a] != w {
					return fmt.Errorf("server %s: check %q, want %q (all: %v)", a, got[a], w, got)
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("servers %v, want %v", got, want)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, "every server health-checked", checks(map[string]string{
		addr(pod): "L4OK/UP", addr(live1): "L4OK/UP", addr(live2): "L4OK/UP",
	}))

	// Idled: the pod goes away, the service is annotated. The cluster IP
	// takes the place of the pod (a spare slot whose line had a health
	// check: the check must go, which the runtime API does not do).
	m.Write("web.yaml", idledServiceYAML("idle", "web", clusterIP))
	expectBackend(t, 30*time.Second, get, "cluster-ip")
	eventually(t, 30*time.Second, "the idled service's server not health-checked", checks(map[string]string{
		addr(clusterIP): "/no check", addr(live1): "L4OK/UP", addr(live2): "L4OK/UP",
	}))

	// Woken up: the annotation goes away and the pod is ready again.
	m.Write("web.yaml", serviceYAML("idle", "web", pod))
	expectBackend(t, 30*time.Second, get, "pod")
	eventually(t, 30*time.Second, "the pod health-checked again", checks(map[string]string{
		addr(pod): "L4OK/UP", addr(live1): "L4OK/UP", addr(live2): "L4OK/UP",
	}))
}

// TestIdledServiceWithRestrictedClusterIPGetsNoServer: a manifest may
// write any cluster IP, and an idled service's route connects to it. A
// cloud metadata address there, also written as NAT64 or 6to4 IPv6, or the
// broadcast address, never becomes a server: the route answers 503, with a
// log line naming the service and the address, while the idled service of
// another tenant next to it is served through its cluster IP.
func TestIdledServiceWithRestrictedClusterIPGetsNoServer(t *testing.T) {
	clusterIP := startBackendAt(t, "cluster-ip", "127.0.0.78:0")
	m := newManifests(t)
	m.Write("ok.yaml", idledServiceYAML("good", "web", clusterIP)+"---\n"+routeYAML("good", "r", "good.example.com", "", "web", ""))
	restricted := map[string]string{
		"meta": "169.254.169.254", "nat64": "64:ff9b::a9fe:a9fe", "sixtofour": "2002:a9fe:a9fe::1",
		"alibaba": "100.100.100.200", "broadcast": "255.255.255.255",
	}
	for name, ip := range restricted {
		m.Write(name+".yaml", idledServiceAtYAML("evil", name, ip, 80)+"---\n"+routeYAML("evil", name, name+".example.com", "", name, ""))
	}
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, 30*time.Second, func() (response, error) { return r.httpGet("good.example.com", "/") }, "cluster-ip")
	var config []byte
	eventually(t, 30*time.Second, "every route's backend in haproxy.config", func() error {
		var err error
		if config, err = os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config")); err != nil {
			return err
		}
		for name := range restricted {
			if !strings.Contains(string(config), "backend be_http:evil:"+name+"\n") {
				return fmt.Errorf("no backend be_http:evil:%s", name)
			}
		}
		return nil
	})
	// No request goes to a restricted route before its backend is known
	// to have no server: the test never connects to those addresses.
	for _, l := range strings.Split(string(config), "\n") {
		if strings.Contains(l, "169.254.169.254") || strings.Contains(l, "a9fe") ||
			strings.Contains(l, "100.100.100.200") || strings.Contains(l, "255.255.255.255") {
			t.Errorf("haproxy.config: %q", l)
		}
	}
	for name := range restricted {
		if got := runtimeCheckStatus(t, r, "be_http:evil:"+name); len(got) != 0 {
			t.Errorf("backend of evil/%s has servers %v", name, got)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for name, ip := range restricted {
		expectStatus(t, 10*time.Second, func() (response, error) { return r.httpGet(name+".example.com", "/") }, 503)
		eventually(t, 10*time.Second, "a log line for "+name, func() error {
			for _, l := range strings.Split(r.Log(), "\n") {
				if strings.Contains(l, "restricted or invalid cluster IP") && strings.Contains(l, "evil/"+name) && strings.Contains(l, ip) {
					return nil
				}
			}
			return fmt.Errorf("no log line names service evil/%s and %s", name, ip)
		})
	}
}

// TestKubeIdledServiceServedThroughClusterIP: on a real kube-apiserver, the
// router reads the idled-at annotation of the Service (not of its
// endpoints): once the service is idled and its EndpointSlice empty, the
// route's server is the cluster IP the API allocated, on the service port,
// without health checks, and requests reach it (the test cluster's service
// range is on loopback: the test answers there in place of the cluster's
// unidling machinery); when the annotation goes and pods are back they are
// served again.
func TestKubeIdledServiceServedThroughClusterIP(t *testing.T) {
	c := kubetest.Shared(t)
	netns := kubetest.NewNetNS(t)
	ip2 := netns.AddAddress(t)
	b1 := netns.StartBackend(t, netns.IP(), 8080, "pod-1")
	b2 := netns.StartBackend(t, ip2, 8080, "pod-2")
	ns := c.CreateNamespace(t, "idle-", nil).Name
	kubeService(t, c, ns, "web", b1, b2)
	svc, err := c.Kube.CoreV1().Services(ns).Get(kctx(t), "web", metav1.GetOptions{})
	must(t, err)
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil || !ip.IsLoopback() {
		t.Fatalf("cluster IP %q: the test cluster's service range must be on loopback", svc.Spec.ClusterIP)
	}
	clusterIP := svc.Spec.ClusterIP + ":80"
	startBackendAt(t, "cluster-ip", clusterIP)
	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_BACKEND_CHECK_INTERVAL": "200ms"})
	kubeRoute(t, c, ns, "web", "web.example.com", "web", nil)
	get := func() (response, error) { return r.httpGet("web.example.com", "/") }
	expectBackend(t, 30*time.Second, get, "pod-1")
	backend := "be_http:" + ns + ":web"
	pods := map[string]string{
		fmt.Sprintf("%s:%d", b1.IP, b1.Port): "L4OK/UP", fmt.Sprintf("%s:%d", b2.IP, b2.Port): "L4OK/UP",
	}
	eventually(t, 30*time.Second, "the pods health-checked", func() error {
		if got := runtimeCheckStatus(t, r, backend); !reflect.DeepEqual(got, pods) {
			return fmt.Errorf("servers %v, want %v", got, pods)
		}
		return nil
	})

	// `oc idle`: the endpoints go (scaled to zero), the Service is annotated.
	setEndpoints(t, c, ns, "web")
	svc, err = c.Kube.CoreV1().Services(ns).Get(kctx(t), "web", metav1.GetOptions{})
	must(t, err)
	svc.Annotations = map[string]string{"idling.alpha.openshift.io/idled-at": time.Now().UTC().Format(time.RFC3339)}
	svc, err = c.Kube.CoreV1().Services(ns).Update(kctx(t), svc, metav1.UpdateOptions{})
	must(t, err)
	expectBackend(t, 30*time.Second, get, "cluster-ip")
	eventually(t, 30*time.Second, "the cluster IP served without health checks", func() error {
		want := map[string]string{clusterIP: "/no check"}
		if got := runtimeCheckStatus(t, r, backend); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("servers %v, want %v", got, want)
		}
		return nil
	})
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	if want := fmt.Sprintf("server ept:web:web:%s %s ", clusterIP, clusterIP); !strings.Contains(string(config), want) {
		t.Errorf("haproxy.config has no line %q", want)
	}

	// Woken up: the idler's controller scales up and removes the
	// annotation.
	delete(svc.Annotations, "idling.alpha.openshift.io/idled-at")
	_, err = c.Kube.CoreV1().Services(ns).Update(kctx(t), svc, metav1.UpdateOptions{})
	must(t, err)
	setEndpoints(t, c, ns, "web", b1, b2)
	expectBackend(t, 30*time.Second, get, "pod-1")
	eventually(t, 30*time.Second, "the pods health-checked again", func() error {
		if got := runtimeCheckStatus(t, r, backend); !reflect.DeepEqual(got, pods) {
			return fmt.Errorf("servers %v, want %v", got, pods)
		}
		return nil
	})
}
