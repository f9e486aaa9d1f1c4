package deploy

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// IngressToRouteOptions describe a separate ingress-to-route controller
// Deployment (adm ingress-to-route, and adm router --ingress).
type IngressToRouteOptions struct {
	Name      string
	Namespace string
	Image     string
	// Replicas run side by side; one leads through the Lease.
	Replicas int32
}

// DefaultIngressToRouteReplicas is the controller's replicas by default
// (one leads, one stands by).
const DefaultIngressToRouteReplicas = 2

// IngressToRouteSuffix names the controller adm router --ingress adds:
// NAME-ingress-to-route, with a service account of that name.
const IngressToRouteSuffix = "-ingress-to-route"

// IngressToRouteName is the controller (Deployment and service account)
// that adm router NAME --ingress adds.
func IngressToRouteName(router string) string { return router + IngressToRouteSuffix }

// checkIngress refuses an --ingress whose controller name would be too
// long, or that would run the router as the controller's service account
// (which reads every Secret).
func (o *Options) checkIngress() error {
	if !o.Ingress {
		return nil
	}
	name := IngressToRouteName(o.Name)
	if len(name) > validation.DNS1035LabelMaxLength {
		return fmt.Errorf("--ingress: router name %q: at most %d characters (the controller is %s)",
			o.Name, validation.DNS1035LabelMaxLength-len(IngressToRouteSuffix), name)
	}
	if o.ServiceAccount == name {
		return fmt.Errorf("--service-account %q with --ingress: that is the ingress-to-route controller's service account, which reads every Secret; the router must not run as it", o.ServiceAccount)
	}
	return nil
}

// IngressToRouteObjects returns, in creation order, a ServiceAccount, the
// controller's ClusterRole and binding, its Lease Role and binding, and a
// Deployment running "openshift-router ingress-to-route". The controller
// reads every Secret of the cluster (it copies Ingress TLS secrets into
// Routes): that permission goes to its own service account, never to a
// router's.
func IngressToRouteObjects(o IngressToRouteOptions) ([]runtime.Object, error) {
	if errs := validation.IsDNS1035Label(o.Name); len(errs) > 0 {
		return nil, fmt.Errorf("ingress-to-route name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Replicas < 1 {
		return nil, fmt.Errorf("--replicas %d: want at least 1", o.Replicas)
	}
	labels := map[string]string{"app": o.Name}
	nonRoot, no := true, false
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
							SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
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
