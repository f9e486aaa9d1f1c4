package mtls

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseBundleFindsTheAuthoritiesWithDistributionPoints(t *testing.T) {
	withDP := newTestCA(t, "with DP", "http://127.0.0.1:1/a.crl", "ldap://example/crl", "http://127.0.0.1:1/b.crl")
	without := newTestCA(t, "without DP")
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}})
	data := bytes.Join([][]byte{without.pem, key, withDP.pem, withDP.pem}, nil)

	b, err := ParseBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Certs) != 3 || b.Skipped != 1 {
		t.Fatalf("certs %d skipped %d, want 3 and 1", len(b.Certs), b.Skipped)
	}
	if len(b.Authorities) != 1 {
		t.Fatalf("authorities %d, want 1 (the same CA twice is one CRL issuer)", len(b.Authorities))
	}
	a := b.Authorities[0]
	if a.Cert.Subject.CommonName != "with DP" || strings.Join(a.URLs, " ") != "http://127.0.0.1:1/a.crl http://127.0.0.1:1/b.crl" || strings.Join(a.Unsupported, " ") != "ldap://example/crl" {
		t.Fatalf("authority %+v", a)
	}
}

func TestParseBundleErrors(t *testing.T) {
	for name, data := range map[string]string{
		"empty":               "",
		"no certificate":      string(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{1}})),
		"corrupt certificate": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}})),
		"not PEM":             "hello",
	} {
		if _, err := ParseBundle([]byte(data)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseCRLChecksIssuerAndSignature(t *testing.T) {
	ca := newTestCA(t, "ca", "http://127.0.0.1:1/ca.crl")
	other := newTestCA(t, "other", "http://127.0.0.1:1/other.crl")
	impostor := newTestCA(t, "ca") // same subject, other key
	now := time.Now()
	good := ca.crl(t, 1, now.Add(-time.Minute), now.Add(time.Hour), 7)
	block, _ := pem.Decode(good)

	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"PEM of the CA", good, ""},
		{"DER of the CA", block.Bytes, ""},
		{"another CA's list", other.crl(t, 1, now, now.Add(time.Hour)), "neither the CA"},
		{"same subject, other key", impostor.crl(t, 1, now, now.Add(time.Hour)), "signature"},
		{"a certificate, not a CRL", ca.pem, "want X509 CRL"},
		{"garbage", []byte("<html>not found</html>"), "parsing CRL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCRL(tc.data, ca.cert)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.NextUpdate.Before(now.Add(59*time.Minute)) || c.ThisUpdate.After(now) || len(c.DER) == 0 {
					t.Fatalf("parsed %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRefreshAtIsBeforeNextUpdate(t *testing.T) {
	p := Policy{MaxLead: time.Hour, NoNextUpdate: 5 * time.Minute}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		crl  CRL
		want time.Time
	}{
		{"a tenth of a short validity early", CRL{ThisUpdate: t0, NextUpdate: t0.Add(100 * time.Second)}, t0.Add(90 * time.Second)},
		{"at most MaxLead early", CRL{ThisUpdate: t0, NextUpdate: t0.Add(7 * 24 * time.Hour)}, t0.Add(7*24*time.Hour - time.Hour)},
		{"nextUpdate before thisUpdate: at nextUpdate", CRL{ThisUpdate: t0, NextUpdate: t0.Add(-time.Minute)}, t0.Add(-time.Minute)},
		{"no nextUpdate: NoNextUpdate after the fetch", CRL{ThisUpdate: t0, Fetched: t0.Add(time.Second)}, t0.Add(5*time.Minute + time.Second)},
	} {
		if got := p.RefreshAt(tc.crl); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanKeepsFreshCachedListsAndFetchesTheRest(t *testing.T) {
	p := Policy{MaxLead: time.Hour, NoNextUpdate: 5 * time.Minute}
	fresh := newTestCA(t, "fresh", "http://127.0.0.1:1/fresh.crl")
	due := newTestCA(t, "due", "http://127.0.0.1:1/due.crl")
	missing := newTestCA(t, "missing", "http://127.0.0.1:1/missing.crl")
	gone := newTestCA(t, "gone", "http://127.0.0.1:1/gone.crl")
	b, err := ParseBundle(bytes.Join([][]byte{fresh.pem, due.pem, missing.pem}, nil))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	key := func(ca *testCA) string { return issuerKey(ca.cert) }
	cached := map[string]CRL{
		key(fresh): {Key: key(fresh), ThisUpdate: now.Add(-time.Hour), NextUpdate: now.Add(10 * time.Hour)},
		key(due):   {Key: key(due), ThisUpdate: now.Add(-9 * time.Minute), NextUpdate: now.Add(30 * time.Second)}, // lead 57s: due
		key(gone):  {Key: key(gone), ThisUpdate: now.Add(-time.Hour), NextUpdate: now.Add(10 * time.Hour)},
	}
	keep, fetch := p.Plan(b, cached, now)
	if len(keep) != 1 || keep[key(fresh)].Key == "" {
		t.Fatalf("kept %v, want only the fresh list (the gone CA's is dropped)", keep)
	}
	var names []string
	for _, a := range fetch {
		names = append(names, a.Cert.Subject.CommonName)
	}
	if strings.Join(names, ",") != "due,missing" {
		t.Fatalf("fetch %v, want due,missing", names)
	}
	if d := p.Due(b, keep, now); len(d) != 2 {
		t.Fatalf("due %v, want the two not kept", d)
	}
	if next := p.NextRefresh(cached, now); !next.Equal(now.Add(9 * time.Hour)) {
		t.Fatalf("next refresh %v, want the fresh lists' (the due one is left to the retry)", next)
	}
	if next := p.NextRefresh(nil, now); !next.IsZero() {
		t.Fatalf("next refresh without lists %v, want zero", next)
	}
}

func TestNewerKeepsTheMoreRecentList(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if !Newer(CRL{ThisUpdate: t0.Add(time.Second)}, CRL{ThisUpdate: t0}) || !Newer(CRL{ThisUpdate: t0}, CRL{ThisUpdate: t0}) {
		t.Fatal("a list at least as recent must replace the cached one")
	}
	if Newer(CRL{ThisUpdate: t0}, CRL{ThisUpdate: t0.Add(time.Second)}) {
		t.Fatal("an older list (a stale mirror) must not replace the cached one")
	}
}

func TestEncodeIsStableAndParses(t *testing.T) {
	a, b := newTestCA(t, "a", "http://x/a"), newTestCA(t, "b", "http://x/b")
	now := time.Now()
	ca, _ := ParseCRL(a.crl(t, 1, now, now.Add(time.Hour), 1), a.cert)
	cb, _ := ParseCRL(b.crl(t, 1, now, now.Add(time.Hour), 2), b.cert)
	m := map[string]CRL{"k2": cb, "k1": ca}
	out := Encode(m)
	for i := 0; i < 5; i++ {
		if !bytes.Equal(Encode(m), out) {
			t.Fatal("encoding is not stable")
		}
	}
	lists := pemCRLs(t, out)
	if len(lists) != 2 || lists[0].Issuer.CommonName != "a" || lists[1].Issuer.CommonName != "b" {
		t.Fatalf("encoded %d lists", len(lists))
	}
}

func TestPlaceholderIsAnExpiredListOfNoKnownCA(t *testing.T) {
	data, err := Placeholder()
	if err != nil {
		t.Fatal(err)
	}
	lists := pemCRLs(t, data)
	if len(lists) != 1 || !lists[0].NextUpdate.Before(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("placeholder %+v", lists)
	}
	other, _ := Placeholder()
	if bytes.Equal(other, data) {
		t.Fatal("each placeholder must come from a fresh throwaway key")
	}
}

// TestIntermediateNamesItsRootsList: by RFC 5280 an intermediate's
// distribution point names its issuer's (the root's) list; that list is
// accepted when the root is in the bundle, as OpenShift's router does.
func TestIntermediateNamesItsRootsList(t *testing.T) {
	root := newTestCA(t, "root")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "intermediate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		CRLDistributionPoints: []string{"http://127.0.0.1:1/root.crl"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, root.cert, &key.PublicKey, root.key)
	if err != nil {
		t.Fatal(err)
	}
	inter, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rootList := root.crl(t, 1, now.Add(-time.Minute), now.Add(time.Hour), 9)
	if _, err := ParseCRL(rootList, inter, root.cert, inter); err != nil {
		t.Fatalf("the root's list named by the intermediate: %v", err)
	}
	if _, err := ParseCRL(rootList, inter); err == nil || !strings.Contains(err.Error(), "neither the CA") {
		t.Fatalf("without the root in the bundle: %v", err)
	}
	// Written once, even when two authorities name it.
	c, _ := ParseCRL(rootList, inter, root.cert)
	if got := Encode(map[string]CRL{"a": c, "b": c}); len(pemCRLs(t, got)) != 1 {
		t.Fatalf("the same list written %d times", len(pemCRLs(t, got)))
	}
}
