package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFailureBackoff: the wait before a retry starts at the reload
// interval and doubles up to failureBackoffMax (or the interval, when it
// is longer).
func TestFailureBackoff(t *testing.T) {
	cases := []struct {
		interval time.Duration
		n        int
		want     time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 2, 2 * time.Second},
		{time.Second, 5, 16 * time.Second},
		{time.Second, 6, failureBackoffMax},
		{time.Second, 1000, failureBackoffMax},
		{5 * time.Second, 3, 20 * time.Second},
		{time.Minute, 4, time.Minute},
	}
	for _, c := range cases {
		if got := failureBackoff(c.interval, c.n); got != c.want {
			t.Errorf("failureBackoff(%v, %d) = %v, want %v", c.interval, c.n, got, c.want)
		}
	}
}

// failingReloads pretends to run HAProxy; its reloads fail while fail is
// set.
type failingReloads struct {
	running atomic.Bool
	fail    atomic.Bool
	reloads atomic.Int64
}

func (p *failingReloads) Check(context.Context, string) error { return nil }
func (p *failingReloads) Start(context.Context) error         { p.running.Store(true); return nil }
func (p *failingReloads) Running() bool                       { return p.running.Load() }
func (p *failingReloads) Reload(context.Context) error {
	p.reloads.Add(1)
	if p.fail.Load() {
		return errors.New("reload script exited with status 1")
	}
	return nil
}

// TestAFailureWithoutACulpritIsRetriedWithBackoff: a pass that fails with
// no route to blame (here a reload) makes the router not ready with the
// error, and is tried again by itself, without any new change, until it
// works; then the router is ready again.
func TestAFailureWithoutACulpritIsRetriedWithBackoff(t *testing.T) {
	st := tenantStore(plainRoute("a", "web"))
	o := tenantOptions(t, st, t.TempDir())
	p := &failingReloads{}
	o.Process = p
	o.ReloadInterval = 20 * time.Millisecond
	o.Logger = testr.New(t)
	c := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "ready after the start", func() bool { return c.Ready() && c.LastError() == nil })

	p.fail.Store(true)
	st.Upsert(plainRoute("b", "web"))
	waitFor(t, "not ready with the reload error", func() bool { return !c.Ready() && c.LastError() != nil })
	tried := p.reloads.Load()
	waitFor(t, "retries without a new change", func() bool { return p.reloads.Load() >= tried+2 })
	if c.Ready() {
		t.Fatal("ready while the reload still fails")
	}

	p.fail.Store(false)
	waitFor(t, "ready again once the reload works", func() bool { return c.Ready() && c.LastError() == nil })
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func plainRoute(ns, name string) *routev1.Route {
	return &routev1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Generation: 1},
		Spec: routev1.RouteSpec{Host: name + "." + ns + ".example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "svc"}}}
}
