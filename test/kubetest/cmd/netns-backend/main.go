// Command netns-backend is the test backend that kubetest runs inside a
// network namespace (ip netns exec). It listens on one address and answers
// every request with one line naming itself, in the same format as
// cmd/demo-backends and test/e2e:
//
//	backend=NAME host=HOST path=PATH x-forwarded-proto=PROTO tls=BOOL
//
// With -cert and -key it serves TLS. With -forward TARGET it answers nothing
// itself: it passes each TCP connection to TARGET (IP:PORT; the conformance
// run's way to a Gateway's address on port 443). It prints "listening ADDR"
// on stdout once the socket is bound, and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to listen on (IP:PORT)")
	name := flag.String("name", "", "backend name in the answer")
	certFile := flag.String("cert", "", "TLS certificate (PEM); with -key, serve TLS")
	keyFile := flag.String("key", "", "TLS key (PEM)")
	forward := flag.String("forward", "", "pass each connection to this IP:PORT instead of answering")
	flag.Parse()
	if *listen == "" || *name == "" {
		log.Fatal("-listen and -name are required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *forward != "" {
		fmt.Printf("listening %s\n", ln.Addr())
		forwardAll(ln, *forward)
		return
	}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	}
	srv := &http.Server{Handler: handler(*name), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("listening %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

func handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "backend=%s host=%s path=%s x-forwarded-proto=%s tls=%v\n",
			name, r.Host, r.URL.Path, r.Header.Get("X-Forwarded-Proto"), r.TLS != nil)
	})
}

// forwardAll passes each connection of ln to target until SIGTERM or
// SIGINT.
func forwardAll(ln net.Listener, target string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d := net.Dialer{Timeout: 5 * time.Second}
			t, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				return
			}
			defer t.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(t, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, t); done <- struct{}{} }()
			<-done
		}()
	}
}
