package controller

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/builder"
	"github.com/openshift-router-go/router/router/defaultcert"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/servers"
	"github.com/openshift-router-go/router/router/store"
	"github.com/openshift-router-go/router/templates"
)

// allowlist returns n addresses, blank-separated (long enough to go to a
// file when n > 61).
func allowlist(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.1", i/250, i%250)
	}
	return strings.Join(out, " ")
}

// tenantStore holds one service "svc" with two endpoints in each
// namespace of routes, and routes.
func tenantStore(routes ...*routev1.Route) *store.Store {
	st := store.New()
	seen := map[string]bool{}
	for i, r := range routes {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			setEndpoints(st, r.Namespace, "svc", fmt.Sprintf("10.99.%d.1", i), fmt.Sprintf("10.99.%d.2", i))
		}
		r.CreationTimestamp = metav1.NewTime(time.Unix(1700000000+int64(i), 0))
		st.Upsert(r)
	}
	return st
}

// setEndpoints creates or replaces service name of ns with the endpoints
// ips (port 8080).
func setEndpoints(st *store.Store, ns, name string, ips ...string) {
	port, portName := int32(8080), "web"
	st.Upsert(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: 80}}}})
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	st.Upsert(slice)
}

// tenantOptions are controller options with the default template and 5
// spare slots per backend, writing into dir; no Process.
func tenantOptions(t testing.TB, st *store.Store, dir string) Options {
	t.Helper()
	r, err := templates.Parse("default", templates.Default(), templates.FuncMap(templates.FuncOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := defaultcert.Generate("default.example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Store: st, Inputs: pipeline.Inputs{
		Renderer:  r,
		Admission: admission.Options{ExtendedValidation: true},
		Build: builder.Options{WorkingDir: dir, RunDir: filepath.Join(dir, "run"), DefaultCertificate: filepath.Join(dir, "conf", "default.pem"),
			HTTPPort: 18080, HTTPSPort: 18443, BindPorts: true, MaxConnections: 20000},
		Servers:            servers.Options{PoolSize: 5},
		DefaultCertificate: cert,
	}}
}
