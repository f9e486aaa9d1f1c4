package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// endpointSlice is a slice of service svc in namespace ns with one ready
// endpoint per address (ready false: every endpoint not ready).
func endpointSlice(ns, name, svc string, ready bool, addrs ...string) *discoveryv1.EndpointSlice {
	port, portName := int32(8080), "web"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, a := range addrs {
		r := ready
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &r}})
	}
	return s
}

// incrementalStore has routes with one service, a route with an
// alternate backend sharing a service with another route, and a service
// no route uses.
func incrementalStore() *store.Store {
	st := store.New()
	for _, svc := range []string{"a", "b", "c", "unused"} {
		st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: svc},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}})
	}
	st.Upsert(endpointSlice("ns", "a-1", "a", true, "10.0.1.1", "10.0.1.2"))
	st.Upsert(endpointSlice("ns", "b-1", "b", true, "10.0.2.1"))
	st.Upsert(endpointSlice("ns", "c-1", "c", true, "10.0.3.1", "10.0.3.2"))
	st.Upsert(endpointSlice("ns", "unused-1", "unused", true, "10.0.4.1"))
	w := int32(30)
	for _, r := range []*routev1.Route{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ra"}, Spec: routev1.RouteSpec{Host: "a.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rb"}, Spec: routev1.RouteSpec{Host: "b.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "b"},
			AlternateBackends: []routev1.RouteTargetReference{{Kind: "Service", Name: "a", Weight: &w}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc"}, Spec: routev1.RouteSpec{Host: "c.example.com", Path: "/c", To: routev1.RouteTargetReference{Kind: "Service", Name: "c"}}},
	} {
		st.Upsert(r)
	}
	return st
}

// TestIncrementalEndpointChangesEqualAFullPass applies a series of
// endpoint changes incrementally (UpdateEndpoints, the runtime diff of
// the routes' sections only) and checks, after each, that the model so
// kept renders exactly the configuration a full pass renders, and that
// what HAProxy would run (the running configuration patched section by
// section) is what a full pass's configuration loads.
func TestIncrementalEndpointChangesEqualAFullPass(t *testing.T) {
	openshiftStyle, err := os.ReadFile("../../test/e2e/testdata/openshift-style.template")
	if err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		name   string
		change func(st *store.Store)
		routes int // routes the change touches
	}{
		{"an endpoint added to a service of two routes", func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "a-2", "a", true, "10.0.1.3"))
		}, 2},
		{"an endpoint no longer ready", func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "c-1", "c", true, "10.0.3.1"))
			st.Upsert(endpointSlice("ns", "c-1", "c", false, "10.0.3.1", "10.0.3.2"))
		}, 1},
		{"a slice removed", func(st *store.Store) {
			st.Delete(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-2"}})
		}, 2},
		{"a service no route uses", func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "unused-1", "unused", true, "10.0.4.2"))
		}, 0},
		{"an address replaced", func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "b-1", "b", true, "10.0.2.9"))
		}, 1},
		{"endpoints back", func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "c-1", "c", true, "10.0.3.1", "10.0.3.2", "10.0.3.3"))
		}, 1},
	}
	tests := []struct {
		name     string
		template string
		// exact: the file with the routes' sections replaced is the full
		// render byte for byte (the template's other sections do not
		// depend on endpoints; the OpenShift-style one lists endpoint
		// counts in comments).
		exact bool
	}{
		{"default template", templates.Default(), true},
		{"OpenShift-style template (a line per endpoint)", string(openshiftStyle), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := templates.Parse("t", tt.template, templates.FuncMap(templates.FuncOptions{}))
			if err != nil {
				t.Fatal(err)
			}
			in := benchInputs(r, t.TempDir())
			st := incrementalStore()
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			running, text := dynamic.Parse(out.Config), dynamic.NewText(out.Config)
			incremental := 0
			for _, c := range changes {
				c.change(st)
				ch, err := UpdateEndpoints(st, in, out)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if ch.Full != "" {
					t.Fatalf("%s: needs a full pass: %s", c.name, ch.Full)
				}
				if len(ch.Routes) != c.routes {
					t.Fatalf("%s: rebuilt %v, want %d routes", c.name, ch.Routes, c.routes)
				}
				full, err := Pass(st, in, State{Layouts: layoutsAfter(out, ch)})
				if err != nil {
					t.Fatal(err)
				}
				diff := dynamic.DiffSections(running, ch.Sections)
				if diff.Reload {
					// As the controller: a reload loads the full pass.
					t.Logf("%s: reload (%s at %s)", c.name, diff.Reason, diff.Where)
					out, running, text = full, dynamic.Parse(full.Config), dynamic.NewText(full.Config)
					continue
				}
				incremental++
				running.Replace(diff.Running)
				out.Apply(ch)
				kept, err := Render(out.Model, in)
				if err != nil {
					t.Fatal(err)
				}
				if got := FileData(kept, out.ConfigPath); !bytes.Equal(got, full.Config) {
					t.Fatalf("%s: the incrementally kept model renders another configuration than a full pass:\n%s", c.name, lineDiff(got, full.Config))
				}
				if d := dynamic.Diff(running, dynamic.Parse(full.Config)); d.Reload || len(d.Commands) > 0 {
					t.Fatalf("%s: HAProxy would run another configuration than the full pass's: %+v", c.name, d)
				}
				// The file on disk: the routes' sections replaced.
				if !text.Replace(ch.Config, ch.Sections.Headers()) {
					t.Fatalf("%s: sections %v not replaced", c.name, ch.Sections.Headers())
				}
				disk := text.Bytes()
				if tt.exact && !bytes.Equal(disk, full.Config) {
					t.Fatalf("%s: the file with the routes' sections replaced is not the full render:\n%s", c.name, lineDiff(disk, full.Config))
				}
				if d := dynamic.Diff(dynamic.Parse(disk), dynamic.Parse(full.Config)); d.Reload || len(d.Commands) > 0 {
					t.Fatalf("%s: the file with the routes' sections replaced loads another configuration than the full render: %+v", c.name, d)
				}
			}
			if incremental < len(changes)-1 {
				t.Fatalf("only %d of %d changes were applied incrementally", incremental, len(changes))
			}
		})
	}
}

// layoutsAfter are the server layouts of out with ch's routes laid out
// as ch has them: what the controller runs after applying ch.
func layoutsAfter(out *Output, ch *EndpointChange) servers.Layouts {
	l := servers.Of(out.Model)
	for k, cfg := range ch.State {
		l[k] = cfg.Servers
	}
	return l
}

// lineDiff shows the first lines where a and b differ.
func lineDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y []byte
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return "(equal)"
}

// TestEndpointChangesAreWorkedOutAloneWhateverTheBudget: an endpoint
// change is worked out alone (and the kept model renders what a full pass
// on the same layouts renders) whether the open-files budget checks every
// line or not: endpoints that come at runtime take spare slots, for which
// HAProxy reserves nothing more; only a fresh layout (a reload) takes the
// health checks the budget plans.
func TestEndpointChangesAreWorkedOutAloneWhateverTheBudget(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	// Three routes with 5 slots each: ra with 2 endpoints (2 + 5 checked
	// lines), rb with 3 (of b and a: 3 + 5), rc with 2 (2 + 5): a demand
	// of 22. One endpoint more for a adds one to ra and rb each.
	tests := []struct {
		name    string
		servers int // the server budget
		change  func(st *store.Store)
		full    string
	}{
		{"room to spare", 40, func(st *store.Store) { st.Upsert(endpointSlice("ns", "a-2", "a", true, "10.0.1.3")) }, ""},
		{"the change exceeds the budget", 22, func(st *store.Store) { st.Upsert(endpointSlice("ns", "a-2", "a", true, "10.0.1.3")) }, ""},
		{"the budget was short already", 10, func(st *store.Store) { st.Upsert(endpointSlice("ns", "a-2", "a", true, "10.0.1.3")) }, ""},
		{"fewer endpoints always fit", 22, func(st *store.Store) { st.Upsert(endpointSlice("ns", "c-1", "c", true, "10.0.3.1")) }, ""},
		{"a short budget stays as it is when no route's number of endpoints changes", 10, func(st *store.Store) {
			st.Upsert(endpointSlice("ns", "c-1", "c", true, "10.0.3.1", "10.0.3.9"))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := benchInputs(r, t.TempDir())
			in.Build.MaxConnections = 100
			// ServerBudget(limit, 100) = limit - 2*100 - 1000.
			in.FDLimit = tt.servers + 1200
			st := incrementalStore()
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Budget.Servers != tt.servers || out.Budget.Demand != 22 {
				t.Fatalf("budget %d, demand %d", out.Budget.Servers, out.Budget.Demand)
			}
			tt.change(st)
			ch, err := UpdateEndpoints(st, in, out)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Full != tt.full {
				t.Fatalf("full pass %q, want %q", ch.Full, tt.full)
			}
			if ch.Full != "" {
				return
			}
			full, err := Pass(st, in, State{Layouts: layoutsAfter(out, ch)})
			if err != nil {
				t.Fatal(err)
			}
			out.Apply(ch)
			if out.Budget.Demand != full.Budget.Demand {
				t.Fatalf("demand kept %d, full pass %d", out.Budget.Demand, full.Budget.Demand)
			}
			kept, err := Render(out.Model, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := FileData(kept, out.ConfigPath); !bytes.Equal(got, full.Config) {
				t.Fatalf("the kept model renders another configuration than a full pass:\n%s", lineDiff(got, full.Config))
			}
		})
	}
}
