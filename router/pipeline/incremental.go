package pipeline

import (
	"fmt"
	"path/filepath"
	"sort"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
)

// Endpoint changes are worked out alone, without a full pass: when the
// objects changed since a pass only in Endpoints and EndpointSlices,
// UpdateEndpoints rebuilds the model entries of the routes of those
// services only (admission does not depend on endpoints; the open-files
// budget depends on the routes' numbers of endpoints, and is kept when
// they did not change or every route still gets what it asks for), lays
// out their server lines against their running layout, and
// renders the template for those routes alone: the routes' own sections
// of that render (those a render without routes does not have) are what
// the runtime API diff looks at (dynamic.DiffSections). This works for any
// template whose route sections are rendered from their route (as the
// default and OpenShift's template do). The full configuration is not
// written by it: the next full pass (before any reload, or when the
// controller flushes) renders it, and it equals what the updated model
// renders (TestIncrementalEndpointChangesEqualAFullPass).

// Reasons an endpoint change needs a full pass (EndpointChange.Full).
const (
	// FullOther: something besides endpoints changed (or the store's
	// endpoint log no longer reaches back to the pass).
	FullOther = "other-changes"
	// FullNoConfig: the template renders no haproxy.config.
	FullNoConfig = "no-config"
)

// EndpointChange is an endpoint change worked out against the output of
// a pass (UpdateEndpoints); Output.Apply makes it part of that output.
type EndpointChange struct {
	// Full says why the change needs a full pass; "" when it was worked
	// out alone.
	Full string
	// Routes are the routes whose model entries were rebuilt, sorted.
	Routes []model.ServiceAliasConfigKey
	// State are their new model entries, servers laid out.
	State map[model.ServiceAliasConfigKey]model.ServiceAliasConfig
	// Config is haproxy.config rendered for Routes only, Sections the
	// routes' own sections of it.
	Config   []byte
	Sections *dynamic.Config

	generation   uint64
	serviceUnits map[model.ServiceUnitKey]model.ServiceUnit
	changed      map[model.ServiceUnitKey]bool
	demand       int
}

// UpdateEndpoints works out the changes of src since out (the output of a
// Pass, with the changes applied since) when they are endpoint changes
// only. out is not modified. It takes time in the number of changes and
// of the routes of the changed services, not in the number of routes
// (the first call after a pass renders the template once without routes).
func UpdateEndpoints(src Source, in Inputs, out *Output) (*EndpointChange, error) {
	if out.Config == nil {
		return &EndpointChange{Full: FullNoConfig}, nil
	}
	ch, err := readEndpointChanges(src, in, out)
	if err != nil || ch.Full != "" {
		return ch, err
	}
	if len(ch.Routes) == 0 {
		ch.Sections = &dynamic.Config{}
		return ch, nil
	}
	// The budget shares health checks by the routes' numbers of endpoints,
	// but only a fresh layout (at a reload, after a full pass) takes the
	// checks it plans: endpoints that come at runtime take spare slots or
	// are added unchecked, which HAProxy reserves nothing more for. The
	// plan is not made again here; its demand follows.
	b := out.Budget
	for _, k := range ch.Routes {
		old, cfg := out.Model.State[k], ch.State[k]
		was, now := endpointLines(&old), endpointLines(&cfg)
		pool := b.Pools[k]
		ch.demand += routeDemand(now, pool) - routeDemand(was, pool)
	}
	part := withState(out.Model, ch.State, ch.serviceUnits)
	prev := make(servers.Layouts, len(ch.Routes))
	for _, k := range ch.Routes {
		prev[k] = out.Model.State[k].Servers
	}
	so := in.Servers
	so.Pools, so.CheckedSlots, so.Generation = b.Pools, b.Checked, ch.generation
	so.UncheckedEndpoints = b.UncheckedSet()
	servers.Assign(part, prev, so)
	config, err := renderConfig(part, in, out.ConfigPath)
	if err != nil {
		return nil, err
	}
	base, err := out.baseConfig(in)
	if err != nil {
		return nil, err
	}
	ch.Config = config
	ch.Sections = dynamic.Parse(config).Sections(base)
	return ch, nil
}

// readEndpointChanges rebuilds the model entries of the routes of the
// services whose endpoints changed since out (ch.Routes, sorted), or says
// that a full pass has to work the changes out (ch.Full).
func readEndpointChanges(src Source, in Inputs, out *Output) (*EndpointChange, error) {
	admitted := out.admittedRoutes()
	ch := &EndpointChange{changed: map[model.ServiceUnitKey]bool{}, demand: out.Budget.Demand}
	err := src.Read(func(v store.View) error {
		ch.generation = v.Generation()
		services, ok := v.EndpointChangesSince(out.Generation)
		if !ok {
			ch.Full = FullOther
			return nil
		}
		affected := map[model.ServiceAliasConfigKey]bool{}
		for _, svc := range services {
			k := model.ServiceUnitKey(svc)
			su, ok := out.Model.ServiceUnits[k]
			if !ok {
				// No admitted route uses the service.
				continue
			}
			ch.changed[k] = true
			for rk := range su.ServiceAliasAssociations {
				if _, ok := out.Model.State[rk]; ok {
					affected[rk] = true
				}
			}
		}
		if len(affected) == 0 {
			return nil
		}
		for k := range affected {
			ch.Routes = append(ch.Routes, k)
		}
		sort.Slice(ch.Routes, func(i, j int) bool { return ch.Routes[i] < ch.Routes[j] })
		routes := make([]*routev1.Route, 0, len(affected))
		for _, k := range ch.Routes {
			r := admitted[k]
			if r == nil {
				return fmt.Errorf("route %s of the model is not among the admitted routes", k)
			}
			routes = append(routes, r)
		}
		ch.State, ch.serviceUnits = builder.Routes(v, out.Model, routes, ch.changed, buildOptions(in, out.Gateway))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the objects: %w", err)
	}
	return ch, nil
}

// admittedRoutes indexes out's admitted routes by model key, once.
func (out *Output) admittedRoutes() map[model.ServiceAliasConfigKey]*routev1.Route {
	if out.admitted == nil {
		out.admitted = make(map[model.ServiceAliasConfigKey]*routev1.Route, len(out.Decision.Admitted))
		for _, r := range out.Decision.Admitted {
			out.admitted[model.NewServiceAliasConfigKey(r.Namespace, r.Name)] = r
		}
	}
	return out.admitted
}

// baseConfig is out's configuration rendered without any route, parsed,
// once: what the routes' sections are told apart from.
func (out *Output) baseConfig(in Inputs) (*dynamic.Config, error) {
	if out.base == nil {
		baseConfig, err := renderConfig(withoutRoutes(out.Model), in, out.ConfigPath)
		if err != nil {
			return nil, err
		}
		out.base = dynamic.Parse(baseConfig)
	}
	return out.base, nil
}

// renderConfig renders the template's haproxy.config (at configPath) for td.
func renderConfig(td *model.TemplateData, in Inputs, configPath string) ([]byte, error) {
	rendered, err := in.Renderer.RenderPartial(td)
	if err != nil {
		return nil, err
	}
	for _, f := range rendered {
		if filepath.Clean(f.Path) == configPath {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("the template rendered no %s", configPath)
}

// Apply makes ch (an UpdateEndpoints of out) part of out: its model
// entries, service units and budget demand. out's Files and Config stay
// those of the pass (the next full pass renders them again).
func (out *Output) Apply(ch *EndpointChange) {
	out.Generation = ch.generation
	if out.touched == nil && len(ch.State) > 0 {
		out.touched = map[model.ServiceAliasConfigKey]bool{}
	}
	for k, cfg := range ch.State {
		out.Model.State[k] = cfg
		out.touched[k] = true
	}
	for k := range ch.changed {
		if su, ok := ch.serviceUnits[k]; ok {
			out.Model.ServiceUnits[k] = su
		}
	}
	out.Budget.Demand = ch.demand
}
