package files

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRewriteReplacesOneFileAndIsWrittenAgainByTheNextStage: Rewrite
// replaces one managed file at once, leaves the others, and the next Stage
// writes it again even with the content Rewrite wrote (its content is not
// known to the writer), and only it.
func TestRewriteReplacesOneFileAndIsWrittenAgainByTheNextStage(t *testing.T) {
	dir := t.TempDir()
	cfg, other := filepath.Join(dir, "haproxy.config"), filepath.Join(dir, "os_http_be.map")
	w := NewWriter()
	if _, err := w.Stage([]File{{Path: cfg, Data: []byte("old\n")}, {Path: other, Data: []byte("map\n")}}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	if err := w.Rewrite(cfg, 0, func(out io.Writer) error {
		_, err := io.WriteString(out, "new\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(cfg); string(b) != "new\n" {
		t.Fatalf("config %q", b)
	}
	if _, err := os.Stat(cfg + backupSuffix); !os.IsNotExist(err) {
		t.Fatalf("a previous version was kept: %v", err)
	}
	changed, err := w.Stage([]File{{Path: cfg, Data: []byte("new\n")}, {Path: other, Data: []byte("map\n")}})
	if err != nil {
		t.Fatal(err)
	}
	w.Commit()
	if !reflect.DeepEqual(changed, []string{cfg}) {
		t.Fatalf("changed %v, want the rewritten file only", changed)
	}
	st, err := os.Stat(cfg)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
}
