package kube

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/test/kubetest"
)

func managedFields() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
}

func TestStripManagedFieldsDropsOnlyManagedFields(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7", UID: "u",
			Labels:        map[string]string{"app": "a"},
			Annotations:   map[string]string{"haproxy.router.openshift.io/timeout": "5s"},
			ManagedFields: managedFields()}
	}
	route := func() *routev1.Route {
		return &routev1.Route{ObjectMeta: meta(), Spec: routev1.RouteSpec{Host: "a.example.com",
			To: routev1.RouteTargetReference{Kind: "Service", Name: "a"}}}
	}
	service := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: meta(), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1"}}
	}
	slice := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: meta(), AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}}}}
	}
	tests := []struct {
		name string
		in   func() any
	}{
		{"route", func() any { return route() }},
		{"service", func() any { return service() }},
		{"endpoint slice", func() any { return slice() }},
		{"endpoints", func() any { return &corev1.Endpoints{ObjectMeta: meta()} }},
		{"namespace", func() any { return &corev1.Namespace{ObjectMeta: meta()} }},
		{"secret", func() any { return &corev1.Secret{ObjectMeta: meta(), Data: map[string][]byte{"tls.crt": []byte("x")}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StripManagedFields(tt.in())
			if err != nil {
				t.Fatal(err)
			}
			m := got.(metav1.Object)
			if m.GetManagedFields() != nil {
				t.Errorf("managedFields kept: %v", m.GetManagedFields())
			}
			// Everything else is as it was.
			want := tt.in().(metav1.Object)
			want.SetManagedFields(nil)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
	t.Run("tombstone and other values pass unchanged", func(t *testing.T) {
		tomb := cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: route()}
		got, err := StripManagedFields(tomb)
		if err != nil || !reflect.DeepEqual(got, tomb) {
			t.Errorf("got %#v, %v; want the tombstone unchanged", got, err)
		}
		if got, err := StripManagedFields("x"); err != nil || got != "x" {
			t.Errorf("got %#v, %v", got, err)
		}
	})
}

// TestSourceStoresObjectsWithoutManagedFields: against a real API server,
// which records managedFields on every write, the objects the source gives
// the store carry none, and everything the router reads is still there.
func TestSourceStoresObjectsWithoutManagedFields(t *testing.T) {
	c := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.CreateNamespace(t, "strip", nil).Name

	svc, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"example.com/note": "kept"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port, portName := int32(8080), "http"
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.51.100.10"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt, err := c.Routes.RouteV1().Routes(ns).Create(ctx, &routev1.Route{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"haproxy.router.openshift.io/timeout": "7s"}},
		Spec:       routev1.RouteSpec{Host: "web.strip.test", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.ManagedFields) == 0 || len(rt.ManagedFields) == 0 {
		t.Fatalf("the API server recorded no managedFields (service %d, route %d entries): the test proves nothing", len(svc.ManagedFields), len(rt.ManagedFields))
	}

	st := store.New()
	src := New(Options{Kube: c.Kube, Routes: c.Routes, Sink: st, Logger: logr.Discard(),
		RouteLabels: labels.Everything(), RouteFields: fields.Everything(), Namespace: ns, Resync: 0})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for !st.HasSynced(SourceName) {
		if ctx.Err() != nil {
			t.Fatal("the source did not sync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = st.Read(func(v store.View) error {
		r, s, slices := v.Route(ns, "web"), v.Service(ns, "web"), v.EndpointSlices(ns, "web")
		if r == nil || s == nil || len(slices) != 1 {
			t.Fatalf("store: route %v, service %v, %d slices", r != nil, s != nil, len(slices))
		}
		for what, m := range map[string]metav1.Object{"route": r, "service": s, "endpoint slice": slices[0]} {
			if m.GetManagedFields() != nil {
				t.Errorf("%s kept managedFields: %v", what, m.GetManagedFields())
			}
		}
		if r.Annotations["haproxy.router.openshift.io/timeout"] != "7s" || r.Spec.Host != "web.strip.test" || r.ResourceVersion != rt.ResourceVersion {
			t.Errorf("route changed: %+v", r)
		}
		if s.Annotations["example.com/note"] != "kept" || s.Spec.ClusterIP != svc.Spec.ClusterIP || len(s.Spec.Ports) != 1 {
			t.Errorf("service changed: %+v", s)
		}
		if got := slices[0].Endpoints; len(got) != 1 || got[0].Addresses[0] != "198.51.100.10" {
			t.Errorf("endpoint slice changed: %+v", slices[0])
		}
		return nil
	})
}
