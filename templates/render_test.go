package templates

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
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
	servers.Assign(td, nil, servers.Options{})
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
		addr := ip
		if strings.Contains(ip, ":") {
			addr = "[" + ip + "]" // as the builder writes IPv6 addresses
		}
		su.EndpointTable = append(su.EndpointTable, model.Endpoint{ID: id, IP: addr, Port: "8080", IdHash: "h" + ip})
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
		"server ept:svc-plain:10.0.0.1:8080 10.0.0.1:8080 weight 256 check inter 5000ms",
		"backend be_edge_http:ns:edge\n",
		"\n  cookie kedge insert indirect nocache httponly secure attr SameSite=None dynamic\n  dynamic-cookie-key kedge\n",
		"\n  cookie kre insert indirect nocache httponly secure attr SameSite=None dynamic\n",
		"\n  cookie kplain insert indirect nocache httponly dynamic\n",
		"backend be_tcp:ns:pt\n  mode tcp\n  balance source",
		"backend be_secure:ns:re\n",
		"server ept:svc-re:10.0.0.7:8080 10.0.0.7:8080 weight 256 ssl verify required ca-file " + dir + "/router/cacerts/ns:re.pem",
		"server ept:svc-v6:fd00::1:8080 [fd00::1]:8080",
		"crt-list " + dir + "/conf/cert_config.map",
	}
	for _, w := range wantInConfig {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
	if strings.Contains(cfg, "server ept:svc-plain-test:10.0.0.3:8080 10.0.0.3:8080 weight 256 check") {
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
	// The backends HAProxy runs with another cookie name: none at a load.
	if m, ok := out["conf/sticky_renames.map"]; !ok || strings.TrimSpace(m) != "" {
		t.Errorf("sticky_renames.map = %q (written: %v), want it empty", m, ok)
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
	src := td.State["ns:edge"]
	src.Settings.Balance = "source"
	td.State["ns:edge"] = src
	cfg := renderDefault(t, td, map[string]string{"ROUTER_LOAD_BALANCE_ALGORITHM": "random"})["conf/haproxy.config"]
	for _, w := range []string{"backend be_http:ns:plain\n  mode http\n  option redispatch\n  option forwardfor\n  balance roundrobin\n",
		"backend be_edge_http:ns:allow\n  mode http\n  option redispatch\n  option forwardfor\n  balance random\n",
		// Source hashing is consistent, so weights can change at runtime.
		"backend be_edge_http:ns:edge\n  mode http\n  option redispatch\n  option forwardfor\n  balance source\n  hash-type consistent\n"} {
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
	prereq.NeedBinary(t, "haproxy")
	dir, err := os.MkdirTemp("", "tpl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	td := testData(t, dir)
	if out, err := haproxyCheckWithCerts(t, td, renderDefault(t, td, nil)); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

func TestParseRejectsBadTemplates(t *testing.T) {
	cases := map[string]string{
		"no haproxy.config":      `{{ define "/var/lib/haproxy/conf/other.map" }}{{ end }}`,
		"file outside base dir":  `{{ define "/etc/passwd" }}{{ end }}{{ define "/var/lib/haproxy/conf/haproxy.config" }}{{ end }}`,
		"relative escape":        `{{ define "../x/y" }}{{ end }}{{ define "conf/haproxy.config" }}{{ end }}`,
		"absolute escape":        `{{ define "/var/lib/haproxy/../../../tmp/x" }}{{ end }}{{ define "conf/haproxy.config" }}{{ end }}`,
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

// wildcardData is testData plus wildcard routes of every kind and the
// specific routes that must win over them.
func wildcardData(t *testing.T, dir string) *model.TemplateData {
	td := testData(t, dir)
	ca, err := testcerts.NewCA("wildcard ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("*.wild.test", []string{"*.wild.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	add := func(a model.ServiceAliasConfig, wildcard bool) {
		a.IsWildcard = wildcard
		td.State[model.NewServiceAliasConfigKey(a.Namespace, a.Name)] = a
		td.ServiceUnits[model.NewServiceUnitKey(a.Namespace, "svc-"+a.Name)] = unit(a.Namespace, "svc-"+a.Name, "10.0.1.1")
	}
	add(alias("ns", "wild", "w.example.com", "", "", "", 1), true)
	add(alias("ns", "wild-api", "w.example.com", "/api", "", "", 1), true)
	add(alias("ns", "specific", "specific.example.com", "", "", "", 1), false)
	wedge := alias("ns", "wedge", "www.wild.test", "", routev1.TLSTerminationEdge, routev1.InsecureEdgeTerminationPolicyRedirect, 1)
	wedge.Certificates["www.wild.test"] = model.Certificate{ID: "ns:wedge", Contents: leaf.CertPEM, PrivateKey: leaf.KeyPEM}
	add(wedge, true)
	add(alias("ns", "wpt", "wp.pt.test", "", routev1.TLSTerminationPassthrough, "", 1), true)
	add(alias("ns", "spec-edge", "spec.pt.test", "", routev1.TLSTerminationEdge, "", 1), false)
	add(alias("ns", "spec-edge-b", "spec.pt.test", "/b", routev1.TLSTerminationEdge, "", 1), false)
	add(alias("ns", "spec-re", "re.pt.test", "", routev1.TLSTerminationReencrypt, "", 1), false)
	add(alias("ns", "exact-pt", "exact.pt.test", "", routev1.TLSTerminationPassthrough, "", 1), false)
	add(alias("ns", "exact-pt-http", "exact.pt.test", "/x", "", "", 1), false)
	add(alias("ns", "other-edge", "edge.other.test", "", routev1.TLSTerminationEdge, "", 1), false)
	return td
}

func TestDefaultTemplateRendersWildcardRoutes(t *testing.T) {
	dir := t.TempDir()
	out := renderDefault(t, wildcardData(t, dir), nil)
	want := map[string][]string{
		"conf/route_http.map": {
			"*.example.com/ be_http:ns:wild", "*.example.com/api/ be_http:ns:wild-api",
			"specific.example.com/ be_http:ns:specific", "*.wild.test/ @redirect",
			// the specific routes of testData keep their exact keys
			"www.example.com/ be_http:ns:plain", "www.example.com/test/ be_http:ns:plain-test",
		},
		"conf/route_https.map": {"*.wild.test/ be_edge_http:ns:wedge", "spec.pt.test/ be_edge_http:ns:spec-edge", "edge.example.com/ be_edge_http:ns:edge"},
		"conf/route_sni_passthrough.map": {
			"*.pt.test be_tcp:ns:wpt", "exact.pt.test be_tcp:ns:exact-pt", "pt.example.com be_tcp:ns:pt",
			// terminated hosts that the wildcard passthrough route would capture
			"spec.pt.test be_sni", "re.pt.test be_sni",
		},
		"conf/cert_config.map": {dir + "/router/certs/ns:wedge.pem [alpn h2,http/1.1] *.wild.test"},
	}
	for file, lines := range want {
		got := out[file]
		for _, l := range lines {
			if !strings.Contains(got, l+"\n") {
				t.Errorf("%s lacks line %q; has:\n%s", file, l, got)
			}
		}
	}
	pt := out["conf/route_sni_passthrough.map"]
	if n := strings.Count(pt, "spec.pt.test be_sni\n"); n != 1 {
		t.Errorf("spec.pt.test has %d be_sni lines, want 1 (two routes share the host):\n%s", n, pt)
	}
	for _, bad := range []string{"exact.pt.test be_sni", "edge.other.test ", "edge.example.com ", "w.example.com ", "wp.pt.test "} {
		if strings.Contains("\n"+pt, "\n"+bad) {
			t.Errorf("route_sni_passthrough.map has %q:\n%s", bad, pt)
		}
	}
	for _, file := range []string{"conf/route_http.map", "conf/route_https.map"} {
		if m := "\n" + out[file]; strings.Contains(m, "\nw.example.com/") || strings.Contains(m, "\nwww.wild.test/") {
			t.Errorf("%s has the wildcard route's own host as a key, want only *.domain:\n%s", file, out[file])
		}
	}
	cfg := out["conf/haproxy.config"]
	for _, w := range []string{
		`http-request set-var(txn.backend) base,regsub(\"^[^./:]*[.]([^/:]*)(:[^/]*)?/\",\"*.\\1/\"),concat(,,/),map_beg(` + dir + "/conf/route_http.map) if !{ var(txn.backend) -m found }",
		`http-request set-var(txn.backend) base,regsub(\"^[^./:]*[.]([^/:]*)(:[^/]*)?/\",\"*.\\1/\"),concat(,,/),map_beg(` + dir + "/conf/route_https.map) if !{ var(txn.backend) -m found }",
		"use_backend %[req.ssl_sni,lower,regsub(^[^.]*,*),map(" + dir + "/conf/route_sni_passthrough.map)]",
	} {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks the wildcard lookup %q", w)
		}
	}
	// The exact lookup comes first: the wildcard one only runs when it
	// found nothing, so a specific route wins over a wildcard route.
	exact := strings.Index(cfg, "base,concat(,,/),map_beg("+dir+"/conf/route_http.map)")
	wild := strings.Index(cfg, `base,regsub(\"^[^./:]*[.]([^/:]*)(:[^/]*)?/\",\"*.\\1/\"),concat(,,/),map_beg(`+dir+"/conf/route_http.map)")
	if exact < 0 || wild < 0 || exact > wild {
		t.Errorf("exact lookup at %d, wildcard lookup at %d: want the exact one first", exact, wild)
	}
}

// TestDefaultTemplateWithWildcardRoutesPassesHAProxyCheck has the real
// haproxy check the configuration with wildcard routes of every kind.
func TestDefaultTemplateWithWildcardRoutesPassesHAProxyCheck(t *testing.T) {
	prereq.NeedBinary(t, "haproxy")
	dir, err := os.MkdirTemp("", "tplw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	td := wildcardData(t, dir)
	if out, err := haproxyCheckWithCerts(t, td, renderDefault(t, td, nil)); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

// annotatedRoute is a route of namespace "fuzz" to service "svc".
func annotatedRoute(name, host, path string, tls *routev1.TLSConfig, ann map[string]string) *routev1.Route {
	return &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fuzz", Name: name, Annotations: ann},
		Spec:       routev1.RouteSpec{Host: host, Path: path, TLS: tls, To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}},
	}
}

// TestDefaultTemplateRouteAnnotations renders routes with every annotation
// through the real builder, checks each one's directives (and that invalid
// values leave the defaults), and that haproxy -c accepts the result.
func TestDefaultTemplateRouteAnnotations(t *testing.T) {
	var long []string
	for i := 0; i < 120; i++ {
		long = append(long, fmt.Sprintf("10.1.%d.%d", i/200, i%200))
	}
	edge := &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyAllow}
	dir := shortDir(t)
	td := fuzzModel(t, dir,
		annotatedRoute("all", "all.example.com", "/app", edge, map[string]string{
			annotations.Timeout:                  "1500ms",
			annotations.TimeoutTunnel:            "100d",
			annotations.HealthCheckInterval:      "2s",
			annotations.PodConcurrentConnections: "7",
			annotations.IPAllowlist:              "127.0.0.1 10.0.0.0/8 2001:db8::/32",
			annotations.RateLimit:                "true",
			annotations.RateLimitConcurrentTCP:   "3",
			annotations.RateLimitRateTCP:         "4",
			annotations.RateLimitRateHTTP:        "5",
			annotations.HSTSHeader:               "max-age=31536000; includeSubDomains; preload",
			annotations.RewriteTarget:            "/v2/",
			annotations.SetForwardedHeaders:      "replace",
			annotations.CookieName:               "my_cookie",
			annotations.CookieSameSite:           "strict",
			annotations.Balance:                  "source",
		}),
		annotatedRoute("long", "long.example.com", "", nil, map[string]string{annotations.IPWhitelist: strings.Join(long, " ")}),
		annotatedRoute("nocookie", "nocookie.example.com", "", nil, map[string]string{annotations.DisableCookies: "true", annotations.SetForwardedHeaders: "never"}),
		annotatedRoute("ifnone", "ifnone.example.com", "", nil, map[string]string{annotations.SetForwardedHeaders: "if-none"}),
		// As OpenShift's parseIPList: an invalid entry is dropped, the
		// others apply.
		annotatedRoute("partial", "partial.example.com", "", nil, map[string]string{annotations.IPAllowlist: "127.0.0.1 not-an-ip"}),
		annotatedRoute("invalid", "invalid.example.com", "", nil, map[string]string{
			annotations.Timeout:                  "10 s",
			annotations.TimeoutTunnel:            "5s\n  server evil 1.2.3.4:80",
			annotations.HealthCheckInterval:      "-1",
			annotations.PodConcurrentConnections: "many",
			annotations.IPAllowlist:              "not-an-ip 127.0.0.300",
			annotations.HSTSHeader:               "max-age=1",
			annotations.RewriteTarget:            "/x y",
			annotations.SetForwardedHeaders:      "sometimes",
			annotations.CookieName:               "a;b",
			annotations.CookieSameSite:           "Lax\n#",
			annotations.Balance:                  "first",
			annotations.RateLimit:                "true",
			annotations.RateLimitRateHTTP:        "-5",
		}),
	)
	if n := len(td.State["fuzz:invalid"].AnnotationProblems); n != 12 {
		t.Errorf("invalid route: %d problems reported, want 12: %q", n, td.State["fuzz:invalid"].AnnotationProblems)
	}
	if n := len(td.State["fuzz:all"].AnnotationProblems); n != 0 {
		t.Errorf("valid route: problems reported: %q", td.State["fuzz:all"].AnnotationProblems)
	}
	got := renderDefault(t, td, nil)
	_, routes := routeSections(got["conf/haproxy.config"])
	for route, want := range map[string][]string{
		"fuzz/all": {
			"\n  balance source\n",
			"\n  acl allowlist src -f " + filepath.Join(dir, "router", "allowlists", "fuzz:all.txt") + "\n  tcp-request content reject if !allowlist\n",
			"\n  stick-table type ip size 100k expire 30s store conn_cur,conn_rate(3s),http_req_rate(10s)\n  tcp-request content track-sc2 src\n",
			"\n  tcp-request content reject if { var(txn.rl_conn_cur) -m found } { sc2_conn_cur,sub(txn.rl_conn_cur) gt 0 }\n",
			"\n  tcp-request content reject if { var(txn.rl_conn_rate) -m found } { sc2_conn_rate,sub(txn.rl_conn_rate) gt 0 }\n",
			"\n  tcp-request content reject if { var(txn.rl_http_rate) -m found } { sc2_http_req_rate,sub(txn.rl_http_rate) ge 0 }\n",
			"\n  http-request set-header X-Forwarded-For %[src]\n",
			"\n  http-request set-path /v2%[path,bytes(4)] if { path -m beg /app/ }\n",
			"\n  http-request set-path /v2/ if { path -m str /app }\n",
			"\n  cookie my_cookie insert indirect nocache httponly secure attr SameSite=Strict dynamic\n",
			" maxconn 7 check inter 2s\n",
		},
		"fuzz/nocookie": {"\n  balance random\n"},
		"fuzz/partial":  {"\n  acl allowlist src -f " + filepath.Join(dir, "router", "allowlists", "fuzz:partial.txt") + "\n  tcp-request content reject if !allowlist\n"},
		"fuzz/ifnone": {
			"\n  option forwardfor if-none\n",
			"\n  http-request set-header X-Forwarded-Host %[req.hdr(host)] if !{ req.hdr(X-Forwarded-Host) -m found }\n",
		},
		"fuzz/invalid": {
			"\n  option forwardfor\n  balance random\n",
			" check inter 5000ms\n",
			// the route's hashed name: its cookie_name ("a;b") is invalid
			"\n  cookie " + td.State["fuzz:invalid"].RoutingKeyName + " insert indirect nocache httponly dynamic\n",
		},
	} {
		for _, w := range want {
			if !strings.Contains(routes[route], w) {
				t.Errorf("%s lacks %q:\n%s", route, w, routes[route])
			}
		}
	}
	// An HTTP route's timeouts are in the maps the defaults section
	// "routes" reads, by backend name, in milliseconds.
	for file, want := range map[string]string{"conf/timeout_server.map": "\nbe_edge_http:fuzz:all 1500\n", "conf/timeout_tunnel.map": "\nbe_edge_http:fuzz:all 2147483647\n",
		"conf/hsts.map": "\nbe_edge_http:fuzz:all max-age=31536000;includeSubDomains;preload\n",
		// the limits of fuzz/all; fuzz/invalid's rate-http (-5) is none
		"conf/rate_limit_concurrent_tcp.map": "\nbe_edge_http:fuzz:all 3\n", "conf/rate_limit_rate_tcp.map": "\nbe_edge_http:fuzz:all 4\n",
		"conf/rate_limit_rate_http.map": "\nbe_edge_http:fuzz:all 5\n"} {
		if got[file] != want {
			t.Errorf("%s = %q, want %q", file, got[file], want)
		}
	}
	for route, unwanted := range map[string][]string{
		"fuzz/all":      {"timeout server", "timeout tunnel", "Strict-Transport-Security"},
		"fuzz/nocookie": {"\n  cookie ", "option forwardfor", "X-Forwarded", "Forwarded"},
		"fuzz/invalid":  {"timeout server", "timeout tunnel", "acl", "set-path", "Strict-Transport", "maxconn", "SameSite", "evil"},
		"other/ref":     {"timeout server", "acl", "stick-table", "maxconn"},
	} {
		for _, u := range unwanted {
			if strings.Contains(routes[route], u) {
				t.Errorf("%s has %q:\n%s", route, u, routes[route])
			}
		}
	}
	// An allowlist is a file, one entry a line, read with -f.
	allowlistFile := filepath.Join(dir, "router", "allowlists", "fuzz:long.txt")
	if n := strings.Count(routes["fuzz/long"], "acl allowlist src "); n != 1 || !strings.Contains(routes["fuzz/long"], "\n  acl allowlist src -f "+allowlistFile+"\n  tcp-request content reject if !allowlist\n") {
		t.Errorf("120 allowlist entries should be one acl line reading %s:\n%s", allowlistFile, routes["fuzz/long"])
	}
	var allowlistFiles []string
	for _, f := range files.AllowlistFiles(td) {
		allowlistFiles = append(allowlistFiles, f.Path)
		if f.Path == allowlistFile && string(f.Data) != "# route fuzz/long\n"+strings.Join(long, "\n")+"\n" {
			t.Errorf("%s holds %q", f.Path, f.Data)
		}
	}
	if !slices.Contains(allowlistFiles, allowlistFile) || len(allowlistFiles) != 3 {
		t.Errorf("allowlist files %q, want %s and those of fuzz/all and fuzz/partial", allowlistFiles, allowlistFile)
	}
	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheck(t, td, got); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, got["conf/haproxy.config"])
	}
}

// routerSettings are non-default values for every router-wide setting.
func routerSettings() model.HAProxySettings {
	return model.HAProxySettings{
		StrictSNI: true, Ciphers: "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384", CipherSuites: "TLS_AES_256_GCM_SHA384",
		SSLMinVersion: "TLSv1.1", SSLMaxVersion: "TLSv1.2",
		ConnectTimeout: "7s", ClientTimeout: "31s", ClientFinTimeout: "2s", ServerTimeout: "32s", ServerFinTimeout: "3s",
		TunnelTimeout: "2h", HTTPRequestTimeout: "11s", HTTPKeepAliveTimeout: "301s", InspectDelay: "6s",
		BackendCheckInterval: "2500ms", HardStopAfter: "30m",
		UseProxyProtocol: true, EnableCompression: true, CompressionMIME: "text/html application/json",
		LoadBalanceAlgorithm: "roundrobin", TCPBalanceScheme: "leastconn", Threads: 3,
		SyslogAddress: "127.0.0.1:10514", LogFacility: "local4", LogLevel: "info", SyslogFormat: `"%ci:%cp [%tr] %ft %b/%s %ST"`,
	}
}

// TestDefaultTemplateRouterSettings renders every router-wide setting
// (ROUTER_STRICT_SNI, ROUTER_CIPHERS, timeouts, …) and has haproxy -c check
// the result.
func TestDefaultTemplateRouterSettings(t *testing.T) {
	dir := shortDir(t)
	td := testData(t, dir)
	td.HAProxy = routerSettings()
	td.StatsPort, td.StatsUser, td.StatsPassword = 19360, "admin", "s3cret"
	got := renderDefault(t, td, nil)
	cfg := got["conf/haproxy.config"]
	global, defaults := globalAndDefaults(t, cfg)
	for _, w := range []string{
		"\n  nbthread 3\n", "\n  hard-stop-after 30m\n", "\n  log 127.0.0.1:10514 local4 info\n",
		"\n  ssl-default-bind-options ssl-min-ver TLSv1.1 ssl-max-ver TLSv1.2\n",
		"\n  ssl-default-bind-ciphers ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384\n",
		"\n  ssl-default-bind-ciphersuites TLS_AES_256_GCM_SHA384\n",
	} {
		if !strings.Contains(global, w) {
			t.Errorf("global lacks %q:\n%s", w, global)
		}
	}
	for _, w := range []string{
		"\n  log global\n  option httplog\n  log-format \"%ci:%cp [%tr] %ft %b/%s %ST\"\n",
		"\n  timeout connect 7s\n", "\n  timeout client 31s\n", "\n  timeout client-fin 2s\n", "\n  timeout server 32s\n",
		"\n  timeout server-fin 3s\n", "\n  timeout http-request 11s\n", "\n  timeout http-keep-alive 301s\n", "\n  timeout tunnel 2h\n",
	} {
		if !strings.Contains(defaults, w) {
			t.Errorf("defaults lack %q:\n%s", w, defaults)
		}
	}
	for _, w := range []string{
		"\n  bind :18080 accept-proxy\n", "\n  bind :18443 accept-proxy\n", "\n  tcp-request inspect-delay 6s\n",
		"\n  option tcplog\n",
		"crt-list " + dir + "/conf/cert_config.map strict-sni\n",
		"\nlisten stats from frontends\n  bind :19360\n  mode http\n  monitor-uri /healthz\n  stats enable\n  stats hide-version\n  stats realm Haproxy\\ Statistics\n  stats uri /\n  stats auth admin:s3cret\n",
		"backend be_http:ns:plain\n  mode http\n  option redispatch\n  option forwardfor\n  balance roundrobin",
		"backend be_tcp:ns:pt\n  mode tcp\n  balance leastconn",
		"server ept:svc-plain:10.0.0.1:8080 10.0.0.1:8080 weight 256 check inter 2500ms",
	} {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
	if n := strings.Count(cfg, "\n  compression algo gzip\n  compression type text/html application/json\n"); n != 3 {
		t.Errorf("compression in %d frontends, want 3 (public, fe_sni, fe_no_sni)", n)
	}
	if strings.Contains(cfg, "haproxy-no-sni.sock accept-proxy ssl crt "+td.DefaultCertificate+" strict-sni") {
		t.Error("strict-sni on the no-SNI frontend: clients without SNI must still get the default certificate")
	}
	if t.Failed() {
		t.Logf("haproxy.config:\n%s", cfg)
	}
	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheck(t, td, got); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
}

// TestDefaultTemplateRouterSettingsDefaults checks what a model without
// router-wide settings renders: OpenShift's defaults, no optional
// directives.
func TestDefaultTemplateRouterSettingsDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg := renderDefault(t, testData(t, dir), nil)["conf/haproxy.config"]
	for _, w := range []string{
		"\n  ssl-default-bind-options ssl-min-ver TLSv1.2\n",
		"\n  timeout connect 5s\n  timeout client 30s\n  timeout client-fin 1s\n  timeout server 30s\n  timeout server-fin 1s\n  timeout http-request 10s\n  timeout http-keep-alive 300s\n  timeout tunnel 1h\n",
		"\n  bind :18080\n", "\n  bind :18443\n", "\n  tcp-request inspect-delay 5s\n",
		"crt-list " + dir + "/conf/cert_config.map\n",
		// No stats port (OpenShift's template): /healthz on 1936, no page.
		"\nlisten stats from frontends\n  bind :1936\n  mode http\n  monitor-uri /healthz\n\n",
	} {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
	// No log target, no log format (option httplog, option tcplog): HAProxy
	// 3.0 warns about one without the other.
	for _, u := range []string{"nbthread", "hard-stop-after", "\n  log ", "log-format", "option httplog", "option tcplog", "compression", "strict-sni", "accept-proxy\n", "stats enable"} {
		if strings.Contains(cfg, u) {
			t.Errorf("haproxy.config has %q without the setting", u)
		}
	}
}

// TestDefaultTemplateMutualTLSCookieErrorFilesAndForwarded renders
// ROUTER_MUTUAL_TLS_AUTH*, ROUTER_COOKIE_NAME, ROUTER_ERRORFILE_503/404 and
// ROUTER_SET_FORWARDED_HEADERS, and has haproxy -c check the result.
func TestDefaultTemplateMutualTLSCookieErrorFilesAndForwarded(t *testing.T) {
	dir := shortDir(t)
	td := testData(t, dir)
	ca, err := testcerts.NewCA("client ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(dir, "custom")
	if err := os.MkdirAll(custom, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"ca.pem":   ca.CertPEM,
		"503.http": "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\ncustom 503\n",
		"404.http": "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\ncustom 404\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(custom, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	td.HAProxy = model.HAProxySettings{
		MutualTLSAuth: "required", MutualTLSCA: filepath.Join(custom, "ca.pem"), MutualTLSFilter: `"CN=client[0-9]+"`,
		CookieName: "router_cookie", ErrorFile503: filepath.Join(custom, "503.http"), ErrorFile404: filepath.Join(custom, "404.http"),
		ForwardedHeaders: "never",
	}
	got := renderDefault(t, td, nil)
	cfg := got["conf/haproxy.config"]
	verify := " ca-file " + td.HAProxy.MutualTLSCA + " verify required\n"
	for _, w := range []string{
		"cert_config.map" + verify, "ssl crt " + td.DefaultCertificate + verify,
		"\n  errorfile 503 " + td.HAProxy.ErrorFile503 + "\n  errorfile 404 " + td.HAProxy.ErrorFile404 + "\n",
		"\n  cookie router_cookie insert indirect nocache httponly secure attr SameSite=None dynamic\n",
		"\n  cookie router_cookie insert indirect nocache httponly dynamic\n",
	} {
		if !strings.Contains(cfg, w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
	// ROUTER_COOKIE_NAME names every route's sticky cookie.
	if n, all := strings.Count(cfg, "\n  cookie router_cookie insert "), strings.Count(cfg, "\n  cookie "); n != all || n == 0 {
		t.Errorf("ROUTER_COOKIE_NAME names %d of %d sticky cookies", n, all)
	}
	// As OpenShift: a request whose client certificate subject does not
	// match the filter, or that has none, is denied.
	if n := strings.Count(cfg, "\n  acl cert_cn_matches ssl_c_s_dn -m reg \"CN=client[0-9]+\"\n  http-request deny unless cert_cn_matches\n"); n != 2 {
		t.Errorf("subject filter in %d TLS frontends, want 2", n)
	}
	if n := strings.Count(cfg, "\n  http-request set-header X-SSL-Client-DN %{+Q}[ssl_c_s_dn]\n"); n != 2 {
		t.Errorf("client certificate headers in %d TLS frontends, want 2", n)
	}
	// The frontends set the forwarded headers only for the backends in
	// forwarded_headers.map, which has none: no rule, no lookup.
	_, backends, _ := strings.Cut(cfg, "\nbackend openshift_default\n")
	if strings.Contains(backends, "option forwardfor") || strings.Contains(backends, "X-Forwarded-Host") || strings.TrimSpace(got["conf/forwarded_headers.map"]) != "" {
		t.Errorf("ROUTER_SET_FORWARDED_HEADERS=never still sets forwarded headers; forwarded_headers.map: %q", got["conf/forwarded_headers.map"])
	}
	if strings.Contains(cfg, "X-Forwarded-Host") || strings.Contains(cfg, "fwd_other") {
		t.Errorf("ROUTER_SET_FORWARDED_HEADERS=never, no route of another policy: the frontends still look at the forwarded headers")
	}
	// A route's annotation wins over the router-wide defaults.
	a := td.State["ns:plain"]
	a.Settings.ForwardedHeaders, a.Settings.CookieName = "replace", "mine"
	td.State["ns:plain"] = a
	got2 := renderDefault(t, td, nil)
	_, plain, _ := strings.Cut(got2["conf/haproxy.config"], "backend be_http:ns:plain\n")
	plain, _, _ = strings.Cut(plain, "\n# route ")
	if !strings.Contains(plain, "X-Forwarded-For %[src]") || !strings.Contains(plain, "\n  cookie mine insert ") {
		t.Errorf("route annotations did not win over the router-wide defaults:\n%s", plain)
	}
	if m := got2["conf/forwarded_headers.map"]; m != "\nbe_http:ns:plain replace\n" {
		t.Errorf("forwarded_headers.map = %q, want the route whose policy sets the headers", m)
	}
	// With a key in forwarded_headers.map the frontends look it up, and set
	// the headers for the routes found there.
	if n := strings.Count(got2["conf/haproxy.config"], "\n  http-request set-header X-Forwarded-Host %[req.hdr(host)] if { var(txn.fwd_other) -m found }\n"); n != 3 {
		t.Errorf("forwarded headers for the routes in forwarded_headers.map in %d frontends, want 3", n)
	}
	if t.Failed() {
		t.Logf("haproxy.config:\n%s", cfg)
	}
	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheck(t, td, got); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
}

// TestDefaultTemplateH1CaseAdjust renders ROUTER_H1_CASE_ADJUST and the
// h1-adjust-case annotation: the global h1-case-adjust rules and the
// bogus-client option with the setting, the bogus-server option only in
// the backend of the annotated HTTP route, and haproxy -c accepts it.
func TestDefaultTemplateH1CaseAdjust(t *testing.T) {
	dir := shortDir(t)
	td := fuzzModel(t, dir,
		annotatedRoute("adjust", "adjust.example.com", "", nil, map[string]string{annotations.H1AdjustCase: "true"}),
		annotatedRoute("off", "off.example.com", "", nil, map[string]string{annotations.H1AdjustCase: "false"}),
		annotatedRoute("pt", "pt.example.com", "", &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}, map[string]string{annotations.H1AdjustCase: "true"}),
	)
	if n := len(td.State["fuzz:pt"].AnnotationProblems); n != 1 {
		t.Errorf("passthrough route: %d problems, want 1: %q", n, td.State["fuzz:pt"].AnnotationProblems)
	}
	without := renderDefault(t, td, nil)["conf/haproxy.config"]
	if strings.Contains(without, "h1-case-adjust") {
		t.Errorf("h1-case-adjust without ROUTER_H1_CASE_ADJUST:\n%s", without)
	}
	td.HAProxy.H1CaseAdjust = "X-Custom-Header,Content-MD5"
	got := renderDefault(t, td, nil)
	cfg := got["conf/haproxy.config"]
	global, defaults := globalAndDefaults(t, cfg)
	if !strings.Contains(global, "\n  h1-case-adjust x-custom-header X-Custom-Header\n  h1-case-adjust content-md5 Content-MD5\n") {
		t.Errorf("global lacks the h1-case-adjust rules:\n%s", global)
	}
	if !strings.Contains(defaults, "\n  option h1-case-adjust-bogus-client\n") {
		t.Errorf("defaults lack option h1-case-adjust-bogus-client:\n%s", defaults)
	}
	_, routes := routeSections(cfg)
	if !strings.Contains(routes["fuzz/adjust"], "\n  option h1-case-adjust-bogus-server\n") {
		t.Errorf("annotated route lacks option h1-case-adjust-bogus-server:\n%s", routes["fuzz/adjust"])
	}
	for _, r := range []string{"fuzz/off", "fuzz/pt", "other/ref"} {
		if strings.Contains(routes[r], "h1-case-adjust") {
			t.Errorf("%s has h1-case-adjust:\n%s", r, routes[r])
		}
	}
	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheck(t, td, got); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
}

// TestDefaultTemplateReadsEveryAllowlistFromItsFile: one entry, 61 (where
// OpenShift's template still writes them inline) and 62 are all read from
// the file the router writes, so that a changed list is applied at
// runtime; haproxy -c accepts them.
func TestDefaultTemplateReadsEveryAllowlistFromItsFile(t *testing.T) {
	list := func(n int) string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("10.2.%d.%d", i/200, i%200))
		}
		return strings.Join(out, " ")
	}
	dir := shortDir(t)
	td := fuzzModel(t, dir,
		annotatedRoute("one", "one.example.com", "", nil, map[string]string{annotations.IPAllowlist: list(1)}),
		annotatedRoute("at", "at.example.com", "", nil, map[string]string{annotations.IPAllowlist: list(61)}),
		annotatedRoute("above", "above.example.com", "", nil, map[string]string{annotations.IPAllowlist: list(62)}),
	)
	got := renderDefault(t, td, nil)
	_, routes := routeSections(got["conf/haproxy.config"])
	for _, name := range []string{"one", "at", "above"} {
		if r := routes["fuzz/"+name]; !strings.Contains(r, "\n  acl allowlist src -f "+dir+"/router/allowlists/fuzz:"+name+".txt\n") || strings.Contains(r, "10.2.") {
			t.Errorf("%s: the allowlist should be read from the file:\n%s", name, r)
		}
	}
	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheck(t, td, got); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, got["conf/haproxy.config"])
	}
}

// TestDefaultTemplateServerLines: the lines of a backend's servers and spare
// slots — the service CA path with verifyhost per service, maxconn, health
// checks on the lines the router checks (model.Server.Checked: endpoints
// once there is more than one, the spare slots the budget affords),
// "disabled" on free slots — and single-endpoint backends without checks,
// spare slots or not.
func TestDefaultTemplateServerLines(t *testing.T) {
	dir := t.TempDir()
	td := &model.TemplateData{
		WorkingDir: dir, RunDir: filepath.Join(dir, "run"), HTTPPort: 18080, HTTPSPort: 18443, BindPorts: true,
		DefaultCertificate:   filepath.Join(dir, "conf", "default_pub_keys.pem"),
		DefaultDestinationCA: "/etc/service-ca.crt",
		State:                map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{},
		ServiceUnits:         map[model.ServiceUnitKey]model.ServiceUnit{},
	}
	re := alias("ns", "re", "re.example.com", "", routev1.TLSTerminationReencrypt, "", 2)
	re.VerifyServiceHostname = true
	re.Settings.PodConcurrentConnections = 7
	two := 2
	re.Settings.PoolSize = &two
	td.State["ns:re"] = re
	td.ServiceUnits["ns/svc-re"] = unit("ns", "svc-re", "10.0.0.7", "10.0.0.9")
	single := alias("ns", "one", "one.example.com", "", "", "", 1)
	zero := 0
	single.Settings.PoolSize = &zero
	td.State["ns:one"] = single
	td.ServiceUnits["ns/svc-one"] = unit("ns", "svc-one", "10.0.0.8")
	slotted := alias("ns", "slotted", "slotted.example.com", "", "", "", 1)
	one := 1
	slotted.Settings.PoolSize = &one
	td.State["ns:slotted"] = slotted
	td.ServiceUnits["ns/svc-slotted"] = unit("ns", "svc-slotted", "10.0.0.10")
	cfg := renderDefault(t, td, nil)["conf/haproxy.config"]
	opts := " weight 256 maxconn 7 ssl verify required ca-file /etc/service-ca.crt alpn h2,http/1.1 verifyhost svc-re.ns.svc check inter 5000ms"
	for _, want := range []string{
		"\n  server ept:svc-re:10.0.0.7:8080 10.0.0.7:8080" + opts + "\n",
		"\n  server ept:svc-re:10.0.0.9:8080 10.0.0.9:8080" + opts + "\n",
		"\n  server _dynamic-pod-1 127.0.0.1:1 weight 0 maxconn 7 ssl verify required ca-file /etc/service-ca.crt alpn h2,http/1.1 verifyhost svc-re.ns.svc check inter 5000ms disabled\n",
		"\n  server _dynamic-pod-2 127.0.0.1:1 weight 0 ",
		"\n  server ept:svc-one:10.0.0.8:8080 10.0.0.8:8080 weight 256\n",
		"\n  server ept:svc-slotted:10.0.0.10:8080 10.0.0.10:8080 weight 256\n",
		"\n  server _dynamic-pod-1 127.0.0.1:1 weight 0 check inter 5000ms disabled\n",
		// Sticky cookies are dynamic (a hash of the key, the address and
		// the port): a server added at runtime gets the one a fresh
		// render gives it.
		" insert indirect nocache httponly dynamic\n  dynamic-cookie-key " + td.State["ns:one"].RoutingKeyName + "\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.config lacks %q", want)
		}
	}
}

// TestRouteWithoutAnnotationsOrCertificatesInACustomTemplate: a route
// without annotations or certificates has nil maps (as OpenShift passes
// route.Annotations on); a template reads them as empty maps.
func TestRouteWithoutAnnotationsOrCertificatesInACustomTemplate(t *testing.T) {
	text := `{{ define "conf/haproxy.config" }}{{ range $k, $cfg := .State -}}
[{{ index $cfg.Annotations "haproxy.router.openshift.io/timeout" }}|{{ len $cfg.Annotations }}|{{ len $cfg.Certificates }}|{{ with $cfg.Certificates }}certs{{ end }}{{ if $cfg.Annotations }}annotations{{ end }}{{ range $cfg.Certificates }}cert{{ end }}|{{ (index $cfg.Certificates $cfg.Host).Contents }}]
{{- end }}{{ end }}`
	r, err := Parse("custom", text, FuncMap(FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := alias("ns", "a", "a.example.com", "", "", "", 1)
	cfg.Annotations, cfg.Certificates = nil, nil
	td := &model.TemplateData{WorkingDir: "/w", State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{"ns:a": cfg}}
	files, err := r.Render(td)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(files[0].Data), "[|0|0||]"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

// globalAndDefaults cuts the global section and the defaults section
// "frontends" out of haproxy.config; the defaults section "routes" must
// have the same settings (and its rules, after them).
func globalAndDefaults(t *testing.T, cfg string) (global, defaults string) {
	t.Helper()
	global, rest, _ := strings.Cut(cfg, "\ndefaults frontends\n")
	defaults, rest, _ = strings.Cut(rest, "\ndefaults routes\n")
	routes, _, _ := strings.Cut(rest, "\nfrontend public from frontends\n")
	// (routes: the same settings, then the rules of the route settings.)
	if !strings.HasPrefix(routes, strings.TrimRight(defaults, "\n")+"\n  ") {
		t.Errorf("defaults sections differ:\nfrontends:\n%s\nroutes:\n%s", defaults, routes)
	}
	return global, defaults
}

// TestDefaultTemplateMakesTheGatewayLookupsWhoseKeysExist: with Gateways
// served, the frontends look up exact paths, wildcard hostnames and routes
// for every host only while the route maps have such keys (each lookup
// costs the requests that get that far), and make the route key from base
// while none of them needs the host or the path alone.
func TestDefaultTemplateMakesTheGatewayLookupsWhoseKeysExist(t *testing.T) {
	lookups := map[string]string{
		"exact path":          "str(=),concat(,txn.host,),concat(,txn.path,),map_str(",
		"host marker":         "set-var(txn.host) str(!)",
		"wildcard prefix":     "regsub(^[^./]*[.],+.),map_beg(",
		"wildcard exact path": "regsub(^=[^./]*[.],=+.),concat(,txn.path,),map_str(",
		"every host":          "base,regsub(^[^/]*,*),concat(,,/),map_beg(",
		"every host exact":    "str(=*),concat(,txn.path,),map_str(",
	}
	// Routes' hosts' markers: tested after the host lookup, and again
	// after OpenShift's wildcards (a wildcard Route's "*.domain/" marker
	// is found there), with Routes beside.
	const routeHost = "http-request set-var(txn.route_host) bool(true) if { var(txn.backend) -m str @rh }"
	for _, tc := range []struct {
		name       string
		route      model.ServiceAliasConfig
		host       string
		routes     bool
		want       []string
		routeHosts int
	}{
		{"a hostname and a path prefix: none", model.ServiceAliasConfig{Host: "h.example.com", Path: "/p"}, "h.example.com", false, nil, 0},
		{"Routes beside: their hosts' markers", model.ServiceAliasConfig{Host: "h.example.com", Path: "/p"}, "h.example.com", true, nil, 2},
		{"an exact path", model.ServiceAliasConfig{Host: "h.example.com", Path: "/p", ExactPath: true}, "h.example.com", false, []string{"exact path", "host marker"}, 0},
		{"a wildcard hostname", model.ServiceAliasConfig{Host: "*.example.com", Path: "/p"}, "h.example.com", false, []string{"wildcard prefix", "host marker"}, 0},
		{"a wildcard hostname, Routes beside", model.ServiceAliasConfig{Host: "*.example.com", Path: "/p"}, "h.example.com", true, []string{"wildcard prefix", "host marker"}, 2},
		{"a wildcard hostname and an exact path", model.ServiceAliasConfig{Host: "*.example.com", Path: "/p", ExactPath: true}, "h.example.com", false, []string{"wildcard exact path", "host marker"}, 0},
		{"a listener without a hostname", model.ServiceAliasConfig{Host: "h.example.com", Path: "/p"}, model.AnyHost, false, []string{"every host"}, 0},
		{"a listener without a hostname, Routes beside", model.ServiceAliasConfig{Host: "h.example.com", Path: "/p"}, model.AnyHost, true, []string{"every host"}, 2},
		{"every host, an exact path", model.ServiceAliasConfig{Host: model.AnyHost, Path: "/p", ExactPath: true}, "h.example.com", false, []string{"every host exact", "host marker"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			td := testData(t, dir)
			tc.route.Made, tc.route.Name, tc.route.Namespace = true, "made", "gw"
			tc.route.ServiceUnits = td.State["ns:plain"].ServiceUnits
			if !tc.routes {
				clear(td.State)
			}
			td.State["gw:made"] = tc.route
			td.HostResponses = []model.HostResponse{{Host: tc.host, Status: 404, HTTP: true, HTTPS: true}}
			cfg := renderDefault(t, td, nil)["conf/haproxy.config"]
			for name, line := range lookups {
				if got, want := strings.Contains(cfg, line), slices.Contains(tc.want, name); got != want {
					t.Errorf("lookup %q rendered: %v, want %v", name, got, want)
				}
			}
			// Counted in the HTTP frontend, twice more in the HTTPS ones.
			if got := strings.Count(cfg, routeHost); got != 3*tc.routeHosts {
				t.Errorf("Routes' host markers tested %d times, want %d", got, 3*tc.routeHosts)
			}
			if !strings.Contains(cfg, "use_backend be_gateway_answers") {
				t.Errorf("Gateways served, but no be_gateway_answers")
			}
			// Without a lookup that needs the host or the path alone,
			// the key is made from base, as without Gateways.
			fromBase, fromVars := strings.Count(cfg, "set-var(txn.backend) base,concat(,,/),map_beg("), strings.Count(cfg, "set-var(txn.route_key) ")
			vars := slices.ContainsFunc(tc.want, func(l string) bool { return l != "every host" })
			if !vars && (fromBase != 3 || fromVars != 0) || vars && (fromBase != 0 || fromVars != 3) {
				t.Errorf("route keys made from base in %d frontends, from variables in %d; lookups %v", fromBase, fromVars, tc.want)
			}
		})
	}
}

// TestDefaultTemplateLooksUpForwardedPoliciesOnlyWhileARouteHasAnother:
// the frontends set X-Forwarded-* for every route unconditionally while no
// route's set-forwarded-headers policy differs from the router-wide one in
// setting them or not, and only then look forwarded_headers.map up for
// each request; the count (TemplateData.MapKeys) decides it, and
// is worked out from State when not set.
func TestDefaultTemplateLooksUpForwardedPoliciesOnlyWhileARouteHasAnother(t *testing.T) {
	const (
		lookup = "\n  http-request set-var(txn.fwd_other) var(txn.backend),map("
		always = "\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n"
		unless = "\n  http-request set-header X-Forwarded-Host %[req.hdr(host)] if !{ var(txn.fwd_other) -m found }\n"
		when   = "\n  http-request set-header X-Forwarded-Host %[req.hdr(host)] if { var(txn.fwd_other) -m found }\n"
		none   = ""
	)
	passthrough := &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
	policy := func(p string) map[string]string { return map[string]string{annotations.SetForwardedHeaders: p} }
	one := &model.MapKeyCounts{ForwardedOthers: 1}
	tests := []struct {
		name     string
		global   string
		routes   []*routev1.Route
		count    *model.MapKeyCounts
		want     string
		lookedUp bool
	}{
		{"no policy anywhere: every route's headers, no lookup", "", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, nil)}, nil, always, false},
		{"a route of another policy that also sets them: no lookup", "append", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, policy("replace"))}, nil, always, false},
		{"a route of the never policy: looked up", "", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, policy("never"))}, nil, unless, true},
		{"a passthrough route of the never policy: not in the map, no lookup", "", []*routev1.Route{annotatedRoute("a", "a.example.com", "", passthrough, policy("never"))}, nil, always, false},
		{"router-wide never, no route sets them: no rule at all", "never", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, policy("if-none"))}, nil, none, false},
		{"router-wide never, a route of the append policy: looked up", "never", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, policy("append"))}, nil, when, true},
		{"the count set: it decides, not State", "", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, nil)}, one, unless, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := shortDir(t)
			td := fuzzModel(t, dir, tt.routes...)
			td.HAProxy.ForwardedHeaders = tt.global
			td.MapKeys = tt.count
			cfg := renderDefault(t, td, nil)["conf/haproxy.config"]
			head, _ := routeSections(cfg)
			if got := strings.Count(head, lookup); got != 0 && !tt.lookedUp || tt.lookedUp && got != 3 {
				t.Errorf("forwarded_headers.map looked up in %d frontends, want it in all 3: %v", got, tt.lookedUp)
			}
			for _, rule := range []string{always, unless, when} {
				want := 0
				if rule == tt.want {
					want = 3
				}
				if got := strings.Count(head, rule); got != want {
					t.Errorf("%d frontends with %q, want %d", got, strings.TrimSpace(rule), want)
				}
			}
			if tt.want == none && strings.Contains(head, "X-Forwarded-Host") {
				t.Errorf("the frontends set X-Forwarded-Host:\n%s", head)
			}
			if t.Failed() {
				t.Logf("frontends:\n%s", head)
			}
		})
	}
}

// TestDefaultTemplateLooksUpRouteSettingsOnlyWhileARouteHasOne: the
// defaults section the routes' backends take looks timeout_server.map,
// timeout_tunnel.map and hsts.map up (a lookup on every request) only
// while a route has a key in that map; the counts (TemplateData.MapKeys)
// decide it, and are worked out from State when not set.
func TestDefaultTemplateLooksUpRouteSettingsOnlyWhileARouteHasOne(t *testing.T) {
	lookups := map[string]string{
		"server timeout": "\n  http-request set-timeout server be_name,map_str_int(",
		"tunnel timeout": "\n  http-request set-timeout tunnel be_name,map_str_int(",
		"hsts":           "\n  http-response set-header Strict-Transport-Security %[be_name,map(",
	}
	edge := &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
	passthrough := &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		routes []*routev1.Route
		count  *model.MapKeyCounts
		want   []string
	}{
		{"no route with a setting: no lookup", []*routev1.Route{annotatedRoute("a", "a.example.com", "", edge, nil)}, nil, nil},
		{"a server timeout", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, ann(annotations.Timeout, "5s"))}, nil, []string{"server timeout"}},
		{"a tunnel timeout", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, ann(annotations.TimeoutTunnel, "1h"))}, nil, []string{"tunnel timeout"}},
		{"a timeout of 0 is none: no lookup", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, ann(annotations.Timeout, "0s"))}, nil, nil},
		{"a passthrough route's timeouts are its backend's: no lookup", []*routev1.Route{annotatedRoute("a", "a.example.com", "", passthrough,
			ann(annotations.Timeout, "5s", annotations.TimeoutTunnel, "1h"))}, nil, nil},
		{"an edge route's HSTS header", []*routev1.Route{annotatedRoute("a", "a.example.com", "", edge, ann(annotations.HSTSHeader, "max-age=100"))}, nil, []string{"hsts"}},
		{"an HSTS header on a route served over HTTP only: not in the map, no lookup", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, ann(annotations.HSTSHeader, "max-age=100"))}, nil, nil},
		{"all three on two routes", []*routev1.Route{annotatedRoute("a", "a.example.com", "", edge, ann(annotations.HSTSHeader, "max-age=100", annotations.Timeout, "5s")),
			annotatedRoute("b", "b.example.com", "", nil, ann(annotations.TimeoutTunnel, "1h"))}, nil, []string{"server timeout", "tunnel timeout", "hsts"}},
		{"the counts set: they decide, not State", []*routev1.Route{annotatedRoute("a", "a.example.com", "", nil, ann(annotations.Timeout, "5s"))},
			&model.MapKeyCounts{TimeoutTunnel: 1, HSTS: 2}, []string{"tunnel timeout", "hsts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := fuzzModel(t, shortDir(t), tt.routes...)
			td.MapKeys = tt.count
			cfg := renderDefault(t, td, nil)["conf/haproxy.config"]
			_, rest, _ := strings.Cut(cfg, "\ndefaults routes\n")
			section, _, _ := strings.Cut(rest, "\nfrontend ")
			for name, lookup := range lookups {
				want := 0
				if slices.Contains(tt.want, name) {
					want = 1
				}
				if got := strings.Count(section, lookup); got != want {
					t.Errorf("%s: %d lookups in defaults routes, want %d", name, got, want)
				}
				if n := strings.Count(cfg, lookup); n != want {
					t.Errorf("%s: %d lookups in the whole configuration, want %d", name, n, want)
				}
			}
			if t.Failed() {
				t.Logf("defaults routes:\n%s", section)
			}
		})
	}
}

// TestDefaultTemplateCleansRequestsInEveryHTTPFrontend: public, fe_sni and
// fe_no_sni refuse an empty Content-Length, remove the Proxy header and
// lower the Host before the route lookup, as OpenShift's frontends.
func TestDefaultTemplateCleansRequestsInEveryHTTPFrontend(t *testing.T) {
	td := fuzzModel(t, shortDir(t), annotatedRoute("a", "a.example.com", "", nil, nil))
	cfg := renderDefault(t, td, nil)["conf/haproxy.config"]
	for _, rule := range []string{
		"\n  http-request deny if { hdr_len(content-length) 0 }\n",
		"\n  http-request del-header Proxy\n",
		"\n  http-request set-header Host %[req.hdr(host),lower]\n",
	} {
		if n := strings.Count(cfg, rule); n != 3 {
			t.Errorf("%q in %d frontends, want 3", strings.TrimSpace(rule), n)
		}
	}
	for _, fe := range []string{"\nfrontend public ", "\nfrontend fe_sni ", "\nfrontend fe_no_sni "} {
		_, rest, _ := strings.Cut(cfg, fe)
		section, _, _ := strings.Cut(rest, "\nfrontend ")
		if lower, lookup := strings.Index(section, "set-header Host"), strings.Index(section, "set-var(txn.backend) base,"); lower < 0 || lookup < lower {
			t.Errorf("%s: the Host is lowered at %d, the route key made at %d", strings.TrimSpace(fe), lower, lookup)
		}
	}
}
