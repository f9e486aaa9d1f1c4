package manifests

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrUnknownKind is wrapped by the *ParseError reported for a document whose
// apiVersion/kind the router does not watch (a Deployment, a ConfigMap...).
// Such documents are skipped; callers normally treat these as warnings.
var ErrUnknownKind = errors.New("unsupported kind")

// ParseError describes a document of a manifest file that could not be
// loaded. Its message is "file:line: object: reason", where line is the
// (1-based) line on which the offending document starts.
type ParseError struct {
	// File is the path of the manifest file, as given to ParseFile.
	File string
	// Line is the 1-based line of the file where the document starts.
	Line int
	// Object describes the object when known, e.g. `route "ns/name"`, or
	// `items[2]: route "name"` for an item of a List.
	Object string
	// Err is the reason.
	Err error
}

// Error implements error.
func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }

// object is what every supported kind implements.
type object interface {
	runtime.Object
	metav1.Object
}

// objKey identifies an object: kind, namespace ("" for cluster-scoped
// kinds) and name.
type objKey struct {
	kind, namespace, name string
}

func (k objKey) String() string {
	if k.namespace == "" {
		return k.kind + "/" + k.name
	}
	return k.kind + "/" + k.namespace + "/" + k.name
}

// kindInfo describes a supported kind.
type kindInfo struct {
	group, version, kind string
	namespaced           bool
	new                  func() object
	defaults             func(object)
}

// apiVersion returns the apiVersion of the kind, e.g. "route.openshift.io/v1".
func (k kindInfo) apiVersion() string {
	if k.group == "" {
		return k.version
	}
	return k.group + "/" + k.version
}

// lookupKind returns the description of a supported kind by kind name.
func lookupKind(kind string) (kindInfo, bool) {
	switch kind {
	case "Route":
		return kindInfo{group: routev1.GroupName, version: "v1", kind: kind, namespaced: true,
			new: func() object { return &routev1.Route{} }, defaults: defaultRoute}, true
	case "Service":
		return kindInfo{group: "", version: "v1", kind: kind, namespaced: true,
			new: func() object { return &corev1.Service{} }, defaults: defaultService}, true
	case "Endpoints":
		return kindInfo{group: "", version: "v1", kind: kind, namespaced: true,
			new: func() object { return &corev1.Endpoints{} }, defaults: defaultEndpoints}, true
	case "EndpointSlice":
		return kindInfo{group: discoveryv1.GroupName, version: "v1", kind: kind, namespaced: true,
			new: func() object { return &discoveryv1.EndpointSlice{} }, defaults: defaultEndpointSlice}, true
	case "Namespace":
		return kindInfo{group: "", version: "v1", kind: kind, namespaced: false,
			new: func() object { return &corev1.Namespace{} }, defaults: func(object) {}}, true
	case "Secret":
		return kindInfo{group: "", version: "v1", kind: kind, namespaced: true,
			new: func() object { return &corev1.Secret{} }, defaults: defaultSecret}, true
	case "Ingress":
		return kindInfo{group: networkingv1.GroupName, version: "v1", kind: kind, namespaced: true,
			new: func() object { return &networkingv1.Ingress{} }, defaults: func(object) {}}, true
	case "IngressClass":
		return kindInfo{group: networkingv1.GroupName, version: "v1", kind: kind, namespaced: false,
			new: func() object { return &networkingv1.IngressClass{} }, defaults: func(object) {}}, true
	case "GatewayClass":
		return gatewayKind(kind, false, func() object { return &gatewayv1.GatewayClass{} }), true
	case "Gateway":
		return gatewayKind(kind, true, func() object { return &gatewayv1.Gateway{} }), true
	case "HTTPRoute":
		return gatewayKind(kind, true, func() object { return &gatewayv1.HTTPRoute{} }), true
	case "TLSRoute":
		return gatewayKind(kind, true, func() object { return &gatewayv1.TLSRoute{} }), true
	case "ReferenceGrant":
		return gatewayKind(kind, true, func() object { return &gatewayv1.ReferenceGrant{} }), true
	default:
		return kindInfo{}, false
	}
}

// gatewayKind describes a Gateway API kind: gateway.networking.k8s.io/v1,
// as the API server stores it. The CRDs' defaults are not applied: the
// router reads an unset field as its default.
func gatewayKind(kind string, namespaced bool, new func() object) kindInfo {
	return kindInfo{group: gatewayv1.GroupName, version: "v1", kind: kind, namespaced: namespaced,
		new: new, defaults: func(object) {}}
}

// apiGroup returns the group of an apiVersion ("" for the core group).
func apiGroup(apiVersion string) string {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// kindRank orders upserts (ascending) and deletes (descending), so that a
// consumer reacting to single events sees referenced objects first.
func kindRank(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "Secret":
		return 1
	case "Service":
		return 2
	case "Endpoints":
		return 3
	case "EndpointSlice":
		return 4
	default:
		return 5
	}
}

// parsedObject is a successfully decoded and defaulted document.
type parsedObject struct {
	key  objKey
	line int
	obj  object
	// defaultedTimestamp is true when the manifest had no
	// creationTimestamp: the caller assigns one with finalize.
	defaultedTimestamp bool
}

// parseResult is everything parse learnt from a file.
type parseResult struct {
	objects []parsedObject
	// errs are the documents that could not be loaded.
	errs []*ParseError
	// warnings are skipped documents of unsupported kinds.
	warnings []*ParseError
	// failedKeys are the identities of malformed documents whose kind,
	// namespace and name could still be read.
	failedKeys []objKey
	// unidentified is set when a malformed document's object could not
	// be identified (YAML syntax error, missing kind or name...).
	unidentified bool
}

func (r *parseResult) fail(pe *ParseError, key objKey, identified bool) {
	r.errs = append(r.errs, pe)
	if identified {
		r.failedKeys = append(r.failedKeys, key)
	} else {
		r.unidentified = true
	}
}

// ParseFile decodes the manifests of one file: a stream of YAML documents
// separated by "---" lines, or a stream of JSON objects (files ending in
// .json, or whose first non-blank character is "{", as kubectl does).
//
// Supported objects are route.openshift.io/v1 Route, v1 Service, Endpoints,
// Namespace and Secret, discovery.k8s.io/v1 EndpointSlice,
// networking.k8s.io/v1 Ingress and IngressClass, gateway.networking.k8s.io/v1
// GatewayClass, Gateway, HTTPRoute, TLSRoute and ReferenceGrant, and v1 List
// of those. Decoding is strict (unknown, duplicate or mistyped fields are
// errors). Objects are defaulted like the API server would: namespace
// "default", API defaults of the fields the router reads (route target
// kind and weight, wildcard policy, service/endpoint port protocols,
// service targetPort, secret stringData merged into data...), a UID derived
// from kind/namespace/name and a ResourceVersion derived from the content.
// A missing creationTimestamp is set to the modification time of path (if
// it can be stat'ed; left unset otherwise).
//
// Defaulted objects are then validated as the API server would (see
// validate.go: the Route CRD's rules, the key rules of the core kinds); a
// document it would refuse is skipped with an error wrapping ErrInvalid that
// names the rule.
//
// Every returned error is a *ParseError naming the file, the line where the
// document starts and the reason. A malformed document is skipped and the
// others are still returned. Documents of unsupported kinds are skipped and
// reported with an error wrapping ErrUnknownKind.
func ParseFile(path string, data []byte) ([]runtime.Object, []error) {
	var ts metav1.Time
	if fi, err := os.Stat(path); err == nil {
		ts = fileTimestamp(fi.ModTime())
	}
	res := parse(path, data)
	objs := make([]runtime.Object, 0, len(res.objects))
	for _, p := range res.objects {
		finalize(p, ts)
		objs = append(objs, p.obj)
	}
	errs := make([]error, 0, len(res.errs)+len(res.warnings))
	for _, e := range res.errs {
		errs = append(errs, e)
	}
	for _, w := range res.warnings {
		errs = append(errs, w)
	}
	return objs, errs
}

// fileTimestamp turns a file modification time into a creationTimestamp,
// with the precision the API server would give it.
func fileTimestamp(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second).UTC())
}

// chunk is one document of a file.
type chunk struct {
	// line is the 1-based line of the file where data starts.
	line int
	data []byte
	// json is true for documents of a JSON stream.
	json bool
}

// startLine returns the line of the first significant line of the document
// (skipping blank and comment lines), or 0 if there is none.
func (c chunk) startLine() int {
	if c.json {
		return c.line
	}
	line := c.line
	for rest := c.data; len(rest) > 0; line++ {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return line
		}
	}
	return 0
}

var utf8BOM = []byte("\xef\xbb\xbf")

// parse decodes all documents of a file without assigning
// creationTimestamps or ResourceVersions (see finalize).
func parse(path string, data []byte) parseResult {
	var res parseResult
	data = bytes.TrimPrefix(data, utf8BOM)
	var chunks []chunk
	if isJSON(path, data) {
		var err *ParseError
		chunks, err = splitJSON(path, data)
		if err != nil {
			res.fail(err, objKey{}, false)
		}
	} else {
		chunks = splitYAML(data)
	}
	for _, c := range chunks {
		line := c.startLine()
		if line == 0 {
			continue // empty or comment-only document
		}
		j := c.data
		if !c.json {
			var err error
			j, err = yaml.YAMLToJSONStrict(c.data)
			if err != nil {
				res.fail(&ParseError{File: path, Line: line, Err: yamlError(err, c.line)}, objKey{}, false)
				continue
			}
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		decodeDocument(&res, path, line, "", j)
	}
	sort.SliceStable(res.errs, func(i, j int) bool { return res.errs[i].Line < res.errs[j].Line })
	return res
}

// isJSON tells whether a file is a JSON stream rather than YAML.
func isJSON(path string, data []byte) bool {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return true
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// splitJSON splits a stream of JSON values. Parsing stops at the first
// syntax error, which is returned.
func splitJSON(path string, data []byte) ([]chunk, *ParseError) {
	var chunks []chunk
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(dec.InputOffset())
		rest := data[start:]
		start += len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
		line := 1 + bytes.Count(data[:start], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return chunks, nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("unexpected end of JSON input")
			}
			return chunks, &ParseError{File: path, Line: line, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		chunks = append(chunks, chunk{line: line, data: raw, json: true})
	}
}

// splitYAML splits a YAML stream on document markers ("---" or "..." at the
// start of a line, followed by a blank or the end of the line). Marker
// characters are blanked rather than removed, so that line numbers inside a
// chunk stay those of the file and anything following the marker on its line
// is kept.
func splitYAML(data []byte) []chunk {
	var chunks []chunk
	cur := chunk{line: 1}
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off + 1
		}
		l := data[off:end]
		if isDocumentMarker(l) {
			chunks = append(chunks, cur)
			blanked := append([]byte("   "), l[3:]...)
			cur = chunk{line: line, data: blanked}
		} else {
			cur.data = append(cur.data, l...)
		}
		off = end
	}
	return append(chunks, cur)
}

func isDocumentMarker(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) && !bytes.HasPrefix(l, []byte("...")) {
		return false
	}
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r' || l[3] == '\n'
}

var yamlLineRE = regexp.MustCompile(`\bline (\d+)\b`)

// yamlError makes a YAML syntax error refer to lines of the file rather than
// of the document starting on line first.
func yamlError(err error, first int) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.Join(strings.Fields(msg), " ") // one line
	msg = yamlLineRE.ReplaceAllStringFunc(msg, func(s string) string {
		n, convErr := strconv.Atoi(s[len("line "):])
		if convErr != nil {
			return s
		}
		return "line " + strconv.Itoa(n+first-1)
	})
	return errors.New(msg)
}

// header is the part of a document read before strict decoding, leniently,
// to know what the document is and name it in errors.
type header struct {
	apiVersion, kind, namespace, name string
}

// readHeader reads a document's header: its fields matched as the API
// server matches them (case-sensitively), one of another type than a
// string left empty, the rest of the document skipped (not copied: this is
// a pass over every document of the directory).
func readHeader(j []byte) (header, error) {
	notObject := errors.New("document is not an object")
	if t := bytes.TrimLeft(j, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return header{}, notObject
	}
	var d struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &d); err != nil {
		// A field of another type is left empty and the decoding goes
		// on; anything else is no object.
		if syntax, _ := sigsjson.SyntaxErrorOffset(err); syntax {
			return header{}, notObject
		}
	}
	return header{apiVersion: d.APIVersion, kind: d.Kind, namespace: d.Metadata.Namespace, name: d.Metadata.Name}, nil
}

// describe names an object in error messages: `route "ns/name"`.
func describe(prefix, kind, namespace, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	if kind == "" {
		kind = "object"
	}
	b.WriteString(strings.ToLower(kind))
	switch {
	case name != "" && namespace != "":
		fmt.Fprintf(&b, " %q", namespace+"/"+name)
	case name != "":
		fmt.Fprintf(&b, " %q", name)
	}
	return b.String()
}

// list is a v1 List.
type list struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

// decodeDocument decodes one JSON document (an object or a List) into res.
// prefix is prepended to object descriptions ("items[3]: ").
func decodeDocument(res *parseResult, path string, line int, prefix string, j []byte) {
	fail := func(h header, key objKey, identified bool, err error) {
		res.fail(&ParseError{File: path, Line: line, Object: describe(prefix, h.kind, h.namespace, h.name), Err: err}, key, identified)
	}
	h, err := readHeader(j)
	if err != nil {
		res.fail(&ParseError{File: path, Line: line, Object: strings.TrimSuffix(prefix, ": "), Err: err}, objKey{}, false)
		return
	}
	if h.kind == "" {
		fail(h, objKey{}, false, errors.New("missing kind"))
		return
	}
	if h.kind == "List" && h.apiVersion == "v1" && prefix == "" {
		var l list
		if err := strictUnmarshal(j, &l); err != nil {
			fail(h, objKey{}, false, err)
			return
		}
		for i, item := range l.Items {
			decodeDocument(res, path, line, fmt.Sprintf("items[%d]: ", i), item)
		}
		return
	}
	if h.apiVersion == "" {
		// Cannot tell an unsupported kind from a supported one.
		fail(h, objKey{}, false, errors.New("missing apiVersion"))
		return
	}
	info, known := lookupKind(h.kind)
	if !known || apiGroup(h.apiVersion) != info.group {
		res.warnings = append(res.warnings, &ParseError{
			File: path, Line: line, Object: describe(prefix, h.kind, h.namespace, h.name),
			Err: fmt.Errorf("%w %s %s, skipped", ErrUnknownKind, h.apiVersion, h.kind),
		})
		return
	}
	key := objKey{kind: info.kind, name: h.name}
	if info.namespaced {
		key.namespace = h.namespace
		if key.namespace == "" {
			key.namespace = metav1.NamespaceDefault
		}
	}
	if h.apiVersion != info.apiVersion() {
		// Same API group, other version: most likely a typo.
		fail(h, key, h.name != "", fmt.Errorf("unsupported apiVersion %q for kind %s (want %q)", h.apiVersion, h.kind, info.apiVersion()))
		return
	}
	obj := info.new()
	if err := strictUnmarshal(j, obj); err != nil {
		fail(h, key, h.name != "", err)
		return
	}
	if obj.GetName() == "" {
		if obj.GetGenerateName() != "" {
			fail(h, key, false, errors.New("metadata.name is required (metadata.generateName is not supported)"))
		} else {
			fail(h, key, false, errors.New("metadata.name is required"))
		}
		return
	}
	obj.SetNamespace(key.namespace)
	info.defaults(obj)
	if err := validateObject(obj); err != nil {
		// Identified: a previous version of the object is kept.
		fail(h, key, true, err)
		return
	}
	if obj.GetUID() == "" {
		obj.SetUID(deterministicUID(key))
	}
	res.objects = append(res.objects, parsedObject{
		key:                key,
		line:               line,
		obj:                obj,
		defaultedTimestamp: obj.GetCreationTimestamp().Time.IsZero(),
	})
}

// strictUnmarshal decodes JSON into v like the API server's strict field
// validation: case-sensitive, unknown and duplicate fields are errors.
func strictUnmarshal(j []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// deterministicUID derives a UUID (version 5 layout) from an object's
// identity, so that it is stable across restarts and edits.
func deterministicUID(k objKey) types.UID {
	sum := sha1.Sum([]byte("manifests.router.openshift.io\x00" + k.kind + "\x00" + k.namespace + "\x00" + k.name))
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

// setResourceVersion sets the ResourceVersion of obj to a hash of its
// content (a decimal number, like the API server's), replacing any value
// from the manifest: it changes exactly when the content changes.
func setResourceVersion(obj object) {
	obj.SetResourceVersion("")
	data, err := json.Marshal(obj)
	if err != nil {
		// Cannot happen with the API types; fall back to a value that
		// still changes with the object's identity.
		data = []byte(fmt.Sprintf("%#v", obj))
	}
	sum := sha256.Sum256(data)
	obj.SetResourceVersion(strconv.FormatUint(binary.BigEndian.Uint64(sum[:8])>>1, 10))
}

// finalize assigns the creationTimestamp (when the manifest has none) and
// the ResourceVersion of a parsed object.
func finalize(p parsedObject, ts metav1.Time) {
	if p.defaultedTimestamp {
		p.obj.SetCreationTimestamp(ts)
	}
	setResourceVersion(p.obj)
}

// API server defaults of the fields the router reads.

func defaultRoute(o object) {
	r := o.(*routev1.Route)
	if r.Spec.WildcardPolicy == "" {
		r.Spec.WildcardPolicy = routev1.WildcardPolicyNone
	}
	defaultTarget(&r.Spec.To)
	for i := range r.Spec.AlternateBackends {
		defaultTarget(&r.Spec.AlternateBackends[i])
	}
}

func defaultTarget(t *routev1.RouteTargetReference) {
	if t.Kind == "" {
		t.Kind = "Service"
	}
	if t.Weight == nil {
		w := int32(100)
		t.Weight = &w
	}
}

func defaultService(o object) {
	s := o.(*corev1.Service)
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func defaultEndpoints(o object) {
	e := o.(*corev1.Endpoints)
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if e.Subsets[i].Ports[j].Protocol == "" {
				e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func defaultEndpointSlice(o object) {
	s := o.(*discoveryv1.EndpointSlice)
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

func defaultSecret(o object) {
	s := o.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}
