package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestManifestsAreValidatedAsTheAPIServerWould: in one file, a valid route
// is served while routes the API server would refuse (a 300-character name,
// a host with an underscore) are skipped with a log line naming the file,
// the line and the rule, and never reach haproxy.config; an invalid edit of
// the served route keeps its last good version, and a valid edit replaces
// it.
func TestManifestsAreValidatedAsTheAPIServerWould(t *testing.T) {
	be := startBackend(t, "web")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("v", "web", be))
	longName := strings.Repeat("r", 300)
	routes := func(goodHost string) string {
		return routeYAML("v", "good", goodHost, "", "web", "") + "---\n" +
			routeYAML("v", longName, "long.example.com", "", "web", "") + "---\n" +
			routeYAML("v", "underscore", "my_app.example.com", "", "web", "")
	}
	m.Write("routes.yaml", routes("good.example.com"))
	r := startRouter(t, m.Dir, nil)
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("good.example.com", "/") }, "web")

	file := filepath.Join(m.Dir, "routes.yaml")
	for _, want := range []string{
		file + `:12: route \"v/` + longName + `\": invalid: metadata.name: Invalid value: \"` + longName + `\": must be no more than 253 characters`,
		file + `:23: route \"v/underscore\": invalid: spec.host: Invalid value: \"my_app.example.com\": spec.host in body should match`,
	} {
		eventually(t, 5*time.Second, "invalid route logged with file, line and rule", func() error {
			if !strings.Contains(r.Log(), want) {
				return errString("log lacks " + want)
			}
			return nil
		})
	}
	resp, err := r.httpGet("long.example.com", "/")
	must(t, err)
	if resp.Status != 503 {
		t.Errorf("route with a 300-character name served: %d", resp.Status)
	}
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	for _, s := range []string{longName[:100], "underscore", "long.example.com"} {
		if strings.Contains(string(config), s) {
			t.Errorf("haproxy.config mentions %q of a refused route", s)
		}
	}

	t.Run("an invalid edit keeps the served version", func(t *testing.T) {
		m.Write("routes.yaml", routes("good_host.example.com"))
		eventually(t, 5*time.Second, "invalid edit logged", func() error {
			if !strings.Contains(r.Log(), `route \"v/good\": invalid: spec.host: Invalid value: \"good_host.example.com\"`) {
				return errString("no refusal of the edited route in the log")
			}
			return nil
		})
		time.Sleep(1500 * time.Millisecond) // RELOAD_INTERVAL=1s
		resp, err := r.httpGet("good.example.com", "/")
		must(t, err)
		if resp.Status != 200 || resp.backend() != "web" {
			t.Fatalf("last good version not served after an invalid edit: %d %q", resp.Status, resp.Body)
		}
	})
	t.Run("a valid edit replaces it", func(t *testing.T) {
		m.Write("routes.yaml", routes("better.example.com"))
		expectBackend(t, 3*time.Second, func() (response, error) { return r.httpGet("better.example.com", "/") }, "web")
		expectStatus(t, 3*time.Second, func() (response, error) { return r.httpGet("good.example.com", "/") }, 503)
	})
}
