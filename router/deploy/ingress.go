package deploy

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IngressToRouteOptions describe a separate ingress-to-route controller
// Deployment (adm ingress-to-route).
type IngressToRouteOptions struct {
	Name      string
	Namespace string
	Image     string
	// Replicas run side by side; one leads through the Lease.
	Replicas int32
}

// IngressToRouteObjects returns, in creation order, a ServiceAccount, the
// controller's ClusterRole and binding, its Lease Role and binding, and a
// Deployment running "openshift-router ingress-to-route".
func IngressToRouteObjects(o IngressToRouteOptions) ([]runtime.Object, error) {
	if o.Name == "" || o.Namespace == "" {
		return nil, fmt.Errorf("name and --namespace are required")
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Replicas < 1 {
		return nil, fmt.Errorf("--replicas %d: want at least 1", o.Replicas)
	}
	labels := map[string]string{"app": o.Name}
	nonRoot := true
	uid := int64(ImageUID)
	objs := []runtime.Object{
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels}},
	}
	objs = append(objs, ingressRBAC(o.Name, o.Namespace, o.Name, labels)...)
	return append(objs,
		&appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"),
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: &o.Replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: o.Name,
						SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid},
						Containers: []corev1.Container{{
							Name:  "ingress-to-route",
							Image: o.Image,
							Args:  []string{"ingress-to-route"}, // the image's entrypoint is openshift-router
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("10m"),
								corev1.ResourceMemory: resource.MustParse("64Mi"),
							}},
						}},
					},
				},
			},
		},
	), nil
}

// ingressRBAC is what the ingress-to-route controller running as service
// account sa (in namespace) needs, named after the deployment name: the
// cluster role and its binding, and the Role and RoleBinding for its Lease.
func ingressRBAC(sa, namespace, name string, labels map[string]string) []runtime.Object {
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: namespace}}
	return []runtime.Object{
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"),
			ObjectMeta: metav1.ObjectMeta{Name: IngressClusterRoleName}, Rules: IngressClusterRoleRules()},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: IngressClusterRoleName + "-" + namespace + "-" + name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: IngressClusterRoleName},
			Subjects:   subjects},
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"),
			ObjectMeta: metav1.ObjectMeta{Name: IngressClusterRoleName, Namespace: namespace}, Rules: IngressLeaseRules()},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: IngressClusterRoleName + "-" + name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: IngressClusterRoleName},
			Subjects:   subjects},
	}
}
