package dynamic

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/layout"
)

const backendsBase = `global
  maxconn 100
frontend fe
  use_backend %[var(txn.backend)]
backend openshift_default
  mode http
`

// route is a route backend's section as the default template writes it,
// named be_http:ns:NAME with cookie key KEY.
func routeSection(name, key string, servers ...string) string {
	var b strings.Builder
	b.WriteString("backend be_http:ns:" + name + "\n  balance random\n  cookie c insert indirect nocache dynamic\n  dynamic-cookie-key " + key + "\n")
	for _, s := range servers {
		b.WriteString("  server " + s + " weight 1\n")
	}
	return b.String()
}

// TestDiffLetsBackendsGoAndTakesThemOver: a backend dropped stays in
// HAProxy as an orphan, its servers in maintenance (and drained then
// deleted); a new backend of the same shape takes it over — the same one
// created again, or another whose lines differ only in its name, servers
// and dynamic-cookie-key — running under the orphan's name; a new backend
// no orphan can stand for, or any other section changed, needs a reload.
func TestDiffLetsBackendsGoAndTakesThemOver(t *testing.T) {
	a := routeSection("a", "ka", "pod:x 10.0.0.1:80")
	b := routeSection("b", "kb", "pod:y 10.0.0.2:80")
	both := Parse([]byte(backendsBase + a + b))

	gone := Diff(both, Parse([]byte(backendsBase+b)))
	if gone.Reload {
		t.Fatalf("backend dropped: reload %s at %s", gone.Reason, gone.Where)
	}
	if want := []string{"set server be_http:ns:a/pod:x state maint"}; !reflect.DeepEqual(commands(gone), want) {
		t.Fatalf("backend dropped: commands %q, want %q", commands(gone), want)
	}
	if got := gone.Running.Removed(); len(got) != 1 || got[0] != (ServerRef{Backend: "be_http:ns:a", Name: "pod:x"}) {
		t.Fatalf("removed servers %v", got)
	}
	// Dropped again (nothing new): nothing to send.
	if again := Diff(gone.Running, Parse([]byte(backendsBase+b))); again.Reload || len(again.Commands) != 0 {
		t.Fatalf("orphan kept: %+v", again)
	}

	t.Run("the same backend back takes its orphan", func(t *testing.T) {
		back := Diff(gone.Running, Parse([]byte(backendsBase+a+b)))
		if back.Reload {
			t.Fatalf("reload %s at %s", back.Reason, back.Where)
		}
		if want := []string{"set server be_http:ns:a/pod:x state ready"}; !reflect.DeepEqual(commands(back), want) {
			t.Fatalf("commands %q, want %q", commands(back), want)
		}
		if back.Running.RuntimeName("be_http:ns:a") != "be_http:ns:a" || len(back.Running.Removed()) != 0 {
			t.Fatalf("running %+v", back.Running)
		}
	})
	t.Run("another backend of the same shape runs as the orphan", func(t *testing.T) {
		c := routeSection("c", "kc", "pod:z 10.0.0.3:80")
		took := Diff(gone.Running, Parse([]byte(backendsBase+b+c)))
		if took.Reload {
			t.Fatalf("reload %s at %s", took.Reason, took.Where)
		}
		want := []string{
			"add server be_http:ns:a/pod:z 10.0.0.3:80 weight 1 id 2",
			"set dynamic-cookie-key backend be_http:ns:a kc",
			"enable server be_http:ns:a/pod:z",
		}
		if !reflect.DeepEqual(commands(took), want) {
			t.Fatalf("commands\n got  %q\n want %q", commands(took), want)
		}
		if got := took.Running.RuntimeName("be_http:ns:c"); got != "be_http:ns:a" {
			t.Fatalf("be_http:ns:c runs as %q", got)
		}
		// Its old server drains under the name HAProxy knows.
		r := ServerRef{Backend: "be_http:ns:a", Name: "pod:x"}
		if !took.Running.IsRemoved(r) || !took.Running.Forget(r) || took.Running.IsRemoved(r) {
			t.Fatal("the orphan's server is not drained under its running name")
		}
		// Changed later, it is still sent under that name.
		moved := Diff(took.Running, Parse([]byte(backendsBase+b+strings.Replace(c, "10.0.0.3", "10.0.0.4", 1))))
		if moved.Reload || len(moved.Commands) == 0 || !strings.Contains(moved.Commands[0].Text, "be_http:ns:a/pod:z") {
			t.Fatalf("later change: %+v", moved)
		}
	})
	for _, tc := range []struct {
		name, next, reason string
	}{
		{"a backend of another shape", backendsBase + b + strings.Replace(routeSection("c", "kc"), "balance random", "balance leastconn", 1), ReasonBackends},
		{"two backends for one orphan", backendsBase + b + routeSection("c", "kc") + routeSection("d", "kd"), ReasonBackends},
		{"another section changed too", strings.Replace(backendsBase, "maxconn 100", "maxconn 101", 1) + b + routeSection("c", "kc"), ReasonConfig},
		{"a section other than a backend added", backendsBase + "frontend f2\n  mode http\n" + b, ReasonConfig},
	} {
		t.Run(tc.name+" reloads", func(t *testing.T) {
			got := Diff(gone.Running, Parse([]byte(tc.next)))
			if !got.Reload || got.Reason != tc.reason {
				t.Fatalf("got reload=%v %q at %s, want %q", got.Reload, got.Reason, got.Where, tc.reason)
			}
		})
	}
}

// BenchmarkDiffRouteDeleted10000: parsing and comparing a configuration of
// 10,000 route backends with one route deleted (the whole configuration
// is compared when backends come or go).
func BenchmarkDiffRouteDeleted10000(b *testing.B) {
	var all, less strings.Builder
	all.WriteString(backendsBase)
	less.WriteString(backendsBase)
	for i := 0; i < 10000; i++ {
		s := routeSection(fmt.Sprintf("r%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("pod:%d 10.%d.%d.%d:8080", i, i/65536, i/256%256, i%256))
		all.WriteString(s)
		if i != 5000 {
			less.WriteString(s)
		}
	}
	old := Parse([]byte(all.String()))
	next := []byte(less.String())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ch := Diff(old, Parse(next)); ch.Reload || len(ch.Commands) != 1 {
			b.Fatalf("%+v", ch)
		}
	}
}

// TestSparesCopyTheShapesRoutesShare: spares are made of the shapes at
// least two route backends share (not of one route's own, nor of
// sections without servers), without servers, each with its own cookie
// key; a new backend of that shape then runs in one without a reload.
func TestSparesCopyTheShapesRoutesShare(t *testing.T) {
	shared := func(name string) string {
		return "backend be_tcp:ns:" + name + "\n  mode tcp\n  balance source\n  hash-type consistent\n  server pod:" + name + " 10.0.0.1:443 weight 1\n"
	}
	own := routeSection("own", "kown", "pod:o 10.0.0.9:80") // cookie c, key of its own: shared by no other
	config := backendsBase + shared("a") + "# a comment\n" + shared("b") + own
	spares := string(Spares([]byte(config), 2, 64))
	want := "\nbackend be_spare:0\n  mode tcp\n  balance source\n  hash-type consistent\n" +
		"\nbackend be_spare:1\n  mode tcp\n  balance source\n  hash-type consistent\n"
	if spares != want {
		t.Fatalf("spares\n got  %q\n want %q", spares, want)
	}
	if got := Spares([]byte(config), 8, 1); strings.Count(string(got), "backend ") != 1 {
		t.Errorf("total not respected: %q", got)
	}
	if got := Spares([]byte(backendsBase+own), 8, 64); len(got) != 0 {
		t.Errorf("spares of a shape no two routes share: %q", got)
	}
	// Two routes with the same long lines (a tenant's header actions)
	// make no spare: copies of them would grow every configuration.
	long := func(name string) string {
		pad := strings.Repeat("  tcp-request content set-var(txn.pad) str("+strings.Repeat("p", 100)+")\n", 50)
		return strings.Replace(shared(name), "  mode tcp\n", "  mode tcp\n"+pad, 1)
	}
	if got := Spares([]byte(backendsBase+long("a")+long("b")), 8, 64); len(got) != 0 {
		t.Errorf("spares of sections over %d bytes: %d bytes", MaxSpareSection, len(got))
	}
	// Loaded with the spares, then a new passthrough route: it runs in a
	// spare, no reload.
	running := Diff(Parse([]byte(config+spares)), Parse([]byte(config))).Running
	next := Diff(running, Parse([]byte(config+shared("c"))))
	if next.Reload {
		t.Fatalf("new route of a shared shape: reload %s at %s", next.Reason, next.Where)
	}
	if got := next.Running.RuntimeName("be_tcp:ns:c"); !strings.HasPrefix(got, SparePrefix) {
		t.Fatalf("be_tcp:ns:c runs as %q, want a spare", got)
	}
	if name, ok := next.Running.Backend(next.Running.RuntimeName("be_tcp:ns:c")); !ok || name != "be_tcp:ns:c" {
		t.Fatalf("metrics name %q %v", name, ok)
	}
	if _, ok := next.Running.Backend("be_spare:1"); ok {
		t.Error("a spare not taken is reported")
	}
}

// TestSparesAreBudgetedPerNamespace: between two reloads a namespace takes
// at most half of a shape's spares; its next route of that shape needs a
// reload (or an orphan of its own), while another namespace still gets
// one.
func TestSparesAreBudgetedPerNamespace(t *testing.T) {
	pt := func(ns, name string) string {
		return "backend be_tcp:" + ns + ":" + name + "\n  mode tcp\n  balance source\n  hash-type consistent\n  server pod:" + name + " 10.0.0.1:443 weight 1\n"
	}
	config := backendsBase + pt("base", "a") + pt("base", "b")
	spares := string(Spares([]byte(config), 4, 64))
	if n := strings.Count(spares, "backend "); n != 4 {
		t.Fatalf("%d spares, want 4", n)
	}
	running := Diff(Parse([]byte(config+spares)), Parse([]byte(config))).Running
	// Tenant t1 adds two routes: half of the four spares.
	two := config + pt("t1", "x1") + pt("t1", "x2")
	c := Diff(running, Parse([]byte(two)))
	if c.Reload {
		t.Fatalf("two routes of t1: reload %s at %s", c.Reason, c.Where)
	}
	// A third of t1: over its budget.
	if third := Diff(c.Running, Parse([]byte(two+pt("t1", "x3")))); !third.Reload || third.Reason != ReasonBackends {
		t.Fatalf("a third route of t1 took a spare: %+v", third)
	}
	// Another tenant's route still gets one.
	other := Diff(c.Running, Parse([]byte(two+pt("t2", "y1"))))
	if other.Reload {
		t.Fatalf("t2's route: reload %s at %s", other.Reason, other.Where)
	}
	if got := other.Running.RuntimeName("be_tcp:t2:y1"); !strings.HasPrefix(got, SparePrefix) {
		t.Fatalf("be_tcp:t2:y1 runs as %q, want a spare", got)
	}
	// A deleted route gives its spare back: t1 may take one again.
	gone := Diff(c.Running, Parse([]byte(config+pt("t1", "x1"))))
	if gone.Reload {
		t.Fatalf("t1 deletes x2: reload %s", gone.Reason)
	}
	if again := Diff(gone.Running, Parse([]byte(config+pt("t1", "x1")+pt("t1", "x3")))); again.Reload {
		t.Fatalf("t1 adds x3 after deleting x2: reload %s at %s", again.Reason, again.Where)
	}
}

// TestABackendWhoseLinesChangeMovesToAFreeBackendOfItsNewShape: a route
// whose backend lines change in what HAProxy cannot change at runtime
// (its balance here) moves to a free backend of its new shape — a spare,
// or the backend it ran in before — with its servers; the backend it
// leaves becomes an orphan under a header of its own, its servers in
// maintenance. Its map entries follow it (FileCommands): values are set,
// keys added under the new name and deleted under the old. Without a
// free backend of the new shape it reloads.
func TestABackendWhoseLinesChangeMovesToAFreeBackendOfItsNewShape(t *testing.T) {
	a := routeSection("a", "ka", "pod:x 10.0.0.1:80")
	b := routeSection("b", "kb", "pod:y 10.0.0.2:80")
	leastconn := func(s string) string { return strings.Replace(s, "balance random", "balance leastconn", 1) }
	spare := leastconn(strings.Replace(routeSection("x", "ks"), "be_http:ns:x", SparePrefix+"0", 1))
	running := Parse([]byte(backendsBase + a + b + spare))
	// The spare is there from the start (the configuration does not have it).
	start := Diff(running, Parse([]byte(backendsBase+a+b)))
	if start.Reload || len(start.Commands) != 0 {
		t.Fatalf("start: %+v", start)
	}

	move := Diff(start.Running, Parse([]byte(backendsBase+leastconn(a)+b)))
	if move.Reload {
		t.Fatalf("balance changed: reload %s at %s", move.Reason, move.Where)
	}
	want := []string{
		"add server " + SparePrefix + "0/pod:x 10.0.0.1:80 weight 1 id 1",
		"set dynamic-cookie-key backend " + SparePrefix + "0 ka",
		"enable server " + SparePrefix + "0/pod:x",
		"set server be_http:ns:a/pod:x state maint",
	}
	if !reflect.DeepEqual(commands(move), want) {
		t.Fatalf("balance changed: commands\n got  %q\n want %q", commands(move), want)
	}
	if got := move.Running.RuntimeName("be_http:ns:a"); got != SparePrefix+"0" {
		t.Fatalf("be_http:ns:a runs as %q", got)
	}
	if got, ok := move.Running.Backend("be_http:ns:a"); ok {
		t.Fatalf("the backend it left stands for %q, want an orphan", got)
	}
	if r := (ServerRef{Backend: "be_http:ns:a", Name: "pod:x"}); !move.Running.IsRemoved(r) {
		t.Fatal("the backend it left keeps its server in service")
	}

	t.Run("its map entries follow it", func(t *testing.T) {
		wd := "/wd"
		hosts, cookies := wd+"/conf/os_http_be.map", wd+"/conf/sticky_cookie.map"
		config := []byte("frontend f\n  use_backend %[req.hdr(host),lower,map(" + hosts + ")]\n  http-request set-var(txn.c) be_name,map_str(" + cookies + ")\n")
		all := map[string][]byte{
			hosts:   []byte("a.example.com be_http:ns:a\nb.example.com be_http:ns:b\n"),
			cookies: []byte("be_http:ns:a ca\nbe_http:ns:b cb\n"),
		}
		fc := FileCommands(Files{WD: layout.New(wd), Config: config, Running: move.Running, WasRunning: start.Running,
			All: func() map[string][]byte { return all }})
		if fc.Reload {
			t.Fatalf("reload for %s", fc.File)
		}
		var got []string
		for _, c := range append(fc.Commands, fc.Removals...) {
			got = append(got, c.Text)
		}
		want := []string{
			"set map " + hosts + " a.example.com " + SparePrefix + "0",
			"add map " + cookies + " " + SparePrefix + "0 ca",
			"del map " + cookies + " be_http:ns:a",
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("commands\n got  %q\n want %q", got, want)
		}
		if fc := FileCommands(Files{WD: layout.New(wd), Config: config, Running: move.Running, WasRunning: start.Running}); !fc.Reload {
			t.Fatal("without the files' contents a move must reload")
		}
	})

	t.Run("back to its old lines, it takes the backend it left", func(t *testing.T) {
		back := Diff(move.Running, Parse([]byte(backendsBase+a+b)))
		if back.Reload {
			t.Fatalf("reload %s at %s", back.Reason, back.Where)
		}
		if got := back.Running.RuntimeName("be_http:ns:a"); got != "be_http:ns:a" {
			t.Fatalf("be_http:ns:a runs as %q", got)
		}
		if r := (ServerRef{Backend: SparePrefix + "0", Name: "pod:x"}); !back.Running.IsRemoved(r) {
			t.Fatal("the spare it left keeps its server in service")
		}
		// Its host leads to its own backend again.
		hosts := "/wd/conf/os_http_be.map"
		config := []byte("frontend f\n  use_backend %[req.hdr(host),lower,map(" + hosts + ")]\n")
		all := map[string][]byte{hosts: []byte("a.example.com be_http:ns:a\n")}
		fc := FileCommands(Files{WD: layout.New("/wd"), Config: config, Running: back.Running, WasRunning: move.Running,
			All: func() map[string][]byte { return all }})
		if fc.Reload || len(fc.Commands) != 1 || fc.Commands[0].Text != "set map "+hosts+" a.example.com be_http:ns:a" {
			t.Fatalf("map commands %+v", fc)
		}
		// And again: the spare it left is free again.
		if again := Diff(back.Running, Parse([]byte(backendsBase+leastconn(a)+b))); again.Reload || again.Running.RuntimeName("be_http:ns:a") != SparePrefix+"0" {
			t.Fatalf("moved again: %+v", again)
		}
	})

	t.Run("no free backend of the new shape reloads", func(t *testing.T) {
		source := strings.Replace(b, "balance random", "balance source\n  hash-type consistent", 1)
		got := Diff(move.Running, Parse([]byte(backendsBase+leastconn(a)+source)))
		if !got.Reload || got.Reason != ReasonBackends {
			t.Fatalf("got reload=%v %q at %s, want %q", got.Reload, got.Reason, got.Where, ReasonBackends)
		}
	})
}

// TestServersWithACAFileAreNotDeleted: a server whose line goes is put in
// maintenance either way, but only one without a ca-file is listed for
// deletion (HAProxy 2.6.12 corrupted its heap deleting one that had
// served requests): the other stays in maintenance until the next reload.
func TestServersWithACAFileAreNotDeleted(t *testing.T) {
	secure := "backend be_secure:ns:a\n  balance random\n  server pod:x 10.0.0.1:8443 weight 1 ssl verify required ca-file /wd/router/cacerts/ns:a.pem\n  server pod:y 10.0.0.2:8443 weight 1 ssl verify none\n"
	running := Parse([]byte(backendsBase + secure))
	gone := Diff(running, Parse([]byte(backendsBase)))
	if gone.Reload {
		t.Fatalf("reload %s", gone.Reason)
	}
	want := []string{"set server be_secure:ns:a/pod:x state maint", "set server be_secure:ns:a/pod:y state maint"}
	if !reflect.DeepEqual(commands(gone), want) {
		t.Fatalf("commands %q, want %q", commands(gone), want)
	}
	if got := gone.Running.Removed(); len(got) != 1 || got[0] != (ServerRef{Backend: "be_secure:ns:a", Name: "pod:y"}) {
		t.Fatalf("servers to delete %v, want pod:y alone", got)
	}
}

// TestABackendWhoseServersChangeOptionsMovesToAFreeBackend: server
// options the runtime API cannot change in place (a re-encrypt route's
// servers verifying with a CA of their own from now on) move the route to
// a free backend of its shape, its servers added there with their new
// lines; without one, the reload says server-options, as before.
func TestABackendWhoseServersChangeOptionsMovesToAFreeBackend(t *testing.T) {
	none := routeSection("a", "ka", "pod:x 10.0.0.1:80 ssl verify none")
	ca := routeSection("a", "ka", "pod:x 10.0.0.1:80 ssl verify required ca-file /wd/cacerts/ns:a.pem")
	b := routeSection("b", "kb", "pod:y 10.0.0.2:80")
	spare := strings.Replace(routeSection("x", "ks"), "be_http:ns:x", SparePrefix+"0", 1)

	t.Run("without a free backend: a reload for the server's options", func(t *testing.T) {
		ch := Diff(Parse([]byte(backendsBase+none+b)), Parse([]byte(backendsBase+ca+b)))
		if !ch.Reload || ch.Reason != ReasonServerOptions {
			t.Fatalf("reload=%v reason %q, want %q", ch.Reload, ch.Reason, ReasonServerOptions)
		}
	})

	start := Diff(Parse([]byte(backendsBase+none+b+spare)), Parse([]byte(backendsBase+none+b)))
	if start.Reload {
		t.Fatalf("start: %+v", start)
	}
	for _, tt := range []struct {
		name string
		diff func(running *Config) Change
	}{
		{"whole configuration", func(running *Config) Change { return Diff(running, Parse([]byte(backendsBase+ca+b))) }},
		{"sections: the whole diff is asked for", func(running *Config) Change {
			ch := DiffSections(running, Parse([]byte(backendsBase+ca)))
			if !ch.Reload || ch.Reason != ReasonBackends {
				t.Fatalf("DiffSections: reload=%v reason %q, want %q", ch.Reload, ch.Reason, ReasonBackends)
			}
			return Diff(running, Parse([]byte(backendsBase+ca+b)))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			move := tt.diff(start.Running)
			if move.Reload {
				t.Fatalf("reload %s at %s", move.Reason, move.Where)
			}
			want := []string{
				"add server " + SparePrefix + "0/pod:x 10.0.0.1:80 weight 1 id 1 ssl verify required ca-file /wd/cacerts/ns:a.pem",
				"set dynamic-cookie-key backend " + SparePrefix + "0 ka",
				"enable server " + SparePrefix + "0/pod:x",
				"set server be_http:ns:a/pod:x state maint",
			}
			if !reflect.DeepEqual(commands(move), want) {
				t.Fatalf("commands\n got  %q\n want %q", commands(move), want)
			}
			if got := move.Running.RuntimeName("be_http:ns:a"); got != SparePrefix+"0" {
				t.Fatalf("be_http:ns:a runs as %q", got)
			}
			back := Diff(move.Running, Parse([]byte(backendsBase+none+b)))
			if back.Reload {
				t.Fatalf("back to verify none: reload %s at %s", back.Reason, back.Where)
			}
			if got := back.Running.RuntimeName("be_http:ns:a"); got != "be_http:ns:a" {
				t.Fatalf("back: be_http:ns:a runs as %q", got)
			}
		})
	}
}

// TestABackendWhoseDestinationCAChangedMovesToAFreeBackend: the servers
// of a re-encrypt route whose destination CA file's contents changed
// (RenewServers) keep the certificates HAProxy created them with, so the
// route moves to a free backend whose servers are added anew — never to
// a backend whose servers read the file already, its own included — and
// reloads (ReasonDestinationCA) when there is none; other backends stay.
func TestABackendWhoseDestinationCAChangedMovesToAFreeBackend(t *testing.T) {
	const caFile = "/wd/cacerts/ns:a.pem"
	ca := routeSection("a", "ka", "pod:x 10.0.0.1:80 ssl verify required ca-file "+caFile)
	b := routeSection("b", "kb", "pod:y 10.0.0.2:80 ssl verify required ca-file /wd/cacerts/ns:b.pem")
	spare := func(n string) string {
		return strings.Replace(routeSection("x", "ks"), "be_http:ns:x", SparePrefix+n, 1)
	}
	renewed := func() *Config {
		c := Parse([]byte(backendsBase + ca + b))
		c.RenewServers([]string{caFile})
		return c
	}

	t.Run("without a free backend: a reload", func(t *testing.T) {
		ch := Diff(Parse([]byte(backendsBase+ca+b)), renewed())
		if !ch.Reload || ch.Reason != ReasonDestinationCA {
			t.Fatalf("reload=%v reason %q, want %q", ch.Reload, ch.Reason, ReasonDestinationCA)
		}
	})
	t.Run("sections: the whole diff is asked for", func(t *testing.T) {
		part := Parse([]byte(backendsBase + ca))
		part.RenewServers([]string{caFile})
		ch := DiffSections(Parse([]byte(backendsBase+ca+b)), part)
		if !ch.Reload || ch.Reason != ReasonBackends {
			t.Fatalf("DiffSections: reload=%v reason %q, want %q", ch.Reload, ch.Reason, ReasonBackends)
		}
	})

	// Four spares: a namespace may take half of them.
	start := Diff(Parse([]byte(backendsBase+ca+b+spare("0")+spare("1")+spare("2")+spare("3"))), Parse([]byte(backendsBase+ca+b)))
	if start.Reload {
		t.Fatalf("start: %+v", start)
	}
	move := Diff(start.Running, renewed())
	if move.Reload {
		t.Fatalf("reload %s at %s", move.Reason, move.Where)
	}
	want := []string{
		"add server " + SparePrefix + "0/pod:x 10.0.0.1:80 weight 1 id 1 ssl verify required ca-file " + caFile,
		"set dynamic-cookie-key backend " + SparePrefix + "0 ka",
		"enable server " + SparePrefix + "0/pod:x",
		"set server be_http:ns:a/pod:x state maint",
	}
	if !reflect.DeepEqual(commands(move), want) {
		t.Fatalf("commands\n got  %q\n want %q", commands(move), want)
	}
	if got := move.Running.RuntimeName("be_http:ns:a"); got != SparePrefix+"0" {
		t.Fatalf("be_http:ns:a runs as %q", got)
	}
	if got := move.Running.RuntimeName("be_http:ns:b"); got != "be_http:ns:b" {
		t.Fatalf("be_http:ns:b runs as %q", got)
	}
	// Nothing more to do once moved.
	if again := Diff(move.Running, Parse([]byte(backendsBase+ca+b))); again.Reload || len(again.Commands) != 0 {
		t.Fatalf("after the move: %+v", again)
	}

	// Changed again, twice: neither back to its own backend nor to the
	// first spare (their servers read the file): to the next spares.
	running := move.Running
	for i, want := range []string{SparePrefix + "1", SparePrefix + "2"} {
		ch := Diff(running, renewed())
		if ch.Reload {
			t.Fatalf("change %d: reload %s at %s", i+2, ch.Reason, ch.Where)
		}
		if got := ch.Running.RuntimeName("be_http:ns:a"); got != want {
			t.Fatalf("change %d: be_http:ns:a runs as %q, want %q", i+2, got, want)
		}
		running = ch.Running
	}
}
