package kube

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/router/store"
)

// grants is a Checker whose answers a test changes.
type grants struct {
	mu      sync.Mutex
	allowed map[extcert.Ref]bool
	asked   int
}

func (g *grants) Check(_ context.Context, ref extcert.Ref) extcert.Answer {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked++
	if g.allowed[ref] {
		return extcert.Answer{Exists: true}
	}
	return extcert.Answer{Exists: true, Forbidden: field.ErrorList{field.Forbidden(field.NewPath("x"), "no")}}
}

func (g *grants) set(ref extcert.Ref, allowed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allowed[ref] = allowed
}

// TestGatewaySecretsWatchWhatTheRouterMayReadAndFollowGrants: a Secret the
// router may not read is not watched (nor stored); granted later, it is
// asked about again and watched into the store; the grant taken away, it
// leaves the store; one no longer wanted is not asked about again.
func TestGatewaySecretsWatchWhatTheRouterMayReadAndFollowGrants(t *testing.T) {
	ref := extcert.Ref{Namespace: "infra", Name: "tls"}
	kc := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "tls"}, Type: corev1.SecretTypeTLS})
	st := store.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &grants{allowed: map[extcert.Ref]bool{}}
	pokes := make(chan struct{}, 10)
	gs := NewGatewaySecrets(ctx, NewSecretWatches(ctx, kc, st, 0, logr.Discard()), g, func() { pokes <- struct{}{} }, logr.Discard())
	gs.retry, gs.recheck = 20*time.Millisecond, 20*time.Millisecond
	stored := func() bool {
		var ok bool
		_ = st.Read(func(v store.View) error { ok = v.Secret("infra", "tls") != nil; return nil })
		return ok
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}
	gs.Want([]store.Key{"infra/tls"})
	waitFor("the first check", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.asked > 0 })
	time.Sleep(50 * time.Millisecond)
	if stored() {
		t.Fatal("a Secret the router may not read was stored")
	}
	g.set(ref, true)
	waitFor("the granted Secret stored", stored)
	g.set(ref, false)
	waitFor("the Secret out of the store once the grant went", func() bool { return !stored() })
	if len(pokes) == 0 {
		t.Error("no pass asked for when the answers changed")
	}
	gs.Want(nil)
	g.mu.Lock()
	asked := g.asked
	g.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.asked > asked+1 {
		t.Errorf("asked %d more times about a Secret no longer wanted", g.asked-asked)
	}
}
