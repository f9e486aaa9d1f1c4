package builder

import (
	"crypto/md5"
	"encoding/hex"
	"reflect"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

func buildAll(t *testing.T, objs []any, routes []*routev1.Route, o Options) *model.TemplateData {
	t.Helper()
	st := store.New()
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Service:
			st.Upsert(o)
		case *discoveryv1.EndpointSlice:
			st.Upsert(o)
		}
	}
	var td *model.TemplateData
	_ = st.Read(func(v store.View) error { td = Build(v, routes, o); return nil })
	return td
}

func TestEndpointsHaveOpenShiftIDsAddressesAndAppProtocol(t *testing.T) {
	v6 := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-v6", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("h2"), Port: ptr(int32(8080)), AppProtocol: ptr("kubernetes.io/h2c")}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"fd00::1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"}},
			{Addresses: []string{"fd00::2"}},
		},
	}
	v4 := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-v4", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("h2"), Port: ptr(int32(8080)), AppProtocol: ptr("bad value")}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "n1"}}},
	}
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: routev1.RouteSpec{Host: "a.example.com", To: routev1.RouteTargetReference{Name: "web"}}}
	td := buildAll(t, []any{v6, v4}, []*routev1.Route{r}, Options{})
	got := td.ServiceUnits["ns/web"].EndpointTable
	want := []model.Endpoint{
		{ID: "ept:web:h2:10.0.0.1:8080", IP: "10.0.0.1", Port: "8080", TargetName: "n1", PortName: "h2"},
		{ID: "ept:web:h2:fd00::2:8080", IP: "[fd00::2]", Port: "8080", TargetName: "fd00::2", PortName: "h2", AppProtocol: "kubernetes.io/h2c"},
		{ID: "pod:web-1:web:h2:fd00::1:8080", IP: "[fd00::1]", Port: "8080", TargetName: "web-1", PortName: "h2", AppProtocol: "kubernetes.io/h2c"},
	}
	for i := range want {
		sum := md5.Sum([]byte(want[i].ID))
		want[i].IdHash = hex.EncodeToString(sum[:])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("endpoints:\n got %+v\nwant %+v", got, want)
	}
	if !got[1].UsesH2C() || got[0].UsesH2C() {
		t.Errorf("UsesH2C: %v %v", got[0].UsesH2C(), got[1].UsesH2C())
	}
}

func TestRouteDataHasOpenShiftFields(t *testing.T) {
	objs := []any{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "admin", Port: 81}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "a-1", Labels: map[string]string{discoveryv1.LabelServiceName: "a"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}, {Name: ptr("admin"), Port: ptr(int32(9090))}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		},
		slice("ns", "b", "b-1", 8080, "http", map[string]*bool{"10.0.0.2": nil}),
	}
	edgeCert := "-----BEGIN CERTIFICATE-----\nshared\n-----END CERTIFICATE-----\n"
	r1 := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"}, Spec: routev1.RouteSpec{
		Host: "one.example.com", To: routev1.RouteTargetReference{Name: "a"},
		AlternateBackends: []routev1.RouteTargetReference{{Name: "b"}},
		TLS:               &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: edgeCert, Key: "k"},
		HTTPHeaders: &routev1.RouteHTTPHeaders{Actions: routev1.RouteHTTPHeaderActions{
			Request: []routev1.RouteHTTPHeader{
				{Name: "X-Host", Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: "%[req.hdr(host)] it's"}}},
				{Name: "X-Drop", Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Delete}},
			},
			Response: []routev1.RouteHTTPHeader{
				{Name: "X-Frame-Options", Action: routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: "DENY"}}},
			},
		}},
	}}
	r2 := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r2"}, Spec: routev1.RouteSpec{
		Host: "two.example.com", To: routev1.RouteTargetReference{Name: "b"},
		TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: edgeCert, Key: "k"},
	}}
	h := model.HAProxySettings{
		CaptureRequestHeaders: []model.Capture{{Name: "Host", Len: 90}},
		CaptureCookie:         &model.Capture{Name: "sid", Len: 40, Exact: true},
		H1CaseAdjust:          "X-Custom",
		MutualTLSAuth:         "required",
		MutualTLSCA:           "/ca.pem",
		MutualTLSClientCA:     true, // ROUTER_MUTUAL_TLS_AUTH_CA given
		HTTPRequestHeaderActions: []model.HeaderAction{
			{Name: "X-Env", Action: "Set", Value: `"a b"`, RawValue: "a b"},
			{Name: "X-Gone", Action: "Delete"},
		},
	}
	td := buildAll(t, objs, []*routev1.Route{r1, r2}, Options{DefaultCertificate: "/certs/default.pem", HAProxy: h})

	cfg := td.State["ns:r1"]
	sum := md5.Sum([]byte(" ns:r1"))
	if cfg.RoutingKeyName != hex.EncodeToString(sum[:]) {
		t.Errorf("RoutingKeyName = %s, want OpenShift's md5 of \" ns:r1\"", cfg.RoutingKeyName)
	}
	if cfg.PrimaryServiceUnitKey != "ns/a" || cfg.Status != model.ServiceAliasConfigStatusSaved {
		t.Errorf("PrimaryServiceUnitKey %q, Status %q", cfg.PrimaryServiceUnitKey, cfg.Status)
	}
	// The route prefers the first service port (http): a's admin port is filtered out.
	if eps := cfg.EndpointTable["ns/a"]; len(eps) != 1 || eps[0].Port != "8080" {
		t.Errorf("EndpointTable[ns/a] = %+v", eps)
	}
	if eps := cfg.EndpointTable["ns/b"]; len(eps) != 1 || eps[0].Port != "8080" {
		t.Errorf("EndpointTable[ns/b] = %+v", eps)
	}
	wantReq := []model.HTTPHeader{
		{Name: "'X-Host'", Value: `'%[req.hdr(host)] it'\''s'`, Action: routev1.Set},
		{Name: "'X-Drop'", Action: routev1.Delete},
	}
	if !reflect.DeepEqual(cfg.HTTPRequestHeaders, wantReq) {
		t.Errorf("HTTPRequestHeaders = %+v", cfg.HTTPRequestHeaders)
	}
	if want := []model.HTTPHeader{{Name: "'X-Frame-Options'", Value: "'DENY'", Action: routev1.Set}}; !reflect.DeepEqual(cfg.HTTPResponseHeaders, want) {
		t.Errorf("HTTPResponseHeaders = %+v", cfg.HTTPResponseHeaders)
	}
	if got := td.ServiceUnits["ns/b"].ServiceAliasAssociations; !reflect.DeepEqual(got, map[model.ServiceAliasConfigKey]bool{"ns:r1": true, "ns:r2": true}) {
		t.Errorf("ServiceAliasAssociations of ns/b = %v", got)
	}
	if got := td.ServiceUnits["ns/a"].TemplateSafeName(); got != "ns-a" {
		t.Errorf("TemplateSafeName = %q", got)
	}
	if td.CertificateIndex[edgeCert] != 2 || td.CertificateIndex["/certs/default.pem"] != 1 {
		t.Errorf("CertificateIndex = %v", td.CertificateIndex)
	}
	if td.DynamicConfigManager == nil || !td.HaveClientCA || td.HaveCRLs {
		t.Errorf("DynamicConfigManager %v HaveClientCA %v HaveCRLs %v", td.DynamicConfigManager, td.HaveClientCA, td.HaveCRLs)
	}
	if want := []model.CaptureHTTPHeader{{Name: "Host", MaxLength: 90}}; !reflect.DeepEqual(td.CaptureHTTPRequestHeaders, want) {
		t.Errorf("CaptureHTTPRequestHeaders = %+v", td.CaptureHTTPRequestHeaders)
	}
	if want := (&model.CaptureHTTPCookie{Name: "sid", MaxLength: 40, MatchType: "exact"}); !reflect.DeepEqual(td.CaptureHTTPCookie, want) {
		t.Errorf("CaptureHTTPCookie = %+v", td.CaptureHTTPCookie)
	}
	if want := []model.HTTPHeaderNameCaseAdjustment{{From: "x-custom", To: "X-Custom"}}; !reflect.DeepEqual(td.HTTPHeaderNameCaseAdjustments, want) {
		t.Errorf("HTTPHeaderNameCaseAdjustments = %+v", td.HTTPHeaderNameCaseAdjustments)
	}
	wantEnv := []model.HTTPHeader{{Name: "'X-Env'", Value: "'a b'", Action: routev1.Set}, {Name: "'X-Gone'", Action: routev1.Delete}}
	if !reflect.DeepEqual(td.HTTPRequestHeaders, wantEnv) || td.HTTPResponseHeaders != nil {
		t.Errorf("HTTPRequestHeaders = %+v, HTTPResponseHeaders = %+v", td.HTTPRequestHeaders, td.HTTPResponseHeaders)
	}
}
