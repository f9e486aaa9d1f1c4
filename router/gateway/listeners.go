package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The router's Service maps ports 80 and 443 to its HTTP and HTTPS ports:
// listeners on those ports are served there.
const (
	httpPort  = 80
	httpsPort = 443
)

// The route kinds a listener takes: HTTPRoutes on HTTP and HTTPS
// listeners, TLSRoutes on TLS (passthrough) ones.
var (
	httpRouteKind = gatewayv1.RouteGroupKind{Group: ptrTo(gatewayv1.Group(gatewayv1.GroupName)), Kind: "HTTPRoute"}
	tlsRouteKind  = gatewayv1.RouteGroupKind{Group: ptrTo(gatewayv1.Group(gatewayv1.GroupName)), Kind: "TLSRoute"}
)

func ptrTo[T any](v T) *T { return &v }

// gatewayStatus evaluates a Gateway of this router and its listeners.
func gatewayStatus(v View, g *gatewayv1.Gateway, o Options) *GatewayStatus {
	gen := g.Generation
	gs := &GatewayStatus{Generation: gen, created: g.CreationTimestamp}
	served := 0
	for _, l := range g.Spec.Listeners {
		ls := listenerStatus(l, gen)
		if ls.served && l.Protocol == gatewayv1.HTTPSProtocolType {
			resolveCertificate(v, g, &ls)
		}
		gs.Listeners = append(gs.Listeners, ls)
	}
	markConflicts(gs.Listeners, gen)
	for _, ls := range gs.Listeners {
		if ls.served {
			served++
		}
	}
	// The router serves on its own addresses; it cannot assign others.
	if gs.ownHost = ownHost(o.Subdomain, g); gs.ownHost != "" {
		t := gatewayv1.HostnameAddressType
		gs.Addresses = append(gs.Addresses, gatewayv1.GatewayStatusAddress{Type: &t, Value: gs.ownHost})
	} else {
		gs.Addresses = append(gs.Addresses, o.Addresses...)
	}
	switch {
	case served == len(gs.Listeners):
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionAccepted, true, gatewayv1.GatewayReasonAccepted, "Accepted by this router", gen))
	case served > 0:
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionAccepted, true, gatewayv1.GatewayReasonListenersNotValid,
			fmt.Sprintf("%d of %d listeners are not served: see their conditions", len(gs.Listeners)-served, len(gs.Listeners)), gen))
	default:
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionAccepted, false, gatewayv1.GatewayReasonListenersNotValid,
			"no listener can be served: see their conditions", gen))
	}
	switch {
	case served > 0 && len(g.Spec.Addresses) > 0:
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionProgrammed, false, gatewayv1.GatewayReasonAddressNotAssigned,
			"the router serves Gateways on its own addresses (status.addresses) and cannot assign those spec.addresses asks for", gen))
	case served > 0:
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionProgrammed, true, gatewayv1.GatewayReasonProgrammed, "Served by this router", gen))
	default:
		gs.Conditions = append(gs.Conditions, condition(gatewayv1.GatewayConditionProgrammed, false, gatewayv1.GatewayReasonInvalid, "no listener can be served", gen))
	}
	return gs
}

// ownHost is Gateway g's own host name from template (Options.Subdomain),
// or "" (no template, or a name that makes no valid host name). A label
// longer than DNS takes (63 characters) is shortened to its first 46 and a
// hash of it, so that the name resolves.
func ownHost(template string, g *gatewayv1.Gateway) string {
	if template == "" {
		return ""
	}
	h := strings.ToLower(strings.NewReplacer("${name}", g.Name, "${namespace}", g.Namespace).Replace(template))
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if len(l) > validation.DNS1123LabelMaxLength {
			sum := sha256.Sum256([]byte(l))
			labels[i] = strings.TrimRight(l[:46], "-") + "-" + hex.EncodeToString(sum[:8])
		}
	}
	h = strings.Join(labels, ".")
	if len(validation.IsDNS1123Subdomain(h)) > 0 {
		return ""
	}
	for _, l := range labels {
		if len(validation.IsDNS1123Label(l)) > 0 {
			return ""
		}
	}
	return h
}

// listenerStatus evaluates one listener.
func listenerStatus(l gatewayv1.Listener, gen int64) ListenerStatus {
	ls := ListenerStatus{spec: l}
	ls.Name = l.Name
	ls.SupportedKinds = []gatewayv1.RouteGroupKind{}
	accepted := condition(gatewayv1.ListenerConditionAccepted, true, gatewayv1.ListenerReasonAccepted, "", gen)
	switch {
	case l.Protocol == gatewayv1.HTTPProtocolType && l.Port == httpPort:
	case l.Protocol == gatewayv1.HTTPProtocolType:
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonPortUnavailable,
			fmt.Sprintf("HTTP listeners are served on port %d only (the router's HTTP port)", httpPort), gen)
	case l.Protocol == gatewayv1.HTTPSProtocolType && l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode != gatewayv1.TLSModeTerminate:
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonUnsupportedValue,
			"HTTPS listeners terminate TLS (tls.mode Terminate)", gen)
	case l.Protocol == gatewayv1.HTTPSProtocolType && l.Port == httpsPort:
	case l.Protocol == gatewayv1.HTTPSProtocolType:
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonPortUnavailable,
			fmt.Sprintf("HTTPS listeners are served on port %d only (the router's HTTPS port)", httpsPort), gen)
	case l.Protocol == gatewayv1.TLSProtocolType && (l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode != gatewayv1.TLSModePassthrough):
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonUnsupportedValue,
			"TLS listeners pass TLS through to the backends (tls.mode Passthrough); Terminate is not served by this router", gen)
	case l.Protocol == gatewayv1.TLSProtocolType && l.Port == httpsPort:
	case l.Protocol == gatewayv1.TLSProtocolType:
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonPortUnavailable,
			fmt.Sprintf("TLS listeners are served on port %d only (the router's HTTPS port)", httpsPort), gen)
	default:
		accepted = condition(gatewayv1.ListenerConditionAccepted, false, gatewayv1.ListenerReasonUnsupportedProtocol,
			fmt.Sprintf("protocol %s is not supported", l.Protocol), gen)
	}
	resolved := condition(gatewayv1.ListenerConditionResolvedRefs, true, gatewayv1.ListenerReasonResolvedRefs, "", gen)
	if accepted.Status == metav1.ConditionTrue {
		var invalid []string
		ls.SupportedKinds, invalid = supportedKinds(l)
		if len(invalid) > 0 {
			resolved = condition(gatewayv1.ListenerConditionResolvedRefs, false, gatewayv1.ListenerReasonInvalidRouteKinds,
				fmt.Sprintf("route kinds not supported on a %s listener: %v", l.Protocol, invalid), gen)
		}
		ls.served = len(ls.SupportedKinds) > 0
	}
	programmed := condition(gatewayv1.ListenerConditionProgrammed, true, gatewayv1.ListenerReasonProgrammed, "", gen)
	if !ls.served {
		programmed = condition(gatewayv1.ListenerConditionProgrammed, false, gatewayv1.ListenerReasonInvalid, "not served", gen)
	}
	ls.Conditions = []metav1.Condition{accepted, programmed, resolved,
		condition(gatewayv1.ListenerConditionConflicted, false, gatewayv1.ListenerReasonNoConflicts, "", gen)}
	return ls
}

// supportedKinds returns the route kinds a served listener allows
// (allowedRoutes.kinds; by default the kind of its protocol: HTTPRoute on
// HTTP and HTTPS, TLSRoute on TLS) and those it names that it cannot take.
func supportedKinds(l gatewayv1.Listener) ([]gatewayv1.RouteGroupKind, []string) {
	kind := httpRouteKind
	if l.Protocol == gatewayv1.TLSProtocolType {
		kind = tlsRouteKind
	}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		return []gatewayv1.RouteGroupKind{kind}, nil
	}
	kinds := []gatewayv1.RouteGroupKind{}
	var invalid []string
	for _, k := range l.AllowedRoutes.Kinds {
		group := gatewayv1.GroupName
		if k.Group != nil {
			group = string(*k.Group)
		}
		if group == gatewayv1.GroupName && k.Kind == kind.Kind {
			if len(kinds) == 0 {
				kinds = append(kinds, kind)
			}
			continue
		}
		invalid = append(invalid, group+"/"+string(k.Kind))
	}
	return kinds, invalid
}

// takes reports whether a listener takes routes of kind.
func (ls *ListenerStatus) takes(kind gatewayv1.Kind) bool {
	for _, k := range ls.SupportedKinds {
		if k.Kind == kind {
			return true
		}
	}
	return false
}

// passthrough reports whether the listener passes TLS through (TLSRoutes).
func (ls *ListenerStatus) passthrough() bool { return ls.spec.Protocol == gatewayv1.TLSProtocolType }

// markConflicts marks the served listeners that share a port and hostname
// with another as Conflicted, and no longer served.
func markConflicts(ls []ListenerStatus, gen int64) {
	seen := map[string][]int{}
	for i, l := range ls {
		if !l.served {
			continue
		}
		key := fmt.Sprintf("%d/%s", l.spec.Port, hostnameOf(l.spec.Hostname))
		seen[key] = append(seen[key], i)
	}
	for _, idx := range seen {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			ls[i].served = false
			ls[i].Conditions = []metav1.Condition{
				condition(gatewayv1.ListenerConditionAccepted, true, gatewayv1.ListenerReasonAccepted, "", gen),
				condition(gatewayv1.ListenerConditionProgrammed, false, gatewayv1.ListenerReasonInvalid, "conflicts with another listener", gen),
				condition(gatewayv1.ListenerConditionResolvedRefs, true, gatewayv1.ListenerReasonResolvedRefs, "", gen),
				condition(gatewayv1.ListenerConditionConflicted, true, gatewayv1.ListenerReasonHostnameConflict,
					"another listener has the same port and hostname", gen),
			}
		}
	}
}

func hostnameOf(h *gatewayv1.Hostname) string {
	if h == nil {
		return ""
	}
	return string(*h)
}
