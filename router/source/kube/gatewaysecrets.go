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
// certificate; the router needs no access to secrets of its own. Whether
// it may is asked (extcert.Kube: SubjectAccessReviews and a GET) once per
// Secret, and again after RecheckAfter for a refused one; a refusal is
// logged once. A Secret it may not read is missing from the store: the
// listener says so in its status.
type GatewaySecrets struct {
	ctx     context.Context
	watches *SecretWatches
	checker extcert.Checker
	log     logr.Logger
	now     func() time.Time

	mu sync.Mutex
	// answers are the permission answers, by secret: allowed, and when.
	answers map[extcert.Ref]gatewaySecretAnswer
	// asking are the secrets being checked.
	asking map[extcert.Ref]bool
	wanted map[extcert.Ref]bool
}

type gatewaySecretAnswer struct {
	allowed bool
	at      time.Time
}

// RecheckAfter is how long a refusal stands before it is asked again.
const RecheckAfter = time.Minute

// NewGatewaySecrets returns the watcher; its checks and watches end with ctx.
func NewGatewaySecrets(ctx context.Context, watches *SecretWatches, checker extcert.Checker, log logr.Logger) *GatewaySecrets {
	return &GatewaySecrets{ctx: ctx, watches: watches, checker: checker, log: log, now: time.Now,
		answers: map[extcert.Ref]gatewaySecretAnswer{}, asking: map[extcert.Ref]bool{}, wanted: map[extcert.Ref]bool{}}
}

// Want sets the secrets the Gateways name: those the router may read are
// watched, the others are asked about (in the background) unless a recent
// refusal stands.
func (g *GatewaySecrets) Want(keys []store.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wanted = make(map[extcert.Ref]bool, len(keys))
	for _, k := range keys {
		ns, name := k.Split()
		ref := extcert.Ref{Namespace: ns, Name: name}
		g.wanted[ref] = true
		a, known := g.answers[ref]
		if g.asking[ref] || known && (a.allowed || g.now().Sub(a.at) < RecheckAfter) {
			continue
		}
		g.asking[ref] = true
		go g.ask(ref)
	}
	g.sync()
}

// ask checks one secret and watches it if the router may read it.
func (g *GatewaySecrets) ask(ref extcert.Ref) {
	a := g.checker.Check(g.ctx, ref)
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.asking, ref)
	if a.Err != nil {
		// Unknown: asked again at the next Want after RecheckAfter.
		g.answers[ref] = gatewaySecretAnswer{at: g.now()}
		return
	}
	allowed := len(a.Forbidden) == 0
	if was, known := g.answers[ref]; !allowed && (!known || was.allowed) {
		g.log.Info("the router may not read a Secret a Gateway's HTTPS listener names: grant it get, list and watch on it",
			"secret", ref.String())
	}
	g.answers[ref] = gatewaySecretAnswer{allowed: allowed, at: g.now()}
	g.sync()
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
