package admission

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxAlternateBackends is the largest number of alternateBackends a route may have.
const MaxAlternateBackends = 3

// Validate checks a route's structure (always) and, with extended set, its
// certificates and keys. The structural checks also guarantee that no route
// value can break out of its token in haproxy.config or a map file.
func Validate(r *routev1.Route, extended bool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	meta := field.NewPath("metadata")
	for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
		errs = append(errs, field.Invalid(meta.Child("name"), r.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(r.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), r.Namespace, msg))
	}

	host := r.Spec.Host
	switch {
	case host == "":
		errs = append(errs, field.Required(spec.Child("host"), "a host is required (set spec.host)"))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(host)) {
			errs = append(errs, field.Invalid(spec.Child("host"), host, msg))
		}
		for _, label := range strings.Split(host, ".") {
			if len(label) > validation.DNS1123LabelMaxLength {
				errs = append(errs, field.Invalid(spec.Child("host"), host, "each label must be no more than 63 characters"))
				break
			}
		}
	}

	term := routev1.TLSTerminationType("")
	if r.Spec.TLS != nil {
		term = r.Spec.TLS.Termination
	}
	if p := r.Spec.Path; p != "" {
		switch {
		case !strings.HasPrefix(p, "/"):
			errs = append(errs, field.Invalid(spec.Child("path"), p, "path must begin with /"))
		case !safeToken(p):
			errs = append(errs, field.Invalid(spec.Child("path"), p, "path must not contain spaces, quotes, '#', '\\' or control characters"))
		}
		if term == routev1.TLSTerminationPassthrough {
			errs = append(errs, field.Invalid(spec.Child("path"), p, "passthrough termination does not support paths"))
		}
	}

	errs = append(errs, validateBackend(spec.Child("to"), r.Spec.To)...)
	if n := len(r.Spec.AlternateBackends); n > MaxAlternateBackends {
		errs = append(errs, field.TooMany(spec.Child("alternateBackends"), n, MaxAlternateBackends))
	}
	seen := map[string]bool{r.Spec.To.Name: true}
	for i, b := range r.Spec.AlternateBackends {
		p := spec.Child("alternateBackends").Index(i)
		errs = append(errs, validateBackend(p, b)...)
		if seen[b.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), b.Name))
		}
		seen[b.Name] = true
	}
	if r.Spec.Port != nil {
		tp := r.Spec.Port.TargetPort
		if tp.String() == "" || tp.String() == "0" || !safeToken(tp.String()) {
			errs = append(errs, field.Invalid(spec.Child("port", "targetPort"), tp.String(), "must be a port number or a port name"))
		}
	}
	if r.Spec.TLS != nil {
		errs = append(errs, validateTLS(spec.Child("tls"), r.Spec.TLS, extended)...)
	}
	return errs
}

func validateBackend(p *field.Path, b routev1.RouteTargetReference) field.ErrorList {
	var errs field.ErrorList
	if b.Kind != "" && b.Kind != "Service" {
		errs = append(errs, field.NotSupported(p.Child("kind"), b.Kind, []string{"Service"}))
	}
	if b.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "a service name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(b.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), b.Name, msg))
		}
	}
	if b.Weight != nil && (*b.Weight < 0 || *b.Weight > 256) {
		errs = append(errs, field.Invalid(p.Child("weight"), *b.Weight, "weight must be in the range 0-256"))
	}
	return errs
}

func validateTLS(p *field.Path, tls *routev1.TLSConfig, extended bool) field.ErrorList {
	var errs field.ErrorList
	switch tls.Termination {
	case routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt:
		if tls.Termination == routev1.TLSTerminationEdge && tls.DestinationCACertificate != "" {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), "redacted destination ca certificate data", "edge termination does not support destination certificates"))
		}
		switch tls.InsecureEdgeTerminationPolicy {
		case "", routev1.InsecureEdgeTerminationPolicyNone, routev1.InsecureEdgeTerminationPolicyAllow, routev1.InsecureEdgeTerminationPolicyRedirect:
		default:
			errs = append(errs, field.NotSupported(p.Child("insecureEdgeTerminationPolicy"), tls.InsecureEdgeTerminationPolicy, []string{"None", "Allow", "Redirect"}))
		}
	case routev1.TLSTerminationPassthrough:
		if tls.Certificate != "" {
			errs = append(errs, field.Invalid(p.Child("certificate"), "redacted certificate data", "passthrough termination does not support certificates"))
		}
		if tls.Key != "" {
			errs = append(errs, field.Invalid(p.Child("key"), "redacted key data", "passthrough termination does not support certificates"))
		}
		if tls.CACertificate != "" {
			errs = append(errs, field.Invalid(p.Child("caCertificate"), "redacted ca certificate data", "passthrough termination does not support certificates"))
		}
		if tls.DestinationCACertificate != "" {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), "redacted destination ca certificate data", "passthrough termination does not support certificates"))
		}
		switch tls.InsecureEdgeTerminationPolicy {
		case "", routev1.InsecureEdgeTerminationPolicyNone, routev1.InsecureEdgeTerminationPolicyRedirect:
		default:
			errs = append(errs, field.NotSupported(p.Child("insecureEdgeTerminationPolicy"), tls.InsecureEdgeTerminationPolicy, []string{"None", "Redirect"}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("termination"), tls.Termination, []string{"edge", "passthrough", "reencrypt"}))
		return errs
	}
	if (tls.Certificate == "") != (tls.Key == "") {
		errs = append(errs, field.Invalid(p.Child("key"), "redacted key data", "certificate and key must be given together"))
	}
	if !extended {
		return errs
	}
	var cert *x509.Certificate
	if tls.Certificate != "" {
		certs, err := parseCertificates(tls.Certificate)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("certificate"), "redacted certificate data", err.Error()))
		} else {
			cert = certs[0]
			if err := checkChainOrder(certs); err != nil {
				errs = append(errs, field.Invalid(p.Child("certificate"), "redacted certificate data", err.Error()))
			}
		}
	}
	if tls.Key != "" {
		key, err := parsePrivateKey(tls.Key)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("key"), "redacted key data", err.Error()))
		} else if cert != nil && !keyMatches(cert, key) {
			errs = append(errs, field.Invalid(p.Child("key"), "redacted key data", "private key does not match public key"))
		}
	}
	if tls.CACertificate != "" {
		if _, err := parseCertificates(tls.CACertificate); err != nil {
			errs = append(errs, field.Invalid(p.Child("caCertificate"), "redacted ca certificate data", err.Error()))
		}
	}
	if tls.DestinationCACertificate != "" {
		if _, err := parseCertificates(tls.DestinationCACertificate); err != nil {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), "redacted destination ca certificate data", err.Error()))
		}
	}
	return errs
}

// parseCertificates parses every PEM CERTIFICATE block; anything else in the
// data (other than whitespace) is an error.
func parseCertificates(data string) ([]*x509.Certificate, error) {
	rest := []byte(data)
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("unexpected PEM block %q, want CERTIFICATE", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("error parsing certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("data does not contain any valid PEM certificate")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("data contains trailing content after the PEM certificates")
	}
	return certs, nil
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

func parsePrivateKey(data string) (crypto.PrivateKey, error) {
	block, rest := pem.Decode([]byte(data))
	if block == nil {
		return nil, errors.New("data does not contain a valid PEM private key")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("data contains more than one PEM block")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		return x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	return nil, fmt.Errorf("unsupported PEM block %q for a private key", block.Type)
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

// safeToken reports whether s can stand as a single token in haproxy.config
// and in a map file: no whitespace, quotes, '#', '\\' or control characters.
func safeToken(s string) bool {
	for _, c := range s {
		if c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '#' || c == '\\' || c == '`' {
			return false
		}
	}
	return true
}
