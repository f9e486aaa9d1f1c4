package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// TestACertificateTooLargeForTheRuntimeAPIIsReloaded: HAProxy reads a
// runtime API command and its payload into one buffer (tune.bufsize) and
// drops a longer one unanswered. An edge route whose certificate chain is
// longer (valid, and loaded fine from the file) is rotated with a reload
// instead: no runtime API error, the route is not rejected, and the new
// certificate is served.
func TestACertificateTooLargeForTheRuntimeAPIIsReloaded(t *testing.T) {
	ca1, err := testcerts.NewCA("route CA 1", time.Hour)
	must(t, err)
	cert1, err := ca1.Issue("edge one", []string{"big.example.com"}, time.Hour)
	must(t, err)
	cert2, err := ca1.Issue("edge two", []string{"big.example.com"}, time.Hour)
	must(t, err)
	var chain strings.Builder
	chain.WriteString(ca1.CertPEM)
	for chain.Len() < 48<<10 {
		extra, err := testcerts.NewCA(fmt.Sprintf("chain CA %d", chain.Len()), time.Hour)
		must(t, err)
		chain.WriteString(extra.CertPEM)
	}
	plain := startBackend(t, "plain")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("bigcert", "plain", plain))
	route := func(edge *testcerts.Pair) string {
		return routeYAML("bigcert", "edge", "big.example.com", "", "plain", tlsYAML("edge", "", map[string]string{
			"certificate": edge.CertPEM, "key": edge.KeyPEM, "caCertificate": chain.String()}))
	}
	m.Write("routes.yaml", route(cert1))
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	r := startRouter(t, m.Dir, env)
	subject := func() (string, error) { return servedCommonName(r, "big.example.com") }
	eventually(t, loadTimeout, "edge serves certificate one", func() error {
		if cn, err := subject(); err != nil || cn != "edge one" {
			return fmt.Errorf("%q %v", cn, err)
		}
		return nil
	})
	waitReady(t, ms)

	m.Write("routes.yaml", route(cert2))
	eventually(t, 60*time.Second, "edge serves certificate two", func() error {
		if cn, err := subject(); err != nil || cn != "edge two" {
			return fmt.Errorf("%q %v", cn, err)
		}
		return nil
	})
	eventually(t, 10*time.Second, "rotation reloaded without a runtime API error", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reloads_total", map[string]string{"reason": "files"}); err != nil || v < 1 {
			return fmt.Errorf("reloads for files %v %v", v, err)
		}
		if v, err := s.value("template_router_runtime_api_errors_total", nil); err != nil || v != 0 {
			return fmt.Errorf("runtime API errors %v %v", v, err)
		}
		return nil
	})
}
