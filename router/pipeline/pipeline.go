// Package pipeline is the router's pure pass: from the watched objects and
// the router's settings to everything it would write, as values. One pass
// admits the routes (host claims, validation, the exclusions the
// controller carries), builds the template model, lays the backends'
// server lines out within the open-files budget, and renders the template,
// the certificates and the allowlists. It writes nothing and runs nothing:
// the controller (router/controller) writes the files, has HAProxy check and
// load them or applies them through the runtime API, and the render and
// check subcommands print or check them. An endpoint change alone is
// worked out against the last pass's output without a full pass
// (UpdateEndpoints, incremental.go).
//
// The stages of the router are: source (router/source: cluster or
// manifests, into router/store) → admission (router/admission) → pipeline
// (this package: model, budget, render) → controller (write, check,
// runtime API or reload, exclusions, supervision).
package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/hostname"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// Inputs are the router's settings a pass derives the configuration from,
// besides the objects.
type Inputs struct {
	Renderer  *templates.Renderer
	Admission admission.Options
	Build     builder.Options
	// DefaultCertificate is the PEM written to Build.DefaultCertificate.
	DefaultCertificate []byte
	// Hostnames generates the hosts of routes (ROUTER_SUBDOMAIN).
	Hostnames hostname.Generator
	// Servers lays out backends' server lines (spare slots).
	Servers servers.Options
	// ExtraFiles, if set, is called with the built template data before it
	// is rendered: it may point the data at files the router keeps besides
	// the routes' (router/mtls: the client CA copy and CRLs) and returns
	// them, to be written with the configuration.
	ExtraFiles func(td *model.TemplateData) []files.File
	// FDLimit is the open-files limit HAProxy runs with; when set, spare
	// server slots share what maxconn leaves of it between namespaces (see
	// budget.go). 0: no limit.
	FDLimit int
	// ExternalCertificates, if set, fills in routes' certificates from the
	// secrets spec.tls.externalCertificate names, or rejects the routes,
	// before admission, or hands them on as pending while the answer
	// about their secret is not known (router/extcert).
	ExternalCertificates interface {
		Resolve(v store.View, routes []*routev1.Route) ([]*routev1.Route, map[admission.Key]admission.Result, map[admission.Key]bool)
	}
	// Gateway, if set, translates the Gateway API's objects into routes
	// admitted with the API's Routes (router/gateway).
	Gateway *gateway.Options
}

// Exclusion is a route rejected because a failure was traced to it (see
// culprits.go): it stays rejected until it changes or goes away.
type Exclusion struct {
	ResourceVersion string
	Generation      int64
	Result          admission.Result
}

// State is what a pass takes from the passes before it.
type State struct {
	// Exclusions are the routes rejected for failures traced to them.
	Exclusions map[admission.Key]Exclusion
	// Layouts are the server lines of the running configuration's
	// backends: spare slots keep their endpoints so that an endpoint
	// change is a runtime API change. nil lays every backend out afresh.
	Layouts servers.Layouts
	// NoRoutes renders the configuration without any route (the ports
	// answer 503 before the sources have synced).
	NoRoutes bool
}

// Source gives the pass a consistent view of the objects (*store.Store).
// The pass reads under it only what admission and the model need; the
// rest works on the model.
type Source interface {
	Read(fn func(v store.View) error) error
}

// Output is what one pass decided and rendered.
type Output struct {
	// Model is the template data the files were rendered from.
	Model *model.TemplateData
	// Decision is every route's admission result (the exclusions'
	// rejections included) and the admitted routes.
	Decision admission.Decision
	// Gateway is the translation of the Gateway API's objects, finished
	// with Decision (nil without Inputs.Gateway); its routes are among
	// Decision's.
	Gateway *gateway.Result
	// Exclusions are the exclusions of State still in force (those of
	// routes that changed or went away are dropped).
	Exclusions map[admission.Key]Exclusion
	// Budget is how the open-files budget was shared.
	Budget Budget
	// Files are every file to write: configuration, maps, certificates,
	// allowlists, extra files, the default certificate.
	Files []files.File
	// ConfigPath is the path of haproxy.config among Files, Config its
	// contents (nil if the template rendered none).
	ConfigPath string
	Config     []byte
	// Generation is the store generation the pass saw (endpoint changes
	// applied since move it on, see Apply).
	Generation uint64
	// Sections are, for an output of UpdateRoutesFollowing, the sections
	// of the routes rendered again (the rest of Config is as HAProxy runs
	// it): a runtime API diff needs to look at those only
	// (dynamic.DiffSections). Nil otherwise.
	Sections *dynamic.Config
	// Gone are, with Sections, the headers of the sections the
	// configuration no longer has: the backends of routes deleted, no
	// longer admitted or renamed. Sections and Gone are the whole change
	// (dynamic.DiffMoved).
	Gone []string

	// admitted indexes Decision.Admitted by model key and base are the
	// sections of the configuration rendered without routes; both are
	// made by the first UpdateEndpoints. baseText is that configuration,
	// made by the first UpdateRoutes.
	admitted map[model.ServiceAliasConfigKey]*routev1.Route
	base     *dynamic.Config
	baseText []byte
	// cut is Config cut into its route sections (cutRoutes), as the
	// UpdateRoutes that spliced it knew it; nil when it did not make
	// Config (routeCut cuts it then).
	cut *routeText
	// touched are the routes whose model entries endpoint changes
	// replaced since the pass (Apply): Config does not have their
	// sections as HAProxy runs them.
	touched map[model.ServiceAliasConfigKey]bool
	// routeFiles are the route files among Files.
	routeFiles routeFiles
	// nothing: see RendersNothing.
	nothing bool
}

// Pass runs the pipeline once on the objects of src.
func Pass(src Source, in Inputs, st State) (*Output, error) {
	out := &Output{}
	err := src.Read(func(v store.View) error {
		out.Generation = v.Generation()
		out.Decision, out.Exclusions, out.Gateway = admit(v, in, st)
		out.Model = builder.Build(v, out.Decision.Admitted, buildOptions(in, out.Gateway))
		out.Model.SettingsKeys = templates.SettingsKeys(*out.Model)
		out.Model.MapKeys = templates.CountMapKeys(*out.Model)
		if len(out.Model.HostResponses) > 0 {
			// The Gateway API's frontend rules, once for the model
			// and the partial renders made from it (a change of the
			// HostResponses is a full pass).
			out.Model.HeaderChains = templates.ComputeHeaderChains(*out.Model)
			out.Model.RouteLookups = templates.CountRouteLookups(*out.Model)
		}
		if out.Gateway != nil {
			out.Model.GatewayPassthrough = templates.HasGatewayPassthrough(*out.Model)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the objects: %w", err)
	}
	out.Budget = ShareBudget(out.Model, in.Servers.PoolSize, in.FDLimit)
	so := in.Servers
	so.Pools, so.Generation = out.Budget.Pools, out.Generation
	so.CheckedSlots, so.UncheckedEndpoints = out.Budget.Checked, out.Budget.UncheckedSet()
	servers.Assign(out.Model, st.Layouts, so)
	fs, rf, err := renderAll(out.Model, in.withGateway(out.Gateway), "", nil, routeFilesOf(out.Model))
	if err != nil {
		return nil, err
	}
	out.Files, out.routeFiles = fs, rf
	out.ConfigPath = filepath.Clean(layout.New(out.Model.WorkingDir).Config())
	out.Config = FileData(fs, out.ConfigPath)
	return out, nil
}

// Compact reports whether every backend of out is laid out as afresh: a
// reload of it frees every spare slot and health-checks what the budget
// plans (otherwise a reload should lay it out afresh first).
func (out *Output) Compact() bool {
	return servers.Compact(out.Model, servers.Options{CheckedSlots: out.Budget.Checked, UncheckedEndpoints: out.Budget.UncheckedSet()})
}

// buildOptions are in.Build with what the translation of the Gateway
// API's objects, gw, asks of the model.
func buildOptions(in Inputs, gw *gateway.Result) builder.Options {
	o := in.Build
	if gw != nil {
		o.HostResponses, o.Made = gw.HostResponses, gw.MadeRoute
	}
	return o
}

// withGateway is in with what the translation of the Gateway API's
// objects, gw, asks of the files: a Gateway's certificate as the default
// certificate (gateway.Options.DefaultCertificateFrom).
func (in Inputs) withGateway(gw *gateway.Result) Inputs {
	if gw != nil && gw.DefaultCertificate != nil {
		in.DefaultCertificate = gw.DefaultCertificate
	}
	return in
}

// admit admits the routes of v and those the Gateway API's objects
// translate into (none with st.NoRoutes), with the exclusions of st still
// in force (returned) and the external certificates resolved.
func admit(v store.View, in Inputs, st State) (admission.Decision, map[admission.Key]Exclusion, *gateway.Result) {
	var routes []*routev1.Route
	var gw *gateway.Result
	if !st.NoRoutes {
		routes = in.Hostnames.Apply(v.Routes())
		if in.Gateway != nil {
			gw = gateway.Translate(v, *in.Gateway)
			routes = append(routes, gw.Routes...)
		}
	}
	opts := in.Admission
	if gw != nil {
		opts.Made, opts.ClaimGroup, opts.ClaimSide = gw.Made, gw.ClaimGroup, gw.ClaimSide
		// (Asked of every route when set: left out when no route has one.)
		if gw.ClaimPaths > 0 {
			opts.ClaimPath = gw.ClaimPath
		}
		if len(gw.Conditional) > 0 {
			opts.HeaderMatched = gw.HeaderMatched
		}
	}
	exclusions := CurrentExclusions(st.Exclusions, routes)
	if len(exclusions) > 0 {
		opts.Excluded = make(map[admission.Key]admission.Result, len(exclusions))
		for k, ex := range exclusions {
			opts.Excluded[k] = ex.Result
		}
	}
	if in.ExternalCertificates != nil {
		var rejected map[admission.Key]admission.Result
		routes, rejected, opts.Pending = in.ExternalCertificates.Resolve(v, routes)
		if len(rejected) > 0 {
			merged := make(map[admission.Key]admission.Result, len(opts.Excluded)+len(rejected))
			for k, res := range opts.Excluded {
				merged[k] = res
			}
			for k, res := range rejected {
				merged[k] = res
			}
			opts.Excluded = merged
		}
	}
	// (gw's statuses are finished by whoever writes them: Finish.)
	return admission.Admit(routes, opts), exclusions, gw
}

// CurrentExclusions returns the exclusions of routes that are still
// present and unchanged, so a fixed or deleted route is no longer
// rejected. ex is not modified.
func CurrentExclusions(ex map[admission.Key]Exclusion, routes []*routev1.Route) map[admission.Key]Exclusion {
	if len(ex) == 0 {
		return nil
	}
	out := map[admission.Key]Exclusion{}
	for _, r := range routes {
		k := admission.KeyOf(r)
		e, ok := ex[k]
		if !ok {
			continue
		}
		// The API server bumps generation on spec changes only (not on
		// status writes); the manifests source has no generation and
		// changes the resource version with the content.
		if r.Generation != e.Generation || (r.Generation == 0 && r.ResourceVersion != e.ResourceVersion) {
			continue
		}
		out[k] = e
	}
	return out
}

// Render renders every file for td: the template's files, the routes'
// certificates and allowlists, in.ExtraFiles and the default certificate.
func Render(td *model.TemplateData, in Inputs) ([]files.File, error) {
	fs, _, err := renderAll(td, in, "", nil, routeFilesOf(td))
	return fs, err
}

// routeFiles are the files written for each route, apart from those a
// template writes: certificates (with destination CAs) and allowlists,
// each in key order, as files.CertificateFiles and files.AllowlistFiles
// make them.
type routeFiles struct {
	certs, allowlists []files.File
}

// routeFilesOf makes the route files of every route of td.
func routeFilesOf(td *model.TemplateData) routeFiles {
	return routeFiles{certs: files.CertificateFiles(td), allowlists: files.AllowlistFiles(td)}
}

// following returns the route files of td: those of part (the routes
// rendered again) made afresh, the other routes' taken from rf (whose
// routes not in td are dropped) — without making every route's files
// again for a change of one.
func (rf routeFiles) following(td, part *model.TemplateData) routeFiles {
	keep := func(prev, made []files.File) []files.File {
		out := make([]files.File, 0, len(prev)+len(made))
		for _, f := range prev {
			if _, again := part.State[f.Route]; again {
				continue
			}
			if _, ok := td.State[f.Route]; !ok {
				continue
			}
			for len(made) > 0 && made[0].Route < f.Route {
				out, made = append(out, made[0]), made[1:]
			}
			out = append(out, f)
		}
		return append(out, made...)
	}
	return routeFiles{certs: keep(rf.certs, files.CertificateFiles(part)), allowlists: keep(rf.allowlists, files.AllowlistFiles(part))}
}

// renderAll renders every file for td, with the route files rf; with
// config set, that is haproxy.config (at configPath) and the template's
// is not rendered. It returns the files and rf as they are written (an
// allowlist the template writes itself is not in it).
func renderAll(td *model.TemplateData, in Inputs, configPath string, config []byte, rf routeFiles) ([]files.File, routeFiles, error) {
	var extra []files.File
	if in.ExtraFiles != nil {
		extra = in.ExtraFiles(td)
	}
	var rendered []templates.File
	var err error
	if config == nil {
		rendered, err = in.Renderer.Render(td)
	} else {
		rendered, err = in.Renderer.RenderExcept(td, configPath)
	}
	if err != nil {
		return nil, routeFiles{}, err
	}
	out := make([]files.File, 0, len(extra)+len(rendered)+len(rf.certs)+len(rf.allowlists)+2)
	out = append(out, extra...)
	written := make(map[string]bool, len(rendered))
	for _, f := range rendered {
		out = append(out, files.File{Path: f.Path, Data: f.Data})
		written[filepath.Clean(f.Path)] = true
	}
	if config != nil {
		// In the place the template's own would have (by path).
		out = append(out, files.File{Path: configPath, Data: config})
		sort.SliceStable(out[len(extra):], func(i, j int) bool {
			return out[len(extra)+i].Path < out[len(extra)+j].Path
		})
	}
	// A template's generateHAProxyAllowlistFile wrote it already.
	byTemplate := func(f files.File) bool { return written[filepath.Clean(f.Path)] }
	if slices.ContainsFunc(rf.allowlists, byTemplate) {
		rf.allowlists = slices.DeleteFunc(slices.Clone(rf.allowlists), byTemplate)
	}
	out = append(out, rf.certs...)
	out = append(out, rf.allowlists...)
	if td.DefaultCertificate != "" && len(in.DefaultCertificate) > 0 {
		out = append(out, files.File{Path: td.DefaultCertificate, Data: in.DefaultCertificate, Mode: layout.FileMode})
	}
	return out, rf, nil
}

// FileData returns the contents of the file at path among fs, or nil.
func FileData(fs []files.File, path string) []byte {
	path = filepath.Clean(path)
	for _, f := range fs {
		if filepath.Clean(f.Path) == path {
			return f.Data
		}
	}
	return nil
}
