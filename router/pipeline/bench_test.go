package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// benchStore holds n unsecured routes, each with its own service and a
// two-endpoint EndpointSlice, spread over n/100+1 namespaces.
func benchStore(n int) *store.Store {
	st := store.New()
	port, portName := int32(8080), "web"
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i/100)
		name := fmt.Sprintf("app-%d", i)
		st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 80}}}})
		st.Upsert(&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.%d.%d.1", i/256%256, i%256)}},
				{Addresses: []string{fmt.Sprintf("10.%d.%d.2", i/256%256, i%256)}},
			},
		})
		r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: routev1.RouteSpec{Host: name + ".apps.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: name}}}
		if i%4 == 1 {
			r.Spec.Path = "/api"
			r.Spec.Host = fmt.Sprintf("app-%d.apps.example.com", i-1)
			r.Namespace = fmt.Sprintf("ns-%d", (i-1)/100)
		}
		st.Upsert(r)
	}
	return st
}

// benchInputs are the pass inputs of the benchmarks: the router's
// defaults (5 spare server slots per backend).
func benchInputs(r *templates.Renderer, dir string) Inputs {
	// The validation memo as the router runs.
	return Inputs{Renderer: r, Admission: admission.Options{Memo: admission.NewValidationMemo()},
		Build: builder.Options{WorkingDir: dir, RunDir: filepath.Join(dir, "run"), DefaultCertificate: filepath.Join(dir, "conf", "default.pem"),
			HTTPPort: 80, HTTPSPort: 443, BindPorts: true, MaxConnections: 20000},
		Servers: servers.Options{PoolSize: 5}}
}

// BenchmarkEndpointChange measures a full pass for one endpoint change
// with n routes loaded — admit, build, lay the servers out against the
// running layout, render, and diff the whole configuration into runtime
// API commands (sending them is not included) — as the router did for
// every endpoint change before BenchmarkEndpointChangeIncremental, and
// still does before a reload.
func BenchmarkEndpointChange(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			st, in, out := benchSetup(b, n)
			running, layouts := dynamic.Parse(out.Config), servers.Of(out.Model)
			port, portName := int32(8080), "web"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// A third endpoint for one service, a different one each time.
				name := fmt.Sprintf("app-%d", (i*7)%n)
				st.Upsert(&discoveryv1.EndpointSlice{
					ObjectMeta:  metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", ((i*7)%n)/100), Name: name + "-2", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
					AddressType: discoveryv1.AddressTypeIPv4,
					Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
					Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.200.%d.%d", i/256%256, i%256)}}},
				})
				out, err := Pass(st, in, State{Layouts: layouts})
				if err != nil {
					b.Fatal(err)
				}
				parsed := dynamic.Parse(out.Config)
				change := dynamic.Diff(running, parsed)
				if change.Reload || len(change.Commands) != 3 {
					b.Fatalf("change %+v", change)
				}
				running, layouts = parsed, servers.Of(out.Model)
			}
		})
	}
}

// BenchmarkEndpointChangeIncremental measures the router's work for one
// endpoint change with n routes loaded, as the controller does it now:
// the change worked out alone (UpdateEndpoints: the routes of the changed
// service rebuilt, laid out and rendered) and the runtime API commands of
// their sections (dynamic.DiffSections), applied to the running
// configuration and the kept model (sending them is not included), and
// haproxy.config written with those sections replaced (dynamic.Text;
// writeFile false leaves the write out). The
// setup (the full pass before) is not measured; the first change after a
// pass (rendering the template once without routes) is.
func BenchmarkEndpointChangeIncremental(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		for _, writeFile := range []bool{true, false} {
			b.Run(fmt.Sprintf("routes=%d/write=%v", n, writeFile), func(b *testing.B) {
				benchEndpointChangeIncremental(b, n, writeFile)
			})
		}
	}
}

func benchEndpointChangeIncremental(b *testing.B, n int, writeFile bool) {
	{
		{
			st, in, out := benchSetup(b, n)
			running, text := dynamic.Parse(out.Config), dynamic.NewText(out.Config)
			w := files.NewWriter()
			if _, err := w.Stage(out.Files); err != nil {
				b.Fatal(err)
			}
			w.Commit()
			port, portName := int32(8080), "web"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// A third endpoint for one service, a different one each
				// time; every slice of a service gets a new address each
				// round, so every change is one.
				j := (i * 7) % n
				name := fmt.Sprintf("app-%d", j)
				st.Upsert(&discoveryv1.EndpointSlice{
					ObjectMeta:  metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", j/100), Name: name + "-2", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
					AddressType: discoveryv1.AddressTypeIPv4,
					Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
					Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.200.%d.%d", i/256%256, i%256)}}},
				})
				ch, err := UpdateEndpoints(st, in, out)
				if err != nil || ch.Full != "" {
					b.Fatal(err, ch.Full)
				}
				change := dynamic.DiffSections(running, ch.Sections)
				if change.Reload || len(change.Commands) != 3*len(ch.Routes) {
					b.Fatalf("change %+v for %v", change, ch.Routes)
				}
				running.Replace(change.Running)
				out.Apply(ch)
				if !text.Replace(ch.Config, ch.Sections.Headers()) {
					b.Fatal("sections not replaced")
				}
				if writeFile {
					if err := w.Rewrite(out.ConfigPath, 0, func(w io.Writer) error {
						_, err := text.WriteTo(w)
						return err
					}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(out.Config))/1e6, "MB-config")
		}
	}
}

// BenchmarkRenderAndWrite measures one full pass of the pipeline — admit,
// build, render the default template, write every changed file — for n
// routes, as the router does after a change (all files rewritten: each
// iteration writes into a fresh writer).
func BenchmarkRenderAndWrite(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			st := benchStore(n)
			r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			in := benchInputs(r, dir)
			b.ReportAllocs()
			b.ResetTimer()
			var size int64
			for i := 0; i < b.N; i++ {
				out, err := Pass(st, in, State{})
				if err != nil {
					b.Fatal(err)
				}
				fs := out.Files
				if len(out.Decision.Admitted) != n {
					b.Fatalf("admitted %d of %d", len(out.Decision.Admitted), n)
				}
				w := files.NewWriter()
				if _, err := w.Stage(fs); err != nil {
					b.Fatal(err)
				}
				w.Commit()
				if i == 0 {
					for _, f := range fs {
						size += int64(len(f.Data))
					}
				}
			}
			b.ReportMetric(float64(size)/1e6, "MB-written")
			os.RemoveAll(dir)
		})
	}
}

// BenchmarkRouteChange measures the router's work for one route added or
// removed (alternately) with n routes loaded, as the controller does it
// before the reload that loads it: UpdateRoutes (admission of every route,
// the changed routes rebuilt, laid out and rendered, spliced into the
// previous haproxy.config, the other files rendered from the model);
// writing the files and the reload are not included. full=true measures
// the full pass it replaces.
func BenchmarkRouteChange(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		for _, full := range []bool{false, true} {
			b.Run(fmt.Sprintf("routes=%d/full=%v", n, full), func(b *testing.B) {
				st, in, out := benchSetup(b, n)
				var err error
				extra := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "app-added"},
					Spec: routev1.RouteSpec{Host: "added.apps.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "app-0"}}}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i%2 == 0 {
						st.Upsert(extra)
					} else {
						st.Delete(extra)
					}
					if full {
						if out, err = Pass(st, in, State{}); err != nil {
							b.Fatal(err)
						}
						continue
					}
					next, why, err := UpdateRoutes(st, in, State{}, out)
					if err != nil || why != "" {
						b.Fatal(err, why)
					}
					out = next
				}
			})
		}
	}
}

// benchSetup is benchStore(n) with the default template and a full
// pass's output.
func benchSetup(b *testing.B, n int) (*store.Store, Inputs, *Output) {
	b.Helper()
	st := benchStore(n)
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	in := benchInputs(r, b.TempDir())
	out, err := Pass(st, in, State{})
	if err != nil {
		b.Fatal(err)
	}
	return st, in, out
}

// BenchmarkRouteUpdate: one route's annotation changes back and forth (no
// route admitted or dropped), worked out following what runs
// (UpdateRoutesFollowing) against the full pass on the running layouts
// that ran before (full=true). Writing the files and the runtime API or
// reload are not included.
func BenchmarkRouteUpdate(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		for _, full := range []bool{false, true} {
			b.Run(fmt.Sprintf("routes=%d/full=%v", n, full), func(b *testing.B) {
				st, in, out := benchSetup(b, n)
				var updated *routev1.Route
				_ = st.Read(func(v store.View) error {
					updated = v.Route("ns-0", "app-4").DeepCopy()
					return nil
				})
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r := updated.DeepCopy()
					if i%2 == 0 {
						r.Annotations = map[string]string{"haproxy.router.openshift.io/timeout": "7s"}
					}
					st.Upsert(r)
					out = followChange(b, st, in, out, full)
				}
			})
		}
	}
}

// BenchmarkHTTPRouteUpdate is BenchmarkRouteUpdate for an HTTPRoute: with n
// routes loaded (and a Gateway of this router), one HTTPRoute's weights
// change back and forth, worked out following what runs
// (UpdateRoutesFollowing) against a full pass (full=true). With
// httproutes=true the n routes are HTTPRoutes too (one hostname each, on
// the Gateway of their namespace), translated on every pass.
func BenchmarkHTTPRouteUpdate(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, c := range []struct{ full, httpRoutes bool }{{false, false}, {true, false}, {false, true}} {
			full := c.full
			b.Run(fmt.Sprintf("routes=%d/full=%v/httproutes=%v", n, full, c.httpRoutes), func(b *testing.B) {
				st := benchStore(n)
				if c.httpRoutes {
					asHTTPRoutes(st)
				}
				st.Upsert(&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"},
					Spec: gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName}})
				st.Upsert(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "gw"},
					Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}})
				hr := func(w int32) *gatewayv1.HTTPRoute {
					return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "hr"},
						Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
							Hostnames: []gatewayv1.Hostname{"gw.apps.example.com"},
							Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{
								{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "app-0", Port: ptr.To[gatewayv1.PortNumber](80)}, Weight: ptr.To(w)}},
								{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "app-4", Port: ptr.To[gatewayv1.PortNumber](80)}}},
							}}}}}
				}
				st.Upsert(hr(1))
				r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
				if err != nil {
					b.Fatal(err)
				}
				in := benchInputs(r, b.TempDir())
				in.Gateway = &gateway.Options{Memo: gateway.NewMemo()}
				out, err := Pass(st, in, State{})
				if err != nil || len(out.Gateway.Routes) < 1 {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					st.Upsert(hr(int32(2 + i%2)))
					out = followChange(b, st, in, out, full)
				}
			})
		}
	}
}

// followChange works a change of st out following what runs
// (UpdateRoutesFollowing), or with full by a full pass on the running
// layouts, and returns the new output.
func followChange(b *testing.B, st *store.Store, in Inputs, out *Output, full bool) *Output {
	if full {
		next, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
		if err != nil {
			b.Fatal(err)
		}
		return next
	}
	next, why, err := UpdateRoutesFollowing(st, in, State{}, out)
	if err != nil || why != "" {
		b.Fatal(err, why)
	}
	return next
}

// asHTTPRoutes replaces the Routes of st by HTTPRoutes (same namespace,
// name, host, path and service) on a Gateway of each namespace.
func asHTTPRoutes(st *store.Store) {
	var routes []*routev1.Route
	_ = st.Read(func(v store.View) error {
		routes = v.Routes()
		return nil
	})
	gateways := map[string]bool{}
	for _, r := range routes {
		if !gateways[r.Namespace] {
			gateways[r.Namespace] = true
			st.Upsert(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "gw"},
				Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}})
		}
		path := r.Spec.Path
		if path == "" {
			path = "/"
		}
		st.Delete(r)
		st.Upsert(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
				Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(r.Spec.Host)},
				Rules: []gatewayv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: &path}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
						Name: gatewayv1.ObjectName(r.Spec.To.Name), Port: ptr.To[gatewayv1.PortNumber](80)}}}}}}}})
	}
}
