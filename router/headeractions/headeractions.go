// Package headeractions is the one home of the Route API's rules on
// spec.httpHeaders.actions (github.com/openshift/api route/v1: the Route
// CRD's schema and CEL rules, which openshift-apiserver's validation
// shares): how many actions a list may hold, what a header name and a Set
// value may be, which names are reserved, and which action types exist.
//
// Check applies the rules and reports every fault of a list as data; the
// callers word the faults for their surface — router/admission for a
// route's status, router/source/manifests as the API server words them —
// so both refuse exactly the same lists.
package headeractions

import (
	"regexp"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
)

// Limits of spec.httpHeaders.actions (the CRD's maxItems and maxLength).
const (
	MaxActions     = 20
	MaxNameLength  = 255
	MaxValueLength = 16384
)

// NamePattern is the Route API's pattern of a header name: an RFC 2616
// token.
const NamePattern = "^[-!#$%&'*+.0-9A-Z^_`a-z|~]+$"

// IsReserved reports whether a lower-cased header name is one the Route
// API refuses in header actions.
func IsReserved(lower string) bool {
	switch lower {
	case "strict-transport-security", "proxy", "cookie", "set-cookie":
		return true
	}
	return false
}

// Messages of the Route API's rules, as the CRD words them.
const (
	// MsgPassthrough is the CRD's message for header actions on a
	// passthrough route.
	MsgPassthrough = "header actions are not permitted when tls termination is passthrough."
	// MsgSetRequired is the CRD's message when set is missing with type
	// Set or present with another type.
	MsgSetRequired = "set is required when type is Set, and forbidden otherwise"
)

// Direction tells a request list from a response list: each allows its
// own header sample fetch in Set values.
type Direction int

// The two lists of spec.httpHeaders.actions.
const (
	Request Direction = iota
	Response
)

// Fetch is the header sample fetch a Set value of the list may use
// besides ssl_c_der: req.hdr for requests, res.hdr for responses.
func (d Direction) Fetch() string {
	if d == Response {
		return "res.hdr"
	}
	return "req.hdr"
}

// IsName reports whether name has NamePattern's characters (an RFC 2616
// token); its length is the caller's to bound.
func IsName(name string) bool { return nameRE.MatchString(name) }

// valuePattern is the Route API's pattern of a Set value (the CRD's CEL
// rule, RE2 as CEL's matches): printable text in which "%" only starts
// "%%" or a sample fetch the API allows — FETCH(NAME) or ssl_c_der,
// optionally with the lower and base64 converters and a {+Q}-style flag
// list.
const valuePattern = `^(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:FETCH\([0-9A-Za-z-]+\)|ssl_c_der)(?:,(?:lower|base64))*\])|[^%[:cntrl:]])+$`

// The compiled patterns (read-only).
var (
	nameRE  = regexp.MustCompile(NamePattern)
	valueRE = [2]*regexp.Regexp{
		Request:  compileValuePattern(Request),
		Response: compileValuePattern(Response),
	}
)

func compileValuePattern(d Direction) *regexp.Regexp {
	return regexp.MustCompile(strings.Replace(valuePattern, "FETCH", regexp.QuoteMeta(d.Fetch()), 1))
}

// ValueMessage is the CRD's message for a Set value that does not match
// the list's pattern.
func ValueMessage(d Direction) string {
	return "Either the header value provided is not in correct format or the sample fetcher/converter specified is not allowed. " +
		"The dynamic header value will be interpreted as an HAProxy format string as defined in http://cbonte.github.io/haproxy-dconv/2.6/configuration.html#8.2.6 " +
		"and may use HAProxy's %[] syntax and otherwise must be a valid HTTP header value as defined in https://datatracker.ietf.org/doc/html/rfc7230#section-3.2. " +
		"Sample fetchers allowed are " + d.Fetch() + ", ssl_c_der. Converters allowed are lower, base64."
}

// ReservedMessage is the CRD's message for a reserved header name
// (lower-cased).
func ReservedMessage(lower string) string {
	return lower + " header may not be modified via header actions"
}

// NameFault is what is wrong with a header name's form.
type NameFault int

// Name faults; they exclude each other.
const (
	NameOK       NameFault = iota
	NameMissing            // empty
	NameTooLong            // over MaxNameLength
	NameNotToken           // does not match NamePattern
)

// TypeFault is what is wrong with an action's type.
type TypeFault int

// Type faults; they exclude each other.
const (
	TypeOK      TypeFault = iota
	TypeMissing           // empty
	TypeUnknown           // neither Set nor Delete
)

// ValueFault is what is wrong with the length of a set value; it is
// judged whenever set is present, whatever the type.
type ValueFault int

// Value length faults; they exclude each other.
const (
	ValueOK      ValueFault = iota
	ValueMissing            // empty
	ValueTooLong            // over MaxValueLength
)

// Item holds the faults of one action. The fields are independent: a
// caller words those its surface reports.
type Item struct {
	Name NameFault
	// Reserved is the lower-cased name when it is reserved, else "".
	Reserved string
	// Duplicate: an earlier action of the list has the same name
	// (compared exactly, as the CRD's list-map key).
	Duplicate bool
	Type      TypeFault
	// SetMismatch: set is missing with type Set, or present with
	// another type.
	SetMismatch bool
	Value       ValueFault
	// BadValue: the action is not a Delete and has no set value matching
	// the list's pattern (the CRD's CEL rule on the list).
	BadValue bool
}

// OK reports whether the action breaks no rule.
func (it Item) OK() bool { return it == Item{} }

// Report holds the faults of one list.
type Report struct {
	// TooMany: the list has more than MaxActions actions.
	TooMany bool
	// Items are the faults of each action, by index.
	Items []Item
}

// OK reports whether the list breaks no rule.
func (r Report) OK() bool {
	if r.TooMany {
		return false
	}
	for _, it := range r.Items {
		if !it.OK() {
			return false
		}
	}
	return true
}

// BadValue reports whether some action of the list breaks the value
// pattern rule.
func (r Report) BadValue() bool {
	for _, it := range r.Items {
		if it.BadValue {
			return true
		}
	}
	return false
}

// Check applies the Route API's rules to one list of header actions.
func Check(d Direction, list []routev1.RouteHTTPHeader) Report {
	r := Report{TooMany: len(list) > MaxActions, Items: make([]Item, len(list))}
	seen := make(map[string]bool, len(list))
	for i := range list {
		a := &list[i]
		it := &r.Items[i]
		it.Name = nameFault(a.Name)
		if lower := strings.ToLower(a.Name); IsReserved(lower) {
			it.Reserved = lower
		}
		it.Duplicate = seen[a.Name]
		seen[a.Name] = true
		switch a.Action.Type {
		case routev1.Set, routev1.Delete:
		case "":
			it.Type = TypeMissing
		default:
			it.Type = TypeUnknown
		}
		it.SetMismatch = (a.Action.Type == routev1.Set) != (a.Action.Set != nil)
		if a.Action.Set != nil {
			it.Value = valueFault(a.Action.Set.Value)
		}
		it.BadValue = a.Action.Type != routev1.Delete && (a.Action.Set == nil || !valueRE[d].MatchString(a.Action.Set.Value))
	}
	return r
}

func nameFault(name string) NameFault {
	switch {
	case name == "":
		return NameMissing
	case len(name) > MaxNameLength:
		return NameTooLong
	case !nameRE.MatchString(name):
		return NameNotToken
	}
	return NameOK
}

func valueFault(v string) ValueFault {
	switch {
	case v == "":
		return ValueMissing
	case len(v) > MaxValueLength:
		return ValueTooLong
	}
	return ValueOK
}

// ActionsOnPassthrough reports whether spec breaks the rule that a
// passthrough route has no header actions, as OpenShift applies it to
// routes it serves: the route has at least one action. openshift-apiserver
// refuses those; a passthrough route whose httpHeaders hold no action is
// accepted there, and OpenShift's router serves it.
func ActionsOnPassthrough(spec *routev1.RouteSpec) bool {
	return passthrough(spec) && spec.HTTPHeaders != nil &&
		len(spec.HTTPHeaders.Actions.Request)+len(spec.HTTPHeaders.Actions.Response) > 0
}

// HeadersOnPassthrough reports whether spec breaks the Route CRD's
// stricter CEL rule: a passthrough route has no httpHeaders at all, even
// without actions. It is the rule where the CRD is emulated
// (router/source/manifests).
func HeadersOnPassthrough(spec *routev1.RouteSpec) bool {
	return passthrough(spec) && spec.HTTPHeaders != nil
}

func passthrough(spec *routev1.RouteSpec) bool {
	return spec.TLS != nil && spec.TLS.Termination == routev1.TLSTerminationPassthrough
}
