package controller

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/test/testcerts"
)

// refusingProcess refuses, as HAProxy's master does, to start or reload
// while the file refuse exists (a certificate it cannot load), keeping
// what it ran; its check fails then too, naming the file. It counts what
// it was asked, in order.
type refusingProcess struct {
	running bool
	refuse  string
	calls   []string
}

func (p *refusingProcess) refused() bool { return fileExists(p.refuse) }

func (p *refusingProcess) Check(_ context.Context, path string) error {
	p.calls = append(p.calls, "check")
	if p.refused() {
		return certificateRefused(path, p.refuse)
	}
	return nil
}

func (p *refusingProcess) Start(context.Context) error {
	p.calls = append(p.calls, "start")
	if p.refused() {
		return errors.New("haproxy exited at start")
	}
	p.running = true
	return nil
}

func (p *refusingProcess) Reload(context.Context) error {
	p.calls = append(p.calls, "reload")
	if p.refused() {
		return errors.New("haproxy reload: new configuration rejected")
	}
	return nil
}

func (p *refusingProcess) Running() bool { return p.running }

// TestTheFirstConfigurationIsCheckedOnlyWhenHAProxyRefusesIt: with
// FirstLoadUnchecked the first configuration with routes is loaded without
// "haproxy -c"; refused, it is checked, its culprit route rejected and the
// rest loaded; every later load is checked first. Without the option every
// load is checked first.
func TestTheFirstConfigurationIsCheckedOnlyWhenHAProxyRefusesIt(t *testing.T) {
	tests := []struct {
		name      string
		unchecked bool
		badCert   bool
		// want are the process calls of the first commit, then of a
		// second one that reloads.
		want, wantNext []string
	}{
		{"unchecked, accepted: loaded at once", true, false, []string{"start"}, []string{"check", "reload"}},
		{"unchecked, refused: checked, the culprit rejected, loaded without it", true, true,
			[]string{"start", "check", "check", "start"}, []string{"check", "reload"}},
		{"checked: every load is checked first", false, false, []string{"check", "start"}, []string{"check", "reload"}},
		{"checked, refused: the check finds the culprit before any load", false, true, []string{"check", "check", "start"}, []string{"check", "reload"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "good", Name: "web", ResourceVersion: "1", Generation: 1},
				Spec: routev1.RouteSpec{Host: "web.good.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
			routes := []*routev1.Route{good}
			dir := t.TempDir()
			p := &refusingProcess{}
			if tt.badCert {
				bad := edgeRoute(t, "careless", "badcert")
				routes = append(routes, bad)
				p.refuse = filepath.Join(dir, "router", "certs", "careless:badcert.pem")
			}
			st := tenantStore(routes...)
			o := tenantOptions(t, st, dir)
			o.Process, o.FirstLoadUnchecked = p, tt.unchecked
			c := New(o)
			if _, err := c.Commit(context.Background()); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if got := strings.Join(p.calls, ","); got != strings.Join(tt.want, ",") {
				t.Errorf("first commit: process asked %s, want %s", got, strings.Join(tt.want, ","))
			}
			res := c.Results()
			if !res["good/web"].Admitted {
				t.Errorf("good/web: %+v", res["good/web"])
			}
			if tt.badCert {
				if r := res["careless/badcert"]; r.Admitted || r.Reason != admission.ReasonConfigCheckFailed {
					t.Errorf("careless/badcert: %+v", r)
				}
			}
			// No runtime API: the next change reloads, checked first.
			p.calls = nil
			later := good.DeepCopy()
			later.Name, later.Spec.Host = "later", "later.good.example.com"
			st.Upsert(later)
			if _, err := c.Commit(context.Background()); err != nil {
				t.Fatalf("second commit: %v", err)
			}
			if got := strings.Join(p.calls, ","); got != strings.Join(tt.wantNext, ",") {
				t.Errorf("second commit: process asked %s, want %s", got, strings.Join(tt.wantNext, ","))
			}
		})
	}
}

// edgeRoute is an edge route of ns/name with a certificate of its own.
func edgeRoute(t *testing.T, ns, name string) *routev1.Route {
	t.Helper()
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Generation: 1},
		Spec: routev1.RouteSpec{Host: name + "." + ns + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
	ca, err := testcerts.NewCA("tenant CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(r.Spec.Host, []string{r.Spec.Host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r.Spec.TLS = &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge, Certificate: pair.CertPEM, Key: pair.KeyPEM}
	return r
}
