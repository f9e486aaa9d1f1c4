package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

// rawHeaderBackend is an HTTP/1 backend on a raw TCP listener that answers
// every request with the header names exactly as they arrived on the wire
// (net/http would canonicalise them): "backend=NAME names=Host,user-agent,…".
// Its response carries the header "x-custom-header: from-backend" in lower
// case.
func rawHeaderBackend(t *testing.T, name string) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveRawHeaders(c, name)
		}
	}()
	addr := l.Addr().(*net.TCPAddr)
	return &backend{Name: name, IP: addr.IP.String(), Port: addr.Port}
}

func serveRawHeaders(c net.Conn, name string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if _, err := br.ReadString('\n'); err != nil { // request line
		return
	}
	var names []string
	for i := 0; i < 200; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, k)
		}
	}
	body := fmt.Sprintf("backend=%s names=%s\n", name, strings.Join(names, ","))
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nx-custom-header: from-backend\r\ncontent-type: text/plain\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s", len(body), body)
}

// rawExchange sends one raw HTTP/1.1 request for host to addr and returns
// the response's header lines (as received) and its body.
func rawExchange(addr, host string, extra ...string) ([]string, string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(8 * time.Second))
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\n"
	for _, h := range extra {
		req += h + "\r\n"
	}
	req += "Connection: close\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		return nil, "", err
	}
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		return nil, "", err
	}
	if !strings.Contains(status, " 200 ") {
		return nil, "", fmt.Errorf("status %q", strings.TrimSpace(status))
	}
	var hdr []string
	for i := 0; i < 200; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		hdr = append(hdr, line)
	}
	var body strings.Builder
	for i := 0; i < 100; i++ {
		line, err := br.ReadString('\n')
		body.WriteString(line)
		if err != nil {
			break
		}
	}
	return hdr, body.String(), nil
}

// TestAnnotationH1AdjustCase runs a router with ROUTER_H1_CASE_ADJUST and
// two routes to a backend that reports the header names as they arrived:
// only the route with h1-adjust-case=true gets X-Custom-Header back in the
// listed case (HAProxy lower-cases it otherwise), and the client gets the
// response header in the listed case (h1-case-adjust-bogus-client).
func TestAnnotationH1AdjustCase(t *testing.T) {
	be := rawHeaderBackend(t, "raw")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("h1", "raw", be))
	p := "haproxy.router.openshift.io/"
	m.Write("routes.yaml", strings.Join([]string{
		annotatedRouteYAML("h1", "adjust", "adjust.h1.test", "", "raw", "", map[string]string{p + "h1-adjust-case": "true"}),
		routeYAML("h1", "plain", "plain.h1.test", "", "raw", ""),
		annotatedRouteYAML("h1", "disabled", "disabled.h1.test", "", "raw", "", map[string]string{p + "h1-adjust-case": "false"}),
	}, "---\n"))
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_H1_CASE_ADJUST": "X-Custom-Header, X-Other"})
	addr := fmt.Sprintf("127.0.0.1:%d", r.HTTPPort)
	names := func(host string) (string, []string) {
		t.Helper()
		var body string
		var hdr []string
		eventually(t, loadTimeout, host+" served by the raw backend", func() error {
			var err error
			hdr, body, err = rawExchange(addr, host, "X-CUSTOM-HEADER: 1", "x-other: 2", "X-Unlisted: 3")
			if err != nil {
				return err
			}
			if !strings.Contains(body, "backend=raw ") {
				return fmt.Errorf("body %q", body)
			}
			return nil
		})
		_, list, _ := strings.Cut(strings.TrimSpace(body), "names=")
		return list, hdr
	}
	has := func(list, name string) bool {
		for _, n := range strings.Split(list, ",") {
			if n == name {
				return true
			}
		}
		return false
	}
	got, hdr := names("adjust.h1.test")
	if !has(got, "X-Custom-Header") || !has(got, "X-Other") || !has(got, "x-unlisted") {
		t.Errorf("annotated route: backend got header names %s, want X-Custom-Header, X-Other and x-unlisted", got)
	}
	if !contains(hdr, "X-Custom-Header: from-backend") {
		t.Errorf("response header not adjusted for the client: %q", hdr)
	}
	for _, host := range []string{"plain.h1.test", "disabled.h1.test"} {
		got, _ := names(host)
		if !has(got, "x-custom-header") || !has(got, "x-other") || has(got, "X-Custom-Header") {
			t.Errorf("%s (no h1-adjust-case): backend got header names %s, want HAProxy's lower case", host, got)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "\n  h1-case-adjust x-custom-header X-Custom-Header\n  h1-case-adjust x-other X-Other\n") {
		t.Errorf("haproxy.config lacks the h1-case-adjust rules")
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestAnnotationH1CaseAdjustInvalidStopsTheRouter: a header name with a
// character that is not an HTTP token stops the router with an error naming
// the variable.
func TestAnnotationH1CaseAdjustInvalidStopsTheRouter(t *testing.T) {
	m := newManifests(t)
	r := startRouter(t, m.Dir, map[string]string{"ROUTER_H1_CASE_ADJUST": "X-Ok,X-Bad Name\n  option x"})
	eventually(t, 10*time.Second, "router exits", func() error {
		if exited, _ := r.Exited(); !exited {
			return errors.New("still running")
		}
		return nil
	})
	if _, err := r.Exited(); err == nil || !strings.Contains(r.Log(), "ROUTER_H1_CASE_ADJUST") {
		t.Fatalf("want a non-zero exit naming ROUTER_H1_CASE_ADJUST, got %v: %s", err, r.Log())
	}
}

// TestAnnotationLongAllowlistFile: allowlists are written to
// WorkingDir/router/allowlists/<namespace:name>.txt (after a line naming
// the route) and read with "acl allowlist src -f" — long ones as in
// OpenShift, short ones too (so that a change is applied at runtime): a
// 100-entry list with 127.0.0.1 serves the test client, one without it
// drops the connection, a two-entry list with it serves it.
func TestAnnotationLongAllowlistFile(t *testing.T) {
	be := startBackend(t, "al")
	list := func(n int, extra ...string) []string {
		var out []string
		for i := 0; len(out)+len(extra) < n; i++ {
			out = append(out, fmt.Sprintf("10.3.%d.%d", i/200, i%200))
		}
		return append(out, extra...)
	}
	allowed := list(100, "127.0.0.0/30", "127.0.0.1")
	denied := list(100, "192.168.0.0/16")
	p := "haproxy.router.openshift.io/"
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("al", "web", be))
	m.Write("routes.yaml", strings.Join([]string{
		annotatedRouteYAML("al", "allowed", "allowed.al.test", "", "web", "", map[string]string{p + "ip_allowlist": strings.Join(allowed, " ")}),
		annotatedRouteYAML("al", "denied", "denied.al.test", "", "web", "", map[string]string{p + "ip_whitelist": strings.Join(denied, " ")}),
		annotatedRouteYAML("al", "short", "short.al.test", "", "web", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 127.0.0.1"}),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	get := func(host string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, "/") }
	}
	expectBackend(t, loadTimeout, get("allowed.al.test"), "al")
	expectBackend(t, loadTimeout, get("short.al.test"), "al")
	for i := 0; i < 3; i++ {
		if resp, err := r.httpGet("denied.al.test", "/"); err == nil {
			t.Fatalf("127.0.0.1 is not in the 100-entry list of denied.al.test, got %d from %q", resp.Status, resp.backend())
		}
	}
	dir := filepath.Join(r.WorkingDir, "router", "allowlists")
	for name, want := range map[string][]string{"al:allowed.txt": allowed, "al:denied.txt": denied, "al:short.txt": {"10.0.0.0/8", "127.0.0.1"}} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		header, list, _ := strings.Cut(string(data), "\n")
		if want := "# route al/" + strings.TrimSuffix(strings.TrimPrefix(name, "al:"), ".txt"); header != want {
			t.Errorf("%s starts with %q, want %q", name, header, want)
		}
		if got := strings.Split(strings.TrimSuffix(list, "\n"), "\n"); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(r.WorkingDir, "conf", "haproxy.config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"\n  acl allowlist src -f " + filepath.Join(dir, "al:allowed.txt") + "\n",
		"\n  acl allowlist src -f " + filepath.Join(dir, "al:denied.txt") + "\n",
		"\n  acl allowlist src -f " + filepath.Join(dir, "al:short.txt") + "\n",
	} {
		if !strings.Contains(string(cfg), w) {
			t.Errorf("haproxy.config lacks %q", w)
		}
	}
}

// TestAnnotationHSTSOnReencrypt: a re-encrypt route with hsts_header sends
// Strict-Transport-Security over TLS; one without the annotation does not.
func TestAnnotationHSTSOnReencrypt(t *testing.T) {
	backendCA, err := testcerts.NewCA("backend CA", time.Hour)
	must(t, err)
	backendCert, err := backendCA.Issue("backend", []string{"127.0.0.1"}, time.Hour)
	must(t, err)
	secure := startTLSBackend(t, "secure", backendCert.CertPEM, backendCert.KeyPEM)
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("hsts", "secure", secure))
	reenc := tlsYAML("reencrypt", "", map[string]string{"destinationCACertificate": backendCA.CertPEM})
	m.Write("routes.yaml", annotatedRouteYAML("hsts", "with", "with.hsts.test", "", "secure", reenc,
		map[string]string{"haproxy.router.openshift.io/hsts_header": "max-age=600; includeSubDomains"})+"---\n"+
		routeYAML("hsts", "without", "without.hsts.test", "", "secure", reenc))
	r := startRouter(t, m.Dir, nil)
	with := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("with.hsts.test", "/") }, "secure")
	if got := with.Header.Get("Strict-Transport-Security"); got != "max-age=600;includeSubDomains" {
		t.Errorf("re-encrypt route with hsts_header: Strict-Transport-Security %q, want max-age=600;includeSubDomains", got)
	}
	if !strings.Contains(with.Body, "tls=true") {
		t.Errorf("the backend was not reached over TLS: %q", with.Body)
	}
	without := expectBackend(t, loadTimeout, func() (response, error) { return r.httpsGet("without.hsts.test", "/") }, "secure")
	if got := without.Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("re-encrypt route without hsts_header: Strict-Transport-Security %q", got)
	}
}

// upgradeBackend answers every request with a WebSocket 101 Switching
// Protocols (the RFC 6455 sample key's accept value) and
// then keeps the connection open without sending anything, until the peer
// closes it (or 60 s pass).
func upgradeBackend(t *testing.T, name string) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(60 * time.Second))
				br := bufio.NewReader(c)
				for i := 0; i < 200; i++ {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.TrimRight(line, "\r\n") == "" {
						break
					}
				}
				if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"); err != nil {
					return
				}
				io.Copy(io.Discard, br) // idle until the router closes
			}()
		}
	}()
	addr := l.Addr().(*net.TCPAddr)
	return &backend{Name: name, IP: addr.IP.String(), Port: addr.Port}
}

// openTunnel sends an Upgrade request for host through the router, checks
// the 101 answer and returns how long the idle tunnel stayed open (at
// most limit).
func openTunnel(addr, host string, limit time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+host+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); err != nil {
		return 0, err
	}
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.Contains(status, " 101 ") {
		return 0, fmt.Errorf("status %q", strings.TrimSpace(status))
	}
	for i := 0; i < 200; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if strings.TrimRight(line, "\r\n") == "" {
			break
		}
	}
	start := time.Now()
	c.SetDeadline(start.Add(limit))
	_, err = br.ReadByte()
	d := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return limit, nil
	}
	if err == nil {
		return d, fmt.Errorf("the idle tunnel carried data")
	}
	return d, nil
}

// TestAnnotationTimeoutTunnel: an upgraded (WebSocket-like) connection that
// stays idle is closed by the router after the route's timeout-tunnel; a
// route without it keeps the tunnel open (ROUTER_DEFAULT_TUNNEL_TIMEOUT,
// 1 h).
func TestAnnotationTimeoutTunnel(t *testing.T) {
	be := upgradeBackend(t, "ws")
	m := newManifests(t)
	m.Write("svc.yaml", serviceYAML("tun", "ws", be))
	m.Write("routes.yaml", annotatedRouteYAML("tun", "short", "short.tun.test", "", "ws", "",
		map[string]string{"haproxy.router.openshift.io/timeout-tunnel": "2s"})+"---\n"+
		routeYAML("tun", "default", "default.tun.test", "", "ws", ""))
	r := startRouter(t, m.Dir, nil)
	addr := fmt.Sprintf("127.0.0.1:%d", r.HTTPPort)
	var short time.Duration
	eventually(t, loadTimeout, "short.tun.test upgraded", func() error {
		var err error
		short, err = openTunnel(addr, "short.tun.test", 20*time.Second)
		return err
	})
	if short < 1500*time.Millisecond || short > 10*time.Second {
		t.Errorf("tunnel with timeout-tunnel=2s closed after %v, want about 2s", short)
	}
	var long time.Duration
	eventually(t, loadTimeout, "default.tun.test upgraded", func() error {
		var err error
		long, err = openTunnel(addr, "default.tun.test", 8*time.Second)
		return err
	})
	if long < 8*time.Second {
		t.Errorf("tunnel without timeout-tunnel closed after %v, want it open for 8s (default 1h)", long)
	}
}
