package admission

import (
	"bytes"
	"crypto"
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	cryptotls "crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

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

// minKeyBits is the smallest RSA or DSA key HAProxy's OpenSSL loads at its
// default security level (2): smaller keys make HAProxy refuse the whole
// configuration ("ee key too small", "ca key too small").
const minKeyBits = 2048

// servedTLS is the sanitised PEM of an edge or re-encrypt route: what is
// written for HAProxy instead of the route's own text. It holds only PEM
// blocks that parse, re-encoded without headers or surrounding text.
type servedTLS struct {
	// certs are the certificates of spec.tls.certificate, in the order
	// given (the first is the leaf).
	certs []*pem.Block
	// key is the private key served with certs: the first one of
	// spec.tls.certificate, else of spec.tls.key; nil without certs.
	key *pem.Block
	// keyField is the field key came from.
	keyField string
	// ca and destCA are the certificates of caCertificate and
	// destinationCACertificate.
	ca, destCA []*pem.Block
}

// apply returns a copy of in with the certificate fields replaced by s.
func (s servedTLS) apply(in *routev1.TLSConfig) *routev1.TLSConfig {
	out := *in
	out.Certificate = encodePEM(s.certs)
	out.Key = ""
	if s.key != nil {
		out.Key = encodePEM([]*pem.Block{s.key})
	}
	out.CACertificate = encodePEM(s.ca)
	out.DestinationCACertificate = encodePEM(s.destCA)
	return &out
}

// ServableCertificate returns the PEM HAProxy is given for a certificate
// and its key that an edge route could serve (the checks of admission
// without extended validation: blocks that parse, a key that matches and
// that HAProxy loads), the certificates first; or why it cannot be served.
func ServableCertificate(crt, key string) ([]byte, error) {
	s, _, errs := checkCertificates(field.NewPath("tls"), &routev1.TLSConfig{Certificate: crt, Key: key}, false)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if len(s.certs) == 0 || s.key == nil {
		return nil, errors.New("no certificate, or no key")
	}
	return []byte(encodePEM(s.certs) + encodePEM([]*pem.Block{s.key})), nil
}

func encodePEM(blocks []*pem.Block) string {
	var b bytes.Buffer
	for _, bl := range blocks {
		_ = pem.Encode(&b, bl) // cannot fail: blocks have no headers
	}
	return b.String()
}

// checkCertificates checks and sanitises an edge or re-encrypt route's
// certificate fields. With extended (EXTENDED_VALIDATION) it applies
// OpenShift's extended validation, whose errors (invalid) reject the route
// with ExtendedValidationFailed; without it OpenShift checks nothing here.
// Either way what is served must be something HAProxy loads: the other
// errors (unloadable) are this router's own rejections.
func checkCertificates(p *field.Path, tls *routev1.TLSConfig, extended bool) (s servedTLS, invalid, unloadable field.ErrorList) {
	if extended {
		s, invalid = extendedCertificates(p, tls)
		if len(invalid) > 0 {
			return s, invalid, nil
		}
	}
	if errs := pemHeaders(p, tls); len(errs) > 0 {
		return servedTLS{}, nil, errs
	}
	if !extended {
		s, unloadable = lenientCertificates(p, tls)
		if len(unloadable) > 0 {
			return s, nil, unloadable
		}
	}
	return s, nil, loadable(p, s)
}

// extendedCertificates is OpenShift's extended validation of the
// certificate fields (routeapihelpers.ExtendedValidateRoute), with the
// same outcome: each field is sanitised (text around and between PEM
// blocks and EC PARAMETERS blocks are dropped, keys are re-encoded as
// PKCS#1 or SEC 1; an unrecognised block type, or a key, certificate or
// public key block that does not parse, is an error); CA-signed
// certificates must not use SHA1, MD5 or MD2; with a caCertificate the
// leaf must verify against it (expiry tolerated); the private keys of
// certificate and key together must be private keys only, the first of
// them matching the first certificate (the order of the other
// certificates is free).
func extendedCertificates(p *field.Path, in *routev1.TLSConfig) (servedTLS, field.ErrorList) {
	var s servedTLS
	var errs field.ErrorList
	var roots *x509.CertPool
	if in.CACertificate != "" {
		roots = x509.NewCertPool()
		certs, blocks, more := caField(p.Child("caCertificate"), in.CACertificate, redactedCA, "CA certificate")
		for _, c := range certs {
			roots.AddCert(c)
		}
		s.ca, errs = blocks, append(errs, more...)
	}
	certBlocks, keyBlocks, ok, more := leafAndKey(p, in, roots)
	errs = append(errs, more...)
	// OpenShift goes on with the unsanitised text of a field that failed
	// and can only add errors to a rejected route: stop here instead.
	if in.Certificate != "" && ok {
		errs = append(errs, keyPair(p, certBlocks, keyBlocks, &s)...)
	}
	if in.DestinationCACertificate != "" {
		_, blocks, more := caField(p.Child("destinationCACertificate"), in.DestinationCACertificate, redactedDestCA, "destination CA certificate")
		s.destCA, errs = blocks, append(errs, more...)
	}
	return s, errs
}

// caField checks a CA bundle field (at p, shown as redacted, named what in
// a parse error): its certificates, and their sanitised blocks unless the
// field cannot be sanitised.
func caField(p *field.Path, text, redacted, what string) ([]*x509.Certificate, []*pem.Block, field.ErrorList) {
	certs, err := parseCertsPEM(text)
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, redacted, "failed to parse "+what+": "+err.Error())}
	}
	var errs field.ErrorList
	var blocks []*pem.Block
	if b, err := sanitizePEM(text); err != nil {
		errs = append(errs, field.Invalid(p, redacted, err.Error()))
	} else {
		blocks = blocksOfType(b, "CERTIFICATE")
	}
	if err := checkSignatureAlgorithms(certs); err != nil {
		errs = append(errs, field.Invalid(p, redacted, err.Error()))
	}
	return certs, blocks, errs
}

// leafAndKey checks the certificate field (its signature algorithms, its
// chain to roots when the route has a CA) and the key field: their
// sanitised blocks, and whether both fields (those given) passed.
func leafAndKey(p *field.Path, in *routev1.TLSConfig, roots *x509.CertPool) (certBlocks, keyBlocks []*pem.Block, ok bool, errs field.ErrorList) {
	ok = true
	if in.Certificate != "" {
		certs, err := parseCertsPEM(in.Certificate)
		if err == nil {
			err = checkSignatureAlgorithms(certs)
		}
		if err == nil && roots != nil {
			err = verifyLeaf(certs[0], roots)
		}
		if err == nil {
			certBlocks, err = sanitizePEM(in.Certificate)
		}
		if err != nil {
			ok = false
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
		}
	}
	if in.Key != "" {
		var err error
		if keyBlocks, err = sanitizePEM(in.Key); err != nil {
			ok = false
			errs = append(errs, field.Invalid(p.Child("key"), redactedKey, err.Error()))
		}
	}
	return certBlocks, keyBlocks, ok, errs
}

// keyPair checks the private keys (in the certificate field or the key
// field) against the certificates, as OpenShift does, and sets s's
// certificates and key when they make a pair.
func keyPair(p *field.Path, certBlocks, keyBlocks []*pem.Block, s *servedTLS) field.ErrorList {
	var public, private []*pem.Block
	for _, b := range certBlocks {
		if isPrivateKeyType(b.Type) {
			private = append(private, b)
		} else {
			public = append(public, b)
		}
	}
	private = append(private, keyBlocks...)
	if len(private) == 0 {
		return field.ErrorList{field.Invalid(p.Child("key"), "", "no key specified")}
	}
	var errs field.ErrorList
	if b := firstNotOfType(private, "PRIVATE KEY"); b != nil {
		errs = append(errs, field.Invalid(p.Child("key"), redactedKey, fmt.Sprintf("field contains invalid types %s, expecting only PRIVATE KEY", printable(b.Type))))
	}
	if b := firstNotOfType(public, "CERTIFICATE"); b != nil {
		errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, fmt.Sprintf("field contains invalid types %s, expecting only CERTIFICATE", printable(b.Type))))
	}
	// The standard library's key pair check, as OpenShift's: the first
	// private key must match the first certificate.
	if _, err := cryptotls.X509KeyPair([]byte(encodePEM(public)), []byte(encodePEM(private))); err != nil {
		errs = append(errs, field.Invalid(p.Child("key"), redactedKey, err.Error()))
	}
	if len(errs) == 0 {
		s.certs, s.key = public, private[0]
		s.keyField = "key"
		if len(private) > len(keyBlocks) {
			s.keyField = "certificate"
		}
	}
	return errs
}

// lenientCertificates is what EXTENDED_VALIDATION=false leaves: OpenShift
// checks nothing and writes the fields as given. This router still serves
// the sanitised form (parsed certificates and the first private key, text
// and other blocks dropped) and refuses what HAProxy could not load: a
// certificate or key that does not parse, an encrypted key (HAProxy would
// wait for a passphrase), a certificate without a key, a destination CA
// without a certificate.
func lenientCertificates(p *field.Path, in *routev1.TLSConfig) (servedTLS, field.ErrorList) {
	var s servedTLS
	var errs field.ErrorList
	certs, certKeys, err := decodeLenient(in.Certificate)
	if err != nil {
		errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, err.Error()))
	}
	_, keys, err := decodeLenient(in.Key)
	if err != nil {
		errs = append(errs, field.Invalid(p.Child("key"), redactedKey, err.Error()))
	}
	if in.Certificate != "" && len(errs) == 0 {
		key, keyField := (*pem.Block)(nil), "certificate"
		switch {
		case len(certKeys) > 0:
			key = certKeys[0]
		case len(keys) > 0:
			key, keyField = keys[0], "key"
		}
		switch {
		case len(certs) == 0:
			errs = append(errs, field.Invalid(p.Child("certificate"), redactedCert, "data does not contain any PEM certificate"))
		case key == nil:
			errs = append(errs, field.Invalid(p.Child("key"), "", "no key specified"))
		case isEncrypted(key):
			errs = append(errs, field.Invalid(p.Child(keyField), redactedKey, "private key is encrypted (HAProxy cannot load it without a passphrase)"))
		default:
			k, err := normalizePrivateKey(key)
			if _, ed := parsePKCS8(key); err != nil && ed == nil {
				// Keys OpenShift's sanitiser does not know (Ed25519)
				// are served as given.
				k, err = &pem.Block{Type: "PRIVATE KEY", Bytes: key.Bytes}, nil
			}
			if err != nil {
				errs = append(errs, field.Invalid(p.Child(keyField), redactedKey, err.Error()))
			}
			s.certs, s.key, s.keyField = certs, k, keyField
		}
	}
	caCerts, _, err := decodeLenient(in.CACertificate)
	if err != nil {
		errs = append(errs, field.Invalid(p.Child("caCertificate"), redactedCA, err.Error()))
	}
	s.ca = caCerts
	destCerts, _, err := decodeLenient(in.DestinationCACertificate)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), redactedDestCA, err.Error()))
	case in.DestinationCACertificate != "" && len(destCerts) == 0:
		errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), redactedDestCA, "data does not contain any PEM certificate (HAProxy cannot load an empty CA file)"))
	}
	s.destCA = destCerts
	return s, errs
}

// decodeLenient returns the certificates (checked to parse) and the
// private key blocks (as given) of PEM data, dropping everything else.
func decodeLenient(data string) (certs, keys []*pem.Block, err error) {
	rest := []byte(data)
	n := 0
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return certs, keys, nil
		}
		switch {
		case b.Type == "CERTIFICATE":
			n++
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("certificate %d does not parse: %v", n, err)
			}
			certs = append(certs, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		case isPrivateKeyType(b.Type):
			keys = append(keys, b)
		}
	}
}

// pemHeaders refuses PEM blocks with headers ("Proc-Type: 4,ENCRYPTED",
// "DEK-Info: ...", any other) in every certificate field: Go's decoder
// ignores them, but OpenSSL reads them as encryption parameters and asks
// for a passphrase (or refuses the block), so nothing an OpenSSL program
// could prompt for is ever accepted. The message names the header keys,
// not their values.
func pemHeaders(p *field.Path, in *routev1.TLSConfig) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, data, redacted string }{
		{"certificate", in.Certificate, redactedCert},
		{"key", in.Key, redactedKey},
		{"caCertificate", in.CACertificate, redactedCA},
		{"destinationCACertificate", in.DestinationCACertificate, redactedDestCA},
	} {
		rest := []byte(f.data)
		for n := 1; ; n++ {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if len(b.Headers) == 0 {
				continue
			}
			keys := make([]string, 0, len(b.Headers))
			for k := range b.Headers {
				keys = append(keys, printable(k))
			}
			sort.Strings(keys)
			errs = append(errs, field.Invalid(p.Child(f.name), f.redacted, fmt.Sprintf(
				"PEM block %d (%s) has headers (%s): OpenSSL would read it as encrypted and ask for a passphrase; remove the headers (and decrypt the key)",
				n, printable(b.Type), strings.Join(keys, ", "))))
			break
		}
	}
	return errs
}

// isEncrypted reports whether a private key block is encrypted (PKCS#8
// ENCRYPTED PRIVATE KEY, or legacy PEM encryption headers).
func isEncrypted(b *pem.Block) bool {
	return b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED")
}

// loadable checks what is served as HAProxy loads it: the key matches the
// leaf; no CA-signed certificate of the file (certificate chain and
// caCertificate) uses a SHA1, MD5 or MD2 signature; no certificate of the
// file has an RSA or DSA key under minKeyBits. Without certificates
// nothing is written, so nothing is checked.
func loadable(p *field.Path, s servedTLS) field.ErrorList {
	if len(s.certs) == 0 || s.key == nil {
		return nil
	}
	var errs field.ErrorList
	certs, err := parseCertificateBlocks(s.certs)
	if err != nil { // not reached: the blocks were parsed before
		return field.ErrorList{field.Invalid(p.Child("certificate"), redactedCert, err.Error())}
	}
	key, err := parsePrivateKey(s.key)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(p.Child(s.keyField), redactedKey, err.Error()))
	case !keyMatches(certs[0], key):
		errs = append(errs, field.Invalid(p.Child(s.keyField), redactedKey, "private key does not match the certificate (HAProxy refuses the pair)"))
	}
	ca, err := parseCertificateBlocks(s.ca)
	if err != nil { // not reached either
		return append(errs, field.Invalid(p.Child("caCertificate"), redactedCA, err.Error()))
	}
	for _, f := range []struct {
		name, redacted string
		certs          []*x509.Certificate
	}{{"certificate", redactedCert, certs}, {"caCertificate", redactedCA, ca}} {
		if err := checkSignatureAlgorithms(f.certs); err != nil {
			errs = append(errs, field.Invalid(p.Child(f.name), f.redacted, err.Error()+" (HAProxy refuses it)"))
		}
		for i, c := range f.certs {
			if bits := weakKeyBits(c); bits > 0 {
				errs = append(errs, field.Invalid(p.Child(f.name), f.redacted,
					fmt.Sprintf("certificate %d has a %d-bit %s key; HAProxy's OpenSSL refuses keys under %d bits", i+1, bits, c.PublicKeyAlgorithm, minKeyBits)))
			}
		}
	}
	return errs
}

// weakKeyBits returns the size of c's RSA or DSA key if it is under
// minKeyBits, else 0.
func weakKeyBits(c *x509.Certificate) int {
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minKeyBits {
			return n
		}
	case *dsa.PublicKey:
		if n := k.P.BitLen(); n < minKeyBits {
			return n
		}
	}
	return 0
}

// sanitizePEM returns the blocks of PEM data as OpenShift sanitises them:
// text outside blocks (and blocks that are not well-formed PEM) is
// skipped, EC PARAMETERS blocks are dropped, certificates, public keys and
// private keys must parse and are re-encoded (keys as PKCS#1 or SEC 1,
// public keys as PKIX), any other block type is an error.
func sanitizePEM(data string) ([]*pem.Block, error) {
	var out []*pem.Block
	rest := []byte(data)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out, nil
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, err
			}
			out = append(out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		case "RSA PRIVATE KEY", "ECDSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY":
			k, err := normalizePrivateKey(b)
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		case "PUBLIC KEY", "RSA PUBLIC KEY", "DSA PUBLIC KEY", "ECDSA PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, err
			}
			der, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				return nil, err
			}
			out = append(out, &pem.Block{Type: "PUBLIC KEY", Bytes: der})
		case "EC PARAMETERS":
		default:
			return nil, fmt.Errorf("unrecognized PEM block %s", printable(b.Type))
		}
	}
}

// normalizePrivateKey parses a private key block whatever its label
// (PKCS#8, PKCS#1 or SEC 1 content) and re-encodes RSA keys as PKCS#1 and
// ECDSA keys as SEC 1; other key types are an error, as in OpenShift.
func normalizePrivateKey(b *pem.Block) (*pem.Block, error) {
	var key any
	var err error
	if key, err = x509.ParsePKCS8PrivateKey(b.Bytes); err != nil {
		if key, err = x509.ParsePKCS1PrivateKey(b.Bytes); err != nil {
			if key, err = x509.ParseECPrivateKey(b.Bytes); err != nil {
				return nil, fmt.Errorf("block %s is not valid", printable(b.Type))
			}
		}
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}, nil
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}, nil
	}
	return nil, fmt.Errorf("block private key %T is not valid", key)
}

// parseCertsPEM returns the certificates of PEM data as Kubernetes'
// cert.ParseCertsPEM does (OpenShift's parser for these fields): CERTIFICATE
// blocks without headers, each of which must parse; at least one.
func parseCertsPEM(data string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(data)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("data does not contain any valid RSA or ECDSA certificates")
	}
	return certs, nil
}

// printable returns a PEM block type as is (as OpenShift's messages show
// it) unless it holds control characters, then Go-quoted.
func printable(s string) string {
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

func parsePKCS8(b *pem.Block) (any, error) { return x509.ParsePKCS8PrivateKey(b.Bytes) }

func isPrivateKeyType(t string) bool {
	return t == "PRIVATE KEY" || strings.HasSuffix(t, " PRIVATE KEY")
}

func blocksOfType(blocks []*pem.Block, t string) []*pem.Block {
	var out []*pem.Block
	for _, b := range blocks {
		if b.Type == t {
			out = append(out, b)
		}
	}
	return out
}

// firstNotOfType returns the first block whose type does not contain t.
func firstNotOfType(blocks []*pem.Block, t string) *pem.Block {
	for _, b := range blocks {
		if !strings.Contains(b.Type, t) {
			return b
		}
	}
	return nil
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
// MD2 signatures, or one Go cannot identify (e.g. RSA-PSS with SHA-1), which
// HAProxy's OpenSSL refuses (self-signed roots may still use them: their
// signature is not checked).
func checkSignatureAlgorithms(certs []*x509.Certificate) error {
	var errs []string
	for _, c := range certs {
		if isSelfSigned(c) {
			continue
		}
		switch c.SignatureAlgorithm {
		case x509.SHA1WithRSA, x509.ECDSAWithSHA1, x509.DSAWithSHA1:
			errs = append(errs, "router does not support CA-signed certs using SHA1")
		case x509.MD5WithRSA:
			errs = append(errs, "router does not support CA-signed certs using MD5")
		case x509.MD2WithRSA:
			errs = append(errs, "router does not support CA-signed certs using MD2")
		case x509.UnknownSignatureAlgorithm:
			// Algorithms Go cannot identify (RSA-PSS with SHA-1, MD4, …)
			// are ones OpenSSL refuses at HAProxy's security level too.
			errs = append(errs, "router does not support CA-signed certs using an unrecognised signature algorithm")
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errors.New(errs[0])
	}
	return errors.New("[" + strings.Join(errs, ", ") + "]")
}

// isSelfSigned is OpenSSL's notion of a self-signed certificate (which
// OpenShift follows): issuer equal to subject, no authority key ID or one
// equal to the subject key ID, and a signature algorithm of the
// certificate's own key type.
func isSelfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) &&
		(len(c.AuthorityKeyId) == 0 || bytes.Equal(c.AuthorityKeyId, c.SubjectKeyId)) &&
		signatureKeyAlgorithm(c.SignatureAlgorithm) == c.PublicKeyAlgorithm
}

func signatureKeyAlgorithm(a x509.SignatureAlgorithm) x509.PublicKeyAlgorithm {
	switch a {
	case x509.MD2WithRSA, x509.MD5WithRSA, x509.SHA1WithRSA, x509.SHA256WithRSA, x509.SHA384WithRSA,
		x509.SHA512WithRSA, x509.SHA256WithRSAPSS, x509.SHA384WithRSAPSS, x509.SHA512WithRSAPSS:
		return x509.RSA
	case x509.DSAWithSHA1, x509.DSAWithSHA256:
		return x509.DSA
	case x509.ECDSAWithSHA1, x509.ECDSAWithSHA256, x509.ECDSAWithSHA384, x509.ECDSAWithSHA512:
		return x509.ECDSA
	case x509.PureEd25519:
		return x509.Ed25519
	}
	return x509.UnknownPublicKeyAlgorithm
}

// verifyLeaf verifies leaf against the route's CA certificates, which are
// both the roots and the only intermediates (the rest of the certificate
// field does not help, as in OpenShift); an expired certificate is
// tolerated, so the client decides.
func verifyLeaf(leaf *x509.Certificate, cas *x509.CertPool) error {
	_, err := leaf.Verify(x509.VerifyOptions{Roots: cas, Intermediates: cas})
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
