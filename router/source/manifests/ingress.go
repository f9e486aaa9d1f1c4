package manifests

import (
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/openshift-router-go/router/router/ingress"
)

// desiredObjects gives the ingress translation the objects the files
// define.
type desiredObjects map[objKey]object

func (d desiredObjects) Service(namespace, name string) *corev1.Service {
	s, _ := d[objKey{kind: "Service", namespace: namespace, name: name}].(*corev1.Service)
	return s
}

func (d desiredObjects) Secret(namespace, name string) *corev1.Secret {
	s, _ := d[objKey{kind: "Secret", namespace: namespace, name: name}].(*corev1.Secret)
	return s
}

func (d desiredObjects) IngressClass(name string) *networkingv1.IngressClass {
	c, _ := d[objKey{kind: "IngressClass", name: name}].(*networkingv1.IngressClass)
	return c
}

// translateIngresses replaces the Ingresses and IngressClasses of desired
// (which the sink does not take) by the Routes the Ingresses translate to,
// as OpenShift's ingress-to-route controller would create them: they are
// then admitted like any other Route. A Route of the files with the name of
// a generated Route wins, as a Route created first does on a cluster. The
// reasons of rules and paths that give no Route are logged once per change.
func (st *state) translateIngresses(desired map[objKey]object) {
	var ingresses []*networkingv1.Ingress
	for k, o := range desired {
		switch k.kind {
		case "Ingress":
			ingresses = append(ingresses, o.(*networkingv1.Ingress))
		}
	}
	objs := desiredObjects(desired)
	reports := make(map[objKey]string, len(ingresses))
	generated := map[objKey]object{}
	for _, ing := range ingresses {
		ingKey := objKey{kind: "Ingress", namespace: ing.Namespace, name: ing.Name}
		res := ingress.Translate(ing, objs)
		report := strings.Join(res.Skipped, "; ")
		if !res.Managed {
			report = "unmanaged"
		}
		for _, r := range res.Routes {
			key := objKey{kind: "Route", namespace: r.Namespace, name: r.Name}
			if _, taken := desired[key]; taken {
				report += "; route name " + r.Name + " taken by a Route of the manifests"
				continue
			}
			finalizeGenerated(r, ing)
			generated[key] = r
		}
		reports[ingKey] = report
		if prev, seen := st.ingressReports[ingKey]; seen && prev == report {
			continue
		}
		switch {
		case !res.Managed:
			class, _ := ingress.ClassName(ing)
			st.log.Info("Ingress of another class, ignored", "ingress", ing.Namespace+"/"+ing.Name, "class", class)
		case report != "":
			st.log.Info("Incomplete ingress to route rules", "ingress", ing.Namespace+"/"+ing.Name, "reasons", strings.TrimPrefix(report, "; "))
		default:
			st.log.V(1).Info("Ingress translated", "ingress", ing.Namespace+"/"+ing.Name, "routes", len(res.Routes))
		}
	}
	st.ingressReports = reports
	for k := range desired {
		if k.kind == "Ingress" || k.kind == "IngressClass" {
			delete(desired, k)
		}
	}
	for k, o := range generated {
		desired[k] = o
	}
}

// finalizeGenerated gives a generated Route what the API server would: the
// defaults, a UID, a creationTimestamp (the Ingress's: the Route is created
// when the Ingress is) and a ResourceVersion that changes with its content.
func finalizeGenerated(r *routev1.Route, ing *networkingv1.Ingress) {
	defaultRoute(r)
	r.UID = deterministicUID(objKey{kind: "Route", namespace: r.Namespace, name: r.Name})
	r.CreationTimestamp = ing.CreationTimestamp
	setResourceVersion(r)
}
