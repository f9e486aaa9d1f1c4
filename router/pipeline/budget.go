package pipeline

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
)

// File descriptors are a budget per tenant, not a global side effect.
//
// HAProxy refuses to start ("Cannot raise FD limit") unless its open-files
// limit holds two descriptors per connection (global maxconn), one per
// server line with a health check — the spare slots included, free or not
// — and a few for listeners and sockets; "haproxy -c" does not check it.
// The router therefore:
//
//   - never lowers maxconn for servers: maxconn is fixed at start from
//     ROUTER_MAX_CONNECTIONS and the limit (FitMaxConnections), which sets a
//     quarter of the limit aside for server lines;
//   - shares what is left for server lines (the server budget) between
//     namespaces, max-min fair: a namespace gets what it asks for unless
//     the budget is short, and then no less than an equal share of it
//     (what smaller namespaces leave is shared by the others). Endpoints
//     come first; spare slots (ROUTER_MAX_DYNAMIC_SERVERS, pool-size, at
//     most MaxSlotsPerRoute a route) get what endpoints leave, shared the
//     same way, so a namespace asking for many slots only gets fewer slots
//     itself (its routes reload more often) and others keep theirs;
//   - checks a configuration's need against the limit before every start
//     or reload (preflight) and, where it does not fit, rejects the route
//     with the most health-checked servers (the pass goes on without it).

// MaxSlotsPerRoute caps the spare server slots of one route, whatever
// ROUTER_MAX_DYNAMIC_SERVERS or its pool-size annotation ask for.
const MaxSlotsPerRoute = 64

// fdOverhead is what HAProxy needs besides connections and health-checked
// servers (listeners, sockets, pollers, pipes, files), with a margin.
const fdOverhead = 1000

// serverShareDivisor: a quarter of the open-files limit is set aside for
// health-checked server lines when maxconn is fitted to the limit.
const serverShareDivisor = 4

// minMaxConnections is the lowest maxconn FitMaxConnections picks.
const minMaxConnections = 100

// FitMaxConnections returns the global maxconn HAProxy can have under an
// open-files limit of fdLimit when ROUTER_MAX_CONNECTIONS asks for want:
// want, unless two descriptors per connection do not fit in what the
// limit leaves after the overhead and the quarter set aside for server
// lines (then what fits, at least 100). 0 (auto: HAProxy derives maxconn
// from its limit) stays 0, and so does any want when fdLimit is unknown
// (0). It is the one maxconn fitting of the router: cmd/openshift-router
// calls it at start, and ServerBudget shares what it leaves.
func FitMaxConnections(fdLimit, want int) int {
	if fdLimit <= 0 || want <= 0 {
		return want
	}
	reserved := fdOverhead + fdLimit/serverShareDivisor
	fit := (fdLimit - reserved) / 2
	if fit < minMaxConnections {
		fit = minMaxConnections
	}
	if want > fit {
		return fit
	}
	return want
}

// ServerBudget is the number of health-checked server lines HAProxy can
// have with maxconn under an open-files limit of fdLimit; -1 when fdLimit
// is unknown (no limit). With maxconn 0 (auto: HAProxy derives maxconn
// from what the servers leave) the servers get the quarter
// FitMaxConnections sets aside.
func ServerBudget(fdLimit, maxconn int) int {
	switch {
	case fdLimit <= 0:
		return -1
	case maxconn <= 0:
		return fdLimit / serverShareDivisor
	}
	b := fdLimit - fdOverhead - 2*maxconn
	if b < 0 {
		return 0
	}
	return b
}

// Budget is how a pass shared the open-files budget: the values the
// controller logs when they change.
type Budget struct {
	// OpenFilesLimit is HAProxy's open-files limit (0: unknown).
	OpenFilesLimit int
	// MaxConnections is the global maxconn (0: auto).
	MaxConnections int
	// Servers is the number of health-checked server lines shared between
	// namespaces; -1 without a limit.
	Servers int
	// Pools are every admitted route's spare slots.
	Pools map[model.ServiceAliasConfigKey]int
	// Over are the routes rejected because their endpoints do not fit in
	// their namespace's share, largest first.
	Over []model.ServiceAliasConfigKey
	// Capped counts the routes that asked for more than MaxSlotsPerRoute,
	// Short the routes that got fewer slots than they asked for.
	Capped, Short int
	// Demand is what every route asked for, endpoints and spare slots, in
	// health-checked server lines (routeDemand); with Demand <= Servers
	// every route got what it asked for.
	Demand int
}

// Summary is what changes of the budget are logged on: (capped, short,
// over); all zero when every route got what it asked for.
func (b Budget) Summary() [3]int { return [3]int{b.Capped, b.Short, len(b.Over)} }

// BudgetMessage is the log message of a budget that did not give every
// route what it asked for (KeysAndValues are its values).
const BudgetMessage = "spare server slots shared within the open files budget"

// KeysAndValues are the budget's values for a structured log line.
func (b Budget) KeysAndValues() []any {
	return []any{"routesCappedAtMaxSlots", b.Capped, "maxSlotsPerRoute", MaxSlotsPerRoute, "routesWithFewerSlots", b.Short,
		"routesOverBudget", len(b.Over), "serverBudget", b.Servers, "openFilesLimit", b.OpenFilesLimit, "maxconn", b.MaxConnections}
}

// ShareBudget shares the open-files budget between the namespaces of td
// (want spare slots for routes without a pool-size annotation) and drops
// from td, as rejected in d, the routes whose endpoints do not fit in
// their namespace's share (evaluated again at every pass).
func ShareBudget(td *model.TemplateData, d *admission.Decision, want, fdLimit int) Budget {
	budget := ServerBudget(fdLimit, td.MaxConnections)
	plan := planSlots(td, want, budget)
	if len(plan.over) > 0 {
		results := make(map[admission.Key]admission.Result, len(d.Results))
		for k, v := range d.Results {
			results[k] = v
		}
		drop := map[admission.Key]bool{}
		for _, k := range plan.over {
			ak := RouteKey(k)
			drop[ak] = true
			res := results[ak]
			res.Admitted, res.Reason = false, admission.ReasonConfigCheckFailed
			res.Message = fmt.Sprintf("the %d endpoints of this route do not fit in the router's file descriptor budget for its namespace (%d health-checked servers for all namespaces)", td.State[k].ActiveEndpoints, budget)
			results[ak] = res
			delete(td.State, k)
		}
		admitted := make([]*routev1.Route, 0, len(d.Admitted))
		for _, r := range d.Admitted {
			if !drop[admission.KeyOf(r)] {
				admitted = append(admitted, r)
			}
		}
		d.Results, d.Admitted = results, admitted
	}
	return Budget{OpenFilesLimit: fdLimit, MaxConnections: td.MaxConnections, Servers: budget,
		Pools: plan.pools, Over: plan.over, Capped: plan.capped, Short: plan.short, Demand: plan.demand}
}

// fairShares divides budget between demands, max-min fair: each gets its
// demand if the demands that are smaller or equal leave enough, otherwise
// an equal share of what they leave. The result is in the order of demands.
func fairShares(demands []int, budget int) []int {
	out := make([]int, len(demands))
	idx := make([]int, len(demands))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return demands[idx[a]] < demands[idx[b]] })
	left := budget
	for n, i := range idx {
		share := left / (len(idx) - n)
		if demands[i] < share {
			share = demands[i]
		}
		if share < 0 {
			share = 0
		}
		out[i] = share
		left -= share
	}
	return out
}

// slotPlan is the spare slots of every route and the routes whose
// endpoints alone do not fit in their namespace's share.
type slotPlan struct {
	pools map[model.ServiceAliasConfigKey]int
	// over are the routes whose endpoints do not fit, largest first.
	over []model.ServiceAliasConfigKey
	// capped counts the routes that asked for more than MaxSlotsPerRoute,
	// short the routes that got fewer slots than they asked for.
	capped, short int
	// demand is the sum of every route's routeDemand.
	demand int
}

// planSlots shares budget (health-checked server lines) between the
// namespaces of td: endpoints first, then spare slots (want for routes
// without a pool-size annotation). With budget < 0 there is no limit.
func planSlots(td *model.TemplateData, want, budget int) slotPlan {
	plan := slotPlan{pools: make(map[model.ServiceAliasConfigKey]int, len(td.State))}
	type route struct {
		key       model.ServiceAliasConfigKey
		endpoints int
		slots     int
	}
	byNS := map[string][]route{}
	var namespaces []string
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		slots := want
		if cfg.Settings.PoolSize != nil {
			slots = *cfg.Settings.PoolSize
		}
		if slots > MaxSlotsPerRoute {
			slots = MaxSlotsPerRoute
			plan.capped++
		}
		if _, ok := byNS[cfg.Namespace]; !ok {
			namespaces = append(namespaces, cfg.Namespace)
		}
		byNS[cfg.Namespace] = append(byNS[cfg.Namespace], route{key: k, endpoints: cfg.ActiveEndpoints, slots: slots})
		plan.pools[k] = slots
		plan.demand += routeDemand(cfg.ActiveEndpoints, slots)
	}
	if budget < 0 {
		return plan
	}
	// Endpoints. A backend whose only server line is its one endpoint is
	// not health-checked (as in OpenShift): it costs nothing until it
	// gets spare slots.
	epDemand := make([]int, len(namespaces))
	for i, ns := range namespaces {
		for _, r := range byNS[ns] {
			epDemand[i] += checkedEndpoints(r.endpoints)
		}
	}
	epShares := fairShares(epDemand, budget)
	left := budget
	for i, ns := range namespaces {
		routes := byNS[ns]
		used := epDemand[i]
		if used > epShares[i] {
			// Reject the namespace's largest routes until the rest fits.
			sort.SliceStable(routes, func(a, b int) bool { return routes[a].endpoints > routes[b].endpoints })
			kept := routes[:0:0]
			for _, r := range routes {
				if used > epShares[i] && checkedEndpoints(r.endpoints) > 0 {
					used -= checkedEndpoints(r.endpoints)
					plan.over = append(plan.over, r.key)
					delete(plan.pools, r.key)
					continue
				}
				kept = append(kept, r)
			}
			byNS[ns] = kept
		}
		left -= used
	}
	// Spare slots: what endpoints left, fair between namespaces, then
	// between the routes of each namespace.
	// A route with one endpoint that gets slots has its endpoint checked
	// too: its demand is one more than its slots.
	slotCost := func(r route) int {
		if r.slots > 0 && r.endpoints == 1 {
			return r.slots + 1
		}
		return r.slots
	}
	slotDemand := make([]int, len(namespaces))
	for i, ns := range namespaces {
		for _, r := range byNS[ns] {
			slotDemand[i] += slotCost(r)
		}
	}
	nsShares := fairShares(slotDemand, left)
	for i, ns := range namespaces {
		routes := byNS[ns]
		if nsShares[i] >= slotDemand[i] {
			continue
		}
		demands := make([]int, len(routes))
		for j, r := range routes {
			demands[j] = slotCost(r)
		}
		for j, got := range fairShares(demands, nsShares[i]) {
			slots := got
			if routes[j].slots > 0 && routes[j].endpoints == 1 {
				// One of what it got checks its endpoint; a single
				// descriptor buys no slot.
				slots = max(got-1, 0)
			}
			if slots < routes[j].slots {
				plan.short++
			}
			plan.pools[routes[j].key] = slots
		}
	}
	return plan
}

// routeDemand is how many health-checked server lines a route with
// endpoints endpoints asks for with slots spare slots: its endpoints' and
// its slots' (a single endpoint is checked once it has slots). When the
// routes' demands add up to no more than the budget, planSlots gives
// every route what it asks for.
func routeDemand(endpoints, slots int) int {
	d := checkedEndpoints(endpoints) + slots
	if slots > 0 && endpoints == 1 {
		d++
	}
	return d
}

// checkedEndpoints is how many health-checked server lines n endpoints
// need without spare slots: none for a single endpoint (one server line is
// not checked), n otherwise.
func checkedEndpoints(n int) int {
	if n < 2 {
		return 0
	}
	return n
}

// fdNeed reads what a rendered configuration needs from HAProxy's
// open-files limit: its global maxconn and its health-checked server
// lines, per route backend.
type fdNeed struct {
	maxconn int
	checked int
	// byRoute counts the health-checked servers of route backends.
	byRoute map[admission.Key]int
	// lenient is a global "no strict-limits" (OpenShift's template has
	// it): HAProxy then starts with a warning when it cannot raise its
	// open-files limit, instead of refusing (HAProxy's default since 2.3).
	lenient bool
}

func (n fdNeed) total() int { return 2*n.maxconn + n.checked + fdOverhead }

func readFDNeed(config []byte) fdNeed {
	need := fdNeed{byRoute: map[admission.Key]int{}}
	sc := bufio.NewScanner(bytes.NewReader(config))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	section, route := "", admission.Key("")
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			section, route = strings.Fields(line)[0], ""
			if m := backendRE.FindStringSubmatch(line); m != nil {
				route = admission.Key(m[1] + "/" + m[2])
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case section == "global" && f[0] == "maxconn" && len(f) > 1:
			need.maxconn, _ = strconv.Atoi(f[1])
		case section == "global" && f[0] == "strict-limits":
			need.lenient = false
		case section == "global" && f[0] == "no" && len(f) > 1 && f[1] == "strict-limits":
			need.lenient = true
		case f[0] == "server" && hasWord(f, "check"):
			need.checked++
			if route != "" {
				need.byRoute[route]++
			}
		}
	}
	return need
}

func hasWord(f []string, w string) bool {
	for _, x := range f {
		if x == w {
			return true
		}
	}
	return false
}

// Preflight checks that HAProxy can start config under the open-files
// limit fdLimit (0: unknown, nothing to check). When it cannot, it returns
// an error and the route backend with the most health-checked servers as
// the culprit (none if no route has any).
func Preflight(config []byte, fdLimit int) ([]Culprit, error) {
	if fdLimit <= 0 {
		return nil, nil
	}
	need := readFDNeed(config)
	if need.total() <= fdLimit || need.lenient {
		return nil, nil
	}
	err := fmt.Errorf("haproxy would refuse to start: it needs about %d file descriptors (maxconn %d, %d health-checked servers), the open-files limit is %d",
		need.total(), need.maxconn, need.checked, fdLimit)
	var worst admission.Key
	for k, n := range need.byRoute {
		if n > need.byRoute[worst] || (n == need.byRoute[worst] && k < worst) {
			worst = k
		}
	}
	if worst == "" {
		return nil, err
	}
	return []Culprit{{Route: worst, Message: fmt.Sprintf("the %d health-checked servers of this route do not fit in the router's file descriptor budget for its namespace", need.byRoute[worst])}}, err
}
