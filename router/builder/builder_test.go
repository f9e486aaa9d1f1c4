package builder

import (
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

func ptr[T any](v T) *T { return &v }

func slice(ns, svc, name string, port int32, portName string, addrs map[string]*bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(port)}},
	}
	for a, ready := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ready}})
	}
	return s
}

func build(t *testing.T, objs []any, r *routev1.Route, o Options) model.ServiceAliasConfig {
	t.Helper()
	st := store.New()
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Service:
			st.Upsert(o)
		case *discoveryv1.EndpointSlice:
			st.Upsert(o)
		case *corev1.Endpoints:
			st.Upsert(o)
		}
	}
	var td *model.TemplateData
	_ = st.Read(func(v store.View) error { td = Build(v, []*routev1.Route{r}, o); return nil })
	return td.State[model.NewServiceAliasConfigKey(r.Namespace, r.Name)]
}

func TestEndpointWeightsFollowOpenShiftScaling(t *testing.T) {
	tests := []struct {
		name    string
		weights map[model.ServiceUnitKey]int32
		counts  map[model.ServiceUnitKey]int
		want    map[model.ServiceUnitKey]int32
	}{
		{"documented example 20/2 and 10/4", map[model.ServiceUnitKey]int32{"a": 20, "b": 10}, map[model.ServiceUnitKey]int{"a": 2, "b": 4},
			map[model.ServiceUnitKey]int32{"a": 256, "b": 64}},
		{"2:1:1 one endpoint each", map[model.ServiceUnitKey]int32{"a": 2, "b": 1, "c": 1}, map[model.ServiceUnitKey]int{"a": 1, "b": 1, "c": 1},
			map[model.ServiceUnitKey]int32{"a": 256, "b": 128, "c": 128}},
		{"weight zero gets zero", map[model.ServiceUnitKey]int32{"a": 1, "b": 0}, map[model.ServiceUnitKey]int{"a": 1, "b": 3},
			map[model.ServiceUnitKey]int32{"a": 1, "b": 0}},
		{"no endpoints means effective weight zero", map[model.ServiceUnitKey]int32{"a": 1, "b": 5}, map[model.ServiceUnitKey]int{"a": 2, "b": 0},
			map[model.ServiceUnitKey]int32{"a": 1, "b": 0}},
		{"one active service gets weight 1 whatever its weight", map[model.ServiceUnitKey]int32{"a": 100}, map[model.ServiceUnitKey]int{"a": 3},
			map[model.ServiceUnitKey]int32{"a": 1}},
		{"two active services are scaled to 256", map[model.ServiceUnitKey]int32{"a": 100, "b": 100}, map[model.ServiceUnitKey]int{"a": 1, "b": 1},
			map[model.ServiceUnitKey]int32{"a": 256, "b": 256}},
		{"all zero", map[model.ServiceUnitKey]int32{"a": 0, "b": 0}, map[model.ServiceUnitKey]int{"a": 1, "b": 1},
			map[model.ServiceUnitKey]int32{"a": 0, "b": 0}},
		{"tiny share is at least 1", map[model.ServiceUnitKey]int32{"a": 256, "b": 1}, map[model.ServiceUnitKey]int{"a": 1, "b": 100},
			map[model.ServiceUnitKey]int32{"a": 256, "b": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := endpointWeights(tt.weights, tt.counts)
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("%s: got %d, want %d (all: %v)", k, got[k], w, got)
				}
			}
		})
	}
}

func TestBuildResolvesEndpointsAndPorts(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}, {Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9090)}}}}
	s1 := slice("ns", "web", "web-1", 8080, "http", map[string]*bool{"10.0.0.1": nil, "10.0.0.2": ptr(false)})
	s2 := slice("ns", "web", "web-2", 8080, "http", map[string]*bool{"10.0.0.3": ptr(true)})
	admin := slice("ns", "web", "web-admin", 9090, "admin", map[string]*bool{"10.0.0.1": nil})
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: routev1.RouteSpec{Host: "WWW.Example.com", To: routev1.RouteTargetReference{Name: "web"}}}

	cases := []struct {
		name       string
		port       *routev1.RoutePort
		preferPort string
		active     int
	}{
		{"multi-port service without target port uses the first port", nil, "http", 2},
		{"target port by name", &routev1.RoutePort{TargetPort: intstr.FromString("admin")}, "admin", 1},
		{"target port by pod port number", &routev1.RoutePort{TargetPort: intstr.FromInt32(9090)}, "9090", 1},
		{"target port by service port number", &routev1.RoutePort{TargetPort: intstr.FromInt32(80)}, "http", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rr := r.DeepCopy()
			rr.Spec.Port = c.port
			cfg := build(t, []any{svc, s1, s2, admin}, rr, Options{})
			if cfg.Host != "www.example.com" {
				t.Errorf("host %q not lower-cased", cfg.Host)
			}
			if cfg.PreferPort != c.preferPort {
				t.Errorf("PreferPort %q, want %q", cfg.PreferPort, c.preferPort)
			}
			if cfg.ActiveEndpoints != c.active || cfg.ActiveServiceUnits != 1 {
				t.Errorf("active endpoints %d units %d, want %d and 1", cfg.ActiveEndpoints, cfg.ActiveServiceUnits, c.active)
			}
		})
	}
}

func TestBuildSkipsNotReadyAndUnsafeEndpoints(t *testing.T) {
	s := slice("ns", "web", "web-1", 8080, "http", map[string]*bool{"10.0.0.1": ptr(true), "10.0.0.2": ptr(false), "not-an-ip": nil})
	s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Terminating: ptr(true)}})
	for i := range s.Endpoints {
		if s.Endpoints[i].Addresses[0] == "10.0.0.1" {
			s.Endpoints[i].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "web-abc"}
		}
	}
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: routev1.RouteSpec{Host: "h", To: routev1.RouteTargetReference{Name: "web"}}}
	st := store.New()
	st.Upsert(s)
	var td *model.TemplateData
	_ = st.Read(func(v store.View) error { td = Build(v, []*routev1.Route{r}, Options{}); return nil })
	eps := td.ServiceUnits["ns/web"].EndpointTable
	if len(eps) != 1 || eps[0].IP != "10.0.0.1" {
		t.Fatalf("endpoints %+v, want only the ready 10.0.0.1", eps)
	}
	if eps[0].ID != "pod:web-abc:web:http:10.0.0.1:8080" || len(eps[0].IdHash) != 32 {
		t.Errorf("ID %q / IdHash %q", eps[0].ID, eps[0].IdHash)
	}
}

func TestBuildReadsEndpointsWhenAsked(t *testing.T) {
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "10.1.0.1"}, {IP: "10.1.0.2"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.1.0.3"}},
			Ports:             []corev1.EndpointPort{{Port: 8080}},
		}}}
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: routev1.RouteSpec{Host: "h", To: routev1.RouteTargetReference{Name: "web"}}}
	cfg := build(t, []any{eps}, r, Options{WatchEndpoints: true})
	if cfg.ActiveEndpoints != 2 {
		t.Fatalf("active endpoints %d, want 2", cfg.ActiveEndpoints)
	}
	if cfg = build(t, []any{eps}, r, Options{}); cfg.ActiveEndpoints != 0 {
		t.Fatalf("EndpointSlice mode read Endpoints: %d", cfg.ActiveEndpoints)
	}
}

// TestMadeRoutesTakeBackendsOfOtherNamespacesAndResponders: a made route's
// BackendNamespaces put its backend in another namespace (a Route of the
// API has its own: Made is nil); a route the router answers (Respond,
// Redirect) gets no backends; matches and header adds reach the model.
func TestMadeRoutesTakeBackendsOfOtherNamespacesAndResponders(t *testing.T) {
	svc := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	}
	objs := []any{svc("ns"), svc("other"),
		slice("ns", "web", "web-1", 8080, "http", map[string]*bool{"10.0.0.1": nil}),
		slice("other", "web", "web-1", 8080, "http", map[string]*bool{"10.0.1.1": nil, "10.0.1.2": nil})}
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: routev1.RouteSpec{Host: "a.example.com", To: routev1.RouteTargetReference{Name: "web"}}}

	own := build(t, objs, r, Options{})
	made := func(m model.MadeRoute) Options {
		return Options{Made: func(*routev1.Route) *model.MadeRoute { return &m }}
	}
	other := build(t, objs, r, made(model.MadeRoute{BackendNamespaces: []string{"other"}}))
	if own.PrimaryServiceUnitKey != "ns/web" || own.ActiveEndpoints != 1 {
		t.Errorf("own namespace: %s, %d endpoints", own.PrimaryServiceUnitKey, own.ActiveEndpoints)
	}
	if _, ok := other.ServiceUnits["other/web"]; !ok || other.PrimaryServiceUnitKey != "other/web" || other.ActiveEndpoints != 2 {
		t.Errorf("other namespace: %v, %s, %d endpoints", other.ServiceUnits, other.PrimaryServiceUnitKey, other.ActiveEndpoints)
	}
	// Backends on target ports of their own: each service's endpoints
	// of its port.
	unnamed := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(9090)}}}}
	plainSlice := slice("ns", "plain", "plain-1", 9090, "", map[string]*bool{"10.0.2.1": nil, "10.0.2.2": nil, "10.0.2.3": nil})
	rp := r.DeepCopy()
	rp.Spec.Port = &routev1.RoutePort{TargetPort: intstr.FromString("http")}
	rp.Spec.AlternateBackends = []routev1.RouteTargetReference{{Name: "plain"}}
	ports := build(t, append(objs, unnamed, plainSlice), rp, made(model.MadeRoute{BackendPorts: []string{"http", ""}}))
	if ports.PreferPort != "http" || ports.PreferPortOf("ns/plain") != "" || len(ports.EndpointTable["ns/plain"]) != 3 || ports.ActiveEndpoints != 4 {
		t.Errorf("backend ports: prefer %q, %v, tables %v, %d endpoints", ports.PreferPort, ports.BackendPorts, ports.EndpointTable, ports.ActiveEndpoints)
	}
	samePorts := build(t, append(objs, unnamed, plainSlice), rp, Options{})
	if len(samePorts.EndpointTable["ns/plain"]) != 0 {
		t.Errorf("a Route's alternate backend on another port: %v", samePorts.EndpointTable)
	}

	answered := build(t, objs, r, made(model.MadeRoute{Respond: 500}))
	if answered.Respond != 500 || len(answered.ServiceUnits) != 0 || answered.ActiveEndpoints != 0 {
		t.Errorf("answered: respond %d, units %v", answered.Respond, answered.ServiceUnits)
	}
	redirected := build(t, objs, r, made(model.MadeRoute{Redirect: &model.Redirect{Code: 301}, ExactPath: true,
		HeaderMatches: []model.HeaderMatch{{Name: "a", Value: "b"}}, RequestHeaderAdds: []model.HeaderMatch{{Name: "X-A", Value: "it's"}}}))
	if redirected.Redirect == nil || !redirected.ExactPath || len(redirected.HeaderMatches) != 1 || len(redirected.ServiceUnits) != 0 {
		t.Errorf("redirected: %+v", redirected)
	}
	if a := redirected.HTTPRequestHeaderAdds; len(a) != 1 || a[0].Name != "'X-A'" || a[0].Value != `'it'\''s'` || a[0].Action != model.HeaderActionAdd {
		t.Errorf("header adds %+v", a)
	}
	if rewritten := build(t, objs, r, made(model.MadeRoute{RewritePath: "/one"})); rewritten.RewritePath != "/one" || rewritten.ActiveEndpoints != 1 {
		t.Errorf("a full path rewrite: %q, %d endpoints", rewritten.RewritePath, rewritten.ActiveEndpoints)
	}
	for share, want := range map[int]int{250: 250, 0: 0, 1000: 0} {
		if got := build(t, objs, r, made(model.MadeRoute{ErrorShare: share})); got.ErrorShare != want {
			t.Errorf("error share %d: %d, want %d", share, got.ErrorShare, want)
		}
	}
}
