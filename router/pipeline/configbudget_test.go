package pipeline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/headeractions"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/testcerts"
)

// withHeaders gives r n request and response Set actions (20 of each at
// most) with values of size bytes.
func withHeaders(r *routev1.Route, n, size int) *routev1.Route {
	h := &routev1.RouteHTTPHeaders{}
	for i := 0; i < n; i++ {
		a := routev1.RouteHTTPHeader{Name: fmt.Sprintf("X-Big-%02d", i%headeractions.MaxActions),
			Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: strings.Repeat("v", size)}}}
		if i < headeractions.MaxActions {
			h.Actions.Request = append(h.Actions.Request, a)
		} else {
			h.Actions.Response = append(h.Actions.Response, a)
		}
	}
	r.Spec.HTTPHeaders = h
	return r
}

// bigRoute is route i of the namespace "big": 40 header actions of 16 KiB
// values (the API's limits), created at second 100+i.
func bigRoute(i int) *routev1.Route {
	return withHeaders(route("big", fmt.Sprintf("r%02d", i), fmt.Sprintf("r%02d.big.example.com", i), "", "a", int64(100+i)), 40, headeractions.MaxValueLength)
}

// budgetResults fails unless exactly the routes of big named rejected are
// rejected for the configuration budget and every other route of st is
// admitted and has its backend in out's configuration, which stays under
// limit bytes.
func budgetResults(t *testing.T, out *Output, rejected []string, limit int) {
	t.Helper()
	want := map[admission.Key]bool{}
	for _, k := range rejected {
		want[admission.Key(k)] = true
	}
	for k, res := range out.Decision.Results {
		backend := strings.Contains(string(out.Config), ":"+strings.Replace(string(k), "/", ":", 1)+"\n")
		switch {
		case want[k] && (res.Admitted || res.Reason != admission.ReasonConfigBudgetExceeded):
			t.Errorf("%s: %+v, want rejected for the configuration budget", k, res)
		case want[k] && backend:
			t.Errorf("%s: rejected, but its backend is in the configuration", k)
		case !want[k] && !res.Admitted:
			t.Errorf("%s: %+v, want admitted", k, res)
		case !want[k] && !backend:
			t.Errorf("%s: admitted, but its backend is not in the configuration", k)
		}
	}
	if len(out.Config) > limit {
		t.Errorf("haproxy.config has %d bytes, over %d", len(out.Config), limit)
	}
}

// bigNames are the keys of the big routes from..to-1.
func bigNames(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("big/r%02d", i))
	}
	return out
}

// TestConfigBudgetOnBothPaths: a namespace with 20 routes of 40 header
// actions of 16 KiB values (13 MB of haproxy.config) under a 4 MiB budget
// keeps the routes that fit in its share (6) and the others are rejected,
// the youngest first of equal sizes, while the other namespace's routes
// are all applied — on a full pass and on route updates (UpdateRoutes and
// UpdateRoutesFollowing), whose results equal a full pass's at every step.
func TestConfigBudgetOnBothPaths(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 4 << 20
	limit := budget + 64<<10
	in := benchInputs(r, t.TempDir())
	in.Admission.MaxConfigBytes = budget

	t.Run("full pass", func(t *testing.T) {
		st := incrementalStore()
		for i := 0; i < 20; i++ {
			st.Upsert(bigRoute(i))
		}
		out, err := Pass(st, in, State{})
		if err != nil {
			t.Fatal(err)
		}
		budgetResults(t, out, bigNames(6, 20), limit)
	})

	t.Run("route updates", func(t *testing.T) {
		st := incrementalStore()
		st.Upsert(route("ns", "rbz", "bz.example.com", "", "b", 5)) // a route to probe
		out, err := Pass(st, in, State{})
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name     string
			change   func(st *store.Store)
			rejected []string
			// following: the change admits or drops no route.
			following bool
		}{
			{"20 big routes come", func(st *store.Store) {
				for i := 0; i < 20; i++ {
					st.Upsert(bigRoute(i))
				}
			}, bigNames(6, 20), false},
			{"an admitted big route shrinks: the oldest rejected one fits", func(st *store.Store) {
				st.Upsert(withHeaders(route("big", "r00", "r00.big.example.com", "", "a", 100), 1, 100))
			}, bigNames(7, 20), false},
			{"an older big route comes: the youngest admitted one goes", func(st *store.Store) {
				st.Upsert(withHeaders(route("big", "old", "old.big.example.com", "", "a", 50), 40, headeractions.MaxValueLength))
			}, bigNames(6, 20), false},
			{"a rejected big route changes and stays rejected", func(st *store.Store) {
				r19 := bigRoute(19)
				r19.Annotations = map[string]string{"example.com/note": "changed"}
				st.Upsert(r19)
			}, bigNames(6, 20), true},
			{"a rejected big route gets smaller than the others: it is admitted, the youngest admitted one goes", func(st *store.Store) {
				st.Upsert(withHeaders(route("big", "r18", "r18.big.example.com", "", "a", 118), 39, headeractions.MaxValueLength))
			}, append(bigNames(5, 18), "big/r19"), false},
			{"the other namespace's route changes", func(st *store.Store) {
				ra := route("ns", "ra", "a.example.com", "", "a", 0)
				ra.Annotations = map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
				st.Upsert(ra)
			}, append(bigNames(5, 18), "big/r19"), true},
		}
		for _, s := range steps {
			s.change(st)
			want, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			if s.following {
				if _, full, err := UpdateRoutes(st, in, State{}, out); err != nil || full != FullNoBackendChange {
					t.Fatalf("%s: UpdateRoutes: %q, %v; want %q", s.name, full, err, FullNoBackendChange)
				}
				next, full, err := UpdateRoutesFollowing(st, in, State{}, out)
				if err != nil || full != "" {
					t.Fatalf("%s: UpdateRoutesFollowing: full pass %q, %v", s.name, full, err)
				}
				onRunning, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
				if err != nil {
					t.Fatal(err)
				}
				t.Run(s.name, func(t *testing.T) {
					sameFiles(t, next, onRunning)
					budgetResults(t, next, s.rejected, limit)
				})
				out = next
				continue
			}
			next, full, err := UpdateRoutes(st, in, State{}, out)
			if err != nil || full != "" {
				t.Fatalf("%s: UpdateRoutes: full pass %q, %v", s.name, full, err)
			}
			t.Run(s.name, func(t *testing.T) {
				sameOutput(t, next, want)
				budgetResults(t, next, s.rejected, limit)
			})
			out = next
		}
	})
}

// TestConfigBytesIsAnUpperBound: for routes of every kind, with long
// values, quotes, allowlists, rewrites and certificates, what the default
// template writes for a route (every file, haproxy.config and the maps
// included, server lines aside) is at most admission.ConfigBytes.
func TestConfigBytesIsAnUpperBound(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := testcerts.NewCA("budget CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 60)
	host := long + "." + long + "." + long + ".example.com"
	pair, err := ca.Issue(host, []string{host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	withTLS := func(r *routev1.Route, term routev1.TLSTerminationType) *routev1.Route {
		r.Spec.TLS = &routev1.TLSConfig{Termination: term, InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyRedirect}
		if term != routev1.TLSTerminationPassthrough {
			r.Spec.TLS.InsecureEdgeTerminationPolicy = routev1.InsecureEdgeTerminationPolicyAllow
			r.Spec.TLS.Certificate, r.Spec.TLS.Key, r.Spec.TLS.CACertificate = pair.CertPEM, pair.KeyPEM, ca.CertPEM
		}
		if term == routev1.TLSTerminationReencrypt {
			r.Spec.TLS.DestinationCACertificate = ca.CertPEM
		}
		return r
	}
	annotate := func(r *routev1.Route, kv ...string) *routev1.Route {
		r.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Annotations[kv[i]] = kv[i+1]
		}
		return r
	}
	var addrs []string
	for i := 0; i < 200; i++ {
		addrs = append(addrs, fmt.Sprintf("198.51.100.%d", i))
	}
	quoted := withHeaders(route("q", "quotes", "q.example.com", "/", "a", 1), 2, 100)
	quoted.Spec.HTTPHeaders.Actions.Request[0].Action.Set.Value = strings.Repeat("it's ", 3000)
	longPath := "/" + strings.Repeat("p", 1000)
	dots := strings.Repeat("a.", 120) + "example.com"
	special := "/" + strings.Repeat(".+*?()[]{}|^$", 60)
	routes := []*routev1.Route{
		route("ns", "plain", "plain.example.com", "", "a", 1),
		route(strings.Repeat("n", 63), strings.Repeat("r", 253), host, longPath, "a", 1),
		withTLS(route("esc", "special", dots, special, "a", 1), routev1.TLSTerminationEdge),
		withTLS(annotate(route("esc", "wild", "w."+dots, "", "a", 1), "haproxy.router.openshift.io/rewrite-target", special), routev1.TLSTerminationEdge),
		withHeaders(route("big", "r00", "r00.big.example.com", "", "a", 1), 40, headeractions.MaxValueLength),
		quoted,
		withTLS(withHeaders(route("tls", "edge", host, longPath, "a", 1), 20, 300), routev1.TLSTerminationEdge),
		withTLS(route("tls", "reencrypt", host, "", "a", 1), routev1.TLSTerminationReencrypt),
		withTLS(route("tls", "passthrough", host, "", "a", 1), routev1.TLSTerminationPassthrough),
		annotate(route("ann", "allow-inline", "ai.example.com", "", "a", 1), "haproxy.router.openshift.io/ip_allowlist", strings.Join(addrs[:60], " ")),
		annotate(route("ann", "allow-file", "af.example.com", "", "a", 1), "haproxy.router.openshift.io/ip_allowlist", strings.Join(addrs, " ")),
		annotate(withTLS(route("ann", "rewrite", "rw.example.com", longPath, "a", 1), routev1.TLSTerminationEdge),
			"haproxy.router.openshift.io/rewrite-target", longPath+"/x",
			"haproxy.router.openshift.io/hsts_header", "max-age=31536000;includeSubDomains;preload",
			"haproxy.router.openshift.io/timeout", "30s",
			"haproxy.router.openshift.io/rate-limit-connections", "true",
			"haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp", "10",
			"router.openshift.io/cookie_name", "mycookie"),
	}
	in := benchInputs(r, t.TempDir())
	in.Servers.PoolSize = 0
	in.Admission.ExtendedValidation = true
	st := incrementalStore()
	base, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		t.Run(rt.Namespace+"/"+rt.Name, func(t *testing.T) {
			st := incrementalStore()
			st.Upsert(rt)
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			res := out.Decision.Results[admission.KeyOf(rt)]
			if !res.Admitted {
				t.Fatalf("not admitted: %+v", res)
			}
			written := filesBytes(out.Files) - filesBytes(base.Files)
			est := admission.ConfigBytes(rt, nil)
			if written > est {
				t.Fatalf("the route's files take %d bytes, over its estimate %d", written, est)
			}
			if written <= 0 {
				t.Fatalf("the route's files take %d bytes: nothing measured", written)
			}
			t.Logf("written %d, estimated %d", written, est)
		})
	}
}

// filesBytes is the size of fs, server lines aside.
func filesBytes(fs []files.File) int {
	n := 0
	for _, f := range fs {
		n += len(f.Data)
		for _, line := range bytes.Split(f.Data, []byte("\n")) {
			if bytes.HasPrefix(bytes.TrimSpace(line), []byte("server ")) {
				n -= len(line) + 1
			}
		}
	}
	return n
}
