package manifests

// The API server's validation of the objects read from the manifests
// directory. On a cluster, an object the API server refuses never exists;
// here the same rules are applied to each document after defaulting, and a
// document that breaks one is skipped like a malformed one (the previous
// version of its object, if any, is kept). Messages are worded as the API
// server words them ("spec.host: Invalid value: ...").
//
// Route: the rules of the Route CRD (github.com/openshift/api,
// route/v1/zz_generated.crd-manifests/routes.crd.yaml): its OpenAPI
// constraints (patterns, lengths, enums, bounds, item counts, the anyOf
// combinations) and its CEL rules. Core kinds: the key rules of
// k8s.io/kubernetes' validation (not importable), written with
// k8s.io/apimachinery's validation helpers. Object metadata (name, namespace,
// labels, annotations...) is checked by apimachinery's own
// ValidateObjectMetaAccessor.
//
// Deliberate difference: loopback endpoint addresses, which the API server
// refuses, are accepted (a local directory may point at local backends); the
// other restricted addresses (and restricted Service cluster IPs) are dropped
// later by endpointfilter.

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/headeractions"
)

// ErrInvalid is wrapped by the *ParseError of a document the API server
// would refuse.
var ErrInvalid = errors.New("invalid")

// API limits.
const (
	// routeHostMaxLength is the CRD's maxLength of spec.host and
	// spec.subdomain.
	routeHostMaxLength = 253
	// routeMaxAlternateBackends is the CRD's maxItems of
	// spec.alternateBackends.
	routeMaxAlternateBackends = 3
	// routeMaxWeight is the CRD's maximum of a backend's weight.
	routeMaxWeight = 256
	// maxEndpointsPerSlice, maxAddressesPerEndpoint and maxPortsPerSlice
	// are the EndpointSlice API's limits.
	maxEndpointsPerSlice    = 1000
	maxAddressesPerEndpoint = 100
	maxPortsPerSlice        = 100
	// maxSecretSize is the API's limit on a Secret's data.
	maxSecretSize = 1024 * 1024
)

// routeHostPattern is the CRD's pattern of spec.host and spec.subdomain.
const routeHostPattern = `^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*$`

var routeHostRE = regexp.MustCompile(routeHostPattern)

// validateObject returns what the API server would refuse in a defaulted
// object, nil if it would accept it.
func validateObject(obj object) error {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *routev1.Route:
		errs = validateRoute(o)
	case *corev1.Service:
		errs = validateService(o)
	case *corev1.Endpoints:
		errs = validateEndpoints(o)
	case *discoveryv1.EndpointSlice:
		errs = validateEndpointSlice(o)
	case *corev1.Namespace:
		errs = apivalidation.ValidateObjectMetaAccessor(o, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
	case *corev1.Secret:
		errs = validateSecret(o)
	case *gatewayv1.GatewayClass:
		errs = apivalidation.ValidateObjectMetaAccessor(o, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	case *gatewayv1.Gateway, *gatewayv1.HTTPRoute, *gatewayv1.TLSRoute, *gatewayv1.ReferenceGrant:
		errs = apivalidation.ValidateObjectMetaAccessor(o.(metav1.Object), true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, errs.ToAggregate().Error())
}

// inBody is the detail of the API server's OpenAPI errors: "spec.host in
// body should match '...'".
func inBody(p *field.Path, format string, args ...any) string {
	return p.String() + " in body " + fmt.Sprintf(format, args...)
}

func validateRoute(r *routev1.Route) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(r, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	s := &r.Spec

	errs = append(errs, validateRouteHost(spec.Child("host"), s.Host)...)
	errs = append(errs, validateRouteHost(spec.Child("subdomain"), s.Subdomain)...)
	if s.Path != "" && !strings.HasPrefix(s.Path, "/") {
		errs = append(errs, field.Invalid(spec.Child("path"), s.Path, inBody(spec.Child("path"), "should match '^/'")))
	}
	errs = append(errs, validateRouteTarget(spec.Child("to"), &s.To)...)
	if n := len(s.AlternateBackends); n > routeMaxAlternateBackends {
		errs = append(errs, field.TooMany(spec.Child("alternateBackends"), n, routeMaxAlternateBackends))
	}
	seen := map[[2]string]bool{}
	for i := range s.AlternateBackends {
		p := spec.Child("alternateBackends").Index(i)
		b := &s.AlternateBackends[i]
		errs = append(errs, validateRouteTarget(p, b)...)
		k := [2]string{b.Kind, b.Name}
		if seen[k] {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("{%q:%q,%q:%q}", "kind", b.Kind, "name", b.Name)))
		}
		seen[k] = true
	}
	if s.Port != nil {
		tp := spec.Child("port", "targetPort")
		switch {
		case s.Port.TargetPort.Type == intstr.Int && s.Port.TargetPort.IntVal == 0,
			s.Port.TargetPort.Type == intstr.String && s.Port.TargetPort.StrVal == "":
			errs = append(errs, field.Required(tp, "must not be 0 or empty"))
		}
	}
	switch s.WildcardPolicy {
	case routev1.WildcardPolicyNone, routev1.WildcardPolicySubdomain, "":
	default:
		errs = append(errs, field.NotSupported(spec.Child("wildcardPolicy"), s.WildcardPolicy,
			[]routev1.WildcardPolicyType{routev1.WildcardPolicyNone, routev1.WildcardPolicySubdomain, ""}))
	}
	if s.Host == "" && s.WildcardPolicy == routev1.WildcardPolicySubdomain {
		errs = append(errs, field.Invalid(spec, "object",
			"must validate at least one schema (anyOf): spec.host is required when spec.wildcardPolicy is Subdomain"))
	}
	if s.TLS != nil {
		errs = append(errs, validateRouteTLS(spec.Child("tls"), s.TLS)...)
		if s.TLS.Termination == routev1.TLSTerminationPassthrough {
			if s.Path != "" {
				errs = append(errs, field.Invalid(spec, "object",
					"must validate at least one schema (anyOf): spec.path must be empty when spec.tls.termination is passthrough"))
			}
			if headeractions.HeadersOnPassthrough(s) {
				errs = append(errs, field.Invalid(spec, "object", headeractions.MsgPassthrough))
			}
		}
	}
	if s.HTTPHeaders != nil {
		a := spec.Child("httpHeaders", "actions")
		errs = append(errs, validateRouteHeaderActions(a.Child("request"), headeractions.Request, s.HTTPHeaders.Actions.Request)...)
		errs = append(errs, validateRouteHeaderActions(a.Child("response"), headeractions.Response, s.HTTPHeaders.Actions.Response)...)
	}
	return errs
}

func validateRouteHost(p *field.Path, host string) field.ErrorList {
	var errs field.ErrorList
	if len(host) > routeHostMaxLength {
		errs = append(errs, field.TooLong(p, host, routeHostMaxLength))
	}
	if host != "" && !routeHostRE.MatchString(host) {
		errs = append(errs, field.Invalid(p, host, inBody(p, "should match '%s'", routeHostPattern)))
	}
	return errs
}

func validateRouteTarget(p *field.Path, t *routev1.RouteTargetReference) field.ErrorList {
	var errs field.ErrorList
	if t.Kind != "Service" && t.Kind != "" {
		errs = append(errs, field.NotSupported(p.Child("kind"), t.Kind, []string{"Service", ""}))
	}
	if t.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if t.Weight != nil {
		w := p.Child("weight")
		if *t.Weight < 0 {
			errs = append(errs, field.Invalid(w, *t.Weight, inBody(w, "should be greater than or equal to 0")))
		}
		if *t.Weight > routeMaxWeight {
			errs = append(errs, field.Invalid(w, *t.Weight, inBody(w, "should be less than or equal to %d", routeMaxWeight)))
		}
	}
	return errs
}

func validateRouteTLS(p *field.Path, tls *routev1.TLSConfig) field.ErrorList {
	var errs field.ErrorList
	switch tls.Termination {
	case routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt, routev1.TLSTerminationPassthrough:
	case "":
		errs = append(errs, field.Required(p.Child("termination"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("termination"), tls.Termination,
			[]routev1.TLSTerminationType{routev1.TLSTerminationEdge, routev1.TLSTerminationReencrypt, routev1.TLSTerminationPassthrough}))
	}
	switch tls.InsecureEdgeTerminationPolicy {
	case routev1.InsecureEdgeTerminationPolicyAllow, routev1.InsecureEdgeTerminationPolicyNone, routev1.InsecureEdgeTerminationPolicyRedirect, "":
	default:
		errs = append(errs, field.NotSupported(p.Child("insecureEdgeTerminationPolicy"), tls.InsecureEdgeTerminationPolicy,
			[]routev1.InsecureEdgeTerminationPolicyType{routev1.InsecureEdgeTerminationPolicyAllow,
				routev1.InsecureEdgeTerminationPolicyNone, routev1.InsecureEdgeTerminationPolicyRedirect, ""}))
	}
	if tls.Termination == routev1.TLSTerminationPassthrough &&
		(tls.CACertificate != "" || tls.Certificate != "" || tls.DestinationCACertificate != "" || tls.Key != "") {
		errs = append(errs, field.Invalid(p, "object",
			"must validate at least one schema (anyOf): certificate, key, caCertificate and destinationCACertificate must be empty when termination is passthrough"))
	}
	if tls.Termination == routev1.TLSTerminationEdge && tls.DestinationCACertificate != "" {
		errs = append(errs, field.Invalid(p, "object",
			"must validate at least one schema (anyOf): destinationCACertificate must be empty when termination is edge"))
	}
	if tls.Certificate != "" && tls.ExternalCertificate != nil {
		errs = append(errs, field.Invalid(p, "object", "cannot have both spec.tls.certificate and spec.tls.externalCertificate"))
	}
	if tls.Termination == routev1.TLSTerminationPassthrough && tls.InsecureEdgeTerminationPolicy == routev1.InsecureEdgeTerminationPolicyAllow {
		errs = append(errs, field.Invalid(p, "object", "cannot have both spec.tls.termination: passthrough and spec.tls.insecureEdgeTerminationPolicy: Allow"))
	}
	return errs
}

// validateRouteHeaderActions words the faults headeractions.Check finds
// in a list as the API server words the CRD's: OpenAPI errors per field,
// the CEL rules' messages, and the value rule once for the list (it is a
// CEL rule on the list).
func validateRouteHeaderActions(p *field.Path, d headeractions.Direction, actions []routev1.RouteHTTPHeader) field.ErrorList {
	r := headeractions.Check(d, actions)
	var errs field.ErrorList
	if r.TooMany {
		errs = append(errs, field.TooMany(p, len(actions), headeractions.MaxActions))
	}
	for i, it := range r.Items {
		errs = append(errs, routeHeaderActionErrors(p.Index(i), &actions[i], it)...)
	}
	if r.BadValue() {
		errs = append(errs, field.Invalid(p, "array", headeractions.ValueMessage(d)))
	}
	return errs
}

func routeHeaderActionErrors(ip *field.Path, a *routev1.RouteHTTPHeader, it headeractions.Item) field.ErrorList {
	var errs field.ErrorList
	np := ip.Child("name")
	switch it.Name {
	case headeractions.NameMissing:
		errs = append(errs, field.Required(np, ""))
	case headeractions.NameTooLong:
		errs = append(errs, field.TooLong(np, a.Name, headeractions.MaxNameLength))
	case headeractions.NameNotToken:
		errs = append(errs, field.Invalid(np, a.Name, inBody(np, "should match '%s'", headeractions.NamePattern)))
	}
	if it.Reserved != "" {
		errs = append(errs, field.Invalid(np, a.Name, headeractions.ReservedMessage(it.Reserved)))
	}
	if it.Duplicate {
		errs = append(errs, field.Duplicate(ip, fmt.Sprintf("{%q:%q}", "name", a.Name)))
	}
	ap := ip.Child("action")
	switch it.Type {
	case headeractions.TypeMissing:
		errs = append(errs, field.Required(ap.Child("type"), ""))
	case headeractions.TypeUnknown:
		errs = append(errs, field.NotSupported(ap.Child("type"), a.Action.Type, []routev1.RouteHTTPHeaderActionType{routev1.Set, routev1.Delete}))
	}
	if it.SetMismatch {
		errs = append(errs, field.Invalid(ap, "object", headeractions.MsgSetRequired))
	}
	vp := ap.Child("set", "value")
	switch it.Value {
	case headeractions.ValueMissing:
		errs = append(errs, field.Required(vp, ""))
	case headeractions.ValueTooLong:
		errs = append(errs, field.TooLong(vp, a.Action.Set.Value, headeractions.MaxValueLength))
	}
	return errs
}

var supportedProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

func validateProtocol(p *field.Path, proto corev1.Protocol) field.ErrorList {
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	case "":
		return field.ErrorList{field.Required(p, "")}
	}
	return field.ErrorList{field.NotSupported(p, proto, supportedProtocols)}
}

func validatePortNumber(p *field.Path, port int32) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(p, port, msg))
	}
	return errs
}

func validateDNSLabel(p *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateService(s *corev1.Service) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(s, true, apivalidation.NameIsDNS1035Label, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	supportedTypes := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName}
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		if len(s.Spec.Ports) == 0 && s.Spec.ClusterIP != corev1.ClusterIPNone {
			errs = append(errs, field.Required(spec.Child("ports"), ""))
		}
	case corev1.ServiceTypeExternalName:
		p := spec.Child("externalName")
		name := strings.TrimSuffix(s.Spec.ExternalName, ".")
		if name == "" {
			errs = append(errs, field.Required(p, ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(p, s.Spec.ExternalName, msg))
			}
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Spec.Type, supportedTypes))
	}
	switch s.Spec.SessionAffinity {
	case corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP:
	default:
		errs = append(errs, field.NotSupported(spec.Child("sessionAffinity"), s.Spec.SessionAffinity,
			[]corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}
	if ip := s.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		errs = append(errs, validation.IsValidIP(spec.Child("clusterIP"), ip)...)
	}
	names := map[string]bool{}
	for i := range s.Spec.Ports {
		port := &s.Spec.Ports[i]
		p := spec.Child("ports").Index(i)
		switch {
		case port.Name == "" && len(s.Spec.Ports) > 1:
			errs = append(errs, field.Required(p.Child("name"), ""))
		case port.Name != "":
			errs = append(errs, validateDNSLabel(p.Child("name"), port.Name)...)
			if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		errs = append(errs, validatePortNumber(p.Child("port"), port.Port)...)
		errs = append(errs, validateProtocol(p.Child("protocol"), port.Protocol)...)
		tp := p.Child("targetPort")
		if port.TargetPort.Type == intstr.Int {
			errs = append(errs, validatePortNumber(tp, port.TargetPort.IntVal)...)
		} else {
			for _, msg := range validation.IsValidPortName(port.TargetPort.StrVal) {
				errs = append(errs, field.Invalid(tp, port.TargetPort.StrVal, msg))
			}
		}
	}
	return errs
}

func validateEndpoints(e *corev1.Endpoints) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(e, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	for i := range e.Subsets {
		ss := &e.Subsets[i]
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(p.Child("addresses").Index(j), &ss.Addresses[j])...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(p.Child("notReadyAddresses").Index(j), &ss.NotReadyAddresses[j])...)
		}
		for j := range ss.Ports {
			port := &ss.Ports[j]
			pp := p.Child("ports").Index(j)
			switch {
			case port.Name == "" && len(ss.Ports) > 1:
				errs = append(errs, field.Required(pp.Child("name"), ""))
			case port.Name != "":
				errs = append(errs, validateDNSLabel(pp.Child("name"), port.Name)...)
			}
			errs = append(errs, validatePortNumber(pp.Child("port"), port.Port)...)
			errs = append(errs, validateProtocol(pp.Child("protocol"), port.Protocol)...)
		}
	}
	return errs
}

func validateEndpointAddress(p *field.Path, a *corev1.EndpointAddress) field.ErrorList {
	errs := validation.IsValidIP(p.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, validateDNSLabel(p.Child("hostname"), a.Hostname)...)
	}
	if a.NodeName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*a.NodeName) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return errs
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(s, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	supported := []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}
	validType := false
	for _, t := range supported {
		validType = validType || s.AddressType == t
	}
	switch {
	case s.AddressType == "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	case !validType:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, supported))
	}
	if n := len(s.Endpoints); n > maxEndpointsPerSlice {
		errs = append(errs, field.TooMany(field.NewPath("endpoints"), n, maxEndpointsPerSlice))
	}
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		p := field.NewPath("endpoints").Index(i)
		ap := p.Child("addresses")
		switch n := len(ep.Addresses); {
		case n == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case n > maxAddressesPerEndpoint:
			errs = append(errs, field.TooMany(ap, n, maxAddressesPerEndpoint))
		}
		if validType {
			for j, a := range ep.Addresses {
				errs = append(errs, validateSliceAddress(ap.Index(j), s.AddressType, a)...)
			}
		}
		if ep.Hostname != nil {
			errs = append(errs, validateDNSLabel(p.Child("hostname"), *ep.Hostname)...)
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
	}
	if n := len(s.Ports); n > maxPortsPerSlice {
		errs = append(errs, field.TooMany(field.NewPath("ports"), n, maxPortsPerSlice))
	}
	names := map[string]bool{}
	for i := range s.Ports {
		port := &s.Ports[i]
		p := field.NewPath("ports").Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, validateDNSLabel(p.Child("name"), name)...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Port != nil {
			errs = append(errs, validatePortNumber(p.Child("port"), *port.Port)...)
		}
		if port.Protocol != nil {
			errs = append(errs, validateProtocol(p.Child("protocol"), *port.Protocol)...)
		}
	}
	return errs
}

// validateSliceAddress checks an EndpointSlice address against the slice's
// addressType.
func validateSliceAddress(p *field.Path, t discoveryv1.AddressType, a string) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, a)
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIP(p, a); len(errs) > 0 {
			return errs
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return field.ErrorList{field.Invalid(p, a, "must be a valid IP address")}
		}
		if t == discoveryv1.AddressTypeIPv4 && !ip.Is4() {
			return field.ErrorList{field.Invalid(p, a, "must be a valid IPv4 address")}
		}
		if t == discoveryv1.AddressTypeIPv6 && !ip.Is6() {
			return field.ErrorList{field.Invalid(p, a, "must be a valid IPv6 address")}
		}
	}
	return nil
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(s, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	data := field.NewPath("data")
	size := 0
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(data.Key(k), k, msg))
		}
		size += len(s.Data[k])
	}
	if size > maxSecretSize {
		errs = append(errs, field.TooLong(data, "", maxSecretSize))
	}
	if s.Type == corev1.SecretTypeTLS {
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(data.Key(k), ""))
			}
		}
	}
	return errs
}
