package servers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
)

const key = model.ServiceAliasConfigKey("ns:r")

func ep(n int) model.Endpoint {
	ip := fmt.Sprintf("10.0.0.%d", n)
	return model.Endpoint{ID: "ept:web:" + ip + ":8080", IP: ip, Port: "8080", IdHash: fmt.Sprintf("h%d", n)}
}

// data is a route to service web with the given endpoints (weight 256).
func data(pool *int, eps ...int) *model.TemplateData {
	su := model.ServiceUnit{Name: "ns/web"}
	for _, n := range eps {
		su.EndpointTable = append(su.EndpointTable, ep(n))
	}
	return &model.TemplateData{
		State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{key: {
			Name: "r", Namespace: "ns",
			ServiceUnitNames: map[model.ServiceUnitKey]int32{"ns/web": 256},
			Settings:         settings(pool),
		}},
		ServiceUnits: map[model.ServiceUnitKey]model.ServiceUnit{"ns/web": su},
	}
}

// describe renders a layout as "name@ip:port[-]" ("-": disabled).
func describe(lines []model.Server) string {
	var out []string
	for _, s := range lines {
		d := s.Name + "@" + s.Endpoint.IP + ":" + s.Endpoint.Port
		if s.Disabled {
			d += "-"
		}
		if s.Added {
			d += "+"
		}
		out = append(out, d)
	}
	return strings.Join(out, " ")
}

func TestLayoutFollowsEndpointChanges(t *testing.T) {
	e := func(n int) string { return ep(n).ID + "@" + ep(n).IP + ":8080" }
	slot := func(i int, n int) string {
		if n == 0 {
			return fmt.Sprintf("_dynamic-pod-%d@127.0.0.1:1-", i)
		}
		return fmt.Sprintf("_dynamic-pod-%d@%s:8080", i, ep(n).IP)
	}
	for _, c := range []struct {
		name  string
		pool  int
		steps [][]int // endpoints at each step
		want  string  // layout after the last step ("+": added at runtime)
	}{
		{"fresh layout: endpoints then free slots", 2, [][]int{{1, 2}},
			strings.Join([]string{e(1), e(2), slot(1, 0), slot(2, 0)}, " ")},
		{"new endpoints take slots in order", 2, [][]int{{1}, {1, 2, 3}},
			strings.Join([]string{e(1), slot(1, 2), slot(2, 3)}, " ")},
		{"removed endpoint's line is dropped", 2, [][]int{{1, 2}, {2}},
			strings.Join([]string{e(2), slot(1, 0), slot(2, 0)}, " ")},
		{"endpoint coming back takes a slot", 2, [][]int{{1, 2}, {2}, {1, 2}},
			strings.Join([]string{e(2), slot(1, 1), slot(2, 0)}, " ")},
		{"a never used slot is taken before a freed one", 2, [][]int{{1}, {1, 2}, {1}, {1, 3}},
			strings.Join([]string{e(1), slot(1, 2) + "-", slot(2, 3)}, " ")},
		{"the slot freed longest ago is taken first", 2, [][]int{{1}, {1, 2, 3}, {1, 3}, {1}, {1, 4}},
			strings.Join([]string{e(1), slot(1, 4), slot(2, 3) + "-"}, " ")},
		// Requests in flight to the endpoint a slot loses would leave
		// connections to it in the slot's pool once it serves another.
		{"slot freed by a change is not reused in the same change", 2, [][]int{{1}, {2}, {3}},
			strings.Join([]string{slot(1, 2) + "-", slot(2, 3)}, " ")},
		{"slots freed by a change only: the new endpoint is added", 2, [][]int{{1}, {1, 2, 3}, {1, 4}},
			strings.Join([]string{e(1), slot(1, 2) + "-", slot(2, 3) + "-", e(4) + "+"}, " ")},
		{"freed slot is disabled", 2, [][]int{{1}, {1, 2}, {1}},
			strings.Join([]string{e(1), slot(1, 2) + "-", slot(2, 0)}, " ")},
		{"out of slots: the new endpoints are added", 2, [][]int{{1}, {1, 2, 3, 4, 5}},
			strings.Join([]string{e(1), slot(1, 2), slot(2, 3), e(4) + "+", e(5) + "+"}, " ")},
		{"no endpoints: only slots", 2, [][]int{{}},
			strings.Join([]string{slot(1, 0), slot(2, 0)}, " ")},
		{"no slots: new endpoints added, gone ones dropped", 0, [][]int{{1, 2}, {2, 3}, {3, 4}},
			strings.Join([]string{e(3) + "+", e(4) + "+"}, " ")},
		{"no slots: an added endpoint that goes away is dropped", 0, [][]int{{1}, {1, 2}, {1}},
			e(1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var prev Layouts
			for i, step := range c.steps {
				td := data(nil, step...)
				Assign(td, prev, Options{PoolSize: c.pool, Generation: uint64(i + 1)})
				prev = Of(td)
			}
			if got := describe(prev[key]); got != c.want {
				t.Errorf("layout\n got  %s\n want %s", got, c.want)
			}
			// An added line is checked as a fresh layout checks an
			// endpoint: when there is more than one.
			for _, s := range prev[key] {
				if want := len(c.steps[len(c.steps)-1]) > 1; s.Added && s.Checked != want {
					t.Errorf("%s added at runtime: checked %v, want %v", s.Name, s.Checked, want)
				}
			}
		})
	}
}

func TestLayoutIsDeterministicAndCookiesAreStable(t *testing.T) {
	a, b := data(nil, 1, 2), data(nil, 1, 2)
	Assign(a, nil, Options{PoolSize: 3})
	Assign(b, nil, Options{PoolSize: 3})
	if !reflect.DeepEqual(a.State[key].Servers, b.State[key].Servers) {
		t.Fatalf("same input, different layouts")
	}
	cookies := map[string]bool{}
	for _, s := range a.State[key].Servers {
		if s.Cookie == "" || cookies[s.Cookie] {
			t.Errorf("server %s: cookie %q empty or repeated", s.Name, s.Cookie)
		}
		cookies[s.Cookie] = true
	}
	// A slot keeps its cookie when it takes an endpoint.
	next := data(nil, 1, 2, 3)
	Assign(next, Of(a), Options{PoolSize: 3})
	if a.State[key].Servers[2].Cookie != next.State[key].Servers[2].Cookie {
		t.Errorf("slot cookie changed when the slot was used")
	}
}

func TestPoolSizeAnnotationOverridesDefault(t *testing.T) {
	one, zero := 1, 0
	for _, c := range []struct {
		pool *int
		want int
	}{{nil, 4}, {&one, 2}, {&zero, 1}} {
		td := data(c.pool, 1)
		Assign(td, nil, Options{PoolSize: 3})
		if got := len(td.State[key].Servers); got != c.want {
			t.Errorf("pool %v: %d lines, want %d", c.pool, got, c.want)
		}
	}
	// A changed pool size lays the backend out afresh (not "exhausted").
	td := data(nil, 1)
	Assign(td, nil, Options{PoolSize: 3})
	next := data(&one, 1, 2)
	Assign(next, Of(td), Options{PoolSize: 3})
	if got := describe(next.State[key].Servers); !strings.Contains(got, ep(2).ID+"@") {
		t.Errorf("layout %s", got)
	}
}

func TestWeightsFollowAndTargetPortFilters(t *testing.T) {
	td := data(nil, 1, 2)
	Assign(td, nil, Options{PoolSize: 1})
	next := data(nil, 1, 2)
	cfg := next.State[key]
	cfg.ServiceUnitNames = map[model.ServiceUnitKey]int32{"ns/web": 17}
	next.State[key] = cfg
	Assign(next, Of(td), Options{PoolSize: 1})
	for _, s := range next.State[key].Servers {
		if !s.Dynamic && s.Weight != 17 {
			t.Errorf("%s weight %d, want 17", s.Name, s.Weight)
		}
	}
	filtered := data(nil, 1)
	su := filtered.ServiceUnits["ns/web"]
	other := ep(9)
	other.Port, other.ID = "9090", "ept:web:10.0.0.9:9090"
	su.EndpointTable = append(su.EndpointTable, other)
	filtered.ServiceUnits["ns/web"] = su
	cfg = filtered.State[key]
	cfg.PreferPort = "8080"
	filtered.State[key] = cfg
	Assign(filtered, nil, Options{})
	if got := describe(filtered.State[key].Servers); got != ep(1).ID+"@10.0.0.1:8080" {
		t.Errorf("target port filter: %s", got)
	}
}

func TestCompactAndCount(t *testing.T) {
	td := data(nil, 1, 2)
	Assign(td, nil, Options{PoolSize: 2})
	if !Compact(td, Options{}) || Count(td) != 4 {
		t.Fatalf("fresh layout: compact %v count %d", Compact(td, Options{}), Count(td))
	}
	// Laid out with every slot checked, it is not what a plan checking
	// one slot lays out.
	if Compact(td, Options{CheckedSlots: map[model.ServiceAliasConfigKey]int{key: 1}}) {
		t.Errorf("a layout with two checked slots is compact for a plan of one")
	}
	for _, step := range [][]int{{1}, {1, 2, 3}} {
		next := data(nil, step...)
		Assign(next, Of(td), Options{PoolSize: 2})
		if Compact(next, Options{}) {
			t.Errorf("layout after %v reported compact: %s", step, describe(next.State[key].Servers))
		}
		td = next
	}
}

// checks describes which lines of a layout are health-checked.
func checks(lines []model.Server) string {
	var out []string
	for _, s := range lines {
		c := "-"
		if s.Checked {
			c = "c"
		}
		out = append(out, c)
	}
	return strings.Join(out, "")
}

// TestHealthChecksAreDecidedByFreshLayouts: an endpoint's own line is
// checked when the backend has more than one endpoint line (as in
// OpenShift), the first spare slots as many as the budget's plan checks
// (all without a plan); a layout that follows endpoint changes keeps every
// line's check, so an endpoint that takes an unchecked slot is unchecked
// (and counted) until the backend is laid out afresh.
func TestHealthChecksAreDecidedByFreshLayouts(t *testing.T) {
	plan := func(n int) Options {
		return Options{PoolSize: 3, CheckedSlots: map[model.ServiceAliasConfigKey]int{key: n}}
	}
	for _, c := range []struct {
		name string
		eps  []int
		o    Options
		want string
	}{
		{"one endpoint is not checked; every slot without a plan", []int{1}, Options{PoolSize: 3}, "-ccc"},
		{"two endpoints are checked", []int{1, 2}, Options{PoolSize: 3}, "ccccc"},
		{"the plan checks the first slots", []int{1, 2}, plan(1), "ccc--"},
		{"a plan of none", []int{1}, plan(0), "----"},
		{"a plan beyond the pool checks the pool", []int{1}, plan(9), "-ccc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			td := data(nil, c.eps...)
			Assign(td, nil, c.o)
			if got := checks(td.State[key].Servers); got != c.want {
				t.Errorf("checks %s, want %s (%s)", got, c.want, describe(td.State[key].Servers))
			}
		})
	}
	// Scaling 1 -> 3 with one checked slot: the second endpoint takes the
	// checked slot, the third an unchecked one; the first's line stays
	// unchecked.
	td := data(nil, 1)
	Assign(td, nil, plan(1))
	next := data(nil, 1, 2, 3)
	Assign(next, Of(td), plan(1))
	lines := next.State[key].Servers
	if got := checks(lines); got != "-c--" {
		t.Errorf("after scaling up: checks %s, want -c-- (%s)", got, describe(lines))
	}
	if n := UncheckedEndpoints(lines); n != 1 {
		t.Errorf("unchecked endpoints in slots: %d, want 1", n)
	}
	// The next fresh layout checks all three endpoints.
	again := data(nil, 1, 2, 3)
	Assign(again, nil, plan(1))
	if got := checks(again.State[key].Servers); got != "cccc--" {
		t.Errorf("laid out afresh: checks %s, want cccc--", got)
	}
}

func settings(pool *int) annotations.Route {
	return annotations.Route{PoolSize: pool}
}

// TestKeepLayoutFollowsTheBudgetPlan: a backend keeps its layout with the
// planned slot count, or fewer slots than planned (until laid out afresh),
// but one with more slots than the open-files budget plans for it is laid
// out again with fewer; without a plan the router-wide size only applies
// to fresh layouts; an annotated pool size always holds.
func TestKeepLayoutFollowsTheBudgetPlan(t *testing.T) {
	for _, c := range []struct {
		have, pool         int
		annotated, planned bool
		keep               bool
	}{
		{5, 5, false, true, true},
		{1, 5, false, true, true},
		{5, 1, false, true, false},
		{5, 1, false, false, true},
		{5, 1, true, false, false},
		{3, 3, true, true, true},
	} {
		if got := keepLayout(c.have, c.pool, c.annotated, c.planned); got != c.keep {
			t.Errorf("have %d pool %d annotated %v planned %v: keep %v, want %v", c.have, c.pool, c.annotated, c.planned, got, c.keep)
		}
	}
}
