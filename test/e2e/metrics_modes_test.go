package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// Values the ingress operator sets for the metrics server's TLS (from the
// APIServer's default Intermediate profile; /tmp/research/operator-env.md
// §1.3 of the issue's research, built from cluster-ingress-operator's
// deployment code).
const (
	operatorMetricsCiphers    = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256:TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
	operatorMetricsMinVersion = "VersionTLS12"
)

// metricsTLS writes a serving certificate for 127.0.0.1 and the stats
// credential files as the operator mounts them (base64 text, here with
// the trailing newline a hand-made secret file often has).
func metricsTLS(t *testing.T) (env map[string]string, pool *x509.CertPool, user, pass string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcerts.NewCA("metrics-e2e-ca", time.Hour)
	must(t, err)
	srv, err := ca.Issue("router-internal-default.openshift-ingress.svc", []string{"127.0.0.1", "localhost"}, time.Hour)
	must(t, err)
	user, pass = "dXNlcmRmZzQ1", "cGFzc2h6NXE3"
	files := map[string]string{"tls.crt": srv.CertPEM, "tls.key": srv.KeyPEM, "statsUsername": user + "\n", "statsPassword": pass}
	for name, content := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca.CertPEM))
	return map[string]string{
		"ROUTER_METRICS_TLS_CERT_FILE":   filepath.Join(dir, "tls.crt"),
		"ROUTER_METRICS_TLS_KEY_FILE":    filepath.Join(dir, "tls.key"),
		"ROUTER_METRICS_TLS_CIPHERS":     operatorMetricsCiphers,
		"ROUTER_METRICS_TLS_MIN_VERSION": operatorMetricsMinVersion,
		"STATS_USERNAME_FILE":            filepath.Join(dir, "statsUsername"),
		"STATS_PASSWORD_FILE":            filepath.Join(dir, "statsPassword"),
		// Plain variables that the files win over.
		"STATS_USERNAME": "ignored", "STATS_PASSWORD": "ignored",
	}, pool, user, pass
}

// get does one request; mod sets credentials.
func get(client *http.Client, url string, mod func(*http.Request)) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if mod != nil {
		mod(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func tlsClient(pool *x509.CertPool, c *tls.Config) *http.Client {
	if c == nil {
		c = &tls.Config{}
	}
	c.RootCAs = pool
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: c}}
}

var plainClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// TestMetricsIngressOperatorStyleWithBearerTokens runs the router against
// the real kube-apiserver with the metrics settings OpenShift 4's ingress
// operator generates (ROUTER_METRICS_TYPE=haproxy, STATS_PORT without
// ROUTER_LISTEN_ADDR, credentials from files, TLS with the operator's
// ciphers): one port serves the probes over plain HTTP and /metrics over
// TLS; a service account granted get on routers/metrics (the router's name)
// scrapes with its token, others get 403, an unknown token 401, and basic
// authentication with the files' credentials works too.
func TestMetricsIngressOperatorStyleWithBearerTokens(t *testing.T) {
	c := kubetest.Shared(t)
	label := fmt.Sprintf("metrics-e2e-%d", time.Now().UnixNano()%1_000_000)
	ns := c.CreateNamespace(t, "metrics-", map[string]string{"metrics-e2e": label}).Name
	routerName := "mx-" + label

	// Service accounts: one granted get on routers/metrics, one not.
	for _, sa := range []string{"prometheus", "nobody"} {
		_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(kctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		must(t, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "router-monitoring-" + ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routers/metrics"}, Verbs: []string{"get"}}}}
	_, err := c.Kube.RbacV1().ClusterRoles().Create(kctx(t), role, metav1.CreateOptions{})
	must(t, err)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "router-monitoring-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}}}
	_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(kctx(t), binding, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(kctx(t), binding.Name, metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoles().Delete(kctx(t), role.Name, metav1.DeleteOptions{})
	})
	token := func(sa string) string {
		tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(kctx(t), sa,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr64(600)}}, metav1.CreateOptions{})
		must(t, err)
		return tr.Status.Token
	}
	promToken, nobodyToken := token("prometheus"), token("nobody")

	env, pool, user, pass := metricsTLS(t)
	statsPort := freePort(t)
	env["ROUTER_METRICS_TYPE"] = "haproxy"
	env["STATS_PORT"] = fmt.Sprint(statsPort)
	env["ROUTER_SERVICE_NAME"] = routerName
	env["ROUTER_SERVICE_NAMESPACE"] = ns
	env["NAMESPACE_LABELS"] = "metrics-e2e=" + label
	env["ROUTER_METRICS_HAPROXY_BASE_SCRAPE_INTERVAL"] = "1s"
	r := startKubeRouter(t, c.KubeconfigPath, env)

	addr := fmt.Sprintf("127.0.0.1:%d", statsPort)
	eventually(t, loadTimeout, "ready over plain HTTP on the stats port", func() error {
		st, body, err := get(plainClient, "http://"+addr+"/healthz/ready", nil)
		if err != nil {
			return err
		}
		if st != 200 {
			return fmt.Errorf("/healthz/ready %d %q", st, body)
		}
		return nil
	})
	if st, _, err := get(plainClient, "http://"+addr+"/healthz", nil); err != nil || st != 200 {
		t.Errorf("plain /healthz: %d %v", st, err)
	}
	if cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config")); err != nil || strings.Contains(string(cfg), "listen stats") {
		t.Errorf("haproxy.config has HAProxy's stats listener in metrics mode (or cannot be read: %v)", err)
	}

	https := "https://" + addr + "/metrics"
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	cases := []struct {
		name   string
		mod    func(*http.Request)
		status int
	}{
		{"service account granted get on routers/metrics", bearer(promToken), 200},
		{"service account without the grant", bearer(nobodyToken), 403},
		{"anonymous", nil, 403},
		{"a token the cluster does not know", bearer("not-a-token"), 401},
		{"basic authentication with the files' credentials", func(r *http.Request) { r.SetBasicAuth(user, pass) }, 200},
		{"basic authentication with the plain variables the files win over", func(r *http.Request) { r.SetBasicAuth("ignored", "ignored") }, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, body, err := get(tlsClient(pool, nil), https, tc.mod)
			must(t, err)
			if st != tc.status {
				t.Fatalf("/metrics: %d %.200q, want %d", st, body, tc.status)
			}
			if st == 200 && !strings.Contains(body, "\nhaproxy_up 1\n") && !strings.Contains(body, "\nhaproxy_up 0\n") {
				t.Errorf("/metrics lacks haproxy_up:\n%.500s", body)
			}
		})
	}
	t.Run("the metrics OpenShift's monitoring queries", func(t *testing.T) {
		eventually(t, loadTimeout, "haproxy_up 1, haproxy_max_connections and haproxy_process_*", func() error {
			_, body, err := get(tlsClient(pool, nil), https, bearer(promToken))
			if err != nil {
				return err
			}
			for _, want := range []string{"\nhaproxy_up 1\n", "\nhaproxy_max_connections ", "\nhaproxy_process_resident_memory_bytes ", "\nhaproxy_process_start_time_seconds ",
				"\nhaproxy_frontend_connections_total{frontend=\"public\"} ", "\ntemplate_router_reload_failure 0\n"} {
				if !strings.Contains(body, want) {
					return fmt.Errorf("no %q", strings.TrimSpace(want))
				}
			}
			return nil
		})
	})
	t.Run("the operator's TLS settings", func(t *testing.T) {
		c12 := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
		if st, _, err := get(tlsClient(pool, c12), https, bearer(promToken)); err != nil || st != 200 {
			t.Errorf("TLS 1.2 with an allowed suite: %d %v", st, err)
		}
		// Go's default server accepts this CBC suite; the operator's list does not.
		cbc := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}
		if _, _, err := get(tlsClient(pool, cbc), https, nil); err == nil {
			t.Error("a CBC suite outside ROUTER_METRICS_TLS_CIPHERS was accepted")
		}
		old := &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
		if _, _, err := get(tlsClient(pool, old), https, nil); err == nil {
			t.Error("TLS 1.1 accepted with VersionTLS12 as the minimum")
		}
		// /metrics is not served over plain HTTP when TLS is configured.
		if st, _, err := get(plainClient, "http://"+addr+"/metrics", bearer(promToken)); err != nil || st != 403 {
			t.Errorf("plain /metrics: %d %v, want 403", st, err)
		}
	})
}

func ptr64(v int64) *int64 { return &v }

// TestStatsListenerWithoutMetricsMode: without ROUTER_METRICS_TYPE the
// router starts no server of its own and HAProxy's stats listener answers
// /healthz on STATS_PORT (credentials optional), as OpenShift's template;
// the statistics page needs both credentials.
func TestStatsListenerWithoutMetricsMode(t *testing.T) {
	be := startBackend(t, "one")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("st", "one", be))
	m.Write("routes.yaml", routeYAML("st", "one", "one.example.com", "", "one", ""))
	for _, tc := range []struct {
		name     string
		env      map[string]string
		pageWith [2]string // credentials that open the page; "" if none
	}{
		{"STATS_PORT without credentials: /healthz only", map[string]string{}, [2]string{}},
		{"credentials from files open the statistics page", nil, [2]string{"dXNlcmRmZzQ1", "cGFzc2h6NXE3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env, _, _, _ = metricsTLS(t) // the credential files (TLS unused here)
			}
			port := freePort(t)
			env["ROUTER_METRICS_TYPE"] = "" // unset: not metrics mode
			env["STATS_PORT"] = fmt.Sprint(port)
			r := startRouter(t, m.Dir, env)
			expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("one.example.com", "/") }, "one")
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			eventually(t, loadTimeout, "HAProxy answers /healthz on the stats port", func() error {
				st, body, err := get(plainClient, base+"/healthz", nil)
				if err != nil {
					return err
				}
				if st != 200 || strings.Contains(body, "[+]") {
					return fmt.Errorf("/healthz %d %q (want HAProxy's monitor answer)", st, body)
				}
				return nil
			})
			st, body, err := get(plainClient, base+"/", nil)
			must(t, err)
			if tc.pageWith[0] == "" {
				if st == 200 || strings.Contains(body, "Statistics Report") {
					t.Errorf("statistics page without credentials: %d %.200q", st, body)
				}
				return
			}
			if st != 401 {
				t.Errorf("page without credentials: %d", st)
			}
			st, body, err = get(plainClient, base+"/", func(r *http.Request) { r.SetBasicAuth(tc.pageWith[0], tc.pageWith[1]) })
			must(t, err)
			if st != 200 || !strings.Contains(body, "Statistics Report") {
				t.Errorf("page with the files' credentials: %d %.200q", st, body)
			}
		})
	}
}
