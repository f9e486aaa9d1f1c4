package main

import (
	"context"
	"testing"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/pipeline"
	"github.com/openshift-router-go/router/router/store"
)

// TestOnlyTheEmbeddedHAProxyLoadsItsFirstConfigurationUnchecked: the
// embedded HAProxy's master keeps what it ran when it refuses a
// configuration, so the first one with routes is loaded without
// "haproxy -c"; with a reload script or a sidecar HAProxy every
// configuration is checked first.
func TestOnlyTheEmbeddedHAProxyLoadsItsFirstConfigurationUnchecked(t *testing.T) {
	tests := []struct {
		name          string
		script, admin string
		want          bool
	}{
		{"embedded HAProxy", "", "", true},
		{"RELOAD_SCRIPT", "/usr/bin/reload-haproxy", "", false},
		{"ROUTER_HAPROXY_ADMIN_UNIX_SOCKET (sidecar)", "", "/var/lib/haproxy/run/admin.sock", false},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the trimmer the options start ends at once
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{ReloadScript: tt.script}
			cfg.Process.HAProxyAdminSocket = tt.admin
			o := controllerOptions(ctx, cfg, pipeline.Inputs{}, store.New(), &source{name: "test"}, nil, "",
				layout.New(t.TempDir()), newRouterMetrics(), logr.Discard())
			if o.FirstLoadUnchecked != tt.want {
				t.Errorf("FirstLoadUnchecked = %v, want %v", o.FirstLoadUnchecked, tt.want)
			}
		})
	}
}
