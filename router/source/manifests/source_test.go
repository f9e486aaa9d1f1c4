package manifests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift-router-go/router/router/store"
)

const waitTimeout = 5 * time.Second

// recorder is a store.Store counting the events it receives.
type recorder struct {
	*store.Store
	mu      sync.Mutex
	upserts map[string]int
	deletes map[string]int
	// events are "upsert Kind/namespace/name" and "delete ...", in order.
	events []string
}

func eventKey(obj runtime.Object) string {
	o := obj.(object)
	return obj.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

func (r *recorder) Upsert(obj runtime.Object) {
	r.mu.Lock()
	r.upserts[eventKey(obj)]++
	r.events = append(r.events, "upsert "+eventKey(obj))
	r.mu.Unlock()
	r.Store.Upsert(obj)
}

func (r *recorder) Delete(obj runtime.Object) {
	r.mu.Lock()
	r.deletes[eventKey(obj)]++
	r.events = append(r.events, "delete "+eventKey(obj))
	r.mu.Unlock()
	r.Store.Delete(obj)
}

func (r *recorder) eventLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) counts(key string) (upserts, deletes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.upserts[key], r.deletes[key]
}

// logs collects log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 5})
}

// find returns the first line containing all of subs.
func (l *logs) find(subs ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		return line, true
	}
	return "", false
}

func (l *logs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// harness runs a Source on a temporary directory.
type harness struct {
	t     *testing.T
	dir   string
	store *store.Store
	rec   *recorder
	logs  *logs
}

// newHarness creates a temporary directory holding files (relative path ->
// testdata/watch fixture).
func newHarness(t *testing.T, files map[string]string) *harness {
	t.Helper()
	st := store.New()
	h := &harness{
		t:     t,
		dir:   t.TempDir(),
		store: st,
		rec:   &recorder{Store: st, upserts: map[string]int{}, deletes: map[string]int{}},
		logs:  &logs{},
	}
	for name, fixture := range files {
		h.write(name, fixture)
	}
	return h
}

// start runs the source and waits for the initial load; the source is
// stopped when the test ends.
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	src := New(h.dir, h.rec, h.logs.logger())
	go func() { done <- src.Run(ctx) }()
	h.t.Cleanup(func() {
		if h.t.Failed() {
			for _, l := range h.logs.all() {
				h.t.Log(l)
			}
		}
	})
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run returned %v", err)
			}
		case <-time.After(waitTimeout):
			h.t.Error("Run did not return after the context was cancelled")
		}
	})
	deadline := time.Now().Add(waitTimeout)
	for !h.store.HasSynced(SourceName) {
		select {
		case err := <-done:
			h.t.Fatalf("Run returned %v before syncing", err)
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatal("source did not sync")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, filepath.FromSlash(name)) }

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "watch", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// write writes a fixture in place (truncate and write, like many editors).
func (h *harness) write(name, fixtureName string) {
	h.t.Helper()
	p := h.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, fixture(h.t, fixtureName), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// writeAtomic writes a fixture to a temporary file and renames it over name.
func (h *harness) writeAtomic(name, fixtureName string) {
	h.t.Helper()
	p := h.path(name)
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, fixture(h.t, fixtureName), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) setModTime(name string, t time.Time) {
	h.t.Helper()
	if err := os.Chtimes(h.path(name), t, t); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(name string) {
	h.t.Helper()
	if err := os.RemoveAll(h.path(name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) rename(from, to string) {
	h.t.Helper()
	if err := os.Rename(h.path(from), h.path(to)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) mkdir(name string) {
	h.t.Helper()
	if err := os.MkdirAll(h.path(name), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) symlink(target, name string) {
	h.t.Helper()
	if err := os.Symlink(target, h.path(name)); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor polls the store until cond holds, for up to waitTimeout.
func (h *harness) waitFor(what string, cond func(v store.View) bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok := false
		_ = h.store.Read(func(v store.View) error {
			ok = cond(v)
			return nil
		})
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting until %s; store has %s", what, h.store.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// check asserts cond on the store now.
func (h *harness) check(what string, cond func(v store.View) bool) {
	h.t.Helper()
	ok := false
	_ = h.store.Read(func(v store.View) error {
		ok = cond(v)
		return nil
	})
	if !ok {
		h.t.Errorf("expected %s; store has %s", what, h.store.Counts())
	}
}

func routeIn(v store.View, namespace, name string) *routev1.Route {
	for _, r := range v.Routes() {
		if r.Namespace == namespace && r.Name == name {
			return r
		}
	}
	return nil
}

func routeHost(namespace, name, host string) func(v store.View) bool {
	return func(v store.View) bool {
		r := routeIn(v, namespace, name)
		return r != nil && r.Spec.Host == host
	}
}

func noRoute(namespace, name string) func(v store.View) bool {
	return func(v store.View) bool { return routeIn(v, namespace, name) == nil }
}

func serviceTargetPort(namespace, name string, port int) func(v store.View) bool {
	return func(v store.View) bool {
		s := v.Service(namespace, name)
		return s != nil && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].TargetPort.IntValue() == port
	}
}

func noService(namespace, name string) func(v store.View) bool {
	return func(v store.View) bool { return v.Service(namespace, name) == nil }
}

func all(conds ...func(v store.View) bool) func(v store.View) bool {
	return func(v store.View) bool {
		for _, c := range conds {
			if !c(v) {
				return false
			}
		}
		return true
	}
}

func TestRunErrorsWhenDirectoryIsUnusable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
	}{
		{"missing directory", filepath.Join(dir, "missing")},
		{"file instead of a directory", file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.New()
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			err := New(tt.dir, st, logr.Discard()).Run(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.dir) {
				t.Errorf("Run() = %v, want an error naming %s", err, tt.dir)
			}
			if st.HasSynced(SourceName) {
				t.Error("store marked synced")
			}
		})
	}
}

func TestRunInitialLoad(t *testing.T) {
	h := newHarness(t, map[string]string{
		"app.yaml":            "app.yaml",
		"team/api/api.yaml":   "api.yaml",
		"typo.yaml":           "typo.yaml",
		".hidden.yaml":        "shared-a.yaml",
		".git/shared.yaml":    "shared-a.yaml",
		"shared.yaml~":        "shared-a.yaml",
		"#shared.yaml#":       "shared-a.yaml",
		"shared.yaml.bak":     "shared-a.yaml",
		"notes.txt":           "shared-a.yaml",
		"team/.#shared.yaml":  "shared-a.yaml",
		"team/.shared.yml.sw": "shared-a.yaml",
	})
	h.start()
	// Everything is loaded when the source marks the store synced.
	h.check("the routes of app.yaml and team/api/api.yaml only", func(v store.View) bool {
		var got []string
		for _, r := range v.Routes() {
			got = append(got, r.Namespace+"/"+r.Name)
		}
		return strings.Join(got, ",") == "shop/api,shop/web"
	})
	h.check("the service of app.yaml", serviceTargetPort("shop", "web", 8080))
	if _, ok := h.logs.find(`"file"="`+h.path("typo.yaml")+`"`, `"line"=1`, `unknown field \"spec.hots\"`); !ok {
		t.Errorf("no log of the error in typo.yaml naming file, line and reason")
	}
}

// step is a change of the directory and the state it must lead to.
type step struct {
	do   func(h *harness)
	what string
	want func(v store.View) bool
	// then runs further checks once want holds.
	then func(t *testing.T, h *harness)
}

func TestRunFollowsChanges(t *testing.T) {
	created := time.Date(2021, 1, 2, 3, 4, 5, 0, time.UTC)
	creationTimestampKept := func(t *testing.T, h *harness) {
		t.Helper()
		h.check(fmt.Sprintf("route web still created at %v", created), func(v store.View) bool {
			r := routeIn(v, "shop", "web")
			return r != nil && r.CreationTimestamp.Time.Equal(created)
		})
	}
	tests := []struct {
		name  string
		files map[string]string
		// setup runs before modTimes are set.
		setup func(h *harness)
		// modTimes are set on files before starting.
		modTimes map[string]time.Time
		initial  func(v store.View) bool
		steps    []step
	}{
		{
			name:    "adding a file adds its objects without resending the others",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.write("api.yaml", "api.yaml") },
				what: "route api exists",
				want: routeHost("shop", "api", "api.example.com"),
				then: func(t *testing.T, h *harness) {
					if up, del := h.rec.counts("Route/shop/web"); up != 1 || del != 0 {
						t.Errorf("route web got %d upserts and %d deletes, want 1 and 0", up, del)
					}
				},
			}},
		},
		{
			name:     "editing a file in place updates its objects and keeps creationTimestamp",
			files:    map[string]string{"app.yaml": "app.yaml"},
			modTimes: map[string]time.Time{"app.yaml": created},
			initial:  routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.write("app.yaml", "app-edited.yaml") },
				what: "route and service updated",
				want: all(routeHost("shop", "web", "www.example.com"), serviceTargetPort("shop", "web", 8081)),
				then: creationTimestampKept,
			}},
		},
		{
			name:     "atomic rename write updates the objects and keeps creationTimestamp",
			files:    map[string]string{"app.yaml": "app.yaml"},
			modTimes: map[string]time.Time{"app.yaml": created},
			initial:  routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.writeAtomic("app.yaml", "app-edited.yaml") },
				what: "route and service updated",
				want: all(routeHost("shop", "web", "www.example.com"), serviceTargetPort("shop", "web", 8081)),
				then: creationTimestampKept,
			}},
		},
		{
			name:     "editor backup rename then rewrite keeps creationTimestamp",
			files:    map[string]string{"app.yaml": "app.yaml"},
			modTimes: map[string]time.Time{"app.yaml": created},
			initial:  routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do: func(h *harness) {
					h.rename("app.yaml", "app.yaml~")
					h.write("app.yaml", "app-edited.yaml")
					h.remove("app.yaml~")
				},
				what: "route updated",
				want: routeHost("shop", "web", "www.example.com"),
				then: creationTimestampKept,
			}},
		},
		{
			name:    "removing a document from a file deletes its object",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.writeAtomic("app.yaml", "app-route-removed.yaml") },
				what: "route deleted, service kept",
				want: all(noRoute("shop", "web"), serviceTargetPort("shop", "web", 8080)),
			}},
		},
		{
			name:    "deleting a file deletes its objects",
			files:   map[string]string{"app.yaml": "app.yaml", "api.yaml": "api.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.remove("app.yaml") },
				what: "route and service of app.yaml deleted",
				want: all(noRoute("shop", "web"), noService("shop", "web"), routeHost("shop", "api", "api.example.com")),
			}},
		},
		{
			name:    "renaming a file to a non-manifest name deletes its objects",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do:   func(h *harness) { h.rename("app.yaml", "app.yaml.disabled") },
				what: "route and service deleted",
				want: all(noRoute("shop", "web"), noService("shop", "web")),
			}},
		},
		{
			name:     "moving an object to another file keeps it and its creationTimestamp",
			files:    map[string]string{"app.yaml": "app.yaml"},
			modTimes: map[string]time.Time{"app.yaml": created},
			initial:  routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do: func(h *harness) {
					h.mkdir("moved")
					h.rename("app.yaml", "moved/app.yml")
				},
				what: "a scan happened and the route is still there",
				want: func(v store.View) bool { return routeIn(v, "shop", "web") != nil },
				then: func(t *testing.T, h *harness) {
					creationTimestampKept(t, h)
					// Wait for the file to be read from its new place
					// with an unrelated change in the same directory.
					h.write("moved/api.yaml", "api.yaml")
					h.waitFor("route api exists", routeHost("shop", "api", "api.example.com"))
					h.check("route web still exists", routeHost("shop", "web", "web.example.com"))
					creationTimestampKept(t, h)
					if up, del := h.rec.counts("Route/shop/web"); up != 1 || del != 0 {
						t.Errorf("route web got %d upserts and %d deletes, want 1 and 0", up, del)
					}
				},
			}},
		},
		{
			name:    "typo in an edited document keeps that object and updates the others",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.write("app.yaml", "app-typo.yaml") },
					what: "service updated",
					want: serviceTargetPort("shop", "web", 8081),
					then: func(t *testing.T, h *harness) {
						h.check("route web kept with its previous host", routeHost("shop", "web", "web.example.com"))
						if _, ok := h.logs.find(`"file"="`+h.path("app.yaml")+`"`, `"line"=1`, `unknown field \"spec.hots\"`); !ok {
							t.Error("the error was not logged with file and line")
						}
					},
				},
				{
					do:   func(h *harness) { h.write("app.yaml", "app-edited.yaml") },
					what: "fixing the typo updates the route",
					want: routeHost("shop", "web", "www.example.com"),
				},
			},
		},
		{
			name:    "an edit the API server would refuse keeps the previous version of that object",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.write("app.yaml", "app-invalid.yaml") },
					what: "service updated",
					want: serviceTargetPort("shop", "web", 8081),
					then: func(t *testing.T, h *harness) {
						h.check("route web kept with its previous host", routeHost("shop", "web", "web.example.com"))
						if _, ok := h.logs.find(`"file"="`+h.path("app.yaml")+`"`, `"line"=1`,
							`spec.host: Invalid value: \"www_example.com\": spec.host in body should match`); !ok {
							t.Error("the refused rule was not logged with file and line")
						}
					},
				},
				{
					do:   func(h *harness) { h.write("app.yaml", "app-edited.yaml") },
					what: "a valid version replaces the kept one",
					want: routeHost("shop", "web", "www.example.com"),
				},
			},
		},
		{
			name:    "YAML syntax error in an edited file deletes nothing from it",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.write("app.yaml", "app-syntax-error.yaml") },
					what: "valid service document applied",
					want: serviceTargetPort("shop", "web", 8081),
					then: func(t *testing.T, h *harness) {
						h.check("route web kept with its previous host", routeHost("shop", "web", "web.example.com"))
						if _, ok := h.logs.find(`"file"="`+h.path("app.yaml")+`"`, `"line"=1`, `yaml: line 7`); !ok {
							t.Error("the error was not logged with file and line")
						}
					},
				},
				{
					do:   func(h *harness) { h.remove("app.yaml") },
					what: "deleting the broken file deletes everything it had",
					want: all(noRoute("shop", "web"), noService("shop", "web")),
				},
			},
		},
		{
			name:    "same object in two files: the last path wins and deleting it falls back",
			files:   map[string]string{"a.yaml": "shared-a.yaml", "b.yaml": "shared-b.yaml"},
			initial: routeHost("shop", "shared", "b.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.remove("b.yaml") },
					what: "a.yaml's version is back",
					want: routeHost("shop", "shared", "a.example.com"),
				},
				{
					do:   func(h *harness) { h.write("z/b.yaml", "shared-b.yaml") },
					what: "a later path takes over again",
					want: routeHost("shop", "shared", "b.example.com"),
				},
				{
					do:   func(h *harness) { h.remove("a.yaml") },
					what: "deleting the shadowed file changes nothing",
					want: routeHost("shop", "shared", "b.example.com"),
				},
			},
		},
		{
			name:    "new subdirectories are watched",
			files:   map[string]string{"app.yaml": "app.yaml"},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.write("team/new/api.yaml", "api.yaml") },
					what: "route of the new subdirectory added",
					want: routeHost("shop", "api", "api.example.com"),
				},
				{
					do:   func(h *harness) { h.write("team/new/api.yaml", "shared-a.yaml") },
					what: "edits in the new subdirectory seen",
					want: all(noRoute("shop", "api"), routeHost("shop", "shared", "a.example.com")),
				},
				{
					do:   func(h *harness) { h.remove("team") },
					what: "deleting the subdirectory deletes its objects",
					want: all(noRoute("shop", "shared"), routeHost("shop", "web", "web.example.com")),
				},
			},
		},
		{
			name:  "ConfigMap volume ..data symlink swap",
			files: map[string]string{"..2024_01/app.yaml": "app.yaml"},
			setup: func(h *harness) {
				h.symlink("..2024_01", "..data")
				h.symlink("..data/app.yaml", "app.yaml")
			},
			initial: routeHost("shop", "web", "web.example.com"),
			steps: []step{{
				do: func(h *harness) {
					h.write("..2024_02/app.yaml", "app-edited.yaml")
					h.symlink("..2024_02", "..data_tmp")
					h.rename("..data_tmp", "..data")
					h.remove("..2024_01")
				},
				what: "route updated",
				want: routeHost("shop", "web", "www.example.com"),
			}},
		},
		{
			name:  "symbolic link to a directory is followed, watched and rewatched when swapped",
			files: map[string]string{".v1/api.yaml": "api.yaml", ".v2/api.yaml": "shared-a.yaml"},
			setup: func(h *harness) {
				h.symlink(".v1", "team")
				// A loop is not followed twice.
				h.symlink("..", ".v1/parent")
			},
			initial: routeHost("shop", "api", "api.example.com"),
			steps: []step{
				{
					do:   func(h *harness) { h.write(".v1/api.yaml", "shared-b.yaml") },
					what: "edit in the link target seen",
					want: all(noRoute("shop", "api"), routeHost("shop", "shared", "b.example.com")),
				},
				{
					do: func(h *harness) {
						h.symlink(".v2", "team.tmp")
						h.rename("team.tmp", "team")
					},
					what: "new link target loaded",
					want: routeHost("shop", "shared", "a.example.com"),
				},
				{
					do:   func(h *harness) { h.write(".v2/api.yaml", "api.yaml") },
					what: "edit in the new link target seen",
					want: all(noRoute("shop", "shared"), routeHost("shop", "api", "api.example.com")),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.files)
			if tt.setup != nil {
				tt.setup(h)
			}
			for name, mt := range tt.modTimes {
				h.setModTime(name, mt)
			}
			h.start()
			h.check("initial state", tt.initial)
			for i, s := range tt.steps {
				s.do(h)
				h.waitFor(fmt.Sprintf("step %d: %s", i, s.what), s.want)
				if s.then != nil {
					s.then(t, h)
				}
			}
		})
	}
}

func TestRunCreationTimestampFromFile(t *testing.T) {
	h := newHarness(t, map[string]string{"app.yaml": "app.yaml", "api.yaml": "api.yaml"})
	older := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	newer := older.Add(time.Hour)
	h.setModTime("app.yaml", older)
	h.setModTime("api.yaml", newer)
	h.start()
	h.check("creationTimestamps are the files' modification times", func(v store.View) bool {
		web, api := routeIn(v, "shop", "web"), routeIn(v, "shop", "api")
		svc := v.Service("shop", "web")
		return web != nil && api != nil && svc != nil &&
			web.CreationTimestamp.Time.Equal(older) && svc.CreationTimestamp.Time.Equal(older) &&
			api.CreationTimestamp.Time.Equal(newer)
	})
}

func TestRunServiceIsDefaulted(t *testing.T) {
	h := newHarness(t, map[string]string{"app.yaml": "app.yaml"})
	h.start()
	h.check("service with API defaults", func(v store.View) bool {
		s := v.Service("shop", "web")
		return s != nil && s.Spec.Type == corev1.ServiceTypeClusterIP && s.Spec.Ports[0].Protocol == corev1.ProtocolTCP
	})
}

func TestRunSendsAllKindsInDependencyOrder(t *testing.T) {
	h := newHarness(t, map[string]string{"app.yaml": "all-kinds.yaml"})
	h.start()
	h.check("every kind in the store", func(v store.View) bool {
		return v.Namespace("shop") != nil && v.Secret("shop", "web-tls") != nil &&
			string(v.Secret("shop", "web-tls").Data["tls.crt"]) == "cert" &&
			v.Service("shop", "web") != nil && v.Endpoints("shop", "web") != nil &&
			len(v.EndpointSlices("shop", "web")) == 1 && routeIn(v, "shop", "web") != nil
	})
	want := []string{
		"upsert Namespace//shop",
		"upsert Secret/shop/web-tls",
		"upsert Service/shop/web",
		"upsert Endpoints/shop/web",
		"upsert EndpointSlice/shop/web-1",
		"upsert Route/shop/web",
	}
	if got := h.rec.eventLog(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	h.remove("app.yaml")
	h.waitFor("everything deleted", func(v store.View) bool { return v.Namespace("shop") == nil })
	want = []string{
		"delete Route/shop/web",
		"delete EndpointSlice/shop/web-1",
		"delete Endpoints/shop/web",
		"delete Service/shop/web",
		"delete Secret/shop/web-tls",
		"delete Namespace//shop",
	}
	if got := h.rec.eventLog()[6:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRunKeepsObjectsWhenTheDirectoryDisappears(t *testing.T) {
	h := newHarness(t, map[string]string{"app.yaml": "app.yaml"})
	h.start()
	if err := os.Rename(h.dir, h.dir+".old"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		if _, ok := h.logs.find("Cannot read the manifests directory"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unreadable directory was not reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.check("route web kept", routeHost("shop", "web", "web.example.com"))

	// The directory comes back (with other contents) and is picked up.
	h.write("api.yaml", "api.yaml")
	h.waitFor("the new contents loaded", all(routeHost("shop", "api", "api.example.com"), noRoute("shop", "web")))
	h.write("api.yaml", "shared-a.yaml")
	h.waitFor("the new directory watched", all(noRoute("shop", "api"), routeHost("shop", "shared", "a.example.com")))
}

func TestRunKeepsObjectsOfUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		// File permissions do not apply to root: run this test again in a
		// child process as nobody.
		rerunUnprivileged(t)
		return
	}
	h := newHarness(t, map[string]string{"app.yaml": "app.yaml", "api.yaml": "api.yaml"})
	h.start()
	if err := os.Chmod(h.path("app.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	h.write("api.yaml", "shared-a.yaml")
	h.waitFor("api.yaml reloaded", routeHost("shop", "shared", "a.example.com"))
	h.check("route web kept", routeHost("shop", "web", "web.example.com"))
	if _, ok := h.logs.find("Cannot read manifest file", h.path("app.yaml")); !ok {
		t.Error("the unreadable file was not reported")
	}
	if err := os.Chmod(h.path("app.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.write("app.yaml", "app-edited.yaml")
	h.waitFor("app.yaml reloaded", routeHost("shop", "web", "www.example.com"))
}

// rerunUnprivileged runs the calling test again in a child process as the
// user nobody (65534), from a copy of the test binary and of testdata in a
// directory that user can read, and fails t if the child's test fails.
func rerunUnprivileged(t *testing.T) {
	t.Helper()
	dir, err := os.MkdirTemp("", "unprivileged")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// MkdirTemp makes dir 0700; nobody needs to enter it and write in tmp.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "testdata"), os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// os.CopyFS writes files 0644 and directories 0777 less the umask:
	// readable by nobody.
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as nobody: %v\n%s", t.Name(), err, out)
	}
	t.Logf("passed as nobody:\n%s", out)
}

// TestFileEventsAskForTheFileOrTheWholeDirectory: an event on a manifest
// file directly in a watched directory asks for that file alone (a change
// costs reading it, not listing the directory); a directory, a symbolic
// link or an unwatched place asks for a full scan; ignored names and
// other files ask for nothing.
func TestFileEventsAskForTheFileOrTheWholeDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(write("target.yaml"), link); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone-dir")
	cases := []struct {
		name    string
		path    string
		watched map[string]string
		changed bool
		full    bool
	}{
		{"a manifest file", write("route.yaml"), nil, true, false},
		{"a removed manifest file", filepath.Join(dir, "removed.json"), nil, true, false},
		{"an ignored name", write(".route.yaml.swp"), nil, false, false},
		{"another file", write("notes.txt"), nil, false, false},
		{"a new subdirectory", sub, nil, false, true},
		{"a symbolic link", link, nil, false, true},
		{"a removed watched directory", gone, map[string]string{gone: gone}, false, true},
		{"a file in a directory read through a link", filepath.Join(dir, "route.yaml"), map[string]string{dir: "/elsewhere"}, false, true},
		{"a file in an unwatched directory", filepath.Join(sub, "route.yaml"), nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newState(New(dir, store.New(), logr.Discard()))
			st.watched[dir] = dir
			for d, real := range tc.watched {
				st.watched[d] = real
			}
			st.noteEvent(fsnotify.Event{Name: tc.path, Op: fsnotify.Write})
			if st.changed[tc.path] != tc.changed || st.fullScan != tc.full {
				t.Errorf("changed %v, full scan %v; want %v, %v", st.changed[tc.path], st.fullScan, tc.changed, tc.full)
			}
		})
	}
}

// TestChangedFilesAloneReconcileAsTheWholeDirectory: files changed,
// added and removed are reconciled alone (reconcileFiles) and the store
// then holds what a fresh load of the directory gives; an object defined
// in a second file makes the source reconcile every file again.
func TestChangedFilesAloneReconcileAsTheWholeDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: ns\nspec:\n  ports:\n  - port: 80\n", name)
	}
	route := func(name, to string) string {
		return fmt.Sprintf("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: %s\n  namespace: ns\nspec:\n  host: %s.example.com\n  to:\n    kind: Service\n    name: %s\n", name, name, to)
	}
	contents := func(s *store.Store) string {
		var out []string
		_ = s.Read(func(v store.View) error {
			for _, r := range v.Routes() {
				out = append(out, "route "+r.Name+" -> "+r.Spec.To.Name+" "+r.CreationTimestamp.String())
			}
			for _, n := range []string{"a", "b", "c"} {
				if v.Service("ns", n) != nil {
					out = append(out, "service "+n)
				}
			}
			return nil
		})
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	write("a.yaml", svc("a")+"---\n"+route("a", "a"))
	write("b.yaml", svc("b"))
	sink := store.New()
	st := newState(New(dir, sink, logr.Discard()))
	st.watched[dir] = dir
	st.scan()
	if !st.simple {
		t.Fatal("no duplicate and no Ingress, but not simple")
	}
	// change applies one step's writes and removes, as file events, and
	// reports whether they were reconciled alone.
	change := func(names ...string) bool {
		t.Helper()
		for _, n := range names {
			st.noteEvent(fsnotify.Event{Name: filepath.Join(dir, n), Op: fsnotify.Write})
		}
		if st.fullScan {
			t.Fatal("a file event asked for a full scan")
		}
		paths := make([]string, 0, len(st.changed))
		var before []fileObject
		for p := range st.changed {
			paths = append(paths, p)
			if f := st.files[p]; f != nil {
				before = append(before, f.objects...)
			}
		}
		sort.Strings(paths)
		clear(st.changed)
		for _, p := range paths {
			if !st.refresh(p) {
				delete(st.files, p)
			}
		}
		alone := st.reconcileFiles(paths, before)
		if !alone {
			st.reconcile()
		}
		fresh := store.New()
		newState(New(dir, fresh, logr.Discard())).scan()
		if got, want := contents(sink), contents(fresh); got != want {
			t.Fatalf("after %v the store holds\n%s\nand a fresh load\n%s", names, got, want)
		}
		return alone
	}
	write("a.yaml", svc("a")+"---\n"+route("a", "b"))
	if !change("a.yaml") {
		t.Error("an edited file was not reconciled alone")
	}
	write("c.yaml", svc("c")+"---\n"+route("c", "c"))
	if !change("c.yaml") {
		t.Error("an added file was not reconciled alone")
	}
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if !change("b.yaml") {
		t.Error("a removed file was not reconciled alone")
	}
	// The removed Service's assigned timestamp is kept for the grace
	// period, then forgotten by a later reconcile of changed files.
	gone := objKey{kind: "Service", namespace: "ns", name: "b"}
	a, ok := st.timestamps[gone]
	if !ok || a.goneSince.IsZero() {
		t.Fatalf("the removed Service's timestamp: %+v %v", a, ok)
	}
	a.goneSince = time.Now().Add(-2 * timestampGrace)
	st.timestamps[gone], st.swept = a, time.Time{}
	write("c.yaml", svc("c")+"---\n"+route("c", "a"))
	if !change("c.yaml") {
		t.Error("an edited file was not reconciled alone")
	}
	if _, ok := st.timestamps[gone]; ok {
		t.Error("the timestamp of an object gone for longer than the grace period is kept")
	}
	write("d.yaml", svc("a"))
	if change("d.yaml") || st.simple {
		t.Error("an object defined in a second file was reconciled alone")
	}
}
