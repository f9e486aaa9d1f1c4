package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openshift-router-go/router/test/testcerts"
)

const (
	benchNamespace = "bench"
	backendHeader  = "X-Bench-Backend"
)

// backend is an HTTP server on a loopback address that names itself in a
// header and in its body, on Port without TLS and on TLSPort with TLS (a
// certificate of the fixture's CA for every name the routes use: what
// passthrough and re-encrypt routes reach).
type backend struct {
	Index   int
	Name    string
	IP      string
	Port    int
	TLSPort int
	srvs    []*http.Server
}

// backendIP spreads backends over 127.0.0.2-127.0.0.251 (then 127.0.1.x, …).
func backendIP(i int) string {
	return fmt.Sprintf("127.0.%d.%d", i/250, 2+i%250)
}

// startBackends starts n backends; with cert, each also serves TLS.
func startBackends(n int, cert *tls.Certificate) ([]*backend, error) {
	var bs []*backend
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("b%d", i)
		b := &backend{Index: i, Name: name}
		bs = append(bs, b)
		body := []byte("backend=" + name + "\n")
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(backendHeader, name)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		})
		serve := func(withTLS bool) (int, error) {
			l, err := net.Listen("tcp", net.JoinHostPort(backendIP(i), "0"))
			if err != nil {
				return 0, fmt.Errorf("backend %s: %w", name, err)
			}
			b.IP = l.Addr().(*net.TCPAddr).IP.String()
			if withTLS {
				l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
			}
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			b.srvs = append(b.srvs, srv)
			go func() { _ = srv.Serve(l) }()
			return l.Addr().(*net.TCPAddr).Port, nil
		}
		var err error
		if b.Port, err = serve(false); err == nil && cert != nil {
			b.TLSPort, err = serve(true)
		}
		if err != nil {
			stopBackends(bs)
			return nil, err
		}
	}
	return bs, nil
}

func stopBackends(bs []*backend) {
	for _, b := range bs {
		for _, srv := range b.srvs {
			_ = srv.Close()
		}
	}
}

// route is one benchmark route: host r<i>.bench.test, its own Service
// r<i> and an EndpointSlice with one endpoint on a backend, of a kind.
type route struct {
	Name    string
	Host    string
	Backend *backend
	Kind    routeKind
	// tls is the fixture's TLS material (nil for unsecured routes).
	tls *benchTLS
}

func routeName(i int) string { return fmt.Sprintf("r%d", i) }

func newRoute(name string, be *backend) *route {
	return &route{Name: name, Host: name + ".bench.test", Backend: be, Kind: kindUnsecured}
}

// routeKind is a route's TLS termination, as the benchmark makes it.
type routeKind string

const (
	kindUnsecured   routeKind = "unsecured"
	kindEdge        routeKind = "edge"        // edge, the router's default certificate
	kindEdgeCert    routeKind = "edge-cert"   // edge with a certificate of its own
	kindPassthrough routeKind = "passthrough" // TLS to the backend's TLS port
	kindReencrypt   routeKind = "reencrypt"   // verified with DEFAULT_DESTINATION_CA_PATH (service-serving certificates)
	// kindReencryptCA: re-encrypt with a destinationCACertificate of its own.
	kindReencryptCA routeKind = "reencrypt-ca"
	// kindHTTPRoute: a Gateway API HTTPRoute (the host, every path) on the
	// HTTP listener of the fixture's Gateway.
	kindHTTPRoute routeKind = "httproute"
)

var routeKinds = []routeKind{kindUnsecured, kindEdge, kindEdgeCert, kindPassthrough, kindReencrypt, kindReencryptCA, kindHTTPRoute}

// parseRouteKinds reads a comma-separated list of route kinds.
func parseRouteKinds(s string) ([]routeKind, error) {
	var out []routeKind
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(routeKinds, routeKind(k)) {
			return nil, fmt.Errorf("unknown route kind %q (want %v)", k, routeKinds)
		}
		out = append(out, routeKind(k))
	}
	return out, nil
}

// overTLS reports whether the route is reached over TLS (on the router's
// HTTPS port, with its host as SNI).
func (k routeKind) overTLS() bool { return k != kindUnsecured && k != kindHTTPRoute }

// backendTLS reports whether the route's endpoint is the backend's TLS port.
func (k routeKind) backendTLS() bool {
	return k == kindPassthrough || k == kindReencrypt || k == kindReencryptCA
}

// benchTLS is a fixture's TLS material: a CA, and a certificate of it for
// every name the benchmark uses (*.bench.test, the services' *.bench.svc
// names and the backends' addresses), which the backends serve and
// edge-cert routes carry.
type benchTLS struct {
	CA, Leaf *testcerts.Pair
	Cert     tls.Certificate
	// CAPath is the CA's file: DEFAULT_DESTINATION_CA_PATH.
	CAPath string
}

func newBenchTLS(dir string, backends int) (*benchTLS, error) {
	ca, err := testcerts.NewCA("router-bench CA", 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	names := []string{"*.bench.test", "*." + benchNamespace + ".svc"}
	for i := 0; i < backends; i++ {
		names = append(names, backendIP(i))
	}
	leaf, err := ca.Issue("*.bench.test", names, 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair([]byte(leaf.CertPEM), []byte(leaf.KeyPEM))
	if err != nil {
		return nil, err
	}
	t := &benchTLS{CA: ca, Leaf: leaf, Cert: cert, CAPath: filepath.Join(dir, "service-ca.crt")}
	return t, os.WriteFile(t.CAPath, []byte(ca.CertPEM), 0o644)
}

// fixture is one run: backends, a manifests directory and a router.
type fixture struct {
	cfg       config
	Dir       string
	Manifests string
	Backends  []*backend
	Routes    []*route
	Router    *routerProc
	Started   time.Time
	// Kinds are the kinds of the routes, round robin (unsecured alone
	// unless a scenario asks for more); TLS is the material TLS kinds use.
	Kinds []routeKind
	TLS   *benchTLS
}

// newFixture starts the backends and writes n unsecured routes (route i
// on backend i mod backends) into a fresh manifests directory.
func newFixture(cfg config, n int) (*fixture, error) {
	return newFixtureOf(cfg, n, cfg.kinds())
}

// newFixtureOf is newFixture with routes of kinds (route i of kind i mod
// len(kinds); nil: unsecured): with a TLS kind, the backends serve TLS
// too and the router verifies re-encrypt backends with the fixture's CA.
func newFixtureOf(cfg config, n int, kinds []routeKind) (*fixture, error) {
	dir, err := os.MkdirTemp(cfg.TempDir, "rb")
	if err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		kinds = []routeKind{kindUnsecured}
	}
	f := &fixture{cfg: cfg, Dir: dir, Manifests: filepath.Join(dir, "manifests"), Kinds: kinds}
	if err := os.Mkdir(f.Manifests, 0o755); err != nil {
		f.Close()
		return nil, err
	}
	nb := cfg.Backends
	if nb > n && n >= 2 {
		nb = n
	}
	if nb < 2 {
		nb = 2
	}
	var cert *tls.Certificate
	if slices.ContainsFunc(kinds, routeKind.overTLS) {
		if f.TLS, err = newBenchTLS(dir, nb); err != nil {
			f.Close()
			return nil, err
		}
		cert = &f.TLS.Cert
		f.cfg.RouterEnv = append(slices.Clip(f.cfg.RouterEnv), "DEFAULT_DESTINATION_CA_PATH="+f.TLS.CAPath)
	}
	if f.Backends, err = startBackends(nb, cert); err != nil {
		f.Close()
		return nil, err
	}
	if slices.Contains(kinds, kindHTTPRoute) {
		if err := f.writeFile("gateway.yaml", gatewayYAML, false); err != nil {
			f.Close()
			return nil, err
		}
	}
	for i := 0; i < n; i++ {
		rt := f.route(routeName(i), i)
		f.Routes = append(f.Routes, rt)
		if err := f.writeFile(rt.Name+".yaml", routeServiceYAML(rt), false); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.writeFile(rt.Name+"-eps.yaml", endpointSliceYAML(rt), false); err != nil {
			f.Close()
			return nil, err
		}
	}
	cfg.logf("wrote %d routes (%d backends) to %s", n, len(f.Backends), f.Manifests)
	return f, nil
}

// route is route i of the fixture, named name: on backend i mod backends,
// of kind i mod kinds.
func (f *fixture) route(name string, i int) *route {
	rt := newRoute(name, f.Backends[i%len(f.Backends)])
	rt.Kind = f.Kinds[i%len(f.Kinds)]
	if rt.Kind.overTLS() {
		rt.tls = f.TLS
	}
	return rt
}

// writeFile writes a manifest; atomic does it as an editor or kubectl would
// (a hidden temporary file renamed into place), so the router never reads a
// half-written file.
func (f *fixture) writeFile(name, content string, atomic bool) error {
	path := filepath.Join(f.Manifests, name)
	if !atomic {
		return os.WriteFile(path, []byte(content), 0o644)
	}
	tmp := filepath.Join(f.Manifests, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (f *fixture) removeFile(name string) error {
	return os.Remove(filepath.Join(f.Manifests, name))
}

// start starts the router on the manifests directory.
//
// Its ports are free when picked, not reserved: a router whose HAProxy
// finds one taken meanwhile (by another test's process) is started again
// on others (twice at most), the start time taken afresh.
func (f *fixture) start() error {
	for attempt := 0; ; attempt++ {
		f.Started = time.Now()
		r, err := startRouter(f.cfg, f.Dir, f.Manifests)
		if err != nil {
			return err
		}
		if attempt < 2 && r.lostPort(10*time.Second) {
			f.cfg.logf("router: a port was taken meanwhile; starting again on others")
			_ = r.Stop()
			continue
		}
		f.Router = r
		return nil
	}
}

// Close stops the router and the backends and removes the directory
// (unless -keep). The error is about the router's stop (processes that had
// to be killed).
func (f *fixture) Close() error {
	var err error
	if f.Router != nil {
		t := time.Now()
		err = f.Router.Stop()
		f.cfg.logf("router stopped in %s", seconds(time.Since(t)))
		if err != nil {
			f.cfg.logf("router stop: %v", err)
		}
	}
	stopBackends(f.Backends)
	if f.cfg.Keep {
		f.cfg.logf("kept %s", f.Dir)
	} else {
		_ = os.RemoveAll(f.Dir)
	}
	return err
}

// readyTimes is how long a start took.
type readyTimes struct {
	Ready       time.Duration // /healthz/ready answered 200
	FirstRoute  time.Duration // the first route answered from its backend
	AllAnswered time.Duration // every route answered from its backend
	Sweep       time.Duration // the check of every route, from its first request
}

// waitAllRoutes waits, bounded by cfg.ReadyTimeout from the start, until
// every route answers 200 from its backend through haproxy. It first polls
// one route every 10 ms (so nothing hammers a router that is still
// starting), then checks all routes with cfg.CheckWorkers concurrent
// requests, retrying a route until it answers.
func (f *fixture) waitAllRoutes(ctx context.Context) (readyTimes, error) {
	var rt readyTimes
	deadline := f.Started.Add(f.cfg.ReadyTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	readyc := make(chan time.Duration, 1)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if f.Router.ready(ctx) {
				readyc <- time.Since(f.Started)
				return
			}
			select {
			case <-ctx.Done():
				readyc <- -1
				return
			case <-t.C:
			}
		}
	}()

	c := newClient(f.Router.HTTPPort, f.cfg.CheckWorkers).withHTTPS(f.Router.HTTPSPort)
	defer c.close()
	first := f.Routes[0]
	for {
		if err := f.Router.exited(); err != nil {
			return rt, err
		}
		if r := c.getRoute(ctx, first); r.ok(first.Backend) {
			rt.FirstRoute = time.Since(f.Started)
			break
		}
		if ctx.Err() != nil {
			return rt, fmt.Errorf("no answer from %s within %s of the start", first.Host, f.cfg.ReadyTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}

	sweepStart := time.Now()
	work := make(chan *route)
	var mu sync.Mutex
	answered := 0
	var lastErr string
	var wg sync.WaitGroup
	for w := 0; w < f.cfg.CheckWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				for {
					res := c.getRoute(ctx, r)
					if res.ok(r.Backend) {
						mu.Lock()
						answered++
						mu.Unlock()
						break
					}
					if ctx.Err() != nil {
						mu.Lock()
						lastErr = fmt.Sprintf("%s: %s", r.Host, res.describe())
						mu.Unlock()
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	for _, r := range f.Routes {
		select {
		case work <- r:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	rt.AllAnswered = time.Since(f.Started)
	rt.Sweep = time.Since(sweepStart)
	select {
	case rt.Ready = <-readyc:
	case <-time.After(5 * time.Second):
		rt.Ready = -1
	}
	if answered < len(f.Routes) {
		if err := f.Router.exited(); err != nil {
			return rt, err
		}
		return rt, fmt.Errorf("%d of %d routes answered from their backend within %s of the start (last failure: %s)", answered, len(f.Routes), f.cfg.ReadyTimeout, lastErr)
	}
	if rt.Ready < 0 {
		return rt, errors.New("every route answers but /healthz/ready never answered 200")
	}
	f.cfg.logf("all %d routes answer, %s after the start", len(f.Routes), seconds(rt.AllAnswered))
	return rt, nil
}

// startServing starts the router, waits until every route answers and
// cfg.Settle more, and returns the router's counters at that point: the
// start of a measured phase.
func (f *fixture) startServing(ctx context.Context) (routerCounters, error) {
	if err := f.start(); err != nil {
		return routerCounters{}, err
	}
	if _, err := f.waitAllRoutes(ctx); err != nil {
		return routerCounters{}, err
	}
	f.settle(ctx)
	return f.Router.counters(ctx)
}

// preAdd adds rt before a measured phase, waits until it answers and the
// reload it may take is over, and returns the counters then.
func (f *fixture) preAdd(ctx context.Context, rt *route) (routerCounters, error) {
	if err := f.writeFile(rt.Name+".yaml", fullRouteYAML(rt), true); err != nil {
		return routerCounters{}, err
	}
	probe := newClient(f.Router.HTTPPort, 1).withHTTPS(f.Router.HTTPSPort)
	defer probe.close()
	deadline := time.Now().Add(f.cfg.ChangeTimeout)
	for !probe.getRoute(ctx, rt).ok(rt.Backend) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return routerCounters{}, fmt.Errorf("route %s added before the phase did not answer within %s", rt.Host, f.cfg.ChangeTimeout)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	f.settle(ctx)
	return f.Router.counters(ctx)
}

// settle waits cfg.Settle (bounded by ctx).
func (f *fixture) settle(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(f.cfg.Settle):
	}
}

// gatewayYAML is the fixture's GatewayClass of the router and its Gateway,
// with one HTTP listener, for the HTTPRoutes (kindHTTPRoute).
var gatewayYAML = fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: bench
spec:
  controllerName: haproxy.router.openshift.io/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: bench
  namespace: %s
spec:
  gatewayClassName: bench
  listeners:
  - name: http
    port: 80
    protocol: HTTP
`, benchNamespace)

// routeServiceYAML is route rt (a Route, or an HTTPRoute for kindHTTPRoute)
// and its Service.
func routeServiceYAML(rt *route) string {
	svc := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  ports:
  - name: web
    port: 80
---
`, rt.Name, benchNamespace)
	if rt.Kind == kindHTTPRoute {
		return svc + fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  parentRefs:
  - name: bench
  hostnames:
  - %[3]s
  rules:
  - backendRefs:
    - name: %[1]s
      port: 80
`, rt.Name, benchNamespace, rt.Host)
	}
	return svc + fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  host: %[3]s
  to:
    kind: Service
    name: %[1]s
%[4]s`, rt.Name, benchNamespace, rt.Host, routeTLSYAML(rt))
}

// routeTLSYAML is the tls stanza of route rt's spec ("" for unsecured).
func routeTLSYAML(rt *route) string {
	block := func(field, pem string) string {
		return "    " + field + ": |\n      " + strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n      ") + "\n"
	}
	switch rt.Kind {
	case kindEdge:
		return "  tls:\n    termination: edge\n"
	case kindEdgeCert:
		return "  tls:\n    termination: edge\n" + block("certificate", rt.tls.Leaf.CertPEM) + block("key", rt.tls.Leaf.KeyPEM)
	case kindPassthrough:
		return "  tls:\n    termination: passthrough\n"
	case kindReencrypt:
		return "  tls:\n    termination: reencrypt\n"
	case kindReencryptCA:
		return "  tls:\n    termination: reencrypt\n" + block("destinationCACertificate", rt.tls.CA.CertPEM)
	}
	return ""
}

// endpointSliceYAML is the EndpointSlice of route rt's Service: one ready
// endpoint, its backend.
func endpointSliceYAML(rt *route) string {
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  namespace: %[2]s
  labels:
    kubernetes.io/service-name: %[1]s
addressType: IPv4
ports:
- name: web
  port: %[3]d
endpoints:
- addresses: ["%[4]s"]
  conditions:
    ready: true
`, rt.Name, benchNamespace, rt.endpointPort(), rt.Backend.IP)
}

// endpointPort is the backend port route rt's endpoint names.
func (rt *route) endpointPort() int {
	if rt.Kind.backendTLS() {
		return rt.Backend.TLSPort
	}
	return rt.Backend.Port
}

// fullRouteYAML is everything of a route in one file (route churn).
func fullRouteYAML(rt *route) string {
	return routeServiceYAML(rt) + "---\n" + endpointSliceYAML(rt)
}

// mib formats KiB as MiB.
func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// mibs formats sizes in KiB as "a, b MiB".
func mibs(kib []int64) string {
	out := make([]string, len(kib))
	for i, k := range kib {
		out[i] = fmt.Sprintf("%.1f", float64(k)/1024)
	}
	return strings.Join(out, ", ") + " MiB"
}

// seconds formats a duration in seconds with millisecond precision.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// joinNonEmpty joins the non-empty strings.
func joinNonEmpty(sep string, s ...string) string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}
