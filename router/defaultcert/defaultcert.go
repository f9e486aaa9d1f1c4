// Package defaultcert finds the router's default certificate from
// DEFAULT_CERTIFICATE, DEFAULT_CERTIFICATE_PATH or DEFAULT_CERTIFICATE_DIR
// (in that precedence), or generates a self-signed one.
package defaultcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Source names where the certificate came from.
type Source string

const (
	FromEnv       Source = "DEFAULT_CERTIFICATE"
	FromPath      Source = "DEFAULT_CERTIFICATE_PATH"
	FromDir       Source = "DEFAULT_CERTIFICATE_DIR"
	SelfSigned    Source = "self-signed"
	selfSignedCN         = "router-default.local"
	selfSignedFor        = 2 * 365 * 24 * time.Hour
)

// Load returns the default certificate as one PEM (certificate chain and
// private key) and where it came from. A given but unusable certificate is an
// error naming the variable.
func Load(contents, path, dir string) ([]byte, Source, error) {
	switch {
	case strings.TrimSpace(contents) != "":
		return check([]byte(contents), FromEnv)
	case path != "":
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, FromPath, fmt.Errorf("DEFAULT_CERTIFICATE_PATH: %w", err)
		}
		return check(data, FromPath)
	case dir != "":
		crt, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
		if err != nil {
			return nil, FromDir, fmt.Errorf("DEFAULT_CERTIFICATE_DIR: %w", err)
		}
		if !hasPrivateKey(crt) {
			key, err := os.ReadFile(filepath.Join(dir, "tls.key"))
			if err != nil {
				return nil, FromDir, fmt.Errorf("DEFAULT_CERTIFICATE_DIR: tls.crt has no private key and tls.key: %w", err)
			}
			crt = append(append(append([]byte{}, crt...), '\n'), key...)
		}
		return check(crt, FromDir)
	}
	data, err := Generate(selfSignedCN, selfSignedFor)
	return data, SelfSigned, err
}

func hasPrivateKey(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return true
		}
	}
}

// check verifies the PEM holds a certificate and its matching key, and
// returns it normalised to certificate(s) first, then the key.
func check(data []byte, src Source) ([]byte, Source, error) {
	var certs, keys []*pem.Block
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			certs = append(certs, b)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			keys = append(keys, b)
		}
	}
	if len(certs) == 0 || len(keys) != 1 {
		return nil, src, fmt.Errorf("%s: want PEM certificate(s) and exactly one private key, found %d certificate(s) and %d key(s)", src, len(certs), len(keys))
	}
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(c)...)
	}
	out = append(out, pem.EncodeToMemory(keys[0])...)
	if _, err := tls.X509KeyPair(out, out); err != nil {
		return nil, src, fmt.Errorf("%s: %w", src, err)
	}
	return out, src, nil
}

// Generate makes a self-signed certificate and key for cn.
func Generate(cn string, validFor time.Duration) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating default certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, errors.New("generating serial number")
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              []string{cn, "*." + cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("generating default certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...), nil
}
