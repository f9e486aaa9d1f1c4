package templates

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/test/testcerts"
)

func renderDefault(t *testing.T, td *model.TemplateData, env map[string]string) map[string]string {
	t.Helper()
	r, err := Parse("default", Default(), FuncMap(FuncOptions{
		Rand:   rand.New(rand.NewSource(1)),
		Getenv: func(k string) string { return env[k] },
	}))
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Render(td)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		rel, _ := filepath.Rel(td.WorkingDir, f.Path)
		out[rel] = string(f.Data)
	}
	return out
}

func alias(ns, name, host, path string, term routev1.TLSTerminationType, policy routev1.InsecureEdgeTerminationPolicyType, eps int) model.ServiceAliasConfig {
	su := model.NewServiceUnitKey(ns, "svc-"+name)
	return model.ServiceAliasConfig{
		Name: name, Namespace: ns, Host: host, Path: path, TLSTermination: term, InsecureEdgeTerminationPolicy: policy,
		RoutingKeyName: "k" + name, Annotations: map[string]string{}, Certificates: map[string]model.Certificate{},
		ServiceUnits: map[model.ServiceUnitKey]int32{su: 1}, ServiceUnitNames: map[model.ServiceUnitKey]int32{su: 256},
		ActiveServiceUnits: 1, ActiveEndpoints: eps,
	}
}

func unit(ns, name string, ips ...string) model.ServiceUnit {
	su := model.ServiceUnit{Name: ns + "/" + name, Hostname: name + "." + ns + ".svc"}
	for _, ip := range ips {
		id := "ept:" + name + ":" + ip + ":8080"
		su.EndpointTable = append(su.EndpointTable, model.Endpoint{ID: id, IP: ip, Port: "8080", IdHash: "h" + ip})
	}
	return su
}

// testData has one route of every kind.
func testData(t *testing.T, dir string) *model.TemplateData {
	ca, err := testcerts.NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("edge.example.com", []string{"edge.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	td := &model.TemplateData{
		WorkingDir: dir, RunDir: filepath.Join(dir, "run"), HTTPPort: 18080, HTTPSPort: 18443, BindPorts: true,
		DefaultCertificate: filepath.Join(dir, "conf", "default_pub_keys.pem"),
		State:              map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{},
		ServiceUnits:       map[model.ServiceUnitKey]model.ServiceUnit{},
	}
	add := func(a model.ServiceAliasConfig, ips ...string) {
		td.State[model.NewServiceAliasConfigKey(a.Namespace, a.Name)] = a
		td.ServiceUnits[model.NewServiceUnitKey(a.Namespace, "svc-"+a.Name)] = unit(a.Namespace, "svc-"+a.Name, ips...)
	}
	add(alias("ns", "plain", "www.example.com", "", "", "", 2), "10.0.0.1", "10.0.0.2")
	add(alias("ns", "plain-test", "www.example.com", "/test", "", "", 1), "10.0.0.3")
	edge := alias("ns", "edge", "edge.example.com", "", routev1.TLSTerminationEdge, routev1.InsecureEdgeTerminationPolicyRedirect, 1)
	edge.Certificates["edge.example.com"] = model.Certificate{ID: "ns:edge", Contents: leaf.CertPEM, PrivateKey: leaf.KeyPEM}
	add(edge, "10.0.0.4")
	add(alias("ns", "allow", "allow.example.com", "", routev1.TLSTerminationEdge, routev1.InsecureEdgeTerminationPolicyAllow, 1), "10.0.0.5")
	add(alias("ns", "pt", "pt.example.com", "", routev1.TLSTerminationPassthrough, "", 1), "10.0.0.6")
	re := alias("ns", "re", "re.example.com", "/api", routev1.TLSTerminationReencrypt, "", 1)
	re.Certificates["re.example.com_pod"] = model.Certificate{ID: "ns:re_pod", Contents: ca.CertPEM}
	add(re, "10.0.0.7")
	add(alias("ns", "v6", "v6.example.com", "", "", "", 1), "fd00::1")
	return td
}

func TestDefaultTemplateRendersEachRouteType(t *testing.T) {
	dir := t.TempDir()
	out := renderDefault(t, testData(t, dir), nil)
	cfg := out["conf/haproxy.config"]

	wantInConfig := []string{
		"bind :18080", "bind :18443",
		"backend be_http:ns:plain\n",
		"server ept:svc-plain:10.0.0.1:8080 10.0.0.1:8080 cookie h10.0.0.1 weight 256 check inter 5000ms",
		"backend be_edge_http:ns:edge\n",
		"cookie kedge insert indirect nocache httponly secure attr SameSite=None",
		"backend be_tcp:ns:pt\n  mode tcp\n  balance source",
		"backend be_secure:ns:re\n",
		"server ept:svc-re:10.0.0.7:8080 10.0.0.7:8080 cookie h10.0.0.7 weight 256 ssl verify required ca-file " + dir + "/router/cacerts/ns:re.pem",
		"server ept:svc-v6:fd00::1:8080 [fd00::1]:8080",
		"crt-list " + dir + "/conf/cert_config.map",
	}
	for _, w := range wantInConfig {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
	if strings.Contains(cfg, "server ept:svc-plain-test:10.0.0.3:8080 10.0.0.3:8080 cookie h10.0.0.3 weight 256 check") {
		t.Errorf("health check on a single-endpoint backend")
	}
	wantMaps := map[string][]string{
		"conf/route_http.map": {
			"www.example.com/ be_http:ns:plain", "www.example.com/test/ be_http:ns:plain-test",
			"edge.example.com/ @redirect", "allow.example.com/ be_edge_http:ns:allow",
		},
		"conf/route_https.map":           {"edge.example.com/ be_edge_http:ns:edge", "allow.example.com/ be_edge_http:ns:allow", "re.example.com/api/ be_secure:ns:re"},
		"conf/route_sni_passthrough.map": {"pt.example.com be_tcp:ns:pt"},
		"conf/cert_config.map":           {dir + "/router/certs/ns:edge.pem [alpn h2,http/1.1] edge.example.com"},
		"conf/error-page-503.http":       {"HTTP/1.0 503 Service Unavailable"},
	}
	for file, lines := range wantMaps {
		got := out[file]
		for _, l := range lines {
			if !strings.Contains(got, l+"\n") {
				t.Errorf("%s lacks line %q; has:\n%s", file, l, got)
			}
		}
	}
	if strings.Contains(out["conf/route_http.map"], "be_tcp") || strings.Contains(out["conf/route_http.map"], "re.example.com") {
		t.Errorf("route_http.map serves a route over HTTP that must not be: \n%s", out["conf/route_http.map"])
	}
	if strings.Contains(out["conf/route_https.map"], "www.example.com") {
		t.Errorf("unsecured route in the HTTPS map")
	}
}

func TestDefaultTemplateBalance(t *testing.T) {
	dir := t.TempDir()
	td := testData(t, dir)
	a := td.State["ns:plain"]
	a.Annotations = map[string]string{"haproxy.router.openshift.io/balance": "roundrobin"}
	td.State["ns:plain"] = a
	b := td.State["ns:allow"]
	b.Annotations = map[string]string{"haproxy.router.openshift.io/balance": "evil\n  server x 1.2.3.4:1"}
	td.State["ns:allow"] = b
	cfg := renderDefault(t, td, map[string]string{"ROUTER_LOAD_BALANCE_ALGORITHM": "random"})["conf/haproxy.config"]
	for _, w := range []string{"backend be_http:ns:plain\n  mode http\n  option redispatch\n  option forwardfor\n  balance roundrobin",
		"backend be_edge_http:ns:allow\n  mode http\n  option redispatch\n  option forwardfor\n  balance random"} {
		if !strings.Contains(cfg, w) {
			t.Errorf("config lacks %q", w)
		}
	}
	if strings.Contains(cfg, "evil") || strings.Contains(cfg, "1.2.3.4") {
		t.Fatal("annotation value injected into the config")
	}
}

// TestDefaultTemplatePassesHAProxyCheck renders every route type and has
// the real haproxy check the result.
func TestDefaultTemplatePassesHAProxyCheck(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	dir, err := os.MkdirTemp("", "tpl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	td := testData(t, dir)
	for f, data := range renderDefault(t, td, nil) {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := defaultcert.Generate("x", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "router", "certs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "router", "cacerts"), 0o755)
	os.MkdirAll(td.RunDir, 0o755)
	edge := td.State["ns:edge"].Certificates["edge.example.com"]
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(td.DefaultCertificate, cert, 0o600))
	must(os.WriteFile(filepath.Join(dir, "router", "certs", "ns:edge.pem"), []byte(edge.Contents+edge.PrivateKey), 0o600))
	must(os.WriteFile(filepath.Join(dir, "router", "cacerts", "ns:re.pem"), []byte(td.State["ns:re"].Certificates["re.example.com_pod"].Contents), 0o600))
	out, err := exec.Command("haproxy", "-c", "-f", filepath.Join(dir, "conf", "haproxy.config")).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

func TestParseRejectsBadTemplates(t *testing.T) {
	cases := map[string]string{
		"no haproxy.config":      `{{ define "/var/lib/haproxy/conf/other.map" }}{{ end }}`,
		"file outside base dir":  `{{ define "/etc/passwd" }}{{ end }}{{ define "/var/lib/haproxy/conf/haproxy.config" }}{{ end }}`,
		"relative escape":        `{{ define "../x/y" }}{{ end }}{{ define "conf/haproxy.config" }}{{ end }}`,
		"syntax error with line": "{{ define \"conf/haproxy.config\" }}\n{{ if }}\n{{ end }}",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("custom.template", text, FuncMap(FuncOptions{}))
			if err == nil {
				t.Fatal("accepted")
			}
			if name == "syntax error with line" && !strings.Contains(err.Error(), "custom.template:2") {
				t.Errorf("error %q does not name the line", err)
			}
		})
	}
}

func TestRelativeFileTemplatesAndBoundMapHelper(t *testing.T) {
	text := `{{ define "conf/haproxy.config" }}global{{ end }}{{ define "conf/os_http_be.map" }}{{ range generateHAProxyMap . }}{{ . }}
{{ end }}{{ end }}`
	r, err := Parse("custom", text, FuncMap(FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	td := &model.TemplateData{WorkingDir: "/w", State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:a": alias("ns", "a", "a.example.com", "", "", "", 1)}}
	files, err := r.Render(td)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != "/w/conf/haproxy.config" || files[1].Path != "/w/conf/os_http_be.map" {
		t.Fatalf("files %+v", files)
	}
	if !strings.Contains(string(files[1].Data), "be_http:ns:a") {
		t.Errorf("os_http_be.map: %q", files[1].Data)
	}
}
