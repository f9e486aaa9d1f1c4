package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	mrand "math/rand"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openshift-router-go/router/test/testcerts"
)

func TestHostValidation(t *testing.T) {
	tests := []struct {
		host   string
		reason string // "" = admitted
		msg    string
	}{
		{"www.example.com", "", ""},
		{"WWW.Example.COM", "", ""},
		{"a-b.c-d.example.com", "", ""},
		{"", ReasonNoHostValue, "no host value was defined for the route"},
		{"intranet", "", ""},
		{"localhost", "", ""},
		{"a b.example.com", ReasonInvalidHost, `host name validation errors: spec.host: Invalid value: "a b.example.com": host must conform to DNS 952 subdomain conventions`},
		{" www.example.com", ReasonInvalidHost, "host must conform to DNS 952 subdomain conventions"},
		{"www.example.com\nbackend x", ReasonInvalidHost, `"www.example.com\nbackend x"`},
		{strings.Repeat("a", 64) + ".example.com", ReasonInvalidHost, "must be no more than 63 characters"},
		{strings.Repeat("abcdefgh.", 32) + "com", ReasonInvalidHost, "host must conform to DNS 952 subdomain conventions"},
		{"-www.example.com", ReasonInvalidHost, "must start and end with an alphanumeric character"},
		{"www.example.com.", ReasonInvalidHost, "host must conform to DNS 952 subdomain conventions"},
		{"www..example.com", ReasonInvalidHost, "a lowercase RFC 1123 label must consist of"},
		{"*.example.com", ReasonInvalidHost, "host must conform"},
		{"www_1.example.com", ReasonInvalidHost, "host must conform"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			d := Admit([]*routev1.Route{route("ns", "r", tt.host, "", 1)}, Options{})
			res := d.Results["ns/r"]
			if tt.reason == "" {
				if !res.Admitted {
					t.Fatalf("rejected: %s: %s", res.Reason, res.Message)
				}
				if res.Host != strings.ToLower(tt.host) {
					t.Fatalf("host %q, want it in lower case", res.Host)
				}
				return
			}
			if res.Admitted || res.Reason != tt.reason || !strings.Contains(res.Message, tt.msg) {
				t.Fatalf("got %+v, want %s containing %q", res, tt.reason, tt.msg)
			}
			if strings.ContainsAny(res.Message, "\n\r") {
				t.Fatalf("message carries a raw newline: %q", res.Message)
			}
		})
	}
}

func TestValidationRejectsBadRoutes(t *testing.T) {
	ca, err := testcerts.NewCA("ca", time.Hour)
	must(t, err)
	leaf, err := ca.Issue("www.example.com", []string{"www.example.com"}, time.Hour)
	must(t, err)
	w := func(n int32) *int32 { return &n }
	edge := func(f func(*routev1.TLSConfig)) func(*routev1.Route) {
		return func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
			f(r.Spec.TLS)
		}
	}
	tests := []struct {
		name     string
		mutate   func(*routev1.Route)
		extended bool
		msg      string // expected substring of the message; "" = valid
	}{
		{"valid unsecured route", func(r *routev1.Route) {}, true, ""},
		{"path without slash", func(r *routev1.Route) { r.Spec.Path = "test" }, true, "spec.path: Invalid value: \"test\": path must begin with /"},
		{"path with space injects nothing", func(r *routev1.Route) { r.Spec.Path = "/a b" }, true, "spec.path"},
		{"path with newline", func(r *routev1.Route) { r.Spec.Path = "/a\nbackend x" }, true, "spec.path"},
		{"path with hash", func(r *routev1.Route) { r.Spec.Path = "/a#b" }, true, "spec.path"},
		{"path with quote", func(r *routev1.Route) { r.Spec.Path = `/a"b` }, true, "spec.path"},
		{"path with control character", func(r *routev1.Route) { r.Spec.Path = "/a\x01b" }, true, "spec.path"},
		{"passthrough with path", func(r *routev1.Route) {
			r.Spec.Path = "/x"
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
		}, true, "passthrough termination does not support paths"},
		{"passthrough with Allow", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, InsecureEdgeTerminationPolicy: "Allow"}
		}, true, "spec.tls.insecureEdgeTerminationPolicy: Invalid value: \"Allow\": invalid value for InsecureEdgeTerminationPolicy option, acceptable values are None, Redirect, or empty"},
		{"passthrough with Redirect", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, InsecureEdgeTerminationPolicy: "Redirect"}
		}, true, ""},
		{"passthrough with certificate", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, Certificate: leaf.CertPEM, Key: leaf.KeyPEM}
		}, true, "spec.tls.certificate: Invalid value: \"redacted certificate data\": passthrough termination does not support certificates"},
		{"passthrough with destination CA", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough, DestinationCACertificate: ca.CertPEM}
		}, true, "spec.tls.destinationCACertificate"},
		{"edge with unknown policy", edge(func(c *routev1.TLSConfig) { c.InsecureEdgeTerminationPolicy = "Sometimes" }), true,
			"acceptable values are None, Allow, Redirect, or empty"},
		{"reencrypt with Allow", func(r *routev1.Route) {
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, InsecureEdgeTerminationPolicy: "Allow"}
		}, true, ""},
		{"unknown termination", func(r *routev1.Route) { r.Spec.TLS = &routev1.TLSConfig{Termination: "magic"} }, true, "spec.tls.termination: Unsupported value: \"magic\""},
		{"edge with destination CA", edge(func(c *routev1.TLSConfig) { c.DestinationCACertificate = ca.CertPEM }), true,
			"edge termination does not support destination certificates"},
		{"weight above 256", func(r *routev1.Route) { r.Spec.To.Weight = w(257) }, true, "spec.to.weight: Invalid value: 257: weight must be an integer between 0 and 256"},
		{"negative weight", func(r *routev1.Route) { r.Spec.To.Weight = w(-1) }, true, "spec.to.weight"},
		{"weights 0 and 256", func(r *routev1.Route) {
			r.Spec.To.Weight = w(0)
			r.Spec.AlternateBackends = []routev1.RouteTargetReference{{Kind: "Service", Name: "b", Weight: w(256)}}
		}, true, ""},
		{"three alternate backends", func(r *routev1.Route) {
			for _, n := range []string{"b", "c", "d"} {
				r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, routev1.RouteTargetReference{Kind: "Service", Name: n})
			}
		}, true, ""},
		{"four alternate backends", func(r *routev1.Route) {
			for _, n := range []string{"b", "c", "d", "e"} {
				r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, routev1.RouteTargetReference{Kind: "Service", Name: n})
			}
		}, true, "spec.alternateBackends: Required value: cannot specify more than 3 alternate backends"},
		{"alternate backend of another kind", func(r *routev1.Route) {
			r.Spec.AlternateBackends = []routev1.RouteTargetReference{{Kind: "Pod", Name: "b"}}
		}, true, "spec.alternateBackends[0].kind: Invalid value: \"Pod\": must reference a Service"},
		{"target kind other than Service", func(r *routev1.Route) { r.Spec.To.Kind = "Pod" }, true, "spec.to.kind: Invalid value: \"Pod\": must reference a Service"},
		{"empty kind is defaulted to Service", func(r *routev1.Route) { r.Spec.To.Kind = "" }, true, ""},
		{"missing service name", func(r *routev1.Route) { r.Spec.To.Name = "" }, true, "spec.to.name: Required value"},
		{"service name no service can have is admitted, as in OpenShift", func(r *routev1.Route) { r.Spec.To.Name = "Not_A.Service" }, true, ""},
		{"alternate backend named like no service", func(r *routev1.Route) {
			r.Spec.AlternateBackends = []routev1.RouteTargetReference{{Kind: "Service", Name: "b_1"}}
		}, true, ""},
		{"target port with space", func(r *routev1.Route) {
			r.Spec.Port = &routev1.RoutePort{TargetPort: intstr.FromString("http x")}
		}, true, "spec.port.targetPort"},
		{"target port 0", func(r *routev1.Route) {
			r.Spec.Port = &routev1.RoutePort{TargetPort: intstr.FromInt32(0)}
		}, true, "spec.port.targetPort: Required value"},
		{"named target port", func(r *routev1.Route) {
			r.Spec.Port = &routev1.RoutePort{TargetPort: intstr.FromString("web")}
		}, true, ""},
		{"route name with a space", func(r *routev1.Route) { r.Name = "a b" }, true, "metadata.name"},
		{"namespace with a newline", func(r *routev1.Route) { r.Namespace = "a\nb" }, true, "metadata.namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := route("ns", "r", "www.example.com", "", 1)
			tt.mutate(r)
			d := Admit([]*routev1.Route{r}, Options{ExtendedValidation: tt.extended})
			res := d.Results[KeyOf(r)]
			if tt.msg == "" {
				if !res.Admitted {
					t.Fatalf("rejected: %s", res.Message)
				}
				return
			}
			if res.Admitted || res.Reason != ReasonExtendedValidationFailed || !strings.Contains(res.Message, tt.msg) {
				t.Fatalf("got %+v, want ExtendedValidationFailed containing %q", res, tt.msg)
			}
			if strings.ContainsAny(res.Message, "\n\r") || strings.Contains(res.Message, "BEGIN") {
				t.Fatalf("message carries raw input: %q", res.Message)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rsaCA returns a self-signed RSA CA (to sign with RSA algorithms).
func rsaCA(t *testing.T) *testcerts.Pair {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rsa ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return &testcerts.Pair{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
		Cert:    cert,
	}
}

// issueCert issues a leaf certificate signed by ca's key (parsed from its
// PEM) with the given signature algorithm, valid until now+validFor.
func issueCert(t *testing.T, ca *testcerts.Pair, alg x509.SignatureAlgorithm, validFor time.Duration) *testcerts.Pair {
	t.Helper()
	block, _ := pem.Decode([]byte(ca.KeyPEM))
	caKey, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	must(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(validFor),
		DNSNames: []string{"www.example.com"}, SignatureAlgorithm: alg,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("issuing a %s certificate: %v", alg, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return &testcerts.Pair{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
	}
}

func TestLimitsThatProtectTheDataPlane(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name   string
		route  func() *routev1.Route
		reject string
	}{
		{"path longer than a map line can hold", func() *routev1.Route {
			r := limitRoute("ns", "r")
			r.Spec.Path = "/" + long(MaxPathLength) + "victim.example.com/login"
			return r
		}, "spec.path"},
		{"path at the limit", func() *routev1.Route {
			r := limitRoute("ns", "r")
			r.Spec.Path = "/" + long(MaxPathLength-1)
			return r
		}, ""},
		{"TLS route with the longest namespace and name the API allows", func() *routev1.Route {
			r := limitRoute(strings.Repeat("n", 63), strings.Repeat("e", 253))
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
			return r
		}, ""},
		{"long name without TLS is fine", func() *routev1.Route { return limitRoute("ns", strings.Repeat("e", 250)) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Validate(c.route(), true)
			if c.reject == "" {
				if len(errs) > 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), c.reject) {
				t.Fatalf("want a rejection naming %s, got %v", c.reject, errs)
			}
		})
	}
}

func limitRoute(ns, name string) *routev1.Route {
	return &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       routev1.RouteSpec{Host: "www.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}},
	}
}

// TestValidHostAgreesWithTheDNSChecks: the fast check ValidateHost makes
// first accepts exactly the hosts that the Kubernetes DNS-1123 subdomain
// and label checks both accept — for edge cases and for 20,000 random
// strings over the characters that matter.
func TestValidHostAgreesWithTheDNSChecks(t *testing.T) {
	slow := func(host string) bool {
		if len(validation.IsDNS1123Subdomain(host)) > 0 {
			return false
		}
		for _, label := range strings.Split(host, ".") {
			if len(validation.IsDNS1123Label(label)) > 0 {
				return false
			}
		}
		return true
	}
	hosts := []string{"", ".", "a", "a.", ".a", "a..b", "-a", "a-", "a-b", "a.-b", "a.b-", "0", "0.0", "A.example.com", "a_b.example.com",
		"www.example.com", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 63) + ".b",
		strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "ab", strings.Repeat("a.", 127) + "a", "é.example.com", "a b", "*.example.com"}
	rnd := mrand.New(mrand.NewSource(15))
	const chars = "ab9-._A*"
	for i := 0; i < 20000; i++ {
		n := rnd.Intn(12)
		if i%100 == 0 {
			n = 60 + rnd.Intn(200)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = chars[rnd.Intn(len(chars))]
		}
		hosts = append(hosts, string(b))
	}
	valid := 0
	for _, h := range hosts {
		want := slow(h)
		if got := validHost(h); got != want {
			t.Fatalf("validHost(%q) = %v, the DNS checks: %v", h, got, want)
		}
		if got := len(ValidateHost(h)) == 0; got != want {
			t.Fatalf("ValidateHost(%q) valid = %v, the DNS checks: %v", h, got, want)
		}
		if want {
			valid++
		}
	}
	if valid < 1000 || valid > len(hosts)-1000 {
		t.Fatalf("%d of %d hosts valid: the cases do not exercise both answers", valid, len(hosts))
	}
}
