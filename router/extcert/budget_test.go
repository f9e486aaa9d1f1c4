package extcert

import (
	"context"
	"errors"
	"fmt"
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

func TestFairQueueTakesNamespacesInTurn(t *testing.T) {
	q := newFairQueue(2)
	for i := 0; i < 100; i++ {
		q.push(Ref{"flood", fmt.Sprint(i)})
	}
	q.push(Ref{"b", "1"})
	q.push(Ref{"b", "2"})
	q.push(Ref{"b", "3"})
	var got []Ref
	pop := func() {
		ref, ok := q.pop()
		if !ok {
			t.Fatalf("nothing handed out after %v", got)
		}
		got = append(got, ref)
	}
	pop()
	q.push(Ref{"c", "1"})
	pop()
	pop()
	pop()
	pop()
	// flood and b have two checks out each: only c's turn would come.
	if ref, ok := q.pop(); ok {
		t.Fatalf("handed out %v over the per-namespace limit", ref)
	}
	q.done(Ref{"flood", "0"})
	pop()
	q.done(Ref{"b", "1"})
	pop()
	want := []Ref{{"flood", "0"}, {"b", "1"}, {"c", "1"}, {"flood", "1"}, {"b", "2"}, {"flood", "2"}, {"b", "3"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestRetryDelayGrows(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, retryDelay(n, 5*time.Minute))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
}

// orderChecker records the order of the checks; each takes a little while.
type orderChecker struct {
	mu    sync.Mutex
	order []Ref
}

func (c *orderChecker) Check(_ context.Context, ref Ref) Answer {
	time.Sleep(time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, ref)
	return Answer{Exists: true}
}

// TestBusyNamespaceDoesNotDelayOthers: another namespace's secret is
// checked among the first while one namespace has hundreds waiting.
func TestBusyNamespaceDoesNotDelayOthers(t *testing.T) {
	var routes []*routev1.Route
	for i := 0; i < 300; i++ {
		routes = append(routes, route("flood", fmt.Sprint("r", i), fmt.Sprint("s", i)))
	}
	routes = append(routes, route("quiet", "r", "s"))
	chk := &orderChecker{}
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Workers: 1, FirstWait: time.Millisecond, Logger: logr.Discard()})
	resolve(t, r, store.New(), routes...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		chk.mu.Lock()
		order := append([]Ref(nil), chk.order...)
		chk.mu.Unlock()
		for i, ref := range order {
			if ref.Namespace == "quiet" {
				if i > 2 {
					t.Fatalf("quiet's secret was check %d", i+1)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("quiet's secret not checked after %d checks", len(order))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailedChecksHoldTheClaim: while the API fails to answer, a route
// never served is pending, so a newer route of another namespace does not
// take its host; however often the route changes, its checks back off;
// once an answer arrives it is served.
func TestFailedChecksHoldTheClaim(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ref := Ref{"owner", "s"}
	st := store.New()
	failed := Answer{Err: field.InternalError(fieldPath(), errors.New("the router's permission to read the secret could not be checked"))}
	chk := &fakeChecker{answers: map[Ref]Answer{ref: failed}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Now: clock, Logger: logr.Discard()})
	owner := route("owner", "r", "s")
	owner.Spec.Host, owner.CreationTimestamp = "shop.example.com", metav1.NewTime(time.Unix(1, 0))
	thief := route("thief", "r", "")
	thief.Spec.Host, thief.CreationTimestamp = "shop.example.com", metav1.NewTime(time.Unix(2, 0))
	admit := func(owner *routev1.Route) admission.Decision {
		out, rej, pending := resolveAll(t, r, st, owner, thief)
		return admission.Admit(out, admission.Options{Excluded: rej, Pending: pending})
	}
	settle(t, r, changed, st, owner, thief)
	for i := 0; i < 5; i++ {
		// The route changes continuously: no check before the delay.
		owner = owner.DeepCopy()
		owner.ResourceVersion = fmt.Sprint(i)
		d := admit(owner)
		if res, ok := d.Results["owner/r"]; ok {
			t.Fatalf("owner/r has a result while its secret is unknown: %+v", res)
		}
		if res := d.Results["thief/r"]; res.Admitted || res.Reason != admission.ReasonHostAlreadyClaimed {
			t.Fatalf("thief/r took the host: %+v", res)
		}
		if len(d.Admitted) != 0 {
			t.Fatalf("admitted %v", d.Admitted)
		}
	}
	if chk.calls != 1 {
		t.Fatalf("%d checks before the retry delay, want 1", chk.calls)
	}
	advance(10 * time.Second)
	settle(t, r, changed, st, owner, thief)
	advance(10 * time.Second)
	settle(t, r, changed, st, owner, thief)
	if chk.calls != 2 {
		t.Fatalf("%d checks: the second failure did not double the delay", chk.calls)
	}

	chk.set(ref, Answer{Exists: true})
	st.Upsert(secret("owner", "s", corev1.SecretTypeTLS, "1"))
	advance(10 * time.Second)
	settle(t, r, changed, st, owner, thief)
	out, rej, pending := resolveAll(t, r, st, owner, thief)
	if len(rej) != 0 || len(pending) != 0 || out[0].Spec.TLS.Certificate != "CERT-1" {
		t.Fatalf("after the answer: out %v rejected %v pending %v", out, rej, pending)
	}
}

// TestFailedRecheckServesAsBefore: a served route whose recheck fails is
// served with its certificate, and keeps its host.
func TestFailedRecheckServesAsBefore(t *testing.T) {
	ref := Ref{"owner", "s"}
	st := store.New()
	st.Upsert(secret("owner", "s", corev1.SecretTypeTLS, "1"))
	chk := &fakeChecker{answers: map[Ref]Answer{ref: {Exists: true}}}
	changed := make(chan struct{}, 10)
	r := New(Options{Enabled: true, Checker: chk, Watcher: &fakeWatcher{}, Changed: func() { changed <- struct{}{} }, Logger: logr.Discard()})
	owner := route("owner", "r", "s")
	owner.ResourceVersion = "1"
	settle(t, r, changed, st, owner)
	chk.set(ref, Answer{Err: field.InternalError(fieldPath(), errors.New("timeout"))})
	owner2 := owner.DeepCopy()
	owner2.ResourceVersion = "2"
	out, rej, pending := resolveAll(t, r, st, owner2)
	settle(t, r, changed, st, owner2)
	out, rej, pending = resolveAll(t, r, st, owner2)
	if chk.calls != 2 || len(rej) != 0 || len(pending) != 0 || len(out) != 1 || out[0].Spec.TLS.Certificate != "CERT-1" {
		t.Fatalf("calls %d, out %v, rejected %v, pending %v", chk.calls, out, rej, pending)
	}
}
