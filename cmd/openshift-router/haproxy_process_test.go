package main

import (
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/config"
)

// TestEmbeddedHAProxyTakesItsReloadAndStopBoundsFromTheEnvironment: the
// HAProxy the router runs waits MAX_RELOAD_WAIT_TIME for a reload and gives
// its soft stop ROUTER_MAX_SHUTDOWN_TIMEOUT, and the router's own wait at
// exit covers that soft stop and the hard steps after it.
func TestEmbeddedHAProxyTakesItsReloadAndStopBoundsFromTheEnvironment(t *testing.T) {
	tests := []struct {
		env                  map[string]string
		wantReload, wantStop time.Duration
		wantBound            time.Duration
	}{
		{env: nil, wantReload: 30 * time.Second, wantStop: 30 * time.Second, wantBound: 45 * time.Second},
		{env: map[string]string{"MAX_RELOAD_WAIT_TIME": "3"}, wantReload: 3 * time.Second, wantStop: 3 * time.Second, wantBound: 18 * time.Second},
		{env: map[string]string{"MAX_RELOAD_WAIT_TIME": "60", "ROUTER_MAX_SHUTDOWN_TIMEOUT": "120"}, wantReload: time.Minute, wantStop: 2 * time.Minute, wantBound: 135 * time.Second},
		// 0: OpenShift's script checks once and stops hard at once.
		{env: map[string]string{"MAX_RELOAD_WAIT_TIME": "0"}, wantReload: time.Second, wantStop: time.Nanosecond, wantBound: 15 * time.Second},
	}
	for _, tc := range tests {
		cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		o := embeddedOptions(cfg, "haproxy", "/w/conf/haproxy.config", "/w/run", logr.Discard())
		if o.ReloadTimeout != tc.wantReload || o.StopTimeout != tc.wantStop {
			t.Errorf("%v: reload timeout %v, stop timeout %v; want %v, %v", tc.env, o.ReloadTimeout, o.StopTimeout, tc.wantReload, tc.wantStop)
		}
		if b := stopBound(cfg); b != tc.wantBound {
			t.Errorf("%v: stop bound %v, want %v", tc.env, b, tc.wantBound)
		}
	}
}
