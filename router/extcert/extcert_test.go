package extcert

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/store"
)

func route(ns, name, secret string) *routev1.Route {
	r := &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: routev1.RouteSpec{Host: name + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}, TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationEdge}}}
	if secret != "" {
		r.Spec.TLS.ExternalCertificate = &routev1.LocalObjectReference{Name: secret}
	}
	return r
}

func secret(ns, name string, typ corev1.SecretType, rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}, Type: typ,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("CERT-" + rv), corev1.TLSPrivateKeyKey: []byte("KEY-" + rv)}}
}

func resolve(t *testing.T, r *Resolver, st *store.Store, routes ...*routev1.Route) ([]*routev1.Route, map[admission.Key]admission.Result) {
	t.Helper()
	out, rej, _ := resolveAll(t, r, st, routes...)
	return out, rej
}

// resolveAll also returns the pending routes.
func resolveAll(t *testing.T, r *Resolver, st *store.Store, routes ...*routev1.Route) ([]*routev1.Route, map[admission.Key]admission.Result, map[admission.Key]bool) {
	t.Helper()
	var out []*routev1.Route
	var rej map[admission.Key]admission.Result
	var pending map[admission.Key]bool
	_ = st.Read(func(v store.View) error {
		out, rej, pending = r.Resolve(v, routes)
		return nil
	})
	return out, rej, pending
}

// TestValidateFromStore is the manifests directory's case: the store's
// secrets, no permission check.
func TestValidateFromStore(t *testing.T) {
	tests := []struct {
		name    string
		secret  *corev1.Secret
		message string // "" admitted
	}{
		{"a TLS secret gives its certificate and key", secret("a", "s", corev1.SecretTypeTLS, "1"), ""},
		{"a missing secret is not found", nil, `spec.tls.externalCertificate: Not found: "secrets \"s\" not found"`},
		{"an Opaque secret is refused", secret("a", "s", corev1.SecretTypeOpaque, "1"), `spec.tls.externalCertificate: Invalid value: "s": secret of type "kubernetes.io/tls" required`},
		{"a secret of another namespace is not found", secret("b", "s", corev1.SecretTypeTLS, "1"), `spec.tls.externalCertificate: Not found: "secrets \"s\" not found"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.New()
			if tt.secret != nil {
				st.Upsert(tt.secret)
			}
			r := New(Options{Enabled: true})
			out, rej := resolve(t, r, st, route("a", "r", "s"), route("a", "plain", ""))
			res, rejected := rej[admission.Key("a/r")]
			if tt.message == "" {
				if rejected || len(out) != 2 {
					t.Fatalf("rejected %v, out %d", res, len(out))
				}
				if got := out[0].Spec.TLS; got.Certificate != "CERT-1" || got.Key != "KEY-1" {
					t.Errorf("tls %+v", got)
				}
				return
			}
			if !rejected || res.Reason != ReasonValidationFailed || res.Message != tt.message {
				t.Errorf("got %+v, want %q", res, tt.message)
			}
			if len(out) != 2 || out[0].Spec.TLS.Certificate != "" {
				t.Errorf("routes handed on: %v", out)
			}
		})
	}
}

func TestDisabledLeavesRoutesAlone(t *testing.T) {
	st := store.New()
	in := []*routev1.Route{route("a", "r", "missing")}
	r := New(Options{Enabled: false})
	out, rej := resolve(t, r, st, in...)
	if len(rej) != 0 || len(out) != 1 || out[0] != in[0] {
		t.Errorf("out %v rejected %v", out, rej)
	}
}

func TestWatchedRouteIsNotChanged(t *testing.T) {
	st := store.New()
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "1"))
	in := route("a", "r", "s")
	out, _ := resolve(t, New(Options{Enabled: true}), st, in)
	if in.Spec.TLS.Certificate != "" || out[0] == in {
		t.Errorf("the store's route was changed")
	}
}

type fakeChecker struct {
	mu      sync.Mutex
	answers map[Ref]Answer
	calls   int
	// block, if set, holds every answer until closed.
	block chan struct{}
}

func (f *fakeChecker) Check(_ context.Context, ref Ref) Answer {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.answers[ref]
}

func (f *fakeChecker) set(ref Ref, a Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[ref] = a
}

type fakeWatcher struct{ wanted map[Ref]bool }

func (f *fakeWatcher) Sync(w map[Ref]bool) { f.wanted = w }

// settle resolves until the background answers have arrived.
func settle(t *testing.T, r *Resolver, changed chan struct{}, st *store.Store, routes ...*routev1.Route) ([]*routev1.Route, map[admission.Key]admission.Result) {
	t.Helper()
	out, rej := resolve(t, r, st, routes...)
	for i := 0; i < 50; i++ {
		r.mu.Lock()
		busy := false
		for _, e := range r.entries {
			busy = busy || e.inflight || e.queued
		}
		r.mu.Unlock()
		if !busy {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-changed:
		return resolve(t, r, st, routes...)
	default:
		return out, rej
	}
}

func TestAPIAnswers(t *testing.T) {
	ref := Ref{"a", "s"}
	forbidden := func(verbs ...string) field.ErrorList {
		var out field.ErrorList
		for _, v := range verbs {
			out = append(out, field.Forbidden(fieldPath(), "router serviceaccount does not have permission to "+v+" this secret"))
		}
		return out
	}
	tests := []struct {
		name    string
		answer  Answer
		secret  *corev1.Secret
		watched bool
		message string
	}{
		{"allowed and present is served", Answer{Exists: true}, secret("a", "s", corev1.SecretTypeTLS, "1"), true, ""},
		{"allowed but not delivered by the watch yet serves what the GET read", Answer{Exists: true, Secret: secret("a", "s", corev1.SecretTypeTLS, "1")}, nil, true, ""},
		{"allowed and missing is not found", Answer{}, nil, true, `spec.tls.externalCertificate: Not found: "secrets \"s\" not found"`},
		{"allowed and of another type is refused", Answer{Exists: true}, secret("a", "s", corev1.SecretTypeOpaque, "1"), true, `spec.tls.externalCertificate: Invalid value: "s": secret of type "kubernetes.io/tls" required`},
		{"not allowed is refused and not watched", Answer{Forbidden: forbidden("get", "watch", "list"), Exists: true}, nil, false,
			"[spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to get this secret, spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to watch this secret, spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to list this secret]"},
		{"not allowed to watch only", Answer{Forbidden: forbidden("watch"), Exists: true}, nil, false,
			"spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to watch this secret"},
		{"not allowed and missing", Answer{Forbidden: forbidden("get")}, nil, false,
			`[spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to get this secret, spec.tls.externalCertificate: Not found: "secrets \"s\" not found"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.New()
			if tt.secret != nil {
				st.Upsert(tt.secret)
			}
			chk := &fakeChecker{answers: map[Ref]Answer{ref: tt.answer}}
			w := &fakeWatcher{}
			changed := make(chan struct{}, 10)
			r := New(Options{Enabled: true, Checker: chk, Watcher: w, Changed: func() { changed <- struct{}{} }, Logger: logr.Discard()})
			out, rej := settle(t, r, changed, st, route("a", "r", "s"))
			if w.wanted[ref] != tt.watched {
				t.Errorf("watched %v, want %v", w.wanted[ref], tt.watched)
			}
			res, rejected := rej["a/r"]
			switch {
			case tt.message == "":
				if len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-1" {
					t.Errorf("want served: out %v rejected %+v", out, res)
				}
			default:
				if !rejected || res.Reason != ReasonValidationFailed || res.Message != tt.message {
					t.Errorf("got %+v\nwant %q", res, tt.message)
				}
			}
		})
	}
}

// TestSecretLifecycle: rotation keeps serving without waiting for the new
// answer; deletion rejects at once; recreation serves again.
func TestSecretLifecycle(t *testing.T) {
	ref := Ref{"a", "s"}
	st := store.New()
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "1"))
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Exists: true}}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Logger: logr.Discard()})
	rt := route("a", "r", "s")
	if out, _ := settle(t, r, changed, st, rt); len(out) != 1 {
		t.Fatalf("not served: %v", out)
	}

	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "2"))
	out, rej := resolve(t, r, st, rt)
	if len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-2" || len(rej) != 0 {
		t.Fatalf("rotation: out %v rejected %v", out, rej)
	}

	st.Delete(secret("a", "s", "", ""))
	chk.set(ref, Answer{})
	out, rej = resolve(t, r, st, rt)
	if len(out) != 1 || out[0].Spec.TLS.Certificate != "" || !strings.Contains(rej["a/r"].Message, "not found") {
		t.Fatalf("deletion: out %v rejected %v", out, rej)
	}

	chk.set(ref, Answer{Exists: true})
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "3"))
	out, _ = settle(t, r, changed, st, rt)
	if len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-3" {
		t.Fatalf("recreation: out %v", out)
	}
}

func TestAnswersAreAskedAgainWhenOld(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ref := Ref{"a", "s"}
	st := store.New()
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Forbidden: field.ErrorList{field.Forbidden(fieldPath(), "no")}}}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Now: clock, Recheck: time.Minute, Logger: logr.Discard()})
	rt := route("a", "r", "s")
	settle(t, r, changed, st, rt)
	settle(t, r, changed, st, rt)
	if chk.calls != 1 {
		t.Fatalf("calls %d before the answer is old", chk.calls)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	chk.set(ref, Answer{Exists: true})
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, ""))
	out, _ := settle(t, r, changed, st, rt)
	if chk.calls != 2 || len(out) != 1 {
		t.Fatalf("calls %d out %v: a granted permission is not picked up", chk.calls, out)
	}
}

// TestUnansweredRoutesWait: a route whose secret has no answer yet is
// pending (no status) after FirstWait, and served once the answer arrives.
func TestUnansweredRoutesWait(t *testing.T) {
	ref := Ref{"a", "s"}
	st := store.New()
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "1"))
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Exists: true}}, block: make(chan struct{})}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} },
		FirstWait: 20 * time.Millisecond, Logger: logr.Discard()})
	out, rej, pending := resolveAll(t, r, st, route("a", "r", "s"), route("a", "plain", ""))
	if len(out) != 2 || out[0].Spec.TLS.Certificate != "" || len(rej) != 0 || !pending["a/r"] || len(pending) != 1 {
		t.Fatalf("before the answer: out %v rejected %v pending %v", out, rej, pending)
	}
	close(chk.block)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no change signalled after the answer")
	}
	out, _, pending = resolveAll(t, r, st, route("a", "r", "s"), route("a", "plain", ""))
	if len(out) != 2 || out[0].Spec.TLS.Certificate != "CERT-1" || len(pending) != 0 {
		t.Fatalf("after the answer: out %v pending %v", out, pending)
	}
}

// TestRouteChangeAsksAgain: as OpenShift's router re-validates on every
// route update, a changed route has its secret checked again (a permission
// granted since is picked up).
func TestRouteChangeAsksAgain(t *testing.T) {
	ref := Ref{"a", "s"}
	st := store.New()
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Forbidden: field.ErrorList{field.Forbidden(fieldPath(), "no")}, Exists: true}}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Logger: logr.Discard()})
	rt := route("a", "r", "s")
	rt.ResourceVersion = "1"
	if _, rej := settle(t, r, changed, st, rt); rej["a/r"].Reason != ReasonValidationFailed {
		t.Fatalf("not rejected: %v", rej)
	}
	settle(t, r, changed, st, rt)
	calls := chk.calls
	chk.set(ref, Answer{Exists: true, Secret: secret("a", "s", corev1.SecretTypeTLS, "1")})
	rt2 := rt.DeepCopy()
	rt2.ResourceVersion = "2"
	out, _ := settle(t, r, changed, st, rt2)
	if chk.calls != calls+1 || len(out) != 1 {
		t.Fatalf("calls %d (were %d), out %v", chk.calls, calls, out)
	}
}

// TestRejectedThroughAdmission: the rejections, given to admission as
// Excluded, reject exactly those routes with their reason.
func TestRejectedThroughAdmission(t *testing.T) {
	st := store.New()
	out, rej := resolve(t, New(Options{Enabled: true}), st, route("a", "missing", "nope"), route("a", "plain", ""))
	d := admission.Admit(out, admission.Options{Excluded: rej})
	if res := d.Results["a/missing"]; res.Admitted || res.Reason != ReasonValidationFailed {
		t.Errorf("missing: %+v", res)
	}
	if res := d.Results["a/plain"]; !res.Admitted {
		t.Errorf("plain: %+v", res)
	}
}

// TestFailedRecheckKeepsTheAnswer: a recheck the API fails does not
// reject a route that was served.
func TestFailedRecheckKeepsTheAnswer(t *testing.T) {
	ref := Ref{"a", "s"}
	st := store.New()
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "1"))
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Exists: true}}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Logger: logr.Discard()})
	rt := route("a", "r", "s")
	if out, _ := settle(t, r, changed, st, rt); len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-1" {
		t.Fatalf("not served: %v", out)
	}
	chk.set(ref, Answer{Err: field.InternalError(fieldPath(), errors.New("the secret could not be read"))})
	st.Upsert(secret("a", "s", corev1.SecretTypeTLS, "2"))
	settle(t, r, changed, st, rt)
	out, rej := resolve(t, r, st, rt)
	if len(rej) != 0 || len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-2" {
		t.Fatalf("after a failed recheck: out %v rejected %v", out, rej)
	}
	if chk.calls < 2 {
		t.Fatalf("no recheck made (%d calls)", chk.calls)
	}
}
