package templates

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/testcerts"
)

// allAnnotations are the annotations the default template honours.
var allAnnotations = []string{
	annotations.Balance, annotations.DisableCookies, annotations.CookieName, annotations.HAProxyCookieName,
	annotations.CookieSameSite, annotations.PodConcurrentConnections, annotations.RateLimit,
	annotations.RateLimitConcurrentTCP, annotations.RateLimitRateHTTP, annotations.RateLimitRateTCP,
	annotations.Timeout, annotations.TimeoutTunnel, annotations.HealthCheckInterval, annotations.IPWhitelist,
	annotations.IPAllowlist, annotations.HSTSHeader, annotations.RewriteTarget, annotations.SetForwardedHeaders,
	annotations.H1AdjustCase,
}

// haproxyCheck writes the rendered files, the default certificate, the
// certificate and allowlist files and has the real haproxy check the
// configuration. Certificate files hold a generated placeholder (fuzzed
// certificate fields need not be loadable); haproxyCheckWithCerts writes the
// model's own certificates.
func haproxyCheck(t *testing.T, td *model.TemplateData, rendered map[string]string) (string, error) {
	t.Helper()
	return checkRendered(t, td, rendered, false)
}

// haproxyCheckWithCerts is haproxyCheck with the routes' real certificates.
func haproxyCheckWithCerts(t *testing.T, td *model.TemplateData, rendered map[string]string) (string, error) {
	t.Helper()
	return checkRendered(t, td, rendered, true)
}

func checkRendered(t *testing.T, td *model.TemplateData, rendered map[string]string, realCerts bool) (string, error) {
	t.Helper()
	var fs []files.File
	for f, data := range rendered {
		fs = append(fs, files.File{Path: filepath.Join(td.WorkingDir, f), Data: []byte(data)})
	}
	cert, err := defaultcert.Generate("x", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	fs = append(fs, files.File{Path: td.DefaultCertificate, Data: cert})
	for _, f := range files.CertificateFiles(td) {
		if !realCerts {
			f.Data = cert
		}
		fs = append(fs, f)
	}
	fs = append(fs, files.AllowlistFiles(td)...)
	return haproxyCheckFiles(t, fs, filepath.Join(td.WorkingDir, "conf", "haproxy.config"), td.RunDir)
}

// haproxyCheckFiles writes fs (absolute paths), creates runDir and has the
// real haproxy check configPath (with no input and a time limit).
func haproxyCheckFiles(t *testing.T, fs []files.File, configPath, runDir string) (string, error) {
	t.Helper()
	for _, f := range fs {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "haproxy", "-c", "-q", "-f", configPath).CombinedOutput()
	return string(out), err
}

// fuzzModel builds the model through the real store and builder: a
// reference route other/ref without annotations and the given routes (of
// namespace "fuzz", service "svc").
func fuzzModel(t *testing.T, dir string, routes ...*routev1.Route) *model.TemplateData {
	st := store.New()
	for _, ns := range []string{"fuzz", "other"} {
		st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}})
		port, name := int32(8080), "web"
		st.Upsert(&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "svc-1", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}}},
		})
	}
	ref := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "ref"},
		Spec: routev1.RouteSpec{Host: "ref.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	admitted := append([]*routev1.Route{ref}, routes...)
	var td *model.TemplateData
	_ = st.Read(func(v store.View) error {
		td = builder.Build(v, admitted, builder.Options{
			WorkingDir: dir, RunDir: filepath.Join(dir, "run"), HTTPPort: 18080, HTTPSPort: 18443, BindPorts: true,
			DefaultCertificate: filepath.Join(dir, "conf", "default.pem"),
		})
		return nil
	})
	return td
}

// routeSections splits haproxy.config into the part before the first route
// backend and one section per route ("# route ns/name" to the next).
func routeSections(config string) (string, map[string]string) {
	parts := strings.Split(config, "\n# route ")
	out := map[string]string{}
	for _, p := range parts[1:] {
		name, _, _ := strings.Cut(p, "\n")
		out[name] = p
	}
	return parts[0], out
}

// frontendsAsAnyRoute is the part of haproxy.config before the first route
// backend (routeSections) with the differences a route may make there
// taken out: the lookups of the route-settings maps (mapKeys; the rules
// are the same otherwise, a reload adds a lookup) — a route whose
// forwarded-headers policy differs from the router-wide one makes the
// frontends look up forwarded_headers.map, one with a timeout or an HSTS
// header the defaults section look up that map. For a router-wide policy
// that sets the headers.
func frontendsAsAnyRoute(head string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(head, "\n") {
		if strings.Contains(l, "set-var(txn.fwd_other) ") || strings.Contains(l, "/conf/timeout_server.map)") ||
			strings.Contains(l, "/conf/timeout_tunnel.map)") || strings.Contains(l, "/conf/hsts.map)") ||
			strings.HasPrefix(l, "  # haproxy.router.openshift.io/timeout and timeout-tunnel") ||
			strings.HasPrefix(l, "  # that are not passthrough, in milliseconds") || strings.HasPrefix(l, "  # (a backend without an entry: the lookup fails") ||
			strings.HasPrefix(l, "  # haproxy.router.openshift.io/hsts_header of") || strings.HasPrefix(l, "  # routes (before the route's own response header") {
			continue
		}
		l = strings.Replace(l, " if !{ var(txn.fwd_other) -m found } ", " if ", 1)
		b.WriteString(strings.Replace(l, " if !{ var(txn.fwd_other) -m found }\n", "\n", 1))
	}
	return b.String()
}

// routeSectionKeywords are the directives a route's backend section may
// hold, with the second word where it is fixed.
var routeSectionKeywords = map[string][]string{
	"backend": nil, "mode": {"http", "tcp"}, "option": {"redispatch", "forwardfor"}, "balance": {"source", "roundrobin", "leastconn", "random"},
	"hash-type": {"consistent"}, "timeout": {"check", "server", "tunnel"}, "acl": {"allowlist"},
	"tcp-request": {"content"}, "stick-table": {"type"}, "http-request": {"set-header", "set-path"},
	"http-response": {"set-header"}, "cookie": nil, "dynamic-cookie-key": nil, "server": nil, "#": nil,
}

func FuzzRouteRendersSafely(f *testing.F) {
	prereq.NeedBinary(f, "haproxy")
	ca, err := testcerts.NewCA("fuzz CA", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("www.example.com", "", uint8(0), "10s", "true", annotations.IPAllowlist, "127.0.0.1 10.0.0.0/8", "")
	f.Add("edge.example.com", "/app", uint8(1), "max-age=31536000;includeSubDomains;preload", "/", annotations.RewriteTarget, "/v2/", "")
	f.Add("edge.example.com", "/app", uint8(1), "Lax", "leastconn", annotations.HSTSHeader, "max-age=1;preload\n  acl x src 1.1.1.1", "")
	f.Add("long.example.com", "", uint8(0), "50", "TRUE", annotations.IPWhitelist, strings.Repeat("192.168.0.1 fd00::/64 ", 70), "")
	f.Add("pt.example.com", "", uint8(2), "5s\nbackend evil", "source", annotations.Balance, "roundrobin\n  server x 1.2.3.4:80", "")
	f.Add("re.example.com", "/api", uint8(3), "Strict", "replace", annotations.SetForwardedHeaders, "if-none", "")
	f.Add("re.example.com", "/api", uint8(3), "1d", "never", annotations.Timeout, "999999999999d", ca.CertPEM)
	f.Add("www.example.com", "/a#b", uint8(0), "1 #x", "' \" $HOME", annotations.CookieName, "x y", "-----BEGIN\n#")
	f.Fuzz(func(t *testing.T, host, path string, term uint8, v1, v2, key, val, cert string) {
		r := &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fuzz", Name: "r", Annotations: map[string]string{}},
			Spec:       routev1.RouteSpec{Host: strings.ToLower(host), Path: path, To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}},
		}
		for i, a := range allAnnotations {
			if i%2 == 0 {
				r.Annotations[a] = v1
			} else {
				r.Annotations[a] = v2
			}
		}
		r.Annotations[key] = val
		switch term % 4 {
		case 1:
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: cert, Key: cert, InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyAllow}
		case 2:
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
		case 3:
			r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, Certificate: cert, Key: cert, DestinationCACertificate: cert}
		}
		if len(admission.Validate(r, false)) > 0 || len(admission.ValidateHost(r.Spec.Host)) > 0 {
			return // rejected at admission: never reaches the template
		}
		dir := shortDir(t)
		base := renderDefault(t, fuzzModel(t, filepath.Join(dir, "base")), nil)
		td := fuzzModel(t, dir, r)
		got := renderDefault(t, td, nil)

		// Nothing outside the fuzzed route's own backend changes.
		baseHead, baseRoutes := routeSections(strings.ReplaceAll(base["conf/haproxy.config"], filepath.Join(dir, "base"), dir))
		head, routes := routeSections(got["conf/haproxy.config"])
		if frontendsAsAnyRoute(head) != frontendsAsAnyRoute(baseHead) {
			t.Fatalf("the route changed the global/frontend part:\n%s", head)
		}
		if routes["other/ref"] != baseRoutes["other/ref"] {
			t.Fatalf("the route changed another route's backend:\n%s", routes["other/ref"])
		}
		if len(routes) != 2 {
			t.Fatalf("want 2 route sections, got %d", len(routes))
		}
		// Every line of its section is a directive the template writes.
		lines := strings.Split(strings.TrimRight(routes["fuzz/r"], "\n"), "\n")
		if max := 40 + annotations.MaxAllowlistEntries/50; len(lines) > max {
			t.Fatalf("route section has %d lines", len(lines))
		}
		servers := 0
		configLines := map[string]bool{}
		for _, l := range lines[1:] {
			w := strings.Fields(l)
			if len(w) == 0 {
				continue
			}
			configLines[strings.TrimSpace(l)] = true
			if w[0] != "#" && strings.Contains(l, "#") {
				t.Fatalf("'#' inside a directive: %q", l)
			}
			if w[0] == "server" {
				servers++
				if len(w) < 3 || (w[2] != "10.0.0.1:8080" && w[2] != "10.0.0.2:8080") {
					t.Fatalf("unexpected server line %q", l)
				}
			}
			second, ok := routeSectionKeywords[w[0]]
			if !ok {
				t.Fatalf("unexpected directive %q", l)
			}
			if second != nil && (len(w) < 2 || !contains(second, w[1])) {
				t.Fatalf("unexpected form of %s: %q", w[0], l)
			}
		}
		if servers != 2 {
			t.Fatalf("want the 2 endpoints' server lines, got %d", servers)
		}
		// No line of an input after a line break became a directive.
		inputs := []string{host, path, cert}
		for _, v := range r.Annotations {
			inputs = append(inputs, v)
		}
		for _, in := range inputs {
			parts := strings.Split(strings.ReplaceAll(in, "\r", "\n"), "\n")
			for i, part := range parts {
				if i > 0 && configLines[strings.TrimSpace(part)] {
					t.Fatalf("input line %q became a directive", part)
				}
			}
		}
		// Map files: one "key value" per line, at most one more entry.
		for name, data := range got {
			if !strings.HasSuffix(name, ".map") {
				continue
			}
			n := 0
			for _, l := range strings.Split(data, "\n") {
				if strings.TrimSpace(l) == "" {
					continue
				}
				n++
				if name == "conf/cert_config.map" {
					continue
				}
				if len(strings.Fields(l)) != 2 || strings.HasPrefix(l, "#") {
					t.Fatalf("%s: malformed line %q", name, l)
				}
			}
			if want := strings.Count(base[name], "\n") + 1; n > want {
				t.Fatalf("%s: %d entries, at most %d expected", name, n, want)
			}
		}
		// Certificate contents only go to certificate files.
		if c := strings.TrimSpace(cert); len(c) >= 8 {
			for name, data := range got {
				if strings.Contains(data, c) {
					t.Fatalf("certificate text reached %s", name)
				}
			}
		}
		if out, err := haproxyCheck(t, td, got); err != nil {
			t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, got["conf/haproxy.config"])
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shortDir is a temporary directory with a short path (unix socket paths
// in the config are limited to 108 bytes).
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "fz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
