package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
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
		gvr, namespaced, err := deploy.Resource(u)
		must(t, err)
		ri := c.Dynamic.Resource(gvr)
		var created *unstructured.Unstructured
		if namespaced {
			created, err = ri.Namespace(u.GetNamespace()).Create(kctx(t), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		} else {
			created, err = ri.Create(kctx(t), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		if err != nil && !(apierrors.IsAlreadyExists(err) && u.GetKind() == "ClusterRole") {
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
		"ROUTER_SERVICE_HTTP_PORT": "80", "ROUTER_SERVICE_HTTPS_PORT": "443", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
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
		{"ports", []string{"--ports", "8080,8443", "--metrics-port", "9936"}, with("ROUTER_SERVICE_HTTP_PORT", "8080",
			"ROUTER_SERVICE_HTTPS_PORT", "8443", "ROUTER_LISTEN_ADDR", "0.0.0.0:9936")},
		{"host ports without host network", []string{"--host-network=false", "--ports", "8080:80,8443:443"}, with("ROUTER_SERVICE_HTTP_PORT", "8080",
			"ROUTER_SERVICE_HTTPS_PORT", "8443")},
		{"no host network, no host ports", []string{"--host-network=false", "--host-ports=false"}, base},
		{"stats", []string{"--stats-port", "1937", "--stats-user", "admin", "--stats-password", "s3cret"},
			with("STATS_PORT", "1937", "STATS_USERNAME", "admin", "STATS_PASSWORD", "secret:router-stats/password")},
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
		stdout, stderr, err := cli(t, nil, "adm", "router", "router", "-n", ns, "--stats-port", "1937")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		docs := strings.Split(stdout, "\n---\n")
		if len(docs) != len(admObjects(t, "router", "-n", ns, "--stats-port", "1937")) || !strings.HasPrefix(stdout, "apiVersion: v1\nkind: ServiceAccount\n") {
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
		{[]string{}, "accepts 1 arg"},
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
	})

	stdout, stderr, err := cli(t, nil, append(args, "--apply")...)
	if err != nil {
		t.Fatalf("--apply: %v\n%s", err, stderr)
	}
	for _, want := range []string{"serviceaccount/" + name + " created", "clusterrolebinding/" + deploy.ClusterRoleBindingName(ns, name) + " created",
		"deployment/" + name + " created", "service/" + name + " created"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--apply output lacks %q:\n%s", want, stdout)
		}
	}
	objects := len(strings.Split(strings.TrimSpace(stdout), "\n"))
	if objects != 5 { // ServiceAccount, ClusterRole, ClusterRoleBinding, Deployment, Service
		t.Errorf("--apply applied %d objects, want 5:\n%s", objects, stdout)
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
	env := map[string]string{"ROUTER_SERVICE_NAMESPACE": ns}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		switch e.Name {
		case "ROUTER_SERVICE_HTTP_PORT", "ROUTER_SERVICE_HTTPS_PORT", "ROUTER_LISTEN_ADDR", "ROUTER_SERVICE_NAMESPACE":
		default:
			env[e.Name] = e.Value
		}
	}
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
