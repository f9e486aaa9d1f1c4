package gateway

import gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

// SupportedFeatures are the Gateway API features this router serves, as
// the conformance suite names them, sorted: its GatewayClasses' status
// lists them (status.supportedFeatures), and the conformance run
// (test/conformance) claims those of its profile from here.
var SupportedFeatures = []gatewayv1.FeatureName{
	"Gateway",
	"HTTPRoute",
	"HTTPRoute303RedirectStatusCode",
	"HTTPRoute307RedirectStatusCode",
	"HTTPRoute308RedirectStatusCode",
	"HTTPRouteBackendProtocolH2C",
	"HTTPRouteBackendProtocolWebSocket",
	"HTTPRouteBackendTimeout",
	"HTTPRouteCORS",
	"HTTPRouteHostRewrite",
	"HTTPRouteMethodMatching",
	"HTTPRouteNamedRouteRule",
	"HTTPRoutePathRedirect",
	"HTTPRoutePathRewrite",
	"HTTPRoutePortRedirect",
	"HTTPRouteQueryParamMatching",
	"HTTPRouteRequestTimeout",
	"HTTPRouteResponseHeaderModification",
	"HTTPRouteRetry",
	"HTTPRouteSchemeRedirect",
	"ReferenceGrant",
	"TLSRoute",
}

// supportedFeatures is SupportedFeatures as a GatewayClass's status has
// them, TLSRoute only where TLSRoutes are served (tlsRoutes).
func supportedFeatures(tlsRoutes bool) []gatewayv1.SupportedFeature {
	out := make([]gatewayv1.SupportedFeature, 0, len(SupportedFeatures))
	for _, f := range SupportedFeatures {
		if f == "TLSRoute" && !tlsRoutes {
			continue
		}
		out = append(out, gatewayv1.SupportedFeature{Name: f})
	}
	return out
}
