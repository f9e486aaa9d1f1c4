package deploy

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// grants returns, for each "namespace/name" service account bound in
// objs, the rules its bindings give it (ClusterRoles and Roles found in
// objs; a Role's rules only count in its namespace, marked by scope).
func grants(objs []any) map[string][]scopedRule {
	clusterRoles, roles := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	for _, obj := range objs {
		switch v := obj.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[v.Name] = v.Rules
		case *rbacv1.Role:
			roles[v.Namespace+"/"+v.Name] = v.Rules
		}
	}
	out := map[string][]scopedRule{}
	add := func(subjects []rbacv1.Subject, scope string, rules []rbacv1.PolicyRule) {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" {
				for _, r := range rules {
					out[s.Namespace+"/"+s.Name] = append(out[s.Namespace+"/"+s.Name], scopedRule{scope, r})
				}
			}
		}
	}
	for _, obj := range objs {
		switch v := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			add(v.Subjects, "", clusterRoles[v.RoleRef.Name])
		case *rbacv1.RoleBinding:
			rules := roles[v.Namespace+"/"+v.RoleRef.Name]
			if v.RoleRef.Kind == "ClusterRole" {
				rules = clusterRoles[v.RoleRef.Name]
			}
			add(v.Subjects, v.Namespace, rules)
		}
	}
	return out
}

// scopedRule is a rule and the namespace it holds in ("" cluster-wide).
type scopedRule struct {
	scope string
	rule  rbacv1.PolicyRule
}

// readsSecrets reports whether rules let their holder read Secrets
// (any verb that reads, any namespace), and where.
func readsSecrets(rules []scopedRule) []string {
	var where []string
	for _, r := range rules {
		core := slices.Contains(r.rule.APIGroups, "") || slices.Contains(r.rule.APIGroups, "*")
		res := slices.Contains(r.rule.Resources, "secrets") || slices.Contains(r.rule.Resources, "*")
		read := slices.ContainsFunc(r.rule.Verbs, func(v string) bool { return v == "get" || v == "list" || v == "watch" || v == "*" })
		if core && res && read {
			where = append(where, "namespace "+r.scope+" "+strings.Join(r.rule.Verbs, ","))
		}
	}
	return where
}

func deploymentNames(deps map[string]*appsv1.Deployment) []string {
	return slices.Sorted(maps.Keys(deps))
}

func deployments(objs []any) map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for _, obj := range objs {
		if d, ok := obj.(*appsv1.Deployment); ok {
			out[d.Name] = d
		}
	}
	return out
}

// TestIngressOptionRunsTheControllerUnderItsOwnServiceAccount: --ingress
// adds the ingress-to-route controller as a Deployment of its own
// (NAME-ingress-to-route) with its own service account, which holds the
// controller's ClusterRole (Secrets among it) and Lease Role; the router's
// Deployment does not run the controller and its service account reads no
// Secret, with or without --ingress and whatever the other flags.
func TestIngressOptionRunsTheControllerUnderItsOwnServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"defaults", func(*Options) {}},
		{"--ingress", func(o *Options) { o.Ingress = true }},
		{"--ingress --service-account", func(o *Options) { o.Ingress = true; o.ServiceAccount = "edge" }},
		{"--ingress --monitoring", func(o *Options) { o.Ingress = true; o.Monitoring = true }},
		{"--ingress -n", func(o *Options) { o.Ingress = true; o.Namespace = "openshift-ingress" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := admDefaults("r")
			tc.edit(&o)
			objs := objects(t, o)
			sa := o.Namespace + "/" + o.ServiceAccount
			if o.Namespace == "" {
				sa = "default/" + o.ServiceAccount
			}
			if o.ServiceAccount == "" {
				sa = strings.TrimSuffix(sa, "/") + "/r"
			}
			g := grants(objs)
			if len(g[sa]) == 0 {
				t.Fatalf("no rules for the router's service account %s: %v", sa, g)
			}
			if where := readsSecrets(g[sa]); len(where) > 0 {
				t.Errorf("the router's service account %s reads Secrets: %v", sa, where)
			}
			deps := deployments(objs)
			router := deps["r"]
			for _, e := range router.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "ROUTER_ENABLE_INGRESS" {
					t.Errorf("the router runs the controller in process: %s=%s", e.Name, e.Value)
				}
			}
			ing := deps["r-ingress-to-route"]
			if !o.Ingress {
				if ing != nil || len(deps) != 1 {
					t.Errorf("deployments without --ingress: %v", deploymentNames(deps))
				}
				return
			}
			if ing == nil {
				t.Fatalf("no controller Deployment: %v", deploymentNames(deps))
			}
			ingSA := ing.Namespace + "/" + ing.Spec.Template.Spec.ServiceAccountName
			if ingSA == sa || ing.Spec.Template.Spec.ServiceAccountName != "r-ingress-to-route" {
				t.Errorf("controller service account %s (router's %s)", ingSA, sa)
			}
			if c := ing.Spec.Template.Spec.Containers[0]; !slices.Equal(c.Args, []string{"ingress-to-route"}) || c.Image != router.Spec.Template.Spec.Containers[0].Image {
				t.Errorf("controller container %s %v", c.Image, c.Args)
			}
			if where := readsSecrets(g[ingSA]); !slices.Contains(where, "namespace  get,list,watch") {
				t.Errorf("the controller's service account %s cannot read Secrets cluster-wide: %v", ingSA, g[ingSA])
			}
			lease := false
			for _, r := range g[ingSA] {
				lease = lease || r.scope == ing.Namespace && slices.Contains(r.rule.Resources, "leases") && slices.Contains(r.rule.Verbs, "update")
			}
			if !lease {
				t.Errorf("the controller's service account may not hold its Lease: %v", g[ingSA])
			}
		})
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

// TestIngressOptionRefusals: a router name too long for the controller's
// name, or a router run as the controller's service account, is an error.
func TestIngressOptionRefusals(t *testing.T) {
	long := admDefaults(strings.Repeat("a", 47))
	long.Ingress = true
	if _, err := Objects(long); err == nil || !strings.Contains(err.Error(), "at most 46 characters") {
		t.Errorf("47-character name with --ingress: %v", err)
	}
	long.Name = strings.Repeat("a", 46)
	if _, err := Objects(long); err != nil {
		t.Errorf("46-character name with --ingress: %v", err)
	}
	same := admDefaults("r")
	same.Ingress, same.ServiceAccount = true, "r-ingress-to-route"
	if _, err := Objects(same); err == nil || !strings.Contains(err.Error(), "--service-account") {
		t.Errorf("router as the controller's service account: %v", err)
	}
	if _, err := IngressToRouteObjects(IngressToRouteOptions{Name: "Bad_Name", Namespace: "default", Replicas: 1}); err == nil {
		t.Error("bad controller name accepted")
	}
}
