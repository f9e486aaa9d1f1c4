package gateway

import (
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/store"
)

// resolveCertificate resolves a served HTTPS listener's certificateRefs[0]:
// a kubernetes.io/tls Secret of the Gateway's namespace, or of another one
// whose ReferenceGrant lets the Gateway's namespace's Gateways refer to it.
// A listener whose certificate cannot be used is not served, with
// ResolvedRefs=False (InvalidCertificateRef or RefNotPermitted).
func resolveCertificate(v View, g *gatewayv1.Gateway, ls *ListenerStatus) {
	gen := g.Generation
	l := ls.spec
	fail := func(reason gatewayv1.ListenerConditionReason, msg string) {
		ls.served = false
		ls.Conditions[1] = condition(gatewayv1.ListenerConditionProgrammed, false, gatewayv1.ListenerReasonInvalid, "not served: "+msg, gen)
		ls.Conditions[2] = condition(gatewayv1.ListenerConditionResolvedRefs, false, reason, msg, gen)
	}
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		fail(gatewayv1.ListenerReasonInvalidCertificateRef, "an HTTPS listener needs tls.certificateRefs")
		return
	}
	ref := l.TLS.CertificateRefs[0]
	if ref.Group != nil && *ref.Group != "" || ref.Kind != nil && *ref.Kind != "Secret" {
		fail(gatewayv1.ListenerReasonInvalidCertificateRef, "certificateRefs[0]: only Secrets are supported")
		return
	}
	ns := g.Namespace
	if ref.Namespace != nil && string(*ref.Namespace) != g.Namespace {
		ns = string(*ref.Namespace)
		if !Granted(v, g.Namespace, "Gateway", ns, "Secret", string(ref.Name)) {
			fail(gatewayv1.ListenerReasonRefNotPermitted, fmt.Sprintf("certificateRefs[0]: no ReferenceGrant of namespace %s allows it", ns))
			return
		}
	}
	ls.secret = store.KeyOf(ns, string(ref.Name))
	cert, why := certificateOf(v.Secret(ns, string(ref.Name)))
	if why != "" {
		fail(gatewayv1.ListenerReasonInvalidCertificateRef, fmt.Sprintf("certificateRefs[0] (Secret %s/%s): %s", ns, ref.Name, why))
		return
	}
	ls.cert = cert
	if len(l.TLS.CertificateRefs) > 1 {
		ls.Conditions[2].Message = fmt.Sprintf("only certificateRefs[0] is served; the other %d are not", len(l.TLS.CertificateRefs)-1)
	}
}

// certificateOf returns a Secret's certificate and key, or why they cannot
// be used. (Admission checks them further, as a route's.)
func certificateOf(s *corev1.Secret) (*certificate, string) {
	switch {
	case s == nil:
		return nil, "not found, or the router may not read it (in cluster mode, grant it get, list and watch on the Secret)"
	case s.Type != corev1.SecretTypeTLS:
		return nil, "not of type kubernetes.io/tls"
	}
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		return nil, "tls.crt and tls.key must hold a PEM certificate and its private key"
	}
	return &certificate{crt: string(crt), key: string(key)}, ""
}

// defaultCertificate returns the certificate of Gateway gs's served HTTPS
// listener on port 443 without a hostname (Options.DefaultCertificateFrom)
// as HAProxy is given it, or nil: no such listener, or a certificate
// admission would not serve on a route.
func defaultCertificate(gs *GatewayStatus) []byte {
	if gs == nil {
		return nil
	}
	for _, l := range gs.Listeners {
		if !l.served || l.cert == nil || l.spec.Port != httpsPort || hostnameOf(l.spec.Hostname) != "" {
			continue
		}
		pem, err := admission.ServableCertificate(l.cert.crt, l.cert.key)
		if err != nil {
			return nil
		}
		return pem
	}
	return nil
}
