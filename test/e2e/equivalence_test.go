package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

// TestRandomEndpointChangesServeWhatAFreshStartServes: after a random
// sequence of endpoint changes (scale-ups beyond the spare slots, scale
// downs to none, moves), applied through the runtime API without a reload,
// HAProxy serves what a router started afresh on the same manifests
// serves: the same servers in service with the same weights, every
// endpoint reached, and the same sticky cookie pinning a client to the
// same endpoint. A reload in between (every backend laid out afresh)
// changes none of it.
func TestRandomEndpointChangesServeWhatAFreshStartServes(t *testing.T) {
	rng := seededRand(t)
	var bes []*backend
	for i := 1; i <= 6; i++ {
		bes = append(bes, startBackend(t, fmt.Sprintf("eq-%d", i)))
	}
	// Two routes: one without spare slots (the default: every endpoint
	// beyond those loaded is added at runtime), one with a slot.
	routes := []struct{ name, host, service, extra string }{
		{"plain", "plain.eq.example.com", "a", ""},
		{"slotted", "slotted.eq.example.com", "b", "router.openshift.io/pool-size: \"1\""},
	}
	m := newManifests(t)
	pick := func() []*backend {
		var out []*backend
		for _, i := range rng.Perm(len(bes))[:rng.Intn(len(bes)+1)] {
			out = append(out, bes[i])
		}
		return out
	}
	current := map[string][]*backend{}
	write := func() {
		for _, rt := range routes {
			m.Write(rt.service+".yaml", serviceYAML("eq", rt.service, current[rt.service]...))
		}
	}
	for _, rt := range routes {
		current[rt.service] = bes[:1]
		y := routeYAML("eq", rt.name, rt.host, "", rt.service, "")
		if rt.extra != "" {
			y = strings.Replace(y, "  namespace: eq\n", "  namespace: eq\n  annotations:\n    "+rt.extra+"\n", 1)
		}
		m.Write(rt.name+".yaml", y)
	}
	write()
	env, ms := metricsEnv(t)
	env["RELOAD_INTERVAL"] = "60s" // anything faster is the runtime API
	r := startRouter(t, m.Dir, env)
	for _, rt := range routes {
		expectExactly(t, loadTimeout, r, rt.host, "eq-1")
	}
	waitReady(t, ms)
	reloads0 := ms.mustValue(t, "template_router_reload_seconds_count", nil)

	for step := 0; step < 10; step++ {
		for _, rt := range routes {
			current[rt.service] = pick()
		}
		write()
		for _, rt := range routes {
			if want := backendNames(current[rt.service]); len(want) > 0 {
				expectExactly(t, 30*time.Second, r, rt.host, want...)
			}
			runsWhatDiskSays(t, r, "be_http:eq:"+rt.name)
		}
	}
	if reloads := ms.mustValue(t, "template_router_reload_seconds_count", nil); reloads != reloads0 {
		t.Errorf("reloads %v, were %v: endpoint changes need none", reloads, reloads0)
	}

	// Every route with an endpoint, so cookies can be compared.
	for _, rt := range routes {
		if len(current[rt.service]) == 0 {
			current[rt.service] = pick()
			for len(current[rt.service]) == 0 {
				current[rt.service] = pick()
			}
			write()
			expectExactly(t, 30*time.Second, r, rt.host, backendNames(current[rt.service])...)
		}
	}
	// A reload now (compaction: every backend laid out afresh) changes
	// nothing that is served.
	before := map[string][]string{}
	cookies := map[string]map[string]string{}
	for _, rt := range routes {
		backendName := "be_http:eq:" + rt.name
		runsWhatDiskSays(t, r, backendName)
		before[rt.name] = inService(t, r, backendName)
		cookies[rt.name] = stickyCookies(t, r, rt.host, backendNames(current[rt.service])...)
	}
	reloads1 := ms.mustValue(t, "template_router_reload_seconds_count", nil)
	// (A route of a backend shape HAProxy runs no free backend of: a
	// balance no other route has.)
	m.Write("extra.yaml", annotatedRouteYAML("eq", "extra", "extra.eq.example.com", "", "a", "",
		map[string]string{"haproxy.router.openshift.io/balance": "leastconn"}))
	eventually(t, 90*time.Second, "a reload", func() error {
		if v := ms.mustValue(t, "template_router_reload_seconds_count", nil); v <= reloads1 {
			return fmt.Errorf("reloads %v", v)
		}
		return nil
	})
	for _, rt := range routes {
		backendName := "be_http:eq:" + rt.name
		expectExactly(t, 30*time.Second, r, rt.host, backendNames(current[rt.service])...)
		if got := inService(t, r, backendName); !reflect.DeepEqual(got, before[rt.name]) {
			t.Errorf("%s: in service after the reload %v, before %v", rt.name, got, before[rt.name])
		}
		for be, cookie := range cookies[rt.name] {
			if resp, err := doRequestWithCookie(r, rt.host, cookie); err != nil || resp.backend() != be {
				t.Errorf("%s: after the reload cookie %q reached %q (%v), want %s", rt.name, cookie, resp.backend(), err, be)
			}
		}
	}

	fresh := startRouter(t, m.Dir, nil)
	for _, rt := range routes {
		want := backendNames(current[rt.service])
		expectExactly(t, loadTimeout, fresh, rt.host, want...)
		backendName := "be_http:eq:" + rt.name
		runsWhatDiskSays(t, r, backendName)
		if got, want := inService(t, r, backendName), inService(t, fresh, backendName); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: in service after the changes %v, after a fresh start %v", rt.name, got, want)
		}
		changed, started := stickyCookies(t, r, rt.host, want...), stickyCookies(t, fresh, rt.host, want...)
		if !reflect.DeepEqual(changed, started) {
			t.Errorf("%s: cookies after the changes %v, after a fresh start %v", rt.name, changed, started)
		}
	}
}

// seededRand is a random source seeded from ROUTER_TEST_SEED, or the
// clock; the seed is logged, so a failing run can be repeated.
func seededRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	if v := os.Getenv("ROUTER_TEST_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		must(t, err)
		seed = n
	}
	t.Logf("seed %d (ROUTER_TEST_SEED repeats it)", seed)
	return rand.New(rand.NewSource(seed))
}

// inService lists the servers of backend HAProxy has in service, as
// "address weight", sorted (names differ: a fresh start gives endpoints
// lines of their own instead of spare slots).
func inService(t *testing.T, r *router, backend string) []string {
	t.Helper()
	c := &runtimeapi.Client{Path: filepath.Join(r.WorkingDir, "run", "haproxy.sock")}
	out, err := c.Exec(context.Background(), "show stat")
	must(t, err)
	lines := strings.Split(out, "\n")
	cols := map[string]int{}
	for i, c := range strings.Split(strings.TrimPrefix(lines[0], "# "), ",") {
		cols[c] = i
	}
	var got []string
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) < len(cols) || f[cols["pxname"]] != backend || f[cols["svname"]] == "BACKEND" || strings.HasPrefix(f[cols["status"]], "MAINT") {
			continue
		}
		got = append(got, f[cols["addr"]]+" "+f[cols["weight"]])
	}
	sort.Strings(got)
	return got
}
