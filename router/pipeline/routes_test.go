package pipeline

import (
	"bytes"
	cryptotls "crypto/tls"
	"crypto/x509"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
	"github.com/openshift-router-go/router/test/testcerts"
)

// route is a route of ns to service svc (created at second created).
func route(ns, name, host, path, svc string, created int64) *routev1.Route {
	return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(time.Unix(1700000000+created, 0))},
		Spec: routev1.RouteSpec{Host: host, Path: path, To: routev1.RouteTargetReference{Kind: "Service", Name: svc}}}
}

// httpRoute is HTTPRoute ns/hr, attached to Gateway ns/gw, for host (""
// none: every host); rules are "path=service[:weight]+..." (a path
// prefix; "exact path=..." matches the path exactly).
func httpRoute(host string, created int64, rules ...string) *gatewayv1.HTTPRoute {
	hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hr", ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(time.Unix(1700000000+created, 0))},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}}}
	if host != "" {
		hr.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	}
	for _, r := range rules {
		path, backends, _ := strings.Cut(r, "=")
		match := &gatewayv1.HTTPPathMatch{Value: &path}
		if p, ok := strings.CutPrefix(path, "exact "); ok {
			path, match.Type = p, ptr.To(gatewayv1.PathMatchExact)
		}
		rule := gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: match}}}
		for _, b := range strings.Split(backends, "+") {
			svc, weight, _ := strings.Cut(b, ":")
			w, _ := strconv.Atoi(weight)
			ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: gatewayv1.ObjectName(svc), Port: ptr.To[gatewayv1.PortNumber](80)}}}
			if weight != "" {
				ref.Weight = ptr.To(int32(w))
			}
			rule.BackendRefs = append(rule.BackendRefs, ref)
		}
		hr.Spec.Rules = append(hr.Spec.Rules, rule)
	}
	return hr
}

// named is hr named name.
func named(name string, hr *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	hr.Name = name
	return hr
}

// filesByPath indexes fs by path.
func filesByPath(fs []files.File) map[string]string {
	out := make(map[string]string, len(fs))
	for _, f := range fs {
		out[f.Path] = string(f.Data)
	}
	return out
}

// sameOutput fails unless got (an UpdateRoutes) is what full (a Pass with
// fresh layouts) decided and rendered.
func sameOutput(t *testing.T, got, full *Output) {
	t.Helper()
	sameFiles(t, got, full)
	if !got.Compact() {
		t.Errorf("not laid out afresh")
	}
}

// sameFiles is sameOutput without the fresh layout: files, decisions,
// model and budget.
func sameFiles(t *testing.T, got, full *Output) {
	t.Helper()
	if !bytes.Equal(got.Config, full.Config) {
		t.Fatalf("haproxy.config differs from a full pass's:\n%s", lineDiff(got.Config, full.Config))
	}
	paths := func(fs []files.File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	if g, f := paths(got.Files), paths(full.Files); !slices.Equal(g, f) {
		t.Errorf("files in another order than a full pass's:\n%s", lineDiff([]byte(strings.Join(g, "\n")), []byte(strings.Join(f, "\n"))))
	}
	g, f := filesByPath(got.Files), filesByPath(full.Files)
	for p, data := range f {
		if g[p] != data {
			t.Errorf("file %s differs from a full pass's:\n%s", p, lineDiff([]byte(g[p]), []byte(data)))
		}
	}
	for p := range g {
		if _, ok := f[p]; !ok {
			t.Errorf("file %s is not a full pass's", p)
		}
	}
	if len(got.Decision.Results) != len(full.Decision.Results) {
		t.Errorf("%d results, a full pass %d", len(got.Decision.Results), len(full.Decision.Results))
	}
	for k, r := range full.Decision.Results {
		if got.Decision.Results[k] != r {
			t.Errorf("%s: %+v, a full pass %+v", k, got.Decision.Results[k], r)
		}
	}
	if len(got.Model.ServiceUnits) != len(full.Model.ServiceUnits) {
		t.Errorf("%d service units, a full pass %d", len(got.Model.ServiceUnits), len(full.Model.ServiceUnits))
	}
	for k, su := range full.Model.ServiceUnits {
		if g := got.Model.ServiceUnits[k].ServiceAliasAssociations; len(g) != len(su.ServiceAliasAssociations) {
			t.Errorf("service %s: routes %v, a full pass %v", k, g, su.ServiceAliasAssociations)
		}
	}
	if g, f := got.Model.SettingsKeys.Keys(), full.Model.SettingsKeys.Keys(); !slices.Equal(g, f) {
		t.Errorf("routes with map settings %v, a full pass %v", g, f)
	}
	if len(got.Model.CertificateIndex) != len(full.Model.CertificateIndex) {
		t.Errorf("certificate index %d entries, a full pass %d", len(got.Model.CertificateIndex), len(full.Model.CertificateIndex))
	}
	if got.Budget.Summary() != full.Budget.Summary() || got.Budget.Demand != full.Budget.Demand {
		t.Errorf("budget %v %d, a full pass %v %d", got.Budget.Summary(), got.Budget.Demand, full.Budget.Summary(), full.Budget.Demand)
	}
}

// TestRouteChangesEqualAFullPass applies series of route (and endpoint)
// changes with UpdateRoutes, each step from the output of the step before,
// and checks after each that the files, decisions and model are a full
// pass's: routes added (first, last and between others in key order),
// changed and removed, host claims moving between namespaces (an older
// route taking a host, then leaving it), endpoint changes with them, and
// backends whose endpoints had moved into spare slots laid out afresh.
func TestRouteChangesEqualAFullPass(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		name   string
		change func(st *store.Store)
		// full is the reason the step needs the full pass ("": none);
		// for an update of rules only a full pass renders,
		// thenFull(FullNoBackendChange, why following what runs and
		// afresh need one too).
		full string
	}
	ca, err := testcerts.NewCA("routes CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("e.example.com", []string{"e1.example.com", "e2.example.com", "y.w.example.com"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tlsRoute := func(r *routev1.Route, term routev1.TLSTerminationType, wildcard bool) *routev1.Route {
		r.Spec.TLS = &routev1.TLSConfig{Termination: term}
		if term != routev1.TLSTerminationPassthrough {
			r.Spec.TLS.Certificate, r.Spec.TLS.Key = pair.CertPEM, pair.KeyPEM
		}
		if wildcard {
			r.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain
		}
		return r
	}
	tests := []struct {
		name     string
		renderer *templates.Renderer
		steps    []step
	}{
		{"certificates, passthrough, wildcards and namespace ownership", r, []step{
			{"an edge route with a certificate added", func(st *store.Store) {
				st.Upsert(tlsRoute(route("ns", "edge1", "e1.example.com", "", "a", 20), routev1.TLSTerminationEdge, false))
			}, ""},
			{"a second edge route with the same certificate: the first one's cert_config.map line changes", func(st *store.Store) {
				st.Upsert(tlsRoute(route("ns", "edge2", "e2.example.com", "", "b", 21), routev1.TLSTerminationEdge, false))
			}, ""},
			{"a passthrough route added", func(st *store.Store) {
				st.Upsert(tlsRoute(route("ns", "pt", "p.example.com", "", "c", 22), routev1.TLSTerminationPassthrough, false))
			}, ""},
			{"a re-encrypt route with its own destination CA added: its cacerts file", func(st *store.Store) {
				re := tlsRoute(route("ns", "re", "re.example.com", "", "c", 25), routev1.TLSTerminationReencrypt, false)
				re.Spec.TLS.DestinationCACertificate = string(ca.CertPEM)
				st.Upsert(re)
			}, ""},
			{"a route with an allowlist added: its allowlist file", func(st *store.Store) {
				al := route("ns", "al", "al.example.com", "", "a", 26)
				al.Annotations = map[string]string{"haproxy.router.openshift.io/ip_allowlist": "10.0.0.1 10.1.0.0/16"}
				st.Upsert(al)
			}, ""},
			{"another route changes: the other routes' files stay", func(st *store.Store) {
				rb := route("ns", "rb", "b.example.com", "/b2", "b", 0)
				st.Upsert(rb)
			}, FullNoBackendChange},
			{"the allowlist changes", func(st *store.Store) {
				al := route("ns", "al", "al.example.com", "", "a", 26)
				al.Annotations = map[string]string{"haproxy.router.openshift.io/ip_allowlist": "10.0.0.2"}
				st.Upsert(al)
			}, FullNoBackendChange},
			{"the re-encrypt route and the allowlisted route go: their files go", func(st *store.Store) {
				st.Delete(route("ns", "re", "", "", "", 0))
				st.Delete(route("ns", "al", "", "", "", 0))
			}, ""},
			{"a wildcard passthrough route takes w.example.com for its namespace", func(st *store.Store) {
				st.Upsert(tlsRoute(route("wild", "star", "www.w.example.com", "", "a", 23), routev1.TLSTerminationPassthrough, true))
			}, ""},
			{"an edge route of the same namespace in w.example.com: be_sni in the passthrough map", func(st *store.Store) {
				st.Upsert(tlsRoute(route("wild", "edgew", "y.w.example.com", "", "a", 24), routev1.TLSTerminationEdge, false))
			}, ""},
			{"a newer route of another namespace in w.example.com: rejected (namespace ownership)", func(st *store.Store) {
				st.Upsert(route("other", "inw", "x.w.example.com", "", "a", 200))
			}, FullNoBackendChange},
			{"the wildcard route goes: the other namespace's route is admitted, the edge route's passthrough map line goes", func(st *store.Store) {
				st.Delete(route("wild", "star", "", "", "", 0))
			}, ""},
			{"the first edge route goes: the second one's certificate is its own again", func(st *store.Store) {
				st.Delete(route("ns", "edge1", "", "", "", 0))
			}, ""},
		}},
		{"adds and removes", r, []step{
			{"a route added between others", func(st *store.Store) { st.Upsert(route("ns", "rbb", "bb.example.com", "", "b", 10)) }, ""},
			{"a route added first", func(st *store.Store) { st.Upsert(route("aa", "first", "first.example.com", "", "a", 11)) }, ""},
			{"a route added last", func(st *store.Store) { st.Upsert(route("zz", "last", "last.example.com", "/x", "c", 12)) }, ""},
			{"a route removed", func(st *store.Store) { st.Delete(route("ns", "rb", "", "", "", 0)) }, ""},
			{"the first route removed", func(st *store.Store) { st.Delete(route("aa", "first", "", "", "", 0)) }, ""},
			{"a route changed", func(st *store.Store) {
				rc := route("ns", "rc", "c.example.com", "/other", "c", 0)
				rc.Annotations = map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
				rc.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
				st.Upsert(rc)
			}, FullNoBackendChange},
			{"a route removed after a full pass", func(st *store.Store) { st.Delete(route("ns", "rc", "", "", "", 0)) }, ""},
		}},
		{"host claims", r, []step{
			{"a newer route of another namespace claims a.example.com: rejected", func(st *store.Store) {
				st.Upsert(route("other", "late", "a.example.com", "", "a", 100))
			}, FullNoBackendChange},
			{"ns/rc goes and a route of another namespace takes its host", func(st *store.Store) {
				st.Delete(route("ns", "rc", "", "", "", 0))
				st.Upsert(route("other", "early", "c.example.com", "/c", "a", 50))
			}, ""},
			{"ns/rc comes back, newer: rejected", func(st *store.Store) {
				st.Upsert(route("ns", "rc", "c.example.com", "/c", "c", 60))
			}, FullNoBackendChange},
			{"the other namespace's route leaves the host: ns/rc is admitted", func(st *store.Store) { st.Delete(route("other", "early", "", "", "", 0)) }, ""},
		}},
		{"routes with their services", r, []step{
			{"a route added with its new service and endpoints", func(st *store.Store) {
				st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}})
				st.Upsert(endpointSlice("ns", "new-1", "new", true, "10.0.9.1", "10.0.9.2"))
				st.Upsert(route("ns", "rnew", "new.example.com", "", "new", 40))
			}, ""},
			{"a route added while another route's service changes its port and idles", func(st *store.Store) {
				st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c",
					Annotations: map[string]string{"idling.alpha.openshift.io/idled-at": "2026-11-24T00:00:00Z"}},
					Spec: corev1.ServiceSpec{ClusterIP: "172.30.0.9", Ports: []corev1.ServicePort{{Name: "web", Port: 81}}}})
				st.Delete(endpointSlice("ns", "c-1", "c", true))
				st.Upsert(route("ns", "rz", "z.example.com", "", "b", 41))
			}, ""},
			{"the route and its service removed", func(st *store.Store) {
				st.Delete(route("ns", "rnew", "", "", "", 0))
				st.Delete(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}})
				st.Delete(endpointSlice("ns", "new-1", "new", true))
			}, ""},
		}},
		{"HTTPRoutes", r, []step{
			{"a GatewayClass and Gateway of this router", func(st *store.Store) {
				st.Upsert(&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"},
					Spec: gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName}})
				st.Upsert(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"},
					Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}})
			}, FullOther},
			{"an HTTPRoute added", func(st *store.Store) { st.Upsert(httpRoute("h.example.com", 30, "/=a")) }, ""},
			{"a rule added to it", func(st *store.Store) { st.Upsert(httpRoute("h.example.com", 30, "/=a", "/x=b")) }, ""},
			{"a rule's backends and weights changed", func(st *store.Store) {
				st.Upsert(httpRoute("h.example.com", 30, "/=a", "/x=b:1+c:3"))
			}, FullNoBackendChange},
			{"for every host, with a rule without a valid backend (answered 500)", func(st *store.Store) {
				st.Upsert(httpRoute("", 30, "/=a", "/x=b:1+c:3", "/fail=nosuch"))
			}, ""},
			{"the missing Service created: the rule served, the HTTPRoute unchanged", func(st *store.Store) {
				st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nosuch"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}})
				st.Upsert(endpointSlice("ns", "nosuch-1", "nosuch", true, "10.0.9.1"))
			}, FullNoBackendChange},
			{"for its host again", func(st *store.Store) {
				st.Upsert(httpRoute("h.example.com", 30, "/=a", "/x=b:1+c:3"))
			}, ""},
			{"an HTTPRoute with a header match: the frontends' rules change", func(st *store.Store) {
				hm := httpRoute("hm.example.com", 60, "/=a")
				hm.Name = "hm"
				hm.Spec.Rules[0].Matches[0].Headers = []gatewayv1.HTTPHeaderMatch{{Name: "version", Value: "two"}}
				st.Upsert(hm)
			}, FullOther},
			{"a Route of that host: the rules' fallbacks change", func(st *store.Store) {
				st.Upsert(route("ns", "rhm", "hm.example.com", "/z", "a", 61))
			}, FullOther},
			{"a Route of another host: no full pass", func(st *store.Store) {
				st.Upsert(route("ns", "rother", "other-hm.example.com", "", "a", 62))
			}, ""},
			{"a newer route of another namespace claims its host: rejected", func(st *store.Store) {
				st.Upsert(route("other", "late", "h.example.com", "/y", "a", 100))
			}, FullNoBackendChange},
			{"the HTTPRoute deleted: the other namespace's route is admitted", func(st *store.Store) {
				st.Delete(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hr"}})
			}, ""},
			{"a TLS listener and a TLSRoute: the SNI frontend changes", func(st *store.Store) {
				passthrough := gatewayv1.TLSModePassthrough
				st.Upsert(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw", ResourceVersion: "2"},
					Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{
						{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
						{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}}}}})
				st.Upsert(&gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tr", ResourceVersion: "1",
					CreationTimestamp: metav1.NewTime(time.Unix(1700000070, 0))},
					Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
						Hostnames: []gatewayv1.Hostname{"*.tls.example.com"},
						Rules: []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
							Name: "a", Port: ptr.To[gatewayv1.PortNumber](80)}}}}}}})
			}, FullOther},
			{"then a Route added: no full pass (the frontend is the whole model's)", func(st *store.Store) {
				st.Upsert(route("ns", "rtls", "plain.tls.example.com", "", "a", 71))
			}, ""},
			{"and another HTTPRoute: no full pass", func(st *store.Store) { st.Upsert(httpRoute("h2.example.com", 72, "/=a")) }, ""},
			{"the first exact path: the frontends look exact paths up", func(st *store.Store) {
				st.Upsert(named("hx", httpRoute("hx.example.com", 73, "exact /e=a")))
			}, FullRouteLookups},
			{"a second exact path: no full pass", func(st *store.Store) {
				st.Upsert(named("hx", httpRoute("hx.example.com", 73, "exact /e=a", "exact /f=b")))
			}, ""},
			{"the first wildcard hostname: the frontends look wildcards up", func(st *store.Store) {
				st.Upsert(named("hw", httpRoute("*.w.example.com", 74, "/=a")))
			}, FullRouteLookups},
			{"the last exact path goes: so does its lookup", func(st *store.Store) {
				st.Delete(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hx"}})
			}, FullRouteLookups},
		}},
		{"route settings maps", r, []step{
			{"a route with every map setting added: the frontends look forwarded_headers.map up", func(st *store.Store) {
				st.Upsert(withAnnotations(tlsRoute(route("ns", "set", "set.example.com", "", "a", 80), routev1.TLSTerminationEdge, false),
					annotations.Timeout, "7s", annotations.TimeoutTunnel, "1h", annotations.HSTSHeader, "max-age=100",
					annotations.RateLimit, "true", annotations.RateLimitRateHTTP, "20", annotations.SetForwardedHeaders, "never"))
			}, FullForwardedLookup},
			{"a route without one added", func(st *store.Store) { st.Upsert(route("ns", "plain", "plain.example.com", "", "a", 81)) }, ""},
			{"its timeout and HSTS changed", func(st *store.Store) {
				st.Upsert(withAnnotations(tlsRoute(route("ns", "set", "set.example.com", "", "a", 80), routev1.TLSTerminationEdge, false),
					annotations.Timeout, "9s", annotations.TimeoutTunnel, "2h", annotations.HSTSHeader, "max-age=200", annotations.SetForwardedHeaders, "never"))
			}, FullNoBackendChange},
			{"a timeout and the policy of the first for the route without one", func(st *store.Store) {
				st.Upsert(withAnnotations(route("ns", "plain", "plain.example.com", "", "a", 81), annotations.Timeout, "3s",
					annotations.SetForwardedHeaders, "never"))
			}, FullNoBackendChange},
			{"the first route's settings all gone: its HSTS header and tunnel timeout were the last, those lookups go (another route's timeout and policy keep theirs)", func(st *store.Store) {
				st.Upsert(tlsRoute(route("ns", "set", "set.example.com", "", "a", 80), routev1.TLSTerminationEdge, false))
			}, thenFull(FullNoBackendChange, FullSettingsLookups)},
			{"the route with a timeout and the last such policy deleted: so is the lookup", func(st *store.Store) {
				st.Delete(route("ns", "plain", "", "", "", 0))
			}, FullForwardedLookup},
			{"a passthrough route of that policy: not in the map, no lookup", func(st *store.Store) {
				st.Upsert(withAnnotations(tlsRoute(route("ns", "pt", "pt.example.com", "", "a", 82), routev1.TLSTerminationPassthrough, false),
					annotations.SetForwardedHeaders, "never"))
			}, ""},
			{"a passthrough route with timeouts: its backend's, no lookup", func(st *store.Store) {
				st.Upsert(withAnnotations(tlsRoute(route("ns", "pt2", "pt2.example.com", "", "a", 83), routev1.TLSTerminationPassthrough, false),
					annotations.Timeout, "4s", annotations.TimeoutTunnel, "2h"))
			}, ""},
			{"the first server timeout since: its lookup comes", func(st *store.Store) {
				st.Upsert(withAnnotations(route("ns", "t", "t.example.com", "", "a", 84), annotations.Timeout, "5s"))
			}, FullSettingsLookups},
			{"a tunnel timeout for it too: that lookup comes", func(st *store.Store) {
				st.Upsert(withAnnotations(route("ns", "t", "t.example.com", "", "a", 84), annotations.Timeout, "5s", annotations.TimeoutTunnel, "1h"))
			}, thenFull(FullNoBackendChange, FullSettingsLookups)},
			{"a second route with both: no full pass", func(st *store.Store) {
				st.Upsert(withAnnotations(route("ns", "t2", "t2.example.com", "", "a", 85), annotations.Timeout, "6s", annotations.TimeoutTunnel, "2h"))
			}, ""},
			{"the first one's timeouts changed: no full pass", func(st *store.Store) {
				st.Upsert(withAnnotations(route("ns", "t", "t.example.com", "", "a", 84), annotations.Timeout, "8s", annotations.TimeoutTunnel, "3h"))
			}, FullNoBackendChange},
			{"the first one deleted: the second keeps the lookups", func(st *store.Store) { st.Delete(route("ns", "t", "", "", "", 0)) }, ""},
			{"an edge route's HSTS header: its lookup comes", func(st *store.Store) {
				st.Upsert(withAnnotations(tlsRoute(route("ns", "h", "h.example.com", "", "a", 86), routev1.TLSTerminationEdge, false),
					annotations.HSTSHeader, "max-age=300"))
			}, FullSettingsLookups},
			{"the last timeouts go: their lookups too", func(st *store.Store) { st.Delete(route("ns", "t2", "", "", "", 0)) }, FullSettingsLookups},
		}},
		{"routes and endpoints together", r, []step{
			{"an endpoint added and a route added", func(st *store.Store) {
				st.Upsert(endpointSlice("ns", "a-2", "a", true, "10.0.1.3"))
				st.Upsert(route("ns", "rd", "d.example.com", "", "a", 20))
			}, ""},
			{"endpoints removed and a route of theirs removed", func(st *store.Store) {
				st.Delete(endpointSlice("ns", "a-2", "a", true))
				st.Delete(route("ns", "rd", "", "", "", 0))
			}, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := benchInputs(tt.renderer, t.TempDir())
			in.Admission.AllowWildcardRoutes = true
			in.Gateway = &gateway.Options{Memo: gateway.NewMemo()}
			st := incrementalStore()
			// A route of its own in the middle: UpdateRoutes renders one
			// unchanged route that is neither first nor last alone.
			st.Upsert(route("ns", "rbz", "bz.example.com", "", "b", 5))
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.steps {
				s.change(st)
				next, full, err := UpdateRoutes(st, in, State{}, out)
				if wantFull, _, _ := strings.Cut(s.full, thenFullSep); err != nil || full != wantFull {
					t.Fatalf("%s: full pass %q, %v; want %q", s.name, full, err, s.full)
				}
				want, err := Pass(st, in, State{})
				if err != nil {
					t.Fatal(err)
				}
				if wantFull, following, ok := strings.Cut(s.full, thenFullSep); ok && full == wantFull {
					// A change of the rules the routes' defaults or the
					// frontends make: a full pass either way.
					_, why, err := UpdateRoutesFollowing(st, in, State{}, out)
					_, freshWhy, freshErr := UpdateRoutesFresh(st, in, State{}, out)
					if err != nil || why != following || freshErr != nil || freshWhy != following {
						t.Fatalf("%s: following: full pass %q, %v; afresh: %q, %v; want %q", s.name, why, err, freshWhy, freshErr, following)
					}
					out = want
					continue
				}
				if full == FullNoBackendChange {
					// No route admitted or dropped: following what runs (for
					// the runtime API) equals a full pass on the running
					// layouts, and afresh (for a reload) a fresh full pass.
					following, why, err := UpdateRoutesFollowing(st, in, State{}, out)
					if err != nil || why != "" {
						t.Fatalf("%s: following: full pass %q, %v", s.name, why, err)
					}
					onRunning, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
					if err != nil {
						t.Fatal(err)
					}
					t.Run(s.name+"/following", func(t *testing.T) { sameFiles(t, following, onRunning); sameCut(t, following) })
					fresh, why, err := UpdateRoutesFresh(st, in, State{}, out)
					if err != nil || why != "" {
						t.Fatalf("%s: fresh: full pass %q, %v", s.name, why, err)
					}
					t.Run(s.name+"/fresh", func(t *testing.T) { sameOutput(t, fresh, want) })
					out = following
					continue
				}
				if full != "" {
					out = want
					continue
				}
				t.Run(s.name, func(t *testing.T) { sameOutput(t, next, want); sameCut(t, next) })
				out = next
			}
		})
	}
}

// thenFull is the full pass reason of a step whose UpdateRoutes needs a
// full pass for why (FullNoBackendChange), and whose following what runs
// and afresh need one for following (a rule's lookup comes or goes).
func thenFull(why, following string) string { return why + thenFullSep + following }

const thenFullSep = " then "

// sameCut checks that the cut of out's configuration an UpdateRoutes
// remembered (out.cut) is the one cutRoutes makes of it.
func sameCut(t *testing.T, out *Output) {
	t.Helper()
	if out.cut == nil {
		t.Fatal("no cut remembered")
	}
	want, ok := cutRoutes(out.Config, routeOf(out.Model.State))
	if !ok {
		t.Fatal("the configuration does not cut")
	}
	got := out.cut
	if !bytes.Equal(got.head, want.head) || !bytes.Equal(got.rest, want.rest) || !bytes.Equal(got.tail, want.tail) || !slices.Equal(got.keys, want.keys) {
		t.Fatalf("remembered cut: head %d rest %d tail %d bytes, keys %v; cutRoutes: %d %d %d, %v",
			len(got.head), len(got.rest), len(got.tail), got.keys, len(want.head), len(want.rest), len(want.tail), want.keys)
	}
	for k, b := range want.blocks {
		if !bytes.Equal(got.blocks[k], b) {
			t.Errorf("route %s: remembered section\n%s\ncutRoutes'\n%s", k, got.blocks[k], b)
		}
	}
	if len(got.blocks) != len(want.blocks) {
		t.Errorf("%d routes' sections remembered, cutRoutes %d", len(got.blocks), len(want.blocks))
	}
}

// withAnnotations is r with annotations (name, value, ...).
func withAnnotations(r *routev1.Route, kv ...string) *routev1.Route {
	r.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Annotations[kv[i]] = kv[i+1]
	}
	return r
}

// endpointInASlot runs a full pass on st, then an endpoint change (service
// c gets a third endpoint) that moves an endpoint into a spare slot at
// runtime, and returns the pass's output with the change applied.
func endpointInASlot(t *testing.T, st *store.Store, in Inputs) *Output {
	t.Helper()
	out, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	st.Upsert(endpointSlice("ns", "c-2", "c", true, "10.0.3.3"))
	ch, err := UpdateEndpoints(st, in, out)
	if err != nil || ch.Full != "" {
		t.Fatalf("%v %q", err, ch.Full)
	}
	out.Apply(ch)
	if out.Compact() {
		t.Fatal("the endpoint did not take a slot")
	}
	return out
}

// TestRouteChangesLayBackendsOutAfresh: after endpoints moved into spare
// slots at runtime (UpdateEndpoints), a route change lays those backends
// out afresh too (a reload follows), as a full pass would.
func TestRouteChangesLayBackendsOutAfresh(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	in := benchInputs(r, t.TempDir())
	st := incrementalStore()
	out := endpointInASlot(t, st, in)
	st.Upsert(route("ns", "re", "e.example.com", "", "b", 30))
	next, full, err := UpdateRoutes(st, in, State{}, out)
	if err != nil || full != "" {
		t.Fatalf("full pass %q, %v", full, err)
	}
	want, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	sameOutput(t, next, want)
}

// TestRouteChangesFallBackToAFullPass: other changes than routes and
// endpoints, and templates whose sections besides the routes' depend on
// the routes, need the full pass.
func TestRouteChangesFallBackToAFullPass(t *testing.T) {
	def, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	src := templates.Default()
	const anchor = "\nglobal\n"
	if !strings.Contains(src, anchor) {
		t.Fatalf("the default template has no %q", anchor)
	}
	counting, err := templates.Parse("counting", strings.Replace(src, anchor, "\n# {{ len .State }} routes\nglobal\n", 1), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	// Comments listing the routes' hosts just before the first route's
	// backend: dynamic.Cut puts them in that route's section.
	openshiftStyle, err := os.ReadFile("../../test/e2e/testdata/openshift-style.template")
	if err != nil {
		t.Fatal(err)
	}
	osr, err := templates.Parse("openshift-style", string(openshiftStyle), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		renderer *templates.Renderer
		change   func(st *store.Store)
		full     string
	}{
		{"a namespace changed", def, func(st *store.Store) {
			st.Upsert(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "x"}}})
		}, FullOther},
		{"a service changed, no backend comes or goes", def, func(st *store.Store) {
			st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 81}}}})
		}, FullNoBackendChange},
		{"a template that counts the routes in its global section", counting, func(st *store.Store) {
			st.Upsert(route("ns", "rbb", "bb.example.com", "", "b", 10))
		}, FullNotPerRoute},
		{"a template whose comments before the routes' backends list the routes", osr, func(st *store.Store) {
			st.Upsert(route("ns", "rbb", "bb.example.com", "", "b", 10))
		}, FullNotPerRoute},
		{"no unchanged route but the first and the last to probe the text around the routes", def, func(st *store.Store) {
			st.Upsert(route("ns", "rbb", "bb.example.com", "", "b", 10))
			st.Delete(route("ns", "rb", "", "", "", 0))
		}, FullEdgeRoutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := benchInputs(tt.renderer, t.TempDir())
			st := incrementalStore()
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			tt.change(st)
			if _, full, err := UpdateRoutes(st, in, State{}, out); err != nil || full != tt.full {
				t.Fatalf("full pass %q, %v; want %q", full, err, tt.full)
			}
		})
	}
}

// TestRouteUpdatesFollowTheRunningLayouts: after an endpoint moved into a
// spare slot at runtime, a route update that admits or drops no route is
// worked out against the lines HAProxy runs (the slot keeps the endpoint:
// what a full pass on the running layouts renders, for the runtime API),
// and afresh for a reload (what a fresh full pass renders) — whether the
// updated route is the one whose endpoint moved or another.
func TestRouteUpdatesFollowTheRunningLayouts(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		update *routev1.Route
	}{
		{"the route whose endpoint moved gets an annotation", func() *routev1.Route {
			rc := route("ns", "rc", "c.example.com", "/c", "c", 0)
			rc.Annotations = map[string]string{"haproxy.router.openshift.io/disable_cookies": "true"}
			return rc
		}()},
		{"another route gets a certificate", func() *routev1.Route {
			ra := route("ns", "ra", "a.example.com", "", "a", 0)
			ra.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
			return ra
		}()},
		{"another route changes its service", route("ns", "ra", "a.example.com", "", "b", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := benchInputs(r, t.TempDir())
			st := incrementalStore()
			st.Upsert(route("ns", "rbz", "bz.example.com", "", "b", 5)) // a route to probe
			out := endpointInASlot(t, st, in)
			// What HAProxy runs before the update.
			before, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
			if err != nil {
				t.Fatal(err)
			}
			st.Upsert(tc.update)
			if _, full, err := UpdateRoutes(st, in, State{}, out); err != nil || full != FullNoBackendChange {
				t.Fatalf("UpdateRoutes: %q, %v; want %q", full, err, FullNoBackendChange)
			}
			following, why, err := UpdateRoutesFollowing(st, in, State{}, out)
			if err != nil || why != "" {
				t.Fatalf("following: %q, %v", why, err)
			}
			onRunning, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
			if err != nil {
				t.Fatal(err)
			}
			sameFiles(t, following, onRunning)
			if following.Compact() {
				t.Error("following laid the moved endpoint's backend out afresh")
			}
			// The sections rendered again tell the runtime API what the
			// whole configuration does.
			if following.Sections == nil {
				t.Fatal("no sections rendered again")
			}
			whole := dynamic.Diff(dynamic.Parse(before.Config), dynamic.Parse(following.Config))
			part := dynamic.DiffSections(dynamic.Parse(before.Config), following.Sections)
			texts := func(ch dynamic.Change) []string {
				var out []string
				for _, c := range ch.Commands {
					out = append(out, c.Text)
				}
				sort.Strings(out)
				return out
			}
			if whole.Reload != part.Reload || whole.Reason != part.Reason || !slices.Equal(texts(whole), texts(part)) {
				t.Errorf("diff of the sections: reload %v %q %v; of the whole configuration: reload %v %q %v",
					part.Reload, part.Reason, texts(part), whole.Reload, whole.Reason, texts(whole))
			}
			fresh, why, err := UpdateRoutesFresh(st, in, State{}, out)
			if err != nil || why != "" {
				t.Fatalf("fresh: %q, %v", why, err)
			}
			want, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			sameOutput(t, fresh, want)
			if bytes.Equal(following.Config, fresh.Config) {
				t.Error("following and fresh rendered the same configuration: the slot was not followed")
			}
		})
	}
}

// TestServiceChangesNoRouteUsesRenderNothing: a service that no route uses
// goes with its slices (after its route went in an earlier pass):
// following what runs, the output is the last one — same files, no
// section to send, RendersNothing — not a full pass; for a reload the full
// pass still runs, and so it does when nothing changed at all.
func TestServiceChangesNoRouteUsesRenderNothing(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	in := benchInputs(r, t.TempDir())
	st := incrementalStore()
	out, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	st.Delete(endpointSlice("ns", "unused-1", "unused", true))
	st.Delete(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unused"}})

	if _, why, err := UpdateRoutes(st, in, State{}, out); err != nil || why == "" {
		t.Errorf("for a reload: full pass %q, %v; want a reason", why, err)
	}
	next, why, err := UpdateRoutesFollowing(st, in, State{}, out)
	if err != nil || why != "" {
		t.Fatalf("following: full pass %q, %v", why, err)
	}
	if !next.RendersNothing() {
		t.Error("the output renders something")
	}
	if next.Sections == nil || len(next.Sections.Headers()) != 0 {
		t.Errorf("sections to send: %v, want none", next.Sections)
	}
	// Nothing changed since: what is asked for is a full pass (a stale
	// haproxy.config to render again, say).
	if _, why, err := UpdateRoutesFollowing(st, in, State{}, next); err != nil || why != FullNoChange {
		t.Errorf("no change since: full pass %q, %v; want %q", why, err, FullNoChange)
	}
	if next.Generation == out.Generation {
		t.Error("the output did not move on to the store's generation")
	}
	want, err := Pass(st, in, State{Layouts: servers.Of(out.Model)})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, next, want)

	// A route change after it is worked out from it as from any output.
	st.Upsert(route("ns", "rd", "d.example.com", "", "a", 30))
	after, why, err := UpdateRoutes(st, in, State{}, next)
	if err != nil || why != "" {
		t.Fatalf("a route added after: full pass %q, %v", why, err)
	}
	if after.RendersNothing() {
		t.Error("a route added renders nothing")
	}
	want, err = Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, after, want)
}

// TestRouteChangesNameTheBackendsThatGo: following what runs, the
// backends of a route deleted, and of a route whose backend is renamed
// (its TLS termination changed), are Output.Gone, and the sections of the
// routes rendered again are Output.Sections; a route added is a section,
// nothing gone.
func TestRouteChangesNameTheBackendsThatGo(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	in := benchInputs(r, t.TempDir())
	edge := func(rt *routev1.Route) *routev1.Route {
		rt = rt.DeepCopy()
		rt.ResourceVersion = "2"
		rt.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}
		return rt
	}
	tests := []struct {
		name     string
		change   func(st *store.Store)
		sections []string
		gone     []string
	}{
		{"a route deleted", func(st *store.Store) { st.Delete(route("ns", "rb", "b.example.com", "", "b", 0)) },
			nil, []string{"backend be_http:ns:rb"}},
		{"a route renamed by its termination", func(st *store.Store) {
			st.Upsert(edge(&routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc"}, Spec: routev1.RouteSpec{Host: "c.example.com", Path: "/c", To: routev1.RouteTargetReference{Kind: "Service", Name: "c"}}}))
		}, []string{"backend be_edge_http:ns:rc"}, []string{"backend be_http:ns:rc"}},
		{"a route added", func(st *store.Store) { st.Upsert(route("ns", "rd", "d.example.com", "", "a", 30)) },
			[]string{"backend be_http:ns:rd"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := incrementalStore()
			// A fourth route: one neither first nor last is left to
			// probe the text around the routes' sections.
			st.Upsert(route("ns", "re", "e.example.com", "", "c", 40))
			out, err := Pass(st, in, State{})
			if err != nil {
				t.Fatal(err)
			}
			tt.change(st)
			next, why, err := UpdateRoutesFollowing(st, in, State{}, out)
			if err != nil || why != "" {
				t.Fatalf("full pass %q, %v", why, err)
			}
			if next.Sections == nil {
				t.Fatal("no sections")
			}
			if got := next.Sections.Headers(); !slices.Equal(got, tt.sections) {
				t.Errorf("sections %q, want %q", got, tt.sections)
			}
			if !slices.Equal(next.Gone, tt.gone) {
				t.Errorf("gone %q, want %q", next.Gone, tt.gone)
			}
		})
	}
}

// TestTheNamedGatewaysCertificateIsWrittenAsTheDefaultCertificate: with
// gateway.Options.DefaultCertificateFrom, the default certificate file
// holds the certificate of that Gateway's HTTPS listener without a
// hostname while it is served; a route change keeps it, a new certificate
// is a full pass, and without the listener the configured one is back.
func TestTheNamedGatewaysCertificateIsWrittenAsTheDefaultCertificate(t *testing.T) {
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := testcerts.NewCA("gateway CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(cn string) *corev1.Secret {
		c, err := ca.Issue(cn, []string{cn}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls", ResourceVersion: cn}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte(c.CertPEM), "tls.key": []byte(c.KeyPEM)}}
	}
	in := benchInputs(r, t.TempDir())
	in.DefaultCertificate = []byte("the configured default certificate")
	in.Gateway = &gateway.Options{Memo: gateway.NewMemo(), DefaultCertificateFrom: "ns/gw"}
	st := incrementalStore()
	st.Upsert(&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName}})
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "gc", Listeners: []gatewayv1.Listener{{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "tls"}}}}}}}
	st.Upsert(gw)
	st.Upsert(secret("first.example.com"))
	defaultCert := func(out *Output) string { return string(FileData(out.Files, out.Model.DefaultCertificate)) }
	out, err := Pass(st, in, State{})
	if err != nil {
		t.Fatal(err)
	}
	if got := defaultCert(out); !certificateFor(t, got, "first.example.com") {
		t.Fatalf("default certificate file %q, want the listener's", got)
	}
	st.Upsert(httpRoute("h.example.com", 30, "/=a"))
	next, full, err := UpdateRoutes(st, in, State{}, out)
	if err != nil || full != "" || !certificateFor(t, defaultCert(next), "first.example.com") {
		t.Fatalf("an HTTPRoute added: full pass %q, %v; default certificate still the listener's: %v", full, err, certificateFor(t, defaultCert(next), "first.example.com"))
	}
	st.Upsert(secret("second.example.com"))
	if _, full, err := UpdateRoutes(st, in, State{}, next); err != nil || full != FullOther {
		t.Fatalf("the listener's certificate changed: full pass %q, %v; want %q", full, err, FullOther)
	}
	if out, err = Pass(st, in, State{}); err != nil || !certificateFor(t, defaultCert(out), "second.example.com") {
		t.Fatalf("the listener's new certificate: %v, %q", err, defaultCert(out))
	}
	gw = gw.DeepCopy()
	gw.Spec.Listeners[0].Hostname = ptr.To[gatewayv1.Hostname]("h.example.com")
	st.Upsert(gw)
	if out, err = Pass(st, in, State{}); err != nil || defaultCert(out) != "the configured default certificate" {
		t.Fatalf("the listener with a hostname: %v, default certificate %q", err, defaultCert(out))
	}
}

// certificateFor reports whether pemText's first certificate is for cn
// and loads with the key it holds.
func certificateFor(t *testing.T, pemText, cn string) bool {
	t.Helper()
	pair, err := cryptotls.X509KeyPair([]byte(pemText), []byte(pemText))
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	return err == nil && leaf.Subject.CommonName == cn
}
