package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/openshift-router-go/router/router/store"
)

// GatewayGroup is the Gateway API's group.
const GatewayGroup = "gateway.networking.k8s.io"

// gatewayKind is one Gateway API kind the source may watch.
type gatewayKind struct {
	// resource and version as the API serves them.
	resource, version string
	// required kinds must all be served and listable for any Gateway API
	// object to be watched; the others are watched when they are.
	required bool
	// list lists at most one object (may the router list them?).
	list func(ctx context.Context, c gatewayclient.Interface, namespace string) error
	// informer returns the kind's informer of factory f.
	informer func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer
	// labelled kinds are selected by ROUTE_LABELS (Gateways: sharding
	// applies to them as to Routes).
	labelled bool
	// insteadOf names a kind of another version this one stands in for
	// when that one is not watched ("v1/referencegrants").
	insteadOf string
}

var one = metav1.ListOptions{Limit: 1}

// gatewayKinds are the kinds the source may watch, in order.
func gatewayKinds() []gatewayKind {
	return []gatewayKind{
		{resource: "gatewayclasses", version: "v1", required: true,
			list: func(ctx context.Context, c gatewayclient.Interface, _ string) error {
				_, err := c.GatewayV1().GatewayClasses().List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1().GatewayClasses().Informer()
			}},
		{resource: "gateways", version: "v1", required: true, labelled: true,
			list: func(ctx context.Context, c gatewayclient.Interface, ns string) error {
				_, err := c.GatewayV1().Gateways(ns).List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1().Gateways().Informer()
			}},
		{resource: "httproutes", version: "v1", required: true,
			list: func(ctx context.Context, c gatewayclient.Interface, ns string) error {
				_, err := c.GatewayV1().HTTPRoutes(ns).List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1().HTTPRoutes().Informer()
			}},
		{resource: "tlsroutes", version: "v1",
			list: func(ctx context.Context, c gatewayclient.Interface, ns string) error {
				_, err := c.GatewayV1().TLSRoutes(ns).List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1().TLSRoutes().Informer()
			}},
		{resource: "referencegrants", version: "v1",
			list: func(ctx context.Context, c gatewayclient.Interface, ns string) error {
				_, err := c.GatewayV1().ReferenceGrants(ns).List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1().ReferenceGrants().Informer()
			}},
		// Gateway API releases before v1.5 serve ReferenceGrant as
		// v1beta1 only (the same type).
		{resource: "referencegrants", version: "v1beta1", insteadOf: "v1/referencegrants",
			list: func(ctx context.Context, c gatewayclient.Interface, ns string) error {
				_, err := c.GatewayV1beta1().ReferenceGrants(ns).List(ctx, one)
				return err
			},
			informer: func(f gatewayinformers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Gateway().V1beta1().ReferenceGrants().Informer()
			}},
	}
}

func (k gatewayKind) name() string { return k.version + "/" + k.resource }

// watchedGatewayKinds returns the Gateway API kinds to watch: those the API
// server serves and the router may list. None when a required kind is
// missing (the Gateway API's CRDs are not installed, or the router's
// ClusterRole predates them): the router then serves Routes and Ingresses
// exactly as without the Gateway API, and says why in one log line.
//
// With report false nothing is logged when the API is missing (the
// router's later looks, reprobeGatewayAPI).
func (s *Source) watchedGatewayKinds(ctx context.Context, report bool) []gatewayKind {
	o := s.o
	served := map[string]bool{}
	for _, version := range []string{"v1", "v1beta1"} {
		list, err := o.Kube.Discovery().ServerResourcesForGroupVersion(GatewayGroup + "/" + version)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			served[version+"/"+r.Name] = true
		}
	}
	var kinds []gatewayKind
	watched, standIn := map[string]bool{}, map[string]bool{}
	for _, k := range gatewayKinds() {
		if k.insteadOf != "" && served[k.name()] {
			standIn[k.insteadOf] = true
		}
	}
	var skipped []string
	for _, k := range gatewayKinds() {
		if k.insteadOf != "" && watched[k.insteadOf] {
			continue
		}
		reason := ""
		if !served[k.name()] {
			reason = "not served"
		} else if err := k.list(ctx, o.Gateway, o.Namespace); err != nil {
			reason = "cannot be listed: " + err.Error()
			if apierrors.IsForbidden(err) {
				reason = "the router may not list them"
			}
		}
		if reason == "" {
			kinds = append(kinds, k)
			watched[k.name()] = true
			continue
		}
		if k.required {
			if report {
				o.Logger.Info("Gateway API objects are not watched: "+GatewayGroup+" "+k.name()+" "+reason+
					" (install the Gateway API CRDs and grant the router get/list/watch on them; the router looks again every "+
					s.reprobeInterval().String()+")", "resource", k.name())
			}
			return nil
		}
		if !standIn[k.name()] {
			skipped = append(skipped, k.name()+" ("+reason+")")
		}
	}
	if len(skipped) > 0 {
		o.Logger.Info("some Gateway API kinds are not watched", "kinds", strings.Join(skipped, ", "))
	}
	return kinds
}

// factory is an informer factory to start and shut down.
type factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// gatewayInformers adds the handlers of the Gateway API kinds to watch
// (watchedGatewayKinds), through add, and returns the factories to start
// (none when there are none). Namespaces are watched too, all of them: listeners
// select the namespaces whose routes attach by their labels.
func (s *Source) gatewayInformers(ctx context.Context, kinds []gatewayKind, add func(cache.SharedIndexInformer, cache.ResourceEventHandler) error) ([]factory, error) {
	o := s.o
	if len(kinds) == 0 {
		return nil, nil
	}
	plain := gatewayinformers.NewSharedInformerFactoryWithOptions(o.Gateway, o.Resync,
		gatewayinformers.WithNamespace(o.Namespace), gatewayinformers.WithTransform(StripManagedFields))
	labelled := gatewayinformers.NewSharedInformerFactoryWithOptions(o.Gateway, o.Resync,
		gatewayinformers.WithNamespace(o.Namespace), gatewayinformers.WithTransform(StripManagedFields),
		gatewayinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.RouteLabels.String() }))
	names := []string{}
	for _, k := range kinds {
		f := plain
		if k.labelled {
			f = labelled
		}
		inf := k.informer(f)
		if err := add(inf, s.gatewayHandler(k.resource)); err != nil {
			return nil, fmt.Errorf("gateway API %s: %w", k.name(), err)
		}
		s.mu.Lock()
		s.gatewayCaches[k.resource] = inf.GetIndexer()
		s.mu.Unlock()
		names = append(names, k.name())
	}
	o.Logger.Info("watching Gateway API objects", "kinds", strings.Join(names, ", "))
	if slices.ContainsFunc(kinds, func(k gatewayKind) bool { return k.resource == "tlsroutes" }) {
		o.Sink.MarkSynced(store.TLSRoutesWatched)
	}
	factories := []factory{plain, labelled}
	if _, err := o.Kube.CoreV1().Namespaces().List(ctx, one); err != nil {
		o.Logger.Info("namespaces cannot be listed: listeners that select the namespaces of their routes by label take none", "error", err.Error())
		return factories, nil
	}
	nsFactory := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync, informers.WithTransform(StripManagedFields))
	if err := add(nsFactory.Core().V1().Namespaces().Informer(), s.namespaceLabelsHandler()); err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	return append(factories, nsFactory), nil
}

// startGatewayAPI returns the Gateway API's informer factories (their
// handlers added through add), or, when the API is not served or listable
// yet, none and looks again in the background (reprobeGatewayAPI, its
// factories into late).
func (s *Source) startGatewayAPI(ctx context.Context, add func(cache.SharedIndexInformer, cache.ResourceEventHandler) error, late *lateFactories) ([]factory, error) {
	if s.o.Gateway == nil {
		return nil, nil
	}
	kinds := s.watchedGatewayKinds(ctx, true)
	if len(kinds) == 0 {
		go s.reprobeGatewayAPI(ctx, late)
		return nil, nil
	}
	return s.gatewayInformers(ctx, kinds, add)
}

func (s *Source) reprobeInterval() time.Duration {
	if s.o.GatewayReprobe > 0 {
		return s.o.GatewayReprobe
	}
	return DefaultGatewayReprobe
}

// lateFactories are the informer factories started after the initial
// sync (reprobeGatewayAPI), for Run to shut down.
type lateFactories struct {
	mu        sync.Mutex
	factories []factory
	closed    bool
}

// add keeps fs for close, and reports whether it did: after close it does
// not (the caller shuts them down).
func (l *lateFactories) add(fs []factory) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.factories = append(l.factories, fs...)
	return true
}

// close returns the factories added, and takes no more.
func (l *lateFactories) close() []factory {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.factories
}

// reprobeGatewayAPI looks for the Gateway API again every reprobeInterval
// until the API server serves it and the router may list it (CRDs
// installed or a binding made after the router started), then starts its
// informers: their objects reach the store as additions, as any change
// does. It ends with ctx.
func (s *Source) reprobeGatewayAPI(ctx context.Context, late *lateFactories) {
	t := time.NewTicker(s.reprobeInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kinds := s.watchedGatewayKinds(ctx, false)
		if len(kinds) == 0 {
			continue
		}
		add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
			_, err := inf.AddEventHandler(h)
			return err
		}
		fs, err := s.gatewayInformers(ctx, kinds, add)
		if err != nil {
			s.o.Logger.Error(err, "starting the Gateway API's informers")
			continue
		}
		if !late.add(fs) {
			// Run is shutting down.
			for _, f := range fs {
				f.Shutdown()
			}
			return
		}
		for _, f := range fs {
			f.Start(ctx.Done())
		}
		return
	}
}

// gatewayHandler forwards Gateway API objects of a resource when what the
// router reads of them changes: spec (the generation), labels, annotations,
// deletion. Status changes (the router's own writes, other controllers')
// and resyncs are not forwarded: a status change is told to
// GatewayStatusChanged instead. ReferenceGrants of v1beta1 are forwarded as
// v1 (the same type).
func (s *Source) gatewayHandler(resource string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.upsert(asGatewayV1(objectOf(obj))) },
		UpdateFunc: func(old, obj any) {
			o, ok1 := objectOf(old).(metav1.Object)
			n, ok2 := objectOf(obj).(metav1.Object)
			switch {
			case !ok1 || !ok2 || !gatewayInputsEqual(o, n):
				s.upsert(asGatewayV1(objectOf(obj)))
			case o.GetResourceVersion() != n.GetResourceVersion() && s.o.GatewayStatusChanged != nil:
				s.o.GatewayStatusChanged(resource, n.GetNamespace(), n.GetName())
			}
		},
		DeleteFunc: func(obj any) { s.delete(asGatewayV1(objectOf(obj))) },
	}
}

// gatewayCached returns the informer's copy of a Gateway API object of a
// resource ("gateways", ...), or nil.
func (s *Source) gatewayCached(resource, namespace, name string) any {
	s.mu.Lock()
	idx := s.gatewayCaches[resource]
	s.mu.Unlock()
	return lookup(idx, namespace, name)
}

// GatewayClass returns the informer's copy of a GatewayClass, or nil: the
// status writer compares the status it wants with this one.
func (s *Source) GatewayClass(name string) *gatewayv1.GatewayClass {
	c, _ := s.gatewayCached("gatewayclasses", "", name).(*gatewayv1.GatewayClass)
	return c
}

// Gateway returns the informer's copy of a Gateway, or nil.
func (s *Source) Gateway(namespace, name string) *gatewayv1.Gateway {
	g, _ := s.gatewayCached("gateways", namespace, name).(*gatewayv1.Gateway)
	return g
}

// HTTPRoutes lists the informer's HTTPRoutes.
func (s *Source) HTTPRoutes() []*gatewayv1.HTTPRoute {
	return cachedList[gatewayv1.HTTPRoute](s, "httproutes")
}

// HTTPRoute returns the informer's copy of an HTTPRoute, or nil.
func (s *Source) HTTPRoute(namespace, name string) *gatewayv1.HTTPRoute {
	r, _ := s.gatewayCached("httproutes", namespace, name).(*gatewayv1.HTTPRoute)
	return r
}

// TLSRoutes lists the informer's TLSRoutes.
func (s *Source) TLSRoutes() []*gatewayv1.TLSRoute {
	return cachedList[gatewayv1.TLSRoute](s, "tlsroutes")
}

// TLSRoute returns the informer's copy of a TLSRoute, or nil.
func (s *Source) TLSRoute(namespace, name string) *gatewayv1.TLSRoute {
	r, _ := s.gatewayCached("tlsroutes", namespace, name).(*gatewayv1.TLSRoute)
	return r
}

// cachedList lists the informer's objects of a resource ("httproutes", ...).
func cachedList[T any](s *Source, resource string) []*T {
	s.mu.Lock()
	idx := s.gatewayCaches[resource]
	s.mu.Unlock()
	if idx == nil {
		return nil
	}
	var out []*T
	for _, o := range idx.List() {
		if r, ok := o.(*T); ok {
			out = append(out, r)
		}
	}
	return out
}

// gatewayInputsEqual reports whether two versions of a Gateway API object
// differ in nothing the router reads.
func gatewayInputsEqual(a, b metav1.Object) bool {
	return a.GetGeneration() == b.GetGeneration() && a.GetUID() == b.GetUID() &&
		equality.Semantic.DeepEqual(a.GetLabels(), b.GetLabels()) &&
		equality.Semantic.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) &&
		a.GetDeletionTimestamp().Equal(b.GetDeletionTimestamp())
}

// asGatewayV1 returns a v1beta1 ReferenceGrant as the v1 type; anything
// else as it is.
func asGatewayV1(o runtime.Object) runtime.Object {
	if g, ok := o.(*gatewayv1beta1.ReferenceGrant); ok {
		return (*gatewayv1.ReferenceGrant)(g)
	}
	return o
}

// namespaceLabelsHandler forwards namespaces when they come, go, or their
// labels change (all the router reads of them: listeners select routes'
// namespaces by label); other updates (annotations, finalizers, phase)
// cause no pass.
func (s *Source) namespaceLabelsHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.upsert(objectOf(obj)) },
		UpdateFunc: func(old, obj any) {
			o, ok1 := objectOf(old).(metav1.Object)
			n, ok2 := objectOf(obj).(metav1.Object)
			if !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) {
				s.upsert(objectOf(obj))
			}
		},
		DeleteFunc: func(obj any) { s.delete(objectOf(obj)) },
	}
}
