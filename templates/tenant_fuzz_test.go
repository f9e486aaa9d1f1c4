package templates_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/source/endpointfilter"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/prereq"
	"github.com/openshift-router-go/router/test/testcerts"
)

// The tenant fuzzer: whole object sets (hostile tenants' namespaces,
// services, EndpointSlices and routes, decoded from the fuzz input) next to
// a fixed set of well-behaved tenants, through the router's pure pass
// (pipeline.Pass: admission, builder, server layout, template).
// For every input: the files pass haproxy -c, every well-behaved route is
// admitted and rendered exactly as without the hostile tenants, and no
// tenant text appears outside a quoted or validated position.

// fuzzBytes decodes the fuzz input; past its end every read is zero.
type fuzzBytes struct{ b []byte }

func (d *fuzzBytes) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *fuzzBytes) intn(n int) int { return int(d.byte()) % n }

func (d *fuzzBytes) u16() int { return int(d.byte())<<8 | int(d.byte()) }

// raw is a string of the input (up to 255 bytes, any content).
func (d *fuzzBytes) raw() string {
	n := int(d.byte())
	if n > len(d.b) {
		n = len(d.b)
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *fuzzBytes) pick(list []string) string { return list[d.intn(len(list))] }

// label is a DNS-1123 label of 1 to max characters.
func (d *fuzzBytes) label(max int) string {
	n := 1 + d.intn(256)%max
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		c := d.byte()
		if i > 0 && i < n-1 && c%9 == 0 {
			b[i] = '-'
		} else {
			b[i] = alnum[int(c)%len(alnum)]
		}
	}
	return string(b)
}

// subdomain is a DNS-1123 subdomain of up to max characters.
func (d *fuzzBytes) subdomain(max int) string {
	s := d.label(63)
	for k := d.intn(6); k > 0 && len(s) < max; k-- {
		s += "." + d.label(63)
	}
	if len(s) > max {
		s = strings.TrimRight(s[:max], ".-")
	}
	return s
}

// name is a namespace (63) or object (253) name: mostly valid, sometimes
// the longest allowed, sometimes raw input (rejected at admission).
func (d *fuzzBytes) name(short string, max int) string {
	switch d.intn(8) {
	case 0, 1, 2:
		return short
	case 3:
		s := strings.Repeat("a", max-1)
		return s[:max-1] + "z"
	case 4:
		return d.raw()
	}
	if max == 63 {
		return d.label(63)
	}
	return d.subdomain(max)
}

// tenantCerts are certificates and keys generated up front; the input
// chooses which goes where and how it is corrupted.
type tenantCerts struct {
	pool []string
}

func newTenantCerts(t testing.TB) (*tenantCerts, *testcerts.Pair, *testcerts.Pair) {
	ca, err := testcerts.NewCA("tenant fuzz CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("good", []string{"*.good.example.com"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Issue("tenant", []string{"*.apps.example.com", "*.good.example.com"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := ca.Issue("expired", []string{"x.apps.example.com"}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	selfSigned, err := testcerts.NewCA("self", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	withHeader := strings.Replace(other.KeyPEM, "-----\n", "-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n", 1)
	tc := &tenantCerts{pool: []string{
		"", other.CertPEM, other.KeyPEM, ca.CertPEM, leaf.CertPEM, leaf.KeyPEM, expired.CertPEM, expired.KeyPEM,
		selfSigned.CertPEM, selfSigned.KeyPEM, withHeader, other.CertPEM + ca.CertPEM,
		strings.ReplaceAll(other.KeyPEM, "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"),
		"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
	}}
	return tc, ca, leaf
}

// pem picks a certificate or key and corrupts it as the input says.
func (tc *tenantCerts) pem(d *fuzzBytes) string {
	s := tc.pool[d.intn(len(tc.pool))]
	if s == "" {
		return s
	}
	switch d.intn(8) {
	case 0: // truncated
		return s[:d.u16()%len(s)]
	case 1: // a header line in the first block
		return strings.Replace(s, "-----\n", "-----\n"+d.pick([]string{"Proc-Type: 4,ENCRYPTED", "X: y", d.raw() + ":"})+"\n\n", 1)
	case 2: // one byte replaced
		b := []byte(s)
		b[d.u16()%len(b)] = d.byte()
		return string(b)
	case 3: // text injected after it
		return s + d.pick([]string{"\n  bind :1\n", "\nbackend x\n", "-----BEGIN RSA PRIVATE KEY-----\n"}) + d.raw()
	case 4:
		return strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

var tenantAnnotationKeys = []string{
	annotations.Balance, annotations.DisableCookies, annotations.CookieName, annotations.HAProxyCookieName,
	annotations.CookieSameSite, annotations.PodConcurrentConnections, annotations.RateLimit,
	annotations.RateLimitConcurrentTCP, annotations.RateLimitRateHTTP, annotations.RateLimitRateTCP,
	annotations.Timeout, annotations.TimeoutTunnel, annotations.HealthCheckInterval, annotations.IPWhitelist,
	annotations.IPAllowlist, annotations.HSTSHeader, annotations.RewriteTarget, annotations.SetForwardedHeaders,
	annotations.H1AdjustCase, annotations.PoolSize,
}

var tenantAnnotationValues = []string{
	"", "true", "TRUE", "10s", "1d", "999999999999d", "2147483647ms", "5", "256", "100000", "-1", "0",
	"roundrobin", "leastconn", "source", "random", "roundrobin\n  server x 1.2.3.4:80", "Lax", "Strict", "None",
	"max-age=31536000;includeSubDomains;preload", "max-age=1;preload\n  acl x src 1.1.1.1", "/", "/v2/", "/a b",
	"replace", "if-none", "never", "append", "cookie x", "x y", "' \" $HOME #x", "127.0.0.1 10.0.0.0/8",
	"fd00::/64", "1.2.3.4/33", "10.0.0.1\n  backend evil",
}

// allowlist is a long valid allowlist (beyond the inline limit: a file).
func allowlist(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "10.%d.%d.0/24 ", i/256%256, i%256)
	}
	return b.String()
}

var tenantAddresses = []string{
	"10.1.0.1", "10.1.0.2", "2001:db8::1", "127.0.0.1", "169.254.169.254", "0.0.0.0", "::1", "fd00:ec2::254",
	"168.63.129.16", "::ffff:127.0.0.1", "224.0.0.1", "10.0.0.300", "fe80::1%eth0", "10.1.0.3 check",
}

var headerNames = []string{"X-Tenant", "Host", "X-Forwarded-For", "Cookie", "Strict-Transport-Security", "x y", "X-A\n  bind :1"}
var headerValues = []string{"v", "%[req.hdr(host)]", "%[res.hdr(server)]", "%[src]", "a b 'c' \"d\"", "#x", "x\n  backend y", "%[env(HOME)]"}

// tenantObjects decodes one hostile object set from the input.
func tenantObjects(d *fuzzBytes, tc *tenantCerts, created time.Time) (objs []runtime.Object, inputs []string) {
	nsCount := 1 + d.intn(3)
	for i := 0; i < nsCount; i++ {
		ns := d.name(fmt.Sprintf("t%d", i), 63)
		if strings.HasPrefix(ns, "good") {
			ns = "t" + ns
		}
		inputs = append(inputs, ns)
		svcs := []string{}
		for s := 1 + d.intn(2); s > 0; s-- {
			svc := d.name(fmt.Sprintf("svc%d", s), 63)
			svcs = append(svcs, svc)
			portName := d.pick([]string{"web", "", "other"})
			objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: int32(d.u16())}}}})
			port := int32([]int{8080, 0, 65535, 1, 70000, d.u16()}[d.intn(6)])
			addrType := []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}[d.intn(3)]
			slice := &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
				AddressType: addrType,
				Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
			}
			for e := d.intn(5); e > 0; e-- {
				a := d.pick(tenantAddresses)
				if d.intn(8) == 0 {
					a = d.raw()
				}
				inputs = append(inputs, a)
				slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
			}
			objs = append(objs, slice)
		}
		for r := 1 + d.intn(4); r > 0; r-- {
			route := &routev1.Route{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: d.name(fmt.Sprintf("r%d", r), 253), Annotations: map[string]string{},
				CreationTimestamp: metav1.NewTime(created.Add(time.Duration(d.u16()) * time.Second)),
			}}
			route.Spec.To = routev1.RouteTargetReference{Kind: "Service", Name: svcs[d.intn(len(svcs))]}
			if d.intn(6) == 5 {
				route.Spec.To.Name = d.raw()
			}
			switch d.intn(8) {
			case 7:
				route.Spec.Host = d.pick([]string{"plain.good.example.com", "edge.good.example.com", "pt.good.example.com", "re.good.example.com"})
			case 1:
				route.Spec.Host = "*." + d.pick([]string{"good.example.com", "apps.example.com"})
			case 2:
				route.Spec.Host = d.raw()
			case 3:
				route.Spec.Host = d.subdomain(253)
			case 4:
				route.Spec.Host = "w" + d.label(20) + ".good.example.com"
				route.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain
			default:
				route.Spec.Host = d.label(30) + ".apps.example.com"
			}
			switch d.intn(4) {
			case 1:
				route.Spec.Path = "/" + d.label(20)
			case 2:
				route.Spec.Path = d.raw()
			case 3:
				route.Spec.Path = d.pick([]string{"/", "/api", "/a#b", "/x y", "/" + strings.Repeat("p", 2000)})
			}
			for a := d.intn(8); a > 0; a-- {
				key := d.pick(tenantAnnotationKeys)
				if d.intn(16) == 0 {
					key = d.raw()
				}
				var v string
				switch d.intn(6) {
				case 0:
					v = d.raw()
				case 1:
					v = allowlist(1 + d.u16()%200)
				default:
					v = d.pick(tenantAnnotationValues)
				}
				route.Annotations[key] = v
			}
			switch term := d.intn(4); term {
			case 1, 3:
				route.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: tc.pem(d), Key: tc.pem(d), CACertificate: tc.pem(d),
					InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyType(d.pick([]string{"", "Allow", "Redirect", "None", "bogus"}))}
				if term == 3 {
					route.Spec.TLS.Termination = routev1.TLSTerminationReencrypt
					route.Spec.TLS.DestinationCACertificate = tc.pem(d)
				}
			case 2:
				route.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough,
					InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyType(d.pick([]string{"", "Redirect", "Allow"}))}
			}
			if n := d.intn(4); n > 0 {
				route.Spec.HTTPHeaders = &routev1.RouteHTTPHeaders{}
				for ; n > 0; n-- {
					a := routev1.RouteHTTPHeader{Name: d.pick(headerNames), Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.RouteHTTPHeaderActionType(d.pick([]string{"Set", "Delete", "Bogus"}))}}
					if a.Action.Type == "Set" {
						a.Action.Set = &routev1.RouteSetHTTPHeader{Value: d.pick(headerValues)}
						inputs = append(inputs, a.Action.Set.Value)
					}
					inputs = append(inputs, a.Name)
					if d.intn(2) == 0 {
						route.Spec.HTTPHeaders.Actions.Request = append(route.Spec.HTTPHeaders.Actions.Request, a)
					} else {
						route.Spec.HTTPHeaders.Actions.Response = append(route.Spec.HTTPHeaders.Actions.Response, a)
					}
				}
			}
			inputs = append(inputs, route.Name, route.Spec.Host, route.Spec.Path, route.Spec.To.Name)
			for k, v := range route.Annotations {
				inputs = append(inputs, k, v)
			}
			if tls := route.Spec.TLS; tls != nil {
				inputs = append(inputs, tls.Certificate, tls.Key, tls.CACertificate, tls.DestinationCACertificate)
			}
			objs = append(objs, route)
		}
	}
	return objs, inputs
}

// goodTenants are well-behaved namespaces with one route of each
// termination, older than any hostile route.
func goodTenants(ca, leaf *testcerts.Pair, created time.Time) []runtime.Object {
	var objs []runtime.Object
	port, portName := int32(8443), "web"
	for i, ns := range []string{"good-a", "good-b"} {
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 443}}}},
			&discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.200.%d.1", i)}}, {Addresses: []string{fmt.Sprintf("10.200.%d.2", i)}}},
			})
		prefix := ""
		if i == 1 {
			prefix = "b-"
		}
		for _, r := range []struct {
			name string
			tls  *routev1.TLSConfig
		}{
			{"plain", nil},
			{"edge", &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: leaf.CertPEM, Key: leaf.KeyPEM, CACertificate: ca.CertPEM}},
			{"pt", &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}},
			{"re", &routev1.TLSConfig{Termination: routev1.TLSTerminationReencrypt, Certificate: leaf.CertPEM, Key: leaf.KeyPEM, DestinationCACertificate: ca.CertPEM}},
		} {
			objs = append(objs, &routev1.Route{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.name, CreationTimestamp: metav1.NewTime(created)},
				Spec: routev1.RouteSpec{Host: prefix + r.name + ".good.example.com", TLS: r.tls,
					To: routev1.RouteTargetReference{Kind: "Service", Name: "app"}},
			})
		}
	}
	return objs
}

var goodRoutes = []string{"good-a/plain", "good-a/edge", "good-a/pt", "good-a/re", "good-b/plain", "good-b/edge", "good-b/pt", "good-b/re"}

// tenantPass renders objs as the router does.
func tenantPass(t testing.TB, renderer *templates.Renderer, dir string, defaultCert []byte, objs []runtime.Object) ([]files.File, admission.Decision) {
	st := store.New()
	for _, o := range objs {
		// As every source does: restricted endpoint addresses never reach the store.
		st.Upsert(endpointfilter.Filter(o, endpointfilter.Options{}, logr.Discard()))
	}
	out, err := pipeline.Pass(st, pipeline.Inputs{
		Renderer:  renderer,
		Admission: admission.Options{ExtendedValidation: true, AllowWildcardRoutes: true},
		Build: builder.Options{WorkingDir: dir, RunDir: filepath.Join(dir, "run"), DefaultCertificate: filepath.Join(dir, "conf", "default.pem"),
			HTTPPort: 18080, HTTPSPort: 18443, BindPorts: true, MaxConnections: 20000},
		DefaultCertificate: defaultCert,
		Servers:            servers.Options{PoolSize: 5},
		FDLimit:            50000,
	}, pipeline.State{})
	if err != nil {
		t.Fatalf("the pass failed (no route is a culprit of a whole-pass failure): %v", err)
	}
	return out.Files, out.Decision
}

func fileMap(fs []files.File, dir string) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range fs {
		rel, _ := filepath.Rel(dir, f.Path)
		m[rel] = f.Data
	}
	return m
}

// templateHeaders are the headers the template itself sets in a backend.
var templateHeaders = map[string]bool{"X-Forwarded-Host": true, "X-Forwarded-Port": true, "X-Forwarded-Proto": true,
	"Forwarded": true, "X-Forwarded-For": true, "Strict-Transport-Security": true}

func FuzzTenants(f *testing.F) {
	prereq.NeedBinary(f, "haproxy")
	tc, ca, leaf := newTenantCerts(f)
	renderer, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		f.Fatal(err)
	}
	defaultCert, err := defaultcert.Generate("default", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	// A tmpfs directory with a short path (unix socket paths are limited).
	parent := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "tf")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	good := goodTenants(ca, leaf, created)
	baseFiles, baseDecision := tenantPass(f, renderer, dir, defaultCert, good)
	base := fileMap(baseFiles, dir)
	baseHead, baseRoutes := templates.RouteSections(string(base["conf/haproxy.config"]))
	for _, k := range goodRoutes {
		if !baseDecision.Results[admission.Key(k)].Admitted || baseRoutes[k] == "" {
			f.Fatalf("well-behaved route %s not served without other tenants: %+v", k, baseDecision.Results[admission.Key(k)])
		}
	}

	f.Add([]byte{})
	f.Add([]byte("tenant"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, inputs := tenantObjects(&fuzzBytes{b: data}, tc, created.Add(time.Hour))
		fs, decision := tenantPass(t, renderer, dir, defaultCert, append(append([]runtime.Object{}, good...), objs...))
		got := fileMap(fs, dir)
		config := string(got["conf/haproxy.config"])
		head, routes := templates.RouteSections(config)

		// (2) Every well-behaved route is admitted and rendered as before.
		if templates.FrontendsAsAnyRoute(head) != templates.FrontendsAsAnyRoute(baseHead) {
			t.Fatalf("tenants changed the global/frontend part:\n%s", head)
		}
		for _, k := range goodRoutes {
			if res := decision.Results[admission.Key(k)]; !res.Admitted {
				t.Fatalf("well-behaved route %s rejected: %s: %s", k, res.Reason, res.Message)
			}
			if routes[k] != baseRoutes[k] && !strings.HasPrefix(routes[k], baseRoutes[k]) {
				t.Fatalf("well-behaved route %s rendered differently:\n%s\nwant\n%s", k, routes[k], baseRoutes[k])
			}
		}
		for name, data := range base {
			if strings.HasSuffix(name, ".map") {
				for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					if l != "" && !bytes.Contains(got[name], []byte(l+"\n")) && !bytes.HasSuffix(got[name], []byte(l)) {
						t.Fatalf("%s lost well-behaved entry %q", name, l)
					}
				}
			} else if strings.HasPrefix(name, "router/") && !bytes.Equal(got[name], data) {
				t.Fatalf("well-behaved file %s changed", name)
			}
		}

		// (3) Tenant text stays in quoted or validated positions.
		configLines := map[string]bool{}
		for key, sec := range routes {
			if baseRoutes[key] != "" {
				continue
			}
			lines := strings.Split(strings.TrimRight(sec, "\n"), "\n")
			for _, l := range lines[1:] {
				w := strings.Fields(l)
				if len(w) == 0 {
					continue
				}
				configLines[strings.TrimSpace(l)] = true
				if w[0] != "#" && commentStart(l) {
					t.Fatalf("%s: '#' outside quotes inside a directive (HAProxy would cut the line there): %q", key, l)
				}
				second, ok := templates.RouteSectionKeywords[w[0]]
				if !ok {
					t.Fatalf("%s: unexpected directive %q", key, l)
				}
				if w[0] == "server" {
					addr, err := netip.ParseAddrPort(w[2])
					if err != nil {
						t.Fatalf("%s: server address %q: %v", key, w[2], err)
					}
					if err := endpointfilter.Restricted(addr.Addr(), endpointfilter.Options{}); err != nil && !strings.Contains(l, "disabled") {
						t.Fatalf("%s: restricted server %q: %v", key, l, err)
					}
				}
				if (w[0] == "http-request" || w[0] == "http-response") && len(w) > 2 && (w[1] == "set-header" || w[1] == "del-header") && !templateHeaders[w[2]] {
					words, err := templates.HAProxyUnquote(l)
					if err != nil || (w[1] == "set-header" && len(words) != 4) || (w[1] == "del-header" && len(words) != 3) {
						t.Fatalf("%s: header action not one quoted word per field: %q (%v)", key, l, err)
					}
					continue
				}
				if second != nil && (len(w) < 2 || !contains(second, w[1])) {
					t.Fatalf("%s: unexpected form of %s: %q", key, w[0], l)
				}
			}
		}
		for _, in := range inputs {
			parts := strings.Split(strings.ReplaceAll(in, "\r", "\n"), "\n")
			for i, part := range parts {
				if i > 0 && configLines[strings.TrimSpace(part)] {
					t.Fatalf("input line %q became a directive", part)
				}
				if i > 0 && len(part) >= 20 {
					for name, data := range got {
						if (name == "conf/haproxy.config" || strings.HasSuffix(name, ".map")) && bytes.Contains(data, []byte(part)) {
							t.Fatalf("certificate text %q reached %s", part, name)
						}
					}
				}
			}
		}
		for name, data := range got {
			if !strings.HasSuffix(name, ".map") || name == "conf/cert_config.map" {
				continue
			}
			for _, l := range strings.Split(string(data), "\n") {
				if strings.TrimSpace(l) != "" && (len(strings.Fields(l)) != 2 || strings.HasPrefix(l, "#")) {
					t.Fatalf("%s: malformed line %q", name, l)
				}
			}
		}

		// (1) HAProxy accepts what it would be given.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if out, err := templates.HAProxyCheckFiles(t, fs, filepath.Join(dir, "conf", "haproxy.config"), filepath.Join(dir, "run")); err != nil {
			t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, config)
		}
	})
}

// commentStart tells whether HAProxy's configuration parser would see a
// comment in line: a '#' that is neither inside quotes nor escaped with a
// backslash (inside single quotes everything is literal; inside double
// quotes and outside quotes a backslash escapes the next character).
func commentStart(line string) bool {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#':
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCommentStartFollowsHAProxyQuoting(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{`http-response set-header 'X-Tenant' '#x'`, false},
		{`http-response set-header X-Tenant "#x"`, false},
		{`http-response set-header X-Tenant \#x`, false},
		{`http-response set-header X-Tenant #x`, true},
		{`http-response set-header 'X-Tenant' 'a'#x`, true},
		{`http-response set-header X-Tenant "a\"#"`, false},
		{`http-response set-header X-Tenant "a\"" #`, true},
		{`acl a path_beg /x`, false},
	}
	for _, tt := range tests {
		if got := commentStart(tt.line); got != tt.want {
			t.Errorf("commentStart(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
