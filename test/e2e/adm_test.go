package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// admObjects runs "adm router" with -o json and decodes the List.
func admObjects(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	stdout, stderr, err := cli(t, nil, append([]string{"adm", "router"}, append(args, "-o", "json")...)...)
	if err != nil {
		t.Fatalf("adm router %v: %v\n%s", args, err, stderr)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || list.Kind != "List" {
		t.Fatalf("adm router output is not a JSON List (%v):\n%s", err, stdout)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i, it := range list.Items {
		out[i] = &unstructured.Unstructured{Object: it}
	}
	return out
}

// deploymentEnv returns the router container's env of the Deployment in objs.
func deploymentEnv(t *testing.T, objs []*unstructured.Unstructured) (map[string]string, *appsv1.Deployment) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
				env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			default:
				env[e.Name] = e.Value
			}
		}
		return env, &d
	}
	t.Fatal("no Deployment in the output")
	return nil, nil
}

// serverDryRun creates every object with dryRun=All: the API server
// validates, defaults and admits them (what kubectl apply --dry-run=server
// does) without persisting anything.
func serverDryRun(t *testing.T, c *kubetest.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if u.GetAPIVersion() == deploy.MonitoringAPIVersion {
			continue // the test API server has no Prometheus Operator CRDs
		}
		gvr, namespaced, err := deploy.Resource(u)
		must(t, err)
		ri := c.Dynamic.Resource(gvr)
		var created *unstructured.Unstructured
		if namespaced {
			created, err = ri.Namespace(u.GetNamespace()).Create(kctx(t), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		} else {
			created, err = ri.Create(kctx(t), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		shared := u.GetKind() == "ClusterRole" || strings.HasPrefix(u.GetName(), deploy.MonitoringClusterRoleName+":")
		if err != nil && !(apierrors.IsAlreadyExists(err) && shared) {
			t.Errorf("server dry run of %s %s: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		if err == nil && created.GetUID() == "" {
			t.Errorf("server dry run of %s %s returned no object", u.GetKind(), u.GetName())
		}
	}
}

func writePEMCert(t *testing.T, dir string) string {
	t.Helper()
	ca, err := testcerts.NewCA("default CA", time.Hour)
	must(t, err)
	cert, err := ca.Issue("*.apps.example.com", []string{"*.apps.example.com"}, time.Hour)
	must(t, err)
	p := filepath.Join(dir, "default.pem")
	must(t, os.WriteFile(p, []byte(cert.CertPEM+cert.KeyPEM), 0o600))
	return p
}

// TestAdmRouterManifestsPassServerDryRun: the output of adm router, with
// and without each optional flag, is accepted by a real kube-apiserver
// (server-side dry run), and the Deployment's env is what the flags say.
func TestAdmRouterManifestsPassServerDryRun(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.CreateNamespace(t, "adm-dry-", nil).Name
	dir := t.TempDir()
	cert := writePEMCert(t, dir)
	tmpl := filepath.Join(dir, "custom.template")
	def, _, err := cli(t, nil, "template", "default")
	must(t, err)
	must(t, os.WriteFile(tmpl, []byte(def), 0o644))

	base := map[string]string{
		"ROUTER_SERVICE_NAME": "router", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "80", "ROUTER_SERVICE_HTTPS_PORT": "443",
		"STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936", "ROUTER_METRICS_TYPE": "haproxy",
		"STATS_USERNAME": "admin", "STATS_PASSWORD": "secret:router-stats/password",
	}
	caFile := filepath.Join(dir, "clients-ca.pem")
	clientCA, err := testcerts.NewCA("clients", time.Hour)
	must(t, err)
	must(t, os.WriteFile(caFile, []byte(clientCA.CertPEM), 0o600))
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
				continue
			}
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"defaults", nil, base},
		{"replicas, selector, labels, image, service account", []string{"--replicas", "3", "--selector", "node-role=router",
			"--labels", "app=edge,tier=ingress", "--image", "registry.example.com/router:v1", "--service-account", "edge-sa"}, base},
		{"ports", []string{"--ports", "8080,8443", "--stats-port", "9936"}, with("ROUTER_SERVICE_HTTP_PORT", "8080",
			"ROUTER_SERVICE_HTTPS_PORT", "8443", "STATS_PORT", "9936", "ROUTER_LISTEN_ADDR", "0.0.0.0:9936")},
		{"deprecated --metrics-port is --stats-port", []string{"--metrics-port", "9937"}, with("STATS_PORT", "9937", "ROUTER_LISTEN_ADDR", "0.0.0.0:9937")},
		{"oc adm router's --stats-port=1936", []string{"--stats-port=1936"}, base},
		{"--stats-port=0: no metrics server", []string{"--stats-port=0"}, with("STATS_PORT", "0", "ROUTER_LISTEN_ADDR", "-",
			"ROUTER_METRICS_TYPE", "-", "STATS_USERNAME", "-", "STATS_PASSWORD", "-")},
		{"host ports without host network", []string{"--host-network=false", "--ports", "8080:80,8443:443"}, with("ROUTER_SERVICE_HTTP_PORT", "8080",
			"ROUTER_SERVICE_HTTPS_PORT", "8443")},
		{"no host network, no host ports", []string{"--host-network=false", "--host-ports=false"}, base},
		{"stats", []string{"--stats-port", "1937", "--stats-user", "scraper", "--stats-password", "s3cret"},
			with("STATS_PORT", "1937", "ROUTER_LISTEN_ADDR", "0.0.0.0:1937", "STATS_USERNAME", "scraper")},
		{"metrics certificate and monitoring", []string{"--metrics-cert-secret", "router-metrics", "--monitoring", "--prometheus-service-account", ns + "/prom"},
			with("ROUTER_METRICS_TLS_CERT_FILE", deploy.MetricsCertDir+"/tls.crt", "ROUTER_METRICS_TLS_KEY_FILE", deploy.MetricsCertDir+"/tls.key")},
		{"host names, threads, connections", []string{"--force-subdomain", "${name}-${namespace}.apps.example.com", "--threads", "4", "--max-connections", "auto"},
			with("ROUTER_SUBDOMAIN", "${name}-${namespace}.apps.example.com", "ROUTER_OVERRIDE_HOSTNAME", "true", "ROUTER_THREADS", "4", "ROUTER_MAX_CONNECTIONS", "auto")},
		{"mutual TLS", []string{"--mutual-tls-auth", "optional", "--mutual-tls-auth-ca", caFile, "--mutual-tls-auth-filter", "CN=client[0-9]+"},
			with("ROUTER_MUTUAL_TLS_AUTH", "optional", "ROUTER_MUTUAL_TLS_AUTH_CA", deploy.MutualTLSDir+"/ca.pem", "ROUTER_MUTUAL_TLS_AUTH_FILTER", "CN=client[0-9]+")},
		{"default certificate", []string{"--default-cert", cert}, with("DEFAULT_CERTIFICATE_DIR", deploy.DefaultCertificateDir)},
		{"template", []string{"--template", tmpl}, with("TEMPLATE_FILE", deploy.CustomTemplateDir+"/"+deploy.CustomTemplateKey)},
		{"tls", []string{"--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256", "--strict-sni"},
			with("ROUTER_CIPHERS", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256", "ROUTER_STRICT_SNI", "true")},
		{"admission", []string{"--disable-namespace-ownership-check", "--allowed-domains", "apps.example.com,*.example.org",
			"--denied-domains", "internal.apps.example.com", "--max-connections", "50000"},
			with("ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", "true", "ROUTER_ALLOWED_DOMAINS", "apps.example.com,*.example.org",
				"ROUTER_DENIED_DOMAINS", "internal.apps.example.com", "ROUTER_MAX_CONNECTIONS", "50000")},
		{"sharding and status", []string{"--route-labels", "shard in (a,b)", "--namespace-labels", "env=prod",
			"--router-canonical-hostname", "router.apps.example.com"},
			with("ROUTE_LABELS", "shard in (a,b)", "NAMESPACE_LABELS", "env=prod", "ROUTER_CANONICAL_HOSTNAME", "router.apps.example.com")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := admObjects(t, append([]string{"router", "-n", ns}, tc.args...)...)
			env, d := deploymentEnv(t, objs)
			if !reflect.DeepEqual(env, tc.env) {
				t.Errorf("Deployment env\n got %v\nwant %v", env, tc.env)
			}
			if d.Namespace != ns {
				t.Errorf("Deployment namespace %q", d.Namespace)
			}
			serverDryRun(t, c, objs)
		})
	}
	t.Run("YAML output is the same objects", func(t *testing.T) {
		stdout, stderr, err := cli(t, nil, "adm", "router", "router", "-n", ns, "--stats-port", "1937", "--monitoring")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		docs := strings.Split(stdout, "\n---\n")
		if len(docs) != len(admObjects(t, "router", "-n", ns, "--stats-port", "1937", "--monitoring")) || !strings.HasPrefix(stdout, "apiVersion: v1\nkind: ServiceAccount\n") ||
			!strings.Contains(stdout, "kind: ServiceMonitor\n") || !strings.Contains(stdout, "kind: PrometheusRule\n") {
			t.Errorf("YAML output:\n%s", stdout)
		}
	})
	t.Run("--apply --dry-run is validated by the server and persists nothing", func(t *testing.T) {
		stdout, stderr, err := cli(t, nil, "adm", "router", "dry", "-n", ns, "--apply", "--dry-run", "--kubeconfig", c.KubeconfigPath)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if !strings.Contains(stdout, "deployment/dry created (server dry run)") {
			t.Errorf("stdout:\n%s", stdout)
		}
		if _, err := c.Kube.AppsV1().Deployments(ns).Get(kctx(t), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run created the deployment (err %v)", err)
		}
		if _, err := c.Kube.RbacV1().ClusterRoleBindings().Get(kctx(t), deploy.ClusterRoleBindingName(ns, "dry"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run created the binding (err %v)", err)
		}
	})
	t.Run("the API server rejects what the flags cannot express", func(t *testing.T) {
		// A namespace that does not exist: --apply reports the server's error.
		_, stderr, err := cli(t, nil, "adm", "router", "r", "-n", "no-such-ns-adm", "--apply", "--dry-run", "--kubeconfig", c.KubeconfigPath)
		if err == nil || !strings.Contains(stderr, "no-such-ns-adm") || !strings.Contains(stderr, "not found") {
			t.Errorf("err %v stderr %s", err, stderr)
		}
	})
}

// TestAdmRouterBadFlags: invalid flags are a clear error and a non-zero exit.
func TestAdmRouterBadFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	must(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"a", "b"}, "accepts at most 1 arg"},
		{[]string{"r", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"r", "--metrics-port", "9000", "--stats-port", "9001"}, "give only --stats-port"},
		{[]string{"r", "--max-connections", "many"}, "--max-connections"},
		{[]string{"r", "--mutual-tls-auth", "always"}, "--mutual-tls-auth"},
		{[]string{"r", "--monitoring", "--stats-port", "0"}, "--monitoring needs --stats-port"},
		{[]string{"Bad_Name"}, "router name \"Bad_Name\""},
		{[]string{"r", "--selector", "a=b=c"}, "--selector"},
		{[]string{"r", "--ports", "80,443,8080"}, "--ports"},
		{[]string{"r", "--ports", "http,https"}, "--ports"},
		{[]string{"r", "--default-cert", filepath.Join(dir, "missing.pem")}, "--default-cert"},
		{[]string{"r", "--default-cert", notPEM}, "--default-cert " + notPEM},
		{[]string{"r", "--template", filepath.Join(dir, "missing.template")}, "--template"},
		{[]string{"r", "--route-labels", "a in (b"}, "--route-labels"},
		{[]string{"r", "--stats-port", "80"}, "--stats-port 80"},
		{[]string{"r", "-o", "xml"}, "--output"},
		{[]string{"r", "--apply"}, "--apply needs a cluster"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, err := cli(t, nil, append([]string{"adm", "router"}, tc.args...)...)
			if err == nil {
				t.Fatalf("exit 0; stdout:\n%s", stdout)
			}
			if !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("stderr %q (want %q), stdout %q", stderr, tc.want, stdout)
			}
		})
	}
}

// impersonatingKubeconfig writes a kubeconfig that authenticates as the
// cluster's admin and impersonates user (users[].user.as).
func impersonatingKubeconfig(t *testing.T, c *kubetest.Cluster, user string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: router
  user:
    token: %s
    as: %s
contexts:
- name: router
  context:
    cluster: test
    user: router
current-context: router
`, c.Host, c.CAFile, c.Token, user)
	must(t, os.WriteFile(p, []byte(cfg), 0o600))
	return p
}

// TestAdmRouterApplyAndRBAC: --apply creates everything and is idempotent;
// the router run with the generated Deployment's environment and the
// generated ServiceAccount's permissions (impersonated) syncs, serves a
// route and writes its status; that identity is refused anything else.
func TestAdmRouterApplyAndRBAC(t *testing.T) {
	c := kubetest.Shared(t)
	netns := kubetest.NewNetNS(t)
	ns := c.CreateNamespace(t, "adm-rbac-", map[string]string{"adm-e2e": "yes"}).Name
	const name = "shard-adm"
	args := []string{"adm", "router", name, "-n", ns, "--route-labels", "shard=adm", "--namespace-labels", "adm-e2e=yes",
		"--router-canonical-hostname", "adm.apps.example.com", "--kubeconfig", c.KubeconfigPath}
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.ClusterRoleBindingName(ns, name), metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.MonitoringBindingName(ns, "prom"), metav1.DeleteOptions{})
	})
	args = append(args, "--prometheus-service-account", ns+"/prom")

	stdout, stderr, err := cli(t, nil, append(args, "--apply")...)
	if err != nil {
		t.Fatalf("--apply: %v\n%s", err, stderr)
	}
	for _, want := range []string{"serviceaccount/" + name + " created", "clusterrolebinding/" + deploy.ClusterRoleBindingName(ns, name) + " created",
		"clusterrolebinding/" + deploy.MonitoringBindingName(ns, "prom") + " created", "secret/" + name + "-stats created",
		"deployment/" + name + " created", "service/" + name + " created"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--apply output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "info: generated a random password for stats user admin") {
		t.Errorf("no word of the generated password on stderr: %q", stderr)
	}
	objects := len(strings.Split(strings.TrimSpace(stdout), "\n"))
	// ServiceAccount, ClusterRole, ClusterRoleBinding, router-monitoring
	// ClusterRole and ClusterRoleBinding, stats Secret, Deployment, Service
	if objects != 8 {
		t.Errorf("--apply applied %d objects, want 8:\n%s", objects, stdout)
	}
	stdout, stderr, err = cli(t, nil, append(args, "--apply")...)
	if err != nil {
		t.Fatalf("second --apply: %v\n%s", err, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != objects || strings.Count(stdout, " unchanged") != objects {
		t.Errorf("re-running --apply changed something:\n%s", stdout)
	}
	dep, err := c.Kube.AppsV1().Deployments(ns).Get(kctx(t), name, metav1.GetOptions{})
	must(t, err)
	if dep.Spec.Template.Spec.ServiceAccountName != name || !dep.Spec.Template.Spec.HostNetwork {
		t.Errorf("applied deployment %+v", dep.Spec.Template.Spec)
	}

	// The router, with the Deployment's environment (ports and metrics
	// address aside: the test picks free ones) and the service account's
	// identity.
	saUser := "system:serviceaccount:" + ns + ":" + name
	env := podEnv(t, c, dep)
	// The stats port is TestAdmRouterStatsPort1936's subject; here the
	// framework's free metrics address replaces it.
	delete(env, "ROUTER_LISTEN_ADDR")
	delete(env, "STATS_PORT")
	if env["ROUTE_LABELS"] != "shard=adm" || env["NAMESPACE_LABELS"] != "adm-e2e=yes" || env["ROUTER_SERVICE_NAME"] != name {
		t.Fatalf("deployment env %v", env)
	}
	b := netns.StartBackend(t, netns.IP(), 8080, "pod-adm")
	kubeService(t, c, ns, "web", b)
	r := startKubeRouter(t, impersonatingKubeconfig(t, c, saUser), env)
	kubeRoute(t, c, ns, "web", "adm.example.com", "web", map[string]string{"shard": "adm"})
	kubeRoute(t, c, ns, "other", "other-shard.example.com", "web", map[string]string{"shard": "other"})

	t.Run("the router syncs, serves its shard and writes status", func(t *testing.T) {
		expectBackend(t, 15*time.Second, func() (response, error) { return r.httpGet("adm.example.com", "/") }, "pod-adm")
		ing := ingressOf(t, c, ns, "web", name, admitted(corev1.ConditionTrue, ""))
		if ing.RouterCanonicalHostname != "adm.apps.example.com" {
			t.Errorf("status entry %+v", ing)
		}
		expectStatus(t, 5*time.Second, func() (response, error) { return r.httpGet("other-shard.example.com", "/") }, 503)
		if strings.Contains(r.Log(), "forbidden") {
			t.Errorf("the router was refused something it needs:\n%s", r.Log())
		}
	})

	t.Run("the service account is refused anything else", func(t *testing.T) {
		cfg := rest.CopyConfig(c.RESTConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: saUser}
		kc, err := kubernetes.NewForConfig(cfg)
		must(t, err)
		rc, err := routeclient.NewForConfig(cfg)
		must(t, err)
		// What it may do (sanity: the identity is the one the router used).
		if _, err := rc.RouteV1().Routes(ns).Get(kctx(t), "web", metav1.GetOptions{}); err != nil {
			t.Errorf("get route: %v", err)
		}
		refused := map[string]error{}
		_, refused["create a route"] = rc.RouteV1().Routes(ns).Create(kctx(t), &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Name: "evil"}, Spec: routev1.RouteSpec{Host: "evil.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}}}, metav1.CreateOptions{})
		route, err := rc.RouteV1().Routes(ns).Get(kctx(t), "web", metav1.GetOptions{})
		must(t, err)
		route.Spec.Host = "hijack.example.com"
		_, refused["update a route's spec"] = rc.RouteV1().Routes(ns).Update(kctx(t), route, metav1.UpdateOptions{})
		refused["delete a route"] = rc.RouteV1().Routes(ns).Delete(kctx(t), "web", metav1.DeleteOptions{})
		_, refused["list secrets"] = kc.CoreV1().Secrets(ns).List(kctx(t), metav1.ListOptions{})
		_, refused["get a service"] = kc.CoreV1().Services(ns).Get(kctx(t), "web", metav1.GetOptions{})
		_, refused["list pods"] = kc.CoreV1().Pods(ns).List(kctx(t), metav1.ListOptions{})
		_, refused["list configmaps"] = kc.CoreV1().ConfigMaps(ns).List(kctx(t), metav1.ListOptions{})
		_, refused["create a service"] = kc.CoreV1().Services(ns).Create(kctx(t), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "evil"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		for what, err := range refused {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: want 403 Forbidden, got %v", what, err)
			}
		}
	})
}

// podEnv returns the router container's environment as the kubelet would
// give it (downward API namespace, Secret values), without the HTTP and
// HTTPS ports, which the framework picks.
func podEnv(t *testing.T, c *kubetest.Cluster, dep *appsv1.Deployment) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.Name == "ROUTER_SERVICE_HTTP_PORT" || e.Name == "ROUTER_SERVICE_HTTPS_PORT":
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = dep.Namespace
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			s, err := c.Kube.CoreV1().Secrets(dep.Namespace).Get(kctx(t), e.ValueFrom.SecretKeyRef.Name, metav1.GetOptions{})
			must(t, err)
			env[e.Name] = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		case e.ValueFrom != nil:
			t.Fatalf("env %s: unexpected source %+v", e.Name, e.ValueFrom)
		default:
			env[e.Name] = e.Value
		}
	}
	return env
}

// serviceAccountToken creates a service account in ns and returns a token
// of it (TokenRequest), as a pod's projected token.
func serviceAccountToken(t *testing.T, c *kubetest.Cluster, ns, name string) string {
	t.Helper()
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(kctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(kctx(t), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// bearerGet fetches path from the metrics server with a bearer token.
func bearerGet(addr, path, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestAdmRouterStatsPort1936: oc adm router's classic invocation,
// "adm router NAME --stats-port=1936", applied to a real kube-apiserver
// (the Prometheus Operator objects of --monitoring are skipped there, with
// a message); the router started with the generated pod environment (the
// stats port moved to a free loopback port: STATS_PORT and
// ROUTER_LISTEN_ADDR as the Deployment has them) and the generated service
// account's permissions serves a route, writes its status, answers
// /healthz, /healthz/ready and /metrics (basic auth with the generated
// credentials; Prometheus' bearer token through router-monitoring; the
// metrics the PrometheusRule's alerts query).
func TestAdmRouterStatsPort1936(t *testing.T) {
	c := kubetest.Shared(t)
	netns := kubetest.NewNetNS(t)
	ns := c.CreateNamespace(t, "adm-stats-", nil).Name
	const name = "classic"
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.ClusterRoleBindingName(ns, name), metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), deploy.MonitoringBindingName(ns, "prom"), metav1.DeleteOptions{})
	})
	args := []string{"adm", "router", name, "-n", ns, "--stats-port=1936", "--route-labels", "router=classic",
		"--prometheus-service-account", ns + "/prom", "--monitoring", "--kubeconfig", c.KubeconfigPath, "--apply"}
	stdout, stderr, err := cli(t, nil, args...)
	if err != nil {
		t.Fatalf("adm router --stats-port=1936 --apply: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"deployment/" + name + " created", "secret/" + name + "-stats created", "role/router-monitoring created",
		"servicemonitor/" + name + " skipped: the cluster does not serve monitoring.coreos.com/v1 ServiceMonitor",
		"prometheusrule/" + name + " skipped: the cluster does not serve monitoring.coreos.com/v1 PrometheusRule",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--apply output lacks %q:\n%s", want, stdout)
		}
	}
	dep, err := c.Kube.AppsV1().Deployments(ns).Get(kctx(t), name, metav1.GetOptions{})
	must(t, err)
	ctr := dep.Spec.Template.Spec.Containers[0]
	if ctr.LivenessProbe.HTTPGet.Path != "/healthz" || ctr.ReadinessProbe.HTTPGet.Path != "/healthz/ready" ||
		ctr.LivenessProbe.HTTPGet.Port.IntValue() != 1936 || ctr.ReadinessProbe.HTTPGet.Port.IntValue() != 1936 {
		t.Errorf("probes %+v %+v", ctr.LivenessProbe.HTTPGet, ctr.ReadinessProbe.HTTPGet)
	}
	env := podEnv(t, c, dep)
	for k, v := range map[string]string{"STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936", "ROUTER_METRICS_TYPE": "haproxy",
		"STATS_USERNAME": "admin", "ROUTER_SERVICE_NAME": name, "ROUTER_SERVICE_NAMESPACE": ns} {
		if env[k] != v {
			t.Errorf("pod env %s=%q, want %q", k, env[k], v)
		}
	}
	if len(env["STATS_PASSWORD"]) < 10 {
		t.Fatalf("STATS_PASSWORD %q: want the generated password from the Secret", env["STATS_PASSWORD"])
	}
	// The pod's stats port, moved to a free one on loopback.
	port := strconv.Itoa(freePort(t))
	env["STATS_PORT"] = port
	env["ROUTER_LISTEN_ADDR"] = "127.0.0.1:" + port
	env["ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL"] = "1s"
	ms := &metricsClient{addr: "127.0.0.1:" + port, user: env["STATS_USERNAME"], password: env["STATS_PASSWORD"]}

	b := netns.StartBackend(t, netns.IP(), 8080, "pod-classic")
	kubeService(t, c, ns, "web", b)
	r := startKubeRouter(t, impersonatingKubeconfig(t, c, "system:serviceaccount:"+ns+":"+name), env)
	kubeRoute(t, c, ns, "web", "classic.example.com", "web", map[string]string{"router": "classic"})
	// The router must start with this environment (the issue's first
	// complaint was that it refused to).
	time.Sleep(2 * time.Second)
	if exited, err := r.Exited(); exited {
		t.Fatalf("the router refused the environment of adm router --stats-port=1936 (%v):\n%s", err, r.Log())
	}

	t.Run("serves the route and writes its status", func(t *testing.T) {
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("classic.example.com", "/") }, "pod-classic")
		ingressOf(t, c, ns, "web", name, admitted(corev1.ConditionTrue, ""))
	})
	t.Run("answers /healthz and /healthz/ready on the stats port", func(t *testing.T) {
		waitReady(t, ms)
		if st, body, err := ms.status("/healthz", false); err != nil || st != 200 {
			t.Errorf("/healthz: %d %q %v", st, body, err)
		}
	})
	t.Run("answers /metrics with the generated credentials, with what the alerts query", func(t *testing.T) {
		if st, _, err := ms.status("/metrics", false); err != nil || st == 200 {
			t.Errorf("/metrics without credentials: %d %v, want a refusal", st, err)
		}
		s, err := ms.get()
		must(t, err)
		for _, a := range deploy.Alerts(ns, name) {
			metric, _, _ := strings.Cut(a.Expr, "{")
			if !s.has(metric) {
				t.Errorf("alert %s queries %s, which /metrics does not have", a.Name, metric)
			}
		}
		if v, err := s.value("template_router_reload_failure", nil); err != nil || v != 0 {
			t.Errorf("template_router_reload_failure %v %v", v, err)
		}
	})
	t.Run("lets Prometheus' service account in by bearer token (router-monitoring), and no one else", func(t *testing.T) {
		prom := serviceAccountToken(t, c, ns, "prom")
		other := serviceAccountToken(t, c, ns, "other")
		eventually(t, 10*time.Second, "/metrics with Prometheus' token", func() error {
			st, body, err := bearerGet(ms.addr, "/metrics", prom)
			if err != nil || st != 200 || !strings.Contains(body, "template_router_reload_failure") {
				return fmt.Errorf("%d %.200q %v", st, body, err)
			}
			return nil
		})
		if st, body, err := bearerGet(ms.addr, "/metrics", other); err != nil || st != 403 {
			t.Errorf("/metrics with a token without routers/metrics: %d %.200q %v, want 403", st, body, err)
		}
		// The API server's refusals read "... is forbidden: User ..."; the
		// router's own refusals of the tokens above are expected.
		if strings.Contains(r.Log(), "is forbidden") {
			t.Errorf("the API server refused the router something it needs:\n%s", r.Log())
		}
	})
}
