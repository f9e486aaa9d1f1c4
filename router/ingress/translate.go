// Package ingress translates Kubernetes networking.k8s.io/v1 Ingress objects
// into Routes with the rules of OpenShift's ingress-to-route controller
// (route-controller-manager), so that an Ingress is served exactly as on
// OpenShift: the router itself only ever serves Routes.
//
// The rules, as OpenShift applies them:
//
//   - An Ingress is handled when it names no class (neither the legacy
//     kubernetes.io/ingress.class annotation nor spec.ingressClassName; the
//     annotation wins when both are set), whatever IngressClass is marked
//     default, or when its class is an IngressClass whose spec.controller is
//     openshift.io/ingress-to-route. An Ingress naming a missing class or a
//     class of another controller is ignored.
//   - One Route per path of each rule. Rules without a host or without http,
//     paths without a service backend or with pathType Exact are skipped with
//     a reason. spec.defaultBackend is ignored: it never produces a Route.
//   - pathType Prefix and ImplementationSpecific (or none) keep the path as
//     is: a Route path is a prefix.
//   - A wildcard host "*.example.com" becomes "wildcard.example.com" with
//     wildcardPolicy Subdomain.
//   - The backend service must exist. A port given by name must be one of
//     its ports' names; a port given by number must be one of its ports'
//     numbers. spec.port.targetPort is that service port's name; a port
//     given by number whose service port has no name gives a Route without
//     spec.port. Otherwise no Route, with a reason.
//   - A rule host listed in spec.tls with a secretName needs a
//     kubernetes.io/tls Secret of the Ingress's namespace holding tls.crt and
//     tls.key; if not, no Route for that rule, with a reason. TLS is on when
//     that secret is valid, when the route.openshift.io/termination
//     annotation is edge, passthrough or reencrypt, or when spec.tls has an
//     empty entry. Termination is that annotation's value (edge by default),
//     insecureEdgeTerminationPolicy Redirect, certificate and key from the
//     secret (except passthrough). For reencrypt, the
//     route.openshift.io/destination-ca-certificate-secret annotation names
//     a Secret (kubernetes.io/tls or Opaque) whose tls.crt is the
//     destination CA.
//   - Labels and all annotations of the Ingress are copied to its Routes
//     (haproxy.router.openshift.io/* included), and each Route is owned by the
//     Ingress (ownerReferences, controller: true).
//   - Names are the Ingress name, "-" and five characters (OpenShift's
//     generateName; the prefix is cut at 58 characters). OpenShift picks
//     the characters at random and keeps them while the Route exists; here
//     they are derived from namespace, Ingress, host and path, from the same
//     alphabet, so that a manifests directory gives stable names.
package ingress

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// ControllerName is the IngressClass spec.controller of the classes
	// translated to Routes.
	ControllerName = routev1.IngressToRouteIngressClassControllerName
	// ClassAnnotation is the legacy annotation naming an Ingress's class.
	ClassAnnotation = "kubernetes.io/ingress.class"
	// TerminationAnnotation selects the TLS termination of the Routes.
	TerminationAnnotation = "route.openshift.io/termination"
	// DestinationCAAnnotation names the Secret holding the destination CA
	// of reencrypt Routes.
	DestinationCAAnnotation = "route.openshift.io/destination-ca-certificate-secret"

	maxNameLength = 63
	suffixLength  = 5
	// nameAlphabet is the alphabet of generated name suffixes (that of
	// Kubernetes' generateName: no vowels, no ambiguous characters).
	nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"
)

// Objects gives the translation the objects an Ingress refers to.
// Implementations return nil when an object does not exist.
type Objects interface {
	Service(namespace, name string) *corev1.Service
	Secret(namespace, name string) *corev1.Secret
	IngressClass(name string) *networkingv1.IngressClass
}

// Result is the translation of one Ingress.
type Result struct {
	// Managed is false when the Ingress belongs to another controller
	// (see Managed); Routes and Skipped are then empty.
	Managed bool
	// Routes are the Routes of the Ingress, in rule and path order.
	Routes []*routev1.Route
	// Skipped are the reasons of rules and paths that gave no Route, as
	// OpenShift words them ("Missing host field in rule at index 0").
	Skipped []string
}

// ClassName returns the class an Ingress names (annotation first), or "".
func ClassName(ing *networkingv1.Ingress) (string, bool) {
	if v, ok := ing.Annotations[ClassAnnotation]; ok {
		return v, true
	}
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName, true
	}
	return "", false
}

// Managed tells whether an Ingress is translated: it names no class, or a
// class whose controller is ControllerName.
func Managed(ing *networkingv1.Ingress, objs Objects) bool {
	name, ok := ClassName(ing)
	if !ok {
		return true
	}
	class := objs.IngressClass(name)
	return class != nil && class.Spec.Controller == ControllerName
}

// Translate returns the Routes of an Ingress. It has no side effects.
func Translate(ing *networkingv1.Ingress, objs Objects) Result {
	if !Managed(ing, objs) {
		return Result{}
	}
	res := Result{Managed: true}
	for i := range ing.Spec.Rules {
		rule := &ing.Spec.Rules[i]
		if rule.HTTP == nil {
			res.Skipped = append(res.Skipped, fmt.Sprintf("Missing http field in rule at index %d", i))
			continue
		}
		if rule.Host == "" {
			res.Skipped = append(res.Skipped, fmt.Sprintf("Missing host field in rule at index %d", i))
			continue
		}
		host, wildcard := rule.Host, false
		if strings.HasPrefix(host, "*.") {
			host, wildcard = "wildcard"+host[1:], true
		}
		for j := range rule.HTTP.Paths {
			path := &rule.HTTP.Paths[j]
			switch {
			case path.Backend.Service == nil:
				res.Skipped = append(res.Skipped, fmt.Sprintf("Missing backend service field in rule at index %d, path index %d", i, j))
				continue
			case path.Backend.Service.Name == "":
				res.Skipped = append(res.Skipped, fmt.Sprintf("Missing backend service name in rule at index %d, path index %d", i, j))
				continue
			case path.PathType != nil && *path.PathType == networkingv1.PathTypeExact:
				res.Skipped = append(res.Skipped, fmt.Sprintf("Unsupported exact path type in rule at index %d, path index %d", i, j))
				continue
			}
			r, err := routeFor(ing, rule, path, host, wildcard, objs)
			if err != nil {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s at index %d, path index %d", err, i, j))
				continue
			}
			res.Routes = append(res.Routes, r)
		}
	}
	return res
}

func routeFor(ing *networkingv1.Ingress, rule *networkingv1.IngressRule, path *networkingv1.HTTPIngressPath, host string, wildcard bool, objs Objects) (*routev1.Route, error) {
	backend := path.Backend.Service
	svc := objs.Service(ing.Namespace, backend.Name)
	if svc == nil {
		return nil, fmt.Errorf("Backend service %q not found", backend.Name)
	}
	targetPort, ok := TargetPort(svc, backend.Port)
	if !ok {
		return nil, fmt.Errorf("No valid target port for backend service %q", backend.Name)
	}
	tls, err := tlsFor(ing, rule, objs)
	if err != nil {
		return nil, err
	}
	controller := true
	r := &routev1.Route{
		TypeMeta: metav1.TypeMeta{APIVersion: routev1.GroupVersion.String(), Kind: "Route"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RouteName(ing.Namespace, ing.Name, host, path.Path),
			Namespace:   ing.Namespace,
			Labels:      copyMap(ing.Labels),
			Annotations: copyMap(ing.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: networkingv1.SchemeGroupVersion.String(),
				Kind:       "Ingress",
				Name:       ing.Name,
				UID:        ing.UID,
				Controller: &controller,
			}},
		},
		Spec: routev1.RouteSpec{
			Host: host,
			Path: path.Path,
			To:   routev1.RouteTargetReference{Kind: "Service", Name: backend.Name},
			TLS:  tls,
		},
	}
	if targetPort != nil {
		r.Spec.Port = &routev1.RoutePort{TargetPort: *targetPort}
	}
	if wildcard {
		r.Spec.WildcardPolicy = routev1.WildcardPolicySubdomain
	}
	return r, nil
}

// TargetPort resolves an Ingress backend port against its Service: the
// service port's name, nil for an unnamed port given by number, and false
// when the Service has no such port.
func TargetPort(svc *corev1.Service, port networkingv1.ServiceBackendPort) (*intstr.IntOrString, bool) {
	for _, p := range svc.Spec.Ports {
		switch {
		case port.Name != "":
			if p.Name == port.Name {
				v := intstr.FromString(p.Name)
				return &v, true
			}
		case p.Port == port.Number:
			if p.Name == "" {
				return nil, true
			}
			v := intstr.FromString(p.Name)
			return &v, true
		}
	}
	return nil, false
}

// tlsFor returns the TLS configuration of a rule's Routes, or an error when
// the rule's host refers to an unusable secret.
func tlsFor(ing *networkingv1.Ingress, rule *networkingv1.IngressRule, objs Objects) (*routev1.TLSConfig, error) {
	var secret *corev1.Secret
	if name, ok := secretNameFor(ing, rule.Host); ok {
		secret = objs.Secret(ing.Namespace, name)
		if secret == nil || secret.Type != corev1.SecretTypeTLS ||
			secret.Data[corev1.TLSCertKey] == nil || secret.Data[corev1.TLSPrivateKeyKey] == nil {
			return nil, fmt.Errorf("Invalid or missing TLS secret for rule host %q", rule.Host)
		}
	}
	termination := ing.Annotations[TerminationAnnotation]
	enabled := secret != nil
	switch routev1.TLSTerminationType(termination) {
	case routev1.TLSTerminationEdge, routev1.TLSTerminationPassthrough, routev1.TLSTerminationReencrypt:
		enabled = true
	default:
		termination = string(routev1.TLSTerminationEdge)
	}
	for _, t := range ing.Spec.TLS {
		if len(t.Hosts) == 0 && t.SecretName == "" {
			enabled = true
		}
	}
	if !enabled {
		return nil, nil
	}
	tls := &routev1.TLSConfig{
		Termination:                   routev1.TLSTerminationType(termination),
		InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyRedirect,
	}
	if tls.Termination != routev1.TLSTerminationPassthrough && secret != nil {
		tls.Certificate = string(secret.Data[corev1.TLSCertKey])
		tls.Key = string(secret.Data[corev1.TLSPrivateKeyKey])
	}
	if tls.Termination == routev1.TLSTerminationReencrypt {
		if ca := objs.Secret(ing.Namespace, ing.Annotations[DestinationCAAnnotation]); ca != nil &&
			(ca.Type == corev1.SecretTypeTLS || ca.Type == corev1.SecretTypeOpaque) && ca.Data[corev1.TLSCertKey] != nil {
			tls.DestinationCACertificate = string(ca.Data[corev1.TLSCertKey])
		}
	}
	return tls, nil
}

// secretNameFor returns the secretName of the first spec.tls entry listing
// host.
func secretNameFor(ing *networkingv1.Ingress, host string) (string, bool) {
	for _, t := range ing.Spec.TLS {
		for _, h := range t.Hosts {
			if h == host {
				return t.SecretName, true
			}
		}
	}
	return "", false
}

// RouteName returns the name of the Route of an Ingress's host and path:
// the Ingress name (cut so that the whole fits 63 characters), "-" and five
// characters of the generateName alphabet derived from namespace, Ingress,
// host and path.
func RouteName(namespace, ingress, host, path string) string {
	base := ingress + "-"
	if len(base) > maxNameLength-suffixLength {
		base = base[:maxNameLength-suffixLength]
	}
	sum := sha256.Sum256([]byte(namespace + "\x00" + ingress + "\x00" + host + "\x00" + path))
	n := binary.BigEndian.Uint64(sum[:8])
	var b strings.Builder
	b.WriteString(base)
	for range suffixLength {
		b.WriteByte(nameAlphabet[n%uint64(len(nameAlphabet))])
		n /= uint64(len(nameAlphabet))
	}
	return b.String()
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
