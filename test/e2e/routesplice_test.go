package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/templates"
)

// Log messages of the controller (router/controller/controller.go,
// passRoutes) that tell how a change of routes added or removed was worked
// out: spliced into the last configuration by pipeline.UpdateRoutes (V(1)),
// or by the full pass, with the reason (V(2), logged when the reason
// changes). No metric tells the two apart: both reload with reason
// "config".
const (
	logSpliced  = "route changes worked out without a full render"
	logFullPass = "route change needs a full pass"
)

// TestRoutesAddedOrRemovedAreSplicedAndReloaded: with enough routes for
// the router to render a route alone (pipeline.probeRoute needs one that
// is neither first nor last), a route added (with its Service and
// EndpointSlice) and another removed are worked out by
// pipeline.UpdateRoutes — the changed routes rendered alone and spliced
// into the previous haproxy.config, no full render — and HAProxy is
// reloaded with that configuration: the new route answers from its
// backend, the removed one gets 503, the others still answer, and what is
// on disk is byte for byte what `openshift-router render` writes for the
// same manifests and environment.
//
// The negative control runs the same change with a template whose text
// outside the routes' sections depends on them (a comment counting the
// routes in the global section): the router must log the full pass
// (template-not-per-route) and never the splice — so the log assertion
// of the first case tells the two paths apart, and would fail if the
// full pass had served the change there.
func TestRoutesAddedOrRemovedAreSplicedAndReloaded(t *testing.T) {
	t.Run("default template: spliced", func(t *testing.T) {
		routeSpliceScenario(t, "", true)
	})
	t.Run("routes counted outside their sections: full pass", func(t *testing.T) {
		routeSpliceScenario(t, routeCountingTemplate(t), false)
	})
}

// routeCountingTemplate is the default template with a comment in the
// global section that counts the routes: every route added or removed
// changes text outside the routes' sections, which the splice cannot
// keep.
func routeCountingTemplate(t *testing.T) string {
	t.Helper()
	def := templates.Default()
	marker := "\nglobal\n"
	if !strings.Contains(def, marker) {
		t.Fatal("default template changed: update routeCountingTemplate")
	}
	custom := strings.Replace(def, marker, "\n# routes: {{ len .State }}\nglobal\n", 1)
	path := filepath.Join(t.TempDir(), "counting.template")
	must(t, os.WriteFile(path, []byte(custom), 0o644))
	return path
}

// routeSpliceScenario runs the change with the template (the default
// one for "") and checks which path the router took (spliced: the
// UpdateRoutes path, else the full pass).
func routeSpliceScenario(t *testing.T, template string, spliced bool) {
	const ns = "splice"
	const nRoutes = 8
	const removed = 3 // r-3: neither first nor last, so not the only probe
	var bes []*backend
	for i := 0; i < 3; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("b-%d", i)))
	}
	fresh := startBackend(t, "fresh")
	host := func(name string) string { return name + "." + ns + ".example.com" }
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		serviceYAML(ns, "svc-0", bes[0]), serviceYAML(ns, "svc-1", bes[1]), serviceYAML(ns, "svc-2", bes[2]),
	}, "---\n"))
	for i := 0; i < nRoutes; i++ {
		name := fmt.Sprintf("r-%d", i)
		m.Write(name+".yaml", routeYAML(ns, name, host(name), "", fmt.Sprintf("svc-%d", i%3), ""))
	}

	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "1s"
	var args []string
	if template != "" {
		args = append(args, "--template", template)
	}
	r := startRouter(t, m.Dir, env, args...)
	get := func(name string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host(name), "/") }
	}
	for i := 0; i < nRoutes; i++ {
		expectBackend(t, loadTimeout, get(fmt.Sprintf("r-%d", i)), fmt.Sprintf("b-%d", i%3))
	}
	expectStatus(t, loadTimeout, get("added"), 503)
	waitReady(t, ms)
	// The start-up pass is a full one (no last pass to work from); what
	// follows the mark is the change's.
	mark := len(r.Log())
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)

	// One route added with its own Service and EndpointSlice, one
	// removed. The router may see them in one pass or two; either way
	// each must take the same path.
	m.Write("added.yaml", serviceYAML(ns, "fresh", fresh)+"---\n"+annotatedRouteYAML(ns, "added", host("added"), "", "fresh", "",
		map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}))
	m.Remove(fmt.Sprintf("r-%d.yaml", removed))

	expectBackend(t, 30*time.Second, get("added"), "fresh")
	expectStatus(t, 30*time.Second, get(fmt.Sprintf("r-%d", removed)), 503)
	for i := 0; i < nRoutes; i++ {
		if i != removed {
			expectBackend(t, 10*time.Second, get(fmt.Sprintf("r-%d", i)), fmt.Sprintf("b-%d", i%3))
		}
	}

	// HAProxy was reloaded: a backend came that no backend it runs can
	// stand for (no other route has its balance).
	eventually(t, 10*time.Second, "a reload after the change", func() error {
		s, err := ms.get()
		if err != nil {
			return err
		}
		if v, err := s.value("template_router_reload_seconds_count", nil); err != nil || v < reloads0+1 {
			return fmt.Errorf("reloads %v (before the change %v) %v", v, reloads0, err)
		}
		if v, err := s.value("template_router_reloads_total", map[string]string{"reason": "backends"}); err != nil || v < 1 {
			return fmt.Errorf("reloads for reason backends: %v %v", v, err)
		}
		return nil
	})

	// What is on disk (and, from the requests above, what HAProxy runs)
	// is what a full render of the same manifests writes.
	onDisk := expectRenderWritesTheSame(t, r, m.Dir, env, args...)
	configPath := filepath.Join(r.WorkingDir, "conf", "haproxy.config")
	if !bytes.Contains(onDisk, []byte("backend be_http:"+ns+":added\n")) {
		t.Errorf("%s lacks the added route's backend", configPath)
	}
	if bytes.Contains(onDisk, []byte(fmt.Sprintf(":%s:r-%d\n", ns, removed))) {
		t.Errorf("%s still has the removed route's backend", configPath)
	}

	// Which path the change took, from the log since the mark: every
	// reload ("configuration loaded") must follow, since the one before,
	// a line saying the route changes were worked out without a full
	// render (spliced), or none (the full pass) — and the full pass's
	// reason must be the template's. Only the reasons that UpdateRoutes
	// gives for a change that adds or removes backends count as evidence
	// here ("no-backend-added-or-removed" may be logged, with no reload,
	// should the router look between the manifests source's upserts of
	// the new Service and of its Route).
	var since string
	eventually(t, 10*time.Second, "the reload of 8 routes logged", func() error {
		since = r.Log()[mark:]
		i := strings.LastIndex(since, `"configuration loaded"`)
		if i < 0 {
			return fmt.Errorf("no configuration loaded since the change")
		}
		if l, _, _ := strings.Cut(since[i:], "\n"); !strings.Contains(l, fmt.Sprintf(" routes=%d ", nRoutes)) {
			return fmt.Errorf("last load: %s", l)
		}
		return nil
	})
	loads, splicedLoads, splices := 0, 0, 0
	var fulls []string
	pending := false
	for _, l := range strings.Split(since, "\n") {
		switch {
		case strings.Contains(l, logSpliced):
			splices++
			pending = true
		case strings.Contains(l, logFullPass):
			fulls = append(fulls, l[strings.Index(l, logFullPass):])
		case strings.Contains(l, `"configuration loaded"`):
			loads++
			if pending {
				splicedLoads++
			}
			pending = false
		}
	}
	routeReasons := regexp.MustCompile(`reason="(template-not-per-route|many-routes|no-unchanged-route-to-probe)"`)
	routeFulls := routeReasons.FindAllString(strings.Join(fulls, "\n"), -1)
	t.Logf("since the change: %d reloads, %d of them spliced (%d splices); full pass lines %q", loads, splicedLoads, splices, fulls)
	if loads == 0 {
		t.Fatalf("no configuration loaded since the change; log since the change:\n%s", since)
	}
	if spliced {
		if splicedLoads != loads || len(routeFulls) > 0 {
			t.Errorf("the change was not (only) worked out by UpdateRoutes: %d of %d reloads spliced, full pass %q; log since the change:\n%s",
				splicedLoads, loads, fulls, since)
		}
	} else {
		if splices > 0 || len(routeFulls) == 0 || routeFulls[0] != `reason="template-not-per-route"` {
			t.Errorf("the change was not worked out by the full pass (template-not-per-route): %d splices, full pass %q; log since the change:\n%s",
				splices, fulls, since)
		}
	}
}

// expectRenderWritesTheSame waits until `openshift-router render` of the
// manifests in dir, with the router's environment and arguments, writes
// what router r has in its working directory (haproxy.config and every
// other generated file), and returns r's haproxy.config.
func expectRenderWritesTheSame(t *testing.T, r *router, dir string, env map[string]string, args ...string) []byte {
	t.Helper()
	renderEnv := map[string]string{
		"ROUTER_SERVICE_HTTP_PORT": fmt.Sprint(r.HTTPPort), "ROUTER_SERVICE_HTTPS_PORT": fmt.Sprint(r.HTTPSPort),
		"ROUTER_METRICS_TYPE": "haproxy",
	}
	for k, v := range env {
		renderEnv[k] = v
	}
	renderArgs := append([]string{"render", "--manifests", dir, "--working-dir", r.WorkingDir}, args...)
	var onDisk []byte
	eventually(t, 10*time.Second, "render writes what the router wrote", func() error {
		out := t.TempDir()
		stdout, stderr, err := cli(t, renderEnv, append(renderArgs, "--output-dir", out)...)
		if err != nil {
			t.Fatalf("render: %v\n%s", err, stderr)
		}
		routerFiles := generatedFiles(t, r.WorkingDir)
		onDisk = routerFiles["conf/haproxy.config"]
		if !bytes.Equal([]byte(stdout), onDisk) {
			return fmt.Errorf("render's stdout differs from the router's haproxy.config:\n%s", firstDifference(onDisk, []byte(stdout)))
		}
		return sameFiles(routerFiles, generatedFiles(t, out))
	})
	return onDisk
}

// firstDifference shows where two texts first differ (a few lines around).
func firstDifference(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		if i < len(al) && i < len(bl) && al[i] == bl[i] {
			continue
		}
		lo := max(0, i-3)
		return fmt.Sprintf("line %d:\n--- router\n%s\n--- render\n%s", i+1,
			strings.Join(al[lo:min(len(al), i+4)], "\n"), strings.Join(bl[lo:min(len(bl), i+4)], "\n"))
	}
	return "(equal)"
}
