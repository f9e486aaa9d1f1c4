package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
)

func TestVersionStringFallsBackToGoBuildInformation(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{
			name: "a clean checkout: commit, its time in UTC, clean",
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(
				"-buildmode", "exe", "vcs", "git", "vcs.revision", "54d37f35e1d1da595927167595d821b990afadbb",
				"vcs.time", "2026-11-26T12:32:08+01:00", "vcs.modified", "false")},
			ok:   true,
			want: "majorFromGit: \nminorFromGit: \ncommitFromGit: 54d37f35e1d1da595927167595d821b990afadbb\nversionFromGit: unknown\ngitTreeState: clean\nbuildDate: 2026-11-26T11:32:08Z\n",
		},
		{
			name: "local changes: dirty; a module version is the version",
			info: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126113208-54d37f35e1d1"}, Settings: vcs(
				"vcs.revision", "0123abc", "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "true")},
			ok:   true,
			want: "majorFromGit: \nminorFromGit: \ncommitFromGit: 0123abc\nversionFromGit: v0.0.0-20261126113208-54d37f35e1d1\ngitTreeState: dirty\nbuildDate: 2025-01-02T03:04:05Z\n",
		},
		{
			name: "built without VCS information (-buildvcs=false, a worktree)",
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("-buildmode", "exe")},
			ok:   true,
			want: "majorFromGit: \nminorFromGit: \ncommitFromGit: \nversionFromGit: unknown\ngitTreeState: \nbuildDate: \n",
		},
		{
			name: "no build information at all",
			ok:   false,
			want: "majorFromGit: \nminorFromGit: \ncommitFromGit: \nversionFromGit: unknown\ngitTreeState: \nbuildDate: \n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionString(tc.info, tc.ok); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestVersionOfABuildNamesItsCommit builds the binary with go build (as the
// Makefile does, -buildvcs=true) and checks that "version" names the commit
// git rev-parse HEAD names, with the tree state git status shows. Go stamps
// only checkouts whose .git is a directory: in a git worktree the build is
// made in a local clone of the same commit.
func TestVersionOfABuildNamesItsCommit(t *testing.T) {
	git := prereq.NeedBinary(t, "git")
	gitOut := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command(git, append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	top := gitOut(".", "rev-parse", "--show-toplevel")
	head := gitOut(top, "rev-parse", "HEAD")
	dir := top
	if st, err := os.Stat(filepath.Join(top, ".git")); err != nil || !st.IsDir() {
		dir = filepath.Join(t.TempDir(), "clone")
		if out, err := exec.Command(git, "clone", "--quiet", "--shared", top, dir).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		if got := gitOut(dir, "rev-parse", "HEAD"); got != head {
			t.Fatalf("clone at %s, repository at %s", got, head)
		}
	}
	wantState := "clean"
	if gitOut(dir, "status", "--porcelain") != "" {
		wantState = "dirty"
	}
	commitTime, err := time.Parse(time.RFC3339, gitOut(dir, "show", "-s", "--format=%cI", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "openshift-router")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/openshift-router")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	for _, want := range []string{
		"commitFromGit: " + head + "\n",
		"gitTreeState: " + wantState + "\n",
		"buildDate: " + commitTime.UTC().Format("2006-01-02T15:04:05Z") + "\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version printed\n%s\nwithout %q", out, want)
		}
	}
}
