package deploy

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/templates"
)

func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "*.apps.example.com"},
		DNSNames: []string{"*.apps.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})...)
}

func find[T any](objs []any) T {
	var zero T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			return v
		}
	}
	return zero
}

func objects(t *testing.T, o Options) []any {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(objs))
	for i, obj := range objs {
		out[i] = obj
	}
	return out
}

func envMap(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			m[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			m[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			m[e.Name] = e.Value
		}
	}
	return m
}

func TestDefaults(t *testing.T) {
	objs := objects(t, Options{Name: "router", HostNetwork: true, HostPorts: true})
	d := find[*appsv1.Deployment](objs)
	if d == nil || len(objs) != 5 {
		t.Fatalf("want SA, ClusterRole, binding, Deployment, Service; got %d objects", len(objs))
	}
	spec := d.Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v dnsPolicy %q", spec.HostNetwork, spec.DNSPolicy)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxSurge.String() != "0" || ru.MaxUnavailable.String() != "25%" {
		t.Errorf("rolling update %+v", d.Spec.Strategy)
	}
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("no pod anti-affinity with host ports")
	}
	c := spec.Containers[0]
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/healthz/ready" ||
		c.LivenessProbe.HTTPGet.Port.IntValue() != DefaultMetricsPort || c.ReadinessProbe.HTTPGet.Port.IntValue() != DefaultMetricsPort {
		t.Errorf("probes %+v %+v", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "256Mi" {
		t.Errorf("requests %v", c.Resources.Requests)
	}
	want := map[string]string{
		"ROUTER_SERVICE_NAME": "router", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "80", "ROUTER_SERVICE_HTTPS_PORT": "443", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936",
	}
	if got := envMap(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
	if d.Namespace != "default" || spec.ServiceAccountName != "router" || d.Spec.Template.Labels["router"] != "router" {
		t.Errorf("namespace %q sa %q labels %v", d.Namespace, spec.ServiceAccountName, d.Spec.Template.Labels)
	}
}

func TestFlagsMapToEnv(t *testing.T) {
	cert := selfSigned(t)
	objs := objects(t, Options{
		Name: "shard-a", Namespace: "routers", HostNetwork: true, StatsPort: 1937, StatsUser: "admin", StatsPassword: "s3cret",
		DefaultCert: cert, DefaultCertFile: "cert.pem", Template: []byte("{{ define \"conf/haproxy.config\" }}{{ end }}"), TemplateFile: "t",
		Ciphers: "ECDHE-RSA-AES128-GCM-SHA256", StrictSNI: true, DisableNamespaceOwnershipCheck: true,
		CanonicalHostname: "router.apps.example.com", MaxConnections: 5000, RouteLabels: "shard=a", NamespaceLabels: "team in (x,y)",
		AllowedDomains: "apps.example.com", DeniedDomains: "bad.apps.example.com", Ports: "8080,8443", MetricsPort: 9000,
	})
	d := find[*appsv1.Deployment](objs)
	want := map[string]string{
		"ROUTER_SERVICE_NAME": "shard-a", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "8080", "ROUTER_SERVICE_HTTPS_PORT": "8443", "ROUTER_LISTEN_ADDR": "0.0.0.0:9000",
		"STATS_PORT": "1937", "STATS_USERNAME": "admin", "STATS_PASSWORD": "secret:shard-a-stats/password",
		"ROUTER_CIPHERS": "ECDHE-RSA-AES128-GCM-SHA256", "ROUTER_STRICT_SNI": "true",
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "true", "ROUTER_CANONICAL_HOSTNAME": "router.apps.example.com",
		"ROUTER_MAX_CONNECTIONS": "5000", "ROUTE_LABELS": "shard=a", "NAMESPACE_LABELS": "team in (x,y)",
		"ROUTER_ALLOWED_DOMAINS": "apps.example.com", "ROUTER_DENIED_DOMAINS": "bad.apps.example.com",
		"DEFAULT_CERTIFICATE_DIR": DefaultCertificateDir, "TEMPLATE_FILE": CustomTemplateDir + "/" + CustomTemplateKey,
	}
	c := d.Spec.Template.Spec.Containers[0]
	if got := envMap(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %v\nwant %v", got, want)
	}
	if c.ReadinessProbe.HTTPGet.Port.IntValue() != 9000 {
		t.Errorf("probe port %v", c.ReadinessProbe.HTTPGet.Port)
	}
	var secrets []string
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			secrets = append(secrets, s.Name)
			if s.Name == "shard-a-certs" && (s.Type != corev1.SecretTypeTLS || !strings.Contains(string(s.Data["tls.key"]), "PRIVATE KEY") || strings.Contains(string(s.Data["tls.crt"]), "PRIVATE KEY")) {
				t.Errorf("certificate secret %+v", s)
			}
			if s.Name == "shard-a-stats" && string(s.Data["password"]) != "s3cret" {
				t.Errorf("stats secret %+v", s)
			}
		}
	}
	if !reflect.DeepEqual(secrets, []string{"shard-a-stats", "shard-a-certs"}) {
		t.Errorf("secrets %v", secrets)
	}
	if cm := find[*corev1.ConfigMap](objs); cm == nil || cm.Data[CustomTemplateKey] == "" {
		t.Errorf("template configmap %+v", cm)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["default-certificate"] != DefaultCertificateDir || mounts["template"] != CustomTemplateDir {
		t.Errorf("mounts %v", mounts)
	}
	if b := find[*rbacv1.ClusterRoleBinding](objs); b.Subjects[0].Name != "shard-a" || b.Subjects[0].Namespace != "routers" {
		t.Errorf("binding %+v", b.Subjects)
	}
}

func TestWithoutHostNetworkOrHostPortsSurgeIsAllowed(t *testing.T) {
	d := find[*appsv1.Deployment](objects(t, Options{Name: "r", HostNetwork: false, HostPorts: false}))
	spec := d.Spec.Template.Spec
	if spec.HostNetwork || spec.DNSPolicy != "" || spec.Affinity != nil || spec.Containers[0].Ports[0].HostPort != 0 {
		t.Errorf("pod spec %+v", spec)
	}
	if d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" {
		t.Errorf("maxSurge %v", d.Spec.Strategy.RollingUpdate.MaxSurge)
	}
	d = find[*appsv1.Deployment](objects(t, Options{Name: "r", HostPorts: true, Ports: "8080:80,8443:443"}))
	p := d.Spec.Template.Spec.Containers[0].Ports
	if p[0].ContainerPort != 8080 || p[0].HostPort != 80 || p[1].HostPort != 443 || d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "0" {
		t.Errorf("ports %+v strategy %+v", p, d.Spec.Strategy.RollingUpdate)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Name: "Bad_Name"}, "router name"},
		{Options{Name: ""}, "router name"},
		{Options{Name: "r", NodeSelector: "a=b=c"}, "--selector"},
		{Options{Name: "r", Labels: "x=y z"}, "--labels"},
		{Options{Name: "r", Ports: "80"}, "--ports"},
		{Options{Name: "r", Ports: "80,99999"}, "--ports"},
		{Options{Name: "r", Ports: "80,80"}, "--ports"},
		{Options{Name: "r", HostNetwork: true, Ports: "8080:80,443"}, "host port must equal"},
		{Options{Name: "r", RouteLabels: "a in (b"}, "--route-labels"},
		{Options{Name: "r", NamespaceLabels: "!!"}, "--namespace-labels"},
		{Options{Name: "r", AllowedDomains: "a..b"}, "--allowed-domains"},
		{Options{Name: "r", StatsPort: 443}, "--stats-port"},
		{Options{Name: "r", StatsPassword: "x"}, "need --stats-port"},
		{Options{Name: "r", StatsPort: 1937, StatsPassword: "a b"}, "--stats-password"},
		{Options{Name: "r", DefaultCert: []byte("nope"), DefaultCertFile: "c.pem"}, "--default-cert c.pem"},
		{Options{Name: "r", Template: []byte(" \n"), TemplateFile: "t"}, "--template t"},
		{Options{Name: "r", MaxConnections: -1}, "--max-connections"},
		{Options{Name: "r", Replicas: -1}, "--replicas"},
	} {
		if _, err := Objects(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.o, err, tc.want)
		}
	}
}

// TestClusterRoleMatchesDocs keeps docs/kubernetes.md's minimal RBAC and
// the generated ClusterRole the same.
func TestClusterRoleMatchesDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Minimal RBAC\\s*```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/kubernetes.md: no yaml block under \"## Minimal RBAC\"")
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(m[1], &role); err != nil {
		t.Fatalf("docs/kubernetes.md RBAC: %v", err)
	}
	if role.Name != ClusterRoleName {
		t.Errorf("documented role %q, generated %q", role.Name, ClusterRoleName)
	}
	if !reflect.DeepEqual(role.Rules, ClusterRoleRules()) {
		t.Errorf("documented rules\n%+v\ngenerated\n%+v", role.Rules, ClusterRoleRules())
	}
}

// dockerfile returns the runtime stage's instructions (after the last FROM)
// as instruction → arguments, joined continuation lines.
func dockerfile(t *testing.T) (all string, runtime map[string][]string) {
	t.Helper()
	data, err := os.ReadFile("../../images/router/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	runtime = map[string][]string{}
	for _, l := range lines {
		instr, args, _ := strings.Cut(l, " ")
		if strings.EqualFold(instr, "FROM") {
			runtime = map[string][]string{}
		}
		runtime[strings.ToUpper(instr)] = append(runtime[strings.ToUpper(instr)], strings.TrimSpace(args))
	}
	return string(data), runtime
}

// TestDockerfileAgreesWithTheBinary keeps the image's paths, user and
// ports and the binary's defaults (and this package's constants) the same.
func TestDockerfileAgreesWithTheBinary(t *testing.T) {
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	all, rt := dockerfile(t)
	if cfg.WorkingDir != WorkingDir || strings.TrimSuffix(templates.OpenShiftBaseDir, "/") != WorkingDir {
		t.Fatalf("working dir: binary %q, deploy %q, templates %q", cfg.WorkingDir, WorkingDir, templates.OpenShiftBaseDir)
	}
	if got := rt["WORKDIR"]; !reflect.DeepEqual(got, []string{WorkingDir}) {
		t.Errorf("WORKDIR %v, want %s", got, WorkingDir)
	}
	if env := strings.Join(rt["ENV"], " "); !strings.Contains(env, "ROUTER_WORKING_DIR="+WorkingDir) {
		t.Errorf("ENV %q does not set ROUTER_WORKING_DIR=%s", env, WorkingDir)
	}
	if got := rt["USER"]; !reflect.DeepEqual(got, []string{strconv.Itoa(ImageUID)}) {
		t.Errorf("USER %v, want %d (Deployment runAsUser)", got, ImageUID)
	}
	// The stats/metrics port when STATS_PORT and ROUTER_LISTEN_ADDR are unset.
	metricsPort := strconv.Itoa(config.DefaultStatsPort)
	if metricsPort != strconv.Itoa(DefaultMetricsPort) {
		t.Errorf("metrics port: binary %s, deploy %d", metricsPort, DefaultMetricsPort)
	}
	wantExpose := []string{strconv.Itoa(cfg.HTTPPort), strconv.Itoa(cfg.HTTPSPort), metricsPort}
	if got := strings.Fields(strings.Join(rt["EXPOSE"], " ")); !reflect.DeepEqual(got, wantExpose) {
		t.Errorf("EXPOSE %v, want %v", got, wantExpose)
	}
	// The directories the router creates in its working directory exist
	// and belong to the image's user.
	run := strings.Join(rt["RUN"], " ")
	for _, d := range []string{"conf", "router/certs", "router/cacerts", "run"} {
		if !strings.Contains(run, path.Join(WorkingDir, d)) {
			t.Errorf("the image does not create %s", path.Join(WorkingDir, d))
		}
	}
	if !strings.Contains(run, "chown -R "+strconv.Itoa(ImageUID)+":"+strconv.Itoa(ImageUID)+" "+WorkingDir) {
		t.Errorf("the image does not give %s to user %d", WorkingDir, ImageUID)
	}
	if !strings.Contains(run, "useradd --uid "+strconv.Itoa(ImageUID)) {
		t.Errorf("the image does not create user %d", ImageUID)
	}
	if !strings.Contains(run, "apt-get install") || !strings.Contains(run, "haproxy") ||
		!strings.Contains(run, "setcap cap_net_bind_service=+ep /usr/sbin/haproxy") {
		t.Errorf("the image must install Debian's haproxy and let it bind 80/443 (setcap)")
	}
	copies := strings.Join(rt["COPY"], "\n")
	if !strings.Contains(copies, " "+DefaultTemplatePath) {
		t.Errorf("the default template is not copied to %s", DefaultTemplatePath)
	}
	if !strings.HasPrefix(DefaultTemplatePath, WorkingDir+"/conf/") || !strings.HasPrefix(CustomTemplateDir, WorkingDir+"/conf/") {
		t.Errorf("template paths %s %s outside %s/conf", DefaultTemplatePath, CustomTemplateDir, WorkingDir)
	}
	if ep := strings.Join(rt["ENTRYPOINT"], ""); !strings.Contains(ep, "/usr/bin/openshift-router") || !strings.Contains(copies, " /usr/bin/openshift-router") {
		t.Errorf("ENTRYPOINT %q / binary not at /usr/bin/openshift-router", ep)
	}
	if got := rt["FROM"]; len(got) != 1 || got[0] != "debian:bookworm-slim" {
		t.Errorf("runtime base %v, want debian:bookworm-slim", got)
	}
	// The build stage uses the Go version of go.mod.
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gm := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if gm == nil || !strings.Contains(all, "FROM golang:"+string(gm[1])+"-bookworm AS build") {
		t.Errorf("build stage is not golang:%s-bookworm", gm[1])
	}
}
