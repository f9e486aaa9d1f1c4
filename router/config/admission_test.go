package config

import (
	"reflect"
	"testing"
)

func TestAdmissionDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Admission, Admission{MaxConfigBytes: 8 << 20}) {
		t.Fatalf("defaults: %+v, want everything off, no domain lists and a 256 MiB configuration budget", c.Admission)
	}
}

func TestAdmissionValuesAreParsed(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"ROUTER_ALLOWED_DOMAINS":                   " openshift.org,kates.net , ,Example.COM.",
		"ROUTER_DENIED_DOMAINS":                    "ops.openshift.org, metrics.kates.net, ops.openshift.org",
		"ROUTER_ALLOW_WILDCARD_ROUTES":             "TRUE",
		"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK": "true",
		"ROUTER_MAX_CONFIG_BYTES":                  " 64Mi ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Admission{
		AllowedDomains:                 []string{"openshift.org", "kates.net", "example.com"},
		DeniedDomains:                  []string{"ops.openshift.org", "metrics.kates.net"},
		AllowWildcardRoutes:            true,
		DisableNamespaceOwnershipCheck: true,
		MaxConfigBytes:                 64 << 20,
	}
	if !reflect.DeepEqual(c.Admission, want) {
		t.Fatalf("got %+v, want %+v", c.Admission, want)
	}
}

func TestAdmissionMalformedValuesAreIgnoredWithAWarning(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"ROUTER_ALLOWED_DOMAINS", "example.com, bad domain.com", `"bad domain.com" is not a DNS domain`},
		{"ROUTER_DENIED_DOMAINS", "ok.com,under_score.com", `"under_score.com" is not a DNS domain`},
		{"ROUTER_DENIED_DOMAINS", "a\nb.com", `"a\nb.com"`},
		{"ROUTER_ALLOWED_DOMAINS", "*.example.com", `without "*."`},
		{"ROUTER_ALLOW_WILDCARD_ROUTES", "yes please", "want true or false"},
		{"ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", "maybe", "want true or false"},
		{"ROUTER_MAX_CONFIG_BYTES", "256MB", "want a whole number of bytes"},
		{"ROUTER_MAX_CONFIG_BYTES", "-1", "want a whole number of bytes"},
		{"ROUTER_MAX_CONFIG_BYTES", "99999999999Gi", "want a whole number of bytes"},
	}
	for _, c := range cases {
		cfg := mustWarn(t, map[string]string{c.name: c.value}, c.name, c.want)
		if cfg == nil {
			continue
		}
		for _, d := range append(cfg.Admission.AllowedDomains, cfg.Admission.DeniedDomains...) {
			if d != "example.com" && d != "ok.com" {
				t.Errorf("%s=%q: malformed entry %q kept", c.name, c.value, d)
			}
		}
		if cfg.Admission.AllowWildcardRoutes || cfg.Admission.DisableNamespaceOwnershipCheck {
			t.Errorf("%s=%q: a malformed boolean is not false", c.name, c.value)
		}
		if cfg.Admission.MaxConfigBytes != 8<<20 {
			t.Errorf("%s=%q: configuration budget %d, want the default", c.name, c.value, cfg.Admission.MaxConfigBytes)
		}
	}
}

func TestMaxConfigBytes(t *testing.T) {
	for v, want := range map[string]int{"0": 0, "1000": 1000, "16Ki": 16 << 10, "8Mi": 8 << 20, "2Gi": 2 << 30} {
		c, err := FromEnv(env(map[string]string{"ROUTER_MAX_CONFIG_BYTES": v}))
		if err != nil {
			t.Fatal(err)
		}
		if c.Admission.MaxConfigBytes != want || len(c.Warnings) > 0 {
			t.Errorf("ROUTER_MAX_CONFIG_BYTES=%q: %d (warnings %v), want %d", v, c.Admission.MaxConfigBytes, c.Warnings, want)
		}
	}
}
