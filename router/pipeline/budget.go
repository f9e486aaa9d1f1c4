package pipeline

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/fairshare"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
)

// File descriptors are a budget per tenant, not a global side effect.
//
// HAProxy refuses to start ("Cannot raise FD limit") unless its open-files
// limit holds two descriptors per connection (global maxconn), one per
// server line with a health check ("check", whether the line is in use or
// in maintenance; lines without one cost nothing) and a few for listeners
// and sockets; "haproxy -c" does not check it. The router therefore:
//
//   - never lowers maxconn for servers: maxconn is fixed at start from
//     ROUTER_MAX_CONNECTIONS and the limit (FitMaxConnections), which sets a
//     quarter of the limit aside for server lines;
//   - shares what is left for health-checked server lines (the server
//     budget) between namespaces, max-min fair: a namespace gets what it
//     asks for unless the budget is short, and then no less than an equal
//     share of it (what smaller namespaces leave is shared by the others).
//     Endpoints come first (a route's endpoint lines are checked when it
//     has more than one); where a namespace's endpoints do not fit in its
//     share, its largest routes are served without health checks. Every
//     route gets the spare slots it asks for
//     (ROUTER_MAX_DYNAMIC_SERVERS, pool-size, at most MaxSlotsPerRoute a
//     route): what endpoints leave of the budget decides, shared the same
//     way, how many of them are health-checked. An endpoint that takes an
//     unchecked slot at runtime is served unchecked until the next reload
//     lays its backend out afresh (it is checked then, if the budget
//     affords it), so a namespace asking for many slots only gets fewer
//     checks itself and others keep theirs;
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
	// Checked are how many of every admitted route's spare slots are
	// health-checked; nil without a limit (all of them).
	Checked map[model.ServiceAliasConfigKey]int
	// Unchecked are the routes whose endpoints are not health-checked
	// because they do not fit in their namespace's share, largest first.
	Unchecked []model.ServiceAliasConfigKey
	// Capped counts the routes that asked for more than MaxSlotsPerRoute,
	// Short the routes whose spare slots are not all health-checked.
	Capped, Short int
	// Demand is what every route asked for, endpoints and spare slots, in
	// health-checked server lines (routeDemand); with Demand <= Servers
	// every line is checked.
	Demand int
}

// UncheckedSet is Unchecked as a set (nil when empty), as servers.Options
// takes it.
func (b Budget) UncheckedSet() map[model.ServiceAliasConfigKey]bool {
	if len(b.Unchecked) == 0 {
		return nil
	}
	set := make(map[model.ServiceAliasConfigKey]bool, len(b.Unchecked))
	for _, k := range b.Unchecked {
		set[k] = true
	}
	return set
}

// Summary is what changes of the budget are logged on: (capped, short,
// unchecked); all zero when every route got what it asked for.
func (b Budget) Summary() [3]int { return [3]int{b.Capped, b.Short, len(b.Unchecked)} }

// BudgetMessage is the log message of a budget that did not give every
// route what it asked for (KeysAndValues are its values).
const BudgetMessage = "health checks of server lines shared within the open files budget"

// KeysAndValues are the budget's values for a structured log line.
func (b Budget) KeysAndValues() []any {
	return []any{"routesCappedAtMaxSlots", b.Capped, "maxSlotsPerRoute", MaxSlotsPerRoute, "routesWithUncheckedSlots", b.Short,
		"routesWithUncheckedEndpoints", len(b.Unchecked), "serverBudget", b.Servers, "openFilesLimit", b.OpenFilesLimit, "maxconn", b.MaxConnections}
}

// ShareBudget shares the open-files budget between the namespaces of td
// (want spare slots for routes without a pool-size annotation): every
// route gets its slots, the budget decides which server lines are
// health-checked (evaluated again at every pass; a backend takes them when
// it is laid out afresh).
func ShareBudget(td *model.TemplateData, want, fdLimit int) Budget {
	budget := ServerBudget(fdLimit, td.MaxConnections)
	plan := planSlots(td, want, budget)
	return Budget{OpenFilesLimit: fdLimit, MaxConnections: td.MaxConnections, Servers: budget,
		Pools: plan.pools, Checked: plan.checked, Unchecked: plan.unchecked, Capped: plan.capped, Short: plan.short, Demand: plan.demand}
}

// slotPlan is the spare slots of every route, how many of them are
// health-checked, and the routes whose endpoints alone do not fit in their
// namespace's share.
type slotPlan struct {
	pools map[model.ServiceAliasConfigKey]int
	// checked is nil without a budget (every slot is checked).
	checked map[model.ServiceAliasConfigKey]int
	// unchecked are the routes whose endpoints do not fit (and are not
	// checked), largest first.
	unchecked []model.ServiceAliasConfigKey
	// capped counts the routes that asked for more than MaxSlotsPerRoute,
	// short the routes whose slots are not all checked.
	capped, short int
	// demand is the sum of every route's routeDemand.
	demand int
}

// planSlots gives every route of td its spare slots (want for routes
// without a pool-size annotation) and shares budget (health-checked server
// lines) between the namespaces of td: endpoints first, then the slots'
// health checks. With budget < 0 there is no limit.
func planSlots(td *model.TemplateData, want, budget int) slotPlan {
	plan := slotPlan{pools: make(map[model.ServiceAliasConfigKey]int, len(td.State))}
	groups := plan.groupRoutes(td, want)
	if budget < 0 {
		return plan
	}
	plan.checked = make(map[model.ServiceAliasConfigKey]int, len(plan.pools))
	left := plan.shareEndpoints(groups, budget)
	plan.shareSlots(groups, left)
	return plan
}

// slotRoute is what planSlots knows of a route: its endpoint server lines
// and its spare slots.
type slotRoute struct {
	key       model.ServiceAliasConfigKey
	endpoints int
	slots     int
}

// groupRoutes gives every route of td its spare slots (its pool-size, or
// want, at most MaxSlotsPerRoute) into plan.pools, counts the capped
// routes and the demand, and returns the routes grouped by namespace, in
// the order of td's sorted keys.
func (plan *slotPlan) groupRoutes(td *model.TemplateData, want int) [][]slotRoute {
	var groups [][]slotRoute
	index := map[string]int{}
	for _, k := range td.SortedStateKeys() {
		cfg := td.State[k]
		slots := cfg.Settings.PoolSizeOr(want)
		if slots > MaxSlotsPerRoute {
			slots = MaxSlotsPerRoute
			plan.capped++
		}
		i, ok := index[cfg.Namespace]
		if !ok {
			i = len(groups)
			index[cfg.Namespace] = i
			groups = append(groups, nil)
		}
		lines := endpointLines(&cfg)
		groups[i] = append(groups[i], slotRoute{key: k, endpoints: lines, slots: slots})
		plan.pools[k] = slots
		plan.demand += routeDemand(lines, slots)
	}
	return groups
}

// shareEndpoints shares budget between the health-checked endpoint lines
// of the namespaces (groups), max-min fair. Where a namespace's lines do
// not fit in its share, its largest routes go unchecked (into
// plan.unchecked) until the rest fits; they are served all the same. It
// returns what the checked lines leave of budget.
func (plan *slotPlan) shareEndpoints(groups [][]slotRoute, budget int) int {
	// A backend whose only server line is its one endpoint is not
	// health-checked (as in OpenShift): it costs nothing until it gets
	// spare slots.
	checked := func(r slotRoute) int { return checkedEndpoints(r.endpoints) }
	sizes, demand := perRoute(groups, checked)
	shares := fairshare.Shares(demand, budget)
	left := budget
	for i, routes := range groups {
		used := demand[i]
		for _, j := range fairshare.LargestFirst(sizes[i], shares[i]) {
			used -= sizes[i][j]
			plan.unchecked = append(plan.unchecked, routes[j].key)
		}
		left -= used
	}
	return left
}

// shareSlots shares left (what endpoints left of the budget) between the
// spare slots' health checks into plan.checked: max-min fair between the
// namespaces (groups), then between the routes of each namespace; it
// counts the routes whose slots are not all checked.
func (plan *slotPlan) shareSlots(groups [][]slotRoute, left int) {
	slots, demand := perRoute(groups, func(r slotRoute) int { return r.slots })
	shares := fairshare.Shares(demand, left)
	for i, routes := range groups {
		if shares[i] >= demand[i] {
			for _, r := range routes {
				plan.checked[r.key] = r.slots
			}
			continue
		}
		for j, got := range fairshare.Shares(slots[i], shares[i]) {
			if got < routes[j].slots {
				plan.short++
			}
			plan.checked[routes[j].key] = got
		}
	}
}

// perRoute returns f of every route of groups, by group, and the sum of
// each group's.
func perRoute(groups [][]slotRoute, f func(slotRoute) int) (values [][]int, sums []int) {
	values, sums = make([][]int, len(groups)), make([]int, len(groups))
	for i, routes := range groups {
		values[i] = make([]int, len(routes))
		for j, r := range routes {
			values[i][j] = f(r)
			sums[i] += values[i][j]
		}
	}
	return values, sums
}

// routeDemand is how many health-checked server lines a route with
// endpoints endpoints asks for with slots spare slots: its endpoints' and
// its slots'. When the routes' demands add up to no more than the budget,
// planSlots checks every line.
func routeDemand(endpoints, slots int) int {
	return checkedEndpoints(endpoints) + slots
}

// endpointLines is how many endpoint server lines a fresh layout gives the
// route: the endpoints of all its services (weight 0 included), as
// rendered (router/servers).
func endpointLines(cfg *model.ServiceAliasConfig) int {
	n := 0
	for _, eps := range cfg.EndpointTable {
		n += len(eps)
	}
	return n
}

// checkedEndpoints is how many health-checked server lines n endpoint
// lines need: n when a fresh layout checks them (servers.ChecksEndpoints:
// not a single endpoint, as in OpenShift), none otherwise.
func checkedEndpoints(n int) int {
	if !servers.ChecksEndpoints(n) {
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
