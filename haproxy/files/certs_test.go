package files_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
)

// The model decides which allowlists go to a file (model.FileRoutes); an
// external test, since the model imports this package.
func TestAllowlistFilesForEveryRouteWithAnAllowlist(t *testing.T) {
	list := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("10.0.%d.%d", i/250, i%250))
		}
		return out
	}
	td := &model.TemplateData{WorkingDir: "/wd", State: map[model.ServiceAliasConfigKey]model.ServiceAliasConfig{
		"ns:none":  {},
		"ns:short": {Settings: annotations.Route{Allowlist: list(1)}},
		"ns:file":  {Settings: annotations.Route{Allowlist: append(list(annotations.AllowlistFileThreshold), "2001:db8::/32")}},
	}}
	got := files.AllowlistFiles(td)
	if len(got) != 2 || got[0].Path != filepath.Join("/wd", "router", "allowlists", "ns:file.txt") || got[1].Path != filepath.Join("/wd", "router", "allowlists", "ns:short.txt") {
		t.Fatalf("files %+v, want ns:file.txt and ns:short.txt", got)
	}
	want := "# route ns/file\n" + strings.Join(list(annotations.AllowlistFileThreshold), "\n") + "\n2001:db8::/32\n"
	if string(got[0].Data) != want {
		t.Errorf("content %q, want %q", got[0].Data, want)
	}
	if want := "# route ns/short\n10.0.0.0\n"; string(got[1].Data) != want {
		t.Errorf("content %q, want %q", got[1].Data, want)
	}
}
