package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRouterMaxShutdownTimeoutBoundsHAProxysSoftStop: when the router stops,
// HAProxy's soft stop lets a request in flight finish for up to
// ROUTER_MAX_SHUTDOWN_TIMEOUT seconds, then HAProxy is stopped hard, as
// OpenShift's reload script does at shutdown. A 4 s request completes under
// a 10 s bound and is cut under a 1 s bound, and the router exits about when
// the bound says.
func TestRouterMaxShutdownTimeoutBoundsHAProxysSoftStop(t *testing.T) {
	const requestTime = 4 * time.Second
	tests := []struct {
		timeout       string
		wantCompleted bool
		exitAtMost    time.Duration // after SIGTERM
	}{
		{timeout: "1", wantCompleted: false, exitAtMost: requestTime - 500*time.Millisecond},
		{timeout: "10", wantCompleted: true, exitAtMost: 9 * time.Second},
	}
	for _, tc := range tests {
		t.Run("ROUTER_MAX_SHUTDOWN_TIMEOUT="+tc.timeout, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					arrived <- struct{}{}
					time.Sleep(requestTime)
				}
				fmt.Fprintf(w, "backend=slow path=%s\n", r.URL.Path)
			}))
			t.Cleanup(srv.Close)
			be := newBackend(t, "slow", srv)
			m := newManifests(t)
			m.Write("svc.yaml", serviceYAML("apps", "slow", be))
			m.Write("routes.yaml", routeYAML("apps", "slow", "slow.example.com", "", "slow", ""))
			r := startRouter(t, m.Dir, map[string]string{"ROUTER_MAX_SHUTDOWN_TIMEOUT": tc.timeout})
			expectBackend(t, loadTimeout, func() (response, error) { return r.httpGet("slow.example.com", "/") }, "slow")

			type result struct {
				resp response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := r.httpGet("slow.example.com", "/slow")
				done <- result{resp, err}
			}()
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the slow request did not reach the backend")
			}
			signalled := time.Now()
			must(t, r.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				t.Fatal("router did not exit within 30s")
			}
			exitAfter := time.Since(signalled)
			res := <-done
			completed := res.err == nil && res.resp.Status == 200 && strings.Contains(res.resp.Body, "path=/slow")
			if completed != tc.wantCompleted {
				t.Errorf("request in flight completed: %v (%v, status %d), want %v", completed, res.err, res.resp.Status, tc.wantCompleted)
			}
			if exitAfter > tc.exitAtMost {
				t.Errorf("router exited %v after SIGTERM, want at most %v", exitAfter.Round(time.Millisecond), tc.exitAtMost)
			}
			if tc.wantCompleted && exitAfter < requestTime/2 {
				t.Errorf("router exited %v after SIGTERM, before the request in flight could finish", exitAfter.Round(time.Millisecond))
			}
		})
	}
}
