package config

import (
	"strings"
	"testing"
	"time"
)

func TestGracefulShutdownDelayParsesLikeOpenShift(t *testing.T) {
	tests := []struct {
		name      string
		value     *string
		want      time.Duration
		wantWarns bool
	}{
		{name: "unset means 45s", want: 45 * time.Second},
		{name: "empty means 45s", value: delayValue(""), want: 45 * time.Second},
		{name: "go duration", value: delayValue("10s"), want: 10 * time.Second},
		{name: "compound duration", value: delayValue("1m30s"), want: 90 * time.Second},
		{name: "zero disables the delay", value: delayValue("0s"), want: 0},
		{name: "negative means no delay", value: delayValue("-5s"), want: 0},
		{name: "bare number is malformed: warning and default", value: delayValue("45"), want: 45 * time.Second, wantWarns: true},
		{name: "garbage is malformed: warning and default", value: delayValue("soon"), want: 45 * time.Second, wantWarns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			if tt.value != nil {
				m["ROUTER_GRACEFUL_SHUTDOWN_DELAY"] = *tt.value
			}
			c, err := FromEnv(env(m))
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if c.Process.GracefulShutdownDelay != tt.want {
				t.Errorf("delay = %v, want %v", c.Process.GracefulShutdownDelay, tt.want)
			}
			var warned []string
			for _, w := range c.Warnings {
				if strings.Contains(w, "ROUTER_GRACEFUL_SHUTDOWN_DELAY") {
					warned = append(warned, w)
				}
			}
			if tt.wantWarns != (len(warned) == 1) || len(warned) > 1 {
				t.Errorf("warnings about the variable = %q, want one: %v", warned, tt.wantWarns)
			}
			if tt.wantWarns && !strings.Contains(warned[0], "45s") {
				t.Errorf("warning %q does not name the default used", warned[0])
			}
		})
	}
}

func TestHAProxyAdminSocketSelectsSidecarMode(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Process.HAProxyAdminSocket != "" {
		t.Errorf("unset: admin socket %q, want empty (embedded HAProxy)", c.Process.HAProxyAdminSocket)
	}
	c, err = FromEnv(env(map[string]string{"ROUTER_HAPROXY_ADMIN_UNIX_SOCKET": "/var/lib/haproxy/run/admin.sock"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Process.HAProxyAdminSocket; got != "/var/lib/haproxy/run/admin.sock" {
		t.Errorf("admin socket = %q", got)
	}
}

func delayValue(s string) *string { return &s }

func TestReloadWaitAndShutdownTimeoutParseLikeOpenShiftsReloadScript(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantReload   time.Duration
		wantShutdown time.Duration
		wantWarned   []string
	}{
		{name: "unset: 30 s each", wantReload: 30 * time.Second, wantShutdown: 30 * time.Second},
		{name: "empty: the defaults", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "", "ROUTER_MAX_SHUTDOWN_TIMEOUT": ""},
			wantReload: 30 * time.Second, wantShutdown: 30 * time.Second},
		{name: "the shutdown timeout follows MAX_RELOAD_WAIT_TIME", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "5"},
			wantReload: 5 * time.Second, wantShutdown: 5 * time.Second},
		{name: "each set", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "12", "ROUTER_MAX_SHUTDOWN_TIMEOUT": "90"},
			wantReload: 12 * time.Second, wantShutdown: 90 * time.Second},
		{name: "zero is a number", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "0", "ROUTER_MAX_SHUTDOWN_TIMEOUT": "0"}},
		{name: "a duration is not seconds: warning and 30", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "5s"},
			wantReload: 30 * time.Second, wantShutdown: 30 * time.Second, wantWarned: []string{"MAX_RELOAD_WAIT_TIME"}},
		{name: "a bad shutdown timeout falls back to the reload wait", env: map[string]string{"MAX_RELOAD_WAIT_TIME": "4", "ROUTER_MAX_SHUTDOWN_TIMEOUT": "-1"},
			wantReload: 4 * time.Second, wantShutdown: 4 * time.Second, wantWarned: []string{"ROUTER_MAX_SHUTDOWN_TIMEOUT"}},
		{name: "both bad", env: map[string]string{"MAX_RELOAD_WAIT_TIME": " 7", "ROUTER_MAX_SHUTDOWN_TIMEOUT": "soon"},
			wantReload: 30 * time.Second, wantShutdown: 30 * time.Second, wantWarned: []string{"MAX_RELOAD_WAIT_TIME", "ROUTER_MAX_SHUTDOWN_TIMEOUT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if c.Process.MaxReloadWaitTime != tt.wantReload || c.Process.MaxShutdownTimeout != tt.wantShutdown {
				t.Errorf("reload wait %v, shutdown timeout %v; want %v, %v", c.Process.MaxReloadWaitTime, c.Process.MaxShutdownTimeout, tt.wantReload, tt.wantShutdown)
			}
			var warned []string
			for _, w := range c.Warnings {
				for _, name := range []string{"MAX_RELOAD_WAIT_TIME", "ROUTER_MAX_SHUTDOWN_TIMEOUT"} {
					if strings.HasPrefix(w, name+"=") {
						warned = append(warned, name)
					}
				}
			}
			if strings.Join(warned, ",") != strings.Join(tt.wantWarned, ",") {
				t.Errorf("warned about %v, want %v (warnings %q)", warned, tt.wantWarned, c.Warnings)
			}
		})
	}
}

func TestHAProxyMaxShutdownTimeoutIsAcceptedWithANotice(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"HAPROXY_MAX_SHUTDOWN_TIMEOUT": "45"}))
	if err != nil {
		t.Fatal(err)
	}
	var notice string
	for _, n := range c.Notices {
		if strings.HasPrefix(n, `HAPROXY_MAX_SHUTDOWN_TIMEOUT="45"`) {
			notice = n
		}
	}
	if !strings.Contains(notice, "ROUTER_MAX_SHUTDOWN_TIMEOUT") {
		t.Errorf("notices %q: none for HAPROXY_MAX_SHUTDOWN_TIMEOUT naming ROUTER_MAX_SHUTDOWN_TIMEOUT", c.Notices)
	}
	if c.Process.MaxShutdownTimeout != 30*time.Second {
		t.Errorf("shutdown timeout %v, want OpenShift's 30s", c.Process.MaxShutdownTimeout)
	}
}
