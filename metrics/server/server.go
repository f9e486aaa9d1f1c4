// Package server is the router's metrics and health HTTP server (on
// ROUTER_LISTEN_ADDR):
//
//	/metrics        Prometheus text format, or OpenMetrics when the scraper asks for it
//	/healthz        liveness: the router is running and, once HAProxy has been
//	                started, HAProxy answers on its runtime API socket
//	/healthz/ready  readiness: the initial configuration is loaded and HAProxy answers
//
// The health checks are open (so probes work). Every other path is
// authorised as in OpenShift's router: a request with HTTP basic
// authentication, when a user name or password is configured
// (STATS_USERNAME, STATS_PASSWORD), must match them; any other request is
// decided by the Authorizer (bearer token: TokenReview and
// SubjectAccessReview against the cluster) when there is one. Without an
// Authorizer (no cluster), configured credentials are required and, when
// there are none, the paths are open.
//
// With a certificate and key the same port serves HTTPS as well: a
// connection whose first byte starts a TLS handshake is served over TLS,
// any other as plain HTTP. Plain HTTP then only answers the health checks,
// so probes need no TLS set-up while metrics are only sent encrypted. The
// files are read again when they change (certificate rotation).
package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

// Errors of Listen, wrapped.
var (
	// ErrListen: the address cannot be bound.
	ErrListen = errors.New("metrics server cannot listen")
	// ErrTLS: the certificate or key cannot be loaded.
	ErrTLS = errors.New("metrics server TLS")
)

// Check is one health check; nil means healthy.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Options configure the server.
type Options struct {
	// Addr is host:port to listen on.
	Addr string
	// Network is "tcp" (default), "tcp4" or "tcp6".
	Network string
	// Gatherer provides /metrics; nil serves no /metrics.
	Gatherer prometheus.Gatherer
	// Streams are written to /metrics after the Gatherer's families.
	Streams []FamilyStreamer
	// Registerer, if set, receives promhttp's own handler metrics.
	Registerer prometheus.Registerer
	// Username and Password are the basic authentication credentials
	// accepted for everything but the health checks.
	Username string
	Password string
	// Authorizer decides requests without basic authentication (bearer
	// tokens); nil: see the package documentation.
	Authorizer Authorizer
	// TLSCertFile and TLSKeyFile, if set, enable HTTPS on the same port.
	TLSCertFile string
	TLSKeyFile  string
	// TLSMinVersion (default TLS 1.2), TLSCipherSuites and TLSCurves
	// (default Go's) configure HTTPS.
	TLSMinVersion   uint16
	TLSCipherSuites []uint16
	TLSCurves       []tls.CurveID
	// Live are the checks of /healthz; Ready those of /healthz/ready.
	Live  []Check
	Ready []Check
	// CheckTimeout bounds each health check. Default 3s.
	CheckTimeout time.Duration
	Logger       logr.Logger
}

// Server is the metrics and health server.
type Server struct {
	o        Options
	ln       net.Listener
	srv      *http.Server
	certs    *certLoader
	shutting chan struct{}
	once     sync.Once
}

// Listen binds the address and prepares the server; an address that
// cannot be bound or a certificate that cannot be loaded is an error.
func Listen(o Options) (*Server, error) {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 3 * time.Second
	}
	s := &Server{o: o, shutting: make(chan struct{})}
	if o.TLSCertFile != "" || o.TLSKeyFile != "" {
		if o.TLSCertFile == "" || o.TLSKeyFile == "" {
			return nil, fmt.Errorf("%w: both a certificate file and a key file are needed", ErrTLS)
		}
		cl := &certLoader{certFile: o.TLSCertFile, keyFile: o.TLSKeyFile, log: o.Logger}
		if _, err := cl.load(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTLS, err)
		}
		s.certs = cl
	}
	if o.Network == "" {
		o.Network = "tcp"
	}
	if o.TLSMinVersion == 0 {
		o.TLSMinVersion = tls.VersionTLS12
	}
	s.o = o
	ln, err := net.Listen(o.Network, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %w", ErrListen, o.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(logWriter{o.Logger}, "", 0),
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close releases the listener of a server that was not served.
func (s *Server) Close() error { return s.ln.Close() }

// Serve serves until ctx is done, then shuts down gracefully (bounded).
// While shutting down, the health checks fail.
func (s *Server) Serve(ctx context.Context) error {
	ln := s.ln
	if s.certs != nil {
		ln = newSniffListener(s.ln, s.tlsConfig(), s.o.Logger)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("metrics server: %w", err)
	case <-ctx.Done():
	}
	s.once.Do(func() { close(s.shutting) })
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	return nil
}

// tlsConfig is the HTTPS configuration: the operator's minimum version,
// cipher suites (TLS 1.0-1.2; Go always enables its TLS 1.3 suites) and
// curves, and the current certificate.
func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:       s.o.TLSMinVersion,
		CipherSuites:     s.o.TLSCipherSuites,
		CurvePreferences: s.o.TLSCurves,
		GetCertificate:   func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.certs.load() },
	}
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	live := append([]Check{{Name: "process-running", Run: s.running}}, s.o.Live...)
	ready := append([]Check{{Name: "process-running", Run: s.running}}, s.o.Ready...)
	mux.Handle("/healthz", s.health(live))
	mux.Handle("/healthz/ready", s.health(ready))

	protected := http.NewServeMux()
	if s.o.Gatherer != nil {
		h := s.metricsHandler()
		if s.o.Registerer != nil {
			h = promhttp.InstrumentMetricHandler(s.o.Registerer, h)
		}
		protected.Handle("/metrics", h)
	}
	mux.Handle("/", s.authenticated(protected))
	return s.plainHTTPGuard(mux)
}

// plainHTTPGuard refuses everything but the health checks over plain HTTP
// when TLS is configured.
func (s *Server) plainHTTPGuard(next http.Handler) http.Handler {
	if s.certs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil && !isHealthPath(r.URL.Path) {
			http.Error(w, "this endpoint is served over HTTPS only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isHealthPath(p string) bool { return p == "/healthz" || p == "/healthz/ready" }

func (s *Server) authenticated(next http.Handler) http.Handler {
	haveCreds := s.o.Username != "" || s.o.Password != ""
	if !haveCreds && s.o.Authorizer == nil {
		return next // no cluster and no credentials: open
	}
	unauthorized := func(w http.ResponseWriter) {
		if haveCreds {
			w.Header().Set("WWW-Authenticate", `Basic realm="openshift-router"`)
		}
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok && haveCreds {
			userOK := subtle.ConstantTimeCompare([]byte(u), []byte(s.o.Username)) == 1
			passOK := subtle.ConstantTimeCompare([]byte(p), []byte(s.o.Password)) == 1
			if !userOK || !passOK {
				unauthorized(w)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if s.o.Authorizer == nil {
			unauthorized(w)
			return
		}
		if d := s.o.Authorizer.Authorize(r); !d.Allowed() {
			if d.Status == http.StatusUnauthorized {
				unauthorized(w)
				return
			}
			http.Error(w, d.Message, d.Status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) running(context.Context) error {
	select {
	case <-s.shutting:
		return errors.New("the router is shutting down")
	default:
		return nil
	}
}

// health runs the checks: 200 "ok" when all pass, 503 with one line per
// check otherwise (or always with ?verbose).
func (s *Server) health(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		failed := false
		for _, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), s.o.CheckTimeout)
			err := c.Run(ctx)
			cancel()
			if err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.Name, err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			s.o.Logger.V(2).Info("health check failed", "path", r.URL.Path, "checks", b.String())
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "%shealthz check failed\n", b.String())
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%shealthz check passed\n", b.String())
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// logWriter sends net/http's own messages (e.g. TLS handshake errors of
// clients) to the structured log at verbosity 2.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(2).Info("metrics server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}

// HAProxyAnswers returns a check that HAProxy answers "show info" on its
// runtime API socket within the check's deadline.
func HAProxyAnswers(socket string) func(ctx context.Context) error {
	client := &runtimeapi.Client{Path: socket}
	return func(ctx context.Context) error {
		reply, err := client.Exec(ctx, "show info")
		if err != nil {
			return err
		}
		if !strings.Contains(reply, "Name: HAProxy") {
			return fmt.Errorf("unexpected reply to show info on %s: %q", socket, truncate(reply, 80))
		}
		return nil
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// certLoader reads the certificate and key again when either file changes.
type certLoader struct {
	certFile, keyFile string
	log               logr.Logger

	mu      sync.Mutex
	stamp   string
	cert    *tls.Certificate
	lastErr error
}

func (c *certLoader) load() (*tls.Certificate, error) {
	stamp, err := fileStamp(c.certFile, c.keyFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.cert != nil {
			return c.cert, nil // keep serving the last good certificate
		}
		return nil, err
	}
	if c.cert != nil && stamp == c.stamp {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		err = fmt.Errorf("loading %s and %s: %w", c.certFile, c.keyFile, err)
		if c.cert != nil {
			if c.lastErr == nil || c.lastErr.Error() != err.Error() {
				c.log.Error(err, "metrics server certificate changed but cannot be loaded; keeping the previous one")
			}
			c.lastErr = err
			return c.cert, nil
		}
		return nil, err
	}
	if c.cert != nil {
		c.log.Info("metrics server certificate reloaded", "certFile", c.certFile)
	}
	c.cert, c.stamp, c.lastErr = &cert, stamp, nil
	return c.cert, nil
}

func fileStamp(files ...string) (string, error) {
	var b strings.Builder
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
	}
	return b.String(), nil
}

// sniffListener hands out plain and TLS connections from one listener,
// by the first byte the client sends (0x16 starts a TLS handshake). Each
// accepted connection is sniffed in its own goroutine, so a client that
// connects and sends nothing blocks nobody else; TLS connections are handed
// to net/http as *tls.Conn, which performs the handshake and sets r.TLS.
type sniffListener struct {
	inner net.Listener
	conf  *tls.Config
	log   logr.Logger

	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

// sniffTimeout bounds how long a new connection may stay silent.
const sniffTimeout = 10 * time.Second

func newSniffListener(ln net.Listener, conf *tls.Config, log logr.Logger) net.Listener {
	l := &sniffListener{inner: ln, conf: conf, log: log, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				_ = l.Close()
				return
			}
			l.log.Error(err, "metrics server: accepting a connection")
			time.Sleep(backoff)
			if backoff < time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 5 * time.Millisecond
		go l.sniff(c)
	}
}

func (l *sniffListener) sniff(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		_ = c.Close()
		return
	}
	var out net.Conn = &bufferedConn{Conn: c, r: br}
	if b[0] == 0x16 {
		out = tls.Server(out, l.conf)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *sniffListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.inner.Close()
	})
	return err
}

func (l *sniffListener) Addr() net.Addr { return l.inner.Addr() }

// bufferedConn reads through the reader that peeked at its first byte.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
