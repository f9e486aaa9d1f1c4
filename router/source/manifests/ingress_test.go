package manifests

import (
	"sort"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/openshift-router-go/router/router/ingress"
	"github.com/openshift-router-go/router/router/store"
)

// ingressRoutes returns "host+path" of the Routes owned by an Ingress.
func ingressRoutes(v store.View, namespace, name string) []string {
	var out []string
	for _, r := range v.Routes() {
		for _, o := range r.OwnerReferences {
			if r.Namespace == namespace && o.Kind == "Ingress" && o.Name == name && o.Controller != nil && *o.Controller {
				out = append(out, r.Spec.Host+r.Spec.Path)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestIngressesAreServedAsTheirRoutesAndFollowed(t *testing.T) {
	h := newHarness(t, map[string]string{"ingress.yaml": "ingress.yaml"})
	h.start()
	h.waitFor("the Ingress's Route is in the store", func(v store.View) bool {
		return strings.Join(ingressRoutes(v, "shop", "shop"), ",") == "shop.example.com/"
	})
	name := ingress.RouteName("shop", "shop", "shop.example.com", "/")
	_ = h.store.Read(func(v store.View) error {
		r := v.Route("shop", name)
		if r == nil {
			t.Fatalf("route shop/%s not in the store", name)
		}
		if r.Spec.TLS == nil || r.Spec.TLS.Termination != routev1.TLSTerminationEdge || r.Spec.TLS.Certificate != "CERT" || r.Spec.TLS.Key != "KEY" {
			t.Errorf("route TLS = %+v, want edge with the secret's certificate and key", r.Spec.TLS)
		}
		if r.Spec.Port == nil || r.Spec.Port.TargetPort != intstr.FromString("http") {
			t.Errorf("route port = %+v, want targetPort http", r.Spec.Port)
		}
		if r.Spec.To.Weight == nil || *r.Spec.To.Weight != 100 || r.Spec.WildcardPolicy != routev1.WildcardPolicyNone {
			t.Errorf("route not defaulted like the API server does: weight %v, wildcardPolicy %q", r.Spec.To.Weight, r.Spec.WildcardPolicy)
		}
		if r.UID == "" || r.ResourceVersion == "" || r.CreationTimestamp.IsZero() {
			t.Errorf("route lacks uid/resourceVersion/creationTimestamp: %+v", r.ObjectMeta)
		}
		return nil
	})
	if up, _ := h.rec.counts("Ingress/shop/shop"); up != 0 {
		t.Errorf("the Ingress itself was given to the sink %d times", up)
	}

	h.write("ingress.yaml", "ingress-path-added.yaml")
	h.waitFor("the added path's Route is in the store", func(v store.View) bool {
		return strings.Join(ingressRoutes(v, "shop", "shop"), ",") == "shop.example.com/,shop.example.com/api"
	})
	if up, del := h.rec.counts("Route/shop/" + name); up != 1 || del != 0 {
		t.Errorf("the unchanged Route was upserted %d and deleted %d times, want 1 and 0", up, del)
	}

	h.write("ingress.yaml", "ingress-other-class.yaml")
	h.waitFor("the Ingress of another class has no Route", func(v store.View) bool {
		return len(ingressRoutes(v, "shop", "shop")) == 0
	})
	if _, ok := h.logs.find("Ingress of another class, ignored", "shop/shop", "nginx"); !ok {
		t.Error("no log line telling the Ingress is of another class")
	}

	h.write("ingress.yaml", "ingress.yaml")
	h.waitFor("the Ingress's Route is back", func(v store.View) bool {
		return len(ingressRoutes(v, "shop", "shop")) == 1
	})
	h.remove("ingress.yaml")
	h.waitFor("the deleted Ingress's Routes are gone", func(v store.View) bool {
		return len(ingressRoutes(v, "shop", "shop")) == 0 && len(v.Routes()) == 0
	})
}

func TestUntranslatableIngressRulesAreLoggedAndOthersServed(t *testing.T) {
	h := newHarness(t, map[string]string{"bad.yaml": "ingress-bad.yaml"})
	h.start()
	h.waitFor("the translatable path's Route is in the store", func(v store.View) bool {
		return strings.Join(ingressRoutes(v, "shop", "broken"), ",") == "ok.example.com/ok"
	})
	for _, reason := range []string{
		`Invalid or missing TLS secret for rule host \"tls.example.com\" at index 0, path index 0`,
		`Backend service \"nosuch\" not found at index 1, path index 0`,
	} {
		if _, ok := h.logs.find("Incomplete ingress to route rules", "shop/broken", reason); !ok {
			t.Errorf("no log line naming the Ingress and the reason %s", reason)
		}
	}
	name := ingress.RouteName("shop", "taken", "taken.example.com", "/")
	_ = h.store.Read(func(v store.View) error {
		r := v.Route("shop", name)
		if r == nil || r.Spec.Host != "mine.example.com" || len(r.OwnerReferences) != 0 {
			t.Errorf("route shop/%s = %+v, want the Route of the files", name, r)
		}
		return nil
	})
	if _, ok := h.logs.find("shop/taken", "route name "+name+" taken by a Route of the manifests"); !ok {
		t.Error("no log line telling the generated Route's name is taken")
	}
}
