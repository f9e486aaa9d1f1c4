package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/freeport"
	"github.com/openshift-router-go/router/test/prereq"
)

// planModel returns a model with, per namespace, routes of the given
// endpoint counts and pool-size annotations (-1: none).
func planModel(routes map[string][][2]int) *model.TemplateData {
	td := &model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}}
	for ns, rs := range routes {
		for i, r := range rs {
			cfg := model.ServiceAliasConfig{Namespace: ns, Name: fmt.Sprintf("r%d", i), EndpointTable: endpointTable(ns, r[0])}
			if r[1] >= 0 {
				n := r[1]
				cfg.Settings = annotations.Route{PoolSize: &n}
			}
			td.State[model.NewServiceAliasConfigKey(ns, cfg.Name)] = cfg
		}
	}
	return td
}

// endpointTable is a route's endpoint table with n endpoints of service
// svc of ns.
func endpointTable(ns string, n int) map[model.ServiceUnitKey][]model.Endpoint {
	return map[model.ServiceUnitKey][]model.Endpoint{model.NewServiceUnitKey(ns, "svc"): make([]model.Endpoint, n)}
}

// TestBudgetCountsTheEndpointLinesRendered: the endpoints of a weight-0
// alternate backend have (checked) server lines too, and are counted.
func TestBudgetCountsTheEndpointLinesRendered(t *testing.T) {
	td := &model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{"a:r": {Namespace: "a", Name: "r",
		ActiveEndpoints: 1, EndpointTable: map[model.ServiceUnitKey][]model.Endpoint{
			"a/live": make([]model.Endpoint, 1), "a/idle-alternate": make([]model.Endpoint, 40)}}}}
	if p := planSlots(td, 0, 30); !reflect.DeepEqual(p.unchecked, []model.ServiceAliasConfigKey{"a:r"}) || p.demand != 41 {
		t.Fatalf("41 endpoint lines under a budget of 30: unchecked %v, demand %d", p.unchecked, p.demand)
	}
}

func TestPlanSlots(t *testing.T) {
	greedy := make([][2]int, 85)
	for i := range greedy {
		greedy[i] = [2]int{2, 256}
	}
	tests := []struct {
		name   string
		routes map[string][][2]int
		want   int // router-wide default
		budget int
		check  func(t *testing.T, p slotPlan)
	}{
		{"no limit: what is asked, capped per route, all checked", map[string][][2]int{"a": {{2, 256}, {2, -1}}}, 5, -1, func(t *testing.T, p slotPlan) {
			if p.pools["a:r0"] != MaxSlotsPerRoute || p.pools["a:r1"] != 5 || p.capped != 1 || p.checked != nil {
				t.Fatalf("%+v", p)
			}
		}},
		{"a namespace asking for many slots gets fewer checks itself; others keep theirs", map[string][][2]int{"greedy": greedy, "b": {{2, -1}, {3, -1}}}, 5, 2000, func(t *testing.T, p slotPlan) {
			if p.pools["b:r0"] != 5 || p.pools["b:r1"] != 5 || p.checked["b:r0"] != 5 || p.checked["b:r1"] != 5 {
				t.Errorf("the other namespace lost slots or checks: pools %v %v checked %v %v", p.pools["b:r0"], p.pools["b:r1"], p.checked["b:r0"], p.checked["b:r1"])
			}
			total := 0
			for k, n := range p.checked {
				if strings.HasPrefix(string(k), "greedy:") {
					total += n + 2
					if p.pools[k] != MaxSlotsPerRoute {
						t.Errorf("%s got %d slots, want all it asks for (%d)", k, p.pools[k], MaxSlotsPerRoute)
					}
				}
			}
			if total > 2000-15 || total < 2000-15-85 || p.short != 85 || len(p.unchecked) != 0 {
				t.Errorf("greedy uses %d checked server lines of 2000-15, %d routes short, unchecked endpoints %v", total, p.short, p.unchecked)
			}
		}},
		{"endpoints beyond the namespace's share leave its largest route unchecked", map[string][][2]int{"huge": {{19000, -1}, {2, -1}}, "b": {{2, -1}}}, 5, 1000, func(t *testing.T, p slotPlan) {
			if !reflect.DeepEqual(p.unchecked, []model.ServiceAliasConfigKey{"huge:r0"}) {
				t.Errorf("unchecked %v, want huge:r0", p.unchecked)
			}
			if p.pools["huge:r0"] != 5 {
				t.Errorf("the unchecked route lost its slots: %v", p.pools)
			}
			if p.pools["b:r0"] != 5 || p.pools["huge:r1"] != 5 || p.checked["b:r0"] != 5 {
				t.Errorf("pools %v checked %v", p.pools, p.checked)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, planSlots(planModel(tt.routes), tt.want, tt.budget))
		})
	}
}

func TestReadFDNeed(t *testing.T) {
	cfg := []byte("global\n  maxconn 7000\n\ndefaults\n  maxconn 20\n\nbackend be_http:ns:a\n  server a1 1.2.3.4:80 check inter 5s\n  server a2 1.2.3.5:80 check disabled\n\nbackend be_tcp:ns:b\n  server b 1.2.3.6:80\n\nbackend other\n  server o 1.2.3.7:80 check\n")
	need := readFDNeed(cfg)
	if need.maxconn != 7000 || need.checked != 3 || !reflect.DeepEqual(need.byRoute, map[admission.Key]int{"ns/a": 2}) || need.lenient {
		t.Fatalf("%+v", need)
	}
	// "no strict-limits" (OpenShift's template): HAProxy starts anyway,
	// with a warning, when it cannot raise its limit.
	if _, err := Preflight(cfg, 1000); err == nil {
		t.Fatal("maxconn 7000 under a 1000 limit passed the preflight")
	}
	lenient := append([]byte("global\n  no strict-limits\n"), cfg[len("global\n"):]...)
	if need := readFDNeed(lenient); !need.lenient {
		t.Fatal("no strict-limits not seen")
	}
	if _, err := Preflight(lenient, 1000); err != nil {
		t.Fatalf("no strict-limits: %v", err)
	}
}

// TestSpareSlotsFitTheOpenFilesLimit is the second input of issue 13 with
// the real haproxy started under the limit: 85 routes of one namespace
// asking for 256 spare slots each and one service with 19000 endpoints in
// another, under a 20000 open-files limit. Before, the router lowered
// maxconn for everybody to 100 and haproxy refused to start ("Cannot
// raise FD limit"); now maxconn stays, another namespace's route keeps its
// slots and checks, the service with too many endpoints is served by 1,000
// of them (router/servers), every route is served — what the budget cannot
// check is rendered without health checks — and haproxy starts.
func TestSpareSlotsFitTheOpenFilesLimit(t *testing.T) {
	prereq.NeedBinary(t, "haproxy")
	const fdLimit, maxconn = 20000, 7000 // what cmd/openshift-router picks for 20000
	var routes []*routev1.Route
	for i := 0; i < 85; i++ {
		routes = append(routes, &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "greedy", Name: fmt.Sprintf("r%d", i), ResourceVersion: "1",
			Annotations: map[string]string{annotations.PoolSize: "256"}},
			Spec: routev1.RouteSpec{Host: fmt.Sprintf("r%d.greedy.example.com", i), To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}})
	}
	polite := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "polite", Name: "web", ResourceVersion: "1"},
		Spec: routev1.RouteSpec{Host: "web.polite.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	huge := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "huge", Name: "many", ResourceVersion: "1"},
		Spec: routev1.RouteSpec{Host: "many.huge.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "big"}}}
	// Five more routes of the same namespace, 1,000 endpoints each: the
	// namespace then needs more server lines than the budget holds.
	var more []*routev1.Route
	for i := 1; i <= 5; i++ {
		more = append(more, &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "huge", Name: fmt.Sprintf("more%d", i), ResourceVersion: "1"},
			Spec: routev1.RouteSpec{Host: fmt.Sprintf("more%d.huge.example.com", i), To: routev1.RouteTargetReference{Kind: "Service", Name: fmt.Sprintf("big%d", i)}}})
	}
	st := tenantStore(append(append(routes, polite, huge), more...)...)
	addService(st, "huge", "big", 19000)
	for i := 1; i <= 5; i++ {
		addService(st, "huge", fmt.Sprintf("big%d", i), 1000)
	}
	dir := t.TempDir()
	o := tenantInputs(t, dir)
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	o.Build.HTTPPort, o.Build.HTTPSPort, o.Build.MaxConnections = ports[0], ports[1], maxconn
	o.FDLimit = fdLimit
	out, err := Pass(st, o, State{})
	if err != nil {
		t.Fatal(err)
	}
	td, d := out.Model, out.Decision
	if td.MaxConnections != maxconn {
		t.Errorf("maxconn %d, want %d", td.MaxConnections, maxconn)
	}
	// The 19,000 endpoints count as the 1,000 rendered (router/servers);
	// the namespace's six routes of 1,000 do not all fit its share: the
	// routes it cannot check are served unchecked, the others checked.
	unchecked := 0
	for _, name := range []string{"many", "more1", "more2", "more3", "more4", "more5"} {
		if r := d.Results[admission.Key("huge/"+name)]; !r.Admitted {
			t.Errorf("huge/%s: %+v", name, r)
		}
		endpointLines, checked := 0, 0
		for _, s := range td.State[model.ServiceAliasConfigKey("huge:"+name)].Servers {
			if !s.Dynamic {
				endpointLines++
				if s.Checked {
					checked++
				}
			}
		}
		if endpointLines != servers.MaxEndpointsPerService {
			t.Errorf("huge/%s has %d endpoint server lines, want %d", name, endpointLines, servers.MaxEndpointsPerService)
		}
		switch checked {
		case 0:
			unchecked++
		case endpointLines:
		default:
			t.Errorf("huge/%s has %d of %d endpoint lines checked, want all or none", name, checked, endpointLines)
		}
	}
	if unchecked == 0 || unchecked == 6 {
		t.Errorf("%d of the 6 routes of namespace huge unchecked, want some but not all", unchecked)
	}
	if !reflect.DeepEqual(out.Budget.Summary(), [3]int{85, 85, unchecked}) {
		t.Errorf("budget summary %v", out.Budget.Summary())
	}
	if !d.Results["polite/web"].Admitted || !d.Results["greedy/r0"].Admitted {
		t.Errorf("polite/web %+v greedy/r0 %+v", d.Results["polite/web"], d.Results["greedy/r0"])
	}
	if n := len(td.State["polite:web"].Servers); n != 2+5 {
		t.Errorf("polite/web has %d server lines, want its 2 endpoints and 5 spare slots", n)
	}
	// Every greedy route has the slots it asks for (capped); what the
	// budget cannot check costs no descriptor (no "check" on the line).
	unchecked = 0
	for i := 0; i < 85; i++ {
		slots := 0
		for _, s := range td.State[model.NewServiceAliasConfigKey("greedy", fmt.Sprintf("r%d", i))].Servers {
			if s.Dynamic {
				slots++
				if !s.Checked {
					unchecked++
				}
			}
		}
		if slots != MaxSlotsPerRoute {
			t.Errorf("greedy/r%d has %d spare slots, want %d", i, slots, MaxSlotsPerRoute)
		}
	}
	if unchecked == 0 {
		t.Errorf("every greedy slot is checked: the budget should not afford it")
	}
	if got := strings.Count(string(out.Config), " check inter "); got > ServerBudget(fdLimit, maxconn) {
		t.Errorf("%d health-checked server lines, the budget is %d", got, ServerBudget(fdLimit, maxconn))
	}
	fs := out.Files
	w := files.NewWriter()
	if _, err := w.Stage(fs); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	if found, err := Preflight(out.Config, fdLimit); err != nil {
		t.Fatalf("preflight refuses the planned configuration: %v %v", found, err)
	}
	haproxyStartsUnder(t, dir, fdLimit, ports[0])
}

// addService adds a service with n endpoints (10.x addresses) to st.
func addService(st *store.Store, ns, name string, n int) {
	port, portName := int32(8080), "web"
	st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 80}}}})
	for s := 0; s*1000 < n; s++ {
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, s), Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
		}
		for i := s * 1000; i < n && i < (s+1)*1000; i++ {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256)}})
		}
		st.Upsert(slice)
	}
}

// haproxyStartsUnder starts the real haproxy on the configuration in dir
// with an open-files limit of limit and fails unless it listens on port
// (it exits, after parsing, when it cannot raise its FD limit).
func haproxyStartsUnder(t *testing.T, dir string, limit, port int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("ulimit -n %d && exec haproxy -db -f %s", limit, filepath.Join(dir, "conf", "haproxy.config")))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	for i := 0; i < 500; i++ {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("haproxy exited under an open-files limit of %d: %v\n%s", limit, err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			return
		}
	}
	t.Fatalf("haproxy did not listen on %d within 50 s", port)
}

// TestTenThousandRoutesKeepTheirSlotsUnderTheBudget: ten thousand routes of
// one namespace with one endpoint each, under a server budget of 5,000
// (a 20,000 open-files limit): none is rejected (a single endpoint is not
// health-checked, as in OpenShift), every route gets its spare slots, and
// the slots' health checks go as far as the budget allows.
func TestTenThousandRoutesKeepTheirSlotsUnderTheBudget(t *testing.T) {
	td := &model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}}
	for i := 0; i < 10000; i++ {
		k := model.NewServiceAliasConfigKey("bench", fmt.Sprintf("r%d", i))
		td.State[k] = model.ServiceAliasConfig{Namespace: "bench", Name: fmt.Sprintf("r%d", i), EndpointTable: endpointTable("bench", 1)}
	}
	plan := planSlots(td, 5, 5000)
	if len(plan.unchecked) != 0 {
		t.Fatalf("%d single-endpoint routes unchecked", len(plan.unchecked))
	}
	checked := 0
	for k, slots := range plan.pools {
		if slots != 5 {
			t.Fatalf("%s got %d slots, want 5", k, slots)
		}
		checked += plan.checked[k]
	}
	if checked > 5000 || checked < 4990 {
		t.Fatalf("the slots' checks need %d descriptors, the budget is 5000 (and should be used)", checked)
	}
	// A small namespace keeps its checks beside it.
	k := model.NewServiceAliasConfigKey("small", "web")
	td.State[k] = model.ServiceAliasConfig{Namespace: "small", Name: "web", EndpointTable: endpointTable("small", 2)}
	if p := planSlots(td, 5, 5000); p.pools[k] != 5 || p.checked[k] != 5 {
		t.Fatalf("small namespace's route got %d slots, %d checked, want 5 and 5", p.pools[k], p.checked[k])
	}
}
