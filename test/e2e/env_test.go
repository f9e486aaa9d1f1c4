package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
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
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// The tests in this file start the router with the router-wide environment
// variables of docs/env.md and check their effect on real traffic.

// envBigBody is a text/html body large enough for compression.
var envBigBody = strings.Repeat("<p>the quick brown fox jumps over the lazy dog</p>\n", 400)

// startEnvBackend starts a plain HTTP backend: /slow answers after 3s,
// /big sends envBigBody as text/html, anything else names the backend and
// the X-Forwarded-For it saw.
func startEnvBackend(t *testing.T, name string) *backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, envBigBody)
			return
		}
		fmt.Fprintf(w, "backend=%s xff=[%s] xfh=[%s] client-cn=[%s] client-verify=[%s] path=%s\n", name, strings.Join(r.Header.Values("X-Forwarded-For"), ","),
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-SSL-Client-CN"), r.Header.Get("X-SSL-Client-Verify"), r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// envManifests writes an unsecured route www.env.test and an edge route
// edge.env.test (with its own certificate) to one backend.
func envManifests(t *testing.T, be *backend) *manifests {
	t.Helper()
	ca, err := testcerts.NewCA("env CA", time.Hour)
	must(t, err)
	leaf, err := ca.Issue("edge.env.test", []string{"edge.env.test"}, time.Hour)
	must(t, err)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("env", "web", be))
	m.Write("routes.yaml", routeYAML("env", "www", "www.env.test", "", "web", "")+"---\n"+
		routeYAML("env", "edge", "edge.env.test", "", "web", tlsYAML("edge", "Allow", map[string]string{"certificate": leaf.CertPEM, "key": leaf.KeyPEM})))
	return m
}

// handshake opens a TLS connection to addr with the given SNI and client
// settings and returns the negotiated state.
func handshake(addr, sni string, client *tls.Config) (tls.ConnectionState, error) {
	conf := client.Clone()
	conf.ServerName = sni
	conf.InsecureSkipVerify = true // the tests look at the certificate themselves
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.ConnectionState(), nil
}

// cbcSuites are TLS 1.2 CBC suites with SHA-1 MACs: only the old profile
// has them.
var cbcSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}

// gcmSuites are TLS 1.2 suites every profile has.
var gcmSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}

// getGzip sends a plain HTTP request accepting gzip and returns the status,
// the Content-Encoding and the decoded body.
func getGzip(port int, host, path string) (int, string, string, error) {
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Host = host
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	enc := resp.Header.Get("Content-Encoding")
	if enc == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return 0, "", "", err
		}
		r = zr
	}
	body, err := io.ReadAll(r)
	return resp.StatusCode, enc, string(body), err
}

// TestEnvStrictSNIOldCiphersCompressionStatsAndServerTimeout runs one
// router with ROUTER_STRICT_SNI, ROUTER_CIPHERS=old,
// ROUTER_ENABLE_COMPRESSION, the stats page and a 1s server timeout.
func TestEnvStrictSNIOldCiphersCompressionStatsAndServerTimeout(t *testing.T) {
	be := startEnvBackend(t, "envA")
	m := envManifests(t, be)
	statsPort := freePort(t)
	r := startRouter(t, m.Dir, map[string]string{
		"ROUTER_STRICT_SNI":             "true",
		"ROUTER_CIPHERS":                "old",
		"ROUTER_ENABLE_COMPRESSION":     "true",
		"ROUTER_METRICS_TYPE":           "", // HAProxy's stats page on STATS_PORT
		"STATS_PORT":                    fmt.Sprint(statsPort),
		"STATS_USERNAME":                "admin",
		"STATS_PASSWORD":                "s3cret",
		"ROUTER_DEFAULT_SERVER_TIMEOUT": "1s",
	})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/") }, "envA")
	httpsAddr := fmt.Sprintf("127.0.0.1:%d", r.HTTPSPort)

	t.Run("strict SNI serves a known name", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.env.test", "/") }, "envA")
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "edge.env.test" {
			t.Fatalf("client saw %v, want the route's certificate", subject(resp))
		}
	})
	t.Run("strict SNI refuses an unknown name instead of serving the default certificate", func(t *testing.T) {
		st, err := handshake(httpsAddr, "unknown.env.test", &tls.Config{})
		if err == nil {
			t.Fatalf("handshake with an unknown SNI succeeded, certificate %v", st.PeerCertificates[0].Subject)
		}
	})
	t.Run("old profile accepts a TLS 1.2 CBC suite", func(t *testing.T) {
		st, err := handshake(httpsAddr, "edge.env.test", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbcSuites})
		if err != nil {
			t.Fatalf("old profile refused a CBC suite: %v", err)
		}
		if st.Version != tls.VersionTLS12 || (st.CipherSuite != cbcSuites[0] && st.CipherSuite != cbcSuites[1]) {
			t.Fatalf("negotiated %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
		}
	})
	t.Run("compression gzips text/html for clients that accept it", func(t *testing.T) {
		status, enc, body, err := getGzip(r.HTTPPort, "www.env.test", "/big")
		must(t, err)
		if status != 200 || enc != "gzip" || body != envBigBody {
			t.Fatalf("got %d, Content-Encoding %q, %d bytes (want 200, gzip, the %d-byte body)", status, enc, len(body), len(envBigBody))
		}
		resp, err := r.httpGet("www.env.test", "/big")
		must(t, err)
		if resp.Header.Get("Content-Encoding") != "" || resp.Body != envBigBody {
			t.Fatalf("client without Accept-Encoding got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
	})
	t.Run("stats page needs the credentials", func(t *testing.T) {
		url := fmt.Sprintf("http://127.0.0.1:%d/", statsPort)
		get := func(user, pass string) (int, string, error) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				return 0, "", err
			}
			if user != "" {
				req.SetBasicAuth(user, pass)
			}
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body), err
		}
		eventually(t, loadTimeout, "401 without credentials", func() error {
			status, _, err := get("", "")
			if err != nil {
				return err
			}
			if status != 401 {
				return fmt.Errorf("status %d", status)
			}
			return nil
		})
		if status, _, err := get("admin", "wrong"); err != nil || status != 401 {
			t.Errorf("wrong password: %d %v", status, err)
		}
		status, body, err := get("admin", "s3cret")
		must(t, err)
		if status != 200 || !strings.Contains(body, "Statistics Report") || !strings.Contains(body, "be_http:env:www") {
			t.Fatalf("with credentials: %d %.300s", status, body)
		}
	})
	t.Run("server timeout answers 504 for a slow backend", func(t *testing.T) {
		start := time.Now()
		resp, err := r.httpGet("www.env.test", "/slow")
		must(t, err)
		if resp.Status != 504 || time.Since(start) > 2900*time.Millisecond {
			t.Fatalf("got %d after %s, want 504 after about 1s", resp.Status, time.Since(start))
		}
	})
}

// TestEnvDefaults checks the defaults of the same settings: the default
// certificate for unknown names, the intermediate profile (no CBC suites),
// no compression, no stats listener and a 30s server timeout.
func TestEnvDefaults(t *testing.T) {
	be := startEnvBackend(t, "envB")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/") }, "envB")
	httpsAddr := fmt.Sprintf("127.0.0.1:%d", r.HTTPSPort)

	t.Run("unknown SNI gets the default certificate", func(t *testing.T) {
		resp := expectStatus(t, loadTimeout, func() (response, error) { return r.httpsGet("unknown.env.test", "/") }, 503)
		if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "router-default.local" {
			t.Fatalf("client saw %v, want the default certificate", subject(resp))
		}
	})
	t.Run("intermediate profile refuses CBC suites and accepts GCM", func(t *testing.T) {
		if st, err := handshake(httpsAddr, "edge.env.test", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbcSuites}); err == nil {
			t.Errorf("intermediate profile negotiated %s", tls.CipherSuiteName(st.CipherSuite))
		}
		if _, err := handshake(httpsAddr, "edge.env.test", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: gcmSuites}); err != nil {
			t.Errorf("GCM suite refused: %v", err)
		}
		if _, err := handshake(httpsAddr, "edge.env.test", &tls.Config{MaxVersion: tls.VersionTLS11}); err == nil {
			t.Errorf("TLS 1.1 accepted with the default SSL_MIN_VERSION")
		}
	})
	t.Run("forwarded headers are appended", func(t *testing.T) {
		resp, err := getWith(r, false, "www.env.test", "/", http.Header{"X-Forwarded-For": {"192.0.2.1"}}, nil)
		must(t, err)
		if !strings.Contains(resp.Body, "xff=[192.0.2.1,127.0.0.1] xfh=[www.env.test]") {
			t.Fatalf("backend saw %s", resp.Body)
		}
	})
	t.Run("no compression", func(t *testing.T) {
		status, enc, body, err := getGzip(r.HTTPPort, "www.env.test", "/big")
		must(t, err)
		if status != 200 || enc != "" || body != envBigBody {
			t.Fatalf("got %d, Content-Encoding %q", status, enc)
		}
	})
	t.Run("slow backend within the default server timeout", func(t *testing.T) {
		resp, err := r.httpGet("www.env.test", "/slow")
		must(t, err)
		if resp.Status != 200 || resp.backend() != "envB" {
			t.Fatalf("got %d: %s", resp.Status, resp.Body)
		}
	})
}

// proxyRequest opens a TCP connection to addr, sends header (a PROXY
// protocol line, or nothing) and then a GET for host (over TLS with SNI
// host if tlsConf is not nil).
func proxyRequest(addr, header, host string, tlsConf *tls.Config) (response, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return response{}, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return response{}, err
	}
	if _, err := io.WriteString(c, header); err != nil {
		return response{}, err
	}
	var conn net.Conn = c
	if tlsConf != nil {
		conf := tlsConf.Clone()
		conf.ServerName, conf.InsecureSkipVerify = host, true
		tc := tls.Client(c, conf)
		if err := tc.Handshake(); err != nil {
			return response{}, err
		}
		conn = tc
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	if err != nil {
		return response{}, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return response{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: string(body), Header: resp.Header}, err
}

// TestEnvProxyProtocolAndModernCiphers runs a router with
// ROUTER_USE_PROXY_PROTOCOL and ROUTER_CIPHERS=modern.
func TestEnvProxyProtocolAndModernCiphers(t *testing.T) {
	be := startEnvBackend(t, "envC")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_USE_PROXY_PROTOCOL": "true", "ROUTER_CIPHERS": "modern"})
	httpAddr := fmt.Sprintf("127.0.0.1:%d", r.HTTPPort)
	httpsAddr := fmt.Sprintf("127.0.0.1:%d", r.HTTPSPort)

	t.Run("HTTP with a PROXY header: the backend sees the client address it names", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) {
			return proxyRequest(httpAddr, "PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n", "www.env.test", nil)
		}, "envC")
		if !strings.Contains(resp.Body, "xff=[203.0.113.7]") {
			t.Fatalf("backend did not see the PROXY client address: %s", resp.Body)
		}
	})
	t.Run("HTTP without a PROXY header is refused", func(t *testing.T) {
		if resp, err := proxyRequest(httpAddr, "", "www.env.test", nil); err == nil && resp.backend() != "" {
			t.Fatalf("request without PROXY header reached the backend: %d %s", resp.Status, resp.Body)
		}
	})
	t.Run("HTTPS with a PROXY header, modern profile", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) {
			return proxyRequest(httpsAddr, "PROXY TCP4 203.0.113.8 127.0.0.1 40001 443\r\n", "edge.env.test",
				&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: gcmSuites})
		}, "envC")
		if !strings.Contains(resp.Body, "xff=[203.0.113.8]") {
			t.Fatalf("backend did not see the PROXY client address: %s", resp.Body)
		}
		_, err := proxyRequest(httpsAddr, "PROXY TCP4 203.0.113.8 127.0.0.1 40002 443\r\n", "edge.env.test",
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbcSuites})
		if err == nil {
			t.Fatal("modern profile accepted a CBC suite")
		}
	})
	t.Run("HTTPS without a PROXY header is refused", func(t *testing.T) {
		if _, err := handshake(httpsAddr, "edge.env.test", &tls.Config{}); err == nil {
			t.Fatal("TLS handshake without PROXY header succeeded")
		}
	})
}

// TestEnvCipherListVersionsAndSyslog runs a router with an explicit
// ROUTER_CIPHERS list, SSL_MAX_VERSION=TLSv1.2 and HAProxy logging to a
// syslog address with a custom format, facility and level.
func TestEnvCipherListVersionsAndSyslog(t *testing.T) {
	syslog, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { syslog.Close() })
	be := startEnvBackend(t, "envD")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, map[string]string{
		"ROUTER_CIPHERS":        "ECDHE-ECDSA-AES256-GCM-SHA384",
		"SSL_MAX_VERSION":       "TLSv1.2",
		"ROUTER_SYSLOG_ADDRESS": syslog.LocalAddr().String(),
		"ROUTER_LOG_FACILITY":   "local4",
		"ROUTER_LOG_LEVEL":      "info",
		"ROUTER_SYSLOG_FORMAT":  "envlog %b %ST %HP",
	})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/logged") }, "envD")
	httpsAddr := fmt.Sprintf("127.0.0.1:%d", r.HTTPSPort)

	t.Run("explicit cipher list", func(t *testing.T) {
		st, err := handshake(httpsAddr, "edge.env.test", &tls.Config{})
		if err != nil {
			t.Fatalf("default client refused: %v", err)
		}
		if st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
			t.Fatalf("negotiated %s %s, want TLS 1.2 ECDHE-ECDSA-AES256-GCM-SHA384", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
		}
		if _, err := handshake(httpsAddr, "edge.env.test", &tls.Config{CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}); err == nil {
			t.Error("a suite outside ROUTER_CIPHERS was negotiated")
		}
		if _, err := handshake(httpsAddr, "edge.env.test", &tls.Config{MinVersion: tls.VersionTLS13}); err == nil {
			t.Error("TLS 1.3 accepted with SSL_MAX_VERSION=TLSv1.2")
		}
	})
	t.Run("requests are logged to the syslog address", func(t *testing.T) {
		// facility local4 (20), severity info (6): <166>
		buf := make([]byte, 4096)
		deadline := time.Now().Add(loadTimeout)
		var seen []string
		for time.Now().Before(deadline) {
			if _, err := r.httpGet("www.env.test", "/logged"); err != nil {
				t.Fatal(err)
			}
			must(t, syslog.SetReadDeadline(time.Now().Add(time.Second)))
			for i := 0; i < 50; i++ {
				n, _, err := syslog.ReadFrom(buf)
				if err != nil {
					break
				}
				msg := string(buf[:n])
				if strings.HasPrefix(msg, "<166>") && strings.Contains(msg, "envlog be_http:env:www 200 /logged") {
					return
				}
				if len(seen) < 10 {
					seen = append(seen, msg)
				}
			}
		}
		t.Fatalf("no request log line with the custom format at local4.info; got %q", seen)
	})
}

// TestEnvMalformedValuesAreIgnoredOrRefusedAsOpenShiftDoes: malformed
// router-wide settings that OpenShift's router ignores are ignored with a
// warning (and never reach haproxy.config); those it refuses stop the router
// with an error naming the variable.
func TestEnvMalformedValuesAreIgnoredOrRefusedAsOpenShiftDoes(t *testing.T) {
	be := startEnvBackend(t, "envM")
	m := envManifests(t, be)
	// What OpenShift's router ignores (its template falls back to the
	// default): the router starts, serves with the defaults, warns.
	ignored := map[string]string{
		"ROUTER_CIPHERS":                "modern\n  bind :1",
		"ROUTER_DEFAULT_SERVER_TIMEOUT": "30 seconds",
		"ROUTER_STRICT_SNI":             "strict",
		"ROUTER_LOG_LEVEL":              "loud",
		"ROUTER_MAX_CONNECTIONS":        "plenty",
	}
	r := startRouter(t, m.Dir, ignored)
	expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("www.env.test", "/") }, "envM")
	cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	for name, value := range ignored {
		if !strings.Contains(r.Log(), "configuration warning: "+name) {
			t.Errorf("no configuration warning naming %s", name)
		}
		if strings.Contains(string(cfg), value) {
			t.Errorf("%s=%q reached haproxy.config", name, value)
		}
	}
	for _, w := range []string{"\n  timeout server 30s\n", "ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:"} {
		if !strings.Contains(string(cfg), w) {
			t.Errorf("haproxy.config lacks the default %q", w)
		}
	}
	if strings.Contains(string(cfg), "\n  maxconn ") {
		t.Error("ROUTER_MAX_CONNECTIONS=plenty: OpenShift leaves maxconn to HAProxy (as auto), this router wrote one")
	}
	// What OpenShift's router refuses: a non-zero exit naming the variable.
	for name, value := range map[string]string{
		"ROUTER_CAPTURE_HTTP_REQUEST_HEADERS": "Host",
		"ROUTER_HTTP_REQUEST_HEADERS":         "X-A:b:Replace",
	} {
		t.Run(name, func(t *testing.T) {
			r := startRouter(t, m.Dir, map[string]string{name: value})
			eventually(t, 10*time.Second, "router exits", func() error {
				if exited, _ := r.Exited(); !exited {
					return fmt.Errorf("still running")
				}
				return nil
			})
			if _, err := r.Exited(); err == nil || !strings.Contains(r.Log(), name) {
				t.Fatalf("want a non-zero exit naming %s, got %v: %s", name, err, r.Log())
			}
		})
	}
}

// clientCA issues client certificates (ExtKeyUsageClientAuth) for the
// mutual TLS tests.
type clientCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM string
}

func newClientCA(t *testing.T, cn string) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	return &clientCA{cert: cert, key: key, CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// issue returns a client certificate for cn.
func (ca *clientCA) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// getWith sends a request with extra headers and an optional client
// certificate (HTTPS with SNI host when tlsOn).
func getWith(r *router, tlsOn bool, host, path string, hdr http.Header, cert *tls.Certificate) (response, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, path)
	tr := &http.Transport{DisableKeepAlives: true}
	if tlsOn {
		url = fmt.Sprintf("https://127.0.0.1:%d%s", r.HTTPSPort, path)
		tr.TLSClientConfig = &tls.Config{ServerName: host, InsecureSkipVerify: true}
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return response{}, err
	}
	req.Host = host
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: string(body), Header: resp.Header}, err
}

// TestEnvMutualTLSErrorPageCookieForwardedAndSlowloris runs a router with
// ROUTER_MUTUAL_TLS_AUTH=required (CA and subject filter),
// ROUTER_ERRORFILE_503, ROUTER_COOKIE_NAME, ROUTER_SET_FORWARDED_HEADERS=never
// and ROUTER_SLOWLORIS_TIMEOUT=1s.
func TestEnvMutualTLSErrorPageCookieForwardedAndSlowloris(t *testing.T) {
	ca := newClientCA(t, "env client CA")
	other := newClientCA(t, "unrelated client CA")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "client-ca.pem")
	page := filepath.Join(dir, "503.http")
	must(t, os.WriteFile(caFile, []byte(ca.CertPEM), 0o644))
	must(t, os.WriteFile(page, []byte("HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ncustom env 503 page\n"), 0o644))
	be := startEnvBackend(t, "envE")
	m := envManifests(t, be)
	env := map[string]string{
		"ROUTER_MUTUAL_TLS_AUTH":        "required",
		"ROUTER_MUTUAL_TLS_AUTH_CA":     caFile,
		"ROUTER_MUTUAL_TLS_AUTH_FILTER": "CN=good-client",
		"ROUTER_ERRORFILE_503":          page,
		"ROUTER_COOKIE_NAME":            "envcookie",
		"ROUTER_SET_FORWARDED_HEADERS":  "never",
		"ROUTER_SLOWLORIS_TIMEOUT":      "1s",
	}
	m.Write("fwd.yaml", annotatedRouteYAML("env", "fwd", "fwd.env.test", "", "web", "",
		map[string]string{"haproxy.router.openshift.io/set-forwarded-headers": "append"}))
	r := startRouter(t, m.Dir, env)
	good, bad, stranger := ca.issue(t, "good-client"), ca.issue(t, "bad-client"), other.issue(t, "good-client")
	resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/") }, "envE")

	t.Run("sticky cookie has ROUTER_COOKIE_NAME", func(t *testing.T) {
		if c := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(c, "envcookie=") {
			t.Fatalf("Set-Cookie %q", c)
		}
	})
	t.Run("forwarded headers never: the client's X-Forwarded-For reaches the backend unchanged", func(t *testing.T) {
		resp, err := getWith(r, false, "www.env.test", "/", http.Header{"X-Forwarded-For": {"192.0.2.1"}}, nil)
		must(t, err)
		if !strings.Contains(resp.Body, "xff=[192.0.2.1] xfh=[]") {
			t.Fatalf("backend saw %s", resp.Body)
		}
	})
	t.Run("forwarded headers never, but a route's append sets them", func(t *testing.T) {
		resp, err := getWith(r, false, "fwd.env.test", "/", http.Header{"X-Forwarded-For": {"192.0.2.1"}}, nil)
		must(t, err)
		if !strings.Contains(resp.Body, "xff=[192.0.2.1,127.0.0.1] xfh=[fwd.env.test]") {
			t.Fatalf("backend saw %s", resp.Body)
		}
	})
	t.Run("custom 503 page", func(t *testing.T) {
		resp, err := r.httpGet("nobody.env.test", "/")
		must(t, err)
		if resp.Status != 503 || resp.Body != "custom env 503 page\n" {
			t.Fatalf("got %d %q", resp.Status, resp.Body)
		}
	})
	t.Run("slowloris timeout: incomplete request headers get 408", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTPPort), 5*time.Second)
		must(t, err)
		defer c.Close()
		must(t, c.SetDeadline(time.Now().Add(8*time.Second)))
		start := time.Now()
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: www.env.test\r\n")
		must(t, err)
		line, err := bufio.NewReader(c).ReadString('\n')
		if !strings.Contains(line, " 408 ") || time.Since(start) > 4*time.Second {
			t.Fatalf("got %q (%v) after %s, want 408 after about 1s", line, err, time.Since(start))
		}
	})
	t.Run("client certificate of the CA that matches the filter", func(t *testing.T) {
		resp := expectBackend(t, loadTimeout, func() (response, error) { return getWith(r, true, "edge.env.test", "/", nil, &good) }, "envE")
		if !strings.Contains(resp.Body, `client-cn=[good-client] client-verify=[0]`) {
			t.Fatalf("backend did not get the client certificate's details: %s", resp.Body)
		}
	})
	t.Run("client certificate whose subject does not match the filter: 403", func(t *testing.T) {
		resp, err := getWith(r, true, "edge.env.test", "/", nil, &bad)
		must(t, err)
		if resp.Status != 403 {
			t.Fatalf("got %d %s", resp.Status, resp.Body)
		}
	})
	t.Run("no client certificate, or one of another CA: refused", func(t *testing.T) {
		for name, cert := range map[string]*tls.Certificate{"none": nil, "other CA": &stranger} {
			if resp, err := getWith(r, true, "edge.env.test", "/", nil, cert); err == nil {
				t.Errorf("%s: got %d %s", name, resp.Status, resp.Body)
			}
		}
	})
	t.Run("render writes the mutual TLS files and paths the router wrote", func(t *testing.T) {
		renderEnv := map[string]string{
			"ROUTER_SERVICE_HTTP_PORT": fmt.Sprint(r.HTTPPort), "ROUTER_SERVICE_HTTPS_PORT": fmt.Sprint(r.HTTPSPort),
			"ROUTER_METRICS_TYPE": "haproxy", "ROUTER_LISTEN_ADDR": "127.0.0.1:1",
		}
		for k, v := range env {
			renderEnv[k] = v
		}
		eventually(t, 10*time.Second, "render writes what the router wrote", func() error {
			out := t.TempDir()
			stdout, stderr, err := cli(t, renderEnv, "render", "--manifests", m.Dir, "--working-dir", r.WorkingDir, "--output-dir", out)
			if err != nil {
				t.Fatalf("render: %v\n%s", err, stderr)
			}
			if !strings.Contains(stdout, "ca-file "+filepath.Join(r.WorkingDir, "mtls")) {
				return fmt.Errorf("render's configuration does not use the managed client CA copy")
			}
			routerFiles := generatedFiles(t, r.WorkingDir)
			if !bytes.Equal([]byte(stdout), routerFiles["conf/haproxy.config"]) {
				return fmt.Errorf("render's stdout differs from the router's haproxy.config")
			}
			return sameFiles(routerFiles, generatedFiles(t, out))
		})
	})
}

// idleFor opens a connection to addr, optionally sends a request head, and
// returns how long the router keeps it open without anything more from the
// client (at most limit).
func idleFor(addr, send string, limit time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if send != "" {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, send); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err = io.Copy(io.Discard, c) // a 408 page may come before the close
	d := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return limit, nil
	}
	return d, err
}

// TestEnvClientTimeout: with ROUTER_DEFAULT_CLIENT_TIMEOUT=2s (and a long
// ROUTER_SLOWLORIS_TIMEOUT, so that it is not the request timeout that
// acts) an idle client connection, and one that sent half a request head,
// is closed after about 2 s.
func TestEnvClientTimeout(t *testing.T) {
	be := startEnvBackend(t, "ct")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_DEFAULT_CLIENT_TIMEOUT": "2s", "ROUTER_SLOWLORIS_TIMEOUT": "30s"})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/") }, "ct")
	addr := fmt.Sprintf("127.0.0.1:%d", r.HTTPPort)
	for what, send := range map[string]string{
		"idle connection":        "",
		"half-sent request head": "GET / HTTP/1.1\r\nHost: www.env.test\r\n",
	} {
		d, err := idleFor(addr, send, 20*time.Second)
		if err != nil || d < 1500*time.Millisecond || d > 10*time.Second {
			t.Errorf("%s: closed after %v (%v), want about 2s (ROUTER_DEFAULT_CLIENT_TIMEOUT; the default is 30s)", what, d, err)
		}
	}
}
