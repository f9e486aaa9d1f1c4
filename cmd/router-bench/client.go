package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// client sends requests to the router's HTTP port with a Host header, over
// keep-alive connections; with an HTTPS port (withHTTPS), requests of TLS
// routes go there, with the route's host as SNI.
type client struct {
	url string
	tr  *http.Transport
	hc  *http.Client
	// tlsHC sends the requests of TLS routes (nil: none).
	tlsTr *http.Transport
	tlsHC *http.Client
}

// withHTTPS lets c send the requests of TLS routes to the router's HTTPS
// port: over TLS with the route's host as SNI (the certificate is not
// verified: which route answers is what counts), keeping at most a few
// connections open per host.
func (c *client) withHTTPS(port int) *client {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c.tlsTr = &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a benchmark: the answering backend is checked
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	c.tlsHC = &http.Client{Transport: c.tlsTr, Timeout: c.hc.Timeout, CheckRedirect: c.hc.CheckRedirect}
	return c
}

// getRoute sends one request to route rt: over TLS for TLS routes.
func (c *client) getRoute(ctx context.Context, rt *route) response {
	if !rt.Kind.overTLS() {
		return c.get(ctx, rt.Host)
	}
	if c.tlsHC == nil {
		return response{Err: fmt.Errorf("%s: a TLS route, and the client has no HTTPS port", rt.Host)}
	}
	return c.do(ctx, c.tlsHC, "https://"+rt.Host+"/", rt.Host)
}

func newClient(port, conns int) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	return &client{
		url: fmt.Sprintf("http://127.0.0.1:%d/", port),
		tr:  tr,
		hc: &http.Client{Transport: tr, Timeout: 5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

func (c *client) close() {
	c.tr.CloseIdleConnections()
	if c.tlsTr != nil {
		c.tlsTr.CloseIdleConnections()
	}
}

// response is the outcome of one request.
type response struct {
	Status  int
	Backend string
	Err     error
}

func (r response) ok(be *backend) bool {
	return r.Err == nil && r.Status == http.StatusOK && r.Backend == be.Name
}

// failed is the bench's definition of a failed request: a transport error
// or a status other than 2xx.
func (r response) failed() bool { return r.Err != nil || r.Status < 200 || r.Status > 299 }

func (r response) describe() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return fmt.Sprintf("status %d from backend %q", r.Status, r.Backend)
}

func (c *client) get(ctx context.Context, host string) response {
	return c.do(ctx, c.hc, c.url, host)
}

func (c *client) do(ctx context.Context, hc *http.Client, url, host string) response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return response{Err: err}
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return response{Err: err}
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return response{Status: resp.StatusCode, Backend: resp.Header.Get(backendHeader), Err: err}
}

// load is a steady request load: workers that together send rate requests
// per second, round robin over routes, each worker on its own keep-alive
// connection.
type load struct {
	ok, failed, misrouted atomic.Int64
	cancel                context.CancelFunc
	wg                    sync.WaitGroup

	mu     sync.Mutex
	errors map[string]int // failure descriptions, counted
}

// loadStats is what a load saw.
type loadStats struct {
	Requests  int64          `json:"requests"`
	Failed    int64          `json:"failed"`    // transport errors and non-2xx
	Misrouted int64          `json:"misrouted"` // 2xx from another backend than the route's
	Errors    map[string]int `json:"errors,omitempty"`
}

// startLoad starts the load; it ends at stop, or after maxDuration at the
// latest.
func startLoad(ctx context.Context, r *routerProc, routes []*route, workers, rate int, maxDuration time.Duration) *load {
	ctx, cancel := context.WithTimeout(ctx, maxDuration)
	l := &load{cancel: cancel, errors: map[string]int{}}
	interval := time.Duration(float64(time.Second) * float64(workers) / float64(rate))
	if interval < time.Microsecond {
		interval = time.Microsecond
	}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			c := newClient(r.HTTPPort, 1).withHTTPS(r.HTTPSPort)
			defer c.close()
			t := time.NewTicker(interval)
			defer t.Stop()
			for k := w; ; k += workers {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				rt := routes[k%len(routes)]
				res := c.getRoute(ctx, rt)
				if ctx.Err() != nil && res.Err != nil {
					return // stopped mid-request: not the router's fault
				}
				switch {
				case res.failed():
					l.failed.Add(1)
					l.note(res.describe())
				case res.Backend != rt.Backend.Name:
					l.misrouted.Add(1)
					l.note(fmt.Sprintf("%s answered by %q, want %q", rt.Host, res.Backend, rt.Backend.Name))
				default:
					l.ok.Add(1)
				}
			}
		}(w)
	}
	return l
}

func (l *load) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 20 || l.errors[s] > 0 {
		l.errors[s]++
	}
}

// stop ends the load and returns its counts.
func (l *load) stop() loadStats {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := loadStats{Failed: l.failed.Load(), Misrouted: l.misrouted.Load()}
	s.Requests = l.ok.Load() + s.Failed + s.Misrouted
	if len(l.errors) > 0 {
		s.Errors = l.errors
	}
	return s
}

// topErrors formats the most frequent failure descriptions.
func topErrors(m map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	s := ""
	for i, e := range all {
		if i == n {
			break
		}
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%d× %s", e.v, e.k)
	}
	return s
}

// latencyStats summarises change-to-traffic latencies.
type latencyStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
	Max   float64 `json:"max_seconds"`
	Mean  float64 `json:"mean_seconds"`
}

func summarize(ds []time.Duration) latencyStats {
	if len(ds) == 0 {
		return latencyStats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latencyStats{
		Count: len(s),
		P50:   percentile(s, 50).Seconds(),
		P99:   percentile(s, 99).Seconds(),
		Max:   s[len(s)-1].Seconds(),
		Mean:  (sum / time.Duration(len(s))).Seconds(),
	}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p/100*float64(len(sorted)) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}
