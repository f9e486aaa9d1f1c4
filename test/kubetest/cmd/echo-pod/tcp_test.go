package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"
)

// TestTCPModeAnswersAsEchoBasicsTCPServer: the welcome line, then PING,
// IS_TLS and TEST answered line by line (an unknown line ignored).
func TestTCPModeAnswersAsEchoBasicsTCPServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer ln.Close()
	go acceptTCP(ctx, ln, tcpContext{Namespace: "ns", Pod: "tcp-1-2", TCPPort: "3000", TLSPort: "8443"})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	read := func() string {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := read(); got != tcpWelcome {
		t.Fatalf("welcome %q", got)
	}
	if _, err := conn.Write([]byte("NOPE\nPING\nIS_TLS\nTEST\n")); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "PONG\n" {
		t.Fatalf("PING: %q", got)
	}
	if got := read(); got != "false\n" {
		t.Fatalf("IS_TLS: %q", got)
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(read()), &a); err != nil {
		t.Fatal(err)
	}
	if a["pod"] != "tcp-1-2" || a["namespace"] != "ns" || a["isTLS"] != false || a["tcpport"] != "3000" || a["tls"] != nil {
		t.Fatalf("TEST: %v", a)
	}
}
