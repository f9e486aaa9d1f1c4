package hostname

import (
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostGeneration(t *testing.T) {
	r := func(host string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "Shop", Name: "web"}, Spec: routev1.RouteSpec{Host: host}}
	}
	sub := "${name}-${namespace}.apps.example.com"
	cases := []struct {
		name      string
		g         Generator
		host      string
		want      string
		generated bool
	}{
		{"no subdomain leaves an empty host", Generator{}, "", "", false},
		{"route without host gets one", Generator{Subdomain: sub}, "", "web-shop.apps.example.com", true},
		{"route with host keeps it", Generator{Subdomain: sub}, "www.example.com", "www.example.com", false},
		{"override replaces every host", Generator{Subdomain: sub, Override: true}, "www.example.com", "web-shop.apps.example.com", true},
		{"override domain matches subdomains", Generator{Subdomain: sub, OverrideDomains: []string{"old.com"}}, "a.old.com", "web-shop.apps.example.com", true},
		{"override domain matches itself", Generator{Subdomain: sub, OverrideDomains: []string{"old.com"}}, "old.com", "web-shop.apps.example.com", true},
		{"override domain is not a suffix match", Generator{Subdomain: sub, OverrideDomains: []string{"old.com"}}, "bold.com", "bold.com", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, gen := c.g.Host(r(c.host))
			if got != c.want || gen != c.generated {
				t.Fatalf("got %q/%v, want %q/%v", got, gen, c.want, c.generated)
			}
		})
	}
}

func TestApplyCopiesOnlyChangedRoutes(t *testing.T) {
	a := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "a"}}
	b := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "b"}, Spec: routev1.RouteSpec{Host: "b.example.com"}}
	out := Generator{Subdomain: "${name}.apps.test"}.Apply([]*routev1.Route{a, b})
	if out[0] == a || out[0].Spec.Host != "a.apps.test" || a.Spec.Host != "" {
		t.Fatalf("generated route not copied: %+v / original %+v", out[0].Spec, a.Spec)
	}
	if out[1] != b {
		t.Fatal("unchanged route copied")
	}
}

// TestSubdomainWithRouterDomain: spec.subdomain + ROUTER_DOMAIN gives the
// host of a route without spec.host, before ROUTER_SUBDOMAIN is considered
// (as OpenShift's router does).
func TestSubdomainWithRouterDomain(t *testing.T) {
	r := func(host, subdomain string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: routev1.RouteSpec{Host: host, Subdomain: subdomain}}
	}
	for _, c := range []struct {
		name      string
		g         Generator
		route     *routev1.Route
		want      string
		generated bool
	}{
		{"subdomain and domain", Generator{Domain: "apps.example.com"}, r("", "Shop"), "shop.apps.example.com", true},
		{"a host wins over the subdomain", Generator{Domain: "apps.example.com"}, r("www.example.com", "shop"), "www.example.com", false},
		{"no domain: no host", Generator{}, r("", "shop"), "", false},
		{"subdomain before ROUTER_SUBDOMAIN", Generator{Domain: "apps.example.com", Subdomain: "${name}-${namespace}.other.com"}, r("", "shop"), "shop.apps.example.com", true},
		{"override replaces even the subdomain host", Generator{Domain: "apps.example.com", Subdomain: "${name}-${namespace}.other.com", Override: true}, r("", "shop"), "web-shop.other.com", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, gen := c.g.Host(c.route)
			if got != c.want || gen != c.generated {
				t.Fatalf("got %q/%v, want %q/%v", got, gen, c.want, c.generated)
			}
		})
	}
}
