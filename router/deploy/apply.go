package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// ToUnstructured converts objects to what is printed and applied: no
// status, no creationTimestamp.
func ToUnstructured(objs []runtime.Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u.DeepCopy())
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", o, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		out = append(out, u)
	}
	return out, nil
}

// YAML prints objects as a multi-document YAML stream.
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var b strings.Builder
	for i, u := range objs {
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// JSON prints objects as a v1 List.
func JSON(objs []*unstructured.Unstructured) ([]byte, error) {
	items := make([]any, len(objs))
	for i, u := range objs {
		items[i] = u.Object
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// Resource returns the API resource of an object this package creates and
// whether it is namespaced.
func Resource(u *unstructured.Unstructured) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	resources := map[string]struct {
		resource   string
		namespaced bool
	}{
		"ServiceAccount":     {"serviceaccounts", true},
		"ClusterRole":        {"clusterroles", false},
		"ClusterRoleBinding": {"clusterrolebindings", false},
		"Role":               {"roles", true},
		"RoleBinding":        {"rolebindings", true},
		"ServiceMonitor":     {"servicemonitors", true},
		"PrometheusRule":     {"prometheusrules", true},
		"Secret":             {"secrets", true},
		"ConfigMap":          {"configmaps", true},
		"Deployment":         {"deployments", true},
		"Service":            {"services", true},
	}
	r, ok := resources[u.GetKind()]
	if !ok {
		return schema.GroupVersionResource{}, false, fmt.Errorf("unexpected kind %s", u.GetKind())
	}
	return gv.WithResource(r.resource), r.namespaced, nil
}

// optional reports whether an object's API comes from a CRD that a
// cluster may lack (the Prometheus Operator's).
func optional(u *unstructured.Unstructured) bool {
	return u.GetAPIVersion() == MonitoringAPIVersion
}

// Apply creates or updates the objects with server-side apply (field
// manager FieldManager, forcing conflicts), so running it again changes
// nothing. With dryRun the API server validates and admits everything but
// persists nothing. It returns one line per object. Objects of the
// Prometheus Operator's API are skipped, with a line saying so, when the
// cluster does not serve it.
func Apply(ctx context.Context, client dynamic.Interface, objs []*unstructured.Unstructured, dryRun bool) ([]string, error) {
	var lines []string
	force := true
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	suffix := ""
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		suffix = " (server dry run)"
	}
	for _, u := range objs {
		gvr, namespaced, err := Resource(u)
		if err != nil {
			return lines, err
		}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return lines, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if namespaced {
			ri = client.Resource(gvr).Namespace(u.GetNamespace())
		}
		if optional(u) {
			// Listing an unknown resource is NotFound; an unknown namespace
			// only lists nothing.
			if _, err := ri.List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(err) {
				lines = append(lines, fmt.Sprintf("%s/%s skipped: the cluster does not serve %s %s (install the Prometheus Operator's CRDs)",
					strings.ToLower(u.GetKind()), u.GetName(), u.GetAPIVersion(), u.GetKind()))
				continue
			}
		}
		before, _ := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		after, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts)
		if err != nil {
			return lines, fmt.Errorf("applying %s %s: %w", strings.ToLower(u.GetKind()), qualified(u), err)
		}
		what := "created"
		if before != nil {
			what = "configured"
			if before.GetResourceVersion() == after.GetResourceVersion() {
				what = "unchanged"
			}
		}
		lines = append(lines, fmt.Sprintf("%s/%s %s%s", strings.ToLower(u.GetKind()), u.GetName(), what, suffix))
	}
	return lines, nil
}

func qualified(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// CheckNotBound returns an error when a ClusterRoleBinding of the cluster
// binds ClusterRole role to service account namespace/name: adm router
// refuses to run a router as the ingress-to-route controller's service
// account (which reads every Secret), and adm ingress-to-route refuses to
// give that role to a router's service account.
func CheckNotBound(ctx context.Context, client dynamic.Interface, namespace, name, role, why string) error {
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("checking the ClusterRoleBindings of service account %s/%s: %w", namespace, name, err)
	}
	for _, u := range list.Items {
		if ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name"); ref != role {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			if m["kind"] == "ServiceAccount" && m["name"] == name && m["namespace"] == namespace {
				return fmt.Errorf("service account %s/%s is bound to ClusterRole %s (ClusterRoleBinding %s): %s", namespace, name, role, u.GetName(), why)
			}
		}
	}
	return nil
}
