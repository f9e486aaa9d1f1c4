package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
)

// The TCP mode (TCP_ECHO_SERVER set), as echo-basic's TCP server answers
// the conformance suite's TLSRoute and TCPRoute tests: on TCP_PORT
// (default 3000) and, with TLS_SERVER_CERT and TLS_SERVER_PRIV_KEY, TLS on
// TLS_PORT (8443), each connection is greeted with tcpWelcome; then, line
// by line, PING is answered PONG, IS_TLS true or false, and TEST with the
// JSON of tcpAnswer.

const tcpWelcome = "Gateway API Test TCP Server\n"

type tcpContext struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
	TCPPort   string `json:"tcpport"`
	TLSPort   string `json:"tlsport,omitempty"`
}

type tcpAnswer struct {
	tcpContext
	IsTLS bool          `json:"isTLS"`
	TLS   *tcpTLSAnswer `json:"tls,omitempty"`
}

type tcpTLSAnswer struct {
	Version            string `json:"version"`
	ServerName         string `json:"serverName"`
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	Curves             string `json:"curves,omitempty"`
	CipherSuite        string `json:"cipherSuite"`
}

// serveTCP listens on ip in TCP mode until ctx ends.
func serveTCP(ctx context.Context, ip string) {
	c := tcpContext{Namespace: os.Getenv("NAMESPACE"), Ingress: os.Getenv("INGRESS_NAME"),
		Service: os.Getenv("SERVICE_NAME"), Pod: os.Getenv("POD_NAME"),
		TCPPort: envOr("TCP_PORT", "3000"), TLSPort: envOr("TLS_PORT", "8443")}
	var lns []net.Listener
	listen := func(port string, conf *tls.Config) {
		ln := listenOn(ip, port, conf)
		lns = append(lns, ln)
		go acceptTCP(ctx, ln, c)
	}
	listen(c.TCPPort, nil)
	if cert, key := os.Getenv("TLS_SERVER_CERT"), os.Getenv("TLS_SERVER_PRIV_KEY"); cert != "" && key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			log.Fatalf("TLS_SERVER_CERT, TLS_SERVER_PRIV_KEY: %v", err)
		}
		listen(c.TLSPort, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	}
	<-ctx.Done()
	for _, ln := range lns {
		ln.Close()
	}
}

func acceptTCP(ctx context.Context, ln net.Listener, c tcpContext) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		go handleTCP(ctx, conn, c)
	}
}

// handleTCP greets a connection and answers its lines.
func handleTCP(ctx context.Context, conn net.Conn, c tcpContext) {
	defer conn.Close()
	a := tcpAnswer{tcpContext: c}
	if t, ok := conn.(*tls.Conn); ok {
		if err := t.HandshakeContext(ctx); err != nil {
			return
		}
		s := t.ConnectionState()
		a.IsTLS = true
		a.TLS = &tcpTLSAnswer{Version: tls.VersionName(s.Version), ServerName: s.ServerName,
			NegotiatedProtocol: s.NegotiatedProtocol, Curves: s.CurveID.String(), CipherSuite: tls.CipherSuiteName(s.CipherSuite)}
	}
	if _, err := fmt.Fprint(conn, tcpWelcome); err != nil {
		return
	}
	payload, err := json.Marshal(a)
	if err != nil {
		return
	}
	lines := bufio.NewScanner(conn)
	for lines.Scan() {
		switch lines.Text() {
		case "TEST":
			fmt.Fprintf(conn, "%s\n", payload)
		case "IS_TLS":
			fmt.Fprintf(conn, "%t\n", a.IsTLS)
		case "PING":
			fmt.Fprint(conn, "PONG\n")
		}
	}
}
