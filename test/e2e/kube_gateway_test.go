package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/router/deploy"
	"github.com/openshift-router-go/router/test/kubetest"
	"github.com/openshift-router-go/router/test/testcerts"
)

// conditionsOf describes conditions as "Type=Status/Reason" words, each
// with its observedGeneration checked against generation ("stale" if not).
func conditionsOf(cs []metav1.Condition, generation int64) string {
	var out []string
	for _, c := range cs {
		s := fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
		if c.ObservedGeneration != generation {
			s += "(stale)"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestKubeHTTPRouteServedWithStatus: against a real API server with the
// Gateway API's CRDs, the router serves an HTTPRoute attached to a Gateway
// of its class and writes the status the spec asks for — the GatewayClass
// Accepted; the Gateway Accepted and Programmed with the canonical hostname
// as its address, each listener's conditions and attached routes; the
// HTTPRoute's parent entry Accepted and ResolvedRefs, PartiallyInvalid while
// an older Route of another namespace holds one of its hostnames, which it
// gets once that Route goes — every condition at the object's generation,
// another controller's entry untouched.
func TestKubeHTTPRouteServedWithStatus(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithGatewayCRDs("standard"))
	gc := gatewayclient.NewForConfigOrDie(c.RESTConfig)
	net := kubetest.NewNetNS(t)
	b1 := net.StartBackend(t, net.IP(), 8080, "pod-1")
	b2 := net.StartBackend(t, net.AddAddress(t), 8080, "pod-2")
	infra, app, legacy := c.CreateNamespace(t, "infra", nil).Name, c.CreateNamespace(t, "app", nil).Name, c.CreateNamespace(t, "legacy", nil).Name
	kubeService(t, c, app, "web", b1)
	kubeService(t, c, legacy, "old", b2)
	old := kubeRoute(t, c, legacy, "old", "taken.example.com", "old", nil)
	// Creation timestamps have a one-second resolution.
	time.Sleep(time.Until(old.CreationTimestamp.Add(1100 * time.Millisecond)))

	class, err := gc.GatewayV1().GatewayClasses().Create(kctx(t), &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "haproxy"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "haproxy.router.openshift.io/gateway-controller"}}, metav1.CreateOptions{})
	must(t, err)
	all := gatewayv1.NamespacesFromAll
	gw, err := gc.GatewayV1().Gateways(infra).Create(kctx(t), &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "haproxy", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}},
			{Name: "alt", Port: 8080, Protocol: gatewayv1.HTTPProtocolType},
		}}}, metav1.CreateOptions{})
	must(t, err)
	hr, err := gc.GatewayV1().HTTPRoutes(app).Create(kctx(t), &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: ptr.To(gatewayv1.Namespace(infra))}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com", "taken.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptr.To[gatewayv1.PortNumber](80)}}}}}},
		}}, metav1.CreateOptions{})
	must(t, err)

	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_CANONICAL_HOSTNAME": "router.apps.example.com"})
	get := func(host string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, "/") }
	}
	expectBackend(t, loadTimeout, get("shop.example.com"), "pod-1")
	expectBackend(t, loadTimeout, get("taken.example.com"), "pod-2")

	eventually(t, 30*time.Second, "GatewayClass accepted", func() error {
		got, err := gc.GatewayV1().GatewayClasses().Get(kctx(t), "haproxy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := conditionsOf(got.Status.Conditions, class.Generation); s != "Accepted=True/Accepted" {
			return fmt.Errorf("conditions %s", s)
		}
		return nil
	})
	eventually(t, 30*time.Second, "Gateway status", func() error {
		got, err := gc.GatewayV1().Gateways(infra).Get(kctx(t), "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := got.Status
		var listeners []string
		for _, l := range st.Listeners {
			listeners = append(listeners, fmt.Sprintf("%s %d %s", l.Name, l.AttachedRoutes, conditionsOf(l.Conditions, gw.Generation)))
		}
		want := []string{
			"http 1 Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
			"alt 0 Accepted=False/PortUnavailable Programmed=False/Invalid ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts",
		}
		if s := conditionsOf(st.Conditions, gw.Generation); s != "Accepted=True/ListenersNotValid Programmed=True/Programmed" ||
			len(st.Addresses) != 1 || st.Addresses[0].Value != "router.apps.example.com" || st.Addresses[0].Type == nil ||
			*st.Addresses[0].Type != gatewayv1.HostnameAddressType || strings.Join(listeners, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("conditions %s, addresses %+v, listeners\n%s", s, st.Addresses, strings.Join(listeners, "\n"))
		}
		return nil
	})
	parent := func(want string, message string) func() error {
		return func() error {
			got, err := gc.GatewayV1().HTTPRoutes(app).Get(kctx(t), "shop", metav1.GetOptions{})
			if err != nil {
				return err
			}
			var ours []string
			var messages []string
			for _, p := range got.Status.Parents {
				if p.ControllerName == "haproxy.router.openshift.io/gateway-controller" {
					ours = append(ours, conditionsOf(p.Conditions, got.Generation))
					for _, c := range p.Conditions {
						messages = append(messages, c.Message)
					}
				}
			}
			if strings.Join(ours, "|") != want || !strings.Contains(strings.Join(messages, "|"), message) {
				return fmt.Errorf("entries %q (%q), want %q saying %q", ours, messages, want, message)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, "HTTPRoute partially invalid", parent(
		"Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue", "hostname taken.example.com, rule 0, match 0: HostAlreadyClaimed"))
	ingressOf(t, c, legacy, "old", "public", admitted(corev1.ConditionTrue, ""))

	// Another controller's entry stays through the router's writes.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := gc.GatewayV1().HTTPRoutes(app).Get(kctx(t), "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Parents = append(cur.Status.Parents, gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "elsewhere"},
			ControllerName: "example.com/other", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue,
				Reason: "Accepted", LastTransitionTime: metav1.Now(), ObservedGeneration: cur.Generation}}})
		_, err = gc.GatewayV1().HTTPRoutes(app).UpdateStatus(kctx(t), cur, metav1.UpdateOptions{})
		return err
	}))
	must(t, c.Routes.RouteV1().Routes(legacy).Delete(kctx(t), "old", metav1.DeleteOptions{}))
	expectBackend(t, loadTimeout, get("taken.example.com"), "pod-1")
	eventually(t, 30*time.Second, "HTTPRoute accepted in full", parent("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs", ""))
	got, err := gc.GatewayV1().HTTPRoutes(app).Get(kctx(t), "shop", metav1.GetOptions{})
	must(t, err)
	others := 0
	for _, p := range got.Status.Parents {
		if p.ControllerName == "example.com/other" {
			others++
		}
	}
	if others != 1 || hr.Generation != got.Generation {
		t.Errorf("another controller's entries: %d, want 1 (parents %+v)", others, got.Status.Parents)
	}
}

// TestKubeHTTPSListenerSecretNeedsTheRoutersAccess: the router, bound to
// adm router's ClusterRole (no access to secrets), serves an HTTPS
// listener whose Secret the Gateway's owner let it read (a Role naming
// that Secret) with that Secret's certificate, and reports the listener
// whose Secret it may not read as not programmed (ResolvedRefs=False,
// InvalidCertificateRef), saying why in its log.
func TestKubeHTTPSListenerSecretNeedsTheRoutersAccess(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithGatewayCRDs("standard"))
	gc := gatewayclient.NewForConfigOrDie(c.RESTConfig)
	net := kubetest.NewNetNS(t)
	b1 := net.StartBackend(t, net.IP(), 8080, "pod-1")
	infra, app := c.CreateNamespace(t, "infra", nil).Name, c.CreateNamespace(t, "app", nil).Name
	kubeService(t, c, app, "web", b1)
	ca, err := testcerts.NewCA("gateway CA", time.Hour)
	must(t, err)
	for _, s := range []struct{ name, host string }{{"granted", "ok.example.com"}, {"refused", "no.example.com"}} {
		pair, err := ca.Issue(s.host, []string{s.host}, time.Hour)
		must(t, err)
		_, err = c.Kube.CoreV1().Secrets(infra).Create(kctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte(pair.CertPEM), "tls.key": []byte(pair.KeyPEM)}}, metav1.CreateOptions{})
		must(t, err)
	}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "gw-router"}
	grant(t, c, "", "gw-router", deploy.ClusterRoleRules(), user)
	grant(t, c, infra, "gw-router-secret", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"get", "list", "watch"}, ResourceNames: []string{"granted"}}}, user)
	// The router decides at start whether it may read these: wait until
	// the API server's authorizer sees the bindings.
	c.WaitAllowed(t, "gw-router", authzv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses", Verb: "list"})
	c.WaitAllowed(t, "gw-router", authzv1.ResourceAttributes{Namespace: infra, Resource: "secrets", Name: "granted", Verb: "watch"})

	_, err = gc.GatewayV1().GatewayClasses().Create(kctx(t), &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "haproxy"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "haproxy.router.openshift.io/gateway-controller"}}, metav1.CreateOptions{})
	must(t, err)
	all := gatewayv1.NamespacesFromAll
	listener := func(name, host, secret string) gatewayv1.Listener {
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
			Hostname:      ptr.To(gatewayv1.Hostname(host)),
			TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}},
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}}}
	}
	gw, err := gc.GatewayV1().Gateways(infra).Create(kctx(t), &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "haproxy", Listeners: []gatewayv1.Listener{
			listener("ok", "ok.example.com", "granted"), listener("no", "no.example.com", "refused")}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = gc.GatewayV1().HTTPRoutes(app).Create(kctx(t), &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: ptr.To(gatewayv1.Namespace(infra))}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptr.To[gatewayv1.PortNumber](80)}}}}}},
		}}, metav1.CreateOptions{})
	must(t, err)

	r := startKubeRouter(t, impersonatingKubeconfig(t, c, "gw-router"), nil)
	resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("ok.example.com", "/") }, "pod-1")
	if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "ok.example.com" {
		t.Errorf("the client saw %v, want the granted Secret's certificate", subject(resp))
	}
	eventually(t, 30*time.Second, "listener status", func() error {
		got, err := gc.GatewayV1().Gateways(infra).Get(kctx(t), "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var ls []string
		for _, l := range got.Status.Listeners {
			ls = append(ls, fmt.Sprintf("%s %d %s", l.Name, l.AttachedRoutes, conditionsOf(l.Conditions[:3], gw.Generation)))
		}
		// The route attaches to the listener without its Secret too
		// (attachedRoutes counts it), which serves nothing.
		want := "ok 1 Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs|" +
			"no 1 Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/InvalidCertificateRef"
		if strings.Join(ls, "|") != want {
			return fmt.Errorf("listeners %q, want %q", ls, want)
		}
		return nil
	})
	expectLogLine(t, r, "the router may not read a Secret", `secret="`+infra+`/refused"`)
	expectStatus(t, 5*time.Second, func() (response, error) { return r.httpGet("no.example.com", "/") }, 503)
}

// TestKubeTLSRouteServedWithStatus: against a real API server, a TLSRoute
// on a TLS listener (Passthrough) of the router's Gateway takes the TLS
// connections of its hostname to its backend unterminated, and the router
// writes its parent entry — Accepted and ResolvedRefs; NotAllowedByListeners
// for a TLSRoute on an HTTP listener; ResolvedRefs=False, BackendNotFound
// for one whose Service is missing — and counts the TLS listener's attached
// routes.
func TestKubeTLSRouteServedWithStatus(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithGatewayCRDs("standard"))
	gc := gatewayclient.NewForConfigOrDie(c.RESTConfig)
	net := kubetest.NewNetNS(t)
	ca, err := testcerts.NewCA("tlsroute CA", time.Hour)
	must(t, err)
	pair, err := ca.Issue("db backend", []string{"db.tls.example.com"}, time.Hour)
	must(t, err)
	b := net.StartTLSBackend(t, net.IP(), 8443, "pod-tls", pair.CertPEM, pair.KeyPEM)
	app := c.CreateNamespace(t, "app", nil).Name
	kubeService(t, c, app, "db", b)
	_, err = gc.GatewayV1().GatewayClasses().Create(kctx(t), &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "haproxy"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "haproxy.router.openshift.io/gateway-controller"}}, metav1.CreateOptions{})
	must(t, err)
	passthrough := gatewayv1.TLSModePassthrough
	gw, err := gc.GatewayV1().Gateways(app).Create(kctx(t), &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "haproxy", Listeners: []gatewayv1.Listener{
			{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, Hostname: ptr.To[gatewayv1.Hostname]("*.tls.example.com"),
				TLS: &gatewayv1.ListenerTLSConfig{Mode: &passthrough}},
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		}}}, metav1.CreateOptions{})
	must(t, err)
	tlsRoute := func(name, section, svc string) *gatewayv1.TLSRoute {
		ref := gatewayv1.ParentReference{Name: "gw"}
		if section != "" {
			ref.SectionName = ptr.To(gatewayv1.SectionName(section))
		}
		tr, err := gc.GatewayV1().TLSRoutes(app).Create(kctx(t), &gatewayv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ref}},
				Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(name + ".tls.example.com")},
				Rules: []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
					BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc), Port: ptr.To[gatewayv1.PortNumber](80)}}}}}},
		}, metav1.CreateOptions{})
		must(t, err)
		return tr
	}
	routes := map[string]*gatewayv1.TLSRoute{"db": tlsRoute("db", "", "db"), "wrong": tlsRoute("wrong", "http", "db"), "missing": tlsRoute("missing", "tls", "nosuch")}

	r := startKubeRouter(t, c.KubeconfigPath, nil)
	resp := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("db.tls.example.com", "/") }, "pod-tls")
	if resp.PeerCert == nil || resp.PeerCert.Subject.CommonName != "db backend" {
		t.Errorf("the client saw %v, want the backend's own certificate", subject(resp))
	}
	for name, want := range map[string]string{
		"db":      "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs",
		"wrong":   "Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs",
		"missing": "Accepted=True/Accepted ResolvedRefs=False/BackendNotFound",
	} {
		eventually(t, 30*time.Second, "TLSRoute "+name+" status", func() error {
			got, err := gc.GatewayV1().TLSRoutes(app).Get(kctx(t), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var ours []string
			for _, p := range got.Status.Parents {
				if p.ControllerName == "haproxy.router.openshift.io/gateway-controller" {
					ours = append(ours, conditionsOf(p.Conditions, routes[name].Generation))
				}
			}
			if strings.Join(ours, "|") != want {
				return fmt.Errorf("entries %q, want %q", ours, want)
			}
			return nil
		})
	}
	eventually(t, 30*time.Second, "the TLS listener's status", func() error {
		got, err := gc.GatewayV1().Gateways(app).Get(kctx(t), "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, l := range got.Status.Listeners {
			if l.Name != "tls" {
				continue
			}
			s := conditionsOf(l.Conditions, gw.Generation)
			if l.AttachedRoutes != 2 || s != "Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs Conflicted=False/NoConflicts" ||
				len(l.SupportedKinds) != 1 || l.SupportedKinds[0].Kind != "TLSRoute" {
				return fmt.Errorf("attached %d, %s, kinds %v", l.AttachedRoutes, s, l.SupportedKinds)
			}
			return nil
		}
		return fmt.Errorf("no status of listener tls: %+v", got.Status.Listeners)
	})
}
