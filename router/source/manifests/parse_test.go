package manifests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// parseFixture parses testdata/parse/name.
func parseFixture(t *testing.T, name string) (string, []runtime.Object, []error) {
	t.Helper()
	path := filepath.Join("testdata", "parse", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := ParseFile(path, data)
	return path, objs, errs
}

// fileTime returns the creationTimestamp expected for objects of path.
func fileTime(t *testing.T, path string) metav1.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return metav1.NewTime(fi.ModTime().Truncate(time.Second).UTC())
}

func names(objs []runtime.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.(object).GetName())
	}
	return out
}

func errorStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func requireNoErrors(t *testing.T, errs []error) {
	t.Helper()
	if len(errs) > 0 {
		t.Fatalf("unexpected errors:\n%s", strings.Join(errorStrings(errs), "\n"))
	}
}

func requireOne[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("got %d objects (%v), want 1", len(objs), names(objs))
	}
	o, ok := objs[0].(T)
	if !ok {
		t.Fatalf("got %T, want %T", objs[0], o)
	}
	return o
}

func TestParseFileKinds(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		check   func(t *testing.T, path string, objs []runtime.Object)
	}{
		{
			name:    "route is decoded and gets the API defaults",
			fixture: "route.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				r := requireOne[*routev1.Route](t, objs)
				if r.APIVersion != "route.openshift.io/v1" || r.Kind != "Route" {
					t.Errorf("type meta = %s %s", r.APIVersion, r.Kind)
				}
				if r.Namespace != "shop" || r.Name != "web" {
					t.Errorf("key = %s/%s", r.Namespace, r.Name)
				}
				if r.Spec.Host != "www.example.com" || r.Spec.Path != "/cart" {
					t.Errorf("host/path = %q %q", r.Spec.Host, r.Spec.Path)
				}
				if r.Annotations["haproxy.router.openshift.io/timeout"] != "5s" || r.Labels["app"] != "web" {
					t.Errorf("metadata = %v %v", r.Annotations, r.Labels)
				}
				if r.Spec.To.Kind != "Service" || r.Spec.To.Name != "web" || r.Spec.To.Weight == nil || *r.Spec.To.Weight != 100 {
					t.Errorf("to = %+v (weight %v), want Service web weight 100", r.Spec.To, r.Spec.To.Weight)
				}
				if len(r.Spec.AlternateBackends) != 1 {
					t.Fatalf("alternateBackends = %+v", r.Spec.AlternateBackends)
				}
				if b := r.Spec.AlternateBackends[0]; b.Kind != "Service" || b.Name != "web-canary" || b.Weight == nil || *b.Weight != 10 {
					t.Errorf("alternate backend = %+v, want Service web-canary weight 10", b)
				}
				if r.Spec.Port == nil || r.Spec.Port.TargetPort != intstr.FromString("http") {
					t.Errorf("port = %+v", r.Spec.Port)
				}
				if r.Spec.TLS == nil || r.Spec.TLS.Termination != routev1.TLSTerminationEdge ||
					r.Spec.TLS.InsecureEdgeTerminationPolicy != routev1.InsecureEdgeTerminationPolicyRedirect {
					t.Errorf("tls = %+v", r.Spec.TLS)
				}
				if r.Spec.WildcardPolicy != routev1.WildcardPolicyNone {
					t.Errorf("wildcardPolicy = %q, want None", r.Spec.WildcardPolicy)
				}
				if want := fileTime(t, path); !r.CreationTimestamp.Equal(&want) {
					t.Errorf("creationTimestamp = %v, want the file's modification time %v", r.CreationTimestamp, want)
				}
				if want := deterministicUID(objKey{"Route", "shop", "web"}); r.UID != want {
					t.Errorf("uid = %q, want %q", r.UID, want)
				}
				if r.ResourceVersion == "" {
					t.Error("resourceVersion not set")
				}
			},
		},
		{
			name:    "service without namespace goes to default and gets the API defaults",
			fixture: "service.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				s := requireOne[*corev1.Service](t, objs)
				if s.Namespace != "default" {
					t.Errorf("namespace = %q, want default", s.Namespace)
				}
				if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.SessionAffinity != corev1.ServiceAffinityNone {
					t.Errorf("type/affinity = %q %q", s.Spec.Type, s.Spec.SessionAffinity)
				}
				want := []corev1.ServicePort{
					{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
					{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				}
				if len(s.Spec.Ports) != len(want) {
					t.Fatalf("ports = %+v", s.Spec.Ports)
				}
				for i := range want {
					if s.Spec.Ports[i] != want[i] {
						t.Errorf("port %d = %+v, want %+v", i, s.Spec.Ports[i], want[i])
					}
				}
				if s.Spec.Selector["app"] != "web" {
					t.Errorf("selector = %v", s.Spec.Selector)
				}
			},
		},
		{
			name:    "endpoints are decoded with ready and not ready addresses",
			fixture: "endpoints.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				e := requireOne[*corev1.Endpoints](t, objs)
				if len(e.Subsets) != 1 {
					t.Fatalf("subsets = %+v", e.Subsets)
				}
				ss := e.Subsets[0]
				if len(ss.Addresses) != 2 || ss.Addresses[1].IP != "10.0.0.2" || len(ss.NotReadyAddresses) != 1 {
					t.Errorf("addresses = %+v / %+v", ss.Addresses, ss.NotReadyAddresses)
				}
				if len(ss.Ports) != 1 || ss.Ports[0].Port != 8080 || ss.Ports[0].Protocol != corev1.ProtocolTCP {
					t.Errorf("ports = %+v", ss.Ports)
				}
			},
		},
		{
			name:    "endpointslice is decoded with its service label and defaulted ports",
			fixture: "endpointslice.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				s := requireOne[*discoveryv1.EndpointSlice](t, objs)
				if s.APIVersion != "discovery.k8s.io/v1" || s.Labels[discoveryv1.LabelServiceName] != "web" {
					t.Errorf("apiVersion/labels = %s %v", s.APIVersion, s.Labels)
				}
				if s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Endpoints) != 2 {
					t.Fatalf("slice = %+v", s)
				}
				if r := s.Endpoints[1].Conditions.Ready; r == nil || *r {
					t.Errorf("endpoint 1 ready = %v, want false", r)
				}
				if len(s.Ports) != 1 || s.Ports[0].Protocol == nil || *s.Ports[0].Protocol != corev1.ProtocolTCP ||
					s.Ports[0].Port == nil || *s.Ports[0].Port != 8080 {
					t.Errorf("ports = %+v", s.Ports)
				}
			},
		},
		{
			name:    "namespace is cluster-scoped",
			fixture: "namespace.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				n := requireOne[*corev1.Namespace](t, objs)
				if n.Name != "shop" || n.Namespace != "" || n.Labels["router"] != "public" {
					t.Errorf("namespace = %q/%q %v", n.Namespace, n.Name, n.Labels)
				}
				if want := deterministicUID(objKey{"Namespace", "", "shop"}); n.UID != want {
					t.Errorf("uid = %q, want %q", n.UID, want)
				}
			},
		},
		{
			name:    "secret stringData is merged into data",
			fixture: "secret.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				s := requireOne[*corev1.Secret](t, objs)
				if s.Type != corev1.SecretTypeTLS {
					t.Errorf("type = %q", s.Type)
				}
				if string(s.Data["tls.crt"]) != "cert" || string(s.Data["tls.key"]) != "key" || s.StringData != nil {
					t.Errorf("data = %q, stringData = %q", s.Data, s.StringData)
				}
			},
		},
		{
			name:    "explicit uid and creationTimestamp are kept, resourceVersion is derived from content",
			fixture: "explicit.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				r := requireOne[*routev1.Route](t, objs)
				if r.UID != "5f0c2d3e-0000-4000-8000-000000000001" {
					t.Errorf("uid = %q", r.UID)
				}
				if want := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC); !r.CreationTimestamp.Time.Equal(want) {
					t.Errorf("creationTimestamp = %v, want %v", r.CreationTimestamp, want)
				}
				if r.ResourceVersion == "" || r.ResourceVersion == "42" {
					t.Errorf("resourceVersion = %q, want a content hash", r.ResourceVersion)
				}
			},
		},
		{
			name:    "Gateway API kinds are decoded, GatewayClass cluster-scoped",
			fixture: "gateway.yaml",
			check: func(t *testing.T, path string, objs []runtime.Object) {
				var got []string
				for _, o := range objs {
					m := o.(object)
					got = append(got, fmt.Sprintf("%T %s/%s", o, m.GetNamespace(), m.GetName()))
				}
				want := "[*v1.GatewayClass /haproxy *v1.Gateway shop/web *v1.HTTPRoute shop/web *v1.TLSRoute shop/db *v1.ReferenceGrant backends/from-shop]"
				if fmt.Sprint(got) != want {
					t.Fatalf("objects %v, want %s", got, want)
				}
				gw := objs[1].(*gatewayv1.Gateway)
				if l := gw.Spec.Listeners[1]; l.Hostname == nil || *l.Hostname != "*.example.com" || l.TLS == nil || l.TLS.CertificateRefs[0].Name != "web-tls" {
					t.Errorf("https listener %+v", l)
				}
				hr := objs[2].(*gatewayv1.HTTPRoute)
				if m := hr.Spec.Rules[0].Matches[0]; *m.Path.Value != "/cart" || m.Headers[0].Name != "x-canary" || *hr.Spec.Rules[0].BackendRefs[0].Weight != 3 {
					t.Errorf("httproute rule %+v", hr.Spec.Rules[0])
				}
				if objs[0].(*gatewayv1.GatewayClass).UID == "" || hr.ResourceVersion == "" {
					t.Error("uid or resourceVersion not set")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, objs, errs := parseFixture(t, tt.fixture)
			requireNoErrors(t, errs)
			tt.check(t, path, objs)
		})
	}
}

func TestParseFileDocuments(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		// want are the names of the objects, in order.
		want []string
		// wantErrs are the error messages, in order, without the
		// "testdata/parse/" prefix. An entry ending in "..." is a prefix.
		wantErrs []string
		// unknownKind are the indexes of wantErrs that wrap ErrUnknownKind.
		unknownKind []int
	}{
		{
			name:    "multi-document file skips empty and comment-only documents",
			fixture: "multi.yaml",
			want:    []string{"one", "two", "three", "four"},
		},
		{
			name:    "list items are loaded",
			fixture: "list.yaml",
			want:    []string{"api", "api"},
		},
		{
			name:    "list items are reported with their index",
			fixture: "bad-list.yaml",
			want:    []string{"good"},
			wantErrs: []string{
				`bad-list.yaml:1: items[1]: route "shop/yy": unknown field "spec.hots"`,
				`bad-list.yaml:1: items[2]: deployment "skipped": unsupported kind apps/v1 Deployment, skipped`,
			},
			unknownKind: []int{1},
		},
		{
			name:    "JSON stream",
			fixture: "stream.json",
			want:    []string{"json-one", "json-two"},
		},
		{
			name:     "unknown field is an error naming file, line and object",
			fixture:  "unknown-field.yaml",
			want:     []string{"ok"},
			wantErrs: []string{`unknown-field.yaml:10: route "x": unknown field "spec.hots"`},
		},
		{
			name:     "malformed document in the middle leaves the others loaded",
			fixture:  "bad-middle.yaml",
			want:     []string{"first", "last"},
			wantErrs: []string{`bad-middle.yaml:9: yaml: line 12: ...`},
		},
		{
			name:    "Gateway API objects of another version, a bad name or an unknown field are errors",
			fixture: "gateway-bad.yaml",
			want:    []string{"good"},
			wantErrs: []string{
				`gateway-bad.yaml:1: httproute "shop/old": unsupported apiVersion "gateway.networking.k8s.io/v1beta1" for kind HTTPRoute (want "gateway.networking.k8s.io/v1")`,
				`gateway-bad.yaml:9: httproute "shop/Not_A_Name": invalid: metadata.name: Invalid value: "Not_A_Name": ...`,
				`gateway-bad.yaml:15: gateway "shop/web": unknown field "spec.listners"`,
			},
		},
		{
			name:    "unknown kinds are skipped with a warning",
			fixture: "unknown-kind.yaml",
			want:    []string{"web"},
			wantErrs: []string{
				`unknown-kind.yaml:1: deployment "web": unsupported kind apps/v1 Deployment, skipped`,
				`unknown-kind.yaml:18: service "knative": unsupported kind serving.knative.dev/v1 Service, skipped`,
			},
			unknownKind: []int{0, 1},
		},
		{
			name:    "invalid documents are reported one by one",
			fixture: "invalid.yaml",
			wantErrs: []string{
				`invalid.yaml:1: route "wrong-version": unsupported apiVersion "route.openshift.io/v2" for kind Route (want "route.openshift.io/v1")`,
				`invalid.yaml:9: service: metadata.name is required (metadata.generateName is not supported)`,
				`invalid.yaml:14: service "no-api-version": missing apiVersion`,
				`invalid.yaml:18: object "no-kind": missing kind`,
				`invalid.yaml:22: service "mistyped": json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32`,
				`invalid.yaml:30: yaml: unmarshal errors: line 34: key "name" already set in map`,
				`invalid.yaml:36: document is not an object`,
				`invalid.yaml:39: route "Case": unknown field "spec.Host"`,
			},
		},
		{
			name:    "malformed JSON documents are reported, the valid ones loaded",
			fixture: "bad.json",
			want:    []string{"before", "after"},
			wantErrs: []string{
				`bad.json:2: namespace: unknown field "metadata.nam"`,
				`bad.json:4: invalid JSON: unexpected end of JSON input`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, objs, errs := parseFixture(t, tt.fixture)
			if got := strings.Join(names(objs), ","); got != strings.Join(tt.want, ",") {
				t.Errorf("objects = %s, want %s", got, strings.Join(tt.want, ","))
			}
			if len(errs) != len(tt.wantErrs) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(errorStrings(errs), "\n"), strings.Join(tt.wantErrs, "\n"))
			}
			for i, want := range tt.wantErrs {
				want = filepath.Join("testdata", "parse", want)
				got := errs[i].Error()
				if prefix, ok := strings.CutSuffix(want, "..."); ok {
					if !strings.HasPrefix(got, prefix) {
						t.Errorf("error %d = %q, want prefix %q", i, got, prefix)
					}
				} else if got != want {
					t.Errorf("error %d = %q, want %q", i, got, want)
				}
				var pe *ParseError
				if !errors.As(errs[i], &pe) {
					t.Errorf("error %d is a %T, want *ParseError", i, errs[i])
				}
			}
			for i := range errs {
				isUnknown := errors.Is(errs[i], ErrUnknownKind)
				wantUnknown := false
				for _, j := range tt.unknownKind {
					wantUnknown = wantUnknown || i == j
				}
				if isUnknown != wantUnknown {
					t.Errorf("error %d wraps ErrUnknownKind = %v, want %v", i, isUnknown, wantUnknown)
				}
			}
		})
	}
}

func TestParseFileDeterminism(t *testing.T) {
	const doc = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
`
	parseOne := func(data string) *corev1.Service {
		t.Helper()
		objs, errs := ParseFile("service.yaml", []byte(data))
		requireNoErrors(t, errs)
		return requireOne[*corev1.Service](t, objs)
	}
	a, b := parseOne(doc), parseOne(doc)
	if a.UID != b.UID || a.ResourceVersion != b.ResourceVersion {
		t.Errorf("same content parsed twice: uid %s/%s, resourceVersion %s/%s", a.UID, b.UID, a.ResourceVersion, b.ResourceVersion)
	}
	if !a.CreationTimestamp.Time.IsZero() {
		t.Errorf("creationTimestamp = %v, want unset when the file cannot be stat'ed", a.CreationTimestamp)
	}
	edited := parseOne(strings.Replace(doc, "port: 80", "port: 81", 1))
	if edited.ResourceVersion == a.ResourceVersion {
		t.Error("resourceVersion did not change with the content")
	}
	if edited.UID != a.UID {
		t.Error("uid changed with the content")
	}
	renamed := parseOne(strings.Replace(doc, "name: web", "name: api", 1))
	if renamed.UID == a.UID {
		t.Error("two objects have the same uid")
	}
}

func TestParseFileEmpty(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# nothing\n", "---\n---\n", "\xef\xbb\xbf# BOM\n"} {
		objs, errs := ParseFile("empty.yaml", []byte(data))
		if len(objs) != 0 || len(errs) != 0 {
			t.Errorf("ParseFile(%q) = %v, %v; want nothing", data, objs, errs)
		}
	}
}

// TestReadHeaderIsLenientAndCaseSensitive: a document's header is its
// fields named exactly so (the API server's case-sensitive matching; a
// field named otherwise is left to strict decoding to refuse), a field of
// another type than a string is read as empty without losing the others,
// and a document that is no JSON object is refused.
func TestReadHeaderIsLenientAndCaseSensitive(t *testing.T) {
	route := header{apiVersion: "route.openshift.io/v1", kind: "Route", namespace: "ns", name: "r"}
	tests := []struct {
		name string
		doc  string
		want header
		err  bool
	}{
		{"a route", `{"apiVersion":"route.openshift.io/v1","kind":"Route","metadata":{"name":"r","namespace":"ns"},"spec":{"host":"h"}}`, route, false},
		{"fields in another order, nested kinds ignored", `{"spec":{"kind":"Service","metadata":{"name":"x"}},"metadata":{"namespace":"ns","labels":{"kind":"x"},"name":"r"},"kind":"Route","apiVersion":"route.openshift.io/v1"}`, route, false},
		{"names of another case are not the fields", `{"APIVersion":"v1","Kind":"Service","metadata":{"Name":"x","name":"r","namespace":"ns"},"apiVersion":"route.openshift.io/v1","kind":"Route"}`, route, false},
		{"a field of another type is empty, the others read", `{"apiVersion":5,"kind":"Route","metadata":{"name":["r"],"namespace":"ns"}}`, header{kind: "Route", namespace: "ns"}, false},
		{"metadata of another type", `{"apiVersion":"v1","kind":"Service","metadata":"x"}`, header{apiVersion: "v1", kind: "Service"}, false},
		{"nulls", `{"apiVersion":null,"kind":"Route","metadata":null}`, header{kind: "Route"}, false},
		{"the last of a field named twice", `{"kind":"Service","kind":"Route"}`, header{kind: "Route"}, false},
		{"an empty object", ` {}`, header{}, false},
		{"an array", `[{"kind":"Route"}]`, header{}, true},
		{"a string", `"Route"`, header{}, true},
		{"null", `null`, header{}, true},
		{"not JSON", `{"kind":`, header{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readHeader([]byte(tt.doc))
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("readHeader(%s) = %+v, %v; want %+v, error %v", tt.doc, got, err, tt.want, tt.err)
			}
		})
	}
}

func BenchmarkReadHeader(b *testing.B) {
	doc := []byte(`{"apiVersion":"route.openshift.io/v1","kind":"Route","metadata":{"name":"r123","namespace":"bench","annotations":{"haproxy.router.openshift.io/timeout":"5s"},"labels":{"app":"x"}},"spec":{"host":"r123.bench.test","to":{"kind":"Service","name":"svc","weight":100},"port":{"targetPort":"web"},"tls":{"termination":"edge","insecureEdgeTerminationPolicy":"Redirect"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readHeader(doc); err != nil {
			b.Fatal(err)
		}
	}
}
