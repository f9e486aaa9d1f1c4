package deploy

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestIngressOptionGrantsTheControllerAndEnablesIt: --ingress adds the
// controller's ClusterRole and Lease Role, both bound to the router's
// service account, and ROUTER_ENABLE_INGRESS=true; without it none.
func TestIngressOptionGrantsTheControllerAndEnablesIt(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		o := admDefaults("r")
		o.Ingress = enabled
		var roles, bindings []string
		env := false
		for _, obj := range objects(t, o) {
			switch v := obj.(type) {
			case *rbacv1.ClusterRole:
				roles = append(roles, v.Name)
			case *rbacv1.Role:
				roles = append(roles, "Role/"+v.Name)
			case *rbacv1.ClusterRoleBinding:
				if v.RoleRef.Name == IngressClusterRoleName && v.Subjects[0].Kind == "ServiceAccount" && v.Subjects[0].Name != "" {
					bindings = append(bindings, v.Name)
				}
			case *rbacv1.RoleBinding:
				if v.RoleRef.Name == IngressClusterRoleName && v.Subjects[0].Kind == "ServiceAccount" && v.Subjects[0].Name != "" {
					bindings = append(bindings, "RoleBinding/"+v.Name)
				}
			case *appsv1.Deployment:
				for _, e := range v.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "ROUTER_ENABLE_INGRESS" && e.Value == "true" {
						env = true
					}
				}
			}
		}
		got := slices.Contains(roles, IngressClusterRoleName) && slices.Contains(roles, "Role/"+IngressClusterRoleName) && len(bindings) == 2 && env
		none := !slices.Contains(roles, IngressClusterRoleName) && len(bindings) == 0 && !env
		if enabled && !got || !enabled && !none {
			t.Errorf("Ingress=%v: roles %v, bindings %v, ROUTER_ENABLE_INGRESS %v", enabled, roles, bindings, env)
		}
	}
	rules := IngressClusterRoleRules()
	for _, want := range [][3]string{
		{"networking.k8s.io", "ingresses", "watch"}, {"networking.k8s.io", "ingresses/status", "update"},
		{"networking.k8s.io", "ingressclasses", "list"}, {"", "secrets", "watch"}, {"", "services", "list"},
		{"route.openshift.io", "routes", "create"}, {"route.openshift.io", "routes", "delete"},
	} {
		if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, want[0]) && slices.Contains(r.Resources, want[1]) && slices.Contains(r.Verbs, want[2])
		}) {
			t.Errorf("ingress rules lack %v", want)
		}
	}
}
