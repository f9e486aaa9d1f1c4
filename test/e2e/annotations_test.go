package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// annotatedRouteYAML is routeYAML with metadata.annotations.
func annotatedRouteYAML(ns, name, host, path, service, extra string, ann map[string]string) string {
	y := routeYAML(ns, name, host, path, service, extra)
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("  annotations:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "    %s: %s\n", k, strconv.Quote(ann[k]))
	}
	marker := "  namespace: " + ns + "\n"
	return strings.Replace(y, marker, marker+b.String(), 1)
}

// annRequest sends a GET through the router with extra request headers
// (plain HTTP unless tlsOn).
func annRequest(r *router, tlsOn bool, host, path string, hdr http.Header) (response, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, path)
	var tlsConf *tls.Config
	if tlsOn {
		url = fmt.Sprintf("https://127.0.0.1:%d%s", r.HTTPSPort, path)
		tlsConf = &tls.Config{ServerName: host, InsecureSkipVerify: true}
	}
	tr := &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 8 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return response{}, err
	}
	req.Host = host
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: resp.StatusCode, Body: string(body), Header: resp.Header}, nil
}

// echoBackend names itself and echoes the forwarding headers it got.
func echoBackend(t *testing.T, name string) *backend {
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend=%s path=%s xff=[%s] xfh=[%s] forwarded=[%s]\n", name, r.URL.RequestURI(),
			strings.Join(r.Header.Values("X-Forwarded-For"), ","), r.Header.Get("X-Forwarded-Host"), r.Header.Get("Forwarded"))
	}))
	return newBackend(t, name, srv)
}

// slowBackend answers after delay and records the highest number of
// requests it served at once.
type slowBackend struct {
	*backend
	cur, max atomic.Int32
}

func startSlowBackend(t *testing.T, name string, delay time.Duration) *slowBackend {
	sb := &slowBackend{}
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := sb.cur.Add(1)
		defer sb.cur.Add(-1)
		for {
			m := sb.max.Load()
			if n <= m || sb.max.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "backend=%s path=%s\n", name, r.URL.RequestURI())
	}))
	sb.backend = newBackend(t, name, srv)
	return sb
}

// TestAnnotations runs one router with a route per annotation (and a route
// without any next to them) and checks each annotation's effect with real
// requests.
func TestAnnotations(t *testing.T) {
	ref := startBackend(t, "ref")
	a1, a2 := startBackend(t, "a1"), startBackend(t, "a2")
	echo := echoBackend(t, "echo")
	slow := startSlowBackend(t, "slow", 3*time.Second)
	queued := startSlowBackend(t, "queued", 500*time.Millisecond)
	concurrent := startSlowBackend(t, "concurrent", time.Second)

	edge := tlsYAML("edge", "Allow", nil)
	m := newManifests(t)
	m.Write("svc.yaml", strings.Join([]string{
		serviceYAML("ann", "ref", ref), serviceYAML("ann", "pair", a1, a2), serviceYAML("ann", "echo", echo),
		serviceYAML("ann", "slow", slow.backend), serviceYAML("ann", "queued", queued.backend),
		serviceYAML("ann", "concurrent", concurrent.backend),
	}, "---\n"))
	p := "haproxy.router.openshift.io/"
	m.Write("routes.yaml", strings.Join([]string{
		routeYAML("ann", "ref", "ref.example.com", "", "ref", ""),
		annotatedRouteYAML("ann", "timeout", "timeout.example.com", "", "slow", "", map[string]string{p + "timeout": "1s"}),
		routeYAML("ann", "no-timeout", "no-timeout.example.com", "", "slow", ""),
		annotatedRouteYAML("ann", "bad-timeout", "bad-timeout.example.com", "", "slow", "", map[string]string{p + "timeout": "1s\n  timeout server 1ms"}),
		annotatedRouteYAML("ann", "allowed", "allowed.example.com", "", "ref", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 127.0.0.1"}),
		annotatedRouteYAML("ann", "denied", "denied.example.com", "", "ref", "", map[string]string{p + "ip_whitelist": "10.0.0.0/8 192.168.0.0/16"}),
		annotatedRouteYAML("ann", "sub-ms-timeout", "sub-ms-timeout.example.com", "", "slow", "", map[string]string{p + "timeout": "500us"}),
		annotatedRouteYAML("ann", "bad-allowlist", "bad-allowlist.example.com", "", "ref", "", map[string]string{p + "ip_allowlist": "nonsense 10.0.0.300"}),
		annotatedRouteYAML("ann", "partial-allowlist", "partial-allowlist.example.com", "", "ref", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 nonsense"}),
		annotatedRouteYAML("ann", "partial-allowed", "partial-allowed.example.com", "", "ref", "", map[string]string{p + "ip_allowlist": "nonsense 127.0.0.1"}),
		annotatedRouteYAML("ann", "blank-allowlist", "blank-allowlist.example.com", "", "ref", "", map[string]string{p + "ip_allowlist": "10.0.0.0/8 "}),
		annotatedRouteYAML("ann", "hsts", "hsts.example.com", "", "ref", edge, map[string]string{p + "hsts_header": "max-age=31536000;includeSubDomains;preload"}),
		annotatedRouteYAML("ann", "hsts-plain", "hsts-plain.example.com", "", "ref", "", map[string]string{p + "hsts_header": "max-age=31536000"}),
		annotatedRouteYAML("ann", "sticky", "sticky.example.com", "", "pair", edge, map[string]string{
			"router.openshift.io/cookie_name": "my_cookie", "router.openshift.io/cookie-same-site": "Lax", p + "balance": "roundrobin"}),
		annotatedRouteYAML("ann", "nocookie", "nocookie.example.com", "", "pair", "", map[string]string{p + "disable_cookies": "true", p + "balance": "roundrobin"}),
		annotatedRouteYAML("ann", "source", "source.example.com", "", "pair", "", map[string]string{p + "disable_cookies": "true", p + "balance": "source"}),
		annotatedRouteYAML("ann", "rewrite", "rewrite.example.com", "/app", "echo", "", map[string]string{p + "rewrite-target": "/v2/"}),
		annotatedRouteYAML("ann", "rewrite-root", "rewrite.example.com", "/old", "echo", "", map[string]string{p + "rewrite-target": "/"}),
		routeYAML("ann", "fwd-default", "fwd-append.example.com", "", "echo", ""),
		annotatedRouteYAML("ann", "fwd-replace", "fwd-replace.example.com", "", "echo", "", map[string]string{p + "set-forwarded-headers": "replace"}),
		annotatedRouteYAML("ann", "fwd-never", "fwd-never.example.com", "", "echo", "", map[string]string{p + "set-forwarded-headers": "never"}),
		annotatedRouteYAML("ann", "fwd-if-none", "fwd-if-none.example.com", "", "echo", "", map[string]string{p + "set-forwarded-headers": "if-none"}),
		routeYAML("ann", "fwd-edge", "fwd-edge.example.com", "", "echo", edge),
		annotatedRouteYAML("ann", "fwd-edge-never", "fwd-edge-never.example.com", "", "echo", edge, map[string]string{p + "set-forwarded-headers": "never"}),
		annotatedRouteYAML("ann", "ratelimit", "ratelimit.example.com", "", "ref", "", map[string]string{
			p + "rate-limit-connections": "true", p + "rate-limit-connections.rate-http": "3"}),
		annotatedRouteYAML("ann", "ratelimit-tcp", "ratelimit-tcp.example.com", "", "ref", "", map[string]string{
			p + "rate-limit-connections": "true", p + "rate-limit-connections.rate-tcp": "3"}),
		annotatedRouteYAML("ann", "concurrent", "concurrent.example.com", "", "concurrent", "", map[string]string{
			p + "rate-limit-connections": "true", p + "rate-limit-connections.concurrent-tcp": "2"}),
		annotatedRouteYAML("ann", "maxconn", "maxconn.example.com", "", "queued", "", map[string]string{p + "pod-concurrent-connections": "1"}),
	}, "---\n"))
	r := startRouter(t, m.Dir, nil)
	get := func(host, path string) func() (response, error) {
		return func() (response, error) { return r.httpGet(host, path) }
	}
	expectBackend(t, loadTimeout, get("ref.example.com", "/"), "ref")
	// All routes are in the configuration that serves ref: wait until the
	// last one answers too.
	expectBackend(t, loadTimeout, get("nocookie.example.com", "/"), "a1")

	t.Run("timeout gives 504 from a slow backend, only on its route", func(t *testing.T) {
		var wg sync.WaitGroup
		results := map[string]response{}
		errs := map[string]error{}
		var mu sync.Mutex
		for _, h := range []string{"timeout.example.com", "no-timeout.example.com", "bad-timeout.example.com", "sub-ms-timeout.example.com"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := r.httpGet(h, "/")
				mu.Lock()
				results[h], errs[h] = resp, err
				mu.Unlock()
			}()
		}
		wg.Wait()
		if errs["timeout.example.com"] != nil || results["timeout.example.com"].Status != 504 {
			t.Errorf("timeout=1s: got %d %v, want 504", results["timeout.example.com"].Status, errs["timeout.example.com"])
		}
		// 500us is written as given and HAProxy rounds it up to 1ms; had
		// it become 0 (no timeout), the slow answer would come through.
		if errs["sub-ms-timeout.example.com"] != nil || results["sub-ms-timeout.example.com"].Status != 504 {
			t.Errorf("timeout=500us: got %d %v, want 504", results["sub-ms-timeout.example.com"].Status, errs["sub-ms-timeout.example.com"])
		}
		for _, h := range []string{"no-timeout.example.com", "bad-timeout.example.com"} {
			if errs[h] != nil || results[h].backend() != "slow" {
				t.Errorf("%s: got %d %v, want the slow answer (default timeout)", h, results[h].Status, errs[h])
			}
		}
	})

	t.Run("allowlist admits listed clients and drops others", func(t *testing.T) {
		expectBackend(t, loadTimeout, get("allowed.example.com", "/"), "ref")
		for i := 0; i < 3; i++ {
			if resp, err := r.httpGet("denied.example.com", "/"); err == nil {
				t.Fatalf("client 127.0.0.1 not in 10.0.0.0/8 192.168.0.0/16 got %d from %q", resp.Status, resp.backend())
			}
		}
		// A list without a valid entry is ignored: the route is served
		// without one.
		expectBackend(t, loadTimeout, get("bad-allowlist.example.com", "/"), "ref")
		// As OpenShift's parseIPList: invalid entries are dropped and the
		// others apply; a list with leading or trailing blanks is ignored
		// as a whole.
		expectBackend(t, loadTimeout, get("partial-allowed.example.com", "/"), "ref")
		expectBackend(t, loadTimeout, get("blank-allowlist.example.com", "/"), "ref")
		for i := 0; i < 3; i++ {
			if resp, err := r.httpGet("partial-allowlist.example.com", "/"); err == nil {
				t.Fatalf("client 127.0.0.1 not in the valid part 10.0.0.0/8 of \"10.0.0.0/8 nonsense\" got %d from %q", resp.Status, resp.backend())
			}
		}
		eventually(t, 5*time.Second, "the invalid allowlist logged", func() error {
			for _, l := range strings.Split(r.Log(), "\n") {
				if strings.Contains(l, "ignoring invalid route annotation") && strings.Contains(l, "bad-allowlist") && strings.Contains(l, "ip_allowlist") {
					return nil
				}
			}
			return errString("no log line for the ignored ip_allowlist of bad-allowlist")
		})
	})

	t.Run("hsts header only over TLS on edge routes", func(t *testing.T) {
		resp, err := annRequest(r, true, "hsts.example.com", "/", nil)
		if err != nil || resp.backend() != "ref" {
			t.Fatalf("https: %v %d", err, resp.Status)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000;includeSubDomains;preload" {
			t.Errorf("Strict-Transport-Security over TLS = %q", got)
		}
		for _, h := range []string{"hsts.example.com", "hsts-plain.example.com"} {
			resp, err := annRequest(r, false, h, "/", nil)
			if err != nil || resp.backend() != "ref" {
				t.Fatalf("%s over http: %v %d", h, err, resp.Status)
			}
			if got := resp.Header.Get("Strict-Transport-Security"); got != "" {
				t.Errorf("%s over plain HTTP sent Strict-Transport-Security %q", h, got)
			}
		}
	})

	t.Run("cookie name, SameSite and stickiness; none with disable_cookies", func(t *testing.T) {
		resp, err := annRequest(r, true, "sticky.example.com", "/", nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := resp.Header.Get("Set-Cookie")
		if !strings.HasPrefix(sc, "my_cookie=") || !strings.Contains(sc, "SameSite=Lax") || !strings.Contains(sc, "Secure") {
			t.Fatalf("Set-Cookie = %q, want my_cookie=...; Secure; SameSite=Lax", sc)
		}
		first := resp.backend()
		cookie := http.Header{"Cookie": {strings.SplitN(sc, ";", 2)[0]}}
		for i := 0; i < 6; i++ {
			resp, err := annRequest(r, true, "sticky.example.com", "/", cookie)
			if err != nil || resp.backend() != first {
				t.Fatalf("request %d with the cookie went to %q (%v), want %q", i, resp.backend(), err, first)
			}
		}
		seen := map[string]bool{}
		for i := 0; i < 6; i++ {
			resp, err := r.httpGet("nocookie.example.com", "/")
			if err != nil {
				t.Fatal(err)
			}
			if sc := resp.Header.Get("Set-Cookie"); sc != "" {
				t.Fatalf("disable_cookies: got Set-Cookie %q", sc)
			}
			seen[resp.backend()] = true
		}
		if !seen["a1"] || !seen["a2"] {
			t.Errorf("balance roundrobin without cookies should use both backends, saw %v", seen)
		}
	})

	t.Run("balance source keeps one client on one backend", func(t *testing.T) {
		first := ""
		for i := 0; i < 8; i++ {
			resp, err := r.httpGet("source.example.com", "/")
			if err != nil {
				t.Fatal(err)
			}
			if first == "" {
				first = resp.backend()
			}
			if resp.backend() != first {
				t.Fatalf("balance source moved the client from %s to %s", first, resp.backend())
			}
		}
	})

	t.Run("rewrite-target replaces the route path", func(t *testing.T) {
		for path, want := range map[string]string{
			"/app": "/v2/", "/app/": "/v2/", "/app/x/y?q=1": "/v2/x/y?q=1",
			"/old": "/", "/old/": "/", "/old/page": "/page",
		} {
			host := "rewrite.example.com"
			resp, err := r.httpGet(host, path)
			if err != nil || !strings.Contains(resp.Body, " path="+want+" ") {
				t.Errorf("%s: backend saw %q (%v), want path %s", path, resp.Body, err, want)
			}
		}
	})

	t.Run("set-forwarded-headers", func(t *testing.T) {
		in := http.Header{"X-Forwarded-For": {"192.0.2.7"}, "X-Forwarded-Host": {"client.example"}}
		for host, want := range map[string]string{
			"fwd-append.example.com":  "xff=[192.0.2.7,127.0.0.1] xfh=[fwd-append.example.com]",
			"fwd-replace.example.com": "xff=[127.0.0.1] xfh=[fwd-replace.example.com]",
			"fwd-never.example.com":   "xff=[192.0.2.7] xfh=[client.example] forwarded=[]",
			"fwd-if-none.example.com": "xff=[192.0.2.7] xfh=[client.example]",
		} {
			resp, err := annRequest(r, false, host, "/", in)
			if err != nil || !strings.Contains(resp.Body, want) {
				t.Errorf("%s: backend saw %q (%v), want %q", host, resp.Body, err, want)
			}
		}
		resp, err := annRequest(r, false, "fwd-if-none.example.com", "/", nil)
		if err != nil || !strings.Contains(resp.Body, "xff=[127.0.0.1] xfh=[fwd-if-none.example.com]") {
			t.Errorf("if-none without client headers: backend saw %q (%v)", resp.Body, err)
		}
		// TLS terminated here: the headers are set by the TLS frontends too.
		for host, want := range map[string]string{
			"fwd-edge.example.com":       "xff=[192.0.2.7,127.0.0.1] xfh=[fwd-edge.example.com] forwarded=[for=127.0.0.1;host=fwd-edge.example.com;proto=https]",
			"fwd-edge-never.example.com": "xff=[192.0.2.7] xfh=[client.example] forwarded=[]",
		} {
			resp, err := annRequest(r, true, host, "/", in)
			if err != nil || !strings.Contains(resp.Body, want) {
				t.Errorf("%s over TLS: backend saw %q (%v), want %q", host, resp.Body, err, want)
			}
		}
	})

	t.Run("pod-concurrent-connections queues beyond maxconn", func(t *testing.T) {
		var wg sync.WaitGroup
		var ok atomic.Int32
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp, err := r.httpGet("maxconn.example.com", "/"); err == nil && resp.backend() == "queued" {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 4 {
			t.Errorf("%d of 4 requests answered", ok.Load())
		}
		if m := queued.max.Load(); m != 1 {
			t.Errorf("backend served %d requests at once, want 1 (maxconn 1)", m)
		}
	})

	t.Run("rate-http and rate-tcp reject requests beyond the limit", func(t *testing.T) {
		for _, host := range []string{"ratelimit.example.com", "ratelimit-tcp.example.com"} {
			served, rejected := 0, 0
			for i := 0; i < 8; i++ {
				resp, err := r.httpGet(host, "/")
				if err == nil && resp.backend() == "ref" {
					served++
				} else {
					rejected++
				}
			}
			// Limit 3 per window (10s for HTTP, 3s for TCP): a slow
			// machine may let the window slide once, never more.
			if served < 3 || served > 4 || rejected < 4 {
				t.Errorf("%s, limit 3: %d served, %d rejected of 8", host, served, rejected)
			}
		}
		// Other routes are not limited.
		for i := 0; i < 8; i++ {
			if resp, err := r.httpGet("ref.example.com", "/"); err != nil || resp.backend() != "ref" {
				t.Fatalf("route without rate limit: %d %v", resp.Status, err)
			}
		}
	})

	t.Run("concurrent-tcp rejects connections beyond the limit", func(t *testing.T) {
		var wg sync.WaitGroup
		var served, rejected atomic.Int32
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp, err := r.httpGet("concurrent.example.com", "/"); err == nil && resp.backend() == "concurrent" {
					served.Add(1)
				} else {
					rejected.Add(1)
				}
			}()
		}
		wg.Wait()
		if served.Load() < 1 || served.Load() > 2 || concurrent.max.Load() > 2 {
			t.Errorf("concurrent-tcp 2: %d served, %d rejected of 4 at once; backend saw %d at once", served.Load(), rejected.Load(), concurrent.max.Load())
		}
	})
}

func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
