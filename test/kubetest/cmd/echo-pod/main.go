// Command echo-pod is what the test node agent (kubetest.Node) runs for
// each Pod: a server that answers as the Gateway API conformance suite's
// echo server (echo-basic) does, but on the Pod's IP only, so that many
// Pods share one network namespace (echo-basic listens on every address).
//
// Like echo-basic it takes its settings from the environment: POD_NAME,
// NAMESPACE, INGRESS_NAME, SERVICE_NAME; HTTP_PORT (default 3000), H2C_PORT
// (3001: HTTP/1.1, and HTTP/2 without TLS), HTTPS_PORT (8443, served when
// TLS_SERVER_CERT and TLS_SERVER_PRIVKEY name a certificate and its key;
// with TLS_CLIENT_CACERTS, client certificates given are verified). The
// address it listens on is -ip. Any request is answered with a JSON echo
// of it,
//
//	{"path": REQUEST-URI, "host", "method", "proto", "headers", "httpPort",
//	 "namespace", "ingress", "service", "pod", "tls": {...} (over TLS)}
//
// with the headers named in X-Echo-Set-Header ("Name:value,Name:value")
// set on the answer, after a line "Echoing back request made to URI to
// client (ADDR)" on standard output; ?delay=DURATION waits first. But:
// /health answers OK; /status/NNN answers NNN; /retry/?uuid=U&succeedAfter=N
// fails the first N requests of U (by resetting the connection, or with
// ?responseCode=CODE) and echoes the next; /ws echoes WebSocket messages;
// the H2C port answers 400 to HTTP/1.1 without an h2c upgrade. It prints
// "listening ADDR" for each listener once it is bound, and stops on SIGTERM
// or SIGINT.
//
// With TCP_ECHO_SERVER set it is echo-basic's TCP server instead (tcp.go).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/websocket"
)

func main() {
	ip := flag.String("ip", "", "address to listen on")
	flag.Parse()
	if *ip == "" {
		log.Fatal("-ip is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv("TCP_ECHO_SERVER") != "" {
		serveTCP(ctx, *ip)
		return
	}
	e := &echo{
		httpPort: envOr("HTTP_PORT", "3000"),
		context: podContext{Namespace: os.Getenv("NAMESPACE"), Ingress: os.Getenv("INGRESS_NAME"),
			Service: os.Getenv("SERVICE_NAME"), Pod: os.Getenv("POD_NAME")},
		attempts: map[string]int{}, out: os.Stdout,
	}
	handler := e.handler()
	var servers []*http.Server
	listen := func(port string, srv *http.Server, conf *tls.Config) {
		ln := listenOn(*ip, port, conf)
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
				log.Fatal(err)
			}
		}()
	}
	listen(e.httpPort, &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}, nil)
	h2c := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 && r.Header.Get("Upgrade") != "h2c" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "Expected h2c request")
			return
		}
		e.echo(w, r)
	}), ReadHeaderTimeout: time.Second, Protocols: new(http.Protocols)}
	h2c.Protocols.SetHTTP1(true)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	listen(envOr("H2C_PORT", "3001"), h2c, nil)
	if cert, key := os.Getenv("TLS_SERVER_CERT"), os.Getenv("TLS_SERVER_PRIVKEY"); cert != "" && key != "" {
		conf, err := tlsConfig(cert, key, os.Getenv("TLS_CLIENT_CACERTS"))
		if err != nil {
			log.Fatal(err)
		}
		listen(envOr("HTTPS_PORT", "8443"), &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}, conf)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(sctx)
	}
}

// listenOn listens on ip:port (with TLS when conf is set), or ends the
// program, and prints "listening ADDR".
func listenOn(ip, port string, conf *tls.Config) net.Listener {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		log.Fatal(err)
	}
	if conf != nil {
		ln = tls.NewListener(ln, conf)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	return ln
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func tlsConfig(certFile, keyFile, clientCAs string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS_SERVER_CERT, TLS_SERVER_PRIVKEY: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	if clientCAs != "" {
		data, err := os.ReadFile(clientCAs)
		if err != nil {
			return nil, fmt.Errorf("TLS_CLIENT_CACERTS: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("TLS_CLIENT_CACERTS %s: no certificate", clientCAs)
		}
		conf.ClientCAs, conf.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return conf, nil
}

type podContext struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

// answer is the JSON echo of a request, in echo-basic's format (what the
// suite's roundtripper.CapturedRequest reads).
type answer struct {
	Path     string              `json:"path"`
	Host     string              `json:"host"`
	Method   string              `json:"method"`
	Proto    string              `json:"proto"`
	Headers  map[string][]string `json:"headers"`
	HTTPPort string              `json:"httpPort"`
	podContext
	TLS *tlsAnswer `json:"tls,omitempty"`
}

type tlsAnswer struct {
	Version            string   `json:"version"`
	PeerCertificates   []string `json:"peerCertificates,omitempty"`
	ServerName         string   `json:"serverName"`
	NegotiatedProtocol string   `json:"negotiatedProtocol,omitempty"`
	CipherSuite        string   `json:"cipherSuite"`
}

type echo struct {
	httpPort string
	context  podContext

	mu       sync.Mutex // out and attempts
	attempts map[string]int
	out      io.Writer // standard output
}

var statusPath = regexp.MustCompile(`^/status/(\d\d\d)$`)

func (e *echo) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "OK")
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusBadRequest
		if m := statusPath.FindStringSubmatch(r.RequestURI); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("/retry/", e.retry)
	mux.Handle("/ws", websocket.Handler(func(ws *websocket.Conn) { _, _ = io.Copy(ws, ws) }))
	mux.HandleFunc("/", e.echo)
	// As echo-basic: a doubled slash in the path is one.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = strings.ReplaceAll(r.URL.Path, "//", "/")
		mux.ServeHTTP(w, r)
	})
}

// retry fails the first succeedAfter requests of a uuid: by resetting
// the connection, or with the status responseCode when given.
func (e *echo) retry(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	uuid := q.Get("uuid")
	succeedAfter, err := strconv.Atoi(q.Get("succeedAfter"))
	if uuid == "" || err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "uuid and succeedAfter are required")
		return
	}
	e.mu.Lock()
	fail := e.attempts[uuid] < succeedAfter
	if fail {
		e.attempts[uuid]++
	}
	e.mu.Unlock()
	if !fail {
		e.echo(w, r)
		return
	}
	if err := delay(r, "delayRetry"); err != nil {
		jsonError(w, err)
		return
	}
	if code, err := strconv.Atoi(q.Get("responseCode")); err == nil {
		w.WriteHeader(code)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		jsonError(w, err)
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // a reset, not a close
	}
	_ = conn.Close()
}

func (e *echo) echo(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	fmt.Fprintf(e.out, "Echoing back request made to %s to client (%s)\n", r.RequestURI, r.RemoteAddr)
	e.mu.Unlock()
	if err := delay(r, "delay"); err != nil {
		jsonError(w, err)
		return
	}
	a := answer{Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto, Headers: r.Header,
		HTTPPort: e.httpPort, podContext: e.context, TLS: tlsOf(r.TLS)}
	body, err := json.MarshalIndent(a, "", " ")
	if err != nil {
		jsonError(w, err)
		return
	}
	for _, list := range r.Header["X-Echo-Set-Header"] {
		for _, kv := range strings.Split(list, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(kv), ":")
			// Set directly: the name keeps its case; a second value
			// of a name joins the first.
			if old := w.Header()[name]; len(old) > 0 {
				old[0] += "," + strings.TrimSpace(value)
			} else {
				w.Header()[name] = []string{value}
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

func delay(r *http.Request, param string) error {
	d := r.FormValue(param)
	if d == "" {
		return nil
	}
	t, err := time.ParseDuration(d)
	if err != nil {
		return err
	}
	time.Sleep(t)
	return nil
}

func jsonError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusInternalServerError)
	body, _ := json.Marshal(map[string]string{"message": err.Error()})
	_, _ = w.Write(body)
}

func tlsOf(s *tls.ConnectionState) *tlsAnswer {
	if s == nil {
		return nil
	}
	a := &tlsAnswer{ServerName: s.ServerName, NegotiatedProtocol: s.NegotiatedProtocol,
		CipherSuite: tls.CipherSuiteName(s.CipherSuite)}
	switch s.Version {
	case tls.VersionTLS13:
		a.Version = "TLSv1.3"
	case tls.VersionTLS12:
		a.Version = "TLSv1.2"
	case tls.VersionTLS11:
		a.Version = "TLSv1.1"
	case tls.VersionTLS10:
		a.Version = "TLSv1.0"
	}
	for _, c := range s.PeerCertificates {
		a.PeerCertificates = append(a.PeerCertificates, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
	}
	return a
}
