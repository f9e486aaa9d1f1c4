// Package kube is the router's Kubernetes API source: client-go informers
// for Routes (openshift/client-go), Services, EndpointSlices (or Endpoints)
// and, when routes are sharded by namespace labels, Namespaces. It feeds the
// same store.Sink as the manifests source.
//
// While the API is unreachable the informers keep their caches (and the
// store keeps serving what it has); when it comes back they relist and the
// differences flow through as ordinary events.
package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	routeinformers "github.com/openshift/client-go/route/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/router/source/endpointfilter"
	"github.com/openshift-router-go/router/router/store"
)

// SourceName is the name the source marks the store synced with.
const SourceName = "kubernetes"

// Options configure the source.
type Options struct {
	Kube   kubernetes.Interface
	Routes routeclient.Interface
	// Gateway, if not nil, reads the Gateway API's objects when the API
	// server serves them and the router may list them (gateway.go).
	Gateway gatewayclient.Interface
	Sink    store.Sink
	Logger  logr.Logger
	// RouteLabels and RouteFields select the routes (ROUTE_LABELS, ROUTE_FIELDS).
	RouteLabels labels.Selector
	RouteFields fields.Selector
	// NamespaceLabels, if not nil, limits routes to the namespaces it
	// selects (NAMESPACE_LABELS / PROJECT_LABELS).
	NamespaceLabels labels.Selector
	// Namespace, if not empty, limits everything watched to one namespace
	// (--namespace).
	Namespace string
	// WatchEndpoints reads Endpoints instead of EndpointSlices.
	WatchEndpoints bool
	// Resync is the informers' resync period.
	Resync time.Duration
	// StatusChanged, if set, is called when a route of the cache changes
	// in nothing but its status (or is added): the status writer compares
	// it with the wanted status again. Such updates do not reach Sink, so
	// the router's own status writes cause no pass.
	StatusChanged func(namespace, name string)
	// GatewayStatusChanged, if set, is called when a Gateway API object
	// of a resource ("gateways", ...) changes in nothing but its status.
	GatewayStatusChanged func(resource, namespace, name string)
	// GatewayReprobe is how often the router looks again for the Gateway
	// API when it was not served or listable at start (CRDs installed,
	// or a binding made, later); 0: DefaultGatewayReprobe.
	GatewayReprobe time.Duration
}

// DefaultGatewayReprobe is Options.GatewayReprobe's default.
const DefaultGatewayReprobe = time.Minute

// Source runs the informers.
type Source struct {
	o Options

	mu sync.Mutex
	// selected holds the namespaces NamespaceLabels selects.
	selected map[string]bool
	routes   cache.Indexer
	// gatewayCaches are the Gateway API informers' caches, by resource.
	gatewayCaches map[string]cache.Indexer
}

// New returns a source.
func New(o Options) *Source {
	if o.RouteLabels == nil {
		o.RouteLabels = labels.Everything()
	}
	if o.RouteFields == nil {
		o.RouteFields = fields.Everything()
	}
	// Restricted endpoint addresses (loopback, link-local, cloud
	// metadata, ...) and cluster IPs (loopback aside: the API server
	// allocates them from the administrator's service range) never reach
	// the store.
	o.Sink = endpointfilter.Sink(o.Sink, endpointfilter.Options{AllowLoopbackClusterIP: true}, o.Logger)
	return &Source{o: o, selected: map[string]bool{}, gatewayCaches: map[string]cache.Indexer{}}
}

// CheckReachable fails clearly when the API server or the Route API cannot
// be reached.
func CheckReachable(ctx context.Context, kube kubernetes.Interface, routes routeclient.Interface, namespace string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		if _, err := kube.Discovery().ServerVersion(); err != nil {
			done <- fmt.Errorf("kubernetes API server unreachable: %w", err)
			return
		}
		if _, err := routes.RouteV1().Routes(namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			done <- fmt.Errorf("cannot list routes (is the route.openshift.io/v1 API or CRD installed, and may this router read it?): %w", err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kubernetes API server unreachable: no answer within %s", timeout)
	}
}

// Run starts the informers, marks the sink synced once every informer has
// listed, and runs until ctx is done.
func (s *Source) Run(ctx context.Context) error {
	o := s.o
	routeFactory := routeinformers.NewSharedInformerFactoryWithOptions(o.Routes, o.Resync,
		routeinformers.WithNamespace(o.Namespace),
		routeinformers.WithTransform(s.shareUnchangedInputs),
		routeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = o.RouteLabels.String()
			lo.FieldSelector = o.RouteFields.String()
		}))
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync, informers.WithNamespace(o.Namespace),
		informers.WithTransform(StripManagedFields))

	routeInformer := routeFactory.Route().V1().Routes().Informer()
	s.mu.Lock()
	s.routes = routeInformer.GetIndexer()
	s.mu.Unlock()
	synced := []cache.InformerSynced{}
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("adding event handler: %w", err)
		}
		// The registration's HasSynced also waits until this handler has
		// received the initial list (the informer's alone does not).
		synced = append(synced, reg.HasSynced)
		return nil
	}
	if err := add(routeInformer, s.routeHandler()); err != nil {
		return err
	}
	if err := add(kubeFactory.Core().V1().Services().Informer(), s.passThrough()); err != nil {
		return err
	}
	if o.WatchEndpoints {
		if err := add(kubeFactory.Core().V1().Endpoints().Informer(), s.passThrough()); err != nil {
			return err
		}
	} else {
		if err := add(kubeFactory.Discovery().V1().EndpointSlices().Informer(), s.passThrough()); err != nil {
			return err
		}
	}
	factories := []factory{routeFactory, kubeFactory}
	if o.NamespaceLabels != nil {
		nsFactory := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync,
			informers.WithTransform(StripManagedFields),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.NamespaceLabels.String() }))
		if err := add(nsFactory.Core().V1().Namespaces().Informer(), s.namespaceHandler()); err != nil {
			return err
		}
		factories = append(factories, nsFactory)
	}
	var late lateFactories
	gatewayFactories, err := s.startGatewayAPI(ctx, add, &late)
	if err != nil {
		return err
	}
	factories = append(factories, gatewayFactories...)
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	o.Logger.Info("waiting for the initial list of routes, services and endpoints")
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informer caches did not sync")
	}
	o.Sink.MarkSynced(SourceName)
	o.Logger.Info("initial sync done")
	<-ctx.Done()
	for _, f := range append(factories, late.close()...) {
		f.Shutdown()
	}
	return nil
}

// StripManagedFields is the informers' transform: it drops
// metadata.managedFields (server-side apply bookkeeping, often the largest
// part of an object) before the object enters the informer's cache and the
// store, since the router never reads them. Objects are otherwise kept as
// listed. A route status the router writes from such an object leaves the
// API server's managedFields as they are (an update without managedFields
// keeps them).
func StripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// shareUnchangedInputs is the route informer's transform: StripManagedFields,
// and for a new version of a cached route that differs in nothing the
// router reads (routeInputsEqual: a status write, typically every
// router's own), the new version's spec, labels and annotations are the
// cached version's. Such updates do not reach the store (routeHandler),
// which keeps the version it was given: without sharing, every route
// would be held twice after the status writes, the store's version and
// the informer's, for as long as neither changes (10,000 routes: tens of
// MiB). The cached version is never changed; the new one is not shared
// yet (the transform runs before the informer stores it).
func (s *Source) shareUnchangedInputs(obj any) (any, error) {
	obj, err := StripManagedFields(obj)
	n, ok := obj.(*routev1.Route)
	if err != nil || !ok {
		return obj, err
	}
	s.mu.Lock()
	idx := s.routes
	s.mu.Unlock()
	if idx == nil {
		return obj, nil
	}
	cached, found, err := idx.GetByKey(cache.NewObjectName(n.Namespace, n.Name).String())
	o, _ := cached.(*routev1.Route)
	if err != nil || !found || o == nil || !routeInputsEqual(o, n) {
		return obj, nil
	}
	n.Spec, n.Labels, n.Annotations = o.Spec, o.Labels, o.Annotations
	n.Name, n.Namespace, n.UID = o.Name, o.Namespace, o.UID
	return n, nil
}

// objectOf unwraps delete tombstones.
func objectOf(obj any) runtime.Object {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ro, _ := obj.(runtime.Object)
	return ro
}

// Route returns the informer's copy of a route (nil if it is not in the
// cache, or before Run has started the informers). The status writer reads
// the status it compares from here: the store's copy is not updated for
// status-only changes.
func (s *Source) Route(namespace, name string) *routev1.Route {
	s.mu.Lock()
	idx := s.routes
	s.mu.Unlock()
	r, _ := lookup(idx, namespace, name).(*routev1.Route)
	return r
}

// lookup returns an informer cache's object namespace/name, or nil (nil
// also for a cache not made yet).
func lookup(idx cache.Indexer, namespace, name string) any {
	if idx == nil {
		return nil
	}
	obj, ok, err := idx.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil || !ok {
		return nil
	}
	return obj
}

// resync reports whether an update event is a resync (the same object
// delivered again): it changes nothing and is not forwarded.
func resync(oldObj, newObj any) bool {
	o, ok1 := objectOf(oldObj).(metav1.Object)
	n, ok2 := objectOf(newObj).(metav1.Object)
	return ok1 && ok2 && o.GetResourceVersion() != "" && o.GetResourceVersion() == n.GetResourceVersion()
}

// routeInputsEqual reports whether two versions of a route differ in
// nothing the router's pass reads: spec, labels, annotations and deletion.
// Status and bookkeeping metadata (resourceVersion, managedFields) are
// ignored.
func routeInputsEqual(a, b *routev1.Route) bool {
	return a.Generation == b.Generation && a.UID == b.UID &&
		equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations) &&
		a.DeletionTimestamp.Equal(b.DeletionTimestamp)
}

// passThrough forwards services and endpoints unfiltered, resyncs aside.
func (s *Source) passThrough() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.upsert(objectOf(obj)) },
		UpdateFunc: func(old, obj any) {
			if !resync(old, obj) {
				s.upsert(objectOf(obj))
			}
		},
		DeleteFunc: func(obj any) { s.delete(objectOf(obj)) },
	}
}

func (s *Source) upsert(o runtime.Object) {
	if o != nil {
		s.o.Sink.Upsert(o)
	}
}

func (s *Source) delete(o runtime.Object) {
	if o != nil {
		s.o.Sink.Delete(o)
	}
}

// routeHandler forwards routes of selected namespaces.
func (s *Source) routeHandler() cache.ResourceEventHandler {
	forward := func(obj any) {
		r, ok := objectOf(obj).(*routev1.Route)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.o.NamespaceLabels != nil && !s.selected[r.Namespace] {
			return
		}
		s.o.Sink.Upsert(r)
	}
	statusChanged := func(r *routev1.Route) {
		if s.o.StatusChanged != nil {
			s.o.StatusChanged(r.Namespace, r.Name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			forward(obj)
			if r, ok := objectOf(obj).(*routev1.Route); ok {
				statusChanged(r)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			if resync(oldObj, obj) {
				return
			}
			o, ok1 := objectOf(oldObj).(*routev1.Route)
			n, ok2 := objectOf(obj).(*routev1.Route)
			if ok1 && ok2 && routeInputsEqual(o, n) {
				// Only the status (typically this router's own write)
				// or bookkeeping changed: no pass, a status recheck.
				statusChanged(n)
				return
			}
			forward(obj)
			if ok2 {
				statusChanged(n)
			}
		},
		DeleteFunc: func(obj any) { s.delete(objectOf(obj)) },
	}
}

// namespaceHandler adds a namespace's routes when it becomes selected and
// removes them when it stops being selected (the label-selected watch
// reports that as a delete). Holding mu makes this and routeHandler agree
// on which routes are forwarded.
func (s *Source) namespaceHandler() cache.ResourceEventHandler {
	set := func(obj any, selected bool) {
		ns, ok := objectOf(obj).(*corev1.Namespace)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.selected[ns.Name] == selected {
			return
		}
		s.selected[ns.Name] = selected
		if !selected {
			delete(s.selected, ns.Name)
		}
		items, err := s.routes.ByIndex(cache.NamespaceIndex, ns.Name)
		if err != nil {
			s.o.Logger.Error(err, "listing routes of namespace", "namespace", ns.Name)
			return
		}
		for _, item := range items {
			r, ok := item.(*routev1.Route)
			if !ok {
				continue
			}
			if selected {
				s.o.Sink.Upsert(r)
			} else {
				s.o.Sink.Delete(r)
			}
		}
		s.o.Logger.Info("namespace selection changed", "namespace", ns.Name, "selected", selected, "routes", len(items))
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, true) },
		UpdateFunc: func(_, obj any) { set(obj, true) },
		DeleteFunc: func(obj any) { set(obj, false) },
	}
}
