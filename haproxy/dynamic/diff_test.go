package dynamic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"

	"github.com/openshift-router-go/router/haproxy/runtimeapi"
)

const base = `global
  maxconn 100
# a comment
defaults
  mode http
backend be_http:ns:r
  balance roundrobin
  server a 10.0.0.1:8080 cookie c1 weight 256 check inter 5000ms
  server _dynamic-pod-1 127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled
backend be_http:ns:s
  server b [fd00::1]:80 weight 1
`

func diffText(old, new string) Change { return Diff(Parse([]byte(old)), Parse([]byte(new))) }

func commands(c Change) []string {
	var out []string
	for _, cmd := range c.Commands {
		out = append(out, cmd.Text)
	}
	return out
}

func TestDiffFindsRuntimeCommands(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"identical", func(s string) string { return s }, nil},
		{"comments and blank lines only", func(s string) string { return strings.Replace(s, "# a comment\n", "\n# other\n", 1) }, nil},
		{"slot takes an endpoint", func(s string) string {
			return strings.Replace(s, "127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled", "10.0.0.2:8443 cookie d1 weight 256 check inter 5000ms", 1)
		}, []string{
			"set server be_http:ns:r/_dynamic-pod-1 addr 10.0.0.2 port 8443",
			"set server be_http:ns:r/_dynamic-pod-1 weight 256",
			"set server be_http:ns:r/_dynamic-pod-1 state ready",
		}},
		{"endpoint goes away", func(s string) string {
			return strings.Replace(s, "check inter 5000ms\n  server _dyn", "check inter 5000ms disabled\n  server _dyn", 1)
		}, []string{"set server be_http:ns:r/a state maint"}},
		{"endpoint moves to a slot: the slot is ready before the old line goes", func(s string) string {
			s = strings.Replace(s, "check inter 5000ms\n  server _dyn", "check inter 5000ms disabled\n  server _dyn", 1)
			return strings.Replace(s, "127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled", "10.0.0.2:8443 cookie d1 weight 256 check inter 5000ms", 1)
		}, []string{
			"set server be_http:ns:r/_dynamic-pod-1 addr 10.0.0.2 port 8443",
			"set server be_http:ns:r/_dynamic-pod-1 weight 256",
			"set server be_http:ns:r/_dynamic-pod-1 state ready",
			"set server be_http:ns:r/a state maint",
		}},
		{"weight", func(s string) string { return strings.Replace(s, "[fd00::1]:80 weight 1", "[fd00::1]:80 weight 3", 1) },
			[]string{"set server be_http:ns:s/b weight 3"}},
		{"live server moves: through maintenance (drops idle connections to the old address)", func(s string) string {
			return strings.Replace(s, "[fd00::1]:80", "[fd00::2]:81", 1)
		}, []string{
			"set server be_http:ns:s/b state maint",
			"set server be_http:ns:s/b addr fd00::2 port 81",
			"set server be_http:ns:s/b state ready",
		}},
		{"disabled server moves", func(s string) string {
			return strings.Replace(s, "127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled", "127.0.0.3:9 cookie d1 weight 0 check inter 5000ms disabled", 1)
		}, []string{"set server be_http:ns:r/_dynamic-pod-1 addr 127.0.0.3 port 9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := diffText(base, c.edit(base))
			if got.Reload {
				t.Fatalf("reload: %s at %s", got.Reason, got.Where)
			}
			if !reflect.DeepEqual(commands(got), c.want) {
				t.Errorf("commands\n got  %q\n want %q", commands(got), c.want)
			}
		})
	}
}

func TestDiffAddsAndRetiresServers(t *testing.T) {
	const old = `backend be_http:ns:up
  balance random
  cookie k insert indirect nocache dynamic
  server pod:a 10.0.0.1:80 weight 256 check inter 5000ms
  server pod:b 10.0.0.2:80 weight 256 check inter 5000ms
backend be_tcp:ns:src
  balance source
  hash-type consistent
  server pod:c 10.0.0.3:443 weight 256
`
	next := strings.Replace(old, "  server pod:a 10.0.0.1:80 weight 256 check inter 5000ms\n", "", 1)
	next = strings.Replace(next, "  server pod:c 10.0.0.3:443 weight 256\n", "  server pod:c 10.0.0.3:443 weight 256\n  server pod:d [fd00::4]:443 weight 256 disabled\n", 1)
	next += "" // pod:e is added in the middle of be_http:ns:up
	next = strings.Replace(next, "  server pod:b", "  server pod:e 10.0.0.5:8080 weight 256 check inter 5000ms ssl verify none alpn h2,http/1.1\n  server pod:b", 1)
	got := diffText(old, next)
	if got.Reload {
		t.Fatalf("reload: %s at %s", got.Reason, got.Where)
	}
	want := []string{
		"add server be_http:ns:up/pod:e 10.0.0.5:8080 weight 256 id 3 check inter 5000ms ssl verify none alpn h2,http/1.1",
		"enable health be_http:ns:up/pod:e",
		"enable server be_http:ns:up/pod:e",
		"add server be_tcp:ns:src/pod:d [fd00::4]:443 weight 256 id 2",
		"set server be_http:ns:up/pod:a state maint",
	}
	if !reflect.DeepEqual(commands(got), want) {
		t.Fatalf("commands\n got  %q\n want %q", commands(got), want)
	}
	// The retired server is still there, in maintenance: when its line
	// comes back it is enabled again, not added twice.
	back := diffText(old, next)
	again := Diff(back.Running, Parse([]byte(old)))
	if again.Reload {
		t.Fatalf("reload: %s at %s", again.Reason, again.Where)
	}
	// pod:d was added disabled: retiring it needs no command.
	want = []string{
		"set server be_http:ns:up/pod:a state ready",
		"set server be_http:ns:up/pod:e state maint",
	}
	if !reflect.DeepEqual(commands(again), want) {
		t.Errorf("commands\n got  %q\n want %q", commands(again), want)
	}

	// A map-based hash cannot take servers at runtime.
	static := "backend h\n  balance source\n  server a 10.0.0.1:80 weight 1\n"
	if got := diffText(static, static+"  server b 10.0.0.2:80 weight 1\n"); !got.Reload || got.Reason != ReasonServers {
		t.Errorf("server added to balance source: reload=%v reason=%q", got.Reload, got.Reason)
	}
}

// TestDiffGivesAddedServersTheirDynamicCookie: HAProxy 2.6 computes the
// dynamic cookies of the servers it loaded, not of servers added at
// runtime; setting the backend's key again does, before they serve.
func TestDiffGivesAddedServersTheirDynamicCookie(t *testing.T) {
	const old = `backend be_http:ns:r
  balance random
  cookie k insert indirect nocache httponly dynamic
  dynamic-cookie-key 0123abcd
  server pod:a 10.0.0.1:80 weight 256
`
	next := old + "  server pod:b 10.0.0.2:80 weight 256 check inter 5000ms\n  server pod:c 10.0.0.3:80 weight 256\n"
	got := diffText(old, next)
	if got.Reload {
		t.Fatalf("reload: %s at %s", got.Reason, got.Where)
	}
	want := []string{
		"add server be_http:ns:r/pod:b 10.0.0.2:80 weight 256 id 2 check inter 5000ms",
		"add server be_http:ns:r/pod:c 10.0.0.3:80 weight 256 id 3",
		"set dynamic-cookie-key backend be_http:ns:r 0123abcd",
		"enable health be_http:ns:r/pod:b",
		"enable server be_http:ns:r/pod:b",
		"enable server be_http:ns:r/pod:c",
	}
	if !reflect.DeepEqual(commands(got), want) {
		t.Fatalf("commands\n got  %q\n want %q", commands(got), want)
	}
	// A per-line cookie cannot be given to a server added at runtime.
	if got := diffText(old, old+"  server pod:d 10.0.0.4:80 cookie x weight 256\n"); !got.Reload || got.Reason != ReasonServers {
		t.Errorf("server with a cookie added: reload=%v reason=%q", got.Reload, got.Reason)
	}
}

// TestDiffAddsAgainADrainingServerWithOtherOptions: an endpoint that was
// alone (no health check) goes away and comes back among others within
// the drain: its server, still in maintenance, is deleted and added anew
// with the options of its new line, without a reload.
func TestDiffAddsAgainADrainingServerWithOtherOptions(t *testing.T) {
	const alone = `backend be_http:ns:r
  balance random
  server pod:a 10.0.0.1:80 weight 256
`
	gone := diffText(alone, "backend be_http:ns:r\n  balance random\n  server pod:b 10.0.0.2:80 weight 256\n")
	if gone.Reload {
		t.Fatalf("reload: %s at %s", gone.Reason, gone.Where)
	}
	back := Diff(gone.Running, Parse([]byte(`backend be_http:ns:r
  balance random
  server pod:b 10.0.0.2:80 weight 256
  server pod:a 10.0.0.1:80 weight 256 check inter 5000ms
`)))
	if back.Reload {
		t.Fatalf("reload: %s at %s", back.Reason, back.Where)
	}
	want := []string{
		"del server be_http:ns:r/pod:a",
		"add server be_http:ns:r/pod:a 10.0.0.1:80 weight 256 id 3 check inter 5000ms",
		"enable health be_http:ns:r/pod:a",
		"enable server be_http:ns:r/pod:a",
	}
	if !reflect.DeepEqual(commands(back), want) {
		t.Fatalf("commands\n got  %q\n want %q", commands(back), want)
	}
	if len(back.Running.Removed()) != 0 {
		t.Errorf("removed servers %v after pod:a came back", back.Running.Removed())
	}
	// A server in service whose options change still needs a reload.
	if got := diffText(alone, strings.Replace(alone, "weight 256", "weight 256 check inter 5000ms", 1)); !got.Reload || got.Reason != ReasonServerOptions {
		t.Errorf("options of a server in service changed: reload=%v reason=%q", got.Reload, got.Reason)
	}
}

func TestDiffNeedsReload(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(string) string
		reason string
	}{
		{"global setting", func(s string) string { return strings.Replace(s, "maxconn 100", "maxconn 101", 1) }, ReasonConfig},
		{"new backend that no removed one can stand for", func(s string) string { return s + "backend x\n  server y 10.0.0.9:1\n" }, ReasonBackends},
		{"a backend line, no free backend of its new shape", func(s string) string { return strings.Replace(s, "balance roundrobin", "balance leastconn", 1) }, ReasonBackends},
		{"server with a cookie added (not accepted on a dynamic server)", func(s string) string { return s + "  server c 10.0.0.3:80 cookie x\n" }, ReasonServers},
		{"server renamed (its cookie cannot be added)", func(s string) string { return strings.Replace(s, "server a ", "server z ", 1) }, ReasonServers},
		{"server added outside a backend", func(s string) string {
			return strings.Replace(s, "  mode http\n", "  mode http\n  server d 10.0.0.4:80\n", 1)
		}, ReasonServers},
		{"server with an unknown option added", func(s string) string { return s + "  server c 10.0.0.3:80 weight 1 frobnicate\n" }, ReasonServers},
		{"server option", func(s string) string { return strings.Replace(s, "cookie c1", "cookie c9", 1) }, ReasonServerOptions},
		{"health check added", func(s string) string { return strings.Replace(s, "weight 1\n", "weight 1 check\n", 1) }, ReasonServerOptions},
		{"address not an IP", func(s string) string { return strings.Replace(s, "[fd00::1]:80", "example.com:80", 1) }, ReasonServerAddress},
		{"weight not a number", func(s string) string { return strings.Replace(s, "weight 1\n", "weight 1x\n", 1) }, ReasonServerAddress},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := diffText(base, c.edit(base))
			if !got.Reload || got.Reason != c.reason {
				t.Errorf("got reload=%v reason=%q (%s), want reason %q", got.Reload, got.Reason, got.Where, c.reason)
			}
		})
	}
}

// TestApplyAgainstHAProxy runs the commands of a diff on a real haproxy and
// checks its servers end up as the new configuration says.
func TestApplyAgainstHAProxy(t *testing.T) {
	haproxy := prereq.NeedBinary(t, "haproxy")
	dir, err := os.MkdirTemp("", "dyn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "admin.sock")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	old := fmt.Sprintf(`global
  maxconn 100
  stats socket %s mode 600 level admin
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend f
  bind 127.0.0.1:%d
  default_backend be_http:ns:r
backend be_http:ns:r
  balance roundrobin
  cookie k insert indirect nocache
  server a 127.0.0.1:1 cookie c1 weight 256 check inter 5000ms
  server _dynamic-pod-1 127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled
`, sock, port)
	new := strings.Replace(old, "server _dynamic-pod-1 127.0.0.1:1 cookie d1 weight 0 check inter 5000ms disabled",
		"server _dynamic-pod-1 127.0.0.2:8081 cookie d1 weight 128 check inter 5000ms", 1)
	new = strings.Replace(new, "cookie c1 weight 256 check inter 5000ms\n", "cookie c1 weight 256 check inter 5000ms disabled\n", 1)
	cfgPath := filepath.Join(dir, "haproxy.config")
	if err := os.WriteFile(cfgPath, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-f", cfgPath)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	api := &runtimeapi.Client{Path: sock}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := api.Exec(context.Background(), "show info"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not start: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	change := diffText(old, new)
	if change.Reload {
		t.Fatalf("reload: %s", change.Reason)
	}
	if n, err := Apply(context.Background(), api, change.Commands); err != nil || n != len(change.Commands) {
		t.Fatalf("applied %d of %d: %v", n, len(change.Commands), err)
	}
	state, err := api.Exec(context.Background(), "show servers state be_http:ns:r")
	if err != nil {
		t.Fatal(err)
	}
	// Columns: be_id be_name srv_id srv_name srv_addr srv_op_state
	// srv_admin_state srv_uweight ... srv_port (19th).
	got := map[string]string{}
	for _, line := range strings.Split(state, "\n") {
		f := strings.Fields(line)
		if len(f) < 19 || f[1] != "be_http:ns:r" {
			continue
		}
		got[f[3]] = fmt.Sprintf("%s:%s maint=%v weight=%s", f[4], f[18], f[6] == "1" || f[6] == "5", f[7])
	}
	want := map[string]string{
		"a":              "127.0.0.1:1 maint=true weight=256",
		"_dynamic-pod-1": "127.0.0.2:8081 maint=false weight=128",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servers after Apply:\n got  %v\n want %v\n%s", got, want, state)
	}

	// A command HAProxy refuses is an error naming it.
	_, err = Apply(context.Background(), api, []Command{{Kind: "weight", Text: "set server be_http:ns:r/nosuch weight 1"}})
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("refused command: %v", err)
	}
}
