package dynamic

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/layout"
)

func TestFileCommandsReplaceCertificatesAndReloadTheRest(t *testing.T) {
	wd := layout.New("/wd")
	cert := filepath.Join(wd.Certs(), "ns:r.pem")
	small := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	config := []byte("global\n  tune.bufsize 4096\n")
	for _, c := range []struct {
		name     string
		changed  []string
		data     map[string][]byte
		reload   bool
		tooLarge bool
		certs    int
	}{
		{"the configuration itself is the diff's", []string{wd.Config()}, nil, false, false, 0},
		{"a route certificate is replaced in place", []string{wd.Config(), cert}, map[string][]byte{cert: small}, false, false, 1},
		{"a removed certificate reloads", []string{cert}, nil, true, false, 0},
		{"a map reloads", []string{filepath.Join(wd.Conf(), "os_http_be.map")}, map[string][]byte{filepath.Join(wd.Conf(), "os_http_be.map"): []byte("x y\n")}, true, false, 0},
		{"a destination CA reloads", []string{filepath.Join(wd.CACerts(), "ns:r.pem")}, map[string][]byte{filepath.Join(wd.CACerts(), "ns:r.pem"): small}, true, false, 0},
		{"a certificate longer than tune.bufsize allows reloads", []string{cert}, map[string][]byte{cert: []byte(strings.Repeat("x", 4096))}, true, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FileCommands(Files{WD: wd, Config: config, Changed: c.changed, New: c.data})
			if got.Reload != c.reload || got.TooLarge != c.tooLarge || got.Certificates != c.certs {
				t.Fatalf("got %+v", got)
			}
			if c.certs > 0 && (len(got.Commands) != 2 || got.Commands[0].Text != "set ssl cert "+cert || got.Commands[1].Text != "commit ssl cert "+cert) {
				t.Fatalf("commands %+v", got.Commands)
			}
		})
	}
}

// TestFileCommandsChangeMapEntries: a map used only for exact and prefix
// lookups gets its entries added, set and deleted (values that name a
// backend running under another name sent with that name); a map used
// with map_reg, with a key twice or with a word the CLI reads otherwise,
// or whose contents HAProxy runs are not known, reloads.
func TestFileCommandsChangeMapEntries(t *testing.T) {
	wd := layout.New("/wd")
	m := filepath.Join(wd.Conf(), "route_http.map")
	config := []byte("frontend f\n  http-request set-var(txn.backend) var(txn.route_key),map_beg(" + m + ")\n")
	old := "a.example.com/ be_http:ns:a\nb.example.com/ be_http:ns:b\n"
	running := Parse([]byte("backend be_http:ns:b\n  balance random\nbackend be_http:ns:a\n  balance random\n"))
	running = Diff(running, Parse([]byte("backend be_http:ns:c\n  balance random\n"))).Running // c runs as a or b
	if running.RuntimeName("be_http:ns:c") == "be_http:ns:c" {
		t.Fatal("be_http:ns:c does not run as an orphan")
	}
	// forwarded_headers.map is keyed by backend: c, taking over orphan a or
	// b, gets its entry under that name. When a's entry goes as c takes a
	// over, a's entry is c's: set, not added and deleted.
	fwd := filepath.Join(wd.Conf(), "forwarded_headers.map")
	fwdConfig := []byte("frontend f\n  http-request set-var(txn.fwd_other) var(txn.backend),map(" + fwd + ")\n")
	fwdWant := []string{"add map " + fwd + " " + running.RuntimeName("be_http:ns:c") + " never", "del map " + fwd + " be_http:ns:a"}
	if running.RuntimeName("be_http:ns:c") == "be_http:ns:a" {
		fwdWant = []string{"set map " + fwd + " be_http:ns:a never"}
	}
	for _, c := range []struct {
		name   string
		config []byte
		new    string
		old    map[string][]byte
		want   []string
		reload bool
	}{
		{name: "entries added, set and deleted", config: config,
			new:  "b.example.com/ @redirect\nc.example.com/x/ be_http:ns:c\n",
			want: []string{"set map " + m + " b.example.com/ @redirect", "add map " + m + " c.example.com/x/ be_http:ns:" + running.RuntimeName("be_http:ns:c")[len("be_http:ns:"):], "del map " + m + " a.example.com/"}},
		{name: "keys that name a backend are sent as it runs", config: fwdConfig,
			old:  map[string][]byte{fwd: []byte("be_http:ns:a never\n")},
			new:  "be_http:ns:c never\n",
			want: fwdWant},
		{name: "a map of integers (map_str_int) changes too", config: []byte("defaults routes\n  http-request set-var(txn.t) be_name,map_str_int(" + fwd + ")\n"),
			old:  map[string][]byte{fwd: []byte("be_http:ns:b 5000\n")},
			new:  "be_http:ns:b 7000\n",
			want: []string{"set map " + fwd + " be_http:ns:b 7000"}},
		{name: "a semicolon in a value is escaped", config: fwdConfig,
			old:  map[string][]byte{fwd: []byte("be_http:ns:b max-age=1\n")},
			new:  "be_http:ns:b max-age=1;includeSubDomains;preload\n",
			want: []string{`set map ` + fwd + ` be_http:ns:b max-age=1\;includeSubDomains\;preload`}},
		{name: "a map used with map_reg reloads", config: []byte("frontend f\n  use_backend %[path,map_reg(" + m + ")]\n"), new: old + "c.example.com/ x\n", reload: true},
		{name: "a map used as a map and otherwise reloads", config: append(append([]byte{}, config...), "  acl x path -f "+m+"\n"...), new: old + "c.example.com/ x\n", reload: true},
		{name: "a key twice reloads", config: config, new: old + "a.example.com/ y\n", reload: true},
		{name: "a word with a semicolon reloads", config: config, new: old + "c.example.com/;show ssl cert x\n", reload: true},
		{name: "contents not known reload", config: config, new: old + "c.example.com/ x\n", old: map[string][]byte{}, reload: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			oldFiles := c.old
			if oldFiles == nil {
				oldFiles = map[string][]byte{m: []byte(old)}
			}
			changed := m
			for p := range oldFiles {
				changed = p
			}
			got := FileCommands(Files{WD: wd, Config: c.config, Changed: []string{changed}, New: map[string][]byte{changed: []byte(c.new)}, Old: oldFiles, Running: running})
			wantCommands(t, got, c.reload, c.want)
		})
	}
}

// TestFileCommandsAddAndDeleteCrtListLines: a route's certificate added
// at runtime gets a name without a colon (HAProxy 2.6 cannot delete a
// crt-list line whose name has one) and its line; deleted later, its line
// and certificate go. A line HAProxy loaded from the file (a colon in its
// name) stays when its route is deleted, showing the bind line's default
// certificate (a tombstone), and gets the route's certificate back when
// the route is created again; with strict-sni it reloads instead. A line
// changed in place reloads.
func TestFileCommandsAddAndDeleteCrtListLines(t *testing.T) {
	wd := layout.New("/wd")
	list := filepath.Join(wd.Conf(), "cert_config.map")
	loaded := filepath.Join(wd.Certs(), "ns:loaded.pem")
	added := filepath.Join(wd.Certs(), "ns:added.pem")
	bind := "frontend f\n  bind :443 ssl crt /wd/default.pem crt-list " + list + "\n"
	pem := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	def := []byte("default certificate\n")
	read := func(p string) ([]byte, error) {
		if p != "/wd/default.pem" {
			t.Fatalf("read %s", p)
		}
		return def, nil
	}
	loadedLine := loaded + " [alpn h2,http/1.1] loaded.example.com\n"
	addedLine := added + " [alpn h2,http/1.1] added.example.com\n"
	step := func(running *Config, config, oldList, newList string, files map[string][]byte) (FileChange, []string) {
		t.Helper()
		newFiles := map[string][]byte{list: []byte(newList)}
		changed := []string{list}
		for p, d := range files {
			changed = append(changed, p)
			if d != nil {
				newFiles[p] = d
			}
		}
		fc := FileCommands(Files{WD: wd, Config: []byte(config), Changed: changed, New: newFiles,
			Old: map[string][]byte{list: []byte(oldList)}, Running: running, ReadFile: read})
		var texts []string
		for _, c := range append(fc.Commands, fc.Removals...) {
			texts = append(texts, c.Text+map[bool]string{true: " <<" + strings.TrimSpace(c.Payload), false: ""}[c.Payload != "" && c.Kind == "crt-list-add"])
		}
		return fc, texts
	}
	running := Parse([]byte(bind))

	fc, got := step(running, bind, loadedLine, loadedLine+addedLine, map[string][]byte{added: pem})
	name := "/wd/router/certs/rt.ns_added.pem"
	want := []string{"new ssl cert " + name, "set ssl cert " + name, "commit ssl cert " + name,
		"add ssl crt-list " + list + " <<" + name + " [alpn h2,http/1.1] added.example.com"}
	if fc.Reload || !reflect.DeepEqual(got, want) {
		t.Fatalf("line added: reload %v\n got  %q\n want %q", fc.Reload, got, want)
	}
	running.KeepFiles(fc)

	fc, got = step(running, bind, loadedLine+addedLine, loadedLine, map[string][]byte{added: nil})
	want = []string{"del ssl crt-list " + list + " " + name, "del ssl cert " + name}
	if fc.Reload || !reflect.DeepEqual(got, want) {
		t.Fatalf("added line deleted: reload %v\n got  %q\n want %q", fc.Reload, got, want)
	}
	running.KeepFiles(fc)

	fc, got = step(running, bind, loadedLine, "", map[string][]byte{loaded: nil})
	want = []string{"set ssl cert " + loaded, "commit ssl cert " + loaded}
	if fc.Reload || !reflect.DeepEqual(got, want) || string(fc.Commands[0].Payload) != string(def) {
		t.Fatalf("loaded line deleted: reload %v\n got  %q\n want %q", fc.Reload, got, want)
	}
	running.KeepFiles(fc)

	fc, got = step(running, bind, "", loadedLine, map[string][]byte{loaded: pem})
	if fc.Reload || !reflect.DeepEqual(got, want) || string(fc.Commands[0].Payload) != string(pem) {
		t.Fatalf("loaded line created again: reload %v\n got  %q\n want %q", fc.Reload, got, want)
	}

	strict := strings.Replace(bind, list, list+" strict-sni", 1)
	if fc, _ := step(Parse([]byte(strict)), strict, loadedLine, "", map[string][]byte{loaded: nil}); !fc.Reload {
		t.Error("a loaded line deleted under strict-sni did not reload")
	}
	changed := strings.Replace(loadedLine, "[alpn h2,http/1.1] ", "", 1)
	if fc, _ := step(Parse([]byte(bind)), bind, loadedLine, changed, nil); !fc.Reload {
		t.Error("a line changed in place did not reload")
	}
}

// TestFileCommandsChangeAllowlistPatterns: a file of IP patterns read by
// "acl NAME src -f" gets "add acl" and "del acl" for the patterns that
// differ; the same file used otherwise, a pattern twice, or contents not
// known reload.
func TestFileCommandsChangeAllowlistPatterns(t *testing.T) {
	wd := layout.New("/wd")
	f := filepath.Join(wd.Allowlists(), "ns:a.txt")
	config := []byte("backend be_http:ns:a\n  acl allowlist src -f " + f + "\n  tcp-request content reject if !allowlist\n")
	old := "# route ns/a\n10.0.0.1\n10.1.0.0/16\n"
	for _, c := range []struct {
		name   string
		config []byte
		new    string
		old    map[string][]byte
		want   []string
		reload bool
	}{
		{name: "patterns added and removed", config: config, new: "# route ns/a\n10.1.0.0/16\n127.0.0.1\n2001:db8::/32\n",
			want: []string{"add acl " + f + " 127.0.0.1", "add acl " + f + " 2001:db8::/32", "del acl " + f + " 10.0.0.1"}},
		{name: "the same patterns in another order: nothing", config: config, new: "# route ns/a\n10.1.0.0/16\n10.0.0.1\n"},
		{name: "a file read by another acl reloads", config: []byte("backend b\n  acl x hdr(host) -f " + f + "\n"), new: old + "127.0.0.1\n", reload: true},
		{name: "a pattern twice reloads", config: config, new: old + "10.0.0.1\n", reload: true},
		{name: "contents not known reload", config: config, new: old + "127.0.0.1\n", old: map[string][]byte{}, reload: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			oldFiles := c.old
			if oldFiles == nil {
				oldFiles = map[string][]byte{f: []byte(old)}
			}
			got := FileCommands(Files{WD: wd, Config: c.config, Changed: []string{f}, New: map[string][]byte{f: []byte(c.new)}, Old: oldFiles})
			wantCommands(t, got, c.reload, c.want)
		})
	}
}

// wantCommands checks that a FileChange reloads (reload) or else sends
// want, in order (commands then removals).
func wantCommands(t *testing.T, got FileChange, reload bool, want []string) {
	t.Helper()
	if got.Reload != reload {
		t.Fatalf("reload %v, want %v (%+v)", got.Reload, reload, got)
	}
	var texts []string
	for _, cmd := range append(got.Commands, got.Removals...) {
		texts = append(texts, cmd.Text)
	}
	if !reload && !reflect.DeepEqual(texts, want) {
		t.Fatalf("commands\n got  %q\n want %q", texts, want)
	}
}

// TestFileCommandsRemoveKeysUnderTheNameHAProxyHasThem: a route that ran
// in another backend (c in orphan a or b) is deleted and another (d) takes
// a backend: c's entry in a map keyed by backend is removed under the
// name HAProxy has it under — or set, when d runs under that very name.
func TestFileCommandsRemoveKeysUnderTheNameHAProxyHasThem(t *testing.T) {
	wd := layout.New("/wd")
	fwd := filepath.Join(wd.Conf(), "sticky_cookie.map")
	config := []byte("defaults routes\n  http-request set-var(txn.sticky_cookie) be_name,map(" + fwd + ")\n")
	was := Parse([]byte("backend be_http:ns:b\n  balance random\nbackend be_http:ns:a\n  balance random\n"))
	was = Diff(was, Parse([]byte("backend be_http:ns:c\n  balance random\n"))).Running // c runs as a or b
	cAs := was.RuntimeName("be_http:ns:c")
	if cAs == "be_http:ns:c" {
		t.Fatal("be_http:ns:c does not run as an orphan")
	}
	now := Diff(was, Parse([]byte("backend be_http:ns:d\n  balance random\n"))).Running // d runs as a or b
	dAs := now.RuntimeName("be_http:ns:d")
	if dAs == "be_http:ns:d" {
		t.Fatal("be_http:ns:d does not run as an orphan")
	}
	want := []string{"add map " + fwd + " " + dAs + " dcookie", "del map " + fwd + " " + cAs}
	if dAs == cAs {
		want = []string{"set map " + fwd + " " + dAs + " dcookie"}
	}
	got := FileCommands(Files{WD: wd, Config: config, Changed: []string{fwd},
		New: map[string][]byte{fwd: []byte("be_http:ns:d dcookie\n")}, Old: map[string][]byte{fwd: []byte("be_http:ns:c ccookie\n")},
		Running: now, WasRunning: was})
	wantCommands(t, got, false, want)
}

// TestFileCommandsAddDestinationCAFilesAndKeepThoseOfDeletedRoutes: a
// re-encrypt route's destination CA file added is loaded through the
// runtime API before any server command (a server added names it); a
// removed one stays in HAProxy, so the same file written again needs
// nothing; one whose contents change is set and committed (its servers
// are renewed by the Diff, see ChangedCAFiles); one that HAProxy holds
// with other contents, or that a bind line reads, reloads.
func TestFileCommandsAddDestinationCAFilesAndKeepThoseOfDeletedRoutes(t *testing.T) {
	wd := layout.New("/wd")
	ca := filepath.Join(wd.CACerts(), "ns:r.pem")
	a := []byte("-----BEGIN CERTIFICATE-----\nMIIA\n-----END CERTIFICATE-----\n")
	b := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	withServer := []byte("backend be_secure:ns:r\n  server pod:1 10.0.0.1:8443 weight 1 ssl verify required ca-file " + ca + " alpn h2,http/1.1\n")
	without := []byte("backend be_secure:ns:other\n  server pod:1 10.0.0.2:8443 weight 1\n")
	onBind := []byte("frontend f\n  bind :443 ssl crt /wd/d.pem ca-file " + ca + " verify optional\n")
	renewed := []string{ca} // as if the Diff renewed its servers
	step := func(running *Config, config []byte, old, new map[string][]byte) FileChange {
		t.Helper()
		fc := FileCommands(Files{WD: wd, Config: config, Changed: []string{ca}, Old: old, New: new, Running: running, Renewed: renewed})
		if !fc.Reload {
			running.KeepFiles(fc)
		}
		return fc
	}
	none := map[string][]byte{}

	running := Parse(withServer)
	fc := step(running, withServer, none, map[string][]byte{ca: a})
	want := []string{"new ssl ca-file " + ca, "set ssl ca-file " + ca, "commit ssl ca-file " + ca}
	if fc.Reload || len(fc.Before) != 3 || len(fc.Commands) != 0 || fc.Certificates != 1 {
		t.Fatalf("added: %+v", fc)
	}
	for i, c := range fc.Before {
		if c.Text != want[i] {
			t.Fatalf("added: command %d is %q, want %q", i, c.Text, want[i])
		}
	}
	if fc.Before[1].Payload != string(a) {
		t.Fatalf("added: payload %q", fc.Before[1].Payload)
	}
	changedTo := map[string][]byte{ca: b}
	if got := ChangedCAFiles(wd.CACerts(), []string{ca}, changedTo, map[string][]byte{ca: a}); !reflect.DeepEqual(got, []string{ca}) {
		t.Fatalf("ChangedCAFiles: %q", got)
	}
	fc = step(running, withServer, map[string][]byte{ca: a}, changedTo)
	if fc.Reload || len(fc.Before) != 2 || fc.Before[0].Text != "set ssl ca-file "+ca || fc.Before[0].Payload != string(b) ||
		fc.Before[1].Text != "commit ssl ca-file "+ca || fc.Certificates != 1 {
		t.Fatalf("contents changed: %+v, want the file set and committed", fc)
	}
	if fc := step(Parse(onBind), onBind, map[string][]byte{ca: a}, changedTo); !fc.Reload {
		t.Fatalf("contents changed, read by a bind line: %+v, want a reload", fc)
	}
	renewed = nil
	if fc := step(running, withServer, map[string][]byte{ca: a}, changedTo); !fc.Reload {
		t.Fatalf("contents changed, servers not renewed by the diff: %+v, want a reload", fc)
	}
	renewed = []string{ca}
	if got := ChangedCAFiles(wd.CACerts(), []string{ca}, changedTo, none); len(got) != 0 {
		t.Fatalf("ChangedCAFiles of a file added: %q", got)
	}
	if fc := step(running, without, map[string][]byte{ca: a}, none); fc.Reload || len(fc.Before)+len(fc.Commands)+len(fc.Removals) != 0 {
		t.Fatalf("removed: %+v, want nothing", fc)
	}
	if fc := step(Parse(withServer).withCA(running), withServer, none, map[string][]byte{ca: b}); !fc.Reload {
		t.Fatalf("written again with other contents: %+v, want a reload", fc)
	}
	if fc := step(running, withServer, none, map[string][]byte{ca: a}); fc.Reload || len(fc.Before) != 0 {
		t.Fatalf("written again as HAProxy holds it: %+v, want nothing", fc)
	}
	if fc := step(Parse(onBind), onBind, none, map[string][]byte{ca: a}); !fc.Reload {
		t.Fatalf("read by a bind line: %+v, want a reload", fc)
	}
	unknown := Parse(withServer)
	step(unknown, without, none, none) // removed, contents not known
	if fc := step(unknown, withServer, none, map[string][]byte{ca: a}); !fc.Reload {
		t.Fatalf("written again, held with contents not known: %+v, want a reload", fc)
	}
}

// withCA is c with what other holds of removed destination CA files.
func (c *Config) withCA(other *Config) *Config {
	c.ca = other.ca
	return c
}
