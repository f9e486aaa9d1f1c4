package dynamic

import (
	"reflect"
	"strings"
	"testing"
)

const renames = "/wd/conf/sticky_renames.map"

// renamesBase reads the renames map as the default template does; a
// comment naming the file does not count.
const renamesBase = "# reads map(/wd/conf/sticky_renames.map)\ndefaults routes\n  mode http\n" +
	"  http-request set-var(txn.sticky_rename) be_name,map(" + renames + ")\n\nfrontend f\n  bind :80\n"

// noRenamesBase reads none (OpenShift's template).
const noRenamesBase = "defaults routes\n  mode http\n\nfrontend f\n  bind :80\n"

// cookieBackend is a route's backend with a sticky cookie.
func cookieBackend(route, cookie, server string) string {
	return "\nbackend be_http:ns:" + route + "\n  mode http\n  balance random\n  cookie " + cookie +
		" insert indirect nocache httponly dynamic\n  dynamic-cookie-key k" + route + "\n  server " + server + " weight 1\n"
}

// renameCommands are the renames map's commands among cmds.
func renameCommands(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		if strings.Contains(c.Text, " "+renames+" ") {
			out = append(out, c.Text)
		}
	}
	return out
}

// mustDiff diffs and fails on a reload.
func mustDiff(t *testing.T, old *Config, config string) Change {
	t.Helper()
	ch := Diff(old, Parse([]byte(config)))
	if ch.Reload {
		t.Fatalf("reload: %s at %s", ch.Reason, ch.Where)
	}
	return ch
}

func TestRenamesMapIsFoundOnlyWhereAConfigurationReadsIt(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"read by a rule", renamesBase, renames},
		{"named in a comment only", "# map(" + renames + ")\n" + noRenamesBase, ""},
		{"another map", strings.ReplaceAll(renamesBase, "sticky_renames", "sticky_cookie"), ""},
		{"read by map_str", strings.ReplaceAll(renamesBase, ",map(", ",map_str("), renames},
		{"named by another keyword", "defaults routes\n  errorfile 503 (" + renames + ")\n", ""},
		{"none", noRenamesBase, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renamesMap([]byte(tc.config)); got != tc.want {
				t.Fatalf("renamesMap = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestABackendRunningUnderAnotherCookieNameIsRenamed(t *testing.T) {
	start := Parse([]byte(renamesBase + cookieBackend("a", "ca", "s1 10.0.0.1:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80")))

	// A route of a new name takes the deleted route's backend, which
	// goes on inserting the deleted route's name.
	took := mustDiff(t, start, renamesBase+cookieBackend("c", "cc", "s3 10.0.0.3:80")+cookieBackend("b", "cb", "s2 10.0.0.2:80"))
	if got := took.Running.RuntimeName("be_http:ns:c"); got != "be_http:ns:a" {
		t.Fatalf("be_http:ns:c runs as %q, want be_http:ns:a", got)
	}
	if got, want := renameCommands(took.Commands), []string{"add map " + renames + " be_http:ns:a cc|ca"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("taken over: %q, want %q", got, want)
	}

	// Its cookie name changes again (an annotation): the entry is set.
	renamed := mustDiff(t, took.Running, renamesBase+cookieBackend("c", "mine", "s3 10.0.0.3:80")+cookieBackend("b", "cb", "s2 10.0.0.2:80"))
	if got, want := renameCommands(renamed.Commands), []string{"set map " + renames + " be_http:ns:a mine|ca"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("renamed: %q, want %q", got, want)
	}

	// Back to the name HAProxy inserts: no rename left.
	back := mustDiff(t, renamed.Running, renamesBase+cookieBackend("c", "ca", "s3 10.0.0.3:80")+cookieBackend("b", "cb", "s2 10.0.0.2:80"))
	if got, want := renameCommands(back.Commands), []string{"del map " + renames + " be_http:ns:a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("back: %q, want %q", got, want)
	}

	// Deleted: its backend is an orphan again, its entry goes.
	gone := mustDiff(t, renamed.Running, renamesBase+cookieBackend("b", "cb", "s2 10.0.0.2:80"))
	if got, want := renameCommands(gone.Commands), []string{"del map " + renames + " be_http:ns:a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("deleted: %q, want %q", got, want)
	}
	// The entry's deletion comes after the orphan's servers are out; both
	// are removals (see Change.Removals).
	if last := gone.Commands[len(gone.Commands)-1].Text; !strings.HasPrefix(last, "del map ") {
		t.Fatalf("last command %q, want the entry's deletion", last)
	}
	if gone.Removals != 2 || len(gone.Commands) != 2 {
		t.Fatalf("removals %d of %q, want the server's maintenance and the entry's deletion", gone.Removals, commands(gone))
	}

	// A route's own cookie name changed in place, without a takeover.
	inPlace := mustDiff(t, start, renamesBase+cookieBackend("a", "named", "s1 10.0.0.1:80")+cookieBackend("b", "cb", "s2 10.0.0.2:80"))
	if got, want := commands(inPlace), []string{"add map " + renames + " be_http:ns:a named|ca"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("in place: %q, want %q", got, want)
	}

	// The same through DiffSections (the routes' sections only) and
	// DiffMoved (a backend gone).
	part := Parse([]byte(renamesBase + cookieBackend("a", "named", "s1 10.0.0.1:80"))).Sections(Parse([]byte(renamesBase)))
	if got, want := commands(DiffSections(start, part)), []string{"add map " + renames + " be_http:ns:a named|ca"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffSections: %q, want %q", got, want)
	}
	newC := Parse([]byte(renamesBase + cookieBackend("c", "cc", "s3 10.0.0.3:80"))).Sections(Parse([]byte(renamesBase)))
	moved := DiffMoved(start, newC, []string{"backend be_http:ns:a"})
	if moved.Reload {
		t.Fatalf("DiffMoved: reload %s at %s", moved.Reason, moved.Where)
	}
	if got, want := renameCommands(moved.Commands), renameCommands(took.Commands); !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffMoved: %q, want %q", got, want)
	}
}

func TestWithoutTheRenamesMapOnlyTheSameCookieNameStandsForANewBackend(t *testing.T) {
	start := Parse([]byte(noRenamesBase + cookieBackend("a", "ca", "s1 10.0.0.1:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80")))
	for _, tc := range []struct {
		name, config string
		reload       bool
	}{
		{"a route of another cookie name", noRenamesBase + cookieBackend("c", "cc", "s3 10.0.0.3:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80"), true},
		{"a cookie name changed in place", noRenamesBase + cookieBackend("a", "named", "s1 10.0.0.1:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80"), true},
		{"a route of the same cookie name", noRenamesBase + cookieBackend("c", "ca", "s3 10.0.0.3:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := Diff(start, Parse([]byte(tc.config)))
			if ch.Reload != tc.reload {
				t.Fatalf("reload %v (%s at %s), want %v", ch.Reload, ch.Reason, ch.Where, tc.reload)
			}
			for _, c := range ch.Commands {
				if strings.Contains(c.Text, " map ") {
					t.Fatalf("map command %q without a renames map", c.Text)
				}
			}
		})
	}
}

func TestSparesOfRoutesOfDifferentCookieNames(t *testing.T) {
	routes := cookieBackend("a", "ca", "s1 10.0.0.1:80") + cookieBackend("b", "cb", "s2 10.0.0.2:80")
	// With the renames map the two routes share a shape: a spare, with a
	// cookie name of its own, that a third route takes over.
	spares := string(Spares([]byte(renamesBase+routes), 1, 8))
	if !strings.Contains(spares, "\nbackend "+SparePrefix+"0\n") || !strings.Contains(spares, "\n  cookie "+SpareCookie+" insert indirect nocache httponly dynamic\n") {
		t.Fatalf("spares with the renames map:\n%s", spares)
	}
	start := Parse([]byte(renamesBase + routes + spares))
	ch := mustDiff(t, start, renamesBase+routes+cookieBackend("c", "cc", "s3 10.0.0.3:80"))
	if got, want := renameCommands(ch.Commands), []string{"add map " + renames + " " + SparePrefix + "0 cc|" + SpareCookie}; !reflect.DeepEqual(got, want) {
		t.Fatalf("spare taken: %q, want %q", got, want)
	}
	// Without it, each route is a shape of its own: no spare.
	if spares := Spares([]byte(noRenamesBase+routes), 1, 8); len(spares) != 0 {
		t.Fatalf("spares without the renames map:\n%s", spares)
	}
}

func TestRenamesFollowBackendsThroughOrphansAndMoves(t *testing.T) {
	b := cookieBackend("b", "cb", "s2 10.0.0.2:80")
	start := Parse([]byte(renamesBase + cookieBackend("a", "ca", "s1 10.0.0.1:80") + b))
	took := mustDiff(t, start, renamesBase+cookieBackend("c", "cc", "s3 10.0.0.3:80")+b) // c runs in a's backend: cc|ca

	for _, tc := range []struct {
		name   string
		from   *Config
		config string
		want   []string
	}{
		{
			// The orphan c leaves still inserts a's name: d, taking it,
			// is renamed from that one.
			name: "a renamed backend's orphan taken again",
			from: mustDiff(t, took.Running, renamesBase+b).Running, config: renamesBase + cookieBackend("d", "cd", "s4 10.0.0.4:80") + b,
			want: []string{"add map " + renames + " be_http:ns:a cd|ca"},
		},
		{
			name: "a renamed backend taken by another route in one change",
			from: took.Running, config: renamesBase + cookieBackend("d", "cd", "s4 10.0.0.4:80") + b,
			want: []string{"set map " + renames + " be_http:ns:a cd|ca"},
		},
		{
			name: "a route back in its own orphan under another cookie name",
			from: mustDiff(t, start, renamesBase+b).Running, config: renamesBase + cookieBackend("a", "named", "s1 10.0.0.1:80") + b,
			want: []string{"add map " + renames + " be_http:ns:a named|ca"},
		},
		{
			name: "a renamed route with no free backend of its new shape",
			from: took.Running, config: renamesBase + strings.Replace(cookieBackend("c", "cc", "s3 10.0.0.3:80"), "balance random", "balance leastconn", 1) +
				strings.Replace(cookieBackend("e", "ce", "s5 10.0.0.5:80"), "balance random", "balance leastconn", 1),
			want: nil, // a reload
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := Diff(tc.from, Parse([]byte(tc.config)))
			if tc.want == nil {
				if !ch.Reload {
					t.Fatalf("no reload: %q", commands(ch))
				}
				return
			}
			if ch.Reload {
				t.Fatalf("reload: %s at %s", ch.Reason, ch.Where)
			}
			if got := renameCommands(ch.Commands); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}

	t.Run("a renamed route moving to a spare of its new shape", func(t *testing.T) {
		lc := func(route, cookie, server string) string {
			return strings.Replace(cookieBackend(route, cookie, server), "balance random", "balance leastconn", 1)
		}
		shapes := lc("x", "cx", "s8 10.0.0.8:80") + lc("y", "cy", "s9 10.0.0.9:80")
		config := renamesBase + cookieBackend("a", "ca", "s1 10.0.0.1:80") + b + shapes
		spares := string(Spares([]byte(config), 1, 8))
		running := Parse([]byte(config + spares))
		named := mustDiff(t, running, strings.Replace(config, "cookie ca ", "cookie named ", 1)) // in place: named|ca
		moved := mustDiff(t, named.Running, renamesBase+lc("a", "named", "s1 10.0.0.1:80")+b+shapes)
		// be_spare:0 is of a and b's shape, be_spare:1 of x and y's.
		if got := moved.Running.RuntimeName("be_http:ns:a"); got != SparePrefix+"1" {
			t.Fatalf("be_http:ns:a runs as %q, want the spare", got)
		}
		want := []string{"add map " + renames + " " + SparePrefix + "1 named|" + SpareCookie, "del map " + renames + " be_http:ns:a"}
		if got := renameCommands(moved.Commands); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}
