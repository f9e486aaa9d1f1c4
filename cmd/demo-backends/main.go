// Command demo-backends serves the small backends the examples/ manifests
// point at, on loopback: plain HTTP services that name themselves, and TLS
// services for the passthrough and re-encrypt examples.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

type backend struct {
	name, addr string
	// cert and key file names under the TLS directory; empty for plain HTTP.
	cert, key string
}

func main() {
	tlsDir := flag.String("tls-dir", "examples/tls", "directory with the demo backends' certificates")
	flag.Parse()
	backends := []backend{
		{name: "hello-v1", addr: "127.0.0.1:9001"},
		{name: "hello-v2", addr: "127.0.0.1:9002"},
		{name: "hello-v3", addr: "127.0.0.1:9003"},
		{name: "passthrough-backend", addr: "127.0.0.1:9443", cert: "passthrough.crt", key: "passthrough.key"},
		{name: "secure-backend", addr: "127.0.0.1:9444", cert: "backend.crt", key: "backend.key"},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []*http.Server
	for _, b := range backends {
		b := b
		srv := &http.Server{Addr: b.addr, Handler: handler(b.name), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: log.New(healthCheckNoise{}, "", log.LstdFlags)}
		servers = append(servers, srv)
		go func() {
			var err error
			if b.cert != "" {
				cert, cerr := tls.LoadX509KeyPair(filepath.Join(*tlsDir, b.cert), filepath.Join(*tlsDir, b.key))
				if cerr != nil {
					log.Fatalf("%s: %v", b.name, cerr)
				}
				srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
				err = srv.ListenAndServeTLS("", "")
			} else {
				err = srv.ListenAndServe()
			}
			if err != nil && err != http.ErrServerClosed {
				log.Fatalf("%s on %s: %v", b.name, b.addr, err)
			}
		}()
		log.Printf("%s listening on %s (tls=%v)", b.name, b.addr, b.cert != "")
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(sctx)
	}
}

func handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "backend=%s host=%s path=%s x-forwarded-proto=%s tls=%v\n",
			name, r.Host, r.URL.Path, r.Header.Get("X-Forwarded-Proto"), r.TLS != nil)
	})
}

// healthCheckNoise drops the server errors HAProxy's health checks cause
// (a TLS check negotiates h2 by ALPN and closes without a request) and
// logs the rest.
type healthCheckNoise struct{}

func (healthCheckNoise) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("error reading preface")) || bytes.Contains(p, []byte("TLS handshake error")) && bytes.Contains(p, []byte("EOF")) {
		return len(p), nil
	}
	return os.Stderr.Write(p)
}
