package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/process"
	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

func requireHAProxy(t *testing.T) {
	t.Helper()
	prereq.NeedBinary(t, "haproxy")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestCollectorWithRealHAProxy runs HAProxy (master-worker, through the
// router's process manager) with backends named as the router names them,
// sends requests and reads the metrics through the runtime API; then
// reloads HAProxy and shows that its counters start again from zero.
func TestCollectorWithRealHAProxy(t *testing.T) {
	requireHAProxy(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	defer backend.Close()
	bport := backend.Listener.Addr().(*net.TCPAddr).Port

	dir, err := os.MkdirTemp("", "hm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	port := freePort(t)
	cfg := fmt.Sprintf(`global
  stats socket %[1]s/haproxy.sock mode 600 level admin expose-fd listeners

defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s

frontend public
  bind 127.0.0.1:%[2]d
  default_backend be_http:ns1:hello

backend be_http:ns1:hello
  server pod:hello-1:hello:web:127.0.0.1:%[3]d 127.0.0.1:%[3]d
`, dir, port, bport)
	cfgPath := filepath.Join(dir, "haproxy.config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	m := process.New(process.Options{ConfigPath: cfgPath, RunDir: dir, Logger: logr.Discard()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		if err := m.Stop(sctx); err != nil {
			t.Errorf("stopping haproxy: %v", err)
		}
	}()

	// One connection per request: none may stay with the old worker
	// across the reload.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func(path string) {
		t.Helper()
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	clk := &clock{t: time.Unix(1000, 0)}
	c, err := New(Options{
		Source: &runtimeapi.Client{Path: filepath.Join(dir, "haproxy.sock")},
		Now:    clk.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() gathered {
		clk.t = clk.t.Add(time.Hour) // past the scrape interval: ask HAProxy
		return gather(t, c)
	}
	server := map[string]string{"backend": "http", "namespace": "ns1", "route": "hello", "pod": "hello-1", "service": "hello", "server": fmt.Sprintf("127.0.0.1:%d", bport)}

	for i := 0; i < 5; i++ {
		get("/")
	}
	get("/missing")
	get("/missing")
	g := scrape()
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"haproxy_exporter_up", nil, 1},
		{"haproxy_server_http_responses_total", merge(server, "code", "2xx"), 5},
		{"haproxy_server_http_responses_total", merge(server, "code", "4xx"), 2},
		{"haproxy_server_connections_total", server, 7},
		{"haproxy_server_up", server, 1},
		{"haproxy_backend_connections_total", map[string]string{"route": "hello", "namespace": "ns1", "backend": "http"}, 7},
		{"haproxy_frontend_http_responses_total", map[string]string{"frontend": "public", "code": "2xx"}, 5},
	}
	for _, ch := range checks {
		if got := g.value(t, ch.name, ch.labels); got != ch.want {
			t.Errorf("%s%v = %v, want %v", ch.name, ch.labels, got, ch.want)
		}
	}
	if got := g.value(t, "haproxy_server_bytes_out_total", server); got <= 0 {
		t.Errorf("bytes out %v", got)
	}

	// A reload starts a new worker with its own counters.
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	get("/")
	g = scrape()
	if got := g.value(t, "haproxy_server_http_responses_total", merge(server, "code", "2xx")); got != 1 {
		t.Errorf("2xx after reload and one request = %v, want 1 (counters restart at a reload)", got)
	}

	// HAProxy gone: the exporter is down and reports no HAProxy rows.
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := m.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	g = scrape()
	if got := g.value(t, "haproxy_exporter_up", nil); got != 0 {
		t.Errorf("up with haproxy stopped = %v", got)
	}
	if len(g.names("haproxy_server_")) != 0 {
		t.Error("server metrics reported while haproxy is stopped")
	}
}
