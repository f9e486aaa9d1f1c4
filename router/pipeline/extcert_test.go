package pipeline

import (
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/test/testcerts"
)

// TestPassServesExternalCertificates: with Inputs.ExternalCertificates a
// pass writes the secret's certificate for the route that names it and
// rejects the route whose secret is missing, with extcert's reason.
func TestPassServesExternalCertificates(t *testing.T) {
	ca, err := testcerts.NewCA("ext CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("ext.example.com", []string{"ext.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	edge := func(name, host, secret string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: "1"},
			Spec: routev1.RouteSpec{Host: host, To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"},
				TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, ExternalCertificate: &routev1.LocalObjectReference{Name: secret}}}}
	}
	st := tenantStore(edge("ext", "ext.example.com", "shop-tls"), edge("missing", "missing.example.com", "nope"))
	st.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte(pair.CertPEM), corev1.TLSPrivateKeyKey: []byte(pair.KeyPEM)}})
	in := tenantInputs(t, t.TempDir())
	in.ExternalCertificates = extcert.New(extcert.Options{Enabled: true})
	out, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Decision.Results["shop/ext"]; !r.Admitted {
		t.Fatalf("shop/ext: %+v", r)
	}
	if r := out.Decision.Results["shop/missing"]; r.Admitted || r.Reason != extcert.ReasonValidationFailed || !strings.Contains(r.Message, "not found") {
		t.Fatalf("shop/missing: %+v", r)
	}
	var cert []byte
	for _, f := range files.CertificateFiles(out.Model) {
		if strings.HasSuffix(f.Path, "shop:ext.pem") {
			cert = f.Data
		}
	}
	if !strings.Contains(string(cert), strings.TrimSpace(pair.CertPEM)) {
		t.Fatalf("certificate file of shop/ext is not the secret's:\n%s", cert)
	}
}
