// Package mtls keeps the files HAProxy verifies client certificates with
// (ROUTER_MUTUAL_TLS_AUTH) up to date, as OpenShift's router does: a copy of
// the client CA bundle (ROUTER_MUTUAL_TLS_AUTH_CA, usually a mounted
// ConfigMap that changes in place) and one file of the certificate
// revocation lists named in its certificates' CRL distribution points,
// downloaded in the background and fetched again before they expire.
//
// This file is the pure part: parsing the bundle, deciding which CRLs are
// needed and which cached ones can still be used, and when to look again.
// manager.go runs it (downloads, file watching, backoff).
package mtls

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
)

// Authority is a CA of the bundle whose certificate names CRL distribution
// points: HAProxy needs a current CRL of it to accept its clients once
// crl-file is set.
type Authority struct {
	// Key identifies the CRL issuer (subject and public key); CA
	// certificates that share both (a renewed CA) share one CRL.
	Key  string
	Cert *x509.Certificate
	// URLs are the distribution points to fetch from, in order (http
	// only, as OpenShift: a CRL is signed, and fetching it over TLS could
	// depend on revocation checking itself).
	URLs []string
	// Unsupported are the other distribution points (ldap:, https:, …).
	Unsupported []string
}

// Bundle is a parsed client CA bundle.
type Bundle struct {
	Certs []*x509.Certificate
	// Authorities are the CAs that name CRL distribution points, in
	// bundle order, one per Key.
	Authorities []Authority
	// Skipped counts PEM blocks that are not certificates.
	Skipped int
}

// ParseBundle parses a PEM CA bundle. A certificate that does not parse is
// an error (as in OpenShift); other PEM blocks are skipped.
func ParseBundle(data []byte) (Bundle, error) {
	var b Bundle
	index := map[string]int{}
	for rest := data; len(rest) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			b.Skipped++
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return Bundle{}, fmt.Errorf("certificate %d of the CA bundle: %w", len(b.Certs)+1, err)
		}
		b.Certs = append(b.Certs, cert)
		if len(cert.CRLDistributionPoints) == 0 {
			continue
		}
		key := issuerKey(cert)
		i, ok := index[key]
		if !ok {
			i = len(b.Authorities)
			index[key] = i
			b.Authorities = append(b.Authorities, Authority{Key: key, Cert: cert})
		}
		a := &b.Authorities[i]
		for _, dp := range cert.CRLDistributionPoints {
			if strings.HasPrefix(strings.ToLower(dp), "http://") {
				if !contains(a.URLs, dp) {
					a.URLs = append(a.URLs, dp)
				}
			} else if !contains(a.Unsupported, dp) {
				a.Unsupported = append(a.Unsupported, dp)
			}
		}
	}
	if len(b.Certs) == 0 {
		return Bundle{}, errors.New("the CA bundle holds no PEM certificate")
	}
	return b, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// issuerKey identifies a CRL issuer by subject and public key.
func issuerKey(cert *x509.Certificate) string {
	h := sha256.New()
	h.Write(cert.RawSubject)
	h.Write(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// CRL is a revocation list of one authority.
type CRL struct {
	// Key is the Authority's.
	Key string
	// URL is where it was fetched from.
	URL string
	// DER is the list as fetched (DER).
	DER        []byte
	ThisUpdate time.Time
	// NextUpdate is zero when the list names none.
	NextUpdate time.Time
	// Fetched is when it was downloaded.
	Fetched time.Time
}

// ParseCRL parses a CRL in PEM ("X509 CRL") or DER form and checks who
// issued and signed it. By RFC 5280 a distribution point in a certificate
// names the CRL of that certificate's issuer: the list fetched from the
// distribution point of authority (the bundle certificate that names it)
// is signed by authority itself when it is a self-signed root naming its
// own list, or by authority's issuer (an intermediate naming its root's
// list). The signer must be authority or one of the bundle's certificates
// (bundle); a list of anyone else is an error, as HAProxy would silently
// not use it.
func ParseCRL(data []byte, authority *x509.Certificate, bundle ...*x509.Certificate) (CRL, error) {
	der := data
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "X509 CRL" {
			return CRL{}, fmt.Errorf("PEM block %q, want X509 CRL", block.Type)
		}
		der = block.Bytes
	}
	rl, err := x509.ParseRevocationList(der)
	if err != nil {
		return CRL{}, fmt.Errorf("parsing CRL: %w", err)
	}
	var lastErr error
	for _, signer := range append([]*x509.Certificate{authority}, bundle...) {
		if signer == nil || !bytes.Equal(rl.RawIssuer, signer.RawSubject) {
			continue
		}
		if err := rl.CheckSignatureFrom(signer); err != nil {
			lastErr = fmt.Errorf("CRL signature does not verify against the CA %q: %w", signer.Subject, err)
			continue
		}
		return CRL{DER: der, ThisUpdate: rl.ThisUpdate, NextUpdate: rl.NextUpdate}, nil
	}
	if lastErr != nil {
		return CRL{}, lastErr
	}
	return CRL{}, fmt.Errorf("CRL issued by %q, which is neither the CA %q nor another certificate of the CA bundle", rl.Issuer, authority.Subject)
}

// Policy says when CRLs are fetched again.
type Policy struct {
	// MaxLead bounds how long before its nextUpdate a CRL is fetched
	// again: a tenth of its validity, at most MaxLead, so the new list is
	// in place before the old one expires (HAProxy refuses every client
	// of a CA whose CRL has expired).
	MaxLead time.Duration
	// NoNextUpdate is how often a CRL without nextUpdate is fetched again.
	NoNextUpdate time.Duration
}

// DefaultPolicy fetches at most an hour before nextUpdate, and lists
// without nextUpdate every 5 minutes (OpenShift's fallback interval).
func DefaultPolicy() Policy { return Policy{MaxLead: time.Hour, NoNextUpdate: 5 * time.Minute} }

// RefreshAt is when c should be fetched again.
func (p Policy) RefreshAt(c CRL) time.Time {
	if c.NextUpdate.IsZero() {
		return c.Fetched.Add(p.NoNextUpdate)
	}
	lead := c.NextUpdate.Sub(c.ThisUpdate) / 10
	if lead < 0 {
		lead = 0
	}
	if lead > p.MaxLead {
		lead = p.MaxLead
	}
	return c.NextUpdate.Add(-lead)
}

// Plan splits the bundle's authorities into those whose cached CRL can
// still be used (fetched, not yet due) and those whose CRL must be
// fetched (missing or due). Cached CRLs of authorities no longer in the
// bundle are dropped.
func (p Policy) Plan(b Bundle, cached map[string]CRL, now time.Time) (keep map[string]CRL, fetch []Authority) {
	keep = map[string]CRL{}
	for _, a := range b.Authorities {
		if c, ok := cached[a.Key]; ok && now.Before(p.RefreshAt(c)) {
			keep[a.Key] = c
			continue
		}
		fetch = append(fetch, a)
	}
	return keep, fetch
}

// Newer reports whether fetched should replace cached: it is at least as
// recent (a CA may publish its next list only at nextUpdate, so a fetch
// before it may return the same list again).
func Newer(fetched, cached CRL) bool {
	return !fetched.ThisUpdate.Before(cached.ThisUpdate)
}

// Due reports the authorities whose CRL is missing from crls or due.
func (p Policy) Due(b Bundle, crls map[string]CRL, now time.Time) []string {
	var out []string
	for _, a := range b.Authorities {
		c, ok := crls[a.Key]
		if !ok || !now.Before(p.RefreshAt(c)) {
			out = append(out, a.Key)
		}
	}
	return out
}

// NextRefresh is the earliest time a CRL of crls is due after now (zero
// when none is); CRLs already due are left to the caller's retry.
func (p Policy) NextRefresh(crls map[string]CRL, now time.Time) time.Time {
	var next time.Time
	for _, c := range crls {
		at := p.RefreshAt(c)
		if !at.After(now) {
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// Encode returns the CRLs as one PEM file, in a stable order.
func Encode(crls map[string]CRL) []byte {
	keys := make([]string, 0, len(crls))
	for k := range crls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	seen := map[string]bool{}
	for _, k := range keys {
		// Two authorities (a root and its intermediate) may name the same
		// list: write it once.
		if der := string(crls[k].DER); !seen[der] {
			seen[der] = true
			_ = pem.Encode(&buf, &pem.Block{Type: "X509 CRL", Bytes: crls[k].DER})
		}
	}
	return buf.Bytes()
}

// Placeholder returns a CRL that lets HAProxy load a crl-file before the
// real lists are downloaded while refusing every client certificate
// meanwhile: it is issued by a throwaway CA (its key is discarded, so no
// certificate chains to it) and expired in 2000, so no CA of the bundle
// has a usable list yet.
func Placeholder() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "openshift-router placeholder CRL issuer (no certificates)"},
		NotBefore: start, NotAfter: start.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(1), ThisUpdate: start, NextUpdate: start.Add(time.Hour),
	}, ca, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: crl}), nil
}
