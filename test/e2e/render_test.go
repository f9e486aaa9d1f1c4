package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// cli runs the router binary (a subcommand) with env added to the
// environment; it returns stdout, stderr and the exit error.
func cli(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, routerBin, args...)
	cmd.Env = kubetest.WithoutEnv(os.Environ(), "KUBECONFIG")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// generatedFiles lists the files the router wrote under dir (relative
// paths), except the run directory, backups and the default certificate
// (generated at random by each process).
func generatedFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == "run" {
				return filepath.SkipDir
			}
			return nil
		}
		// The default certificate and the spare backends are the
		// router's own files, not the template's.
		if strings.HasSuffix(rel, ".prev") || rel == "conf/default_pub_keys.pem" || rel == "conf/spare-backends.cfg" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sameFiles compares two sets of files byte for byte.
func sameFiles(want, got map[string][]byte) error {
	if w, g := sortedKeys(want), sortedKeys(got); strings.Join(w, " ") != strings.Join(g, " ") {
		return fmt.Errorf("files differ:\nrouter wrote %v\nrender wrote %v", w, g)
	}
	for name, data := range want {
		if !bytes.Equal(data, got[name]) {
			return fmt.Errorf("%s differs:\n--- router\n%s\n--- render\n%s", name, data, got[name])
		}
	}
	return nil
}

// TestRenderMatchesTheRunningRouter: for the same manifests, template,
// environment and working directory, render writes byte for byte the
// files the running router writes (configuration, maps, certificates), and
// lists the side files and the rejected routes.
func TestRenderMatchesTheRunningRouter(t *testing.T) {
	routeCA, err := testcerts.NewCA("route CA", time.Hour)
	must(t, err)
	edgeCert, err := routeCA.Issue("edge.example.com", []string{"edge.example.com"}, time.Hour)
	must(t, err)
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	plain := startBackend(t, "plain")
	other := startBackend(t, "other")

	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "plain", plain)+"---\n"+serviceYAML("apps", "other", other))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("apps", "unsecured", "www.example.com", "", "plain", ""),
		routeYAML("apps", "path", "www.example.com", "/other", "other", ""),
		routeYAML("apps", "edge", "edge.example.com", "", "plain", tlsYAML("edge", "Redirect", map[string]string{
			"certificate": edgeCert.CertPEM, "key": edgeCert.KeyPEM, "caCertificate": routeCA.CertPEM})),
		routeYAML("apps", "passthrough", "passthrough.example.com", "", "plain", tlsYAML("passthrough", "", nil)),
		routeYAML("apps", "reencrypt", "reencrypt.example.com", "", "other", tlsYAML("reencrypt", "", map[string]string{
			"destinationCACertificate": backendCA.CertPEM})),
		// Refused by ROUTER_DENIED_DOMAINS: the environment is honoured alike.
		routeYAML("apps", "denied", "www.denied.example.com", "", "plain", ""),
	}, "---\n"))
	env := map[string]string{"ROUTER_DENIED_DOMAINS": "denied.example.com", "ROUTER_MAX_CONNECTIONS": "4000"}
	r := startRouter(t, m.Dir, env)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("www.example.com", "/other/x") }, "other")
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("edge.example.com", "/") }, "plain")
	expectStatus(t, loadTimeout, func() (response, error) { return r.httpGet("www.denied.example.com", "/") }, 503)

	renderEnv := map[string]string{
		"ROUTER_SERVICE_HTTP_PORT": fmt.Sprint(r.HTTPPort), "ROUTER_SERVICE_HTTPS_PORT": fmt.Sprint(r.HTTPSPort),
		// The router runs in metrics mode (the framework's default):
		// no HAProxy stats listener.
		"ROUTER_METRICS_TYPE": "haproxy", "ROUTER_LISTEN_ADDR": "127.0.0.1:1",
	}
	for k, v := range env {
		renderEnv[k] = v
	}
	var stdout, stderr string
	eventually(t, 10*time.Second, "render writes what the router wrote", func() error {
		out := t.TempDir()
		var err error
		stdout, stderr, err = cli(t, renderEnv, "render", "--manifests", m.Dir, "--working-dir", r.WorkingDir, "--output-dir", out)
		if err != nil {
			t.Fatalf("render: %v\n%s", err, stderr)
		}
		routerFiles := generatedFiles(t, r.WorkingDir)
		if !bytes.Equal([]byte(stdout), routerFiles["conf/haproxy.config"]) {
			return fmt.Errorf("render's stdout differs from the router's haproxy.config")
		}
		return sameFiles(routerFiles, generatedFiles(t, out))
	})
	if !strings.Contains(stdout, "backend be_edge_http:apps:edge") || !strings.Contains(stdout, "maxconn 4000") {
		t.Errorf("rendered configuration lacks the edge backend or maxconn:\n%s", stdout)
	}
	for _, want := range []string{
		filepath.Join(r.WorkingDir, "conf", "route_http.map"),
		filepath.Join(r.WorkingDir, "router", "certs", "apps:edge.pem"),
		"# routes: 5 admitted, 1 rejected",
		"# rejected apps/denied",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("render's listing lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRenderAndCheckErrors: bad input is a clear error and a non-zero exit.
func TestRenderAndCheckErrors(t *testing.T) {
	m := newManifests(t)
	m.Write("route.yaml", routeYAML("apps", "web", "web.example.com", "", "web", ""))
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	const head = "{{ define \"/var/lib/haproxy/conf/haproxy.config\" }}\nglobal\n"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no manifests", []string{"render"}, []string{"--manifests DIR is required"}},
		{"missing manifests dir", []string{"render", "--manifests", filepath.Join(dir, "nope")}, []string{"manifests directory", "no such file"}},
		{"missing template", []string{"check", "--manifests", m.Dir, "--template", filepath.Join(dir, "nope.template")}, []string{"TEMPLATE_FILE", "nope.template"}},
		{"template syntax error names the line", []string{"check", "--manifests", m.Dir, "--template",
			write("syntax.template", head+"  maxconn 10\n{{ if }}\n{{ end }}\n")}, []string{"syntax.template:4"}},
		{"template execution error names the line", []string{"render", "--manifests", m.Dir, "--template",
			write("exec.template", head+"\n\n  {{ index .State 1 }}\n{{ end }}\n")}, []string{"exec.template:5"}},
		{"haproxy refuses the configuration", []string{"check", "--manifests", m.Dir, "--template",
			write("refused.template", head+"  no-such-keyword\n{{ end }}\n")}, []string{"haproxy -c output", "no-such-keyword", "[ALERT]"}},
		{"bad environment variable", []string{"render", "--manifests", m.Dir}, []string{"ROUTE_LABELS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			if tc.name == "bad environment variable" {
				// One OpenShift's router refuses too (a malformed
				// RELOAD_INTERVAL it ignores, with the default).
				env["ROUTE_LABELS"] = "a in ("
			}
			stdout, stderr, err := cli(t, env, tc.args...)
			if err == nil {
				t.Fatalf("exit 0; stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestCheckDefaultTemplate: check passes on the default template, with
// every route type, and keeps the files with --keep.
func TestCheckDefaultTemplate(t *testing.T) {
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("apps", "web", startBackend(t, "web")))
	m.Write("routes.yaml", routeYAML("apps", "web", "web.example.com", "", "web", "")+"---\n"+
		routeYAML("apps", "edge", "edge.example.com", "", "web", tlsYAML("edge", "Allow", nil))+"---\n"+
		routeYAML("apps", "pt", "pt.example.com", "", "web", tlsYAML("passthrough", "", nil)))
	keep := shortTempDir(t, "chk")
	stdout, stderr, err := cli(t, nil, "check", "--manifests", m.Dir, "--keep", keep)
	if err != nil {
		t.Fatalf("check: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "configuration valid") || !strings.Contains(stdout, "3 routes admitted") {
		t.Errorf("stdout %q", stdout)
	}
	cfg, err := os.ReadFile(filepath.Join(keep, "conf", "haproxy.config"))
	must(t, err)
	if !strings.Contains(string(cfg), "backend be_http:apps:web") || !strings.Contains(string(cfg), keep+"/conf/") {
		t.Errorf("kept configuration:\n%s", cfg)
	}
}

// TestTemplateDefaultPrintsTheEmbeddedTemplate: the starting point of a
// custom template is the embedded one, which is the repository's file.
func TestTemplateDefaultPrintsTheEmbeddedTemplate(t *testing.T) {
	stdout, stderr, err := cli(t, nil, "template", "default")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	file, err := os.ReadFile("../../templates/haproxy-config.template")
	must(t, err)
	if stdout != templates.Default() || stdout != string(file) {
		t.Errorf("template default prints %d bytes; embedded %d, file %d", len(stdout), len(templates.Default()), len(file))
	}
}

// docBlock returns the fenced code block that follows the HTML comment
// marker in docs/custom-templates.md.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(marker) + " -->\\s*```[a-z]*\n(.*?)```")
	m := re.FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/custom-templates.md: no code block after <!-- %s -->", marker)
	}
	return m[1]
}

// TestCustomTemplateDocExample follows docs/custom-templates.md's worked
// example: start from "template default", insert the documented lines after
// the documented anchor, check it, render it, and run the router with it:
// the annotated route's responses carry the header, others do not.
func TestCustomTemplateDocExample(t *testing.T) {
	docBytes, err := os.ReadFile("../../docs/custom-templates.md")
	must(t, err)
	doc := string(docBytes)
	anchor := strings.TrimRight(docBlock(t, doc, "example-anchor"), "\n")
	snippet := docBlock(t, doc, "example-snippet")
	route := docBlock(t, doc, "example-route")
	wantLine := strings.TrimSpace(docBlock(t, doc, "example-rendered"))

	def, _, err := cli(t, nil, "template", "default")
	must(t, err)
	if strings.Count(def, anchor+"\n") != 1 {
		t.Fatalf("the documented anchor line %q is not exactly once in the default template", anchor)
	}
	custom := strings.Replace(def, anchor+"\n", anchor+"\n"+snippet, 1)
	tmpl := filepath.Join(t.TempDir(), "haproxy-config.template")
	must(t, os.WriteFile(tmpl, []byte(custom), 0o644))

	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("demo", "web", startBackend(t, "web")))
	m.Write("route.yaml", route+"---\n"+routeYAML("demo", "plain", "plain.example.com", "", "web", ""))
	// A hostile value: a sample fetch that would read the router's
	// environment if it were evaluated.
	m.Write("leak.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: leak\n  namespace: demo\n  annotations:\n    example.com/robots-tag: \"x %[env(ROUTER_TEST_SECRET)] \\\"q\\\" # y\"\nspec:\n  host: leak.example.com\n  to:\n    kind: Service\n    name: web\n")

	if stdout, stderr, err := cli(t, nil, "check", "--manifests", m.Dir, "--template", tmpl); err != nil {
		t.Fatalf("check of the documented example: %v\n%s%s", err, stdout, stderr)
	}
	stdout, stderr, err := cli(t, nil, "render", "--manifests", m.Dir, "--template", tmpl)
	if err != nil {
		t.Fatalf("render: %v\n%s", err, stderr)
	}
	if strings.Count(stdout, wantLine) != 1 {
		t.Errorf("rendered configuration has %d lines %q, want 1:\n%s", strings.Count(stdout, wantLine), wantLine, stdout)
	}

	r := startRouter(t, m.Dir, map[string]string{"ROUTER_TEST_SECRET": "hunter2"}, "--template", tmpl)
	resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("web.example.com", "/") }, "web")
	if got := resp.Header.Get("X-Robots-Tag"); got != "noindex, nofollow" {
		t.Errorf("X-Robots-Tag %q on the annotated route", got)
	}
	resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("plain.example.com", "/") }, "web")
	if got := resp.Header.Get("X-Robots-Tag"); got != "" {
		t.Errorf("X-Robots-Tag %q on a route without the annotation", got)
	}
	resp = expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("leak.example.com", "/") }, "web")
	if got, want := resp.Header.Get("X-Robots-Tag"), `x %[env(ROUTER_TEST_SECRET)] "q" # y`; got != want {
		t.Errorf("hostile annotation: X-Robots-Tag %q, want it verbatim %q", got, want)
	}
}
