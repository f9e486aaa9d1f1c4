package kubetest

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestGatewayCRDsValidateAsOnACluster: with the standard channel's CRDs,
// Gateway API objects are served, carry the release the conformance suite
// checks, and are validated by the CRDs' own rules (an Exact path match
// that is not a path is refused).
func TestGatewayCRDsValidateAsOnACluster(t *testing.T) {
	c := Start(t, WithGatewayCRDs("standard"), WithoutRouteCRD())
	crd, err := c.Dynamic.Resource(crdGVR).Get(ctx(t), "httproutes.gateway.networking.k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := crd.GetAnnotations()["gateway.networking.k8s.io/bundle-version"]; got != GatewayAPIVersion {
		t.Fatalf("bundle-version %q, want %s", got, GatewayAPIVersion)
	}
	if got := crd.GetAnnotations()["gateway.networking.k8s.io/channel"]; got != "standard" {
		t.Fatalf("channel %q", got)
	}
	gv := schema.GroupVersion{Group: "gateway.networking.k8s.io", Version: "v1"}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(), "kind": "GatewayClass",
		"metadata": map[string]any{"name": "haproxy"},
		"spec":     map[string]any{"controllerName": "haproxy.router.openshift.io/gateway-controller"},
	}}
	if _, err := c.Dynamic.Resource(gv.WithResource("gatewayclasses")).Create(ctx(t), class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a GatewayClass: %v", err)
	}
	route := func(path string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gv.String(), "kind": "HTTPRoute",
			"metadata": map[string]any{"generateName": "web-", "namespace": "default"},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": "gw"}},
				"hostnames":  []any{"web.example.com"},
				"rules": []any{map[string]any{
					"matches":     []any{map[string]any{"path": map[string]any{"type": "Exact", "value": path}}},
					"backendRefs": []any{map[string]any{"name": "web", "port": int64(8080)}},
				}},
			},
		}}
	}
	routes := c.Dynamic.Resource(gv.WithResource("httproutes")).Namespace("default")
	if _, err := routes.Create(ctx(t), route("/exact"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a valid HTTPRoute: %v", err)
	}
	if _, err := routes.Create(ctx(t), route("not-a-path"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("an HTTPRoute with an Exact match that is not a path: want Invalid, got %v", err)
	}
}
