package benchreport

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteThenReadGivesTheSameReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	want := &SideBySide{Benchmark: "BenchmarkDataPlaneSideBySide", Provenance: "test", Routes: 10, UpdateStatus: true,
		Routers: []Router{{Name: "ours-10", Who: "ours", Routes: 10, RoundsRPS: []float64{1, 2}, MedianRPS: 1, RouterRSSMiB: 12.5}}}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, wrote %+v", got, want)
	}
	if r := got.Find("ours", 10); r == nil || r.Name != "ours-10" {
		t.Fatalf("Find(ours, 10) = %v", r)
	}
	if r := got.Find("other", 10); r != nil {
		t.Fatalf("Find(other, 10) = %v, want nil", r)
	}
}

func TestReadRefusesIncompleteReports(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"no benchmark", `{"provenance":"p","routers":[{"name":"a"}]}`, "no benchmark"},
		{"no provenance", `{"benchmark":"b","routers":[{"name":"a"}]}`, "no provenance"},
		{"no routers", `{"benchmark":"b","provenance":"p"}`, "no routers"},
		{"unknown field", `{"benchmark":"b","provenance":"p","routers":[{"name":"a"}],"rsss":1}`, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.json")
			if err := os.WriteFile(path, []byte(c.json), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read: %v, want an error with %q", err, c.want)
			}
		})
	}
}
