package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func newEcho() *echo {
	return &echo{httpPort: "3000", context: podContext{Namespace: "ns", Pod: "web-1-2"}, attempts: map[string]int{}, out: io.Discard}
}

// TestEchoAnswersAsEchoBasic: the JSON echo the conformance suite reads,
// the response headers asked for in X-Echo-Set-Header (repeated names
// joined), /status/NNN, and a doubled slash in the path read as one.
func TestEchoAnswersAsEchoBasic(t *testing.T) {
	srv := httptest.NewServer(newEcho().handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/a//b?q=1", nil)
	req.Host = "echo.example.com"
	req.Header.Set("X-Echo-Set-Header", "X-One: 1, x-two:2,X-One:3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if a.Path != "/a//b?q=1" || a.Host != "echo.example.com" || a.Method != http.MethodPost || a.Pod != "web-1-2" ||
		a.Namespace != "ns" || a.HTTPPort != "3000" || a.TLS != nil {
		t.Errorf("echo %+v", a)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := resp.Header["X-One"]; len(got) != 1 || got[0] != "1,3" {
		t.Errorf("X-One %q, want one value 1,3", got)
	}
	if got := resp.Header.Get("X-Two"); got != "2" {
		t.Errorf("X-Two %q in %v", got, resp.Header)
	}
	for path, want := range map[string]int{"/status/418": 418, "/status/2000": 400, "/health": 200} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s answered %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestRetryFailsTheFirstAttemptsOfAUUID: /retry/ resets the connection
// (or answers responseCode) for the first succeedAfter requests of a
// uuid, then echoes; other uuids count on their own.
func TestRetryFailsTheFirstAttemptsOfAUUID(t *testing.T) {
	srv := httptest.NewServer(newEcho().handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(q string) (int, error) {
		resp, err := client.Get(srv.URL + "/retry/?" + q)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := 0; i < 2; i++ {
		if code, err := get("uuid=a&succeedAfter=2"); err == nil {
			t.Fatalf("attempt %d of a: answered %d, want a reset connection", i+1, code)
		}
	}
	if code, err := get("uuid=a&succeedAfter=2"); err != nil || code != 200 {
		t.Fatalf("third attempt of a: %d %v", code, err)
	}
	if code, err := get("uuid=b&succeedAfter=1&responseCode=503"); err != nil || code != 503 {
		t.Fatalf("first attempt of b: %d %v, want 503", code, err)
	}
	if code, err := get("uuid=b&succeedAfter=1&responseCode=503"); err != nil || code != 200 {
		t.Fatalf("second attempt of b: %d %v", code, err)
	}
	if code, err := get("succeedAfter=1"); err != nil || code != 400 {
		t.Fatalf("no uuid: %d %v, want 400", code, err)
	}
}
