// Package store holds the Kubernetes objects the router watches. Sources
// (the manifests directory, the Kubernetes API informers) write into it
// through the Sink interface; the model builder reads a consistent view of it.
package store

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Sink receives the objects a source watches. Objects are Routes, Services,
// Endpoints, EndpointSlices, Namespaces, Secrets and the Gateway API's
// GatewayClasses, Gateways, HTTPRoutes, TLSRoutes and ReferenceGrants (v1;
// pointers to the typed API structs); anything else is ignored.
type Sink interface {
	// Upsert adds or replaces an object.
	Upsert(obj runtime.Object)
	// Delete removes an object (only its kind, namespace and name are used).
	Delete(obj runtime.Object)
	// MarkSynced tells that the named source has delivered its initial state.
	MarkSynced(source string)
}

// BatchSink is a Sink that takes deletions and upserts as one change.
type BatchSink interface {
	Apply(deletes, upserts []runtime.Object)
}

// Key is "namespace/name" (or "name" for cluster-scoped objects).
type Key string

// KeyOf returns the key of namespace/name.
func KeyOf(namespace, name string) Key {
	if namespace == "" {
		return Key(name)
	}
	return Key(namespace + "/" + name)
}

// Split returns the namespace ("" for cluster-scoped objects) and name of k.
func (k Key) Split() (namespace, name string) {
	if ns, name, ok := strings.Cut(string(k), "/"); ok {
		return ns, name
	}
	return "", string(k)
}

// Store is a concurrency-safe, indexed set of watched objects.
type Store struct {
	mu             sync.RWMutex
	routes         map[Key]*routev1.Route
	services       map[Key]*corev1.Service
	endpoints      map[Key]*corev1.Endpoints
	endpointSlices map[Key]*discoveryv1.EndpointSlice
	// slicesByService indexes EndpointSlices by their service
	// (label kubernetes.io/service-name) for O(1) lookup.
	slicesByService map[Key][]Key
	namespaces      map[string]*corev1.Namespace
	secrets         map[Key]*corev1.Secret
	gw              gatewayObjects

	generation uint64
	// lastOther is the generation of the last change that was neither an
	// endpoint, a route nor a service change (secrets, namespaces, syncs,
	// pokes); lastRoute and lastService those of the last route and
	// Service changes.
	lastOther, lastRoute, lastService uint64
	// endpointLog lists the endpoint changes (Endpoints or EndpointSlice
	// added, changed or removed, by the service they belong to), the
	// Service changes and the route changes (by route) after generation
	// endpointLogStart, in order (see EndpointChangesSince and
	// ChangesSince).
	endpointLog      []endpointChange
	endpointLogStart uint64
	synced           map[string]bool
	changed          chan struct{}

	// routeOrder and httpRouteOrder cache View.Routes and
	// View.HTTPRoutes.
	routeOrder     sortedCache[routev1.Route]
	httpRouteOrder sortedCache[gatewayv1.HTTPRoute]
}

// endpointChange is one endpoint change (the generation it made and the
// service whose endpoints changed) or, with route set, one route change.
type endpointChange struct {
	generation uint64
	service    Key
	route      bool
	// httpRoute: with route, an HTTPRoute changed (HTTPRouteChangesSince).
	httpRoute bool
}

// maxEndpointLog bounds the endpoint change log: past it the older half is
// dropped (a reader that far behind runs a full pass).
const maxEndpointLog = 4096

// New returns an empty store.
func New() *Store {
	return &Store{
		routes:          map[Key]*routev1.Route{},
		services:        map[Key]*corev1.Service{},
		endpoints:       map[Key]*corev1.Endpoints{},
		endpointSlices:  map[Key]*discoveryv1.EndpointSlice{},
		slicesByService: map[Key][]Key{},
		namespaces:      map[string]*corev1.Namespace{},
		secrets:         map[Key]*corev1.Secret{},
		gw:              newGatewayObjects(),
		synced:          map[string]bool{},
		changed:         make(chan struct{}, 1),
		routeOrder:      sortedCache[routev1.Route]{cmp: compareRoutes},
		httpRouteOrder:  sortedCache[gatewayv1.HTTPRoute]{cmp: compareHTTPRoutes},
	}
}

// Changed is signalled (coalesced) after every change.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Generation increases with every change.
func (s *Store) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

func (s *Store) notify() {
	s.generation++
	s.lastOther = s.generation
	s.signal()
}

// notifyEndpoints records an endpoint change of the given services.
func (s *Store) notifyEndpoints(services ...Key) {
	s.generation++
	for _, svc := range services {
		s.endpointLog = append(s.endpointLog, endpointChange{generation: s.generation, service: svc})
	}
	s.trimLog()
	s.signal()
}

// notifyRoute records a change of route k.
func (s *Store) notifyRoute(k Key) {
	s.generation++
	s.lastRoute = s.generation
	s.endpointLog = append(s.endpointLog, endpointChange{generation: s.generation, service: k, route: true})
	s.trimLog()
	s.signal()
}

// notifyHTTPRoute records a change of HTTPRoute k: a route change (the
// routes made from it change), not an "other" one.
func (s *Store) notifyHTTPRoute(k Key) {
	s.generation++
	s.lastRoute = s.generation
	s.endpointLog = append(s.endpointLog, endpointChange{generation: s.generation, service: k, route: true, httpRoute: true})
	s.trimLog()
	s.signal()
}

// notifyService records a change of the Service object k.
func (s *Store) notifyService(k Key) {
	s.generation++
	s.lastService = s.generation
	s.endpointLog = append(s.endpointLog, endpointChange{generation: s.generation, service: k})
	s.trimLog()
	s.signal()
}

// trimLog bounds the change log.
func (s *Store) trimLog() {
	if len(s.endpointLog) > maxEndpointLog {
		drop := len(s.endpointLog) / 2
		s.endpointLogStart = s.endpointLog[drop-1].generation
		s.endpointLog = append(s.endpointLog[:0:0], s.endpointLog[drop:]...)
	}
}

func (s *Store) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Poke signals a change without changing anything (to have the pipeline
// run again, e.g. to retry a failed reload).
func (s *Store) Poke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify()
}

// Upsert implements Sink.
func (s *Store) Upsert(obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upsert(obj)
}

// Apply deletes then upserts objects as one change: a pass reads the
// store with all of them applied or none (a manifest file that renames a
// route is never seen with neither name). It implements BatchSink.
func (s *Store) Apply(deletes, upserts []runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range deletes {
		s.delete(obj)
	}
	for _, obj := range upserts {
		s.upsert(obj)
	}
}

// upsert is Upsert with s.mu held.
func (s *Store) upsert(obj runtime.Object) {
	switch o := obj.(type) {
	case *routev1.Route:
		k := KeyOf(o.Namespace, o.Name)
		s.routes[k] = o
		s.routeOrder.upsert(o)
		s.notifyRoute(k)
		return
	case *corev1.Service:
		k := KeyOf(o.Namespace, o.Name)
		s.services[k] = o
		s.notifyService(k)
		return
	case *corev1.Endpoints:
		k := KeyOf(o.Namespace, o.Name)
		s.endpoints[k] = o
		s.notifyEndpoints(k)
		return
	case *discoveryv1.EndpointSlice:
		k := KeyOf(o.Namespace, o.Name)
		svc := KeyOf(o.Namespace, o.Labels[discoveryv1.LabelServiceName])
		changed := []Key{svc}
		if old, ok := s.endpointSlices[k]; ok {
			s.unindexSlice(k, old)
			if was := KeyOf(old.Namespace, old.Labels[discoveryv1.LabelServiceName]); was != svc {
				changed = append(changed, was)
			}
		}
		s.endpointSlices[k] = o
		keys := s.slicesByService[svc]
		if i, found := slices.BinarySearch(keys, k); !found {
			s.slicesByService[svc] = slices.Insert(keys, i, k)
		}
		s.notifyEndpoints(changed...)
		return
	case *corev1.Namespace:
		s.namespaces[o.Name] = o
	case *corev1.Secret:
		s.secrets[KeyOf(o.Namespace, o.Name)] = o
	case *gatewayv1.HTTPRoute:
		k := KeyOf(o.Namespace, o.Name)
		s.gw.httpRoutes[k] = o
		s.httpRouteOrder.upsert(o)
		s.notifyHTTPRoute(k)
		return
	default:
		if !s.gw.put(obj, true) {
			return
		}
	}
	s.notify()
}

func (s *Store) unindexSlice(k Key, o *discoveryv1.EndpointSlice) {
	svc := KeyOf(o.Namespace, o.Labels[discoveryv1.LabelServiceName])
	keys := s.slicesByService[svc]
	if i, found := slices.BinarySearch(keys, k); found {
		if len(keys) == 1 {
			delete(s.slicesByService, svc)
		} else {
			s.slicesByService[svc] = slices.Delete(keys, i, i+1)
		}
	}
}

// Delete implements Sink.
func (s *Store) Delete(obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delete(obj)
}

// delete is Delete with s.mu held.
func (s *Store) delete(obj runtime.Object) {
	switch o := obj.(type) {
	case *routev1.Route:
		k := KeyOf(o.Namespace, o.Name)
		if r, ok := s.routes[k]; ok {
			delete(s.routes, k)
			s.routeOrder.remove(r)
		}
		s.notifyRoute(k)
		return
	case *corev1.Service:
		k := KeyOf(o.Namespace, o.Name)
		delete(s.services, k)
		s.notifyService(k)
		return
	case *corev1.Endpoints:
		k := KeyOf(o.Namespace, o.Name)
		delete(s.endpoints, k)
		s.notifyEndpoints(k)
		return
	case *discoveryv1.EndpointSlice:
		k := KeyOf(o.Namespace, o.Name)
		old, ok := s.endpointSlices[k]
		if !ok {
			// Nothing changed (the pass would see the same objects).
			s.notifyEndpoints()
			return
		}
		s.unindexSlice(k, old)
		delete(s.endpointSlices, k)
		s.notifyEndpoints(KeyOf(old.Namespace, old.Labels[discoveryv1.LabelServiceName]))
		return
	case *corev1.Namespace:
		delete(s.namespaces, o.Name)
	case *corev1.Secret:
		delete(s.secrets, KeyOf(o.Namespace, o.Name))
	case *gatewayv1.HTTPRoute:
		k := KeyOf(o.Namespace, o.Name)
		if hr, ok := s.gw.httpRoutes[k]; ok {
			delete(s.gw.httpRoutes, k)
			s.httpRouteOrder.remove(hr)
		}
		s.notifyHTTPRoute(k)
		return
	default:
		if !s.gw.put(obj, false) {
			return
		}
	}
	s.notify()
}

// MarkSynced implements Sink.
func (s *Store) MarkSynced(source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.synced[source] {
		s.synced[source] = true
		s.notify()
	}
}

// HasSynced reports whether every named source has synced.
func (s *Store) HasSynced(sources ...string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, src := range sources {
		if !s.synced[src] {
			return false
		}
	}
	return true
}

// View is a read-only, consistent view of the store, valid only inside Read.
type View struct{ s *Store }

// Read calls fn with a consistent view of the store. fn must not keep the
// view or modify the objects it returns.
func (s *Store) Read(fn func(v View) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(View{s})
}

// Generation is the store's generation as the view sees it.
func (v View) Generation() uint64 { return v.s.generation }

// EndpointChangesSince returns the services whose endpoints (Endpoints or
// EndpointSlices) changed after generation since, each once, in the order
// of their first change, when endpoint changes are all that changed since
// then; ok is false when anything else changed (or the log no longer
// reaches back that far): the caller then has to look at everything. It
// takes time in the number of changes, not of objects.
func (v View) EndpointChangesSince(since uint64) (services []Key, ok bool) {
	if v.s.lastRoute > since || v.s.lastService > since {
		return nil, false
	}
	_, services, ok = v.ChangesSince(since)
	return services, ok
}

// ChangesSince returns the routes that changed (added, updated or
// deleted) and the services that changed or whose endpoints changed after
// generation since, each once, in the order of their first change, when
// route, Service and endpoint changes are all that changed since then; ok
// is false when
// anything else changed (or the log no longer reaches back that far). It
// takes time in the number of changes, not of objects.
func (v View) ChangesSince(since uint64) (routes, services []Key, ok bool) {
	s := v.s
	if s.lastOther > since || since < s.endpointLogStart || since > s.generation {
		return nil, nil, false
	}
	i := sort.Search(len(s.endpointLog), func(i int) bool { return s.endpointLog[i].generation > since })
	seenRoute, seenService := map[Key]bool{}, map[Key]bool{}
	for _, c := range s.endpointLog[i:] {
		switch {
		case c.httpRoute:
			// HTTPRouteChangesSince.
		case c.route && !seenRoute[c.service]:
			seenRoute[c.service] = true
			routes = append(routes, c.service)
		case !c.route && !seenService[c.service]:
			seenService[c.service] = true
			services = append(services, c.service)
		}
	}
	return routes, services, true
}

// Routes returns all routes sorted by namespace, then name (a slice of
// the caller's own). A route change costs a copy, not a sort.
func (v View) Routes() []*routev1.Route { return v.s.routeOrder.sorted(v.s.routes) }

// Route returns a route or nil.
func (v View) Route(namespace, name string) *routev1.Route {
	return v.s.routes[KeyOf(namespace, name)]
}

// Service returns a service or nil.
func (v View) Service(namespace, name string) *corev1.Service {
	return v.s.services[KeyOf(namespace, name)]
}

// Endpoints returns the Endpoints object of a service or nil.
func (v View) Endpoints(namespace, name string) *corev1.Endpoints {
	return v.s.endpoints[KeyOf(namespace, name)]
}

// EndpointSlices returns the EndpointSlices of a service, sorted by name.
func (v View) EndpointSlices(namespace, service string) []*discoveryv1.EndpointSlice {
	// The keys are namespace/name of one namespace, kept sorted: by name.
	keys := v.s.slicesByService[KeyOf(namespace, service)]
	out := make([]*discoveryv1.EndpointSlice, 0, len(keys))
	for _, k := range keys {
		out = append(out, v.s.endpointSlices[k])
	}
	return out
}

// Namespace returns a namespace or nil.
func (v View) Namespace(name string) *corev1.Namespace { return v.s.namespaces[name] }

// Secret returns a secret or nil.
func (v View) Secret(namespace, name string) *corev1.Secret {
	return v.s.secrets[KeyOf(namespace, name)]
}

// Counts describes how many objects of each kind the store holds.
func (s *Store) Counts() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fmt.Sprintf("routes=%d services=%d endpoints=%d endpointslices=%d namespaces=%d secrets=%d gatewayclasses=%d gateways=%d httproutes=%d tlsroutes=%d referencegrants=%d",
		len(s.routes), len(s.services), len(s.endpoints), len(s.endpointSlices), len(s.namespaces), len(s.secrets),
		len(s.gw.classes), len(s.gw.gateways), len(s.gw.httpRoutes), len(s.gw.tlsRoutes), len(s.gw.grants))
}
