package kubetest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CreateNamespace creates a namespace with the given labels and deletes it,
// with everything in it, in t.Cleanup. A name ending in "-" is a prefix: the
// API server appends a random suffix (generateName), which is what tests on a
// Shared cluster should use.
//
// There is no kube-controller-manager, so the cleanup deletes the namespace's
// objects itself and then finalizes the namespace (otherwise it would stay
// Terminating, with its objects, for good).
func (c *Cluster) CreateNamespace(t testing.TB, name string, labels map[string]string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	if strings.HasSuffix(name, "-") {
		ns.GenerateName = name
	} else {
		ns.Name = name
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	got, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.DeleteNamespace(got.Name); err != nil {
			t.Logf("deleting namespace %s: %v", got.Name, err)
		}
	})
	return got
}

// DeleteNamespace deletes every object in the namespace, then the namespace
// (finalizing it). Bounded to 20 s; a no-op while the API server is stopped
// or when the namespace is gone already.
func (c *Cluster) DeleteNamespace(name string) error {
	if !c.APIServerRunning() {
		return nil
	}
	ctx, cancel := ctxTimeout(20 * time.Second)
	defer cancel()
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	}
	background := metav1.DeletePropagationBackground
	lists, err := c.Kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "deletecollection") {
				continue
			}
			// Events and the like can be left to the namespace deletion;
			// errors here are not fatal, the namespace goes anyway.
			_ = c.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(name).
				DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		}
	}
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return c.finalizeNamespace(ctx, name)
}

func (c *Cluster) finalizeNamespace(ctx context.Context, name string) error {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns.Spec.Finalizers = nil
	_, err = c.Kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}
