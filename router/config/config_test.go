package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPPort != 80 || c.HTTPSPort != 443 || c.ReloadInterval != 5*time.Second || !c.ExtendedValidation || c.WorkingDir != "/var/lib/haproxy" || c.MaxDynamicServers != 0 {
		t.Fatalf("defaults %+v", c)
	}
}

func TestValuesAreParsed(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"ROUTER_SERVICE_HTTP_PORT": "8080", "RELOAD_INTERVAL": "3", "EXTENDED_VALIDATION": "false", "ROUTER_BACKEND_PROCESS_ENDPOINTS": "shuffle"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPPort != 8080 || c.ReloadInterval != 3*time.Second || c.ExtendedValidation || c.BackendProcessEndpoints != "shuffle" {
		t.Fatalf("%+v", c)
	}
	if c, _ = FromEnv(env(map[string]string{"ROUTER_MAX_DYNAMIC_SERVERS": "3"})); c.MaxDynamicServers != 3 {
		t.Fatalf("ROUTER_MAX_DYNAMIC_SERVERS=3: %d", c.MaxDynamicServers)
	}
	if c, _ = FromEnv(env(map[string]string{"RELOAD_INTERVAL": "250ms"})); c.ReloadInterval != 250*time.Millisecond {
		t.Fatalf("duration form: %v", c.ReloadInterval)
	}
}

// mustWarn loads m, which must load, and checks that a warning names the
// variable and contains want; it returns the configuration (nil on failure).
func mustWarn(t *testing.T, m map[string]string, name, want string) *Config {
	t.Helper()
	c, err := FromEnv(env(m))
	if err != nil {
		t.Errorf("%v: refused (%v); OpenShift ignores the value, so must this router (with a warning)", m, err)
		return nil
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, name) && strings.Contains(w, want) && strings.Contains(w, "ignored") {
			return c
		}
	}
	t.Errorf("%v: no warning naming %s and %q: %q", m, name, want, c.Warnings)
	return nil
}

func TestMalformedValuesOpenShiftIgnoresAreWarningsAndDefaults(t *testing.T) {
	def, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, value, want string
		check             func(*Config) bool
	}{
		{"ROUTER_SERVICE_HTTP_PORT", "http", "port number", func(c *Config) bool { return c.HTTPPort == 80 }},
		{"ROUTER_SERVICE_HTTPS_PORT", "70000", "port number", func(c *Config) bool { return c.HTTPSPort == 443 }},
		{"RELOAD_INTERVAL", "soon", "duration", func(c *Config) bool { return c.ReloadInterval == 5*time.Second }},
		// Seconds beyond a time.Duration used to wrap around.
		{"RELOAD_INTERVAL", "99999999999", "duration", func(c *Config) bool { return c.ReloadInterval == 5*time.Second }},
		{"EXTENDED_VALIDATION", "perhaps", "true or false", func(c *Config) bool { return !c.ExtendedValidation }},
		{"ROUTER_BACKEND_PROCESS_ENDPOINTS", "sort", "shuffle", func(c *Config) bool { return c.BackendProcessEndpoints == "" }},
		{"ROUTER_MAX_DYNAMIC_SERVERS", "257", "whole number", func(c *Config) bool { return c.MaxDynamicServers == 0 }},
		{"ROUTER_MAX_DYNAMIC_SERVERS", "-1", "whole number", func(c *Config) bool { return c.MaxDynamicServers == 0 }},
		{"ROUTER_MAX_DYNAMIC_SERVERS", "five", "whole number", func(c *Config) bool { return c.MaxDynamicServers == 0 }},
		{"ROUTER_MAX_CONNECTIONS", "lots", "auto", func(c *Config) bool { return c.MaxConnections == 0 }},
		{"ROUTER_MAX_CONNECTIONS", "-5", "auto", func(c *Config) bool { return c.MaxConnections == 0 }},
	}
	for _, tc := range cases {
		if c := mustWarn(t, map[string]string{tc.name: tc.value}, tc.name, tc.want); c != nil && !tc.check(c) {
			t.Errorf("%s=%q: not the value OpenShift uses: %+v", tc.name, tc.value, c)
		}
	}
	if def.MaxConnections != 50000 {
		t.Errorf("ROUTER_MAX_CONNECTIONS default %d, OpenShift's is 50000", def.MaxConnections)
	}
}

func TestMaxConnections(t *testing.T) {
	for v, want := range map[string]int{"": 50000, "auto": 0, " 2000 ": 2000, "2000000": 2000000} {
		c, err := FromEnv(env(map[string]string{"ROUTER_MAX_CONNECTIONS": v}))
		if err != nil || c.MaxConnections != want || len(c.Warnings) != 0 {
			t.Errorf("ROUTER_MAX_CONNECTIONS=%q: %v, %d (want %d), warnings %q", v, err, c.MaxConnections, want, c.Warnings)
		}
	}
}

func TestValuesOpenShiftRefusesAreErrors(t *testing.T) {
	for name, value := range map[string]string{
		"ROUTER_SERVICE_HTTP_PORT":       "443", // equal to HTTPS: HAProxy could not bind both
		"ROUTER_CANONICAL_HOSTNAME":      "not a host",
		"ROUTE_LABELS":                   "a in (",
		"STATS_PORT":                     "1936x",
		"ROUTER_METRICS_HAPROXY_TIMEOUT": "99999999999", // seconds beyond a time.Duration
		"ROUTER_SERVICE_HTTPS_PORT":      "1936",        // HAProxy's stats listener's port without STATS_PORT
	} {
		if _, err := FromEnv(env(map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v does not name the variable", name, value, err)
		}
	}
}

func TestCheckConfigPath(t *testing.T) {
	for path, ok := range map[string]bool{"/var/lib/haproxy": true, "/tmp/rt-1_x.y": true, "/a b": false, "/a#b": false, "/a\nb": false, `/a"b`: false, "/a$HOME": false} {
		if err := CheckConfigPath(path); (err == nil) != ok {
			t.Errorf("CheckConfigPath(%q) = %v, want ok=%v", path, err, ok)
		}
	}
}

func TestAcceptedVariablesWithoutEffectAreNoticed(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"ROUTER_HAPROXY_CONFIG_MANAGER": "true", "COMMIT_INTERVAL": "1h", "ROUTER_BLUEPRINT_ROUTE_POOL_SIZE": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notices) != 3 || len(c.Warnings) != 0 || !strings.Contains(c.Notices[0], "ROUTER_HAPROXY_CONFIG_MANAGER") || !strings.Contains(c.Notices[0], "without reloads") {
		t.Fatalf("notices %q warnings %q", c.Notices, c.Warnings)
	}
}

// TestGatewayControllerName: ROUTER_GATEWAY_CONTROLLER_NAME (this router's
// own) defaults to haproxy.router.openshift.io/gateway-controller and must
// be a controller name the Gateway API accepts (a domain and a path).
func TestGatewayControllerName(t *testing.T) {
	for value, want := range map[string]string{
		"":                         DefaultGatewayControllerName,
		"example.com/gateway":      "example.com/gateway",
		"apps.example.com/a/b-c_d": "apps.example.com/a/b-c_d",
		"no-path":                  "",
		"Example.com/x":            "",
		"example.com/":             "",
		"example.com/" + strings.Repeat("x", 250): "",
	} {
		c, err := FromEnv(env(map[string]string{"ROUTER_GATEWAY_CONTROLLER_NAME": value}))
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), "ROUTER_GATEWAY_CONTROLLER_NAME")):
			t.Errorf("%q: error %v, want one naming the variable", value, err)
		case want != "" && (err != nil || c.Kube.GatewayControllerName != want):
			t.Errorf("%q: %v, %+v, want %q", value, err, c, want)
		}
	}
}

// TestGatewayDefaultCertificateFrom: ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM
// (this router's own) is empty by default, else a Gateway's namespace/name.
func TestGatewayDefaultCertificateFrom(t *testing.T) {
	for value, ok := range map[string]bool{
		"":                  true,
		"infra/gateway":     true,
		"infra/gw.example":  true,
		"gateway":           false,
		"Infra/gateway":     false,
		"infra/":            false,
		"infra/gw/listener": false,
		"/gateway":          false,
		"infra/gw name":     false,
	} {
		c, err := FromEnv(env(map[string]string{"ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM": value}))
		switch {
		case !ok && (err == nil || !strings.Contains(err.Error(), "ROUTER_GATEWAY_DEFAULT_CERTIFICATE_FROM")):
			t.Errorf("%q: error %v, want one naming the variable", value, err)
		case ok && (err != nil || c.Kube.GatewayDefaultCertificateFrom != value):
			t.Errorf("%q: %v, %q", value, err, c.Kube.GatewayDefaultCertificateFrom)
		}
	}
}

// TestGatewaySubdomain: ROUTER_GATEWAY_SUBDOMAIN (this router's own) is
// empty by default, else a host name template with ${name} and
// ${namespace}.
func TestGatewaySubdomain(t *testing.T) {
	for value, ok := range map[string]bool{
		"":                                     true,
		"${name}-${namespace}.gw.example.com":  true,
		"${name}.${namespace}.gw.example.com":  true,
		"${name}.gw.example.com":               false,
		"${name}-${namespace}.GW..example.com": false,
		"${name}-${namespace}-${other}.x.com":  false,
	} {
		c, err := FromEnv(env(map[string]string{"ROUTER_GATEWAY_SUBDOMAIN": value}))
		switch {
		case !ok && (err == nil || !strings.Contains(err.Error(), "ROUTER_GATEWAY_SUBDOMAIN")):
			t.Errorf("%q: error %v, want one naming the variable", value, err)
		case ok && (err != nil || c.Kube.GatewaySubdomain != value):
			t.Errorf("%q: %v, %q", value, err, c.Kube.GatewaySubdomain)
		}
	}
}
