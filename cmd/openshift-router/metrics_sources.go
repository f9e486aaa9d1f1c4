package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
	haproxymetrics "github.com/openshift-router-go/router/metrics/haproxy"
	"github.com/openshift-router-go/router/metrics/server"
)

// maxStatsBody bounds the CSV read from an http(s) scrape URI (HAProxy's
// statistics of 100,000 servers are tens of MiB).
const maxStatsBody = 512 << 20

// statsSource is where the collector reads HAProxy's statistics:
// ROUTER_METRICS_HAPROXY_SCRAPE_URI (validated by the configuration) or,
// without it, the router's own runtime socket. An http(s) URI is fetched
// for every "show stat" and must answer HAProxy's CSV, as a stats page with
// ";csv" does.
func statsSource(uri, socket string, timeout time.Duration) haproxymetrics.Source {
	u, err := url.Parse(uri)
	if uri == "" || err != nil {
		return &runtimeapi.Client{Path: socket, Timeout: timeout}
	}
	if u.Scheme == "unix" {
		return &runtimeapi.Client{Path: u.Path, Timeout: timeout}
	}
	return &httpStats{uri: uri, u: u, client: &http.Client{Timeout: timeout}}
}

// httpStats reads HAProxy's CSV statistics from an http(s) URI.
type httpStats struct {
	uri    string
	u      *url.URL
	client *http.Client
}

// Exec fetches the statistics; "show stat" is the only command.
func (h *httpStats) Exec(ctx context.Context, command string) (string, error) {
	return h.ExecSized(ctx, command, 0)
}

// ExecSized fetches the statistics into a buffer of sizeHint bytes.
func (h *httpStats) ExecSized(ctx context.Context, command string, sizeHint int) (string, error) {
	if command != "show stat" {
		return "", fmt.Errorf("scrape URI %s: only statistics are read over HTTP, not %q", h.u.Redacted(), command)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.uri, nil)
	if err != nil {
		return "", err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("scrape URI %s: %w", h.u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("scrape URI %s: HTTP status %d", h.u.Redacted(), resp.StatusCode)
	}
	body, err := runtimeapi.ReadString(io.LimitReader(resp.Body, maxStatsBody), min(sizeHint, maxStatsBody))
	if err != nil {
		return "", fmt.Errorf("scrape URI %s: %w", h.u.Redacted(), err)
	}
	return body, nil
}

// readyHTTPTimeout is OpenShift's bound on its backend-http probe.
const readyHTTPTimeout = 2 * time.Second

// readyHTTPCheck is ROUTER_METRICS_READY_HTTP_URL's readiness check, as
// OpenShift's: a GET of the URL within 2 s, ready on any 2xx or 3xx answer
// ("backend-http"); with ROUTER_USE_PROXY_PROTOCOL the request is preceded
// by "PROXY UNKNOWN" ("backend-proxy-http"), since HAProxy's listener then
// expects a PROXY header.
func readyHTTPCheck(raw string, proxyProtocol bool) server.Check {
	u, _ := url.Parse(raw) // validated by the configuration
	if !proxyProtocol {
		client := &http.Client{
			Timeout:       readyHTTPTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
		}
		return server.Check{Name: "backend-http", Run: func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			return backendStatus(u, resp.StatusCode)
		}}
	}
	return server.Check{Name: "backend-proxy-http", Run: func(ctx context.Context) error {
		host := u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			host = net.JoinHostPort(u.Hostname(), port)
		}
		d := net.Dialer{Timeout: readyHTTPTimeout}
		conn, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(readyHTTPTimeout))
		if _, err := io.WriteString(conn, "PROXY UNKNOWN\r\n"); err != nil {
			return err
		}
		req := &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Connection": []string{"close"}}}
		if err := req.Write(conn); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return backendStatus(u, resp.StatusCode)
	}}
}

func backendStatus(u *url.URL, code int) error {
	if code < 200 || code >= 400 {
		return fmt.Errorf("GET %s (ROUTER_METRICS_READY_HTTP_URL): HTTP status %d", strings.TrimSpace(u.Redacted()), code)
	}
	return nil
}
