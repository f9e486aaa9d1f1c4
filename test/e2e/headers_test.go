package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startHeaderBackend starts a backend that reports the request headers
// named in its body ("X-Name=value;") and sends response headers of its
// own that the router may overwrite or delete.
func startHeaderBackend(t *testing.T, name string) *backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Remove-Me", "backend")
		w.Header().Set("X-Resp-Both", "backend")
		w.Header().Set("X-Resp-Route", "backend")
		fmt.Fprintf(w, "backend=%s\n", name)
		for _, h := range []string{"X-Req-Host", "X-Quote", "X-Drop", "X-Wide", "X-Both", "X-Client"} {
			fmt.Fprintf(w, "%s=%s;\n", h, strings.Join(r.Header.Values(h), ","))
		}
	}))
	t.Cleanup(srv.Close)
	return newBackend(t, name, srv)
}

// headerRouteYAML is spec.httpHeaders with the given request and response
// actions (YAML list items, indented for their place).
func headerActionsYAML(request, response string) string {
	return "  httpHeaders:\n    actions:\n      request:\n" + request + "      response:\n" + response
}

func setAction(name, value string) string {
	return fmt.Sprintf("      - name: %s\n        action:\n          type: Set\n          set:\n            value: %q\n", name, value)
}

func deleteAction(name string) string {
	return fmt.Sprintf("      - name: %s\n        action:\n          type: Delete\n", name)
}

// getWithHeaders sends a plain HTTP request with extra request headers.
func (r *router) getWithHeaders(host string, hdr map[string]string) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", r.HTTPPort), nil)
	if err != nil {
		return nil, "", err
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String(), nil
}

func TestRouteHeaderActionsReachBackendAndClient(t *testing.T) {
	be := startHeaderBackend(t, "hdr")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("h", "hdr", be))
	request := setAction("X-Req-Host", "%[req.hdr(host),lower]") + setAction("X-Quote", `it's "quoted"`) +
		deleteAction("X-Drop") + setAction("X-Both", "route")
	respActions := setAction("X-Frame-Options", "DENY") + deleteAction("X-Remove-Me") + setAction("X-Resp-Both", "route") +
		setAction("X-Resp-Route", "route")
	m.Write("route.yaml", routeYAML("h", "actions", "actions.example.com", "", "hdr", headerActionsYAML(request, respActions)))
	// Rejected: a sample fetch the Route API does not allow, a reserved
	// header, a value that would end the line.
	m.Write("bad.yaml", routeYAML("h", "badfetch", "badfetch.example.com", "", "hdr",
		headerActionsYAML(setAction("X-Env", "%[env(HOME)]"), deleteAction("X-Other")))+"---\n"+
		routeYAML("h", "reserved", "reserved.example.com", "", "hdr", headerActionsYAML(deleteAction("X-Other"), deleteAction("Set-Cookie")))+"---\n"+
		routeYAML("h", "newline", "newline.example.com", "", "hdr", headerActionsYAML(setAction("X-A", "a\n  http-request deny"), deleteAction("X-Other"))))
	r := startRouter(t, m.Dir, map[string]string{
		// Router-wide actions (URL-escaped, as the ingress operator writes them).
		"ROUTER_HTTP_REQUEST_HEADERS":  "X-Wide:wide%20value:Set,X-Both:router:Set",
		"ROUTER_HTTP_RESPONSE_HEADERS": "X-Resp-Both:router:Set",
	})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("actions.example.com", "/") }, "hdr")

	resp, body, err := r.getWithHeaders("Actions.Example.com", map[string]string{"X-Drop": "client", "X-Both": "client", "X-Client": "kept"})
	must(t, err)
	for _, want := range []string{
		"X-Req-Host=actions.example.com;", // sample fetch evaluated
		`X-Quote=it's "quoted";`,          // quotes are text
		"X-Drop=;",                        // deleted
		"X-Wide=wide value;",              // router-wide
		"X-Both=route;",                   // the route's request action runs after the router-wide one
		"X-Client=kept;",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("backend saw no %q:\n%s", want, body)
		}
	}
	for h, want := range map[string]string{
		"X-Frame-Options": "DENY",
		"X-Remove-Me":     "",
		"X-Resp-Route":    "route",
		"X-Resp-Both":     "router", // the router-wide response action runs after the route's
	} {
		if got := strings.Join(resp.Header.Values(h), ","); got != want {
			t.Errorf("client got %s: %q, want %q", h, got, want)
		}
	}

	for _, host := range []string{"badfetch.example.com", "reserved.example.com", "newline.example.com"} {
		got, err := r.httpGet(host, "/")
		must(t, err)
		if got.Status != 503 {
			t.Errorf("%s: rejected route served: %d %q", host, got.Status, got.Body)
		}
	}
	eventually(t, 5*time.Second, "rejections logged with their reasons", func() error {
		log := r.Log()
		// In manifests mode the API server's rules refuse them before
		// admission (as the API server would); admission refuses the same
		// values in objects that reach it (router/admission tests).
		for _, want := range []string{`h/badfetch`, "Sample fetchers allowed are req.hdr", "set-cookie header may not be modified", `h/newline`} {
			if !strings.Contains(log, want) {
				return errString("log lacks " + want)
			}
		}
		return nil
	})
	config, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	must(t, err)
	for _, want := range []string{
		"  http-request set-header 'X-Req-Host' '%[req.hdr(host),lower]'\n",
		`  http-request set-header 'X-Quote' 'it'\''s "quoted"'` + "\n",
		"  http-request del-header 'X-Drop'\n",
		"  http-response del-header 'X-Remove-Me'\n",
	} {
		if !strings.Contains(string(config), want) {
			t.Errorf("haproxy.config lacks %q", want)
		}
	}
	if strings.Contains(string(config), "env(HOME)") || strings.Contains(string(config), "http-request deny\n") {
		t.Errorf("a rejected route's header action reached haproxy.config")
	}
}
