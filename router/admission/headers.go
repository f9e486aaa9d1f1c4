package admission

import (
	"regexp"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of spec.httpHeaders.actions, as in the Route API.
const (
	MaxHeaderActions     = 20
	MaxHeaderNameLength  = 255
	MaxHeaderValueLength = 16384
)

var (
	// headerNamePattern is the Route API's pattern of a header name
	// (an RFC 2616 token).
	headerNamePattern = regexp.MustCompile("^[-!#$%&'*+.0-9A-Z^_`a-z|~]+$")
	// requestHeaderValuePattern and responseHeaderValuePattern are the
	// Route API's patterns of a Set value: printable text in which "%"
	// only starts "%%" or a sample fetch the API allows — req.hdr(NAME)
	// (res.hdr(NAME) for responses) or ssl_c_der, optionally with the
	// lower and base64 converters and a {+Q}-style flag list.
	requestHeaderValuePattern  = headerValuePattern(`req\.hdr`)
	responseHeaderValuePattern = headerValuePattern(`res\.hdr`)
)

func headerValuePattern(fetch string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:` + fetch + `\([0-9A-Za-z-]+\)|ssl_c_der)(?:,(?:lower|base64))*\])|[^%[:cntrl:]])+$`)
}

// reservedHeaders may not be set or deleted through header actions.
var reservedHeaders = []string{"strict-transport-security", "proxy", "cookie", "set-cookie"}

// Messages of the Route API's header-action rules.
const (
	msgHeaderActionsPassthrough = "header actions are not permitted when tls termination is passthrough."
	msgHeaderSetRequired        = "set is required when type is Set, and forbidden otherwise"
	msgHeaderValueFormat        = "Either the header value provided is not in correct format or the sample fetcher/converter specified is not allowed. " +
		"The dynamic header value will be interpreted as an HAProxy format string as defined in http://cbonte.github.io/haproxy-dconv/2.6/configuration.html#8.2.6 " +
		"and may use HAProxy's %[] syntax and otherwise must be a valid HTTP header value as defined in https://datatracker.ietf.org/doc/html/rfc7230#section-3.2. " +
		"Sample fetchers allowed are FETCH, ssl_c_der. Converters allowed are lower, base64."
)

// validateHeaderActions checks spec.httpHeaders.actions with the Route
// API's rules (openshift/api route/v1): at most 20 request and 20 response
// actions, names that are HTTP tokens of at most 255 characters, unique in
// their list and not reserved, Set with a value (and Delete without), and
// Set values of at most 16384 characters that match the API's pattern —
// which allows only the sample fetches req.hdr (res.hdr for responses) and
// ssl_c_der with the converters lower and base64, and no control
// characters. Passthrough routes may not have header actions. A route the
// API server would refuse never reaches haproxy.config.
func validateHeaderActions(p *field.Path, spec *routev1.RouteSpec) field.ErrorList {
	h := spec.HTTPHeaders
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	if spec.TLS != nil && spec.TLS.Termination == routev1.TLSTerminationPassthrough {
		errs = append(errs, field.Invalid(p, "", msgHeaderActionsPassthrough))
	}
	ap := p.Child("actions")
	errs = append(errs, validateHeaderList(ap.Child("request"), h.Actions.Request, requestHeaderValuePattern, "req.hdr")...)
	errs = append(errs, validateHeaderList(ap.Child("response"), h.Actions.Response, responseHeaderValuePattern, "res.hdr")...)
	return errs
}

func validateHeaderList(p *field.Path, list []routev1.RouteHTTPHeader, valuePattern *regexp.Regexp, fetch string) field.ErrorList {
	var errs field.ErrorList
	if len(list) > MaxHeaderActions {
		errs = append(errs, field.TooMany(p, len(list), MaxHeaderActions))
	}
	seen := map[string]bool{}
	for i, a := range list {
		ip := p.Index(i)
		np := ip.Child("name")
		switch {
		case a.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(a.Name) > MaxHeaderNameLength:
			errs = append(errs, field.TooLong(np, "", MaxHeaderNameLength))
		case !headerNamePattern.MatchString(a.Name):
			errs = append(errs, field.Invalid(np, quoteForMessage(a.Name), "must be an HTTP header name: letters, digits and -!#$%&'*+.^_`|~"))
		default:
			lower := strings.ToLower(a.Name)
			for _, r := range reservedHeaders {
				if lower == r {
					errs = append(errs, field.Invalid(np, a.Name, r+" header may not be modified via header actions"))
				}
			}
			if seen[a.Name] {
				errs = append(errs, field.Duplicate(np, a.Name))
			}
			seen[a.Name] = true
		}
		tp := ip.Child("action")
		switch a.Action.Type {
		case routev1.Set:
			if a.Action.Set == nil {
				errs = append(errs, field.Required(tp.Child("set"), msgHeaderSetRequired))
				continue
			}
			v := a.Action.Set.Value
			vp := tp.Child("set", "value")
			switch {
			case v == "":
				errs = append(errs, field.Required(vp, ""))
			case len(v) > MaxHeaderValueLength:
				errs = append(errs, field.TooLong(vp, "", MaxHeaderValueLength))
			case !valuePattern.MatchString(v):
				errs = append(errs, field.Invalid(vp, quoteForMessage(v), strings.Replace(msgHeaderValueFormat, "FETCH", fetch, 1)))
			}
		case routev1.Delete:
			if a.Action.Set != nil {
				errs = append(errs, field.Invalid(tp.Child("set"), "", msgHeaderSetRequired))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("type"), a.Action.Type, []string{string(routev1.Set), string(routev1.Delete)}))
		}
	}
	return errs
}
