package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/openshift-router-go/router/metrics/routermetrics"
)

// start listens on a free loopback port and serves until the test ends.
func start(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	s, err := Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s")
		}
	})
	return s
}

type reply struct {
	status int
	header http.Header
	body   string
	tls    *tls.ConnectionState
}

func do(t *testing.T, client *http.Client, url string, mod func(*http.Request)) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), tls: resp.TLS}
}

var plain = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func registryWithRouterMetrics(t *testing.T) (*prometheus.Registry, *routermetrics.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := routermetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, m
}

// parseText parses the Prometheus text format with expfmt.
func parseText(t *testing.T, body string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("metrics are not valid Prometheus text: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Summary != nil:
				out[name+"_count"] = float64(m.GetSummary().GetSampleCount())
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestMetricsAuthAndHealth(t *testing.T) {
	reg, rm := registryWithRouterMetrics(t)
	rm.ObserveReload(10*time.Millisecond, nil)
	var ready atomic.Bool
	s := start(t, Options{
		Gatherer:   reg,
		Registerer: reg,
		Username:   "admin",
		Password:   "s3cret",
		Ready: []Check{{Name: "has-synced", Run: func(context.Context) error {
			if !ready.Load() {
				return errors.New("not synced")
			}
			return nil
		}}},
		Logger: logr.Discard(),
	})
	base := "http://" + s.Addr().String()

	// Metrics need the credentials.
	r := do(t, plain, base+"/metrics", nil)
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %d %v", r.status, r.header)
	}
	for _, cred := range [][2]string{{"admin", "wrong"}, {"other", "s3cret"}, {"", ""}} {
		r = do(t, plain, base+"/metrics", func(q *http.Request) { q.SetBasicAuth(cred[0], cred[1]) })
		if r.status != http.StatusUnauthorized {
			t.Errorf("credentials %q: %d", cred, r.status)
		}
	}
	r = do(t, plain, base+"/metrics", func(q *http.Request) { q.SetBasicAuth("admin", "s3cret") })
	if r.status != http.StatusOK {
		t.Fatalf("with credentials: %d %s", r.status, r.body)
	}
	values := parseText(t, r.body)
	if values["template_router_reload_seconds_count"] != 1 || values["openshift_router_build_info"] != 1 {
		t.Errorf("router metrics missing from /metrics: %v", values)
	}

	// OpenMetrics when the scraper asks for it.
	r = do(t, plain, base+"/metrics", func(q *http.Request) {
		q.SetBasicAuth("admin", "s3cret")
		q.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/openmetrics-text") || !strings.HasSuffix(r.body, "# EOF\n") {
		t.Errorf("OpenMetrics: %d %q ...%q", r.status, r.header.Get("Content-Type"), r.body[max(0, len(r.body)-20):])
	}

	// Health checks need no credentials.
	r = do(t, plain, base+"/healthz", nil)
	if r.status != http.StatusOK || r.body != "ok" {
		t.Errorf("/healthz: %d %q", r.status, r.body)
	}
	r = do(t, plain, base+"/healthz/ready", nil)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "[-]has-synced failed: not synced") {
		t.Errorf("/healthz/ready before sync: %d %q", r.status, r.body)
	}
	ready.Store(true)
	r = do(t, plain, base+"/healthz/ready", nil)
	if r.status != http.StatusOK {
		t.Errorf("/healthz/ready after sync: %d %q", r.status, r.body)
	}
	r = do(t, plain, base+"/healthz/ready?verbose", nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "[+]has-synced ok") || !strings.Contains(r.body, "[+]process-running ok") {
		t.Errorf("verbose: %d %q", r.status, r.body)
	}
	// Anything else is behind authentication too.
	if r = do(t, plain, base+"/debug", nil); r.status != http.StatusUnauthorized {
		t.Errorf("/debug without credentials: %d", r.status)
	}
}

func TestNoCredentialsMeansOpenMetrics(t *testing.T) {
	reg, _ := registryWithRouterMetrics(t)
	s := start(t, Options{Gatherer: reg, Logger: logr.Discard()})
	r := do(t, plain, "http://"+s.Addr().String()+"/metrics", nil)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	parseText(t, r.body)
}

func TestListenErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(Options{Addr: ln.Addr().String()})
	if !errors.Is(err, ErrListen) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("port in use: %v", err)
	}
	_, err = Listen(Options{Addr: "127.0.0.1:0", TLSCertFile: "/nonexistent/tls.crt", TLSKeyFile: "/nonexistent/tls.key"})
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "/nonexistent/tls.crt") {
		t.Errorf("missing certificate: %v", err)
	}
	_, err = Listen(Options{Addr: "127.0.0.1:0", TLSCertFile: "/nonexistent/tls.crt"})
	if !errors.Is(err, ErrTLS) {
		t.Errorf("certificate without key: %v", err)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// common name.
func writeCert(t *testing.T, dir, cn string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	// Write new files and rename them over the old ones, as a secret
	// volume update does.
	for _, f := range []struct {
		path string
		data []byte
	}{
		{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})},
	} {
		if err := os.WriteFile(f.path+".new", f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.path+".new", f.path); err != nil {
			t.Fatal(err)
		}
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLSOnTheSamePort(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir, "metrics-one")
	reg, _ := registryWithRouterMetrics(t)
	s := start(t, Options{Gatherer: reg, TLSCertFile: certFile, TLSKeyFile: keyFile, Logger: logr.Discard(),
		Ready: []Check{{Name: "ok", Run: func(context.Context) error { return nil }}}})
	addr := s.Addr().String()
	httpsClient := func(pool *x509.CertPool) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{RootCAs: pool},
		}}
	}

	r := do(t, httpsClient(pool), "https://"+addr+"/metrics", nil)
	if r.status != http.StatusOK || r.tls == nil || r.tls.PeerCertificates[0].Subject.CommonName != "metrics-one" {
		t.Fatalf("HTTPS /metrics: %d tls=%v", r.status, r.tls != nil)
	}
	parseText(t, r.body)

	// Plain HTTP on the same port: health checks only.
	if r = do(t, plain, "http://"+addr+"/healthz", nil); r.status != http.StatusOK {
		t.Errorf("plain /healthz: %d %s", r.status, r.body)
	}
	if r = do(t, plain, "http://"+addr+"/healthz/ready", nil); r.status != http.StatusOK {
		t.Errorf("plain /healthz/ready: %d %s", r.status, r.body)
	}
	if r = do(t, plain, "http://"+addr+"/metrics", nil); r.status != http.StatusForbidden {
		t.Errorf("plain /metrics with TLS configured: %d, want 403", r.status)
	}

	// A silent client does not hold up others.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if r = do(t, plain, "http://"+addr+"/healthz", nil); r.status != http.StatusOK {
		t.Errorf("/healthz while another client is silent: %d", r.status)
	}

	// A rotated certificate is served to new connections.
	time.Sleep(10 * time.Millisecond) // a distinct modification time
	_, _, pool2 := writeCert(t, dir, "metrics-two")
	r = do(t, httpsClient(pool2), "https://"+addr+"/metrics", nil)
	if r.status != http.StatusOK || r.tls.PeerCertificates[0].Subject.CommonName != "metrics-two" {
		t.Errorf("after rotation: %d %q", r.status, r.tls.PeerCertificates[0].Subject.CommonName)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func requireHAProxy(t *testing.T) {
	t.Helper()
	prereq.NeedBinary(t, "haproxy")
}

func TestHAProxyAnswersWithRealHAProxy(t *testing.T) {
	requireHAProxy(t)
	dir, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "haproxy.sock")
	check := HAProxyAnswers(socket)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := check(ctx); err == nil {
		t.Fatal("no haproxy yet, but the check passed")
	}

	cfg := filepath.Join(dir, "haproxy.config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("global\n  stats socket %s mode 600 level admin\n\ndefaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n\nlisten l\n  bind 127.0.0.1:%d\n", socket, freePort(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("haproxy", "-db", "-f", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy running, but the check fails: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	if err := check(ctx); err == nil {
		t.Fatal("haproxy killed, but the check passed")
	}
}
