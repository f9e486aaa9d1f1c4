package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigBudgetKeepsOneTenantFromSlowingEveryone: a tenant with 20
// routes of 40 header actions of 16 KiB values (valid: the Route API's
// limits; 13 MB of haproxy.config) under ROUTER_MAX_CONFIG_BYTES=4Mi keeps
// the routes that fit in its namespace's share and the others are
// rejected, each with its reason in the log; the other tenant is served
// and haproxy.config stays under the budget.
func TestConfigBudgetKeepsOneTenantFromSlowingEveryone(t *testing.T) {
	const budget = 4 << 20
	bigBE, smallBE := startBackend(t, "big"), startBackend(t, "small")
	m := newManifests(t)
	m.Write("small.yaml", serviceYAML("small", "app", smallBE)+"---\n"+
		routeYAML("small", "app", "app.small.example.com", "", "app", headerActionsYAML(setAction("X-Frame-Options", "DENY"), setAction("X-Served-By", "small"))))
	m.Write("big-svc.yaml", serviceYAML("big", "app", bigBE))
	value := strings.Repeat("v", 16384)
	var request, respActions strings.Builder
	for i := 0; i < 20; i++ {
		request.WriteString(setAction(fmt.Sprintf("X-Req-%02d", i), value))
		respActions.WriteString(setAction(fmt.Sprintf("X-Resp-%02d", i), value))
	}
	actions := headerActionsYAML(request.String(), respActions.String())
	for i := 0; i < 20; i++ {
		// Created one after the other: of equal sizes the younger go first.
		created := time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC).Format(time.RFC3339)
		y := routeYAML("big", fmt.Sprintf("r%02d", i), fmt.Sprintf("r%02d.big.example.com", i), "", "app", actions)
		y = strings.Replace(y, "  namespace: big\n", "  namespace: big\n  creationTimestamp: \""+created+"\"\n", 1)
		m.Write(fmt.Sprintf("big-%02d.yaml", i), y)
	}
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_MAX_CONFIG_BYTES": "4Mi"})

	expectBackend(t, 2*loadTimeout, func() (response, error) { return r.httpGet("app.small.example.com", "/") }, "small")
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	// An admitted big route has its backend (HAProxy answers 500 there:
	// 640 KiB of header values do not fit in its buffers, as with
	// OpenShift's router); a rejected one has none (503).
	for i := 0; i < 20; i++ {
		host := fmt.Sprintf("r%02d.big.example.com", i)
		resp, err := r.httpGet(host, "/")
		must(t, err)
		admitted := i < 6
		if (resp.Status != 503) != admitted || strings.Contains(string(config), fmt.Sprintf("backend be_http:big:r%02d\n", i)) != admitted {
			t.Errorf("%s: status %d, want a backend only if among the 6 oldest routes", host, resp.Status)
		}
	}
	for i := 6; i < 20; i++ {
		expectLogLine(t, r, `"route rejected"`, fmt.Sprintf(`route="big/r%02d"`, i), `reason="ConfigBudgetExceeded"`,
			"does not fit in the router's configuration size budget for its namespace")
	}
	if strings.Contains(r.Log(), `route="small/app" host="app.small.example.com" reason=`) {
		t.Error("the other tenant's route was rejected")
	}
	if len(config) > budget {
		t.Errorf("haproxy.config has %d bytes, over the budget of %d", len(config), budget)
	}
	t.Logf("haproxy.config: %d bytes", len(config))
}
