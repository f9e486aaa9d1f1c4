package e2e

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
)

// chainPKI is a root CA, an intermediate CA it signed, and leaves the
// intermediate signs, generated for the test.
type chainPKI struct {
	t                 *testing.T
	root, inter       *x509.Certificate
	rootPEM, interPEM string
	interKey          crypto.Signer
}

func newChainPKI(t *testing.T) *chainPKI {
	t.Helper()
	p := &chainPKI{t: t}
	rootKey := p.rsaKey()
	p.root = p.sign("parity root", true, nil, rootKey, rootKey)
	p.interKey = p.rsaKey()
	p.inter = p.sign("parity intermediate", true, p.root, rootKey, p.interKey)
	p.rootPEM, p.interPEM = pemOf("CERTIFICATE", p.root.Raw), pemOf("CERTIFICATE", p.inter.Raw)
	return p
}

func (p *chainPKI) rsaKey() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(p.t, err)
	return k
}

func (p *chainPKI) sign(cn string, isCA bool, parent *x509.Certificate, parentKey, key crypto.Signer) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	must(p.t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: isCA,
	}
	if isCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames = []string{cn}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	must(p.t, err)
	c, err := x509.ParseCertificate(der)
	must(p.t, err)
	return c
}

// leaf returns a certificate for host signed by the intermediate and its
// key (RSA as PKCS#1, or P-256 as SEC 1).
func (p *chainPKI) leaf(host string, ec bool) (certPEM, keyPEM string) {
	if ec {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(p.t, err)
		der, err := x509.MarshalECPrivateKey(k)
		must(p.t, err)
		return pemOf("CERTIFICATE", p.sign(host, false, p.inter, p.interKey, k).Raw), pemOf("EC PRIVATE KEY", der)
	}
	k := p.rsaKey()
	return pemOf("CERTIFICATE", p.sign(host, false, p.inter, p.interKey, k).Raw), pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))
}

func pemOf(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// pkcs12Export has openssl export host's certificate, key and chain (root
// before intermediate, as exports often list them) to PKCS#12 and print
// it back: the certificates and the key with their Bag Attributes text.
func pkcs12Export(t *testing.T, certPEM, keyPEM, chainPEM string) (certs, key string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(data), 0o600))
		return p
	}
	p12 := filepath.Join(dir, "x.p12")
	run := func(args ...string) string {
		out, err := exec.Command("openssl", args...).Output()
		if err != nil {
			t.Fatalf("openssl %v: %v", args, err)
		}
		return string(out)
	}
	run("pkcs12", "-export", "-in", write("c.pem", certPEM), "-inkey", write("k.pem", keyPEM), "-certfile", write("chain.pem", chainPEM), "-passout", "pass:", "-out", p12)
	return run("pkcs12", "-in", p12, "-passin", "pass:", "-nokeys"), run("pkcs12", "-in", p12, "-passin", "pass:", "-nocerts", "-nodes")
}

// TestSanitisedCertificateFormsServeOverTLS: every form of spec.tls that
// OpenShift accepts (and sanitises) is admitted, loaded by the real
// HAProxy and presented for its host, with extended validation on and off;
// with it off, a certificate HAProxy could not load is refused on its own
// while the others keep serving.
func TestSanitisedCertificateFormsServeOverTLS(t *testing.T) {
	pki := newChainPKI(t)
	ecParams := func() string {
		der, err := asn1.Marshal(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7})
		must(t, err)
		return pemOf("EC PARAMETERS", der)
	}()
	bag := func(name, block string) string {
		return "Bag Attributes\n    friendlyName: " + name + "\nsubject=CN = " + name + "\n" + block
	}
	malformed := "-----BEGIN RSA PRIVATE KEY-----\n!!! not base64 !!!\n-----END RSA PRIVATE KEY-----\n"
	_, otherKey := pki.leaf("other.example.com", false)

	type form struct {
		name string
		ec   bool
		tls  func(cert, key string) map[string]string
	}
	forms := []form{
		{"text-around", false, func(c, k string) map[string]string {
			return map[string]string{"certificate": "from the export tool\n" + bag("leaf", c) + bag("inter", pki.interPEM) + "the end\n", "key": bag("leaf", k) + "trailing\n"}
		}},
		{"root-before-intermediate", false, func(c, k string) map[string]string {
			return map[string]string{"certificate": c + pki.rootPEM + pki.interPEM, "key": k}
		}},
		{"ec-parameters", true, func(c, k string) map[string]string {
			return map[string]string{"certificate": c + pki.interPEM, "key": ecParams + k}
		}},
		{"ecdsa-label", true, func(c, k string) map[string]string {
			return map[string]string{"certificate": c, "key": strings.ReplaceAll(k, "EC PRIVATE KEY", "ECDSA PRIVATE KEY")}
		}},
		{"key-in-both", false, func(c, k string) map[string]string {
			return map[string]string{"certificate": c + k, "key": k}
		}},
		{"two-keys", false, func(c, k string) map[string]string {
			return map[string]string{"certificate": c, "key": k + otherKey}
		}},
		{"key-field-malformed", false, func(c, k string) map[string]string {
			return map[string]string{"certificate": c + pki.interPEM + k, "key": malformed}
		}},
		{"key-field-ec-parameters", true, func(c, k string) map[string]string {
			return map[string]string{"certificate": c + k, "key": ecParams}
		}},
	}
	if _, err := exec.LookPath("openssl"); err == nil {
		forms = append(forms, form{"pkcs12-export", false, func(c, k string) map[string]string {
			certs, key := pkcs12Export(t, c, k, pki.rootPEM+pki.interPEM)
			return map[string]string{"certificate": certs, "key": key}
		}}, form{"pkcs12-export-one-field", false, func(c, k string) map[string]string {
			certs, key := pkcs12Export(t, c, k, pki.rootPEM+pki.interPEM)
			return map[string]string{"certificate": certs + key}
		}})
	} else {
		t.Log("openssl not installed: the PKCS#12 export forms are not tried")
	}

	be := startBackend(t, "web")
	var routes []string
	for _, f := range forms {
		host := f.name + ".example.com"
		c, k := pki.leaf(host, f.ec)
		routes = append(routes, routeYAML("certs", f.name, host, "", "web", tlsYAML("edge", "", f.tls(c, k))))
	}
	// Refused by OpenShift's extended validation, and unloadable by HAProxy.
	mismatchCert, _ := pki.leaf("mismatch.example.com", false)
	routes = append(routes, routeYAML("certs", "mismatch", "mismatch.example.com", "", "web",
		tlsYAML("edge", "", map[string]string{"certificate": mismatchCert, "key": otherKey})))

	for _, extended := range []string{"true", "false"} {
		t.Run("EXTENDED_VALIDATION="+extended, func(t *testing.T) {
			m := newManifests(t)
			m.Write("svc.yaml", serviceYAML("certs", "web", be))
			m.Write("routes.yaml", strings.Join(routes, "---\n"))
			r := startRouter(t, m.Dir, map[string]string{"EXTENDED_VALIDATION": extended})
			for _, f := range forms {
				host := f.name + ".example.com"
				t.Run(f.name, func(t *testing.T) {
					resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet(host, "/") }, "web")
					if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != host {
						t.Fatalf("client saw %v, want the route's own certificate", subject(resp))
					}
				})
			}
			reason := "ExtendedValidationFailed"
			if extended == "false" {
				reason = "CertificateNotLoadable"
			}
			expectLogLine(t, r, "route rejected", `route="certs/mismatch"`, `reason="`+reason+`"`)
			resp, err := r.httpsGet("mismatch.example.com", "/")
			must(t, err)
			if resp.Status != 503 || resp.PeerCert == nil || resp.PeerCert.Subject.CommonName == "mismatch.example.com" {
				t.Fatalf("refused route answered %d with %v", resp.Status, subject(resp))
			}
		})
	}
}

// TestRestrictedEndpointAddressesAreNeverServers: of one EndpointSlice
// holding a loopback backend (allowed in the manifests source) and
// restricted addresses (cloud metadata, link-local, unspecified,
// multicast, also as IPv4-compatible IPv6), only the
// backend becomes a server, in the rendered configuration and in the
// running router, and each dropped address is logged.
func TestRestrictedEndpointAddressesAreNeverServers(t *testing.T) {
	be := startBackend(t, "good")
	restricted := []string{"169.254.169.254", "168.63.129.16", "0.0.0.0", "224.0.0.1", "169.254.10.20"}
	// The IPv4-compatible form is an IPv6 address. (IPv4-mapped forms,
	// "::ffff:169.254.169.254", are refused by the API server's validation
	// in any slice, and so by the manifests source; the endpoint filter's
	// unit tests cover them for objects that get in anyway.)
	restricted6 := []string{"fd00:ec2::254", "fe80::1", "::", "ff02::1", "::a9fe:a9fe"}
	quoted := func(addrs []string) string { return `"` + strings.Join(addrs, `", "`) + `"` }
	m := newManifests(t)
	m.Write("svc.yaml", fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: web, namespace: ep}
spec:
  ports: [{name: web, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-v4
  namespace: ep
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: web, port: %d}]
endpoints:
- addresses: [%s]
- addresses: ["%s"]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-v6
  namespace: ep
  labels: {kubernetes.io/service-name: web}
addressType: IPv6
ports: [{name: web, port: %d}]
endpoints:
- addresses: [%s]
`, be.Port, quoted(restricted), be.IP, be.Port, quoted(restricted6)))
	m.Write("route.yaml", routeYAML("ep", "web", "web.example.com", "", "web", ""))

	servers := regexp.MustCompile(`(?m)^\s*server (\S+) (\S+)`)
	// The render step sends no traffic; the router only runs if it left
	// every restricted address out (never send anything to them).
	if !t.Run("render", func(t *testing.T) {
		out := t.TempDir()
		if stdout, stderr, err := cli(t, nil, "render", "--manifests", m.Dir, "--working-dir", out, "--output-dir", out); err != nil {
			t.Fatalf("render: %v\n%s\n%s", err, stdout, stderr)
		}
		cfg, err := os.ReadFile(filepath.Join(out, "conf", "haproxy.config"))
		must(t, err)
		var addrs []string
		for _, m := range servers.FindAllStringSubmatch(string(cfg), -1) {
			addrs = append(addrs, m[2])
		}
		if want := fmt.Sprintf("%s:%d", be.IP, be.Port); len(addrs) == 0 || !contains(addrs, want) {
			t.Fatalf("servers %v, want %s among them", addrs, want)
		}
		for _, a := range append(append([]string{}, restricted...), restricted6...) {
			for _, got := range addrs {
				if strings.Contains(got, a+":") || strings.Contains(got, "["+a+"]") || strings.HasPrefix(got, "169.254.") || strings.HasPrefix(got, "168.63.") {
					t.Errorf("restricted address %s is a server: %s", a, got)
				}
			}
		}
	}) {
		t.FailNow()
	}
	t.Run("serve", func(t *testing.T) {
		r := startRouter(t, m.Dir, nil)
		for i := 0; i < 5; i++ {
			expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("web.example.com", "/") }, "good")
		}
		for _, a := range []string{"169.254.169.254", "168.63.129.16", "::a9fe:a9fe", "fd00:ec2::254"} {
			expectLogLine(t, r, "skipping endpoint address", `address="`+a+`"`)
		}
		cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
		must(t, err)
		if got := servers.FindAllStringSubmatch(string(cfg), -1); len(got) == 0 || strings.Contains(string(cfg), "169.254.") || strings.Contains(string(cfg), "168.63.129.16") || strings.Contains(string(cfg), "fd00:ec2") {
			t.Fatalf("running configuration has restricted servers or none: %v", got)
		}
	})
}

// TestKubePassthroughAndTLSRoutesNeverShareAHost: in either order, of a
// passthrough route and an edge or re-encrypt route with a path on one
// host, the older is admitted and the younger refused HostAlreadyClaimed
// in its status on the real API server; an unsecured route with a path
// shares the host with the passthrough route.
func TestKubePassthroughAndTLSRoutesNeverShareAHost(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	b := net.StartBackend(t, net.IP(), 8080, "pod-1")
	ns := c.CreateNamespace(t, "pt-", nil).Name
	kubeService(t, c, ns, "web", b)
	r := startKubeRouter(t, c.KubeconfigPath, nil)

	create := func(name, host, path string, tls *routev1.TLSConfig) *routev1.Route {
		t.Helper()
		rt := &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       routev1.RouteSpec{Host: host, Path: path, To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}, TLS: tls},
		}
		out, err := c.Routes.RouteV1().Routes(ns).Create(kctx(t), rt, metav1.CreateOptions{})
		must(t, err)
		return out
	}
	// Creation timestamps have a one-second resolution: make the second
	// route visibly younger.
	younger := func(older *routev1.Route) {
		time.Sleep(time.Until(older.CreationTimestamp.Add(1100 * time.Millisecond)))
	}
	edge := &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
	reencrypt := &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt}
	passthrough := &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}

	t.Run("older edge route with a path, younger passthrough route", func(t *testing.T) {
		e := create("edge-first", "one.example.com", "/app", edge)
		younger(e)
		create("pt-second", "one.example.com", "", passthrough)
		ingressOf(t, c, ns, "edge-first", "public", admitted(corev1.ConditionTrue, ""))
		ing := ingressOf(t, c, ns, "pt-second", "public", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		if !strings.Contains(ing.Conditions[0].Message, "route edge-first already exposes one.example.com") {
			t.Errorf("message %q does not name the older route", ing.Conditions[0].Message)
		}
	})
	t.Run("older passthrough route, younger re-encrypt route with a path, unsecured route with a path", func(t *testing.T) {
		p := create("pt-first", "two.example.com", "", passthrough)
		younger(p)
		re := create("re-second", "two.example.com", "/api", reencrypt)
		younger(re)
		create("plain-third", "two.example.com", "/plain", nil)
		ingressOf(t, c, ns, "pt-first", "public", admitted(corev1.ConditionTrue, ""))
		ingressOf(t, c, ns, "re-second", "public", admitted(corev1.ConditionFalse, "HostAlreadyClaimed"))
		ingressOf(t, c, ns, "plain-third", "public", admitted(corev1.ConditionTrue, ""))
		expectBackend(t, 10*time.Second, func() (response, error) { return r.httpGet("two.example.com", "/plain") }, "pod-1")
	})
	t.Run("deleting the older route admits the younger", func(t *testing.T) {
		must(t, c.Routes.RouteV1().Routes(ns).Delete(kctx(t), "edge-first", metav1.DeleteOptions{}))
		ingressOf(t, c, ns, "pt-second", "public", admitted(corev1.ConditionTrue, ""))
	})
}
