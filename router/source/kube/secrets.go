package kube

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/router/store"
)

// SecretWatches watches single secrets into the store: the secrets that
// routes' spec.tls.externalCertificate refer to (router/extcert decides)
// and those Gateways' HTTPS listeners name (GatewaySecrets decides), that
// the router may read; each user says what it wants (SyncFor). Each is one watch limited to the secret's
// name (field selector metadata.name), as OpenShift's secret monitor
// does, so a Role in the route's namespace that lets the router get, list
// and watch that one secret is enough; the router needs no cluster-wide
// access to secrets.
type SecretWatches struct {
	ctx    context.Context
	kube   kubernetes.Interface
	sink   store.Sink
	log    logr.Logger
	resync time.Duration

	mu      sync.Mutex
	watches map[extcert.Ref]context.CancelFunc
	// wanted are the secrets each user wants (SyncFor): those any user
	// wants are watched.
	wanted map[string]map[extcert.Ref]bool
}

// NewSecretWatches returns the watches; they all end with ctx.
func NewSecretWatches(ctx context.Context, kube kubernetes.Interface, sink store.Sink, resync time.Duration, log logr.Logger) *SecretWatches {
	return &SecretWatches{ctx: ctx, kube: kube, sink: sink, log: log, resync: resync, watches: map[extcert.Ref]context.CancelFunc{},
		wanted: map[string]map[extcert.Ref]bool{}}
}

// Sync implements extcert.Watcher: the secrets routes' external
// certificates want (SyncFor "routes").
func (w *SecretWatches) Sync(wanted map[extcert.Ref]bool) { w.SyncFor("routes", wanted) }

// SyncFor sets the secrets one user of the watches wants, starts the
// watches of secrets any user wants that are not watched yet and stops
// (and removes from the store) the others. It does not wait for them.
func (w *SecretWatches) SyncFor(user string, wanted map[extcert.Ref]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wanted[user] = wanted
	if len(w.wanted) > 1 {
		union := map[extcert.Ref]bool{}
		for _, refs := range w.wanted {
			for ref := range refs {
				union[ref] = true
			}
		}
		wanted = union
	}
	for ref, cancel := range w.watches {
		if wanted[ref] {
			continue
		}
		cancel()
		delete(w.watches, ref)
		w.log.V(1).Info("stopped watching secret", "secret", ref.String())
		// Not from the caller's goroutine: it may hold the store's
		// read lock.
		go w.sink.Delete(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}})
	}
	for ref := range wanted {
		if _, ok := w.watches[ref]; ok || w.ctx.Err() != nil {
			continue
		}
		ctx, cancel := context.WithCancel(w.ctx)
		w.watches[ref] = cancel
		w.start(ctx, ref)
		w.log.V(1).Info("watching secret", "secret", ref.String())
	}
}

func (w *SecretWatches) start(ctx context.Context, ref extcert.Ref) {
	f := informers.NewSharedInformerFactoryWithOptions(w.kube, w.resync,
		informers.WithNamespace(ref.Namespace),
		informers.WithTransform(StripManagedFields),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
		}))
	inf := f.Core().V1().Secrets().Informer()
	// Handlers run in the informer's goroutine, so a stopped watch's last
	// events cannot overtake its removal from the store: they are dropped.
	live := func() bool { return ctx.Err() == nil }
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if live() {
				w.upsert(objectOf(obj))
			}
		},
		UpdateFunc: func(_, obj any) {
			if live() {
				w.upsert(objectOf(obj))
			}
		},
		DeleteFunc: func(obj any) {
			if live() {
				w.delete(objectOf(obj))
			}
		},
	})
	if err != nil {
		w.log.Error(err, "watching secret", "secret", ref.String())
		return
	}
	f.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		f.Shutdown()
	}()
}

func (w *SecretWatches) upsert(o any) {
	if s, ok := o.(*corev1.Secret); ok {
		w.sink.Upsert(s)
	}
}

func (w *SecretWatches) delete(o any) {
	if s, ok := o.(*corev1.Secret); ok {
		w.sink.Delete(s)
	}
}
