package templates

import (
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/test/prereq"
)

// TestSubMillisecondTimeIsTheSameThroughEnvAnnotationAndHelper: "500us"
// gives the same value and the same haproxy.config line whether it comes
// from an environment variable (ROUTER_DEFAULT_SERVER_TIMEOUT), the route's
// haproxy.router.openshift.io/timeout annotation (in timeout_server.map:
// 1 ms) or the clipHAProxyTimeoutValue helper of a custom template —
// written as given,
// as OpenShift does (HAProxy rounds it up to 1ms; see
// syntax.TestHAProxyRoundsSubMillisecondTimesUpNotToZero) — and the real
// haproxy accepts the rendered configuration.
func TestSubMillisecondTimeIsTheSameThroughEnvAnnotationAndHelper(t *testing.T) {
	const v = "500us"
	const line = "\n  timeout server " + v + "\n"
	env := map[string]string{"ROUTER_DEFAULT_SERVER_TIMEOUT": v, "ROUTER_DEFAULT_CONNECT_TIMEOUT": v}
	cfg, err := config.FromEnv(func(k string) (string, bool) { s, ok := env[k]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HAProxy.ServerTimeout != v || cfg.HAProxy.ConnectTimeout != v {
		t.Errorf("env: server %q, connect %q; want %q", cfg.HAProxy.ServerTimeout, cfg.HAProxy.ConnectTimeout, v)
	}

	dir := shortDir(t)
	td := fuzzModel(t, dir, annotatedRoute("sub", "sub.example.com", "", nil, map[string]string{annotations.Timeout: v}))
	td.HAProxy = cfg.HAProxy
	if got := td.State["fuzz:sub"].Settings.Timeout; got != v {
		t.Errorf("annotation: %q, want %q", got, v)
	}
	helper := execHelperTemplate(t, FuncOptions{},
		`{{ with clipHAProxyTimeoutValue (index .Annotations "haproxy.router.openshift.io/timeout") }}`+line+`{{ end }}`,
		td.State["fuzz:sub"])
	if helper != line {
		t.Errorf("helper line %q, want %q", helper, line)
	}
	if got, _, _ := syntax.ClipTimeout(v); got != v {
		t.Errorf("syntax.ClipTimeout(%q) = %q", v, got)
	}

	rendered := renderDefault(t, td, nil)
	global, routes := routeSections(rendered["conf/haproxy.config"])
	if !strings.Contains(global, line) || !strings.Contains(global, "\n  timeout connect "+v+"\n") {
		t.Errorf("defaults section lacks %q and timeout connect %s:\n%s", line, v, global)
	}
	// The route's timeout is in timeout_server.map, in milliseconds
	// rounded up as HAProxy rounds "500us": 1.
	if m := rendered["conf/timeout_server.map"]; !strings.Contains(m, ":fuzz:sub 1\n") || strings.Contains(routes["fuzz/sub"], "timeout server") {
		t.Errorf("timeout_server.map %q, route section:\n%s", m, routes["fuzz/sub"])
	}

	prereq.NeedBinary(t, "haproxy")
	if out, err := haproxyCheckWithCerts(t, td, rendered); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}
