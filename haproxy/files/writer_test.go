package files

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

func TestStageWritesOnlyChangedFilesAndCommitDropsBackups(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "conf", "a"), filepath.Join(dir, "b")
	w := NewWriter()
	changed, err := w.Stage([]File{{Path: a, Data: []byte("1")}, {Path: b, Data: []byte("x")}})
	if err != nil || len(changed) != 2 {
		t.Fatalf("first stage: %v %v", changed, err)
	}
	w.Commit()
	changed, err = w.Stage([]File{{Path: a, Data: []byte("2")}, {Path: b, Data: []byte("x")}})
	if err != nil || !reflect.DeepEqual(changed, []string{a}) {
		t.Fatalf("second stage changed %v (%v), want only %s", changed, err, a)
	}
	w.Commit()
	if read(t, a) != "2" {
		t.Fatalf("a = %q", read(t, a))
	}
	if _, err := os.Stat(a + backupSuffix); !os.IsNotExist(err) {
		t.Fatalf("backup left after commit")
	}
	changed, _ = w.Stage([]File{{Path: a, Data: []byte("2")}, {Path: b, Data: []byte("x")}})
	w.Commit()
	if len(changed) != 0 {
		t.Fatalf("unchanged stage reported %v", changed)
	}
}

func TestRollbackRestoresExactlyThePreviousFiles(t *testing.T) {
	dir := t.TempDir()
	keep, gone, added := filepath.Join(dir, "keep"), filepath.Join(dir, "gone"), filepath.Join(dir, "added")
	w := NewWriter()
	if _, err := w.Stage([]File{{Path: keep, Data: []byte("old")}, {Path: gone, Data: []byte("g")}}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	changed, err := w.Stage([]File{{Path: keep, Data: []byte("new")}, {Path: added, Data: []byte("a")}})
	if err != nil || len(changed) != 3 {
		t.Fatalf("stage: %v %v", changed, err)
	}
	if read(t, keep) != "new" || read(t, gone) != "<missing>" || read(t, added) != "a" {
		t.Fatal("stage did not write the new set")
	}
	if err := w.Rollback(); err != nil {
		t.Fatal(err)
	}
	if read(t, keep) != "old" || read(t, gone) != "g" || read(t, added) != "<missing>" {
		t.Fatalf("rollback: keep=%q gone=%q added=%q", read(t, keep), read(t, gone), read(t, added))
	}
	// After a rollback the writer knows the old set: staging it again changes nothing.
	changed, _ = w.Stage([]File{{Path: keep, Data: []byte("old")}, {Path: gone, Data: []byte("g")}})
	w.Commit()
	if len(changed) != 0 {
		t.Fatalf("after rollback, the old set was reported changed: %v", changed)
	}
}

func TestCertificateFilesAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.pem")
	w := NewWriter()
	if _, err := w.Stage([]File{{Path: p, Data: []byte("k"), Mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
}

// TestFilesAndDirectoriesAreOwnerOnly: a file written without a mode
// (haproxy.config, with STATS_PASSWORD; the maps), a file rewritten in
// place and a directory created for a file are open to the router's user
// only, whatever the umask.
func TestFilesAndDirectoriesAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "conf", "haproxy.config")
	mapFile := filepath.Join(dir, "conf", "os_http_be.map")
	allowlist := filepath.Join(dir, "router", "allowlists", "ns:r.txt")
	w := NewWriter()
	if _, err := w.Stage([]File{{Path: config, Data: []byte("stats auth admin:s3cret\n")}, {Path: mapFile, Data: []byte("m")},
		{Path: allowlist, Data: []byte("10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	for p, want := range map[string]os.FileMode{config: 0o600, mapFile: 0o600, allowlist: 0o600,
		filepath.Dir(config): 0o700, filepath.Dir(allowlist): 0o700, filepath.Dir(filepath.Dir(allowlist)): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	if err := w.Rewrite(config, 0, func(out io.Writer) error { _, err := out.Write([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(config); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("rewritten %s: mode %v (%v), want 0600", config, st.Mode().Perm(), err)
	}
}

// TestStageReportsTheRouteOfAFileThatCannotBeWritten: a file of a route
// that cannot be written while its directory accepts other files is that
// route's failure (StageError, with every such file); a file of the whole
// configuration that cannot be written is a plain error; either way the
// stage is rolled back.
func TestStageReportsTheRouteOfAFileThatCannotBeWritten(t *testing.T) {
	tests := []struct {
		name       string
		route      RouteKey
		wantRoutes []RouteKey
	}{
		{"a route's file", "ns:bad", []RouteKey{"ns:bad", "ns:worse"}},
		{"a file of the configuration", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			good, bad, worse := filepath.Join(dir, "good"), filepath.Join(dir, "bad.pem"), filepath.Join(dir, "worse.pem")
			// A directory where the file goes: renaming over it fails.
			for _, p := range []string{bad, worse} {
				if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			worseRoute := RouteKey("")
			if tt.route != "" {
				worseRoute = "ns:worse"
			}
			w := NewWriter()
			_, err := w.Stage([]File{
				{Path: good, Data: []byte("g")},
				{Path: bad, Data: []byte("b"), Route: tt.route},
				{Path: worse, Data: []byte("w"), Route: worseRoute},
			})
			var se *StageError
			switch {
			case err == nil:
				t.Fatal("stage succeeded")
			case tt.wantRoutes == nil && errors.As(err, &se):
				t.Fatalf("a configuration file's failure was blamed on routes: %v", err)
			case tt.wantRoutes != nil:
				if !errors.As(err, &se) {
					t.Fatalf("error %T %v, want *StageError", err, err)
				}
				var got []RouteKey
				for _, f := range se.Files {
					got = append(got, f.Route)
				}
				if !reflect.DeepEqual(got, tt.wantRoutes) {
					t.Fatalf("routes %v, want %v", got, tt.wantRoutes)
				}
			}
			if read(t, good) != "<missing>" {
				t.Error("the stage was not rolled back")
			}
			// Without the failing files the same writer stages fine.
			if _, err := w.Stage([]File{{Path: good, Data: []byte("g")}}); err != nil {
				t.Fatalf("stage without the failing files: %v", err)
			}
			w.Commit()
		})
	}
}

// TestStageBlamesNoRouteWhenTheDirectoryRefusesFiles: a directory that
// takes no file (here it cannot even be created: a file holds its name)
// is nobody's route's fault.
func TestStageBlamesNoRouteWhenTheDirectoryRefusesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewWriter().Stage([]File{{Path: filepath.Join(dir, "ns:a.pem"), Data: []byte("x"), Route: "ns:a"}})
	var se *StageError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("error %v, want a plain error", err)
	}
}
