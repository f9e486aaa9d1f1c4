package admission

import (
	"strconv"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openshift-router-go/router/router/model"
)

// MaxPathLength bounds spec.path: HAProxy reads map files line by line into
// a fixed buffer (16 KiB in 2.6) and splits longer lines, which would let a
// long path forge a map entry for another host.
const MaxPathLength = 4096

// MaxAlternateBackends is the largest number of alternateBackends a route may have.
const MaxAlternateBackends = 3

// MaxMadeBackends is the largest number of backends (spec.to and
// alternateBackends) of a route the router made (Options.Made): the
// Gateway API's backendRefs of a rule, at most 16. Their names may repeat
// (Services of other namespaces: the maker sees to it that each
// namespace and name is there once).
const MaxMadeBackends = 16

// MaxWeight is the largest weight of a route backend.
const MaxWeight = 256

// Messages of the host step, as OpenShift's router words them.
const (
	msgNoHostValue = "no host value was defined for the route"
	msgInvalidHost = "host name validation errors: "
	msgDNSHost     = "host must conform to DNS 952 subdomain conventions"
	msgServiceKind = "must reference a Service"
)

// hostCheck is the host step: a route needs a host (NoHostValue) that is a
// valid DNS name (InvalidHost).
func hostCheck(made func(Key) bool) check {
	return func(r *routev1.Route, k *lazyKey) (Result, bool) {
		if made != nil && (r.Spec.Host == AnyHost || strings.HasPrefix(r.Spec.Host, "*.")) && made(k.get()) {
			if r.Spec.Host == AnyHost {
				return Result{}, true
			}
			// A made route for every subdomain, at any depth: "*."
			// and a host.
			c := *r
			c.Spec.Host = r.Spec.Host[2:]
			return checkHost(&c)
		}
		return checkHost(r)
	}
}

// AnyHost is the host of the routes the router makes for every hostname
// (Options.Made: the Gateway API's routes on a listener without a
// hostname, which have none themselves). Made routes may also have a
// host "*." and a domain, with wildcardPolicy Subdomain: every subdomain
// of the domain, at any depth (the Gateway API's wildcard hostnames). They share it whatever their
// namespaces, one route per path (the oldest). A Route of the API with
// this host is refused as an invalid host.
const AnyHost = model.AnyHost

func checkHost(r *routev1.Route) (Result, bool) {
	host := hostOf(r)
	if host == "" {
		return Result{Reason: ReasonNoHostValue, Message: msgNoHostValue}, false
	}
	if errs := ValidateHost(host); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return Result{Reason: ReasonInvalidHost, Message: msgInvalidHost + strings.Join(msgs, ", ")}, false
	}
	return Result{}, true
}

// ValidateHost checks a (lower-cased) route host as OpenShift's router
// does: a DNS-1123 subdomain (at most 253 characters of [a-z0-9-.]) whose
// labels are DNS-1123 labels (1 to 63 characters of [a-z0-9-], starting
// and ending with a letter or digit). A single label ("intranet") is a
// valid host; a trailing dot is not (it makes an empty label).
func ValidateHost(host string) field.ErrorList {
	if validHost(host) {
		return nil
	}
	p := field.NewPath("spec", "host")
	var errs field.ErrorList
	if len(validation.IsDNS1123Subdomain(host)) > 0 {
		errs = append(errs, field.Invalid(p, host, msgDNSHost))
	}
	for _, label := range strings.Split(host, ".") {
		for _, msg := range validation.IsDNS1123Label(label) {
			errs = append(errs, field.Invalid(p, host, msg))
		}
	}
	return errs
}

// validHost reports whether host passes both of ValidateHost's checks,
// without their regular expressions (a pass at 10,000 routes spent half
// of admission in them): at most 253 characters, labels of 1 to 63
// characters of [a-z0-9-] that start and end with a letter or digit.
// False sends ValidateHost down its checks for their messages.
func validHost(host string) bool {
	if len(host) == 0 || len(host) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := 0
	for i := 0; i <= len(host); i++ {
		if i < len(host) && host[i] != '.' {
			c := host[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		n := i - start
		if n == 0 || n > validation.DNS1123LabelMaxLength || host[start] == '-' || host[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// validationCheck is the validation step: any invalid field rejects the
// route with ExtendedValidationFailed and a message naming the fields; a
// certificate HAProxy could not load rejects it with
// CertificateNotLoadable. The TLS configuration an admitted edge or
// re-encrypt route is served with (its sanitised certificates) is put in
// served.
func validationCheck(extended bool, memo *ValidationMemo, served map[Key]*routev1.TLSConfig, made func(Key) bool) check {
	return func(r *routev1.Route, k *lazyKey) (Result, bool) {
		v := memo.validate(r, extended, made != nil && made(k.get()))
		switch {
		case len(v.invalid) > 0:
			return Result{Reason: ReasonExtendedValidationFailed, Message: v.invalid.ToAggregate().Error()}, false
		case len(v.unloadable) > 0:
			return Result{Reason: ReasonCertificateNotLoadable, Message: v.unloadable.ToAggregate().Error()}, false
		}
		if v.tls != nil {
			served[k.get()] = v.tls
		}
		return Result{}, true
	}
}

// validated is the outcome of validating one route.
type validated struct {
	// invalid are OpenShift's validation errors (ExtendedValidationFailed).
	invalid field.ErrorList
	// unloadable are this router's: certificates HAProxy could not load.
	unloadable field.ErrorList
	// tls is the sanitised TLS configuration of an edge or re-encrypt
	// route, to be served instead of the route's own.
	tls *routev1.TLSConfig
}

// Validate checks a route's fields other than its host and returns every
// reason to reject it (see validate).
func Validate(r *routev1.Route, extended bool) field.ErrorList {
	v := validate(r, extended, false)
	return append(v.invalid, v.unloadable...)
}

// validate checks a route's fields other than its host. The structural
// checks always run: they are OpenShift's API validation (path, targets,
// weights, TLS fields) plus this router's guarantee that no route value
// can break out of its token in haproxy.config or a map file. The
// certificate fields of edge and re-encrypt routes are checked by
// checkCertificates: OpenShift's extended validation with extended
// (EXTENDED_VALIDATION), and always whether HAProxy can load them.
func validate(r *routev1.Route, extended, made bool) validated {
	var v validated
	var errs field.ErrorList
	spec := field.NewPath("spec")
	meta := field.NewPath("metadata")
	for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
		errs = append(errs, field.Invalid(meta.Child("name"), r.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(r.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), r.Namespace, msg))
	}
	// Any namespace and name the API allows are served: the files written
	// for a route have bounded names (model.ServiceAliasConfigKey.FileName).

	term := routev1.TLSTerminationType("")
	if r.Spec.TLS != nil {
		term = r.Spec.TLS.Termination
	}
	if p := r.Spec.Path; p != "" {
		switch {
		case !strings.HasPrefix(p, "/"):
			errs = append(errs, field.Invalid(spec.Child("path"), p, "path must begin with /"))
		case !safeToken(p):
			errs = append(errs, field.Invalid(spec.Child("path"), p, "path must not contain spaces, quotes, '#', '\\' or control characters"))
		case len(p) > MaxPathLength:
			errs = append(errs, field.TooLong(spec.Child("path"), "", MaxPathLength))
		}
		if term == routev1.TLSTerminationPassthrough {
			errs = append(errs, field.Invalid(spec.Child("path"), p, "passthrough termination does not support paths"))
		}
	}

	errs = append(errs, validateBackends(spec, r, made)...)
	if r.Spec.Port != nil {
		errs = append(errs, validateTargetPort(spec.Child("port", "targetPort"), r.Spec.Port.TargetPort)...)
	}
	errs = append(errs, validateHeaderActions(spec.Child("httpHeaders"), &r.Spec)...)
	if r.Spec.TLS != nil {
		errs = append(errs, validateTLS(spec.Child("tls"), r.Spec.TLS)...)
		if t := r.Spec.TLS.Termination; t == routev1.TLSTerminationEdge || t == routev1.TLSTerminationReencrypt {
			served, invalid, unloadable := checkCertificates(spec.Child("tls"), r.Spec.TLS, extended)
			errs = append(errs, invalid...)
			v.unloadable = unloadable
			v.tls = served.apply(r.Spec.TLS)
		}
	}
	v.invalid = errs
	return v
}

func validateBackend(p *field.Path, b routev1.RouteTargetReference) field.ErrorList {
	var errs field.ErrorList
	// The API server defaults an empty kind to Service.
	if b.Kind != "" && b.Kind != "Service" {
		errs = append(errs, field.Invalid(p.Child("kind"), b.Kind, msgServiceKind))
	}
	// Only required, as by the Route API: a name no service can have
	// simply has no endpoints.
	if b.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if b.Weight != nil && (*b.Weight < 0 || *b.Weight > MaxWeight) {
		errs = append(errs, field.Invalid(p.Child("weight"), *b.Weight, "weight must be an integer between 0 and 256"))
	}
	return errs
}

func validateTargetPort(p *field.Path, tp intstr.IntOrString) field.ErrorList {
	switch {
	case tp.Type == intstr.Int && tp.IntVal == 0, tp.Type == intstr.String && tp.StrVal == "":
		return field.ErrorList{field.Required(p, "")}
	case tp.Type == intstr.Int && (tp.IntVal < 0 || tp.IntVal > 65535):
		return field.ErrorList{field.Invalid(p, tp.IntVal, "must be a port number between 1 and 65535")}
	case tp.Type == intstr.String && !safeToken(tp.StrVal):
		return field.ErrorList{field.Invalid(p, tp.StrVal, "must be a port number or a port name")}
	}
	return nil
}

func validateTLS(p *field.Path, tls *routev1.TLSConfig) field.ErrorList {
	var errs field.ErrorList
	switch tls.Termination {
	case routev1.TLSTerminationReencrypt:
	case routev1.TLSTerminationEdge:
		if tls.DestinationCACertificate != "" {
			errs = append(errs, field.Invalid(p.Child("destinationCACertificate"), redactedDestCA, "edge termination does not support destination certificates"))
		}
	case routev1.TLSTerminationPassthrough:
		for _, f := range []struct {
			name, value, redacted string
		}{
			{"certificate", tls.Certificate, redactedCert},
			{"key", tls.Key, redactedKey},
			{"caCertificate", tls.CACertificate, redactedCA},
			{"destinationCACertificate", tls.DestinationCACertificate, redactedDestCA},
		} {
			if f.value != "" {
				errs = append(errs, field.Invalid(p.Child(f.name), f.redacted, "passthrough termination does not support certificates"))
			}
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("termination"), tls.Termination, []string{"edge", "passthrough", "reencrypt"}))
		return errs
	}
	return append(errs, validateInsecurePolicy(p.Child("insecureEdgeTerminationPolicy"), tls)...)
}

// validateInsecurePolicy checks insecureEdgeTerminationPolicy: None, Allow
// or Redirect (or empty) for edge and re-encrypt routes; None or Redirect
// (or empty) for passthrough routes.
func validateInsecurePolicy(p *field.Path, tls *routev1.TLSConfig) field.ErrorList {
	switch tls.InsecureEdgeTerminationPolicy {
	case "", routev1.InsecureEdgeTerminationPolicyNone, routev1.InsecureEdgeTerminationPolicyRedirect:
		return nil
	case routev1.InsecureEdgeTerminationPolicyAllow:
		if tls.Termination != routev1.TLSTerminationPassthrough {
			return nil
		}
	}
	msg := "invalid value for InsecureEdgeTerminationPolicy option, acceptable values are None, Allow, Redirect, or empty"
	if tls.Termination == routev1.TLSTerminationPassthrough {
		msg = "invalid value for InsecureEdgeTerminationPolicy option, acceptable values are None, Redirect, or empty"
	}
	return field.ErrorList{field.Invalid(p, tls.InsecureEdgeTerminationPolicy, msg)}
}

// safeToken reports whether s can stand as a single token in haproxy.config
// and in a map file: no whitespace, quotes, '#', '\\' or control characters.
func safeToken(s string) bool {
	for _, c := range s {
		if c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '#' || c == '\\' || c == '`' {
			return false
		}
	}
	return true
}

// quoteForMessage returns s as is if it is a safe token, else Go-quoted,
// so that a message never carries control characters.
func quoteForMessage(s string) string {
	if s != "" && safeToken(s) {
		return s
	}
	return strconv.Quote(s)
}

// validateBackends checks spec.to and spec.alternateBackends: at most
// MaxAlternateBackends of these, of other names (MaxMadeBackends
// together, names repeated, for a made route).
func validateBackends(spec *field.Path, r *routev1.Route, made bool) field.ErrorList {
	errs := validateBackend(spec.Child("to"), r.Spec.To)
	if made {
		if len(r.Spec.AlternateBackends) >= MaxMadeBackends {
			errs = append(errs, field.TooMany(spec.Child("alternateBackends"), len(r.Spec.AlternateBackends), MaxMadeBackends-1))
		}
	} else if len(r.Spec.AlternateBackends) > MaxAlternateBackends {
		errs = append(errs, field.Required(spec.Child("alternateBackends"), "cannot specify more than 3 alternate backends"))
	}
	seen := map[string]bool{r.Spec.To.Name: true}
	for i, b := range r.Spec.AlternateBackends {
		p := spec.Child("alternateBackends").Index(i)
		errs = append(errs, validateBackend(p, b)...)
		if seen[b.Name] && !made {
			errs = append(errs, field.Duplicate(p.Child("name"), b.Name))
		}
		seen[b.Name] = true
	}
	return errs
}
