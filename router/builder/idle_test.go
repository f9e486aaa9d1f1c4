package builder

import (
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func idleService(idledAt, clusterIP string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr("h2c")},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}
	if idledAt != "" {
		s.Annotations = map[string]string{IdledAtAnnotation: idledAt}
	}
	return s
}

func TestIdledServiceIsServedThroughItsClusterIPWithoutHealthCheck(t *testing.T) {
	const at = "2026-11-23T21:00:00Z"
	route := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec:       routev1.RouteSpec{Host: "a.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}},
	}
	ready := ptr(true)
	tests := []struct {
		name string
		objs []any
		// want is the served endpoints as "IP:Port noHealthCheck".
		want []string
	}{
		{"idled, no ready endpoint: the cluster IP on each TCP service port",
			[]any{idleService(at, "10.0.0.7"), slice("ns", "web", "web-1", 8080, "http", nil)},
			[]string{"10.0.0.7:80 true"}},
		{"idled, only not-ready endpoints: the cluster IP",
			[]any{idleService(at, "10.0.0.7"), slice("ns", "web", "web-1", 8080, "http", map[string]*bool{"198.51.100.10": ptr(false)})},
			[]string{"10.0.0.7:80 true"}},
		{"idled but a ready endpoint came back: the endpoints, checked",
			[]any{idleService(at, "10.0.0.7"), slice("ns", "web", "web-1", 8080, "http", map[string]*bool{"198.51.100.10": ready})},
			[]string{"198.51.100.10:8080 false"}},
		{"not idled: nothing",
			[]any{idleService("", "10.0.0.7"), slice("ns", "web", "web-1", 8080, "http", nil)},
			nil},
		{"idled headless service: nothing (no cluster IP to wake it through)",
			[]any{idleService(at, corev1.ClusterIPNone), slice("ns", "web", "web-1", 8080, "http", nil)},
			nil},
		{"idled, no EndpointSlice at all: nothing",
			[]any{idleService(at, "10.0.0.7")},
			nil},
		{"idled IPv6 cluster IP in brackets",
			[]any{idleService(at, "fd00::7"), slice("ns", "web", "web-1", 8080, "http", nil)},
			[]string{"[fd00::7]:80 true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := build(t, tt.objs, route, Options{})
			var got []string
			for _, ep := range cfg.EndpointTable["ns/web"] {
				got = append(got, ep.IP+":"+ep.Port+" "+map[bool]string{true: "true", false: "false"}[ep.NoHealthCheck])
			}
			if len(got) != len(tt.want) {
				t.Fatalf("endpoints %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("endpoint %d: %s, want %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestIdledServiceEndpointKeepsUpstreamIdentity(t *testing.T) {
	svc := idleService("yes", "10.0.0.7")
	route := &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: routev1.RouteSpec{Host: "a.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"},
			Port: &routev1.RoutePort{TargetPort: intstr.FromString("http")}},
	}
	cfg := build(t, []any{svc, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}}, route, Options{WatchEndpoints: true})
	eps := cfg.EndpointTable["ns/web"]
	if len(eps) != 1 {
		t.Fatalf("endpoints %+v, want one", eps)
	}
	ep := eps[0]
	if ep.ID != "ept:web:http:10.0.0.7:80" || ep.TargetName != "10.0.0.7" || ep.PortName != "http" || ep.AppProtocol != "h2c" || !ep.NoHealthCheck || ep.IdHash == "" {
		t.Errorf("endpoint %+v", ep)
	}
	if cfg.ActiveEndpoints != 1 {
		t.Errorf("ActiveEndpoints %d, want 1", cfg.ActiveEndpoints)
	}
}
