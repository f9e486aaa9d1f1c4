package templates

import (
	"strings"
	"testing"
)

// TestStatsListenerPerMode renders the stats listener as OpenShift's
// template does for each stats port, credential and IP mode, and has
// haproxy -c check the result.
func TestStatsListenerPerMode(t *testing.T) {
	cases := []struct {
		name       string
		port       int
		user, pass string
		ipMode     string
		want       string // the listen stats section; "" means none
	}{
		{"metrics mode: no listener", -1, "u", "p", "v4", ""},
		{"no stats port: /healthz on 1936 only", 0, "u", "p", "v4",
			"listen stats from frontends\n  bind :1936\n  mode http\n  monitor-uri /healthz\n\n"},
		{"port without credentials: /healthz only", 1937, "", "", "v4",
			"listen stats from frontends\n  bind :1937\n  mode http\n  monitor-uri /healthz\n\n"},
		{"port with one credential: /healthz only", 1937, "u", "", "v4",
			"listen stats from frontends\n  bind :1937\n  mode http\n  monitor-uri /healthz\n\n"},
		{"port and credentials: the statistics page", 1937, "admin", "cGFzcw==", "v4",
			"listen stats from frontends\n  bind :1937\n  mode http\n  monitor-uri /healthz\n  stats enable\n  stats hide-version\n  stats realm Haproxy\\ Statistics\n  stats uri /\n  stats auth admin:cGFzcw==\n\n"},
		{"v6", 1937, "", "", "v6",
			"listen stats from frontends\n  bind :::1937 v6only\n  mode http\n  monitor-uri /healthz\n\n"},
		{"v4v6", 0, "", "", "v4v6",
			"listen stats from frontends\n  bind :1936\n  bind :::1936 v6only\n  mode http\n  monitor-uri /healthz\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			td := testData(t, shortDir(t))
			td.StatsPort, td.StatsUser, td.StatsPassword = tc.port, tc.user, tc.pass
			td.HAProxy.IPMode = tc.ipMode
			rendered := renderDefault(t, td, nil)
			cfg := rendered["conf/haproxy.config"]
			i := strings.Index(cfg, "listen stats")
			switch {
			case tc.want == "" && i >= 0:
				t.Fatalf("listen stats rendered in metrics mode:\n%s", cfg[i:])
			case tc.want != "" && i < 0:
				t.Fatalf("no listen stats:\n%s", cfg)
			case tc.want != "" && !strings.HasPrefix(cfg[i:], tc.want):
				t.Fatalf("listen stats:\n%s\nwant:\n%s", cfg[i:min(len(cfg), i+len(tc.want)+40)], tc.want)
			}
			if out, err := haproxyCheck(t, td, rendered); err != nil {
				t.Fatalf("haproxy -c: %v\n%s", err, out)
			}
		})
	}
}
