package kubetest

import (
	"context"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ConfigAs returns a client configuration that acts as the user name (by
// impersonation), after granting that user the rules with a ClusterRole
// and ClusterRoleBinding of the same name (deleted in t.Cleanup). Use a
// name of the test's own on a Shared cluster. It returns once the API
// server's authorizer grants the user each rule's first verb on its first
// resource (a new binding takes a moment to be seen).
func (c *Cluster) ConfigAs(t testing.TB, name string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	ctx := context.Background()
	meta := metav1.ObjectMeta{Name: name}
	if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("cluster role %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("cluster role binding %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	for _, r := range rules {
		if len(r.Verbs) == 0 || len(r.Resources) == 0 || len(r.APIGroups) == 0 {
			continue
		}
		resource, sub, _ := strings.Cut(r.Resources[0], "/")
		c.WaitAllowed(t, name, authzv1.ResourceAttributes{Group: r.APIGroups[0], Resource: resource, Subresource: sub, Verb: r.Verbs[0]})
	}
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	return cfg
}

// WaitAllowed waits (up to 30 s) until user may do what attrs describe,
// as the API server's authorizer sees it: a binding just made takes a
// moment to be seen.
func (c *Cluster) WaitAllowed(t testing.TB, user string, attrs authzv1.ResourceAttributes) {
	t.Helper()
	review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s may still not %s %s: %v", user, attrs.Verb, attrs.String(), err)
		}
	}
}
