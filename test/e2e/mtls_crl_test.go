package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// crlDistribution serves CRLs by path on 127.0.0.1 (the CRL distribution
// points of the test CAs). Until released, a request waits (bounded), so
// the test can see the router before its first download.
type crlDistribution struct {
	srv      *httptest.Server
	mu       sync.Mutex
	crls     map[string][]byte
	released chan struct{}
	once     sync.Once
}

func newCRLDistribution(t *testing.T) *crlDistribution {
	t.Helper()
	d := &crlDistribution{crls: map[string][]byte{}, released: make(chan struct{})}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-d.released:
		case <-time.After(20 * time.Second):
		case <-r.Context().Done():
			return
		}
		d.mu.Lock()
		body := d.crls[r.URL.Path]
		d.mu.Unlock()
		if body == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/pkix-crl")
		w.Write(body)
	}))
	t.Cleanup(func() { d.release(); d.srv.Close() })
	return d
}

func (d *crlDistribution) release() { d.once.Do(func() { close(d.released) }) }

func (d *crlDistribution) set(path string, crl []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crls[path] = crl
}

// newCRLClientCA is a client CA (see clientCA) whose certificate names a
// CRL distribution point.
func newCRLClientCA(t *testing.T, cn, distributionPoint string) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		CRLDistributionPoints: []string{distributionPoint},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	return &clientCA{cert: cert, key: key, CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// revocationList returns a PEM CRL of ca, valid from thisUpdate to
// nextUpdate, that revokes the given client certificates.
func (ca *clientCA) revocationList(t *testing.T, number int64, thisUpdate, nextUpdate time.Time, revoked ...tls.Certificate) []byte {
	t.Helper()
	rl := &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: thisUpdate, NextUpdate: nextUpdate}
	for _, c := range revoked {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		must(t, err)
		rl.RevokedCertificateEntries = append(rl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: leaf.SerialNumber, RevocationTime: thisUpdate})
	}
	der, err := x509.CreateRevocationList(rand.Reader, rl, ca.cert, ca.key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
}

// presentingGet sends an HTTPS request with SNI host that presents cert
// (if any) whatever CAs the router asks for: Go's client would otherwise
// send no certificate to a router that does not list its CA, and
// ROUTER_MUTUAL_TLS_AUTH=optional would serve the request.
func presentingGet(r *router, host string, cert *tls.Certificate) (response, error) {
	conf := &tls.Config{ServerName: host, InsecureSkipVerify: true}
	if cert != nil {
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return doRequest(fmt.Sprintf("https://127.0.0.1:%d/", r.HTTPSPort), host, conf)
}

// replaceFile installs data at path with a rename, as a ConfigMap update
// or an editor's save does.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	must(t, os.WriteFile(path+".tmp", data, 0o644))
	must(t, os.Rename(path+".tmp", path))
}

// TestMutualTLSCRLsFromTheCADistributionPointsAndCAChanges runs a router
// with ROUTER_MUTUAL_TLS_AUTH=optional and ROUTER_MUTUAL_TLS_AUTH_CA whose
// CA names a CRL distribution point served by the test on 127.0.0.1:
//   - before the CRL is downloaded, requests without a client certificate
//     are served and client certificates are refused (placeholder CRL);
//   - once it is, a certificate it does not revoke is accepted and a
//     revoked one refused;
//   - the CRL is fetched again before its nextUpdate: a certificate the new
//     list revokes is refused too;
//   - the CA file is replaced by another CA without restarting the router:
//     clients of the new CA are accepted, those of the old refused.
func TestMutualTLSCRLsFromTheCADistributionPointsAndCAChanges(t *testing.T) {
	dist := newCRLDistribution(t)
	ca := newCRLClientCA(t, "crl client CA", dist.srv.URL+"/ca1.crl")
	next := newCRLClientCA(t, "next client CA", dist.srv.URL+"/ca2.crl")
	good, revoked1, revoked2 := ca.issue(t, "good-client"), ca.issue(t, "revoked-one"), ca.issue(t, "revoked-two")
	nextClient := next.issue(t, "next-client")

	caFile := filepath.Join(t.TempDir(), "ca-bundle.pem")
	replaceFile(t, caFile, []byte(ca.CertPEM))
	be := startEnvBackend(t, "crlE")
	m := envManifests(t, be)
	r := startRouter(t, m.Dir, map[string]string{
		"ROUTER_MUTUAL_TLS_AUTH":    "optional",
		"ROUTER_MUTUAL_TLS_AUTH_CA": caFile,
	})

	get := func(cert *tls.Certificate) func() (response, error) {
		return func() (response, error) { return presentingGet(r, "edge.env.test", cert) }
	}
	accepted := func(what string, cert tls.Certificate) {
		t.Helper()
		leaf, _ := x509.ParseCertificate(cert.Certificate[0])
		want := "client-cn=[" + leaf.Subject.CommonName + "] client-verify=[0]"
		eventually(t, loadTimeout, what+" accepted", func() error {
			resp, err := get(&cert)()
			if err != nil {
				return err
			}
			if resp.Status != 200 || resp.backend() != "crlE" || !strings.Contains(resp.Body, want) {
				return fmt.Errorf("the backend did not get the verified client certificate: %d %s", resp.Status, resp.Body)
			}
			return nil
		})
	}
	refused := func(what string, cert tls.Certificate) {
		t.Helper()
		if resp, err := get(&cert)(); err == nil {
			t.Fatalf("%s: accepted (%d %s), want the TLS handshake refused", what, resp.Status, resp.Body)
		}
	}
	eventuallyRefused := func(what string, timeout time.Duration, cert tls.Certificate) {
		t.Helper()
		eventually(t, timeout, what+" refused", func() error {
			if resp, err := get(&cert)(); err == nil {
				return fmt.Errorf("accepted: %d %.100s", resp.Status, resp.Body)
			}
			return nil
		})
	}

	// Before the download: the router serves, the placeholder refuses
	// client certificates.
	expectBackend(t, loadTimeout, get(nil), "crlE")
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.env.test", "/") }, "crlE")
	refused("a valid client certificate before the CRL is downloaded", good)
	crlFile := filepath.Join(r.WorkingDir, "mtls", "latest", "crls.pem")
	if data, err := os.ReadFile(filepath.Join(r.WorkingDir, "mtls", "latest", "ca-bundle.pem")); err != nil || string(data) != ca.CertPEM {
		t.Fatalf("WORKDIR/mtls/latest/ca-bundle.pem: %v", err)
	}
	if _, err := os.Stat(crlFile); err != nil {
		t.Fatalf("no crl file while the CRL is downloaded: %v", err)
	}

	// The first list revokes one certificate. It is fetched again a tenth
	// of its validity (5 s) before its nextUpdate, 15 s from now.
	now := time.Now()
	dist.set("/ca1.crl", ca.revocationList(t, 1, now.Add(-30*time.Second), now.Add(20*time.Second), revoked1))
	dist.release()
	accepted("a certificate the CRL does not revoke", good)
	refused("the revoked certificate", revoked1)
	accepted("a certificate revoked only by the next list", revoked2)
	if data, err := os.ReadFile(crlFile); err != nil || !strings.Contains(string(data), "BEGIN X509 CRL") {
		t.Fatalf("WORKDIR/mtls/latest/crls.pem: %v %q", err, data)
	}
	if time.Since(now) > 12*time.Second {
		t.Fatalf("the first checks took %v: too slow to observe the refresh", time.Since(now))
	}

	// The next list also revokes the second certificate.
	dist.set("/ca1.crl", ca.revocationList(t, 2, time.Now(), time.Now().Add(time.Hour), revoked1, revoked2))
	eventuallyRefused("the certificate the refreshed CRL revokes", 30*time.Second, revoked2)
	if time.Since(now) > 20*time.Second {
		t.Errorf("the refreshed list took effect after the first one expired (%v)", time.Since(now))
	}
	accepted("the unrevoked certificate after the refresh", good)
	refused("the first revoked certificate after the refresh", revoked1)

	// The CA bundle is replaced (no restart).
	dist.set("/ca2.crl", next.revocationList(t, 1, time.Now().Add(-time.Minute), time.Now().Add(time.Hour)))
	pid := r.cmd.Process.Pid
	replaceFile(t, caFile, []byte(next.CertPEM))
	accepted("a client of the new CA", nextClient)
	eventuallyRefused("a client of the old CA", loadTimeout, good)
	expectBackend(t, loadTimeout, get(nil), "crlE")
	if r.cmd.Process.Pid != pid {
		t.Fatal("the router restarted")
	}
	if exited, _ := r.Exited(); exited {
		t.Fatal("the router exited")
	}
}
