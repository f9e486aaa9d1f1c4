package manifests

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/store"
)

// TestLoadDirLoadsWhatRunLoads: the one-shot load gives the store the same
// objects (with the same creationTimestamps) as Run's initial load.
func TestLoadDirLoadsWhatRunLoads(t *testing.T) {
	h := newHarness(t, map[string]string{
		"app.yaml":          "app.yaml",
		"team/api/api.yaml": "api.yaml",
		"typo.yaml":         "typo.yaml",
		".hidden.yaml":      "shared-a.yaml",
	})
	h.start()
	var want []string
	h.check("initial load", func(v store.View) bool {
		want = nil
		for _, r := range v.Routes() {
			want = append(want, r.Namespace+"/"+r.Name+"@"+r.CreationTimestamp.UTC().String()+"#"+r.ResourceVersion)
		}
		return len(want) == 2
	})

	st := store.New()
	logs := &logs{}
	if err := LoadDir(h.dir, st, logs.logger()); err != nil {
		t.Fatal(err)
	}
	if !st.HasSynced(SourceName) {
		t.Error("LoadDir did not mark the store synced")
	}
	var got []string
	_ = st.Read(func(v store.View) error {
		for _, r := range v.Routes() {
			got = append(got, r.Namespace+"/"+r.Name+"@"+r.CreationTimestamp.UTC().String()+"#"+r.ResourceVersion)
		}
		if svc := v.Service("shop", "web"); svc == nil {
			t.Error("the service of app.yaml is missing")
		}
		return nil
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadDir routes %v, Run routes %v", got, want)
	}
	if _, ok := logs.find(`"file"="`+h.path("typo.yaml")+`"`, `"line"=1`); !ok {
		t.Errorf("the malformed document is not logged with its file and line")
	}
}

func TestLoadDirErrors(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "file.yaml")} {
		if strings.HasSuffix(d, ".yaml") {
			h := newHarness(t, map[string]string{"file.yaml": "app.yaml"})
			d = h.path("file.yaml")
		}
		st := store.New()
		if err := LoadDir(d, st, logr.Discard()); err == nil || !strings.Contains(err.Error(), "manifests directory") {
			t.Errorf("LoadDir(%s): %v", d, err)
		}
		if st.HasSynced(SourceName) {
			t.Errorf("LoadDir(%s) marked the store synced", d)
		}
	}
}
