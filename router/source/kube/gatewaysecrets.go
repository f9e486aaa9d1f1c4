package kube

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/router/store"
)

// GatewaySecrets watches into the store the Secrets that Gateways' HTTPS
// listeners name (router/gateway: Result.Secrets), those the router may
// read: the Gateway's owner grants it get, list and watch on them (a Role
// in the Secret's namespace), as a route's owner does for an external
// certificate; the router needs no access to secrets of its own.
//
// Whether it may is asked (extcert.Kube: SubjectAccessReviews and a GET),
// at most GatewaySecretWorkers at a time, each check bounded by
// GatewaySecretTimeout. A refusal is logged once, and asked again after
// GatewaySecretRetry (a check that failed too); a permission granted is
// asked again after GatewaySecretRecheck, so a Role taken away stops the
// watch and takes the Secret out of the store. A Secret it may not read is
// missing from the store: the listener says so in its status. Changed is
// called when an answer changes what is watched (store.Poke: a pass).
type GatewaySecrets struct {
	ctx     context.Context
	watches *SecretWatches
	checker extcert.Checker
	log     logr.Logger
	changed func()
	now     func() time.Time
	slots   chan struct{}
	// retry and recheck are GatewaySecretRetry and GatewaySecretRecheck
	// (tests shorten them).
	retry, recheck time.Duration

	mu sync.Mutex
	// answers are the permission answers of wanted secrets.
	answers map[extcert.Ref]gatewaySecretAnswer
	// asking are the secrets being checked.
	asking map[extcert.Ref]bool
	wanted map[extcert.Ref]bool
}

type gatewaySecretAnswer struct {
	allowed bool
	at      time.Time
}

// How Gateways' Secrets are checked (see GatewaySecrets).
const (
	GatewaySecretWorkers = 2
	GatewaySecretTimeout = 10 * time.Second
	GatewaySecretRetry   = time.Minute
	GatewaySecretRecheck = 5 * time.Minute
)

// NewGatewaySecrets returns the watcher; its checks and watches end with
// ctx. changed may be nil.
func NewGatewaySecrets(ctx context.Context, watches *SecretWatches, checker extcert.Checker, changed func(), log logr.Logger) *GatewaySecrets {
	if changed == nil {
		changed = func() {}
	}
	return &GatewaySecrets{ctx: ctx, watches: watches, checker: checker, log: log, changed: changed, now: time.Now,
		slots: make(chan struct{}, GatewaySecretWorkers), retry: GatewaySecretRetry, recheck: GatewaySecretRecheck,
		answers: map[extcert.Ref]gatewaySecretAnswer{}, asking: map[extcert.Ref]bool{}, wanted: map[extcert.Ref]bool{}}
}

// Want sets the secrets the Gateways name: those the router may read are
// watched, the others asked about (in the background) when no recent
// answer stands.
func (g *GatewaySecrets) Want(keys []store.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wanted = make(map[extcert.Ref]bool, len(keys))
	for _, k := range keys {
		ns, name := k.Split()
		g.wanted[extcert.Ref{Namespace: ns, Name: name}] = true
	}
	for ref := range g.answers {
		if !g.wanted[ref] {
			delete(g.answers, ref)
		}
	}
	for ref := range g.wanted {
		g.askIfDue(ref)
	}
	g.sync()
}

// askIfDue starts a check of ref unless one runs or a recent answer
// stands (g.mu held).
func (g *GatewaySecrets) askIfDue(ref extcert.Ref) {
	a, known := g.answers[ref]
	due := g.retry
	if a.allowed {
		due = g.recheck
	}
	if g.asking[ref] || known && g.now().Sub(a.at) < due {
		return
	}
	g.asking[ref] = true
	go g.ask(ref)
}

// ask checks one secret, watches it if the router may read it, and asks
// again when the answer is due.
func (g *GatewaySecrets) ask(ref extcert.Ref) {
	select {
	case g.slots <- struct{}{}:
	case <-g.ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, GatewaySecretTimeout)
	a := g.checker.Check(ctx, ref)
	cancel()
	<-g.slots
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.asking, ref)
	if !g.wanted[ref] {
		return
	}
	was, known := g.answers[ref]
	if a.Err == nil {
		allowed := len(a.Forbidden) == 0
		if !allowed && (!known || was.allowed) {
			g.log.Info("the router may not read a Secret a Gateway's HTTPS listener names: grant it get, list and watch on it",
				"secret", ref.String())
		}
		g.answers[ref] = gatewaySecretAnswer{allowed: allowed, at: g.now()}
		if allowed != was.allowed {
			g.sync()
			go g.changed()
		}
	} else if known {
		// The previous answer stands until the retry.
		g.answers[ref] = gatewaySecretAnswer{allowed: was.allowed, at: g.now().Add(-g.recheck + g.retry)}
	}
	due := g.retry
	if g.answers[ref].allowed {
		due = g.recheck
	}
	time.AfterFunc(due, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.wanted[ref] && g.ctx.Err() == nil {
			g.askIfDue(ref)
		}
	})
}

// sync watches the wanted secrets the router may read (g.mu held).
func (g *GatewaySecrets) sync() {
	watch := map[extcert.Ref]bool{}
	for ref := range g.wanted {
		if g.answers[ref].allowed {
			watch[ref] = true
		}
	}
	g.watches.SyncFor("gateways", watch)
}
