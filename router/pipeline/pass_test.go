package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/templates"
)

func TestFitMaxConnectionsKeepsAQuarterOfTheLimitForServers(t *testing.T) {
	tests := []struct {
		name         string
		limit, want  int
		got, servers int
	}{
		{"fits: kept", 1 << 20, 50000, 50000, 1<<20 - 1000 - 100000},
		{"too many for 20000: lowered to what leaves the quarter", 20000, 50000, 7000, 5000},
		{"tiny limit: never below 100", 1500, 50000, 100, 300},
		{"auto stays auto, servers get the quarter", 20000, 0, 0, 5000},
		{"unknown limit: unchanged, no server limit", 0, 50000, 50000, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FitMaxConnections(tt.limit, tt.want)
			if got != tt.got {
				t.Fatalf("FitMaxConnections(%d, %d) = %d, want %d", tt.limit, tt.want, got, tt.got)
			}
			if s := ServerBudget(tt.limit, got); s != tt.servers {
				t.Fatalf("ServerBudget(%d, %d) = %d, want %d", tt.limit, got, s, tt.servers)
			}
		})
	}
	if s := ServerBudget(1000, 5000); s != 0 {
		t.Fatalf("a maxconn beyond the limit leaves %d servers, want 0", s)
	}
}

func TestRuntimeCulpritNamesTheRouteOfTheRefusedCommand(t *testing.T) {
	cert := files.File{Path: "/w/router/certs/ns-a:edge.pem", Route: model.NewServiceAliasConfigKey("ns-a", "edge")}
	tests := []struct {
		name string
		err  error
		want admission.Key
	}{
		{"set server addr", &dynamic.RefusedError{Command: dynamic.Command{Kind: "addr", Text: "set server be_http:ns-a:web/_dynamic-pod-1 addr 10.0.0.1 port 8080"}, Reply: "Invalid addr"}, "ns-a/web"},
		{"add server", &dynamic.RefusedError{Command: dynamic.Command{Kind: "add", Text: "add server be_secure:ns-b:re.x/_dynamic-pod-2 10.0.0.2:8443 ssl"}, Reply: "error"}, "ns-b/re.x"},
		{"enable health of a tcp backend", fmt.Errorf("wrapped: %w", &dynamic.RefusedError{Command: dynamic.Command{Kind: "state", Text: "enable health be_tcp:ns-c:pt/s1"}, Reply: "Health checks are not configured on this server, cannot enable."}), "ns-c/pt"},
		{"no such server: the router's view is stale", &dynamic.RefusedError{Command: dynamic.Command{Kind: "state", Text: "set server be_http:ns-a:web/s1 state ready"}, Reply: "No such server."}, ""},
		{"unknown command", &dynamic.RefusedError{Command: dynamic.Command{Kind: "add", Text: "add server be_http:ns-a:web/s1 10.0.0.1:80"}, Reply: "Unknown command: 'add server'"}, ""},
		{"certificate of a route", &dynamic.RefusedError{Command: dynamic.Command{Kind: "ssl-set", Text: "set ssl cert /w/router/certs/ns-a:edge.pem"}, Reply: "unable to load"}, "ns-a/edge"},
		{"a backend of no route", &dynamic.RefusedError{Command: dynamic.Command{Kind: "state", Text: "set server be_other/s1 state ready"}, Reply: "No such backend."}, ""},
		{"a command that could not be sent", errors.New("dial unix /w/run/haproxy.sock: connection refused"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cu, ok := RuntimeCulprit(tt.err, []files.File{cert})
			if ok != (tt.want != "") || cu.Route != tt.want {
				t.Fatalf("RuntimeCulprit = %+v %v, want %q", cu, ok, tt.want)
			}
			if ok && !strings.Contains(cu.Message, "runtime API refused") {
				t.Fatalf("message %q", cu.Message)
			}
		})
	}
}

func TestCurrentExclusionsDropChangedAndDeletedRoutes(t *testing.T) {
	route := func(name, rv string, gen int64) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Generation: gen}}
	}
	ex := map[admission.Key]Exclusion{
		"ns/same":     {ResourceVersion: "1", Generation: 1},
		"ns/status":   {ResourceVersion: "1", Generation: 1},
		"ns/spec":     {ResourceVersion: "1", Generation: 1},
		"ns/manifest": {ResourceVersion: "1"},
		"ns/edited":   {ResourceVersion: "1"},
		"ns/deleted":  {ResourceVersion: "1", Generation: 1},
	}
	got := CurrentExclusions(ex, []*routev1.Route{
		route("same", "1", 1), route("status", "2", 1), route("spec", "3", 2), route("manifest", "1", 0), route("edited", "2", 0), route("other", "1", 1),
	})
	want := []admission.Key{"ns/manifest", "ns/same", "ns/status"}
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
	if len(ex) != 6 {
		t.Fatal("the exclusions given were modified")
	}
	if CurrentExclusions(nil, nil) != nil {
		t.Fatal("no exclusions gave some")
	}
}

// TestPassRejectsExcludedRoutesAndRendersTheRest: a pass takes the
// exclusions as input, rejects those routes with their result and renders
// the others; NoRoutes renders the configuration with no route at all.
func TestPassRejectsExcludedRoutesAndRendersTheRest(t *testing.T) {
	good := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "good", Name: "web", ResourceVersion: "1"},
		Spec: routev1.RouteSpec{Host: "web.good.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	bad := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "bad", Name: "web", ResourceVersion: "1"},
		Spec: routev1.RouteSpec{Host: "web.bad.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	st := tenantStore(good, bad)
	in := tenantInputs(t, t.TempDir())
	excluded := admission.Result{Host: "web.bad.example.com", Reason: admission.ReasonConfigCheckFailed, Message: "refused"}
	out, err := Pass(st, in, State{Exclusions: map[admission.Key]Exclusion{"bad/web": {ResourceVersion: "1", Result: excluded}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Decision.Results["bad/web"]; r.Admitted || r.Reason != admission.ReasonConfigCheckFailed {
		t.Fatalf("bad/web: %+v", r)
	}
	if !out.Decision.Results["good/web"].Admitted || len(out.Exclusions) != 1 {
		t.Fatalf("good/web %+v, exclusions %v", out.Decision.Results["good/web"], out.Exclusions)
	}
	if cfg := string(out.Config); !strings.Contains(cfg, "be_http:good:web") || strings.Contains(cfg, "be_http:bad:web") {
		t.Fatal("the configuration should serve good/web only")
	}
	if out.ConfigPath != templates.OutputPath(in.Build.WorkingDir, templates.ConfigTemplateName) || out.Budget.Servers != -1 {
		t.Fatalf("config path %s, budget %+v", out.ConfigPath, out.Budget)
	}

	empty, err := Pass(st, in, State{NoRoutes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Decision.Results) != 0 || strings.Contains(string(empty.Config), "be_http:good:web") {
		t.Fatal("NoRoutes rendered routes")
	}
}
