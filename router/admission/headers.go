package admission

import (
	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openshift-router-go/router/router/headeractions"
)

// msgHeaderName is admission's message for a header name that is not an
// HTTP token.
const msgHeaderName = "must be an HTTP header name: letters, digits and -!#$%&'*+.^_`|~"

// validateHeaderActions checks spec.httpHeaders.actions with the Route
// API's rules (router/headeractions): at most 20 request and 20 response
// actions, names that are HTTP tokens of at most 255 characters, unique in
// their list and not reserved, Set with a value (and Delete without), and
// Set values of at most 16384 characters that match the API's pattern —
// which allows only the sample fetches req.hdr (res.hdr for responses) and
// ssl_c_der with the converters lower and base64, and no control
// characters. Passthrough routes may not have header actions (an empty
// httpHeaders is accepted, as by OpenShift). A route the API server would
// refuse never reaches haproxy.config. Each fault is reported at the field
// it is in, for the route's status.
func validateHeaderActions(p *field.Path, spec *routev1.RouteSpec) field.ErrorList {
	h := spec.HTTPHeaders
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	if headeractions.ActionsOnPassthrough(spec) {
		errs = append(errs, field.Invalid(p, "", headeractions.MsgPassthrough))
	}
	ap := p.Child("actions")
	errs = append(errs, validateHeaderList(ap.Child("request"), headeractions.Request, h.Actions.Request)...)
	errs = append(errs, validateHeaderList(ap.Child("response"), headeractions.Response, h.Actions.Response)...)
	return errs
}

func validateHeaderList(p *field.Path, d headeractions.Direction, list []routev1.RouteHTTPHeader) field.ErrorList {
	r := headeractions.Check(d, list)
	var errs field.ErrorList
	if r.TooMany {
		errs = append(errs, field.TooMany(p, len(list), headeractions.MaxActions))
	}
	for i, it := range r.Items {
		errs = append(errs, headerNameErrors(p.Index(i).Child("name"), list[i].Name, it)...)
		errs = append(errs, headerActionErrors(p.Index(i).Child("action"), d, &list[i].Action, it)...)
	}
	return errs
}

// headerNameErrors words the faults of an action's name; a name that is
// not a token is not also reported as reserved or duplicate.
func headerNameErrors(np *field.Path, name string, it headeractions.Item) field.ErrorList {
	var errs field.ErrorList
	switch it.Name {
	case headeractions.NameMissing:
		errs = append(errs, field.Required(np, ""))
	case headeractions.NameTooLong:
		errs = append(errs, field.TooLong(np, "", headeractions.MaxNameLength))
	case headeractions.NameNotToken:
		errs = append(errs, field.Invalid(np, quoteForMessage(name), msgHeaderName))
	default:
		if it.Reserved != "" {
			errs = append(errs, field.Invalid(np, name, headeractions.ReservedMessage(it.Reserved)))
		}
		if it.Duplicate {
			errs = append(errs, field.Duplicate(np, name))
		}
	}
	return errs
}

// headerActionErrors words the faults of an action's type, set and value:
// an unknown type alone, the value only of a Set action.
func headerActionErrors(tp *field.Path, d headeractions.Direction, a *routev1.RouteHTTPHeaderActionUnion, it headeractions.Item) field.ErrorList {
	switch a.Type {
	case routev1.Set:
		if it.SetMismatch {
			return field.ErrorList{field.Required(tp.Child("set"), headeractions.MsgSetRequired)}
		}
		vp := tp.Child("set", "value")
		switch {
		case it.Value == headeractions.ValueMissing:
			return field.ErrorList{field.Required(vp, "")}
		case it.Value == headeractions.ValueTooLong:
			return field.ErrorList{field.TooLong(vp, "", headeractions.MaxValueLength)}
		case it.BadValue:
			return field.ErrorList{field.Invalid(vp, quoteForMessage(a.Set.Value), headeractions.ValueMessage(d))}
		}
	case routev1.Delete:
		if it.SetMismatch {
			return field.ErrorList{field.Invalid(tp.Child("set"), "", headeractions.MsgSetRequired)}
		}
	default:
		return field.ErrorList{field.NotSupported(tp.Child("type"), a.Type, []string{string(routev1.Set), string(routev1.Delete)})}
	}
	return nil
}
