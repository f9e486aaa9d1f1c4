package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// ingressOperatorEnv is the router container's environment that OpenShift
// 4's ingress operator generates for a default IngressController
// (HostNetwork endpoint publishing, no tuning), as built by
// desiredRouterDeployment in cluster-ingress-operator's
// pkg/operator/controller/ingress/deployment.go (release-4.22: HAProxy in
// the router container; later releases add ROUTER_HAPROXY_ADMIN_UNIX_SOCKET
// for a HAProxy sidecar, tested in sidecar_test.go). The domain is a
// placeholder for the cluster's; file paths and ports are filled in by the
// test (the operator mounts the files at /etc/pki/tls/... and
// /var/lib/haproxy/conf/metrics-auth/...).
func ingressOperatorEnv() map[string]string {
	return map[string]string{
		"ROUTER_SERVICE_NAMESPACE":                 "openshift-ingress",
		"ROUTER_SERVICE_NAME":                      "default",
		"ROUTER_METRICS_TYPE":                      "haproxy",
		"ROUTER_LOAD_BALANCE_ALGORITHM":            "random",
		"ROUTER_TCP_BALANCE_SCHEME":                "source",
		"ROUTER_DOMAIN":                            "apps.example.com",
		"ROUTER_CANONICAL_HOSTNAME":                "router-default.apps.example.com",
		"ROUTER_THREADS":                           "4",
		"RELOAD_INTERVAL":                          "5s",
		"ROUTER_CIPHERS":                           "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305",
		"ROUTER_CIPHERSUITES":                      "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
		"ROUTER_CURVES":                            "X25519MLKEM768:X25519:P-256:P-384:P-521",
		"SSL_MIN_VERSION":                          "TLSv1.2",
		"ROUTER_METRICS_TLS_CIPHERS":               operatorMetricsCiphers,
		"ROUTER_METRICS_TLS_MIN_VERSION":           operatorMetricsMinVersion,
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "false",
		"ROUTER_ALLOW_WILDCARD_ROUTES":             "false",
		"ROUTER_SET_FORWARDED_HEADERS":             "append",
		"ROUTER_DISABLE_HTTP2":                     "true",
		"ROUTER_ENABLE_EXTERNAL_CERTIFICATE":       "true",
	}
}

// TestIngressOperatorDefaultEnvironment starts the router with the
// environment the ingress operator generates for a default
// IngressController, against the real kube-apiserver: it starts without a
// warning beyond the curves this OpenSSL lacks, serves every route type
// (unsecured, edge with the default certificate, passthrough, re-encrypt
// verified against the service CA, and a route with spec.subdomain under
// ROUTER_DOMAIN), writes status as router "default" with the canonical
// host name, answers the probes over plain HTTP on STATS_PORT, and serves
// /metrics over TLS with the operator's cipher settings to the credentials
// from the mounted files.
//
// It runs twice: as release-4.22 deploys it (HAProxy in the router
// container) and as later releases do (HAProxy in its own container,
// started as the operator starts it, reloaded through
// ROUTER_HAPROXY_ADMIN_UNIX_SOCKET).
func TestIngressOperatorDefaultEnvironment(t *testing.T) {
	t.Run("HAProxy in the router container (4.22)", func(t *testing.T) { testIngressOperatorEnvironment(t, false) })
	t.Run("HAProxy in a sidecar container (4.23 and later)", func(t *testing.T) { testIngressOperatorEnvironment(t, true) })
}

func testIngressOperatorEnvironment(t *testing.T, sidecarMode bool) {
	c := kubetest.Shared(t)
	label := fmt.Sprintf("op-%d", time.Now().UnixNano()%1_000_000)
	ns := c.CreateNamespace(t, "operator-", map[string]string{"operator-e2e": label}).Name
	net := kubetest.NewNetNS(t)

	// Certificates: the default certificate (DEFAULT_CERTIFICATE_DIR), the
	// service CA (DEFAULT_DESTINATION_CA_PATH) and a backend certificate it
	// signed for the service's DNS name, and a passthrough backend's own.
	dir := t.TempDir()
	ingressCA, err := testcerts.NewCA("ingress-operator CA", time.Hour)
	must(t, err)
	def, err := ingressCA.Issue("*.apps.example.com", []string{"*.apps.example.com"}, time.Hour)
	must(t, err)
	serviceCA, err := testcerts.NewCA("service CA", time.Hour)
	must(t, err)
	secure, err := serviceCA.Issue("secure."+ns+".svc", []string{"secure." + ns + ".svc"}, time.Hour)
	must(t, err)
	ptCert, err := ingressCA.Issue("pt.apps.example.com", []string{"pt.apps.example.com"}, time.Hour)
	must(t, err)
	certDir := filepath.Join(dir, "default-certificate")
	must(t, os.MkdirAll(certDir, 0o755))
	must(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), []byte(def.CertPEM), 0o644))
	must(t, os.WriteFile(filepath.Join(certDir, "tls.key"), []byte(def.KeyPEM), 0o644))
	serviceCAPath := filepath.Join(dir, "service-ca.crt")
	must(t, os.WriteFile(serviceCAPath, []byte(serviceCA.CertPEM), 0o644))

	plain := net.StartBackend(t, net.IP(), 8080, "pod-plain")
	ptIP, reIP := net.AddAddress(t), net.AddAddress(t)
	pt := net.StartTLSBackend(t, ptIP, 8443, "pod-passthrough", ptCert.CertPEM, ptCert.KeyPEM)
	re := net.StartTLSBackend(t, reIP, 8443, "pod-reencrypt", secure.CertPEM, secure.KeyPEM)
	kubeService(t, c, ns, "web", plain)
	kubeService(t, c, ns, "pt", pt)
	kubeService(t, c, ns, "secure", re)

	create := func(name, host, subdomain, service string, tls *routev1.TLSConfig) {
		t.Helper()
		rt := &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: routev1.RouteSpec{Host: host, Subdomain: subdomain, TLS: tls,
				To: routev1.RouteTargetReference{Kind: "Service", Name: service}},
		}
		_, err := c.Routes.RouteV1().Routes(ns).Create(kctx(t), rt, metav1.CreateOptions{})
		must(t, err)
	}
	create("www", "www.apps.example.com", "", "web", nil)
	create("edge", "edge.apps.example.com", "", "web", &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge})
	create("pt", "pt.apps.example.com", "", "pt", &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough})
	create("re", "re.apps.example.com", "", "secure", &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt})
	create("sub", "", "sub", "web", nil)

	env, pool, user, pass := metricsTLS(t)
	for k, v := range ingressOperatorEnv() {
		env[k] = v
	}
	statsPort := freePort(t)
	env["STATS_PORT"] = fmt.Sprint(statsPort)
	env["DEFAULT_CERTIFICATE_DIR"] = certDir
	env["DEFAULT_DESTINATION_CA_PATH"] = serviceCAPath
	// spec.namespaceSelector (the operator's NAMESPACE_LABELS): keeps this
	// router to the test's namespace on the shared API server.
	env["NAMESPACE_LABELS"] = "operator-e2e=" + label
	curves := "X25519:P-256:P-384:P-521"
	var r *router
	var configPath string
	if sidecarMode {
		// The operator's later releases: HAProxy is started first (with
		// a placeholder configuration) in its own container sharing
		// /var/lib/haproxy, and the router reloads it.
		env["ROUTER_HAPROXY_ADMIN_UNIX_SOCKET"] = "set below"
		env["ROUTER_CURVES"] = "X25519MLKEM768:X25519:secp256r1:secp384r1"
		curves = "X25519:secp256r1:secp384r1"
		wd := shortTempDir(t, "op")
		httpPort, httpsPort := freePort(t), freePort(t)
		sc := startSidecarHAProxy(t, wd, httpPort)
		env["ROUTER_HAPROXY_ADMIN_UNIX_SOCKET"] = sc.AdminSock
		env["ROUTER_SERVICE_HTTP_PORT"] = fmt.Sprint(httpPort)
		env["ROUTER_SERVICE_HTTPS_PORT"] = fmt.Sprint(httpsPort)
		r = startKubeRouter(t, c.KubeconfigPath, env, "--working-dir", wd)
		// r.WorkingDir stays the framework's (unused): its check that the
		// router's HAProxy ends with it must not find the sidecar's.
		r.HTTPPort, r.HTTPSPort = httpPort, httpsPort
		configPath = filepath.Join(wd, "conf", "haproxy.config")
		t.Cleanup(func() {
			if kids := haproxyChildren(r); len(kids) > 0 {
				t.Errorf("sidecar mode: the router started HAProxy itself: %v", kids)
			}
		})
	} else {
		r = startKubeRouter(t, c.KubeconfigPath, env)
		configPath = filepath.Join(r.WorkingDir, "conf", "haproxy.config")
	}

	t.Run("every route type is served", func(t *testing.T) {
		expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.apps.example.com", "/") }, "pod-plain")
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("sub.apps.example.com", "/") }, "pod-plain")
		resp := expectBackend(t, 10*time.Second, func() (response, error) { return r.httpsGet("edge.apps.example.com", "/") }, "pod-plain")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "*.apps.example.com" {
			t.Errorf("edge route: not served with the default certificate: %+v", resp.PeerCert)
		}
		resp = expectBackend(t, 10*time.Second, func() (response, error) { return r.httpsGet("pt.apps.example.com", "/") }, "pod-passthrough")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "pt.apps.example.com" {
			t.Errorf("passthrough route: not the backend's own certificate: %+v", resp.PeerCert)
		}
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpsGet("re.apps.example.com", "/") }, "pod-reencrypt")
		// Plain HTTP to an edge route without insecureEdgeTerminationPolicy.
		if resp, err := r.httpGet("edge.apps.example.com", "/"); err != nil || resp.backend() != "" {
			t.Errorf("edge route over plain HTTP: %v %q", err, resp.Body)
		}
	})
	t.Run("status is written as router default", func(t *testing.T) {
		for _, name := range []string{"www", "edge", "pt", "re", "sub"} {
			ing := ingressOf(t, c, ns, name, "default", admitted(corev1.ConditionTrue, ""))
			if ing.RouterCanonicalHostname != "router-default.apps.example.com" {
				t.Errorf("%s: routerCanonicalHostname %q", name, ing.RouterCanonicalHostname)
			}
		}
		if ing := ingressOf(t, c, ns, "sub", "default", admitted(corev1.ConditionTrue, "")); ing.Host != "sub.apps.example.com" {
			t.Errorf("spec.subdomain route: status host %q, want sub.apps.example.com", ing.Host)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", statsPort)
	t.Run("probes over plain HTTP, metrics over TLS to the files' credentials", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/healthz/ready"} {
			if st, body, err := get(plainClient, "http://"+addr+path, nil); err != nil || st != 200 {
				t.Errorf("%s: %d %q %v", path, st, body, err)
			}
		}
		client := tlsClient(pool, &tls.Config{MinVersion: tls.VersionTLS12})
		st, body, err := get(client, "https://"+addr+"/metrics", func(req *http.Request) { req.SetBasicAuth(user, pass) })
		if err != nil || st != 200 || !strings.Contains(body, "\nhaproxy_up 1\n") || !strings.Contains(body, "template_router_reload_seconds") {
			t.Errorf("/metrics over TLS with the files' credentials: %d %v\n%.400s", st, err, body)
		}
		if st, _, err := get(client, "https://"+addr+"/metrics", nil); err != nil || st == 200 {
			t.Errorf("/metrics without credentials: %d %v", st, err)
		}
	})
	t.Run("no configuration warning but the curves this OpenSSL lacks", func(t *testing.T) {
		for _, line := range strings.Split(r.Log(), "\n") {
			if strings.Contains(line, "configuration warning") && !strings.Contains(line, "ROUTER_CURVES") {
				t.Errorf("unexpected warning: %s", line)
			}
		}
		cfg, err := os.ReadFile(configPath)
		must(t, err)
		for _, w := range []string{"\n  nbthread 4\n", "\n  balance random\n", "\n  maxconn ", "ssl-default-bind-curves " + curves + "\n"} {
			if !strings.Contains(string(cfg), w) {
				t.Errorf("haproxy.config lacks %q", w)
			}
		}
	})
}
