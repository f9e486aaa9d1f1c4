package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestAdmissionDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Admission, Admission{}) {
		t.Fatalf("defaults: %+v, want everything off and no domain lists", c.Admission)
	}
}

func TestAdmissionValuesAreParsed(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"ROUTER_ALLOWED_DOMAINS":                   " openshift.org,kates.net , ,Example.COM.",
		"ROUTER_DENIED_DOMAINS":                    "ops.openshift.org, metrics.kates.net, ops.openshift.org",
		"ROUTER_ALLOW_WILDCARD_ROUTES":             "TRUE",
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Admission{
		AllowedDomains:                 []string{"openshift.org", "kates.net", "example.com"},
		DeniedDomains:                  []string{"ops.openshift.org", "metrics.kates.net"},
		AllowWildcardRoutes:            true,
		DisableNamespaceOwnershipCheck: true,
	}
	if !reflect.DeepEqual(c.Admission, want) {
		t.Fatalf("got %+v, want %+v", c.Admission, want)
	}
}

func TestAdmissionMalformedValuesNameTheVariable(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"ROUTER_ALLOWED_DOMAINS", "example.com, bad domain.com", `"bad domain.com" is not a DNS domain`},
		{"ROUTER_DENIED_DOMAINS", "ok.com,under_score.com", `"under_score.com" is not a DNS domain`},
		{"ROUTER_DENIED_DOMAINS", "a\nb.com", `"a\nb.com"`},
		{"ROUTER_ALLOWED_DOMAINS", "*.example.com", `without "*."`},
		{"ROUTER_ALLOW_WILDCARD_ROUTES", "yes please", "want true or false"},
		{"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", "maybe", "want true or false"},
	}
	for _, c := range cases {
		_, err := FromEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: error %v, want one naming the variable and containing %q", c.name, c.value, err, c.want)
		}
	}
}
