package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// proxyHTTPServer answers one HTTP request per connection with status, and
// only after a "PROXY UNKNOWN" line when wantProxy is set (as HAProxy's
// accept-proxy listener); it records what it saw first.
func proxyHTTPServer(t *testing.T, wantProxy bool, status int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				if wantProxy {
					line, err := br.ReadString('\n')
					if err != nil || line != "PROXY UNKNOWN\r\n" {
						return // HAProxy drops a connection without the header
					}
				}
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status)
			}(c)
		}
	}()
	return "http://" + ln.Addr().String() + "/_______internal_router_healthz"
}

func TestReadyHTTPCheckSpeaksPROXYWhenTheListenerExpectsIt(t *testing.T) {
	tests := []struct {
		name                 string
		listenerProxy, check bool
		status               int
		wantErr              string
	}{
		{"plain, 200", false, false, 200, ""},
		{"plain, 302 is ready", false, false, 302, ""},
		{"plain, 503", false, false, 503, "HTTP status 503"},
		{"PROXY, 200", true, true, 200, ""},
		{"PROXY, 503", true, true, 503, "HTTP status 503"},
		{"plain request to a PROXY listener fails", true, false, 200, "EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := proxyHTTPServer(t, tc.listenerProxy, tc.status)
			c := readyHTTPCheck(url, tc.check)
			wantName := map[bool]string{false: "backend-http", true: "backend-proxy-http"}[tc.check]
			if c.Name != wantName {
				t.Errorf("check %q, want %q", c.Name, wantName)
			}
			err := c.Run(context.Background())
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
