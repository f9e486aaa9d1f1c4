package files

import (
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
