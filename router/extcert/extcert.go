// Package extcert serves routes' spec.tls.externalCertificate: the
// certificate and key of an edge or re-encrypt route come from a
// kubernetes.io/tls Secret in the route's namespace, as OpenShift's router
// does with its route secret manager (ROUTER_ENABLE_EXTERNAL_CERTIFICATE).
//
// Every pass of the pipeline calls Resolve with the store's view: routes
// that refer to a usable secret are handed on as copies whose
// spec.tls.certificate and key hold the secret's tls.crt and tls.key (the
// admission chain then validates them like inline ones); routes whose
// secret cannot be used are rejected with OpenShift's reason
// ExternalCertificateValidationFailed and its messages.
//
// With the Kubernetes API (a Checker is given), whether the router may get,
// list and watch the secret is asked with SubjectAccessReviews and whether
// the secret exists with a GET, as OpenShift's router does; the answers are
// fetched in the background (a pass never waits for the API) and asked
// again when the secret changes or the answer is older than Recheck.
//
// The checks are a shared budget that tenants fill: they wait in one queue
// per namespace, served round-robin by a few workers (Workers), so a
// namespace with hundreds of references delays another namespace's check
// by at most one check per waiting namespace; answers are cached (granted
// and refused alike) and a check the API fails is retried after a growing
// delay (10 seconds, doubling up to Recheck), however often the route
// changes meanwhile. A check the API fails (an error or timeout, not a
// refusal) decides nothing: a route served before is served as it was,
// and a route never served yet is handed on as pending, so admission keeps
// its host claimed for it (another namespace's newer route does not take
// the host) without serving it, until a definitive answer arrives. Only
// secrets the router may read are watched, one watch per referenced secret
// (a Watcher), as OpenShift's secret monitor does: their data reach the
// store, and a changed tls.crt/tls.key reaches HAProxy as a changed
// certificate file (replaced through the runtime API without a reload when
// nothing else changed). Without a Checker (the manifests directory) the
// Secrets of the directory are the source and no permission is checked.
package extcert

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/store"
)

// OpenShift's status reasons for external certificates. Only
// ReasonValidationFailed is written here: OpenShift's other reasons mark
// the transient states between a secret event and the route's
// re-evaluation, which this router does in the same pass.
const (
	ReasonValidationFailed = "ExternalCertificateValidationFailed"
	ReasonSecretRecreated  = "ExternalCertificateSecretRecreated"
	ReasonSecretUpdated    = "ExternalCertificateSecretUpdated"
	ReasonSecretDeleted    = "ExternalCertificateSecretDeleted"
	ReasonGetFailed        = "ExternalCertificateGetFailed"
)

// fieldPath is the field OpenShift's messages name.
func fieldPath() *field.Path { return field.NewPath("spec", "tls", "externalCertificate") }

// Ref names a referenced secret.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Answer is what the API says about a referenced secret.
type Answer struct {
	// Forbidden holds one error per verb (get, watch, list) the router
	// may not use on the secret.
	Forbidden field.ErrorList
	// Exists is false when the GET found no such secret. Err is set when
	// a review or the GET failed (an error, a timeout, a review not
	// evaluated): the answer is unknown and the rest of it is not used.
	Exists bool
	Err    *field.Error
	// Secret is what the GET returned: served until the secret's watch
	// has delivered it to the store.
	Secret *corev1.Secret
}

// Checker asks the API about a secret (Kube, in kube.go).
type Checker interface {
	Check(ctx context.Context, ref Ref) Answer
}

// Watcher keeps exactly the wanted secrets watched into the store.
type Watcher interface {
	Sync(wanted map[Ref]bool)
}

// Options configure a Resolver.
type Options struct {
	// Enabled is ROUTER_ENABLE_EXTERNAL_CERTIFICATE. Off, routes are
	// handed on unchanged: as with OpenShift's router without its route
	// secret manager, spec.tls.externalCertificate is ignored and such a
	// route is served with the default certificate.
	Enabled bool
	// Checker and Watcher are the API's (nil: the store's secrets are used
	// as they are, without a permission check).
	Checker Checker
	Watcher Watcher
	// Changed is called when an answer arrives that changes a route's
	// outcome (store.Poke).
	Changed func()
	Logger  logr.Logger
	// Recheck is how old an answer may get before it is asked again
	// (default 5 minutes; also the longest delay before a failed check is
	// retried); Timeout bounds one check (default 10 seconds).
	Recheck time.Duration
	Timeout time.Duration
	// Workers is how many checks run at a time (default 4), at most half
	// of them (at least one) for secrets of one namespace.
	Workers int
	// FirstWait bounds how long one pass waits for the first answers
	// about secrets it has not asked about before (default 2 seconds), so
	// the routes of a starting router are in its first configuration.
	FirstWait time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// watchGrace is how long the secret a GET read is served while its watch
// has not delivered it to the store, before it is asked for again.
const watchGrace = 30 * time.Second

// errorRetry is how soon an answer the API failed to give is asked again;
// the delay doubles with each further failure
// up to Options.Recheck.
const errorRetry = 10 * time.Second

// defaultWorkers is Options.Workers' default.
const defaultWorkers = 4

// entry is the state of one referenced secret.
type entry struct {
	// answer is the last definitive answer (answered): never a failed
	// check's (Answer.Err).
	answer   Answer
	answered bool
	// queued: waiting in the queue; inflight: being checked.
	queued, inflight bool
	// first is closed when the first check ends (answered or failed).
	first     chan struct{}
	firstDone bool
	// failures counts the checks failed in a row; the next is not made
	// before retryAt.
	failures int
	retryAt  time.Time
	// secretRV and routeRVs are the resource versions of the secret in
	// the store ("" absent) and of the routes that refer to it when last
	// seen: as OpenShift's router, a change of either asks again (dirty).
	secretRV string
	routeRVs map[admission.Key]string
	dirty    bool
	checked  time.Time
	// seen is set once the store had the secret.
	seen bool
}

// Resolver resolves external certificates; Resolve is called by one
// goroutine, answers arrive from others.
type Resolver struct {
	o       Options
	mu      sync.Mutex
	entries map[Ref]*entry
	queue   *fairQueue
	// running is how many workers run (at most o.Workers).
	running int
}

// New returns a Resolver.
func New(o Options) *Resolver {
	if o.Recheck <= 0 {
		o.Recheck = 5 * time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.FirstWait <= 0 {
		o.FirstWait = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Changed == nil {
		o.Changed = func() {}
	}
	if o.Workers <= 0 {
		o.Workers = defaultWorkers
	}
	return &Resolver{o: o, entries: map[Ref]*entry{}, queue: newFairQueue(max(1, o.Workers/2))}
}

// RefOf returns the secret a route refers to, if any.
func RefOf(r *routev1.Route) (Ref, bool) {
	tls := r.Spec.TLS
	if tls == nil || tls.ExternalCertificate == nil || tls.ExternalCertificate.Name == "" {
		return Ref{}, false
	}
	return Ref{Namespace: r.Namespace, Name: tls.ExternalCertificate.Name}, true
}

// Resolve returns the routes to admit, with external certificates filled
// in, the rejected ones' results (to be given to admission as
// Options.Excluded) and the pending ones (admission's Options.Pending): the
// rejected and pending routes are among those returned. A route is pending
// while its secret has no definitive answer yet (none arrived, or the API
// failed to give one): admission keeps its host claimed for it without
// serving it or writing its status, until the answer arrives and Changed
// is called. v is read only during the call.
func (r *Resolver) Resolve(v store.View, routes []*routev1.Route) ([]*routev1.Route, map[admission.Key]admission.Result, map[admission.Key]bool) {
	if !r.o.Enabled {
		return routes, nil, nil
	}
	out := make([]*routev1.Route, 0, len(routes))
	var rejected map[admission.Key]admission.Result
	var pending map[admission.Key]bool
	reject := func(rt *routev1.Route, errs field.ErrorList) {
		if rejected == nil {
			rejected = map[admission.Key]admission.Result{}
		}
		rejected[admission.KeyOf(rt)] = admission.Result{Reason: ReasonValidationFailed, Message: errs.ToAggregate().Error()}
	}
	if r.o.Checker != nil {
		r.askNew(v, routes)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	used := map[Ref]bool{}
	wanted := map[Ref]bool{}
	for _, rt := range routes {
		ref, ok := RefOf(rt)
		if !ok {
			out = append(out, rt)
			continue
		}
		used[ref] = true
		secret := v.Secret(ref.Namespace, ref.Name)
		var errs field.ErrorList
		if r.o.Checker != nil {
			var wait bool
			errs, secret, wait = r.fromAPI(rt, ref, secret, wanted)
			if wait {
				if pending == nil {
					pending = map[admission.Key]bool{}
				}
				pending[admission.KeyOf(rt)] = true
				out = append(out, rt)
				continue
			}
		}
		if len(errs) == 0 {
			errs = Validate(ref.Name, secret)
		}
		if len(errs) > 0 {
			// Handed on for admission to reject with this result.
			reject(rt, errs)
			out = append(out, rt)
			continue
		}
		out = append(out, withCertificate(rt, secret))
	}
	for ref := range r.entries {
		if !used[ref] {
			delete(r.entries, ref)
		}
	}
	if r.o.Watcher != nil {
		r.o.Watcher.Sync(wanted)
	}
	return out, rejected, pending
}

// askNew asks about the secrets no answer was asked for yet and waits, up
// to FirstWait, for the answers.
func (r *Resolver) askNew(v store.View, routes []*routev1.Route) {
	var wait []chan struct{}
	fresh := map[Ref]*entry{}
	r.mu.Lock()
	for _, rt := range routes {
		ref, ok := RefOf(rt)
		if !ok {
			continue
		}
		e := fresh[ref]
		if e == nil {
			if r.entries[ref] != nil {
				continue
			}
			e = &entry{first: make(chan struct{}), routeRVs: map[admission.Key]string{}}
			if s := v.Secret(ref.Namespace, ref.Name); s != nil {
				e.secretRV = s.ResourceVersion
			}
			r.entries[ref], fresh[ref] = e, e
			wait = append(wait, e.first)
		}
		e.routeRVs[admission.KeyOf(rt)] = rt.ResourceVersion
	}
	for ref, e := range fresh {
		r.ask(ref, e)
	}
	r.mu.Unlock()
	if len(wait) == 0 {
		return
	}
	t := time.NewTimer(r.o.FirstWait)
	defer t.Stop()
	for _, ch := range wait {
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// fromAPI returns the API's errors for a secret and the secret to serve
// (the store's, or the GET's until the store has it), or pending while
// there is no definitive answer yet. Secrets the router may read are added to
// wanted. Called with r.mu held.
func (r *Resolver) fromAPI(rt *routev1.Route, ref Ref, secret *corev1.Secret, wanted map[Ref]bool) (field.ErrorList, *corev1.Secret, bool) {
	rv := ""
	if secret != nil {
		rv = secret.ResourceVersion
	}
	e := r.entries[ref]
	if e == nil {
		e = &entry{first: make(chan struct{}), routeRVs: map[admission.Key]string{}, dirty: true}
		r.entries[ref] = e
	}
	key := admission.KeyOf(rt)
	if e.secretRV != rv || e.routeRVs[key] != rt.ResourceVersion {
		e.secretRV, e.routeRVs[key] = rv, rt.ResourceVersion
		e.dirty = true
	}
	if secret == nil && !e.seen && e.answered && e.answer.Exists && r.o.Now().Sub(e.checked) >= watchGrace {
		// Its watch has not delivered it: ask whether it still exists.
		e.dirty = true
	}
	if r.due(e) {
		r.ask(ref, e)
	}
	if !e.answered {
		return nil, nil, true
	}
	a := e.answer
	if len(a.Forbidden) > 0 {
		// OpenShift's order: the permission errors, then the GET's.
		errs := append(field.ErrorList{}, a.Forbidden...)
		if !a.Exists {
			errs = append(errs, notFound(ref.Name))
		}
		return errs, nil, false
	}
	wanted[ref] = true
	if secret != nil {
		e.seen = true
		return nil, secret, false
	}
	if !e.seen && a.Exists {
		// Its watch has not delivered it yet.
		return nil, a.Secret, false
	}
	// Deleted since (Validate says not found).
	return nil, nil, false
}

// due reports whether e is to be checked: it changed or its answer is
// old, unless a check waits or runs, or a failed one's delay has not
// passed (changes do not shorten it). Called with r.mu held.
func (r *Resolver) due(e *entry) bool {
	if e.queued || e.inflight {
		return false
	}
	now := r.o.Now()
	if e.failures > 0 {
		return !now.Before(e.retryAt)
	}
	return e.dirty || now.Sub(e.checked) >= r.o.Recheck
}

// ask queues a check of ref, starting a worker if fewer than Workers
// run. Called with r.mu held.
func (r *Resolver) ask(ref Ref, e *entry) {
	e.queued, e.dirty = true, false
	r.queue.push(ref)
	if r.running < r.o.Workers {
		r.running++
		go r.work()
	}
}

// work checks the queued secrets, in the queue's order, until none it may
// take waits.
func (r *Resolver) work() {
	for {
		r.mu.Lock()
		ref, e := r.next()
		if e == nil {
			r.running--
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
		a := r.o.Checker.Check(ctx, ref)
		cancel()
		r.record(ref, e, a)
	}
}

// next takes the next queued secret that is still referenced and marks it
// in flight. Called with r.mu held.
func (r *Resolver) next() (Ref, *entry) {
	for {
		ref, ok := r.queue.pop()
		if !ok {
			return Ref{}, nil
		}
		if e := r.entries[ref]; e != nil && e.queued {
			e.queued, e.inflight = false, true
			return ref, e
		}
		r.queue.done(ref)
	}
}

// record keeps the answer of a check of ref and calls Changed when it
// changes a route's outcome. A failed check (Answer.Err) keeps the answer
// there was, if any, and delays the next check.
func (r *Resolver) record(ref Ref, e *entry, a Answer) {
	r.mu.Lock()
	r.queue.done(ref)
	if r.entries[ref] != e {
		// No longer referenced.
		r.mu.Unlock()
		return
	}
	e.inflight = false
	if !e.firstDone {
		e.firstDone = true
		close(e.first)
	}
	if a.Err != nil {
		e.failures++
		delay := retryDelay(e.failures, r.o.Recheck)
		e.retryAt = r.o.Now().Add(delay)
		served, failures := e.answered, e.failures
		r.mu.Unlock()
		time.AfterFunc(delay, func() { r.retry(ref, e) })
		r.o.Logger.Info("external certificate secret could not be checked; its routes keep their hosts and what was served",
			"secret", ref.String(), "err", a.Err.Error(), "failures", failures, "retryIn", delay.String(), "answeredBefore", served)
		return
	}
	changed := !e.answered || !sameAnswer(e.answer, a) || e.dirty
	e.answer, e.answered, e.failures = a, true, 0
	e.checked = r.o.Now()
	r.mu.Unlock()
	if changed {
		r.o.Logger.V(1).Info("external certificate secret checked", "secret", ref.String(),
			"forbidden", len(a.Forbidden), "exists", a.Exists)
		r.o.Changed()
	}
}

// retry checks ref again after a failure, unless it is no longer
// referenced or a pass asked already.
func (r *Resolver) retry(ref Ref, e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[ref] == e && r.due(e) {
		r.ask(ref, e)
	}
}

// retryDelay is the delay before the check after the n-th failure in a
// row: errorRetry doubled n-1 times, at most max.
func retryDelay(n int, max time.Duration) time.Duration {
	d := errorRetry
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

func sameAnswer(a, b Answer) bool {
	if a.Exists != b.Exists || len(a.Forbidden) != len(b.Forbidden) {
		return false
	}
	for i := range a.Forbidden {
		if a.Forbidden[i].Error() != b.Forbidden[i].Error() {
			return false
		}
	}
	return true
}

// Validate checks a secret the route may use as OpenShift's router does:
// it exists and is of type kubernetes.io/tls. (The certificate and key
// themselves are validated by the admission chain, as inline ones.)
func Validate(name string, secret *corev1.Secret) field.ErrorList {
	if secret == nil {
		return field.ErrorList{notFound(name)}
	}
	if secret.Type != corev1.SecretTypeTLS {
		return field.ErrorList{field.Invalid(fieldPath(), name, fmt.Sprintf("secret of type %q required", corev1.SecretTypeTLS))}
	}
	return nil
}

// notFound is OpenShift's error for a missing secret (the API's message).
func notFound(name string) *field.Error {
	return field.NotFound(fieldPath(), fmt.Sprintf("secrets %q not found", name))
}

// withCertificate returns a copy of the route serving the secret's
// certificate and key (the watched route is not changed). As OpenShift's
// router, the secret's tls.crt and tls.key replace spec.tls.certificate
// and key; spec.tls.caCertificate stays.
func withCertificate(rt *routev1.Route, secret *corev1.Secret) *routev1.Route {
	c := *rt
	tls := *rt.Spec.TLS
	tls.Certificate = string(secret.Data[corev1.TLSCertKey])
	tls.Key = string(secret.Data[corev1.TLSPrivateKeyKey])
	c.Spec.TLS = &tls
	return &c
}
