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
