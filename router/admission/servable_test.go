package admission

import (
	cryptotls "crypto/tls"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// TestServableCertificateIsWhatAnEdgeRouteCouldServe: a certificate and
// its key come back as one PEM that loads; a key of another certificate,
// or text that is no PEM, is an error.
func TestServableCertificateIsWhatAnEdgeRouteCouldServe(t *testing.T) {
	ca, err := testcerts.NewCA("servable CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	one, err := ca.Issue("one.example.com", []string{"one.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Issue("other.example.com", []string{"other.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := ServableCertificate("text before\n"+one.CertPEM, one.KeyPEM)
	if err != nil {
		t.Fatalf("a certificate and its key: %v", err)
	}
	if _, err := cryptotls.X509KeyPair(pem, pem); err != nil {
		t.Errorf("the PEM served does not load: %v", err)
	}
	for name, pair := range map[string][2]string{
		"another certificate's key": {one.CertPEM, other.KeyPEM},
		"no PEM":                    {"not a certificate", "not a key"},
		"no key":                    {one.CertPEM, ""},
	} {
		if _, err := ServableCertificate(pair[0], pair[1]); err == nil {
			t.Errorf("%s: served", name)
		}
	}
}
