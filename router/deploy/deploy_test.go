package deploy

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// admDefaults are the options of "adm router NAME" without flags.
func admDefaults(name string) Options {
	return Options{Name: name, HostNetwork: true, HostPorts: true, StatsPort: DefaultStatsPort,
		PrometheusServiceAccount: DefaultPrometheusServiceAccount}
}

func kinds(objs []any) []string {
	var out []string
	for _, o := range objs {
		switch v := o.(type) {
		case interface{ GetObjectKind() schema.ObjectKind }:
			out = append(out, v.GetObjectKind().GroupVersionKind().Kind)
		}
	}
	return out
}

func TestDefaultsAreOcAdmRoutersStatsPort(t *testing.T) {
	objs := objects(t, admDefaults("router"))
	wantKinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "ClusterRoleBinding", "Secret", "Deployment", "Service"}
	if got := kinds(objs); !reflect.DeepEqual(got, wantKinds) {
		t.Fatalf("objects %v, want %v", got, wantKinds)
	}
	d := find[*appsv1.Deployment](objs)
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
		c.LivenessProbe.HTTPGet.Port.IntValue() != DefaultStatsPort || c.ReadinessProbe.HTTPGet.Port.IntValue() != DefaultStatsPort {
		t.Errorf("probes %+v %+v", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "256Mi" {
		t.Errorf("requests %v", c.Resources.Requests)
	}
	want := map[string]string{
		"ROUTER_SERVICE_NAME": "router", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "80", "ROUTER_SERVICE_HTTPS_PORT": "443",
		"STATS_PORT": "1936", "ROUTER_LISTEN_ADDR": "0.0.0.0:1936", "ROUTER_METRICS_TYPE": "haproxy",
		"STATS_USERNAME": "admin", "STATS_PASSWORD": "secret:router-stats/password",
	}
	if got := envMap(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %v\nwant %v", got, want)
	}
	if s := find[*corev1.Secret](objs); s == nil || s.Name != "router-stats" || len(s.Data["password"]) != 20 {
		t.Errorf("stats secret %+v: want a generated 20-character password", s)
	}
	var portNames []string
	for _, p := range c.Ports {
		portNames = append(portNames, fmt.Sprintf("%s:%d:%d", p.Name, p.ContainerPort, p.HostPort))
	}
	if want := []string{"http:80:80", "https:443:443", "metrics:1936:1936"}; !reflect.DeepEqual(portNames, want) {
		t.Errorf("container ports %v, want %v", portNames, want)
	}
	svc := find[*corev1.Service](objs)
	if len(svc.Spec.Ports) != 3 || svc.Spec.Ports[2].Name != "metrics" || svc.Spec.Ports[2].Port != 1936 || svc.Annotations != nil {
		t.Errorf("service %+v", svc)
	}
	if d.Namespace != "default" || spec.ServiceAccountName != "router" || d.Spec.Template.Labels["router"] != "router" {
		t.Errorf("namespace %q sa %q labels %v", d.Namespace, spec.ServiceAccountName, d.Spec.Template.Labels)
	}
}

func TestStatsPortZeroLeavesHAProxysHealthCheck(t *testing.T) {
	o := admDefaults("router")
	o.StatsPort = 0
	objs := objects(t, o)
	c := find[*appsv1.Deployment](objs).Spec.Template.Spec.Containers[0]
	want := map[string]string{
		"ROUTER_SERVICE_NAME": "router", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "80", "ROUTER_SERVICE_HTTPS_PORT": "443", "STATS_PORT": "0",
	}
	if got := envMap(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %v\nwant %v", got, want)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/healthz" ||
		c.LivenessProbe.HTTPGet.Port.IntValue() != 1936 || len(c.Ports) != 2 {
		t.Errorf("probes %+v %+v ports %+v", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet, c.Ports)
	}
	if s := find[*corev1.Secret](objs); s != nil {
		t.Errorf("a stats secret without a stats port: %+v", s)
	}
	if svc := find[*corev1.Service](objs); len(svc.Spec.Ports) != 2 {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
}

func TestFlagsMapToEnv(t *testing.T) {
	cert := selfSigned(t)
	caPEM := cert[:bytes.Index(cert, []byte("-----BEGIN EC"))]
	crl := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{0x30, 0}})
	objs := objects(t, Options{
		Name: "shard-a", Namespace: "routers", HostNetwork: true, StatsPort: 1937, StatsUser: "scraper", StatsPassword: "s3cret",
		DefaultCert: cert, DefaultCertFile: "cert.pem", Template: []byte("{{ define \"conf/haproxy.config\" }}{{ end }}"), TemplateFile: "t",
		Ciphers: "ECDHE-RSA-AES128-GCM-SHA256", StrictSNI: true, DisableNamespaceOwnershipCheck: true,
		CanonicalHostname: "router.apps.example.com", MaxConnections: "auto", RouteLabels: "shard=a", NamespaceLabels: "team in (x,y)",
		AllowedDomains: "apps.example.com", DeniedDomains: "bad.apps.example.com", Ports: "8080,8443",
		Threads: 4, ForceSubdomain: "${name}-${namespace}.apps.example.com",
		MutualTLSAuth: "required", MutualTLSAuthCA: caPEM, MutualTLSAuthCRL: crl, MutualTLSAuthFilter: "CN=client[0-9]+",
		MetricsCertSecret: "shard-a-metrics",
	})
	d := find[*appsv1.Deployment](objs)
	want := map[string]string{
		"ROUTER_SERVICE_NAME": "shard-a", "ROUTER_SERVICE_NAMESPACE": "fieldRef:metadata.namespace",
		"ROUTER_SERVICE_HTTP_PORT": "8080", "ROUTER_SERVICE_HTTPS_PORT": "8443", "ROUTER_LISTEN_ADDR": "0.0.0.0:1937",
		"ROUTER_METRICS_TYPE": "haproxy", "STATS_PORT": "1937", "STATS_USERNAME": "scraper", "STATS_PASSWORD": "secret:shard-a-stats/password",
		"ROUTER_METRICS_TLS_CERT_FILE": MetricsCertDir + "/tls.crt", "ROUTER_METRICS_TLS_KEY_FILE": MetricsCertDir + "/tls.key",
		"ROUTER_CIPHERS": "ECDHE-RSA-AES128-GCM-SHA256", "ROUTER_STRICT_SNI": "true",
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "true", "ROUTER_CANONICAL_HOSTNAME": "router.apps.example.com",
		"ROUTER_MAX_CONNECTIONS": "auto", "ROUTE_LABELS": "shard=a", "NAMESPACE_LABELS": "team in (x,y)",
		"ROUTER_ALLOWED_DOMAINS": "apps.example.com", "ROUTER_DENIED_DOMAINS": "bad.apps.example.com",
		"ROUTER_THREADS": "4", "ROUTER_SUBDOMAIN": "${name}-${namespace}.apps.example.com", "ROUTER_OVERRIDE_HOSTNAME": "true",
		"ROUTER_MUTUAL_TLS_AUTH": "required", "ROUTER_MUTUAL_TLS_AUTH_CA": MutualTLSDir + "/ca.pem",
		"ROUTER_MUTUAL_TLS_AUTH_CRL": MutualTLSDir + "/crl.pem", "ROUTER_MUTUAL_TLS_AUTH_FILTER": "CN=client[0-9]+",
		"DEFAULT_CERTIFICATE_DIR": DefaultCertificateDir, "TEMPLATE_FILE": CustomTemplateDir + "/" + CustomTemplateKey,
	}
	c := d.Spec.Template.Spec.Containers[0]
	if got := envMap(c); !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %v\nwant %v", got, want)
	}
	if c.ReadinessProbe.HTTPGet.Port.IntValue() != 1937 || c.LivenessProbe.HTTPGet.Port.IntValue() != 1937 {
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
			if s.Name == "shard-a-mutual-tls-auth" && (!bytes.Equal(s.Data["ca.pem"], caPEM) || !bytes.Equal(s.Data["crl.pem"], crl)) {
				t.Errorf("mutual TLS secret %+v", s)
			}
		}
	}
	if !reflect.DeepEqual(secrets, []string{"shard-a-stats", "shard-a-mutual-tls-auth", "shard-a-certs"}) {
		t.Errorf("secrets %v", secrets)
	}
	if cm := find[*corev1.ConfigMap](objs); cm == nil || cm.Data[CustomTemplateKey] == "" {
		t.Errorf("template configmap %+v", cm)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	wantMounts := map[string]string{"default-certificate": DefaultCertificateDir, "template": CustomTemplateDir,
		"mutual-tls-auth": MutualTLSDir, "metrics-certs": MetricsCertDir}
	if !reflect.DeepEqual(mounts, wantMounts) {
		t.Errorf("mounts %v, want %v", mounts, wantMounts)
	}
	if svc := find[*corev1.Service](objs); svc.Annotations[ServingCertAnnotation] != "shard-a-metrics" {
		t.Errorf("service annotations %v", svc.Annotations)
	}
	if b := find[*rbacv1.ClusterRoleBinding](objs); b.Subjects[0].Name != "shard-a" || b.Subjects[0].Namespace != "routers" {
		t.Errorf("binding %+v", b.Subjects)
	}
}

func TestSubdomainWithoutOverride(t *testing.T) {
	o := admDefaults("r")
	o.Subdomain = "${name}.apps.example.com"
	env := envMap(find[*appsv1.Deployment](objects(t, o)).Spec.Template.Spec.Containers[0])
	if env["ROUTER_SUBDOMAIN"] != "${name}.apps.example.com" || env["ROUTER_OVERRIDE_HOSTNAME"] != "" {
		t.Errorf("env %v", env)
	}
}

func TestGeneratedPasswordsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		p, err := GeneratePassword()
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[a-zA-Z0-9]{20}$`).MatchString(p) || seen[p] {
			t.Fatalf("password %q (seen before: %v)", p, seen[p])
		}
		seen[p] = true
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
	d = find[*appsv1.Deployment](objects(t, Options{Name: "r", HostPorts: true, Ports: "8080:80,8443:443", StatsPort: 1936}))
	p := d.Spec.Template.Spec.Containers[0].Ports
	if p[0].ContainerPort != 8080 || p[0].HostPort != 80 || p[1].HostPort != 443 || p[2].HostPort != 0 || d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "0" {
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
		{Options{Name: "r", StatsPort: 443}, "--stats-port 443"},
		{Options{Name: "r", StatsPort: 70000}, "--stats-port 70000"},
		{Options{Name: "r", StatsPort: 1937, StatsPassword: "a b"}, "--stats-password"},
		{Options{Name: "r", StatsPort: 1937, StatsUser: "a:b"}, "--stats-user"},
		{Options{Name: "r", DefaultCert: []byte("nope"), DefaultCertFile: "c.pem"}, "--default-cert c.pem"},
		{Options{Name: "r", Template: []byte(" \n"), TemplateFile: "t"}, "--template t"},
		{Options{Name: "r", MaxConnections: "-1"}, "--max-connections"},
		{Options{Name: "r", MaxConnections: "lots"}, "--max-connections"},
		{Options{Name: "r", Threads: -1}, "--threads"},
		{Options{Name: "r", Replicas: -1}, "--replicas"},
		{Options{Name: "r", CanonicalHostname: "192.0.2.1"}, "not an IP address"},
		{Options{Name: "r", Subdomain: "a.example.com", ForceSubdomain: "b.example.com"}, "only one of --subdomain, --force-subdomain"},
		{Options{Name: "r", MutualTLSAuth: "sometimes"}, "--mutual-tls-auth \"sometimes\""},
		{Options{Name: "r", MutualTLSAuthFilter: "CN=x"}, "need --mutual-tls-auth required or optional"},
		{Options{Name: "r", MutualTLSAuth: "required", MutualTLSAuthCA: []byte("x"), MutualTLSAuthCAFile: "ca.pem"}, "--mutual-tls-auth-ca ca.pem"},
		{Options{Name: "r", MutualTLSAuth: "optional", MutualTLSAuthCRL: []byte("x"), MutualTLSAuthCRLFile: "crl.pem"}, "--mutual-tls-auth-crl crl.pem"},
		{Options{Name: "r", MutualTLSAuth: "optional", MutualTLSAuthFilter: "CN=(x"}, "--mutual-tls-auth-filter"},
		{Options{Name: "r", MetricsCertSecret: "m"}, "--metrics-cert-secret needs --stats-port"},
		{Options{Name: "r", StatsPort: 1936, MetricsCertSecret: "Bad_Secret"}, "--metrics-cert-secret"},
		{Options{Name: "r", PrometheusServiceAccount: "prometheus"}, "--prometheus-service-account"},
		{Options{Name: "r", Monitoring: true, PrometheusServiceAccount: DefaultPrometheusServiceAccount}, "--monitoring needs --stats-port"},
		{Options{Name: "r", Monitoring: true, StatsPort: 1936}, "--monitoring needs --prometheus-service-account"},
	} {
		if _, err := Objects(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.o, err, tc.want)
		}
	}
}

// TestRBACForMetricsBearerTokens: the router may review tokens and access
// (the /metrics bearer-token check) and Prometheus' service account is
// bound to router-monitoring (get routers/metrics).
func TestRBACForMetricsBearerTokens(t *testing.T) {
	rules := ClusterRoleRules()
	has := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	if !has(rules, "authentication.k8s.io", "tokenreviews", "create") || !has(rules, "authorization.k8s.io", "subjectaccessreviews", "create") {
		t.Errorf("router rules %+v lack tokenreviews/subjectaccessreviews create", rules)
	}
	o := admDefaults("r")
	o.PrometheusServiceAccount = "mon/prom"
	objs := objects(t, o)
	var roles []*rbacv1.ClusterRole
	var bindings []*rbacv1.ClusterRoleBinding
	for _, obj := range objs {
		switch v := obj.(type) {
		case *rbacv1.ClusterRole:
			roles = append(roles, v)
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, v)
		}
	}
	if len(roles) != 2 || roles[1].Name != "router-monitoring" || !reflect.DeepEqual(roles[1].Rules, []rbacv1.PolicyRule{
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routers/metrics"}, Verbs: []string{"get"}}}) {
		t.Fatalf("cluster roles %+v", roles)
	}
	b := bindings[1]
	if len(bindings) != 2 || b.Name != "router-monitoring:mon:prom" || b.RoleRef.Name != "router-monitoring" ||
		!reflect.DeepEqual(b.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prom", Namespace: "mon"}}) {
		t.Errorf("monitoring binding %+v", b)
	}
	o.PrometheusServiceAccount = ""
	got := kinds(objects(t, o))
	if n := len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return k != "ClusterRole" })); n != 1 {
		t.Errorf("without a Prometheus service account: %v", got)
	}
}

// monitoringYAML prints the objects of --monitoring and returns the
// documents of kind.
func monitoringYAML(t *testing.T, o Options, kind string) map[string]any {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	us, err := ToUnstructured(objs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := YAML(us)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if m["kind"] == kind {
			return m
		}
	}
	t.Fatalf("no %s in\n%s", kind, out)
	return nil
}

func TestServiceMonitorYAML(t *testing.T) {
	o := admDefaults("edge")
	o.Namespace = "routers"
	o.Monitoring = true
	want := `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: edge
  namespace: routers
  labels: {router: edge}
spec:
  namespaceSelector: {matchNames: [routers]}
  selector: {matchLabels: {router: edge}}
  endpoints:
  - port: metrics
    path: /metrics
    interval: 30s
    scheme: http
    bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`
	var wantMap map[string]any
	if err := yaml.Unmarshal([]byte(want), &wantMap); err != nil {
		t.Fatal(err)
	}
	if got := monitoringYAML(t, o, "ServiceMonitor"); !reflect.DeepEqual(got, wantMap) {
		t.Errorf("ServiceMonitor\n got %v\nwant %v", got, wantMap)
	}
	o.MetricsCertSecret = "edge-metrics"
	got := monitoringYAML(t, o, "ServiceMonitor")
	ep := got["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	wantTLS := map[string]any{"caFile": DefaultMonitoringCAFile, "serverName": "edge.routers.svc"}
	if ep["scheme"] != "https" || !reflect.DeepEqual(ep["tlsConfig"], wantTLS) {
		t.Errorf("with a metrics certificate: endpoint %v", ep)
	}
}

func TestPrometheusRuleYAML(t *testing.T) {
	o := admDefaults("edge")
	o.Namespace = "routers"
	o.Monitoring = true
	want := `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: edge
  namespace: routers
  labels: {router: edge, role: alert-rules}
spec:
  groups:
  - name: openshift-router.rules
    rules:
    - alert: HAProxyReloadFail
      expr: template_router_reload_failure{job="edge",namespace="routers"} == 1
      for: 5m
      labels: {severity: warning}
      annotations:
        summary: HAProxy reload failure
        description: This alert fires when HAProxy fails to reload its configuration, which will result in the router not picking up recently created or modified routes.
        message: HAProxy reloads are failing on {{ $labels.pod }}. Router is not respecting recently created or modified routes
    - alert: HAProxyDown
      expr: haproxy_up{job="edge",namespace="routers"} == 0
      for: 5m
      labels: {severity: critical}
      annotations:
        summary: HAProxy is down
        description: This alert fires when metrics report that HAProxy is down.
        message: HAProxy metrics are reporting that HAProxy is down on pod {{ $labels.namespace }} / {{ $labels.pod }}
`
	var wantMap map[string]any
	if err := yaml.Unmarshal([]byte(want), &wantMap); err != nil {
		t.Fatal(err)
	}
	if got := monitoringYAML(t, o, "PrometheusRule"); !reflect.DeepEqual(got, wantMap) {
		t.Errorf("PrometheusRule\n got %v\nwant %v", got, wantMap)
	}
}

func TestMonitoringAddsDiscoveryRoleAndCRDObjects(t *testing.T) {
	o := admDefaults("edge")
	o.Monitoring = true
	got := kinds(objects(t, o))
	want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Secret", "Deployment", "Service", "ServiceMonitor", "PrometheusRule"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	for _, obj := range objects(t, o) {
		if rb, ok := obj.(*rbacv1.RoleBinding); ok && (rb.Namespace != "default" || rb.Subjects[0].Name != "prometheus-k8s" || rb.Subjects[0].Namespace != "openshift-monitoring") {
			t.Errorf("role binding %+v", rb)
		}
	}
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	us, err := ToUnstructured(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if _, _, err := Resource(u); err != nil {
			t.Errorf("no API resource for %s: %v", u.GetKind(), err)
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
	// The stats port is OpenShift's 1936; where the binary derives a
	// metrics address by default, it is on that port.
	metricsPort := strconv.Itoa(DefaultStatsPort)
	if DefaultStatsPort != 1936 {
		t.Errorf("stats port %d, OpenShift's is 1936", DefaultStatsPort)
	}
	if cfg.Metrics.ListenAddr != "" {
		_, p, err := net.SplitHostPort(cfg.Metrics.ListenAddr)
		if err != nil || p != metricsPort {
			t.Errorf("metrics address: binary %q (%v), deploy port %d", cfg.Metrics.ListenAddr, err, DefaultStatsPort)
		}
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
	// Debian 13: its haproxy package is HAProxy 3.0 (Debian 12's 2.6 does
	// not load OpenShift's current template).
	if got := rt["FROM"]; len(got) != 1 || got[0] != "debian:trixie-slim" {
		t.Errorf("runtime base %v, want debian:trixie-slim", got)
	}
	// The build stage uses the Go version of go.mod.
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gm := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if gm == nil || !strings.Contains(all, "FROM golang:"+string(gm[1])+"-trixie AS build") {
		t.Errorf("build stage is not golang:%s-trixie", gm[1])
	}
}
