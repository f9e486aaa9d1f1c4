package admission

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	cryptotls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
	routev1 "github.com/openshift/api/route/v1"
)

// pkiFixture is a PKI generated for the certificate tests: a root CA, an
// intermediate CA it signed, and leaves the intermediate signed.
type pkiFixture struct {
	root, inter         string // certificate PEM
	rsaLeaf, rsaKey     string // leaf with an RSA key, key as PKCS#1
	rsaKeyPKCS8         string
	ecLeaf, ecKey       string // leaf with a P-256 key, key as SEC 1
	ecKeyPKCS8          string
	otherKey            string // an RSA key of no certificate
	weakLeaf, weakKey   string // self-signed 1024-bit RSA leaf
	sha1Leaf, sha1Key   string // leaf the intermediate signed with SHA1
	edLeaf, edKey       string // Ed25519 leaf and PKCS#8 key
	foreignLeaf, forKey string // leaf of another, unrelated CA
}

func newPKI(t *testing.T) *pkiFixture {
	t.Helper()
	f := &pkiFixture{}
	rootKey := rsaKey(t, 2048)
	rootCert := mkCert(t, "root", true, nil, rootKey, rootKey, x509.SHA256WithRSA)
	interKey := rsaKey(t, 2048)
	interCert := mkCert(t, "intermediate", true, rootCert, rootKey, interKey, x509.SHA256WithRSA)
	f.root, f.inter = certPEM(rootCert), certPEM(interCert)

	lk := rsaKey(t, 2048)
	f.rsaLeaf = certPEM(mkCert(t, "www.example.com", false, interCert, interKey, lk, x509.SHA256WithRSA))
	f.rsaKey = keyPEM(t, "RSA PRIVATE KEY", lk)
	f.rsaKeyPKCS8 = keyPEM(t, "PRIVATE KEY", lk)

	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	f.ecLeaf = certPEM(mkCert(t, "www.example.com", false, interCert, interKey, ek, x509.SHA256WithRSA))
	f.ecKey = keyPEM(t, "EC PRIVATE KEY", ek)
	f.ecKeyPKCS8 = keyPEM(t, "PRIVATE KEY", ek)

	f.otherKey = keyPEM(t, "RSA PRIVATE KEY", rsaKey(t, 2048))

	wk := rsaKey(t, 1024)
	f.weakLeaf = certPEM(mkCert(t, "www.example.com", false, nil, wk, wk, x509.SHA256WithRSA))
	f.weakKey = keyPEM(t, "RSA PRIVATE KEY", wk)

	sk := rsaKey(t, 2048)
	f.sha1Leaf = certPEM(mkCert(t, "www.example.com", false, interCert, interKey, sk, x509.SHA1WithRSA))
	f.sha1Key = keyPEM(t, "RSA PRIVATE KEY", sk)

	_, edk, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	f.edLeaf = certPEM(mkCert(t, "www.example.com", false, interCert, interKey, edk, x509.SHA256WithRSA))
	f.edKey = keyPEM(t, "PRIVATE KEY", edk)

	ok := rsaKey(t, 2048)
	otherRoot := mkCert(t, "other root", true, nil, ok, ok, x509.SHA256WithRSA)
	fk := rsaKey(t, 2048)
	f.foreignLeaf = certPEM(mkCert(t, "www.example.com", false, otherRoot, ok, fk, x509.SHA256WithRSA))
	f.forKey = keyPEM(t, "RSA PRIVATE KEY", fk)
	return f
}

func rsaKey(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	must(t, err)
	return k
}

// mkCert returns a certificate for key signed by parent (self-signed when
// parent is nil) with parentKey.
func mkCert(t *testing.T, cn string, isCA bool, parent *x509.Certificate, parentKey, key crypto.Signer, alg x509.SignatureAlgorithm) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: isCA, SignatureAlgorithm: alg,
	}
	if isCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.DNSNames = []string{cn}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	must(t, err)
	c, err := x509.ParseCertificate(der)
	must(t, err)
	return c
}

func certPEM(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

func keyPEM(t *testing.T, typ string, key crypto.Signer) string {
	t.Helper()
	var der []byte
	var err error
	switch {
	case typ == "PRIVATE KEY":
		der, err = x509.MarshalPKCS8PrivateKey(key)
	case typ == "RSA PRIVATE KEY":
		der = x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))
	default:
		der, err = x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	}
	must(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// bag prefixes a PEM block with the attribute lines openssl pkcs12 writes.
func bag(name, block string) string {
	return "Bag Attributes\n    localKeyID: 01 00 00 00 \n    friendlyName: " + name + "\nsubject=/CN=" + name + "\nissuer=/CN=whoever\n" + block
}

// ecParameters is the EC PARAMETERS block openssl ecparam writes for P-256.
func ecParameters(t *testing.T) string {
	t.Helper()
	der, err := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7})
	must(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: der}))
}

func relabel(pemText, from, to string) string { return strings.ReplaceAll(pemText, from, to) }

func encryptedKey(t *testing.T, keyPEMText string) string {
	t.Helper()
	b, _ := pem.Decode([]byte(keyPEMText))
	//lint:ignore SA1019 legacy PEM encryption is exactly the input to test
	enc, err := x509.EncryptPEMBlock(rand.Reader, b.Type, b.Bytes, []byte("secret"), x509.PEMCipherAES128) //nolint:staticcheck
	must(t, err)
	return string(pem.EncodeToMemory(enc))
}

// certCase is one spec.tls of an edge route and the expected outcome with
// extended validation on and off: "" admitted, else the reason, with a
// message containing msg.
type certCase struct {
	name             string
	tls              routev1.TLSConfig
	extended, plain  string // reasons
	extMsg, plainMsg string
}

// certificateCases are the forms of spec.tls OpenShift's extended
// validation admits and refuses, and the ones HAProxy cannot load.
func certificateCases(t *testing.T, f *pkiFixture) []certCase {
	const (
		ok  = ""
		evf = ReasonExtendedValidationFailed
		cnl = ReasonCertificateNotLoadable
	)
	malformed := "-----BEGIN RSA PRIVATE KEY-----\n!!! not base64 !!!\n-----END RSA PRIVATE KEY-----\n"
	garbageKey := "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	crl := "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n"
	pub := func() string {
		b, _ := pem.Decode([]byte(f.rsaKey))
		k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
		must(t, err)
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		must(t, err)
		return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}()
	return []certCase{
		// Accepted by OpenShift.
		{name: "leaf and key", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey}},
		{name: "text around and between blocks (openssl pkcs12 Bag Attributes)", tls: routev1.TLSConfig{
			Certificate: "exported by a tool\n" + bag("leaf", f.rsaLeaf) + bag("inter", f.inter) + "trailing words\n",
			Key:         bag("leaf", f.rsaKeyPKCS8) + "\nmore text\n",
		}},
		{name: "chain root before intermediate (PKCS#12 export order)", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.root + f.inter, Key: f.rsaKey}},
		{name: "chain leaf to root", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.inter + f.root, Key: f.rsaKey}},
		{name: "EC PARAMETERS beside an EC key", tls: routev1.TLSConfig{Certificate: f.ecLeaf, Key: ecParameters(t) + f.ecKey}},
		{name: "ECDSA PRIVATE KEY label", tls: routev1.TLSConfig{Certificate: f.ecLeaf, Key: relabel(f.ecKey, "EC PRIVATE KEY", "ECDSA PRIVATE KEY")}},
		{name: "PKCS#8 EC key", tls: routev1.TLSConfig{Certificate: f.ecLeaf, Key: f.ecKeyPKCS8}},
		{name: "key in the certificate field only", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.rsaKey}},
		{name: "key in both certificate and key", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.rsaKey, Key: f.rsaKey}},
		{name: "key field with two keys, the first matching", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey + f.otherKey}},
		{name: "key field of malformed PEM only, key in certificate", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.rsaKey, Key: malformed}},
		{name: "key field of EC PARAMETERS only, key in certificate", tls: routev1.TLSConfig{Certificate: f.ecLeaf + f.ecKey, Key: ecParameters(t)}},
		{name: "caCertificate holding the intermediate and the root", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey, CACertificate: f.inter + f.root}},
		{name: "unrecognized block: only refused with extended validation", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + crl, Key: f.rsaKey},
			extended: evf, extMsg: "spec.tls.certificate: Invalid value: \"redacted certificate data\": unrecognized PEM block X509 CRL"},
		{name: "certificate of another CA: only refused with extended validation", tls: routev1.TLSConfig{Certificate: f.foreignLeaf, Key: f.forKey, CACertificate: f.inter + f.root},
			extended: evf, extMsg: "error verifying certificate: x509: certificate signed by unknown authority"},
		{name: "intermediate in the chain but not in caCertificate: OpenShift does not use it to verify", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + f.inter, Key: f.rsaKey, CACertificate: f.root},
			extended: evf, extMsg: "error verifying certificate"},
		{name: "public key beside the certificate", tls: routev1.TLSConfig{Certificate: f.rsaLeaf + pub, Key: f.rsaKey},
			extended: evf, extMsg: "field contains invalid types PUBLIC KEY, expecting only CERTIFICATE"},
		{name: "certificate in the key field", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey + f.inter},
			extended: evf, extMsg: "field contains invalid types CERTIFICATE, expecting only PRIVATE KEY"},
		{name: "second key of the key field does not parse", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey + garbageKey},
			extended: evf, extMsg: "spec.tls.key: Invalid value: \"redacted key data\": block RSA PRIVATE KEY is not valid"},
		{name: "Ed25519 key", tls: routev1.TLSConfig{Certificate: f.edLeaf, Key: f.edKey},
			extended: evf, extMsg: "block private key ed25519.PrivateKey is not valid"},

		// Refused by OpenShift, and HAProxy could not load them either.
		{name: "key of another certificate", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.otherKey},
			extended: evf, extMsg: "spec.tls.key: Invalid value: \"redacted key data\": tls: private key does not match public key",
			plain: cnl, plainMsg: "private key does not match the certificate"},
		{name: "key field with two keys, the first not matching", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.otherKey + f.rsaKey},
			extended: evf, extMsg: "private key does not match public key", plain: cnl, plainMsg: "does not match"},
		{name: "root before the leaf", tls: routev1.TLSConfig{Certificate: f.root + f.rsaLeaf, Key: f.rsaKey},
			extended: evf, extMsg: "private key does not match public key", plain: cnl, plainMsg: "does not match"},
		{name: "no key", tls: routev1.TLSConfig{Certificate: f.rsaLeaf},
			extended: evf, extMsg: "spec.tls.key: Invalid value: \"\": no key specified", plain: cnl, plainMsg: "no key specified"},
		{name: "key field of malformed PEM only, no other key", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: malformed},
			extended: evf, extMsg: "no key specified", plain: cnl, plainMsg: "no key specified"},
		{name: "certificate field of text only", tls: routev1.TLSConfig{Certificate: "nope", Key: f.rsaKey},
			extended: evf, extMsg: "data does not contain any valid RSA or ECDSA certificates", plain: cnl, plainMsg: "data does not contain any PEM certificate"},
		{name: "certificate block that does not parse", tls: routev1.TLSConfig{Certificate: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", Key: f.rsaKey},
			extended: evf, extMsg: "spec.tls.certificate", plain: cnl, plainMsg: "certificate 1 does not parse"},
		{name: "encrypted key (legacy PEM encryption)", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: encryptedKey(t, f.rsaKey)},
			extended: evf, extMsg: "block RSA PRIVATE KEY is not valid", plain: cnl, plainMsg: "PEM block 1 (RSA PRIVATE KEY) has headers (DEK-Info, Proc-Type)"},
		{name: "certificate block with an encryption header (Go ignores it, OpenSSL asks for a passphrase)", tls: routev1.TLSConfig{Certificate: withHeaders(f.rsaLeaf, "Proc-Type: 4,ENCRYPTED"), Key: f.rsaKey},
			extended: evf, extMsg: "data does not contain any valid RSA or ECDSA certificates", plain: cnl, plainMsg: "PEM block 1 (CERTIFICATE) has headers (Proc-Type)"},
		{name: "key block with any header", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: withHeaders(f.rsaKey, "Comment: exported")},
			extended: cnl, extMsg: "spec.tls.key", plain: cnl, plainMsg: "has headers (Comment)"},
		{name: "CA block with a header", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey, CACertificate: withHeaders(f.root, "Proc-Type: 4,ENCRYPTED")},
			extended: evf, extMsg: "spec.tls.caCertificate", plain: cnl, plainMsg: "spec.tls.caCertificate"},
		{name: "encrypted key (PKCS#8)", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: relabel(f.rsaKeyPKCS8, "PRIVATE KEY", "ENCRYPTED PRIVATE KEY")},
			extended: evf, extMsg: "unrecognized PEM block ENCRYPTED PRIVATE KEY", plain: cnl, plainMsg: "private key is encrypted"},
		{name: "CA-signed certificate using SHA1", tls: routev1.TLSConfig{Certificate: f.sha1Leaf, Key: f.sha1Key},
			extended: evf, extMsg: "router does not support CA-signed certs using SHA1", plain: cnl, plainMsg: "SHA1 (HAProxy refuses it)"},
		{name: "destination CA without a certificate", tls: routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, DestinationCACertificate: "junk"},
			extended: evf, extMsg: "failed to parse destination CA certificate", plain: cnl, plainMsg: "HAProxy cannot load an empty CA file"},

		// Admitted by OpenShift, but HAProxy's OpenSSL refuses them: this
		// router's own rejections.
		{name: "1024-bit RSA key", tls: routev1.TLSConfig{Certificate: f.weakLeaf, Key: f.weakKey},
			extended: cnl, extMsg: "certificate 1 has a 1024-bit RSA key; HAProxy's OpenSSL refuses keys under 2048 bits", plain: cnl, plainMsg: "1024-bit RSA key"},
		{name: "1024-bit RSA certificate in caCertificate", tls: routev1.TLSConfig{Certificate: f.rsaLeaf, Key: f.rsaKey, CACertificate: f.weakLeaf},
			extended: evf, extMsg: "error verifying certificate", plain: cnl, plainMsg: "spec.tls.caCertificate"},
	}
}

func TestCertificateFormsAsOpenShiftAdmitsThem(t *testing.T) {
	f := newPKI(t)
	for _, c := range certificateCases(t, f) {
		for _, extended := range []bool{true, false} {
			want, msg := c.extended, c.extMsg
			if !extended {
				want, msg = c.plain, c.plainMsg
			}
			name := c.name + "/extended"
			if !extended {
				name = c.name + "/not extended"
			}
			t.Run(name, func(t *testing.T) {
				tls := c.tls
				if tls.Termination == "" {
					tls.Termination = routev1.TLSTerminationEdge
				}
				r := route("ns", "r", "www.example.com", "", 1)
				r.Spec.TLS = &tls
				orig := tls
				d := Admit([]*routev1.Route{r}, Options{ExtendedValidation: extended})
				res := d.Results[KeyOf(r)]
				if *r.Spec.TLS != orig {
					t.Fatal("admission changed the watched route")
				}
				if want == "" {
					if !res.Admitted {
						t.Fatalf("rejected: %s: %s", res.Reason, res.Message)
					}
					checkServed(t, d.Admitted[0].Spec.TLS)
					return
				}
				if res.Admitted || res.Reason != want || !strings.Contains(res.Message, msg) {
					t.Fatalf("got %s: %s\nwant %s containing %q", res.Reason, res.Message, want, msg)
				}
				if strings.ContainsAny(res.Message, "\n\r") || strings.Contains(res.Message, "BEGIN") {
					t.Fatalf("message carries raw input: %q", res.Message)
				}
			})
		}
	}
}

// checkServed checks the sanitised form an admitted route is served with:
// nothing but PEM blocks, certificates only in the certificate and CA
// fields, one private key, and a pair Go's TLS stack loads.
func checkServed(t *testing.T, tls *routev1.TLSConfig) {
	t.Helper()
	for _, f := range []struct {
		name, data, typ string
	}{
		{"certificate", tls.Certificate, "CERTIFICATE"},
		{"key", tls.Key, "PRIVATE KEY"},
		{"caCertificate", tls.CACertificate, "CERTIFICATE"},
		{"destinationCACertificate", tls.DestinationCACertificate, "CERTIFICATE"},
	} {
		rest := []byte(f.data)
		n := 0
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			n++
			if !strings.HasSuffix(b.Type, f.typ) || len(b.Headers) > 0 {
				t.Fatalf("served %s holds a %s block (headers %v)", f.name, b.Type, b.Headers)
			}
		}
		if len(rest) > 0 {
			t.Fatalf("served %s holds text besides PEM: %q", f.name, rest)
		}
		if f.name == "key" && tls.Certificate != "" && n != 1 {
			t.Fatalf("served key has %d blocks, want 1", n)
		}
	}
	if tls.Certificate != "" {
		if _, err := cryptotls.X509KeyPair([]byte(tls.Certificate), []byte(tls.Key)); err != nil {
			t.Fatalf("served certificate and key do not load: %v", err)
		}
	}
}

func TestServedCertificateKeepsTheChainOrder(t *testing.T) {
	f := newPKI(t)
	r := route("ns", "r", "www.example.com", "", 1)
	r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge,
		Certificate: bag("leaf", f.rsaLeaf) + bag("root", f.root) + bag("inter", f.inter), Key: "junk\n" + f.rsaKeyPKCS8}
	d := Admit([]*routev1.Route{r}, Options{ExtendedValidation: true})
	if len(d.Admitted) != 1 {
		t.Fatalf("not admitted: %+v", d.Results)
	}
	got := d.Admitted[0].Spec.TLS
	if got.Certificate != f.rsaLeaf+f.root+f.inter {
		t.Fatalf("served certificate field is not the three certificates in the given order:\n%s", got.Certificate)
	}
	if got.Key != f.rsaKey {
		t.Fatalf("served key is not the PKCS#1 form of the key:\n%s", got.Key)
	}
}

// withHeaders adds PEM headers (lines "Key: value") to the first block of
// pemText.
func withHeaders(pemText string, headers ...string) string {
	i := strings.Index(pemText, "-----\n")
	return pemText[:i+6] + strings.Join(headers, "\n") + "\n\n" + pemText[i+6:]
}

// TestUnrecognisedSignatureAlgorithmIsNotLoadable: a leaf signed with
// RSA-PSS over SHA-1 (made with openssl: Go cannot create one, and parses it
// as an unknown signature algorithm) is refused, with extended validation or
// without: HAProxy's OpenSSL refuses to load it, which would fail the whole
// configuration.
func TestUnrecognisedSignatureAlgorithmIsNotLoadable(t *testing.T) {
	openssl := prereq.NeedBinary(t, "openssl")
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(openssl, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=pss CA", "-days", "1")
	run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=www.example.com")
	run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.crt", "-days", "1",
		"-sha1", "-sigopt", "rsa_padding_mode:pss")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, extended := range []bool{true, false} {
		r := route("ns", "r", "www.example.com", "", 1)
		r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: read("leaf.crt"), Key: read("leaf.key"), CACertificate: read("ca.crt")}
		res := Admit([]*routev1.Route{r}, Options{ExtendedValidation: extended}).Results[KeyOf(r)]
		if res.Admitted || !strings.Contains(res.Message, "unrecognised signature algorithm") {
			t.Errorf("extended=%v: %+v", extended, res)
		}
	}
}
