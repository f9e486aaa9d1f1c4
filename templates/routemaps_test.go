package templates

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"

	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
)

// formerMaps is how the default template wrote its map files before they
// were written in Go (routemaps.go): the reference the Go versions must
// match byte for byte.
const formerMaps = `{{- /* HTTP frontend map: host/path/ -> backend, or @redirect for routes
       whose insecureEdgeTerminationPolicy is Redirect. */ -}}
{{- define "/var/lib/haproxy/conf/route_http.map" -}}
{{- range $cfgIdx, $cfg := .State }}
{{- $term := print $cfg.TLSTermination }}
{{- $policy := print $cfg.InsecureEdgeTerminationPolicy }}
{{- $key := routeMapKey (genCertificateHostName $cfg.Host $cfg.IsWildcard) $cfg.Path }}
{{- if eq $term "" }}
{{ $key }} be_http:{{ $cfgIdx }}
{{- else if eq $policy "Redirect" }}
{{ $key }} @redirect
{{- else if and (eq $policy "Allow") (ne $term "passthrough") }}
{{ $key }} {{ genBackendNamePrefix $cfg.TLSTermination }}:{{ $cfgIdx }}
{{- end }}
{{- end }}
{{ end -}}

{{- /* HTTPS (terminated at the router) map: host/path/ -> backend. */ -}}
{{- define "/var/lib/haproxy/conf/route_https.map" -}}
{{- range $cfgIdx, $cfg := .State }}
{{- if matchValues (print $cfg.TLSTermination) "edge" "reencrypt" }}
{{ routeMapKey (genCertificateHostName $cfg.Host $cfg.IsWildcard) $cfg.Path }} {{ genBackendNamePrefix $cfg.TLSTermination }}:{{ $cfgIdx }}
{{- end }}
{{- end }}
{{ end -}}

{{- /* Passthrough map: SNI host (wildcard routes: "*.domain") -> backend.
       An edge or re-encrypt host of a domain that has a wildcard
       passthrough route maps to be_sni (TLS terminated here), so that the
       specific route wins over the wildcard one. */ -}}
{{- define "/var/lib/haproxy/conf/route_sni_passthrough.map" -}}
{{- $wildcardPassthrough := dict }}
{{- $passthroughHosts := dict }}
{{- range $cfgIdx, $cfg := .State }}
{{- if eq (print $cfg.TLSTermination) "passthrough" }}
{{- if $cfg.IsWildcard }}{{ $_ := set $wildcardPassthrough (genCertificateHostName $cfg.Host true) true }}
{{- else }}{{ $_ := set $passthroughHosts $cfg.Host true }}
{{- end }}
{{- end }}
{{- end }}
{{- $terminated := dict }}
{{- range $cfgIdx, $cfg := .State }}
{{- if eq (print $cfg.TLSTermination) "passthrough" }}
{{ genCertificateHostName $cfg.Host $cfg.IsWildcard }} be_tcp:{{ $cfgIdx }}
{{- else if and (matchValues (print $cfg.TLSTermination) "edge" "reencrypt") (not $cfg.IsWildcard) (hasKey $wildcardPassthrough (genCertificateHostName $cfg.Host true)) (not (hasKey $passthroughHosts $cfg.Host)) (not (hasKey $terminated $cfg.Host)) }}
{{- $_ := set $terminated $cfg.Host true }}
{{ $cfg.Host }} be_sni
{{- end }}
{{- end }}
{{ end -}}

{{- /* crt-list: the certificate of each edge/re-encrypt route that has one,
       for its host (routes without one use the default certificate). */ -}}
{{- define "/var/lib/haproxy/conf/cert_config.map" -}}
{{- $workingDir := .WorkingDir }}
{{- $index := .CertificateIndex }}
{{- range $cfgIdx, $cfg := .State }}
{{- if matchValues (print $cfg.TLSTermination) "edge" "reencrypt" }}
{{- $cert := index $cfg.Certificates $cfg.Host }}
{{- if $cert.Contents }}
{{- /* h2 unless disabled or the certificate serves other routes too
       (connection coalescing) */}}
{{- $alpn := "" }}{{ if and (not $.DisableHTTP2) (le (index $index $cert.Contents) 1) }}{{ $alpn = " [alpn h2,http/1.1]" }}{{ end }}
{{ $workingDir }}/router/certs/{{ $cfgIdx.FileName }}.pem{{ $alpn }} {{ genCertificateHostName $cfg.Host $cfg.IsWildcard }}
{{- end }}
{{- end }}
{{- end }}
{{ end -}}

`

// TestRouteMapsMatchTheFormerTemplate renders random models (terminations,
// policies, wildcards, paths, shared hosts and certificates, HTTP/2 on and
// off) with the former map templates and the Go versions.
func TestRouteMapsMatchTheFormerTemplate(t *testing.T) {
	var b strings.Builder
	b.WriteString(formerMaps)
	b.WriteString(`{{ define "/var/lib/haproxy/conf/haproxy.config" }}{{ end }}`)
	for name, fn := range map[string]string{"route_http.map": "routeHTTPMap", "route_https.map": "routeHTTPSMap",
		"route_sni_passthrough.map": "routeSNIPassthroughMap", "cert_config.map": "routeCertConfigMap"} {
		fmt.Fprintf(&b, `{{ define "/var/lib/haproxy/new/%s" }}{{ %s . }}{{ end }}`, name, fn)
	}
	r, err := Parse("maps", b.String(), FuncMap(FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	terms := []routev1.TLSTerminationType{"", routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt, routev1.TLSTerminationPassthrough}
	policies := []routev1.InsecureEdgeTerminationPolicyType{"", routev1.InsecureEdgeTerminationPolicyAllow, routev1.InsecureEdgeTerminationPolicyRedirect, routev1.InsecureEdgeTerminationPolicyNone}
	hosts := []string{"a.example.com", "b.example.com", "www.wild.example.com", "x.wild.example.com", "localhost"}
	for i := 0; i < 200; i++ {
		td := model.TemplateData{WorkingDir: "/wd", DisableHTTP2: rng.Intn(4) == 0, CertificateIndex: map[string]int{},
			State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}}
		for j := rng.Intn(12); j > 0; j-- {
			cfg := model.ServiceAliasConfig{Namespace: fmt.Sprintf("ns%d", rng.Intn(3)), Name: fmt.Sprintf("r%d", rng.Intn(20)),
				Host: hosts[rng.Intn(len(hosts))], IsWildcard: rng.Intn(4) == 0, TLSTermination: terms[rng.Intn(len(terms))],
				InsecureEdgeTerminationPolicy: policies[rng.Intn(len(policies))], Certificates: map[string]model.Certificate{}}
			if rng.Intn(2) == 0 {
				cfg.Path = "/p"
			}
			if rng.Intn(2) == 0 {
				c := fmt.Sprintf("cert-%d", rng.Intn(3))
				cfg.Certificates[cfg.Host] = model.Certificate{Contents: c}
				td.CertificateIndex[c]++
			}
			td.State[model.NewServiceAliasConfigKey(cfg.Namespace, cfg.Name)] = cfg
		}
		td.WorkingDir = "/wd"
		fs, err := r.Render(&td)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range fs {
			got[f.Path] = string(f.Data)
		}
		for _, name := range []string{"route_http.map", "route_https.map", "route_sni_passthrough.map", "cert_config.map"} {
			former, now := got["/wd/conf/"+name], got["/wd/new/"+name]
			if former != now {
				t.Fatalf("model %d, %s:\nformer %q\nnow    %q", i, name, former, now)
			}
		}
	}
}

func TestForwardedHeadersMapNamesTheBackendsThatDifferFromTheRouterWidePolicy(t *testing.T) {
	routes := map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:default": {},
		"ns:append":  {Settings: annotations.Route{ForwardedHeaders: "append"}},
		"ns:replace": {TLSTermination: routev1.TLSTerminationEdge, Settings: annotations.Route{ForwardedHeaders: "replace"}},
		"ns:never":   {TLSTermination: routev1.TLSTerminationReencrypt, Settings: annotations.Route{ForwardedHeaders: "never"}},
		"ns:if-none": {Settings: annotations.Route{ForwardedHeaders: "if-none"}},
		// passthrough routes have no HTTP headers to set
		"ns:pt": {TLSTermination: routev1.TLSTerminationPassthrough, Settings: annotations.Route{ForwardedHeaders: "never"}},
	}
	for _, tc := range []struct{ global, want string }{
		{"", "\nbe_http:ns:if-none if-none\nbe_secure:ns:never never\n"},
		{"append", "\nbe_http:ns:if-none if-none\nbe_secure:ns:never never\n"},
		{"replace", "\nbe_http:ns:if-none if-none\nbe_secure:ns:never never\n"},
		{"never", "\nbe_http:ns:append append\nbe_edge_http:ns:replace replace\n"},
		{"if-none", "\nbe_http:ns:append append\nbe_edge_http:ns:replace replace\n"},
	} {
		td := model.TemplateData{State: routes, HAProxy: model.HAProxySettings{ForwardedHeaders: tc.global}}
		if got := ForwardedHeadersMap(td); got != tc.want {
			t.Errorf("ROUTER_SET_FORWARDED_HEADERS=%q: map %q, want %q", tc.global, got, tc.want)
		}
	}
}

func TestTimeoutMillisRoundsUpAsHAProxyDoes(t *testing.T) {
	for v, want := range map[string]int64{
		"1500ms": 1500, "5s": 5000, "2m": 120000, "1h": 3600000, "1d": 86400000,
		"500us": 1, "1us": 1, "1001us": 2, "30": 30, "2147483647ms": 2147483647,
		"0": 0, "0s": 0, "": 0, "nonsense": 0,
	} {
		if got := TimeoutMillis(v); got != want {
			t.Errorf("TimeoutMillis(%q) = %d, want %d", v, got, want)
		}
	}
}

// TestRouteMapsAnswerRespondersAndHostResponses: a route the router answers
// maps to "@STATUS"; each HostResponse adds "host/" on its port, unless a
// route has that key; a route for every host keys "*/path/" and is not in
// the crt-list; an exact path keys "=host/path"; a redirect maps to
// "@rdCODE|SCHEME|HOST|:PORT|PATH" (the port only when not the scheme's).
func TestRouteMapsAnswerRespondersAndHostResponses(t *testing.T) {
	td := model.TemplateData{WorkingDir: "/w", State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:root":  {Host: "taken.example.com"},
		"ns:paths": {Host: "p.example.com", Path: "/x"},
		"ns:fail":  {Host: model.AnyHost, Path: "/fail", Respond: 500, Made: true},
		"ns:any":   {Host: model.AnyHost, Path: "/a", Made: true},
		"ns:exact": {Host: "E.example.com", Path: "/e x/", ExactPath: true, Made: true},
		"ns:rd":    {Host: model.AnyHost, Path: "/r", Redirect: &model.Redirect{Code: 301, Host: "example.org", Port: 80}, Made: true},
		"ns:rds":   {Host: model.AnyHost, Path: "/s", TLSTermination: routev1.TLSTerminationEdge, Redirect: &model.Redirect{Code: 302, Port: 8443, Path: "/n"}, Made: true},
		"ns:rdp":   {Host: model.AnyHost, Path: "/p/q/", Redirect: &model.Redirect{Code: 302, Path: "/new", ReplacePrefix: true}, Made: true},
		"ns:tls":   {Host: model.AnyHost, TLSTermination: routev1.TLSTerminationEdge, Certificates: map[string]model.Certificate{model.AnyHost: {Contents: "PEM"}}, Made: true},
		"ns:other": {Host: "x.example.com", Path: "/p", TLSTermination: routev1.TLSTerminationEdge, Respond: 500, Made: true},
	}, HostResponses: []model.HostResponse{
		{Host: model.AnyHost, Status: 404, HTTP: true, HTTPS: true},
		{Host: "taken.example.com", Status: 404, HTTP: true},
		{Host: "tls.example.com", Status: 404, HTTPS: true},
	}}
	for _, tc := range []struct {
		name, got string
		want      []string
	}{
		{"route_http.map", RouteHTTPMap(td), []string{"*/a/ be_http:ns:any", "=e.example.com/e%20x/ be_http:ns:exact", "*/r/ @rd301|http|example.org|||", "*/p/q/ @rd302|http|||/new|2", "*/fail/ @500", "taken.example.com/ be_http:ns:root", "*/ @404", "p.example.com/x/ be_http:ns:paths", "p.example.com/ @rh"}},
		{"route_https.map", RouteHTTPSMap(td), []string{"*/ be_edge_http:ns:tls", "x.example.com/p/ @500", "*/s/ @rd302|https||:8443|/n|", "tls.example.com/ @404"}},
		{"cert_config.map", RouteCertConfigMap(td), nil},
	} {
		lines := strings.Fields(strings.ReplaceAll(tc.got, " ", "_"))
		want := make([]string, len(tc.want))
		for i, w := range tc.want {
			want[i] = strings.ReplaceAll(w, " ", "_")
		}
		slices.Sort(lines)
		slices.Sort(want)
		if fmt.Sprint(lines) != fmt.Sprint(want) {
			t.Errorf("%s:\n%s\nwant lines %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestSNIMapServesGatewayWildcardsAtAnyDepth: a passthrough route of a
// Gateway API wildcard hostname has the key "+.domain" (looked up with one
// to six labels replaced); other routes' keys it would otherwise take —
// hosts and wildcards below its domain, of any termination — and HTTPS
// listener hostnames map to be_sni; others do not; a TLSRoute's host
// without a valid backend is "@reject".
func TestSNIMapServesGatewayWildcardsAtAnyDepth(t *testing.T) {
	edge := routev1.TLSTerminationEdge
	td := model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:tls":   {Host: "*.example.com", IsWildcard: true, TLSTermination: routev1.TLSTerminationPassthrough, Made: true},
		"ns:exact": {Host: "abc.example.com", TLSTermination: routev1.TLSTerminationPassthrough, Made: true},
		"ns:none":  {Host: "none.example.com", TLSTermination: routev1.TLSTerminationPassthrough, Made: true, Respond: 503},
		"ns:deep":  {Host: "a.b.example.com", TLSTermination: edge},
		"ns:wild":  {Host: "*.x.example.com", IsWildcard: true, TLSTermination: edge, Made: true},
		"ns:own":   {Host: "*.example.com", IsWildcard: true, TLSTermination: edge, Made: true},
		"ns:else":  {Host: "a.example.org", TLSTermination: edge},
		"ns:plain": {Host: "p.example.com"},
	}, HostResponses: []model.HostResponse{{Host: "gw.example.com", Status: 404, HTTPS: true}, {Host: "http.example.com", Status: 404, HTTP: true}, {Host: model.AnyHost, Status: 404, HTTPS: true}}}
	got := strings.Split(strings.TrimSpace(RouteSNIPassthroughMap(td)), "\n")
	slices.Sort(got)
	want := []string{"+.example.com be_tcp:ns:tls", "+.x.example.com be_sni", "a.b.example.com be_sni", "abc.example.com be_tcp:ns:exact",
		"gw.example.com be_sni", "none.example.com @reject", "p.example.com be_sni"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("route_sni_passthrough.map %q, want %q", got, want)
	}
	if !HasGatewayPassthrough(td) {
		t.Error("no passthrough route of the Gateway API found")
	}
	delete(td.State, "ns:tls")
	delete(td.State, "ns:exact")
	delete(td.State, "ns:none")
	if HasGatewayPassthrough(td) {
		t.Error("a passthrough route of the Gateway API found without one")
	}
}

// TestHeaderChainsFallBackToTheNextMatch: routes with header matches of one
// key become a chain ("@hmID" in the map): a method first, then the most
// headers, the most query parameters, then by MatchOrder, path
// expressions after the rest (by the same order); a
// request none matches goes to the key's route without headers, else to
// the longest shorter path of the host (a chain there comes later), else
// on to the next lookup ("@miss").
func TestHeaderChainsFallBackToTheNextMatch(t *testing.T) {
	h := func(kv ...string) []model.HeaderMatch {
		var out []model.HeaderMatch
		for i := 0; i < len(kv); i += 2 {
			out = append(out, model.HeaderMatch{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	td := model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:plain": {Host: "h.example.com", Made: true},
		"ns:h1":    {Host: "h.example.com", HeaderMatches: h("a", "1"), Made: true},
		"ns:h2":    {Host: "h.example.com", Path: "/a", HeaderMatches: h("a", "1", "b", "2"), Made: true},
		"ns:h3":    {Host: "h.example.com", Path: "/a", HeaderMatches: h("a", "2"), MatchOrder: "2", Made: true},
		"ns:h0":    {Host: "h.example.com", Path: "/a", HeaderMatches: h("c", "3"), MatchOrder: "1", Made: true},
		"ns:hm":    {Host: "h.example.com", Path: "/a", Method: "POST", MatchOrder: "3", Made: true},
		"ns:hq":    {Host: "h.example.com", Path: "/a", HeaderMatches: h("c", "3"), QueryMatches: h("q", "1"), MatchOrder: "4", Made: true},
		"ns:re":    {Host: "h.example.com", Path: "/a", PathRegex: `^(?:/a/[0-9]+)\z`, MatchOrder: "0", Made: true},
		"ns:reh":   {Host: "h.example.com", Path: "/a", PathRegex: `^(?:/a/x)\z`, HeaderMatches: h("a", "1"), MatchOrder: "5", Made: true},
		"ns:ex":    {Host: "h.example.com", Path: "/e", ExactPath: true, HeaderMatches: h("a", "1"), Made: true},
		"ns:any":   {Host: model.AnyHost, Path: "/z", HeaderMatches: h("a", "1"), Made: true},
		"ns:other": {Host: "o.example.com", Path: "/q", HeaderMatches: h("a", "1"), Made: true},
	}, HostResponses: []model.HostResponse{{Host: model.AnyHost, Status: 404, HTTP: true}}}
	chains := HeaderChains(td, false)
	got := map[string]string{}
	ids := map[string]string{}
	for i, c := range chains {
		if c.ID != i {
			t.Errorf("chain %d has ID %d", i, c.ID)
		}
		ids["@hm"+strconv.Itoa(c.ID)] = c.Key
		var targets []string
		for _, cand := range c.Candidates {
			targets = append(targets, cand.Target)
		}
		got[c.Key] = strings.Join(targets, ",") + " else " + c.Fallback
	}
	// Fallbacks naming chains, by key, and in a later place.
	for i, c := range chains {
		if k, ok := ids[c.Fallback]; ok {
			got[c.Key] = strings.Replace(got[c.Key], c.Fallback, "chain "+k, 1)
			if j := slices.IndexFunc(chains, func(o HeaderChain) bool { return o.Key == k }); j <= i {
				t.Errorf("%s falls back to %s, tested before it", c.Key, k)
			}
		}
	}
	want := map[string]string{
		"h.example.com/":   "be_http:ns:h1 else be_http:ns:plain",
		"h.example.com/a/": "be_http:ns:hm,be_http:ns:h2,be_http:ns:hq,be_http:ns:h0,be_http:ns:h3,be_http:ns:reh,be_http:ns:re else chain h.example.com/",
		"=h.example.com/e": "be_http:ns:ex else chain h.example.com/",
		"*/z/":             "be_http:ns:any else @404",
		"o.example.com/q/": "be_http:ns:other else @miss",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("chains\n%v\nwant\n%v", got, want)
	}
	lines := RouteHTTPMap(td)
	for _, want := range []string{"\nh.example.com/ @hm", "\n*/ @404\n", "\no.example.com/q/ @hm"} {
		if !strings.Contains(lines, want) {
			t.Errorf("route_http.map lacks %q:\n%s", want, lines)
		}
	}
}

// TestChainLevelIsTheLookupThatFindsTheKey: a chain is rendered after the
// lookups of the level that finds its key.
func TestChainLevelIsTheLookupThatFindsTheKey(t *testing.T) {
	for key, want := range map[string]string{
		"h.example.com/a/": "host", "=h.example.com/e": "host",
		"+.example.com/": "wildcard", "=+.example.com/e": "wildcard",
		"*/a/": "any", "=*/e": "any",
	} {
		if got := ChainLevel(key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

// TestCountRouteLookupsCountsKeysByTheLookupThatFindsThem: the Gateway
// API's keys (made routes' and HostResponses') count by their lookup,
// Routes' and Ingresses' (OpenShift's wildcards included) as RouteHosts;
// routes without a key in the route maps (passthrough) count nowhere.
func TestCountRouteLookupsCountsKeysByTheLookupThatFindsThem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state map[model.ServiceAliasConfigKey]model.ServiceAliasConfig
		hosts []model.HostResponse
		want  model.RouteLookups
	}{
		{"routes of exact hostnames with path prefixes: none", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:a": {Host: "a.example.com", Made: true},
			"ns:b": {Host: "b.example.com", Path: "/b", TLSTermination: routev1.TLSTerminationEdge, Made: true},
		}, []model.HostResponse{{Host: "a.example.com", Status: 404, HTTP: true}}, model.RouteLookups{}},
		{"Routes and Ingresses: their hosts, wildcards and odd hosts included", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:w":  {Host: "www.example.com", IsWildcard: true},
			"ns:s":  {Host: "*.example.com", Path: "/x"},
			"ns:pt": {Host: "pt.example.com", TLSTermination: routev1.TLSTerminationPassthrough},
		}, nil, model.RouteLookups{RouteHosts: 2}},
		{"exact paths", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:e":  {Host: "e.example.com", Path: "/e", ExactPath: true, Made: true},
			"ns:e2": {Host: "e.example.com", Path: "/f", ExactPath: true, TLSTermination: routev1.TLSTerminationEdge, Made: true},
		}, nil, model.RouteLookups{ExactPath: 2}},
		{"wildcard hostnames, a listener's included", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:w":  {Host: "*.example.com", Made: true},
			"ns:we": {Host: "*.example.com", Path: "/x", ExactPath: true, Made: true},
		}, []model.HostResponse{{Host: "*.example.org", Status: 404, HTTPS: true}}, model.RouteLookups{Wildcard: 2, WildcardExactPath: 1}},
		{"every host, a listener without a hostname included", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:any": {Host: model.AnyHost, Path: "/a", Made: true},
			"ns:ae":  {Host: model.AnyHost, Path: "/a", ExactPath: true, Respond: 500, Made: true},
		}, []model.HostResponse{{Host: model.AnyHost, Status: 404, HTTP: true, HTTPS: true}}, model.RouteLookups{AnyHost: 2, AnyHostExactPath: 1}},
		{"a passthrough route has no key there", map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
			"ns:pt": {Host: "*.example.com", TLSTermination: routev1.TLSTerminationPassthrough, Made: true},
		}, nil, model.RouteLookups{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			td := model.TemplateData{State: tc.state, HostResponses: tc.hosts}
			got := CountRouteLookups(td)
			if *got != tc.want {
				t.Errorf("%+v, want %+v", *got, tc.want)
			}
			// Taking every route out again leaves the HostResponses'.
			for k, cfg := range tc.state {
				AddRouteLookups(got, k, cfg, -1)
			}
			if want := CountRouteLookups(model.TemplateData{HostResponses: tc.hosts}); *got != *want {
				t.Errorf("without the routes %+v, want %+v", *got, *want)
			}
		})
	}
}

// TestSettingsKeysHoldEveryRouteTheSettingsMapsWrite: the route-settings
// maps written from the routes HasMapSettings names are those written from
// every route, for routes that have any one setting of annotations.Route
// (each field in turn, found by reflection: a setting a map helper reads
// later and HasMapSettings misses fails here), all of them, rate limits
// with their values, under each termination.
func TestSettingsKeysHoldEveryRouteTheSettingsMapsWrite(t *testing.T) {
	var settings []annotations.Route
	all := reflect.ValueOf(&annotations.Route{}).Elem()
	for i := 0; i < all.NumField(); i++ {
		one := reflect.ValueOf(&annotations.Route{}).Elem()
		for _, v := range []reflect.Value{one.Field(i), all.Field(i)} {
			switch v.Kind() {
			case reflect.String:
				v.SetString("5s")
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Int:
				v.SetInt(7)
			}
		}
		settings = append(settings, one.Interface().(annotations.Route))
	}
	settings = append(settings, all.Interface().(annotations.Route),
		annotations.Route{RateLimit: true, RateLimitConcurrentTCP: 1, RateLimitRateHTTP: 2, RateLimitRateTCP: 3})
	td := model.TemplateData{State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{}}
	for i, s := range settings {
		for _, term := range []routev1.TLSTerminationType{"", routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt, routev1.TLSTerminationPassthrough} {
			k := model.NewServiceAliasConfigKey("ns", fmt.Sprintf("r%d-%s", i, term))
			td.State[k] = model.ServiceAliasConfig{Name: string(k), Namespace: "ns", TLSTermination: term, Settings: s}
		}
	}
	td.State["ns:none"] = model.ServiceAliasConfig{Name: "none", Namespace: "ns"}
	maps := func(td model.TemplateData) []string {
		return []string{TimeoutServerMap(td), TimeoutTunnelMap(td), HSTSMap(td), ForwardedHeadersMap(td),
			RateLimitMap(td, "concurrent-tcp"), RateLimitMap(td, "rate-tcp"), RateLimitMap(td, "rate-http")}
	}
	want := maps(td)
	indexed := td
	indexed.SettingsKeys = SettingsKeys(td)
	if got := maps(indexed); !slices.Equal(got, want) {
		t.Errorf("from SettingsKeys:\n%q\nfrom every route:\n%q", got, want)
	}
	if n := len(indexed.SettingsKeys.Keys()); n == 0 || n >= len(td.State) {
		t.Errorf("SettingsKeys has %d of %d routes", n, len(td.State))
	}
}
