package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRequestsAreCleanedAsOpenShiftCleansThem: every HTTP frontend does
// to a request what OpenShift's do before choosing a route: a request with
// an empty Content-Length is refused (CVE-2023-40225: HAProxy builds with
// the fix refuse it themselves, the frontends' rule covers the others) and
// never reaches a backend, a Proxy header is removed (httpoxy), and the
// Host is lowered (RFC 4343), so that a mixed-case host finds its route
// and the backend gets the host in lower case — over HTTP and over TLS
// terminated at the router.
func TestRequestsAreCleanedAsOpenShiftCleansThem(t *testing.T) {
	var hits atomic.Int64
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "host=%s proxy=[%s] xfh=[%s]\n", r.Host, r.Header.Get("Proxy"), r.Header.Get("X-Forwarded-Host"))
	}))
	be := newBackend(t, "clean", srv)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("cl", "web", be))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("cl", "plain", "plain.cl.example.com", "", "web", ""),
		routeYAML("cl", "edge", "edge.cl.example.com", "", "web", tlsYAML("edge", "", nil)),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	eventually(t, loadTimeout, "both routes", func() error {
		for _, tlsOn := range []bool{false, true} {
			host := map[bool]string{false: "plain.cl.example.com", true: "edge.cl.example.com"}[tlsOn]
			if resp, err := annRequest(r, tlsOn, host, "/", nil); err != nil || resp.Status != 200 {
				return fmt.Errorf("%s: %d %v", host, resp.Status, err)
			}
		}
		return nil
	})

	for _, c := range []struct {
		name  string
		tlsOn bool
		host  string
	}{
		{"HTTP", false, "Plain.CL.Example.COM"},
		{"HTTP, with the port", false, "PLAIN.cl.example.com:80"},
		{"TLS terminated at the router", true, "Edge.CL.example.com"},
	} {
		resp, err := annRequest(r, c.tlsOn, c.host, "/", http.Header{"Proxy": {"http://evil.example:3128"}})
		must(t, err)
		want := strings.ToLower(c.host)
		if resp.Status != 200 || !strings.Contains(resp.Body, "host="+want+" ") {
			t.Errorf("%s: Host %q: %d %q, want the route's backend to get %q", c.name, c.host, resp.Status, resp.Body, want)
		}
		if !strings.Contains(resp.Body, "proxy=[]") {
			t.Errorf("%s: the Proxy header reached the backend: %q", c.name, resp.Body)
		}
		if !strings.Contains(resp.Body, "xfh=["+want+"]") {
			t.Errorf("%s: X-Forwarded-Host not the lowered host: %q", c.name, resp.Body)
		}
	}

	// An empty Content-Length, sent as is. (HAProxy builds with the fix
	// answer 400 before any rule, as both here do: this checks the outcome;
	// the rule itself, for the others, is TestDefaultTemplateCleansRequestsInEveryHTTPFrontend's.)
	before := hits.Load()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTPPort), 5*time.Second)
	must(t, err)
	defer conn.Close()
	must(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: plain.cl.example.com\r\nContent-Length: \r\n\r\n")
	must(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	must(t, err)
	if !strings.HasPrefix(status, "HTTP/1.1 400 ") && !strings.HasPrefix(status, "HTTP/1.1 403 ") {
		t.Errorf("a request with an empty Content-Length: %q, want it refused (400 or 403)", strings.TrimSpace(status))
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("a request with an empty Content-Length reached the backend (%d requests)", n)
	}
}

// TestRedirectToHTTPSKeepsThePathWhateverTheRequestsForm: an edge route's
// insecureEdgeTerminationPolicy Redirect sends a plain HTTP request to
// https on its host with its path and query — also a request in absolute
// form ("GET http://host/path"), whose URI is whole (it used to be
// appended to the host: "https://hosthttp://host/path").
func TestRedirectToHTTPSKeepsThePathWhateverTheRequestsForm(t *testing.T) {
	be := startBackend(t, "rd")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("rd", "web", be))
	m.Write("route.yaml", routeYAML("rd", "edge", "edge.rd.example.com", "", "web", tlsYAML("edge", "Redirect", nil)))
	r := startRouter(t, m.Dir, nil)
	location := func(target string) (string, error) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTPPort), 5*time.Second)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return "", err
		}
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: edge.rd.example.com\r\nConnection: close\r\n\r\n", target); err != nil {
			return "", err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		return resp.Header.Get("Location"), nil
	}
	want := "https://edge.rd.example.com/p/q?x=1&y=2"
	eventually(t, loadTimeout, "the redirect", func() error {
		_, err := location("/p/q?x=1&y=2")
		return err
	})
	for _, target := range []string{"/p/q?x=1&y=2", "http://edge.rd.example.com/p/q?x=1&y=2"} {
		got, err := location(target)
		must(t, err)
		if got != want {
			t.Errorf("GET %s: Location %q, want %q", target, got, want)
		}
	}
}

// TestRouteLookupIgnoresTheHostsPort: the frontends find a route by the
// Host without its port, whatever the port, for exact hosts, paths (with
// their "/" boundary) and wildcard routes alike — the key is made from
// base, and a Host with a port takes the second lookup.
func TestRouteLookupIgnoresTheHostsPort(t *testing.T) {
	host, path, wild := startBackend(t, "host"), startBackend(t, "path"), startBackend(t, "wild")
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{serviceYAML("pl", "host", host), serviceYAML("pl", "path", path), serviceYAML("pl", "wild", wild)}, "---\n"))
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("pl", "host", "h.pl.example.com", "", "host", ""),
		routeYAML("pl", "path", "h.pl.example.com", "/p", "path", ""),
		wildcardYAML("pl", "wild", "any.w.pl.example.com", "/p", "wild", ""),
	}, "---\n"))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_ALLOW_WILDCARD_ROUTES": "true"})
	expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("h.pl.example.com", "/p") }, "path")
	for _, c := range []struct{ host, path, want string }{
		{"h.pl.example.com", "/p/x", "path"},
		{"h.pl.example.com:80", "/p/x", "path"},
		{"h.pl.example.com:8080", "/p", "path"},
		{"h.pl.example.com:8080", "/px", "host"},
		{"h.pl.example.com:80", "/", "host"},
		{"h.pl.example.com:80", "/x?q=/p", "host"},
		{"x.w.pl.example.com", "/p/y", "wild"},
		{"x.w.pl.example.com:80", "/p/y", "wild"},
		{"x.w.pl.example.com:80", "/q", ""},
		{"other.pl.example.com:80", "/p", ""},
	} {
		resp, err := r.httpGet(c.host, c.path)
		must(t, err)
		switch {
		case c.want == "" && resp.Status != 503:
			t.Errorf("%s%s: %d from %q, want 503", c.host, c.path, resp.Status, resp.backend())
		case c.want != "" && (resp.Status != 200 || resp.backend() != c.want):
			t.Errorf("%s%s: %d from %q, want %s", c.host, c.path, resp.Status, resp.backend(), c.want)
		}
	}
}
