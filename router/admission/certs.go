package admission

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Values shown instead of certificate and key data in messages, as
// OpenShift shows them.
const (
	redactedCert   = "redacted certificate data"
	redactedKey    = "redacted key data"
	redactedCA     = "redacted ca certificate data"
	redactedDestCA = "redacted destination ca certificate data"
)

// tlsPEM is the PEM content of an edge or re-encrypt route's TLS fields.
type tlsPEM struct {
	// certs are the CERTIFICATE blocks of spec.tls.certificate, in order.
	certs []*pem.Block
	// key is the private key, from spec.tls.key or (as OpenShift allows)
	// from spec.tls.certificate; nil if the route has no certificate.
	key *pem.Block
	// keyField is the field key came from.
	keyField string
	ca       []*pem.Block
	destCA   []*pem.Block
}

// splitTLSPEM checks the PEM structure of an edge or re-encrypt route's
// certificate fields: certificate holds certificates (leaf first) and at
// most one private key, key holds exactly one private key, the CA fields
// hold certificates only; a certificate needs a key. Text before the first
// PEM block is ignored; anything else is an error.
func splitTLSPEM(p *field.Path, tls *routev1.TLSConfig) (tlsPEM, field.ErrorList) {
	var out tlsPEM
	var errs field.ErrorList
	var certKeys []*pem.Block
	if tls.Certificate != "" {
		certs, keys, err := decodePEM(tls.Certificate, true)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
		case len(certs) == 0:
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, "data does not contain any PEM certificate"))
		case len(keys) > 1:
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, "data contains more than one private key"))
		default:
			out.certs, certKeys = certs, keys
		}
	}
	if tls.Key != "" {
		certs, keys, err := decodePEM(tls.Key, true)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("key"), redactedKey, err.Error()))
		case len(keys) != 1 || len(certs) > 0:
			errs = append(errs, field.Invalid(p.Child("key"), redactedKey, "data must contain exactly one PEM private key and nothing else"))
		default:
			out.key, out.keyField = keys[0], "key"
		}
	}
	if len(certKeys) == 1 {
		if out.key != nil {
			errs = append(errs, field.Invalid(p.Child("key"), redactedKey, "a private key is given in both certificate and key"))
		}
		out.key, out.keyField = certKeys[0], "certificate"
	}
	if tls.Certificate != "" && out.key == nil && len(errs) == 0 {
		errs = append(errs, field.Invalid(p.Child("key"), "", "no key specified"))
	}
	for _, f := range []struct {
		name, data, redacted string
		dst                  *[]*pem.Block
	}{
		{"caCertificate", tls.CACertificate, redactedCA, &out.ca},
		{"destinationCACertificate", tls.DestinationCACertificate, redactedDestCA, &out.destCA},
	} {
		if f.data == "" {
			continue
		}
		certs, _, err := decodePEM(f.data, false)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child(f.name), f.redacted, err.Error()))
		case len(certs) == 0:
			errs = append(errs, field.Invalid(p.Child(f.name), f.redacted, "data does not contain any PEM certificate"))
		default:
			*f.dst = certs
		}
	}
	return out, errs
}

// decodePEM splits PEM data into its certificate and private key blocks.
// EC PARAMETERS blocks are ignored (as OpenShift does); any other block
// type, a private key where keys are not allowed, or non-PEM content after
// the first block is an error.
func decodePEM(data string, keysAllowed bool) (certs, keys []*pem.Block, err error) {
	rest := []byte(data)
	// Each round consumes at least one block of rest.
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			certs = append(certs, block)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if !keysAllowed {
				return nil, nil, errors.New("data must contain certificates only, not a private key")
			}
			keys = append(keys, block)
		case "EC PARAMETERS":
		default:
			return nil, nil, fmt.Errorf("unrecognized PEM block %s", quoteForMessage(block.Type))
		}
	}
	if len(certs)+len(keys) > 0 && len(bytes.TrimSpace(rest)) > 0 {
		return nil, nil, errors.New("data contains content that is not PEM after the last PEM block")
	}
	return certs, keys, nil
}

// validateCertificates is extended validation (EXTENDED_VALIDATION) of an
// edge or re-encrypt route whose PEM structure is valid: the certificates
// and keys parse; CA-signed certificates do not use SHA1, MD5 or MD2
// signatures; the certificate chain is in leaf-to-root order; the key
// matches the leaf certificate; with a caCertificate, the leaf verifies
// against it (expiry is tolerated, as in OpenShift, so the client decides).
func validateCertificates(p *field.Path, in tlsPEM) field.ErrorList {
	var errs field.ErrorList
	var chain []*x509.Certificate
	if len(in.certs) > 0 {
		certs, err := parseCertificateBlocks(in.certs)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
		default:
			chain = certs
			if err := checkSignatureAlgorithms(certs); err != nil {
				errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
			}
			if err := checkChainOrder(certs); err != nil {
				errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
			}
		}
	}
	if in.key != nil && len(in.certs) > 0 {
		kp := p.Child(in.keyField)
		key, err := parsePrivateKey(in.key)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(kp, redactedKey, err.Error()))
		case chain != nil && !keyMatches(chain[0], key):
			errs = append(errs, field.Invalid(kp, redactedKey, "private key does not match public key"))
		}
	}
	var cas []*x509.Certificate
	if len(in.ca) > 0 {
		certs, err := parseCertificateBlocks(in.ca)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("caCertificate"), redactedCA, "failed to parse CA certificate: "+err.Error()))
		} else {
			cas = certs
			if err := checkSignatureAlgorithms(certs); err != nil {
				errs = append(errs, field.Invalid(p.Child("caCertificate"), redactedCA, err.Error()))
			}
		}
	}
	if chain != nil && cas != nil {
		if err := verifyAgainstCA(chain, cas); err != nil {
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
		}
	}
	if len(in.destCA) > 0 {
		certs, err := parseCertificateBlocks(in.destCA)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), redactedDestCA, "failed to parse destination CA certificate: "+err.Error()))
		} else if err := checkSignatureAlgorithms(certs); err != nil {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), redactedDestCA, err.Error()))
		}
	}
	return errs
}

func parseCertificateBlocks(blocks []*pem.Block) ([]*x509.Certificate, error) {
	certs := make([]*x509.Certificate, 0, len(blocks))
	for i, b := range blocks {
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("error parsing certificate %d: %v", i+1, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// checkSignatureAlgorithms refuses CA-signed certificates with SHA1, MD5 or
// MD2 signatures, which HAProxy's OpenSSL refuses (self-signed roots may
// still use them: their signature is not checked).
func checkSignatureAlgorithms(certs []*x509.Certificate) error {
	for _, c := range certs {
		if isSelfSigned(c) {
			continue
		}
		switch c.SignatureAlgorithm {
		case x509.SHA1WithRSA, x509.ECDSAWithSHA1, x509.DSAWithSHA1:
			return errors.New("router does not support CA-signed certs using SHA1")
		case x509.MD5WithRSA:
			return errors.New("router does not support CA-signed certs using MD5")
		case x509.MD2WithRSA:
			return errors.New("router does not support CA-signed certs using MD2")
		}
	}
	return nil
}

func isSelfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) &&
		(len(c.AuthorityKeyId) == 0 || bytes.Equal(c.AuthorityKeyId, c.SubjectKeyId))
}

// checkChainOrder requires each certificate of a chain to be signed by the
// next one (leaf first), as HAProxy sends the chain in file order.
func checkChainOrder(certs []*x509.Certificate) error {
	for i := 0; i+1 < len(certs); i++ {
		if err := certs[i].CheckSignatureFrom(certs[i+1]); err != nil {
			return fmt.Errorf("certificate %d of the chain is not signed by certificate %d (chain must be in leaf-to-root order): %v", i+1, i+2, err)
		}
	}
	return nil
}

// verifyAgainstCA verifies the leaf of chain against the route's CA
// certificates (the rest of chain may supply intermediates).
func verifyAgainstCA(chain, cas []*x509.Certificate) error {
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
		inter.AddCert(c)
	}
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	var invalid x509.CertificateInvalidError
	if err == nil || (errors.As(err, &invalid) && invalid.Reason == x509.Expired) {
		return nil
	}
	return fmt.Errorf("error verifying certificate: %v", err)
}

func parsePrivateKey(block *pem.Block) (crypto.PrivateKey, error) {
	var key crypto.PrivateKey
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("error parsing private key: %v", err)
	}
	return key, nil
}

func keyMatches(cert *x509.Certificate, key crypto.PrivateKey) bool {
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := key.(publicKeyer)
	if !ok {
		return false
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch pub := cert.PublicKey.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return pub.(equaler).Equal(pk.Public())
	}
	return false
}
