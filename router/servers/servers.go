// Package servers lays out the server lines of every route's backend
// (model.ServiceAliasConfig.Servers) so that endpoint changes can be applied
// to a running HAProxy through its runtime API instead of a reload.
//
// A fresh layout has one line per endpoint, named after the endpoint, and
// PoolSize spare slots in maintenance (none by default). Laid out again
// against the layout HAProxy runs, a backend keeps the lines it had and
// changes them only in ways the runtime API can follow: an endpoint that
// went away loses its line (HAProxy puts the server in maintenance and
// deletes it once drained), a new endpoint takes a free slot (its
// address, port and weight are set; the slot freed longest ago, never one
// whose endpoint went away in the same change) or, without one, gets a
// line of its own at the end (Added: HAProxy's "add server"), weights
// follow the services' weights. Only when the line count of the slots
// must change (pool size) is a backend laid out afresh — which a reload
// has to load.
//
// Health checks (model.Server.Checked) are decided when a backend is laid
// out afresh and kept with the line: an endpoint's own line is checked when
// the backend has more than one endpoint line and the open-files budget
// affords it (Options.UncheckedEndpoints), a spare slot when the budget
// affords it (Options.CheckedSlots; HAProxy reserves a
// file descriptor per checked line, used or not, and none for unchecked
// ones). An endpoint that takes an unchecked slot is served unchecked
// until the next reload lays the backend out afresh. An endpoint added at
// runtime is checked as a fresh layout would check it (HAProxy takes the
// descriptor of its check from those of connections while the check runs,
// as with OpenShift's dynamic servers; the budget counts it at the next
// fresh layout); the line of an endpoint that was alone is not checked
// until then (HAProxy cannot start checking a server loaded without
// "check").
//
// The package is pure: the same model and previous layout always give the
// same result.
package servers

import (
	"crypto/md5"
	"encoding/hex"
	"sort"
	"strconv"

	"github.com/openshift-router-go/router/router/model"
)

// Options configure the layout.
type Options struct {
	// PoolSize is the number of spare slots per backend
	// (ROUTER_MAX_DYNAMIC_SERVERS) unless the route's pool-size annotation
	// says otherwise.
	PoolSize int
	// Pools, when set, holds every route's number of spare slots (the
	// router's plan within its open-files budget), instead of PoolSize and
	// the annotation.
	Pools map[model.ServiceAliasConfigKey]int
	// CheckedSlots, when set, holds how many of every route's spare
	// slots are health-checked in a fresh layout (the first ones; the
	// router's plan within its open-files budget). nil checks every slot.
	CheckedSlots map[model.ServiceAliasConfigKey]int
	// UncheckedEndpoints, when set, holds the routes whose endpoints' own
	// lines are not health-checked in a fresh layout (the budget cannot
	// afford them).
	UncheckedEndpoints map[model.ServiceAliasConfigKey]bool
	// Shuffle, if set, permutes a service's endpoints when a backend is laid
	// out afresh (ROUTER_BACKEND_PROCESS_ENDPOINTS=shuffle).
	Shuffle func([]model.Endpoint)
	// Generation numbers this layout among the layouts of a router: it
	// must grow from one Assign to the next (the store's generation).
	// Slots freed now record it, and free slots are reused least
	// recently freed first.
	Generation uint64
}

// Layouts holds the server lines of every route's backend.
type Layouts map[model.ServiceAliasConfigKey][]model.Server

// PlaceholderIP and PlaceholderPort are the address of a slot that never
// held an endpoint (it is in maintenance: nothing is ever sent there).
const (
	PlaceholderIP   = "127.0.0.1"
	PlaceholderPort = "1"
)

// Of returns the layouts of td.
func Of(td *model.TemplateData) Layouts {
	out := make(Layouts, len(td.State))
	for k, cfg := range td.State {
		out[k] = cfg.Servers
	}
	return out
}

// Assign sets the Servers of every route of td. With a nil prev every
// backend is laid out afresh; otherwise each backend follows its previous
// layout where it can.
func Assign(td *model.TemplateData, prev Layouts, o Options) {
	placeholder := &model.Endpoint{IP: PlaceholderIP, Port: PlaceholderPort}
	for k, cfg := range td.State {
		desired := desiredServers(td, &cfg, o.Shuffle)
		pool := poolSize(k, &cfg, o)
		old, had := prev[k]
		if had && keepLayout(countDynamic(old), pool, cfg.Settings.PoolSize != nil, o.Pools != nil) {
			cfg.Servers = follow(old, desired, o.Generation, !o.UncheckedEndpoints[k])
		} else {
			cfg.Servers = fresh(k, &cfg, desired, pool, !o.UncheckedEndpoints[k], checkedSlots(k, pool, o), placeholder)
		}
		td.State[k] = cfg
	}
}

// Compact reports whether every backend of td is laid out as a fresh layout
// with o would be (no disabled endpoint lines, no occupied slots, the same
// health checks), up to the order of its endpoints.
func Compact(td *model.TemplateData, o Options) bool {
	for k, cfg := range td.State {
		if !CompactLines(k, cfg.Servers, o) {
			return false
		}
	}
	return true
}

// CompactLines reports whether lines, route k's server lines, are laid out
// as a fresh layout with o would lay them out (see Compact).
func CompactLines(k model.ServiceAliasConfigKey, lines []model.Server, o Options) bool {
	endpoints := len(lines) - countDynamic(lines)
	slots, checked := 0, 0
	for _, s := range lines {
		if s.Added || s.Dynamic != s.Disabled || (s.Dynamic && s.Endpoint.ID != "") {
			return false
		}
		if s.Dynamic {
			slots++
			if s.Checked {
				checked++
			}
		} else if s.Checked != (endpointChecked(endpoints, s.Endpoint) && !o.UncheckedEndpoints[k]) {
			return false
		}
	}
	return checked == checkedSlots(k, slots, o)
}

// UncheckedEndpoints counts the endpoints served on spare slots or added
// at runtime without a health check in lines, where a fresh layout would
// check them (more than one endpoint; they are checked from the next fresh
// layout).
func UncheckedEndpoints(lines []model.Server) int {
	n, active := 0, 0
	for _, s := range lines {
		if s.Disabled {
			continue
		}
		active++
		if (s.Dynamic || s.Added) && !s.Checked && !s.Endpoint.NoHealthCheck {
			n++
		}
	}
	if active < 2 {
		return 0
	}
	return n
}

// endpointChecked reports whether an endpoint's own line is health-checked
// in a fresh layout of a backend with endpoints endpoint lines: when there
// is more than one (a single endpoint is not checked, as in OpenShift),
// and not for an endpoint that must not be (an idled service's).
func endpointChecked(endpoints int, ep *model.Endpoint) bool {
	return ChecksEndpoints(endpoints) && !ep.NoHealthCheck
}

// ChecksEndpoints reports whether a fresh layout of a backend with
// endpoints endpoint lines health-checks them: when there is more than
// one (a single endpoint is not checked, as in OpenShift). The open-files
// budget (router/pipeline) counts checked lines by the same rule.
func ChecksEndpoints(endpoints int) bool { return endpoints > 1 }

// checkedSlots is how many of a route's pool spare slots are
// health-checked in a fresh layout.
func checkedSlots(k model.ServiceAliasConfigKey, pool int, o Options) int {
	if o.CheckedSlots == nil {
		return pool
	}
	return min(o.CheckedSlots[k], pool)
}

// Count returns the number of server lines of td.
func Count(td *model.TemplateData) int {
	n := 0
	for _, cfg := range td.State {
		n += len(cfg.Servers)
	}
	return n
}

type desiredServer struct {
	su     model.ServiceUnitKey
	ep     *model.Endpoint
	weight int32
}

// desiredServers lists the endpoints the backend serves, in the order of
// the default template: services by key, each service's endpoints (filtered
// by the route's target port) in endpoint order.
func desiredServers(td *model.TemplateData, cfg *model.ServiceAliasConfig, shuffle func([]model.Endpoint)) []desiredServer {
	keys := serviceKeys(cfg)
	var out []desiredServer
	for _, suKey := range keys {
		su := td.ServiceUnits[suKey]
		eps := cfg.EndpointsOf(su)
		if shuffle != nil && len(eps) > 1 {
			eps = append([]model.Endpoint(nil), eps...)
			shuffle(eps)
		}
		for i := range eps {
			out = append(out, desiredServer{su: suKey, ep: &eps[i], weight: cfg.ServiceUnitNames[suKey]})
		}
	}
	return out
}

func serviceKeys(cfg *model.ServiceAliasConfig) []model.ServiceUnitKey {
	keys := make([]model.ServiceUnitKey, 0, len(cfg.ServiceUnitNames))
	for k := range cfg.ServiceUnitNames {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// keepLayout reports whether a backend with have spare slots keeps its
// layout when pool are planned for it. A backend with the planned number
// keeps it. Without an annotation a backend with fewer keeps them too until
// it is laid out afresh (at a reload), and so does one with more when no
// budget plans the slots; with a plan (the open-files budget, Options.Pools)
// a backend with more slots than planned is laid out again with fewer, so
// that the configuration fits the budget the plan was made for.
func keepLayout(have, pool int, annotated, planned bool) bool {
	switch {
	case have == pool:
		return true
	case annotated:
		return false
	case have < pool:
		return true
	default:
		return !planned
	}
}

// poolSize is the number of spare slots of route k: the plan's
// (o.Pools), or else its pool-size, or else o.PoolSize.
func poolSize(k model.ServiceAliasConfigKey, cfg *model.ServiceAliasConfig, o Options) int {
	if n, ok := o.Pools[k]; ok {
		return n
	}
	return cfg.Settings.PoolSizeOr(o.PoolSize)
}

func countDynamic(lines []model.Server) int {
	n := 0
	for _, s := range lines {
		if s.Dynamic {
			n++
		}
	}
	return n
}

// slotNames are the names of the first spare slots (most routes have a
// few), made once.
var slotNames = func() [65]string {
	var out [65]string
	for i := range out {
		out[i] = model.DynamicServerPrefix + strconv.Itoa(i)
	}
	return out
}()

// slotName is the name of spare slot i (1, 2, ...).
func slotName(i int) string {
	if i < len(slotNames) {
		return slotNames[i]
	}
	return model.DynamicServerPrefix + strconv.Itoa(i)
}

// fresh lays a backend out: one line per endpoint (health-checked as
// endpointChecked says, if checkEndpoints), then the free slots, the first
// checked of them health-checked, at placeholder.
func fresh(k model.ServiceAliasConfigKey, cfg *model.ServiceAliasConfig, desired []desiredServer, pool int, checkEndpoints bool, checked int, placeholder *model.Endpoint) []model.Server {
	lines := make([]model.Server, 0, len(desired)+pool)
	for _, d := range desired {
		lines = append(lines, model.Server{Name: d.ep.ID, Endpoint: d.ep, ServiceUnit: d.su, Weight: d.weight, Cookie: d.ep.IdHash,
			Checked: checkEndpoints && endpointChecked(len(desired), d.ep)})
	}
	var firstSU model.ServiceUnitKey
	if keys := serviceKeys(cfg); len(keys) > 0 {
		firstSU = keys[0]
	}
	// The slots' cookies are substrings of one string: a layout is kept
	// for as long as HAProxy runs it (50,000 slots at 10,000 routes).
	cookies := make([]byte, 0, pool*hex.EncodedLen(md5.Size))
	for i := 1; i <= pool; i++ {
		sum := md5.Sum([]byte(string(k) + "/" + slotName(i)))
		cookies = hex.AppendEncode(cookies, sum[:])
	}
	allCookies := string(cookies)
	for i := 1; i <= pool; i++ {
		n := hex.EncodedLen(md5.Size)
		lines = append(lines, model.Server{
			Name:        slotName(i),
			Endpoint:    placeholder,
			ServiceUnit: firstSU,
			Cookie:      allCookies[(i-1)*n : i*n],
			Disabled:    true,
			Dynamic:     true,
			Checked:     i <= checked,
		})
	}
	return lines
}

// follow changes a copy of old the way the runtime API can: a new endpoint
// takes a free slot or, without one, a line added at the end (checked as a
// fresh layout would check it, if checkEndpoints); the line of an endpoint
// that went away is dropped. Slots freed now record generation.
func follow(old []model.Server, desired []desiredServer, generation uint64, checkEndpoints bool) []model.Server {
	want := make(map[string]int, len(desired)) // endpoint ID -> index in desired
	for i, d := range desired {
		want[d.ep.ID] = i
	}
	placed := make([]bool, len(desired))
	lines := make([]model.Server, len(old), len(old)+1)
	copy(lines, old)
	// freed are the slots whose endpoint goes away in this change. They
	// are not reused in the same change: HAProxy still has connections to
	// the old endpoint on them (requests in flight), and a connection that
	// ends after the slot got its new address would go back to the slot's
	// pool of idle connections and keep serving the slot's requests from
	// the old endpoint (see haproxy/dynamic).
	freed := make([]bool, len(lines))
	for i := range lines {
		s := &lines[i]
		id := s.Endpoint.ID
		if s.Dynamic && s.Disabled {
			// A free slot keeps its last address until it is reused;
			// an endpoint coming back to it is placed below, like any
			// new endpoint, so that slots are reused in order.
			continue
		}
		// An endpoint's own line (enabled or not) and an occupied slot
		// keep their endpoint while it is wanted.
		if j, ok := want[id]; ok && id != "" && !placed[j] {
			placed[j] = true
			s.Disabled = false
			s.Weight = desired[j].weight
			s.ServiceUnit = desired[j].su
			s.Endpoint = desired[j].ep
			continue
		}
		if s.Dynamic && !s.Disabled {
			freed[i] = true
			s.FreedAt = generation
		}
		s.Disabled = true
	}
	lines = dropGone(lines, &freed)
	// The free slots, least recently freed first (never used ones first
	// of all), in line order among equals: a connection to a slot's old
	// endpoint that is still open when the slot takes a new one would go
	// back to the slot's pool of idle connections, so a slot rests as long
	// as the pool allows.
	var free []int
	for i := range lines {
		if lines[i].Dynamic && lines[i].Disabled && !freed[i] {
			free = append(free, i)
		}
	}
	sort.SliceStable(free, func(a, b int) bool { return lines[free[a]].FreedAt < lines[free[b]].FreedAt })
	next := 0
	for j, d := range desired {
		if placed[j] {
			continue
		}
		if next == len(free) {
			lines = append(lines, model.Server{Name: d.ep.ID, Endpoint: d.ep, ServiceUnit: d.su, Weight: d.weight,
				Cookie: d.ep.IdHash, Added: true, Checked: checkEndpoints && endpointChecked(len(desired), d.ep)})
			continue
		}
		s := &lines[free[next]]
		s.Disabled = false
		s.Weight = d.weight
		s.ServiceUnit = d.su
		s.Endpoint = d.ep
		next++
	}
	return lines
}

// dropGone removes the endpoint lines (not the slots) that follow disabled
// because their endpoint went away, keeping freed in step with lines.
func dropGone(lines []model.Server, freed *[]bool) []model.Server {
	out, f := lines[:0], (*freed)[:0]
	for i, s := range lines {
		if !s.Dynamic && s.Disabled {
			continue
		}
		out = append(out, s)
		f = append(f, (*freed)[i])
	}
	*freed = f
	return out
}
