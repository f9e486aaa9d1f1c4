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
	if c.HTTPPort != 80 || c.HTTPSPort != 443 || c.ReloadInterval != 5*time.Second || !c.ExtendedValidation || c.WorkingDir != "/var/lib/haproxy" || c.MaxDynamicServers != 5 {
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
	if c, _ = FromEnv(env(map[string]string{"ROUTER_MAX_DYNAMIC_SERVERS": "0"})); c.MaxDynamicServers != 0 {
		t.Fatalf("ROUTER_MAX_DYNAMIC_SERVERS=0: %d", c.MaxDynamicServers)
	}
	if c, _ = FromEnv(env(map[string]string{"RELOAD_INTERVAL": "250ms"})); c.ReloadInterval != 250*time.Millisecond {
		t.Fatalf("duration form: %v", c.ReloadInterval)
	}
}

func TestMalformedValuesNameTheVariable(t *testing.T) {
	cases := map[string]string{
		"ROUTER_SERVICE_HTTP_PORT":         "http",
		"ROUTER_SERVICE_HTTPS_PORT":        "70000",
		"RELOAD_INTERVAL":                  "soon",
		"EXTENDED_VALIDATION":              "perhaps",
		"ROUTER_BACKEND_PROCESS_ENDPOINTS": "sort",
		"STATS_PORT":                       "1936x",
		"ROUTER_MAX_DYNAMIC_SERVERS":       "257",
	}
	for _, v := range []string{"-1", "five"} {
		if _, err := FromEnv(env(map[string]string{"ROUTER_MAX_DYNAMIC_SERVERS": v})); err == nil || !strings.Contains(err.Error(), "ROUTER_MAX_DYNAMIC_SERVERS") {
			t.Errorf("ROUTER_MAX_DYNAMIC_SERVERS=%q: error %v", v, err)
		}
	}
	for name, value := range cases {
		_, err := FromEnv(env(map[string]string{name: value}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v does not name the variable", name, value, err)
		}
	}
	if _, err := FromEnv(env(map[string]string{"ROUTER_SERVICE_HTTP_PORT": "443"})); err == nil {
		t.Error("equal HTTP and HTTPS ports accepted")
	}
}

func TestCheckConfigPath(t *testing.T) {
	for path, ok := range map[string]bool{"/var/lib/haproxy": true, "/tmp/rt-1_x.y": true, "/a b": false, "/a#b": false, "/a\nb": false, `/a"b`: false, "/a$HOME": false} {
		if err := CheckConfigPath(path); (err == nil) != ok {
			t.Errorf("CheckConfigPath(%q) = %v, want ok=%v", path, err, ok)
		}
	}
}
