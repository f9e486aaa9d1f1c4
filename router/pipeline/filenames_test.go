package pipeline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/prereq"
	"github.com/openshift-router-go/router/test/testcerts"
)

// longName returns a valid DNS subdomain name of n characters starting
// with prefix.
func longName(prefix string, n int) string {
	b := []byte(prefix + strings.Repeat("x", n-len(prefix)))
	for i := 63; i < n; i += 64 {
		b[i] = '.' // labels of at most 63 characters
	}
	b[n-1] = 'z'
	return string(b)
}

// allowlist returns n addresses, blank-separated (long enough to go to a
// file when n > 61).
func allowlist(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.1", i/250, i%250)
	}
	return strings.Join(out, " ")
}

// tenantStore holds one service with two endpoints in each namespace and
// the given routes (service "svc").
func tenantStore(routes ...*routev1.Route) *store.Store {
	st := store.New()
	port, portName := int32(8080), "web"
	seen := map[string]bool{}
	for i, r := range routes {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "svc"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 80}}}})
			st.Upsert(&discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Namespace: r.Namespace, Name: "svc-1", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{fmt.Sprintf("10.99.%d.1", i)}},
					{Addresses: []string{fmt.Sprintf("10.99.%d.2", i)}},
				},
			})
		}
		r.CreationTimestamp = metav1.NewTime(time.Unix(1700000000+int64(i), 0))
		st.Upsert(r)
	}
	return st
}

func tenantInputs(t *testing.T, dir string) Inputs {
	t.Helper()
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := defaultcert.Generate("default.example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o := benchInputs(r, dir)
	o.Build.HTTPPort, o.Build.HTTPSPort = 18080, 18443
	o.Admission = admission.Options{ExtendedValidation: true}
	o.DefaultCertificate = cert
	return o
}

// haproxyCheckDir has the real haproxy check the configuration written
// into dir.
func haproxyCheckDir(t *testing.T, dir string) {
	t.Helper()
	prereq.NeedBinary(t, "haproxy")
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := templates.OutputPath(dir, templates.ConfigTemplateName)
	out, err := exec.Command("haproxy", "-c", "-q", "-f", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

// TestLongRouteKeysGetBoundedFileNames is the first input of issue 13: a
// 63-character namespace and 253-character route names (the API's limits)
// with TLS and an IP allowlist long enough to go to a file. Every file the
// router writes has a name a file system accepts, two long names sharing
// a prefix get two files, each route file names its route in its first
// line, and haproxy accepts the result.
func TestLongRouteKeysGetBoundedFileNames(t *testing.T) {
	ns := longName("tenant-", 63)
	ca, err := testcerts.NewCA("tenant CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	destCA, err := testcerts.NewCA("backend CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	route := func(name, host string, tls *routev1.TLSConfig) *routev1.Route {
		pair, err := ca.Issue(host, []string{host}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if tls != nil && tls.Termination != routev1.TLSTerminationPassthrough {
			tls.Certificate, tls.Key, tls.CACertificate = pair.CertPEM, pair.KeyPEM, ca.CertPEM
		}
		return &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
				Annotations: map[string]string{"haproxy.router.openshift.io/ip_allowlist": allowlist(200)}},
			Spec: routev1.RouteSpec{Host: host, TLS: tls, To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}},
		}
	}
	edge := route(longName("edge-", 253), "edge.example.com", &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge})
	reencrypt := route(longName("edge-", 252)+"q", "reencrypt.example.com",
		&routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, DestinationCACertificate: destCA.CertPEM})
	plain := route(longName("plain-", 253), "plain.example.com", nil)
	short := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web", ResourceVersion: "1"},
		Spec: routev1.RouteSpec{Host: "web.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	if len(ns) != 63 || len(edge.Name) != 253 || len(reencrypt.Name) != 253 || len(plain.Name) != 253 {
		t.Fatalf("name lengths %d %d %d %d", len(ns), len(edge.Name), len(reencrypt.Name), len(plain.Name))
	}
	dir := t.TempDir()
	out, err := Pass(tenantStore(edge, reencrypt, plain, short), tenantInputs(t, dir), State{})
	var fs []files.File
	var d admission.Decision
	if out != nil {
		fs, d = out.Files, out.Decision
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Admitted) != 4 {
		t.Fatalf("admitted %d routes, want 4: %+v", len(d.Admitted), d.Results)
	}
	byRoute := map[model.ServiceAliasConfigKey][]string{}
	paths := map[string]bool{}
	for _, f := range fs {
		base := filepath.Base(f.Path)
		if len(base) > model.MaxFileKeyLength+len(".pem") {
			t.Errorf("file name of %d bytes: %s", len(base), base)
		}
		if paths[f.Path] {
			t.Errorf("two files at %s", f.Path)
		}
		paths[f.Path] = true
		if f.Route == "" {
			continue
		}
		byRoute[f.Route] = append(byRoute[f.Route], f.Path)
		if want := "# route " + strings.Replace(string(f.Route), ":", "/", 1) + "\n"; !strings.HasPrefix(string(f.Data), want) {
			t.Errorf("%s does not start with %q", f.Path, want)
		}
	}
	key := func(r *routev1.Route) model.ServiceAliasConfigKey {
		return model.NewServiceAliasConfigKey(r.Namespace, r.Name)
	}
	for r, want := range map[*routev1.Route]int{edge: 2, reencrypt: 3, plain: 1} {
		if got := byRoute[key(r)]; len(got) != want {
			t.Errorf("%s: files %q, want %d (certificate, destination CA, allowlist)", r.Name[:10], got, want)
		}
	}
	if f := key(short).FileName(); f != "other:web" {
		t.Errorf("a short key is not used as is: %q", f)
	}
	w := files.NewWriter()
	if _, err := w.Stage(fs); err != nil {
		t.Fatalf("writing the files: %v", err)
	}
	w.Commit()
	haproxyCheckDir(t, dir)
}

func TestFileNames(t *testing.T) {
	long := model.ServiceAliasConfigKey(longName("ns-", 63) + ":" + longName("r-", 253))
	tests := []struct {
		name string
		key  model.ServiceAliasConfigKey
		want string
	}{
		{"a route key is used as is", "ns:web-1.a", "ns:web-1.a"},
		{"at the limit", model.ServiceAliasConfigKey("n:" + strings.Repeat("a", model.MaxFileKeyLength-2)), "n:" + strings.Repeat("a", model.MaxFileKeyLength-2)},
		{"past the limit", model.ServiceAliasConfigKey("n:" + strings.Repeat("a", model.MaxFileKeyLength-1)), "n:" + strings.Repeat("a", 62) + "~"},
		{"API limits", long, string(long[:64]) + "~"},
		{"characters no route key has", "ns:a/../b", "ns:a_.._b~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.FileName()
			if strings.HasSuffix(tt.want, "~") {
				if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+16 {
					t.Fatalf("FileName %q, want %q and 16 hex digits", got, tt.want)
				}
			} else if got != tt.want {
				t.Fatalf("FileName %q, want %q", got, tt.want)
			}
			if strings.ContainsAny(got, "/\x00") || len(got) > model.MaxFileKeyLength {
				t.Fatalf("unsafe or long file name %q", got)
			}
		})
	}
	if a, b := (long + "a").FileName(), (long + "b").FileName(); a == b {
		t.Errorf("two long keys with one prefix share a file name %q", a)
	}
}
