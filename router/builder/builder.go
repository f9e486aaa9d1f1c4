// Package builder turns the watched objects and the admission decision into
// the model the template is executed with. It is deterministic: the same
// objects always give the same model.
package builder

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
)

// Options are the router-wide settings the model carries.
type Options struct {
	WorkingDir           string
	RunDir               string
	DefaultCertificate   string
	DefaultDestinationCA string
	// WatchEndpoints selects Endpoints instead of EndpointSlices.
	WatchEndpoints bool
	HTTPPort       int
	HTTPSPort      int
	StatsPort      int
	StatsUser      string
	StatsPassword  string
	BindPorts      bool
	DisableHTTP2   bool
	MaxConnections int
	// HAProxy are the validated router-wide HAProxy settings.
	HAProxy model.HAProxySettings
	// HostResponses are TemplateData.HostResponses.
	HostResponses []model.HostResponse
	// Made, if set, returns what a route made from the Gateway API's
	// objects has beyond the Route API (nil for a Route of the API).
	Made func(*routev1.Route) *model.MadeRoute
}

// made returns what route r has beyond the Route API (nil: nothing).
func (o Options) made(r *routev1.Route) *model.MadeRoute {
	if o.Made == nil {
		return nil
	}
	return o.Made(r)
}

// backendNamespace returns the namespace of backend i of route r.
func (o Options) backendNamespace(r *routev1.Route, i int) string {
	if m := o.made(r); m != nil && i < len(m.BackendNamespaces) && m.BackendNamespaces[i] != "" {
		return m.BackendNamespaces[i]
	}
	return r.Namespace
}

// Build returns the template data for the admitted routes.
func Build(v store.View, admitted []*routev1.Route, o Options) *model.TemplateData {
	td := &model.TemplateData{
		WorkingDir:           o.WorkingDir,
		RunDir:               o.RunDir,
		State:                make(map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, len(admitted)),
		ServiceUnits:         map[model.ServiceUnitKey]model.ServiceUnit{},
		DefaultCertificate:   o.DefaultCertificate,
		DefaultDestinationCA: o.DefaultDestinationCA,
		StatsUser:            o.StatsUser,
		StatsPassword:        o.StatsPassword,
		StatsPort:            o.StatsPort,
		BindPorts:            o.BindPorts,
		DisableHTTP2:         o.DisableHTTP2,
		HTTPPort:             o.HTTPPort,
		HTTPSPort:            o.HTTPSPort,
		MaxConnections:       o.MaxConnections,
		HAProxy:              o.HAProxy,
		HostResponses:        o.HostResponses,
		// Endpoint changes always go through the runtime API.
		DynamicConfigManager: &model.DynamicConfigManager{},
		// ROUTER_MUTUAL_TLS_AUTH_CA was given (not the system bundle);
		// router/mtls points the paths at its managed copies.
		HaveClientCA: o.HAProxy.MutualTLSAuth != "none" && o.HAProxy.MutualTLSClientCA,
	}
	td.NewKeyOrder()
	setEnvironmentData(td, o.HAProxy)
	td.CertificateIndex = map[string]int{}
	if o.DefaultCertificate != "" {
		td.CertificateIndex[o.DefaultCertificate] = 1
	}
	for _, r := range admitted {
		key := model.NewServiceAliasConfigKey(r.Namespace, r.Name)
		cfg := buildAlias(v, td, r, o)
		td.State[key] = cfg
		if cert, ok := cfg.Certificates[cfg.Host]; ok {
			td.CertificateIndex[cert.Contents]++
		}
		for suKey := range cfg.ServiceUnits {
			su := td.ServiceUnits[suKey]
			su.ServiceAliasAssociations[key] = true
		}
	}
	return td
}

// setEnvironmentData fills the fields of OpenShift's template data that
// come from the router-wide settings, in OpenShift's form.
func setEnvironmentData(td *model.TemplateData, h model.HAProxySettings) {
	for _, c := range h.CaptureRequestHeaders {
		td.CaptureHTTPRequestHeaders = append(td.CaptureHTTPRequestHeaders, model.CaptureHTTPHeader{Name: c.Name, MaxLength: c.Len})
	}
	for _, c := range h.CaptureResponseHeaders {
		td.CaptureHTTPResponseHeaders = append(td.CaptureHTTPResponseHeaders, model.CaptureHTTPHeader{Name: c.Name, MaxLength: c.Len})
	}
	if c := h.CaptureCookie; c != nil {
		match := model.CookieMatchTypePrefix
		if c.Exact {
			match = model.CookieMatchTypeExact
		}
		td.CaptureHTTPCookie = &model.CaptureHTTPCookie{Name: c.Name, MaxLength: c.Len, MatchType: match}
	}
	for _, pair := range h.H1CaseAdjustPairs() {
		td.HTTPHeaderNameCaseAdjustments = append(td.HTTPHeaderNameCaseAdjustments, model.HTTPHeaderNameCaseAdjustment{From: pair[0], To: pair[1]})
	}
	td.HTTPRequestHeaders = headerActions(h.HTTPRequestHeaderActions)
	td.HTTPResponseHeaders = headerActions(h.HTTPResponseHeaderActions)
}

// headerActions returns the router-wide header actions in OpenShift's
// form, their names and values quoted for HAProxy.
func headerActions(in []model.HeaderAction) []model.HTTPHeader {
	var out []model.HTTPHeader
	for _, a := range in {
		h := model.HTTPHeader{Name: model.QuoteHeaderWord(a.Name), Action: routev1.RouteHTTPHeaderActionType(a.Action)}
		if h.Action == routev1.Set {
			h.Value = model.QuoteHeaderWord(a.RawValue)
		}
		out = append(out, h)
	}
	return out
}

// routeHeaderActions returns a route's header actions (validated at
// admission) in OpenShift's form: an action without a name, or a Set
// without a value, is left out as OpenShift's router does.
func routeHeaderActions(in []routev1.RouteHTTPHeader) []model.HTTPHeader {
	var out []model.HTTPHeader
	for _, a := range in {
		switch {
		case a.Name == "":
		case a.Action.Type == routev1.Set && a.Action.Set != nil && a.Action.Set.Value != "":
			out = append(out, model.HTTPHeader{Name: model.QuoteHeaderWord(a.Name), Value: model.QuoteHeaderWord(a.Action.Set.Value), Action: routev1.Set})
		case a.Action.Type == routev1.Delete:
			out = append(out, model.HTTPHeader{Name: model.QuoteHeaderWord(a.Name), Action: routev1.Delete})
		}
	}
	return out
}

// headerAdds returns the headers a made route adds (HTTPRouteFilter's
// "add"), names and values quoted as header actions'.
func headerAdds(in []model.HeaderMatch) []model.HTTPHeader {
	var out []model.HTTPHeader
	for _, a := range in {
		out = append(out, model.HTTPHeader{Name: model.QuoteHeaderWord(a.Name), Value: model.QuoteHeaderWord(a.Value), Action: model.HeaderActionAdd})
	}
	return out
}

// buildAlias returns the model entry of route r: its host, path, TLS and
// annotations, and its services (built into td.ServiceUnits when td has
// them not yet) with their weights and endpoints.
func buildAlias(v store.View, td *model.TemplateData, r *routev1.Route, o Options) model.ServiceAliasConfig {
	cfg := newAlias(r)
	if h := r.Spec.HTTPHeaders; h != nil && !passthrough(r) {
		cfg.HTTPRequestHeaders = routeHeaderActions(h.Actions.Request)
		cfg.HTTPResponseHeaders = routeHeaderActions(h.Actions.Response)
	}
	if tls := r.Spec.TLS; tls != nil {
		setTLS(&cfg, tls, o.DefaultDestinationCA)
	}
	var problems []annotations.Problem
	cfg.Settings, problems = annotations.Parse(cfg.Annotations, annotations.Input{Termination: string(cfg.TLSTermination), Path: cfg.Path})
	// The controller logs them (once per change); building stays pure.
	for _, p := range problems {
		cfg.AnnotationProblems = append(cfg.AnnotationProblems, p.String())
	}
	if m := o.made(r); m != nil {
		cfg.Made = true
		cfg.ExactPath, cfg.HeaderMatches, cfg.MatchOrder = m.ExactPath, m.HeaderMatches, m.MatchOrder
		cfg.Method, cfg.QueryMatches, cfg.PathRegex = m.Method, m.QueryMatches, m.PathRegex
		cfg.Respond, cfg.Redirect = m.Respond, m.Redirect
		cfg.HTTPRequestHeaderAdds, cfg.HTTPResponseHeaderAdds = headerAdds(m.RequestHeaderAdds), headerAdds(m.ResponseHeaderAdds)
		cfg.RewritePath, cfg.Retry, cfg.CORS = m.RewritePath, m.Retry, m.CORS
		if m.ErrorShare > 0 && m.ErrorShare < 1000 {
			cfg.ErrorShare = m.ErrorShare
		}
		if m.Answered() {
			return cfg // no backend
		}
	}
	counts := addBackends(v, td, &cfg, r, o)
	for suKey := range cfg.ServiceUnits {
		cfg.EndpointTable[suKey] = cfg.EndpointsOf(td.ServiceUnits[suKey])
	}
	cfg.ServiceUnitNames = endpointWeights(cfg.ServiceUnits, counts)
	for k, w := range cfg.ServiceUnitNames {
		if w > 0 && counts[k] > 0 {
			cfg.ActiveServiceUnits++
			cfg.ActiveEndpoints += counts[k]
		}
	}
	return cfg
}

// newAlias returns the model entry of route r with what the route alone
// says: names, host, path, routing key and empty service tables.
func newAlias(r *routev1.Route) model.ServiceAliasConfig {
	key := model.NewServiceAliasConfigKey(r.Namespace, r.Name)
	// OpenShift hashes "<termination> <key>" before it knows the
	// termination: the same cookie name for the same route.
	sum := md5.Sum([]byte(" " + string(key)))
	return model.ServiceAliasConfig{
		Name:           r.Name,
		Namespace:      r.Namespace,
		Host:           strings.ToLower(r.Spec.Host),
		Path:           r.Spec.Path,
		RoutingKeyName: hex.EncodeToString(sum[:]),
		IsWildcard:     r.Spec.WildcardPolicy == routev1.WildcardPolicySubdomain,
		// Annotations and Certificates stay nil when the route has none
		// (as in OpenShift for annotations): a template cannot tell a nil
		// map from an empty one, and 10,000 routes save 20,000 maps.
		Annotations:      r.Annotations,
		ServiceUnits:     map[model.ServiceUnitKey]int32{},
		ServiceUnitNames: map[model.ServiceUnitKey]int32{},
		EndpointTable:    map[model.ServiceUnitKey][]model.Endpoint{},
		Status:           model.ServiceAliasConfigStatusSaved,

		PrimaryServiceUnitKey: model.NewServiceUnitKey(r.Namespace, r.Spec.To.Name),
	}
}

// passthrough reports whether r is a passthrough route.
func passthrough(r *routev1.Route) bool {
	return r.Spec.TLS != nil && r.Spec.TLS.Termination == routev1.TLSTerminationPassthrough
}

// setTLS sets cfg's termination and, unless the route is passthrough, its
// certificates; a re-encrypt route without a destination CA verifies its
// service's hostname when the router has a default destination CA.
func setTLS(cfg *model.ServiceAliasConfig, tls *routev1.TLSConfig, defaultDestinationCA string) {
	cfg.TLSTermination = tls.Termination
	cfg.InsecureEdgeTerminationPolicy = tls.InsecureEdgeTerminationPolicy
	if tls.Termination == routev1.TLSTerminationPassthrough {
		return
	}
	id := string(model.NewServiceAliasConfigKey(cfg.Namespace, cfg.Name))
	if tls.Certificate != "" || tls.CACertificate != "" || tls.DestinationCACertificate != "" {
		cfg.Certificates = map[string]model.Certificate{}
	}
	if tls.Certificate != "" {
		cfg.Certificates[cfg.Host] = model.Certificate{ID: id, Contents: tls.Certificate, PrivateKey: tls.Key}
	}
	if tls.CACertificate != "" {
		cfg.Certificates[cfg.Host+model.CACertPostfix] = model.Certificate{ID: id + model.CACertPostfix, Contents: tls.CACertificate}
	}
	if tls.DestinationCACertificate != "" {
		cfg.Certificates[cfg.Host+model.DestCACertPostfix] = model.Certificate{ID: id + model.DestCACertPostfix, Contents: tls.DestinationCACertificate}
	} else if tls.Termination == routev1.TLSTerminationReencrypt && defaultDestinationCA != "" {
		cfg.VerifyServiceHostname = true
	}
}

// routeBackends are the services route r sends to: spec.to, then its
// alternate backends.
func routeBackends(r *routev1.Route) []routev1.RouteTargetReference {
	return append([]routev1.RouteTargetReference{r.Spec.To}, r.Spec.AlternateBackends...)
}

// addBackends puts the weight of every service of route r into cfg (and
// the service into td.ServiceUnits, built from v, when td has it not
// yet), resolves the port the route prefers from its first service, and
// returns how many endpoints of each service serve that port.
func addBackends(v store.View, td *model.TemplateData, cfg *model.ServiceAliasConfig, r *routev1.Route, o Options) map[model.ServiceUnitKey]int {
	var targetPort string
	if r.Spec.Port != nil {
		targetPort = r.Spec.Port.TargetPort.String()
	}
	counts := map[model.ServiceUnitKey]int{}
	m := o.made(r)
	for i, b := range routeBackends(r) {
		weight := int32(1)
		if b.Weight != nil {
			weight = *b.Weight
		}
		ns := o.backendNamespace(r, i)
		suKey := model.NewServiceUnitKey(ns, b.Name)
		cfg.ServiceUnits[suKey] = weight
		su, ok := td.ServiceUnits[suKey]
		if !ok {
			su = buildServiceUnit(v, ns, b.Name, o.WatchEndpoints)
			td.ServiceUnits[suKey] = su
		}
		switch {
		case i == 0:
			cfg.PrimaryServiceUnitKey = suKey
			cfg.PreferPort = resolvePort(v.Service(ns, b.Name), su, targetPort)
		case m != nil && i < len(m.BackendPorts):
			// A backend of an HTTPRoute on a port of its own.
			if p := resolvePort(v.Service(ns, b.Name), su, m.BackendPorts[i]); p != cfg.PreferPort {
				if cfg.BackendPorts == nil {
					cfg.BackendPorts = map[model.ServiceUnitKey]string{}
				}
				cfg.BackendPorts[suKey] = p
			}
		}
		counts[suKey] = countEndpoints(su, cfg.PreferPortOf(suKey))
	}
	return counts
}

// resolvePort returns the port the route prefers, as the endpoint port name
// or number endpointsForAlias matches against. A named or numbered pod
// port is used as given; a number that is a service port (not a pod port)
// is translated to that service port's name; with no target port, a
// multi-port service uses its first port.
func resolvePort(svc *corev1.Service, su model.ServiceUnit, targetPort string) string {
	if targetPort == "" {
		if svc != nil && len(svc.Spec.Ports) > 1 {
			return svc.Spec.Ports[0].Name
		}
		return ""
	}
	if _, err := strconv.Atoi(targetPort); err != nil || svc == nil {
		return targetPort
	}
	for _, ep := range su.EndpointTable {
		if ep.Port == targetPort {
			return targetPort
		}
	}
	for _, p := range svc.Spec.Ports {
		if strconv.Itoa(int(p.Port)) == targetPort && p.Name != "" {
			return p.Name
		}
	}
	return targetPort
}

// countEndpoints is how many endpoints of su serve preferPort (all of
// them when it is empty), by port name or number.
func countEndpoints(su model.ServiceUnit, preferPort string) int {
	if preferPort == "" {
		return len(su.EndpointTable)
	}
	n := 0
	for _, ep := range su.EndpointTable {
		if ep.PortName == preferPort || ep.Port == preferPort {
			n++
		}
	}
	return n
}

// endpointWeights distributes each service's weight over its endpoints and
// scales the per-endpoint weights so the largest becomes 256 (HAProxy's
// maximum), keeping every non-zero share at least 1 — OpenShift's rule.
// When only one service has a weight and endpoints, its servers all get
// weight 1, as OpenShift does: the proportions are the same, and weight 256
// makes HAProxy allocate 256 times the nodes per server for the consistent
// hashing of `balance random` (gigabytes at 10,000 routes).
func endpointWeights(weights map[model.ServiceUnitKey]int32, counts map[model.ServiceUnitKey]int) map[model.ServiceUnitKey]int32 {
	active := 0
	for k, w := range weights {
		if w > 0 && counts[k] > 0 {
			active++
		}
	}
	if active == 1 {
		out := make(map[model.ServiceUnitKey]int32, len(weights))
		for k, w := range weights {
			if w > 0 && counts[k] > 0 {
				out[k] = 1
			} else {
				out[k] = 0
			}
		}
		return out
	}
	perEndpoint := make(map[model.ServiceUnitKey]float64, len(weights))
	maxW := 0.0
	for k, w := range weights {
		if n := counts[k]; n > 0 {
			perEndpoint[k] = float64(w) / float64(n)
		}
		if perEndpoint[k] > maxW {
			maxW = perEndpoint[k]
		}
	}
	out := make(map[model.ServiceUnitKey]int32, len(weights))
	for k := range weights {
		w := perEndpoint[k]
		if maxW == 0 || w == 0 {
			out[k] = 0
			continue
		}
		scaled := int32(w * 256 / maxW)
		if scaled < 1 {
			scaled = 1
		}
		out[k] = scaled
	}
	return out
}

// buildServiceUnit returns the service unit of service namespace/name with
// its endpoints (from Endpoints when watchEndpoints, else from
// EndpointSlices; the cluster IP of an idled service), sorted by ID and
// limited to servers.MaxEndpointsPerService.
func buildServiceUnit(v store.View, namespace, name string, watchEndpoints bool) model.ServiceUnit {
	su := model.ServiceUnit{
		Name:                     namespace + "/" + name,
		Hostname:                 name + "." + namespace + ".svc",
		ServiceAliasAssociations: map[model.ServiceAliasConfigKey]bool{},
	}
	// Admission only requires a name (as OpenShift does): a name no
	// service can have has no endpoints, and never reaches the config.
	if len(validation.IsDNS1123Label(name)) > 0 {
		return su
	}
	set := endpointSet{service: name, seen: map[string]bool{}}
	// found: the service has an Endpoints object (or an EndpointSlice);
	// ready: one of them has a ready address (whatever its ports).
	var found, ready bool
	if watchEndpoints {
		found, ready = set.addEndpoints(v.Endpoints(namespace, name))
	} else {
		found, ready = set.addSlices(v.EndpointSlices(namespace, name))
	}
	if found && !ready {
		if svc := v.Service(namespace, name); serviceIdled(svc) {
			set.addIdled(svc)
		}
	}
	sort.Slice(set.list, func(i, j int) bool { return set.list[i].ID < set.list[j].ID })
	// One huge service would slow every configuration check and reload
	// (router/servers); it gets a stable subset of its endpoints.
	su.EndpointTable, su.EndpointsLeftOut = servers.Limit(set.list, servers.MaxEndpointsPerService)
	return su
}

// endpointSet collects the endpoints of one service, each once.
type endpointSet struct {
	// service is the service's name (part of the endpoint IDs).
	service string
	// seen holds the IDs of list.
	seen map[string]bool
	list []model.Endpoint
}

// add adds the endpoint at ip and port unless it cannot be written into a
// server line (newEndpoint) or its ID is in the set already.
func (s *endpointSet) add(ip string, port int32, portName string, appProtocol *string, ref *corev1.ObjectReference) {
	ep, ok := newEndpoint(s.service, ip, port, portName, appProtocol, ref)
	if !ok || s.seen[ep.ID] {
		return
	}
	s.seen[ep.ID] = true
	sum := md5.Sum([]byte(ep.ID))
	ep.IdHash = hex.EncodeToString(sum[:])
	s.list = append(s.list, ep)
}

// newEndpoint returns the endpoint of service at ip and port in OpenShift's
// form, and false when the address (an IPv6 zone included), the port or
// the port name cannot be written into a server line.
func newEndpoint(service, ip string, port int32, portName string, appProtocol *string, ref *corev1.ObjectReference) (model.Endpoint, bool) {
	addr, err := netip.ParseAddr(ip)
	// IPv6 zones (fe80::1%eth0) have no place in a server address.
	if err != nil || addr.Zone() != "" || port < 1 || port > 65535 {
		return model.Endpoint{}, false
	}
	if portName != "" && len(validation.IsValidPortName(portName)) > 0 {
		return model.Endpoint{}, false
	}
	// As OpenShift: IPv6 addresses in brackets, ready for a server line;
	// the ID has the bare address.
	bare := addr.String()
	ep := model.Endpoint{IP: bare, Port: strconv.Itoa(int(port)), PortName: portName, TargetName: bare}
	if addr.Is6() && !addr.Is4In6() {
		ep.IP = "[" + bare + "]"
	}
	if appProtocol != nil && validAppProtocol(*appProtocol) {
		ep.AppProtocol = *appProtocol
	}
	// A target name that is no object name is left out (it would be
	// part of the server name).
	if ref != nil && len(validation.IsDNS1123Subdomain(ref.Name)) == 0 {
		ep.TargetName = ref.Name
		if ref.Kind == "Pod" {
			ep.ID = fmt.Sprintf("pod:%s:%s:%s:%s:%s", ep.TargetName, service, portName, bare, ep.Port)
		}
	}
	if ep.ID == "" {
		ep.ID = fmt.Sprintf("ept:%s:%s:%s:%s", service, portName, bare, ep.Port)
	}
	return ep, true
}

// tcpPort reports whether a port of an Endpoints object or a service is a
// TCP port (no protocol means TCP).
func tcpPort(p corev1.Protocol) bool { return p == "" || p == corev1.ProtocolTCP }

// addEndpoints adds the ready addresses of eps on its TCP ports; found is
// false when there is no Endpoints object, ready when one of its subsets
// has an address (whatever its ports).
func (s *endpointSet) addEndpoints(eps *corev1.Endpoints) (found, ready bool) {
	if eps == nil {
		return false, false
	}
	for _, ss := range eps.Subsets {
		ready = ready || len(ss.Addresses) > 0
		for _, p := range ss.Ports {
			if !tcpPort(p.Protocol) {
				continue
			}
			for i := range ss.Addresses {
				a := ss.Addresses[i]
				s.add(a.IP, p.Port, p.Name, p.AppProtocol, a.TargetRef)
			}
		}
	}
	return true, ready
}

// addSlices adds the ready endpoints of the IPv4 and IPv6 slices on their
// TCP ports; found is false when there is no slice, ready when an endpoint
// of an IP slice is ready and has an address (whatever its ports).
func (s *endpointSet) addSlices(slices []*discoveryv1.EndpointSlice) (found, ready bool) {
	for _, slice := range slices {
		// FQDN (and any future type) slices are skipped; the sources log
		// them (endpointfilter).
		found = true
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, e := range slice.Endpoints {
			ready = ready || (endpointReady(e) && len(e.Addresses) > 0)
		}
		for _, p := range slice.Ports {
			if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
				continue
			}
			portName := ""
			if p.Name != nil {
				portName = *p.Name
			}
			for _, e := range slice.Endpoints {
				if !endpointReady(e) {
					continue
				}
				for _, a := range e.Addresses {
					s.add(a, *p.Port, portName, p.AppProtocol, e.TargetRef)
				}
			}
		}
	}
	return found, ready
}

// addIdled adds the endpoints of idled service svc, as OpenShift's
// unidling does: its cluster IP, one endpoint per TCP service port, never
// health-checked (a check would wake the service up). A request reaching
// it makes the cluster's network plugin ask for the pods back. A
// restricted cluster IP (metadata, link-local, ...) never gets here: the
// sources drop it (endpointfilter), with a log line.
func (s *endpointSet) addIdled(svc *corev1.Service) {
	for _, p := range svc.Spec.Ports {
		if !tcpPort(p.Protocol) {
			continue
		}
		s.add(svc.Spec.ClusterIP, p.Port, p.Name, p.AppProtocol, nil)
	}
	for i := range s.list {
		s.list[i].NoHealthCheck = true
	}
}

// IdledAtAnnotation marks a service the idler scaled down (OpenShift's
// `oc idle`), with the time it did.
const IdledAtAnnotation = "idling.alpha.openshift.io/idled-at"

// serviceIdled reports whether svc is idled and can be woken up through its
// cluster IP: the idled-at annotation is not empty and the service has a
// cluster IP (a headless idled service gets no endpoint, as in OpenShift).
func serviceIdled(svc *corev1.Service) bool {
	if svc == nil || svc.Annotations[IdledAtAnnotation] == "" {
		return false
	}
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// validAppProtocol accepts what Kubernetes allows in appProtocol (an IANA
// service name or a domain-prefixed name): the value reaches templates.
func validAppProtocol(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '/', c == '_':
		default:
			return false
		}
	}
	return true
}

// endpointReady follows the EndpointSlice contract: a nil ready condition
// means ready; terminating endpoints are not ready.
func endpointReady(e discoveryv1.Endpoint) bool {
	if e.Conditions.Ready != nil {
		return *e.Conditions.Ready
	}
	return e.Conditions.Terminating == nil || !*e.Conditions.Terminating
}

// Routes builds the model entries of routes (admitted, with their service
// units in base) again, as Build would with the objects of v, when only
// the endpoints of the services in changed differ from those base was
// built from: the service units of changed are built afresh from v, the
// others are base's. It returns the entries and the service units they
// use (with base's route associations); base is not modified. It takes
// time in the size of routes and their services, not of base.
func Routes(v store.View, base *model.TemplateData, routes []*routev1.Route, changed map[model.ServiceUnitKey]bool, o Options) (map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, map[model.ServiceUnitKey]model.ServiceUnit) {
	td := &model.TemplateData{ServiceUnits: map[model.ServiceUnitKey]model.ServiceUnit{}}
	for _, r := range routes {
		if m := o.made(r); m != nil && m.Answered() {
			continue // no backend (buildAlias)
		}
		for i, b := range routeBackends(r) {
			ns := o.backendNamespace(r, i)
			k := model.NewServiceUnitKey(ns, b.Name)
			if _, ok := td.ServiceUnits[k]; ok {
				continue
			}
			old, had := base.ServiceUnits[k]
			if !had || changed[k] {
				su := buildServiceUnit(v, ns, b.Name, o.WatchEndpoints)
				if had {
					su.ServiceAliasAssociations = old.ServiceAliasAssociations
				}
				td.ServiceUnits[k] = su
				continue
			}
			td.ServiceUnits[k] = old
		}
	}
	state := make(map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, len(routes))
	for _, r := range routes {
		state[model.NewServiceAliasConfigKey(r.Namespace, r.Name)] = buildAlias(v, td, r, o)
	}
	return state, td.ServiceUnits
}
