package controller

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/test/prereq"
)

// checkingProcess checks configurations with the real haproxy and
// pretends to run them. While the file refuse exists, the check fails as
// haproxy's does for a certificate it cannot load.
type checkingProcess struct {
	running bool
	refuse  string
	// reloadErr, if set, is what Reload returns (HAProxy not loading it).
	reloadErr error
}

func (p *checkingProcess) Check(ctx context.Context, path string) error {
	if fileExists(p.refuse) {
		return certificateRefused(path, p.refuse)
	}
	out, err := exec.CommandContext(ctx, "haproxy", "-c", "-q", "-f", path).CombinedOutput()
	if err != nil {
		return &checkErr{out: string(out)}
	}
	return nil
}

type checkErr struct{ out string }

// fileExists reports whether a file is at path ("" is none).
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return path != "" && err == nil
}

// certificateRefused is the error of "haproxy -c" on configuration path
// when it cannot load the certificate file cert.
func certificateRefused(path, cert string) error {
	return &checkErr{out: "[ALERT]    (1) : config : parsing [" + path + ":99] : 'bind :443' : unable to load SSL certificate into SSL Context '" + cert + "'.\n[ALERT]    (1) : config : Fatal errors found in configuration.\n"}
}

func (e *checkErr) Error() string { return "haproxy -c failed:\n" + e.out }

func (p *checkingProcess) Start(context.Context) error  { p.running = true; return nil }
func (p *checkingProcess) Reload(context.Context) error { return p.reloadErr }
func (p *checkingProcess) Running() bool                { return p.running }

// TestAFailureTracedToARouteRejectsOnlyThatRoute: a route whose file
// cannot be written (a directory stands where its allowlist goes) and a
// route whose certificate haproxy refuses are rejected with
// ConfigCheckFailed, each with a message about itself; the other tenants'
// routes are applied in the same pass; deleting a rejected route or
// changing it lets the pass go through without it or with it again.
func TestAFailureTracedToARouteRejectsOnlyThatRoute(t *testing.T) {
	prereq.NeedBinary(t, "haproxy")
	plain := func(ns, name string, annotations map[string]string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Generation: 1, Annotations: annotations},
			Spec: routev1.RouteSpec{Host: name + "." + ns + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	}
	unwritable := plain("careless", "blocked", map[string]string{"haproxy.router.openshift.io/ip_allowlist": allowlist(100)})
	good := plain("good", "web", nil)
	st := tenantStore(good, unwritable)
	dir := t.TempDir()
	blocker := filepath.Join(dir, "router", "allowlists", model.NewServiceAliasConfigKey("careless", "blocked").FileName()+".txt")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := tenantOptions(t, st, dir)
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Process = &checkingProcess{}
	c := New(o)
	if _, err := c.Commit(context.Background()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	res := c.Results()
	if !res["good/web"].Admitted {
		t.Errorf("good/web: %+v", res["good/web"])
	}
	bad := res["careless/blocked"]
	if bad.Admitted || bad.Reason != admission.ReasonConfigCheckFailed || !strings.Contains(bad.Message, "could not write a file for this route") {
		t.Fatalf("careless/blocked: %+v", bad)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "conf", "haproxy.config"))
	if err != nil || !strings.Contains(string(cfg), "be_http:good:web") || strings.Contains(string(cfg), "careless") {
		t.Fatalf("haproxy.config should have good/web and not careless/blocked (%v)", err)
	}

	t.Run("a change of the rejected route is tried again", func(t *testing.T) {
		fixed := unwritable.DeepCopy()
		fixed.Generation, fixed.ResourceVersion = 2, "2"
		fixed.Annotations = nil
		st.Upsert(fixed)
		if _, err := c.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if res := c.Results()["careless/blocked"]; !res.Admitted {
			t.Fatalf("fixed route: %+v", res)
		}
	})
	t.Run("a certificate haproxy refuses rejects its route only", func(t *testing.T) {
		broken := edgeRoute(t, "careless", "badcert")
		st.Upsert(broken)
		// HAProxy refuses the certificate file (as it would one its
		// OpenSSL cannot load).
		c.o.Process.(*checkingProcess).refuse = filepath.Join(dir, "router", "certs", "careless:badcert.pem")
		other := plain("good", "later", nil)
		st.Upsert(other)
		if _, err := c.Commit(context.Background()); err != nil && err != errExcludedMore {
			t.Fatal(err)
		}
		res := c.Results()
		if r := res["careless/badcert"]; r.Admitted || r.Reason != admission.ReasonConfigCheckFailed || strings.Contains(r.Message, "good") {
			t.Errorf("careless/badcert: %+v", r)
		}
		if !res["good/later"].Admitted || !res["good/web"].Admitted {
			t.Errorf("other tenants' routes: %+v %+v", res["good/later"], res["good/web"])
		}
		st.Delete(broken)
		if _, err := c.Commit(context.Background()); err != nil {
			t.Fatalf("after deleting the rejected route: %v", err)
		}
		if _, ok := c.Results()["careless/badcert"]; ok {
			t.Error("a deleted route still has a result")
		}
	})
}

// TestAFailedReloadLeavesTheFilesHAProxyRuns: when HAProxy does not load a
// configuration that passed the check (a sidecar without a haproxy binary
// to check with, a bind that fails), the files go back to the ones HAProxy
// runs, so a restarted HAProxy loads those, and the next pass tries again.
func TestAFailedReloadLeavesTheFilesHAProxyRuns(t *testing.T) {
	prereq.NeedBinary(t, "haproxy")
	route := func(ns, name string) *routev1.Route {
		return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Generation: 1},
			Spec: routev1.RouteSpec{Host: name + "." + ns + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	}
	st := tenantStore(route("a", "web"))
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := tenantOptions(t, st, dir)
	proc := &checkingProcess{}
	o.Process = proc
	c := New(o)
	if _, err := c.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	config := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "conf", "haproxy.config"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := config()
	st.Upsert(route("b", "new"))
	proc.reloadErr = errString("reload refused")
	if _, err := c.Commit(context.Background()); err == nil {
		t.Fatal("a failed reload reported no error")
	}
	if got := config(); got != before {
		t.Fatalf("the files are not the ones haproxy runs after a failed reload:\n%s", got)
	}
	proc.reloadErr = nil
	if _, err := c.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(config(), "be_http:b:new") {
		t.Fatal("the next pass did not load the change")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
