package pipeline

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// Route changes without a full render.
//
// A route added, changed or removed changes its own backend section(s) of
// haproxy.config, the map files, its certificate files — and, through
// admission (host claims, namespace ownership), possibly other routes'.
// UpdateRoutes works a set of route (and endpoint) changes out against the
// output of the last pass: admission runs over every route (it is pure and
// cheap next to rendering), the model entries of the routes whose input or
// result changed are rebuilt, those routes (and the backends that are not
// laid out afresh, since a reload follows) are rendered alone, and their
// sections are spliced into the previous haproxy.config in the order a
// full render puts them; the other files are rendered from the whole model
// (maps and certificates cost little next to the backends).
//
// It applies to templates whose route sections can be told apart and put
// in order: every section that a render without routes does not have is a
// "backend PREFIX:NAMESPACE:NAME" of a route of the model (OpenShift's
// backend naming), each route's sections are together and the routes'
// sections come in the order of their keys (as `range .State` renders
// them), and the other sections are the same as without routes. Anything
// else (checked on the previous configuration and on every partial render)
// falls back to the full pass, as do changes other than route and
// endpoint changes.

// Reasons a route change needs a full pass (RouteChange.Full).
const (
	// FullNotPerRoute: the template's route sections cannot be told
	// apart or ordered (see above).
	FullNotPerRoute = "template-not-per-route"
	// FullManyRoutes: so many routes are affected that a full pass costs
	// about as much.
	FullManyRoutes = "many-routes"
	// FullEdgeRoutes: no route that is neither the first nor the last
	// stays unchanged, to show that the text around the routes'
	// sections does not depend on them (see probeRoute).
	FullEdgeRoutes = "no-unchanged-route-to-probe"
	// FullNoBackendChange: no route was admitted or dropped, so no
	// backend comes or goes: the change may apply without a reload
	// (UpdateRoutesFollowing).
	FullNoBackendChange = "no-backend-added-or-removed"
	// FullBackendChange: routes were admitted or dropped (UpdateRoutes,
	// not UpdateRoutesFollowing).
	FullBackendChange = "backends-added-or-removed"
	// FullRouteLookups: the frontends' lookups of the Gateway API's route
	// map keys change (model.RouteLookups: the first exact path, wildcard
	// hostname or route for every host came, or the last went).
	FullRouteLookups = "route-lookups-changed"
	// FullForwardedLookup: the frontends' lookup of forwarded_headers.map
	// comes or goes (model.MapKeyCounts.ForwardedOthers: the first route
	// whose forwarded-headers policy differs from the router-wide one came,
	// or the last went).
	FullForwardedLookup = "forwarded-headers-lookup-changed"
	// FullSettingsLookups: a lookup of timeout_server.map,
	// timeout_tunnel.map or hsts.map in the routes' defaults section comes
	// or goes (model.MapKeyCounts: the first route with such a setting
	// came, or the last went).
	FullSettingsLookups = "route-settings-lookups-changed"
	// FullNoChange: no route, service or endpoint changed since the pass.
	FullNoChange = "no-route-change"
)

// UpdateRoutes works the route and endpoint changes of src since out (the
// output of a Pass, or of an UpdateRoutes) out without rendering the
// whole template, with every backend laid out as a fresh layout would
// (the result is for a reload). It returns the new output, or the reason
// a full pass is needed. out is not modified but for the configuration
// without routes it keeps (as UpdateEndpoints). Its result equals a full
// Pass's with fresh layouts (TestRouteChangesEqualAFullPass).
func UpdateRoutes(src Source, in Inputs, st State, out *Output) (*Output, string, error) {
	return updateRoutes(src, in, st, out, routesForReload)
}

// UpdateRoutesFresh is UpdateRoutes also for changes that admit or drop
// no route (a route's annotations, certificate or target changed): for
// the reload those need when the runtime API cannot apply them.
func UpdateRoutesFresh(src Source, in Inputs, st State, out *Output) (*Output, string, error) {
	return updateRoutes(src, in, st, out, routesFresh)
}

// UpdateRoutesFollowing works out route changes without rendering the
// whole template, for the runtime API first: the changed routes' backends
// follow the lines HAProxy runs (out's, with the endpoint changes applied
// since), as a full pass on the running layouts would lay them out, and
// new routes' backends are laid out afresh. Its result equals such a
// Pass's (State.Layouts from out).
func UpdateRoutesFollowing(src Source, in Inputs, st State, out *Output) (*Output, string, error) {
	return updateRoutes(src, in, st, out, routesFollowing)
}

// routesMode is what updateRoutes is asked for.
type routesMode int

const (
	// routesForReload: routes admitted or dropped, every backend laid out
	// afresh (FullNoBackendChange otherwise).
	routesForReload routesMode = iota
	// routesFresh: any route change, every backend laid out afresh.
	routesFresh
	// routesFollowing: any route change, the routes rendered again laid
	// out against their running lines (new routes afresh); the headers of
	// the backends that go are Output.Gone.
	routesFollowing
)

func updateRoutes(src Source, in Inputs, st State, out *Output, mode routesMode) (*Output, string, error) {
	if out.Config == nil {
		return nil, FullNoConfig, nil
	}
	next := &Output{ConfigPath: out.ConfigPath}
	ch, full, err := readRouteChanges(src, in, st, out, next, mode)
	if err != nil || full != "" {
		return nil, full, err
	}
	if ch.none {
		return unchanged(out, next), "", nil
	}
	td := changedModel(out.Model, ch)
	if full := lookupsChange(out.Model, td); full != "" {
		return nil, full, nil
	}

	// The budget, and the layouts: every backend as a fresh layout would
	// have it (a reload follows), or, following, the routes rendered again
	// laid out against their running lines (the others keep theirs), as a
	// full pass on the running layouts lays them out.
	next.Budget = ShareBudget(td, in.Servers.PoolSize, in.FDLimit)
	so := in.Servers
	so.Pools, so.Generation = next.Budget.Pools, next.Generation
	so.CheckedSlots, so.UncheckedEndpoints = next.Budget.Checked, next.Budget.UncheckedSet()
	render := routesToRender(td, out, ch.rebuilt, so, mode)
	if len(render) > len(td.State)/4+16 {
		return nil, FullManyRoutes, nil
	}
	probe, ok := probeRoute(out.Model, td, render)
	if !ok {
		return nil, FullEdgeRoutes, nil
	}
	part := modelOf(td, render)
	var prev servers.Layouts
	if mode == routesFollowing {
		prev = make(servers.Layouts, len(part.State))
		for k := range part.State {
			if cfg, ok := out.Model.State[k]; ok {
				prev[k] = cfg.Servers
			}
		}
	}
	servers.Assign(part, prev, so)
	for k, cfg := range part.State {
		td.State[k] = cfg
	}
	next.Model = td
	return spliceAndRender(in, out, next, part, modelOf(td, map[model.ServiceAliasConfigKey]bool{probe: true}), render, probe, mode)
}

// unchanged is out as of next's generation and decision, when objects
// changed that no route uses (the Service and EndpointSlice of a route
// deleted in an earlier commit, say): the same model, files and text, no
// section rendered again. The controller then stages nothing
// (RendersNothing): out's files may lag behind what runs (endpoint
// changes applied since, see Apply) as they did. Full passes ran for such
// changes before: up to a second of CPU at 10,000 routes, for nothing.
func unchanged(out, next *Output) *Output {
	same := *out
	same.Generation, same.Decision, same.Exclusions, same.Gateway = next.Generation, next.Decision, next.Exclusions, next.Gateway
	same.Sections = &dynamic.Config{}
	same.nothing = true
	// Made again from this decision when asked for.
	same.admitted = nil
	return &same
}

// RendersNothing reports whether out is an UpdateRoutesFollowing that no
// route was affected by: out is the output it was worked out from, moved
// on to the store's generation, with nothing to write or send.
func (out *Output) RendersNothing() bool { return out.nothing }

// routeChanges are the route changes since a pass, read from the store.
type routeChanges struct {
	// affected are the routes whose model entries go (and come back, if
	// admitted, from rebuilt, with the service units units).
	affected map[model.ServiceAliasConfigKey]bool
	rebuilt  map[model.ServiceAliasConfigKey]model.ServiceAliasConfig
	units    map[model.ServiceUnitKey]model.ServiceUnit
	// backends: routes were admitted or dropped.
	backends bool
	// none: no route is affected (following what runs only).
	none bool
}

// readRouteChanges admits every route (next gets the decision) and
// rebuilds the model entries of the routes that changed, whose admission
// result changed, or whose services changed since out; or says why a full
// pass (or, for mode, the other kind of update) has to do it.
func readRouteChanges(src Source, in Inputs, st State, out, next *Output, mode routesMode) (routeChanges, string, error) {
	var ch routeChanges
	full := ""
	err := src.Read(func(v store.View) error {
		next.Generation = v.Generation()
		routes, services, ok := v.ChangesSince(out.Generation)
		if !ok {
			full = FullOther
			return nil
		}
		next.Decision, next.Exclusions, next.Gateway = admit(v, in, st)
		if next.Gateway != nil && (!slices.Equal(next.Gateway.HostResponses, out.Model.HostResponses) ||
			out.Gateway == nil || !bytes.Equal(next.Gateway.DefaultCertificate, out.Gateway.DefaultCertificate) ||
			next.Gateway.TLSRoutesChanged(out.Gateway)) {
			// The Gateways' hostnames, the default certificate or the
			// routes of TLSRoutes changed: a full pass.
			full = FullOther
			return nil
		}
		httpRoutes := v.HTTPRouteChangesSince(out.Generation)
		remade := httpRoutes
		if next.Gateway != nil {
			// Translated afresh since: what they looked up changed.
			fresh, known := next.Gateway.RetranslatedSince(out.Gateway)
			if !known {
				full = FullOther
				return nil
			}
			remade = append(slices.Clip(remade), fresh...)
		}
		routes = append(routes, madeFrom(remade, out.Gateway, next.Gateway)...)
		var changed map[model.ServiceUnitKey]bool
		ch.affected, changed = affectedRoutes(routes, services, out, next.Decision)
		if frontendRulesChange(ch.affected, out, next) {
			// The frontends' rules of header, method and query
			// matches change: a full pass.
			full = FullOther
			return nil
		}
		build, backends := routesToBuild(out.Model, next.Decision, ch.affected)
		ch.backends = backends
		switch {
		case !backends && mode == routesForReload:
			full = FullNoBackendChange
		case len(build) == 0 && len(ch.affected) == 0 && mode == routesFollowing && len(routes)+len(services)+len(httpRoutes) > 0:
			// Only objects no route uses changed (the service of a route
			// deleted in an earlier pass, say): nothing to render. (With
			// no change at all, a full pass is what was asked for: a
			// stale haproxy.config to render, say.)
			ch.none = true
		case len(build) == 0 && len(ch.affected) == 0:
			full = FullNoChange
		default:
			ch.rebuilt, ch.units = builder.Routes(v, out.Model, build, changed, buildOptions(in, next.Gateway))
		}
		return nil
	})
	if err != nil {
		return ch, "", fmt.Errorf("reading the objects: %w", err)
	}
	return ch, full, nil
}

// madeFrom returns the routes the HTTPRoutes httpRoutes were translated
// into before (old) and now (next): those routes changed, came or went.
func madeFrom(httpRoutes []store.Key, old, next *gateway.Result) []store.Key {
	if len(httpRoutes) == 0 {
		return nil
	}
	changed := make(map[store.Key]bool, len(httpRoutes))
	for _, k := range httpRoutes {
		changed[k] = true
	}
	var out []store.Key
	for _, res := range []*gateway.Result{old, next} {
		if res == nil {
			continue
		}
		for k, o := range res.Origins {
			if !o.IsTLSRoute() && changed[o.HTTPRoute] {
				out = append(out, store.Key(k))
			}
		}
	}
	return out
}

// frontendRulesChange reports whether a route of keys (changed, or its
// admission result) changes the frontends' rules: a route that matches more
// than its path (the Gateway API's header, method, query parameter
// matches) in out or next, or any route of a host such a route has (the
// rules' fallbacks name the host's other routes). It looks at those routes
// alone, not at every route.
func frontendRulesChange(keys map[model.ServiceAliasConfigKey]bool, out, next *Output) bool {
	hosts := map[string]bool{}
	for _, o := range []*Output{out, next} {
		if o.Gateway == nil {
			continue
		}
		for _, k := range o.Gateway.Conditional {
			if r, ok := o.Decision.Results[k]; ok {
				hosts[r.Host] = true
			}
		}
	}
	if len(hosts) == 0 {
		return false
	}
	for k := range keys {
		ak := admission.Key(strings.Replace(string(k), ":", "/", 1))
		for _, o := range []*Output{out, next} {
			if r, ok := o.Decision.Results[ak]; ok && hosts[r.Host] {
				return true
			}
		}
	}
	return false
}

// lookupsChange returns why the frontends of td make other lookups than
// old's, or "": of the Gateway API's route map keys (model.RouteLookups,
// FullRouteLookups) or of forwarded_headers.map
// (FullForwardedLookup) and the route-settings maps (FullSettingsLookups)
// by model.MapKeyCounts — a lookup's first key appeared or its last went.
func lookupsChange(old, td *model.TemplateData) string {
	if (old.MapKeys == nil) != (td.MapKeys == nil) {
		return FullForwardedLookup
	}
	if old.MapKeys != nil {
		o, n := *old.MapKeys, *td.MapKeys
		if (o.ForwardedOthers > 0) != (n.ForwardedOthers > 0) {
			return FullForwardedLookup
		}
		if (o.TimeoutServer > 0) != (n.TimeoutServer > 0) || (o.TimeoutTunnel > 0) != (n.TimeoutTunnel > 0) || (o.HSTS > 0) != (n.HSTS > 0) {
			return FullSettingsLookups
		}
	}
	if old.RouteLookups == nil || td.RouteLookups == nil {
		if old.RouteLookups != td.RouteLookups {
			return FullRouteLookups
		}
		return ""
	}
	if old.RouteLookups.Rendered() != td.RouteLookups.Rendered() {
		return FullRouteLookups
	}
	return ""
}

// affectedRoutes are the routes that changed (routes), whose admission
// result changed from out's, or that use a changed service (services,
// returned as a set).
func affectedRoutes(routes, services []store.Key, out *Output, d admission.Decision) (map[model.ServiceAliasConfigKey]bool, map[model.ServiceUnitKey]bool) {
	affected := map[model.ServiceAliasConfigKey]bool{}
	for _, k := range routes {
		affected[model.ServiceAliasConfigKey(strings.Replace(string(k), "/", ":", 1))] = true
	}
	for k, res := range d.Results {
		if was, ok := out.Decision.Results[k]; !ok || was != res {
			affected[modelKey(k)] = true
		}
	}
	for k := range out.Decision.Results {
		if _, ok := d.Results[k]; !ok {
			affected[modelKey(k)] = true
		}
	}
	changed := make(map[model.ServiceUnitKey]bool, len(services))
	for _, svc := range services {
		k := model.ServiceUnitKey(svc)
		changed[k] = true
		for rk := range out.Model.ServiceUnits[k].ServiceAliasAssociations {
			affected[rk] = true
		}
	}
	return affected, changed
}

// routesToBuild are the admitted routes among affected, and whether a
// backend comes or goes (a route admitted that old does not have, or one
// old has that is no longer admitted).
func routesToBuild(old *model.TemplateData, d admission.Decision, affected map[model.ServiceAliasConfigKey]bool) ([]*routev1.Route, bool) {
	var build []*routev1.Route
	backends := false
	for _, r := range d.Admitted {
		k := model.NewServiceAliasConfigKey(r.Namespace, r.Name)
		if affected[k] {
			build = append(build, r)
			if _, had := old.State[k]; !had {
				backends = true
			}
		}
	}
	for k := range affected {
		if _, had := old.State[k]; had && !d.Results[RouteKey(k)].Admitted {
			backends = true
		}
	}
	return build, backends
}

// changedModel is old with the affected routes' entries out and the
// rebuilt ones in, the service units and the certificate index following
// (old is not changed). It keeps old's HeaderChains: a change that would
// alter them is a full pass (frontendRulesChange); its RouteLookups count
// the routes that go and come (lookupsChange), its SettingsKeys follow
// them.
func changedModel(old *model.TemplateData, ch routeChanges) *model.TemplateData {
	// (maps.Clone copies a map's tables as they are: no hashing of
	// 10,000 keys again.)
	td := withState(old, cloneMap(old.State), cloneMap(old.ServiceUnits))
	td.CertificateIndex = cloneMap(old.CertificateIndex)
	assoc := associationsOf(old)
	var lookups *model.RouteLookups
	if old.RouteLookups != nil {
		l := *old.RouteLookups
		lookups, td.RouteLookups = &l, &l
	}
	var keys *model.MapKeyCounts
	if old.MapKeys != nil {
		c := *old.MapKeys
		keys, td.MapKeys = &c, &c
	}
	var out, settingsIn []model.ServiceAliasConfigKey
	for k := range ch.affected {
		cfg, ok := old.State[k]
		if !ok {
			continue
		}
		delete(td.State, k)
		out = append(out, k)
		if lookups != nil {
			templates.AddRouteLookups(lookups, k, cfg, -1)
		}
		if keys != nil {
			templates.AddMapKeys(keys, cfg, old.HAProxy, -1)
		}
		if cert, ok := cfg.Certificates[cfg.Host]; ok {
			if td.CertificateIndex[cert.Contents]--; td.CertificateIndex[cert.Contents] <= 0 {
				delete(td.CertificateIndex, cert.Contents)
			}
		}
		for su := range cfg.ServiceUnits {
			delete(assoc.of(su), k)
		}
	}
	for k, su := range ch.units {
		td.ServiceUnits[k] = su
	}
	for k, cfg := range ch.rebuilt {
		td.State[k] = cfg
		if templates.HasMapSettings(cfg) {
			settingsIn = append(settingsIn, k)
		}
		if lookups != nil {
			templates.AddRouteLookups(lookups, k, cfg, 1)
		}
		if keys != nil {
			templates.AddMapKeys(keys, cfg, td.HAProxy, 1)
		}
		if cert, ok := cfg.Certificates[cfg.Host]; ok {
			td.CertificateIndex[cert.Contents]++
		}
		for su := range cfg.ServiceUnits {
			assoc.of(su)[k] = true
		}
	}
	if old.SettingsKeys != nil {
		td.SettingsKeys = old.SettingsKeys.Edited(out, settingsIn)
	}
	td.EditKeyOrder(old, out, slices.Collect(maps.Keys(ch.rebuilt)))
	assoc.apply(td)
	return td
}

// cloneMap is maps.Clone, but never nil (a nil map is cloned empty).
func cloneMap[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return maps.Clone(m)
}

// associations are copies of the ServiceAliasAssociations of the service
// units a route update touches, made on first use.
type associations struct {
	old *model.TemplateData
	m   map[model.ServiceUnitKey]map[model.ServiceAliasConfigKey]bool
}

func associationsOf(old *model.TemplateData) *associations {
	return &associations{old: old, m: map[model.ServiceUnitKey]map[model.ServiceAliasConfigKey]bool{}}
}

func (a *associations) of(k model.ServiceUnitKey) map[model.ServiceAliasConfigKey]bool {
	if m, ok := a.m[k]; ok {
		return m
	}
	m := map[model.ServiceAliasConfigKey]bool{}
	for rk := range a.old.ServiceUnits[k].ServiceAliasAssociations {
		m[rk] = true
	}
	a.m[k] = m
	return m
}

// apply puts the touched associations into td; a service unit no route
// uses any more goes.
func (a *associations) apply(td *model.TemplateData) {
	for k, m := range a.m {
		if len(m) == 0 {
			delete(td.ServiceUnits, k)
			continue
		}
		su := td.ServiceUnits[k]
		su.ServiceAliasAssociations = m
		td.ServiceUnits[k] = su
	}
}

// routesToRender are the routes whose sections are rendered again: the
// rebuilt ones, those endpoint changes touched since out (out.Config does
// not have their sections as they run) and, unless following what runs,
// those not laid out as a fresh layout with so would lay them out.
func routesToRender(td *model.TemplateData, out *Output, rebuilt map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, so servers.Options, mode routesMode) map[model.ServiceAliasConfigKey]bool {
	render := map[model.ServiceAliasConfigKey]bool{}
	for k := range rebuilt {
		render[k] = true
	}
	for k := range out.touched {
		if _, ok := td.State[k]; ok {
			render[k] = true
		}
	}
	if mode != routesFollowing {
		for k, cfg := range td.State {
			if !render[k] && !servers.CompactLines(k, cfg.Servers, so) {
				render[k] = true
			}
		}
	}
	return render
}

// modelOf is td with only the routes keys in State and their services in
// ServiceUnits.
func modelOf(td *model.TemplateData, keys map[model.ServiceAliasConfigKey]bool) *model.TemplateData {
	part := withState(td, make(map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, len(keys)+1), map[model.ServiceUnitKey]model.ServiceUnit{})
	for k := range keys {
		cfg := td.State[k]
		part.State[k] = cfg
		for su := range cfg.ServiceUnits {
			part.ServiceUnits[su] = td.ServiceUnits[su]
		}
	}
	return part
}

// withoutRoutes is td without routes and services.
func withoutRoutes(td *model.TemplateData) *model.TemplateData {
	return withState(td, map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}, map[model.ServiceUnitKey]model.ServiceUnit{})
}

// withState is td with the routes of state and the services of units
// (td is not changed; the State keys are taken in order afresh).
func withState(td *model.TemplateData, state map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, units map[model.ServiceUnitKey]model.ServiceUnit) *model.TemplateData {
	c := *td
	c.State, c.ServiceUnits = state, units
	c.SettingsKeys = nil // of td's State, not this one
	c.NewKeyOrder()
	return &c
}

// spliceAndRender finishes next: haproxy.config is out's with the routes'
// sections (part's) spliced in, following what runs its parsed sections
// for the runtime API, and the other files from the whole model.
func spliceAndRender(in Inputs, out, next *Output, part, alone *model.TemplateData, render map[model.ServiceAliasConfigKey]bool, probe model.ServiceAliasConfigKey, mode routesMode) (*Output, string, error) {
	config, partConfig, gone, cut, err := spliceRoutes(in, out, part, alone, next.Model, render, probe)
	if err != nil || cut == nil {
		if err == nil {
			return nil, FullNotPerRoute, nil
		}
		return nil, "", err
	}
	next.Config, next.cut = config, cut
	if mode == routesFollowing {
		if out.base == nil {
			out.base = dynamic.Parse(out.baseText)
		}
		next.Sections, next.Gone = dynamic.Parse(partConfig).Sections(out.base), gone
	}
	fs, rf, err := renderAll(next.Model, in.withGateway(next.Gateway), out.ConfigPath, config, out.routeFiles.following(next.Model, part))
	if err != nil {
		return nil, "", err
	}
	next.Files, next.routeFiles = fs, rf
	// The same template and settings: the same configuration without
	// routes.
	next.base, next.baseText = out.base, out.baseText
	return next, "", nil
}

// probeRoute returns a route that neither comes first nor last in the
// configuration before the change (old), is not rendered again and is
// still there (td), or false if there is none.
//
// dynamic.Cut gives the comments and blank lines before a section header
// to that section: text a template writes after its last other section
// and before its first route's (a comment listing the routes, say) is
// part of the first route's section, and text after the last route's
// section that is not a section's is part of the last route's; a render
// without routes does not show it. Rendered alone, the probe route is
// both the first and the last: its section must come out as it is in the
// configuration before, where it is neither (spliceRoutes), or the text
// around the routes' sections depends on them.
func probeRoute(old, td *model.TemplateData, render map[model.ServiceAliasConfigKey]bool) (model.ServiceAliasConfigKey, bool) {
	if len(old.State) < 3 {
		return "", false
	}
	var first, last model.ServiceAliasConfigKey
	seen := false
	for k := range old.State {
		if !seen || k < first {
			first = k
		}
		if !seen || k > last {
			last = k
		}
		seen = true
	}
	for k, cfg := range old.State {
		if k == first || k == last || render[k] || cfg.Answered() {
			// (An answered route may have no section to compare.)
			continue
		}
		if _, ok := td.State[k]; ok {
			return k, true
		}
	}
	return "", false
}

// modelKey is the model key of a route's admission key.
func modelKey(k admission.Key) model.ServiceAliasConfigKey {
	return model.ServiceAliasConfigKey(strings.Replace(string(k), "/", ":", 1))
}

// routeText is a configuration cut into its route sections, by route, and
// the rest.
type routeText struct {
	// head and rest are the text before and after the route sections,
	// tail the trailing comments and blank lines.
	head, rest, tail []byte
	// blocks are the text of each route's sections, in order.
	blocks map[model.ServiceAliasConfigKey][]byte
	keys   []model.ServiceAliasConfigKey
}

// cutRoutes cuts data into its route sections, whose headers isRoute maps
// to a route (the others must be the sections of base, the text without
// routes), and the rest; false when the route sections are not together,
// a route's sections are apart, or they are not in the order of their
// keys.
func cutRoutes(data []byte, isRoute func(header string) (model.ServiceAliasConfigKey, bool)) (*routeText, bool) {
	t := &routeText{blocks: map[model.ServiceAliasConfigKey][]byte{}}
	tail := dynamic.Tail(data)
	body := data[:tail]
	t.tail = data[tail:]
	spans := dynamic.Cut(body)
	first, last := -1, -1
	for i, s := range spans {
		k, ok := isRoute(s.Header)
		if !ok {
			continue
		}
		if first < 0 {
			first = i
		}
		if last >= 0 && last != i-1 {
			return nil, false // route sections apart
		}
		last = i
		if n := len(t.keys); n > 0 && t.keys[n-1] != k {
			if t.keys[n-1] > k {
				return nil, false
			}
			if _, seen := t.blocks[k]; seen {
				return nil, false
			}
		}
		if n := len(t.keys); n == 0 || t.keys[n-1] != k {
			t.keys = append(t.keys, k)
			t.blocks[k] = body[s.Start:s.End:s.End]
		} else {
			// Contiguous with the previous section of the same route.
			b := t.blocks[k]
			t.blocks[k] = body[s.Start-len(b) : s.End : s.End]
		}
	}
	if first < 0 {
		t.head = body
		return t, true
	}
	t.head = body[:spans[first].Start]
	t.rest = body[spans[last].End:]
	return t, true
}

// spliceRoutes returns haproxy.config for td: the previous configuration
// (out.Config) with the sections of the routes of part (rendered alone)
// in place of theirs, the sections of the routes no longer in td out;
// part's configuration (the template rendered for part's routes); the
// headers of the sections gone; and the new configuration's cut into its
// route sections, nil when it cannot be spliced.
func spliceRoutes(in Inputs, out *Output, part, alone, td *model.TemplateData, render map[model.ServiceAliasConfigKey]bool, probe model.ServiceAliasConfigKey) (config, partConfig []byte, gone []string, cut *routeText, err error) {
	if out.baseText == nil {
		baseConfig, err := renderConfig(withoutRoutes(out.Model), in, out.ConfigPath)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		out.baseText = baseConfig
	}
	partConfig, err = renderConfig(part, in, out.ConfigPath)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	was, ok := out.routeCut()
	if !ok {
		return nil, nil, nil, nil, nil
	}
	now, ok := cutRoutes(partConfig, routeOf(part.State))
	if !ok {
		return nil, nil, nil, nil, nil
	}
	base := out.baseText
	// The sections besides the routes' are the template's own: the same
	// with or without routes, before and after the change.
	without := func(t *routeText) []byte { return append(append(append([]byte(nil), t.head...), t.rest...), t.tail...) }
	if !bytes.Equal(without(was), base) || !bytes.Equal(without(now), base) {
		return nil, nil, nil, nil, nil
	}
	if !sectionsCover(was, out.Model.State) || !sectionsCover(now, part.State) {
		// A route of the model without a section of its own.
		return nil, nil, nil, nil, nil
	}
	aloneConfig, err := renderConfig(alone, in, out.ConfigPath)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	probed, ok := cutRoutes(aloneConfig, routeOf(alone.State))
	if !ok || !bytes.Equal(without(probed), base) || !bytes.Equal(probed.blocks[probe], was.blocks[probe]) {
		// The text around the routes' sections depends on them.
		return nil, nil, nil, nil, nil
	}
	keys := mergeKeys(was.keys, td.State)
	size := len(was.head) + len(was.rest) + len(was.tail)
	blocks := make([][]byte, len(keys))
	for i, k := range keys {
		if render[k] {
			blocks[i] = now.blocks[k]
		} else {
			blocks[i] = was.blocks[k]
		}
		if blocks[i] == nil && !td.State[k].Answered() {
			return nil, nil, nil, nil, nil
		}
		size += len(blocks[i])
	}
	config = make([]byte, 0, size)
	config = append(config, was.head...)
	for _, b := range blocks {
		config = append(config, b...)
	}
	config = append(append(config, was.rest...), was.tail...)
	return config, partConfig, goneHeaders(was, now, td, render), splicedCut(config, was, keys, blocks), nil
}

// routeOf returns the route of state whose section header is header
// ("backend PREFIX:KEY"): cutRoutes' isRoute.
func routeOf(state map[model.ServiceAliasConfigKey]model.ServiceAliasConfig) func(string) (model.ServiceAliasConfigKey, bool) {
	return func(header string) (model.ServiceAliasConfigKey, bool) {
		name, ok := strings.CutPrefix(header, "backend ")
		if !ok {
			return "", false
		}
		_, key, ok := strings.Cut(name, ":")
		if !ok {
			return "", false
		}
		k := model.ServiceAliasConfigKey(key)
		_, ok = state[k]
		return k, ok
	}
}

// routeCut is out.Config cut into its route sections: as the UpdateRoutes
// that spliced it knew it (out.cut), else cut afresh (a tenth of a route
// change's work at 10,000 routes).
func (out *Output) routeCut() (*routeText, bool) {
	if out.cut != nil {
		return out.cut, true
	}
	return cutRoutes(out.Config, routeOf(out.Model.State))
}

// splicedCut is the cut of config, which spliceRoutes made of was's
// head, blocks (of keys, nil for a route without sections) and rest and
// tail, as cutRoutes would make it.
func splicedCut(config []byte, was *routeText, keys []model.ServiceAliasConfigKey, blocks [][]byte) *routeText {
	t := &routeText{blocks: make(map[model.ServiceAliasConfigKey][]byte, len(keys)), keys: make([]model.ServiceAliasConfigKey, 0, len(keys))}
	off := len(was.head)
	t.head = config[:off:off]
	for i, k := range keys {
		if n := len(blocks[i]); n > 0 {
			t.keys = append(t.keys, k)
			t.blocks[k] = config[off : off+n : off+n]
			off += n
		}
	}
	t.rest = config[off : off+len(was.rest) : off+len(was.rest)]
	t.tail = config[off+len(was.rest):]
	return t
}

// sectionsCover reports whether every route of state has its sections in
// t, but for those HAProxy answers in the frontends (the default template
// renders no backend for them).
func sectionsCover(t *routeText, state map[model.ServiceAliasConfigKey]model.ServiceAliasConfig) bool {
	if len(t.keys) == len(state) {
		return true
	}
	for k, cfg := range state {
		if _, ok := t.blocks[k]; !ok && !cfg.Answered() {
			return false
		}
	}
	return true
}

// goneHeaders are the headers of the sections of the routes of was (the
// configuration before) that the configuration after no longer has: the
// sections of routes no longer in td, and those of routes rendered again
// (now) that their new sections do not have.
func goneHeaders(was, now *routeText, td *model.TemplateData, render map[model.ServiceAliasConfigKey]bool) []string {
	var gone []string
	for _, k := range was.keys {
		_, kept := td.State[k]
		if kept && !render[k] {
			continue
		}
		have := map[string]bool{}
		if kept {
			for _, s := range dynamic.Cut(now.blocks[k]) {
				have[s.Header] = true
			}
		}
		for _, s := range dynamic.Cut(was.blocks[k]) {
			if !have[s.Header] {
				gone = append(gone, s.Header)
			}
		}
	}
	return gone
}

// mergeKeys returns the keys of state in order, from sorted, the keys
// before the change in order: those still in state, with the new ones
// (sorted alone) merged in — without sorting every key again.
func mergeKeys(sorted []model.ServiceAliasConfigKey, state map[model.ServiceAliasConfigKey]model.ServiceAliasConfig) []model.ServiceAliasConfigKey {
	had := make(map[model.ServiceAliasConfigKey]bool, len(sorted))
	for _, k := range sorted {
		had[k] = true
	}
	var added []model.ServiceAliasConfigKey
	for k := range state {
		if !had[k] {
			added = append(added, k)
		}
	}
	sort.Slice(added, func(i, j int) bool { return added[i] < added[j] })
	out := make([]model.ServiceAliasConfigKey, 0, len(state))
	for _, k := range sorted {
		for len(added) > 0 && added[0] < k {
			out, added = append(out, added[0]), added[1:]
		}
		if _, ok := state[k]; ok {
			out = append(out, k)
		}
	}
	return append(out, added...)
}
