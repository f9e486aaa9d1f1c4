// Package controller runs the ingress-to-route translation against a
// cluster, as OpenShift's ingress-to-route controller does: it watches
// Ingresses, IngressClasses, Services, Secrets and Routes, and creates,
// updates and deletes the Routes owned by each Ingress (ownerReferences,
// controller: true) so that they are what package ingress translates the
// Ingress to. It never touches a Route it does not own. Ingress
// status.loadBalancer.ingress lists the canonical hostnames of the routers
// that admitted its Routes.
package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	routeinformers "github.com/openshift/client-go/route/informers/externalversions"
	routelisters "github.com/openshift/client-go/route/listers/route/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/openshift-router-go/router/router/ingress"
)

// Options configure a Controller.
type Options struct {
	Kube   kubernetes.Interface
	Routes routeclient.Interface
	Logger logr.Logger
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
	// Workers is the number of Ingresses synced concurrently (default 1).
	Workers int
	// Events records events on Ingresses (OpenShift's reasons
	// IncompleteIngressToRouteRules and FailedIngressToRouteConversion);
	// nil: NewEventRecorder on Kube.
	Events record.EventRecorder
}

// NewEventRecorder returns a recorder writing events through kc as the
// component ingress-to-route-controller, and a function stopping it.
func NewEventRecorder(kc kubernetes.Interface) (record.EventRecorder, func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "ingress-to-route-controller"}), b.Shutdown
}

// Controller keeps the Routes of Ingresses in sync.
type Controller struct {
	o        Options
	log      logr.Logger
	queue    workqueue.TypedRateLimitingInterface[string]
	ings     networkinglisters.IngressLister
	classes  networkinglisters.IngressClassLister
	services corelisters.ServiceLister
	secrets  corelisters.SecretLister
	routes   routelisters.RouteLister
	synced   []cache.InformerSynced
	start    func(stop <-chan struct{})

	// expectMu guards expect: the Routes created for an Ingress that the
	// Route cache has not shown yet (by Ingress key, route name, with the
	// time they expire). While an Ingress has some, it is not synced, so
	// that a stale cache never makes a second Route for one path.
	events     record.EventRecorder
	stopEvents func()

	expectMu sync.Mutex
	expect   map[string]map[string]time.Time
}

// expectationTimeout bounds how long a created Route is waited for.
const expectationTimeout = 10 * time.Second

func (c *Controller) expectCreated(key, route string) {
	c.expectMu.Lock()
	defer c.expectMu.Unlock()
	if c.expect[key] == nil {
		c.expect[key] = map[string]time.Time{}
	}
	c.expect[key][route] = time.Now().Add(expectationTimeout)
}

func (c *Controller) observed(key, route string) {
	c.expectMu.Lock()
	defer c.expectMu.Unlock()
	delete(c.expect[key], route)
	if len(c.expect[key]) == 0 {
		delete(c.expect, key)
	}
}

// expecting tells whether Routes created for key are still awaited.
func (c *Controller) expecting(key string) bool {
	c.expectMu.Lock()
	defer c.expectMu.Unlock()
	now := time.Now()
	for r, until := range c.expect[key] {
		if now.After(until) {
			delete(c.expect[key], r)
		}
	}
	if len(c.expect[key]) == 0 {
		delete(c.expect, key)
		return false
	}
	return true
}

// New returns a controller; Run starts it.
func New(o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	events, stopEvents := o.Events, func() {}
	if events == nil {
		events, stopEvents = NewEventRecorder(o.Kube)
	}
	kf := informers.NewSharedInformerFactory(o.Kube, o.Resync)
	rf := routeinformers.NewSharedInformerFactory(o.Routes, o.Resync)
	c := &Controller{
		o:          o,
		log:        o.Logger,
		expect:     map[string]map[string]time.Time{},
		events:     events,
		stopEvents: stopEvents,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ingress-to-route"}),
	}
	ingInf := kf.Networking().V1().Ingresses()
	classInf := kf.Networking().V1().IngressClasses()
	svcInf := kf.Core().V1().Services()
	secInf := kf.Core().V1().Secrets()
	routeInf := rf.Route().V1().Routes()
	c.ings, c.classes, c.services, c.secrets, c.routes =
		ingInf.Lister(), classInf.Lister(), svcInf.Lister(), secInf.Lister(), routeInf.Lister()
	c.synced = []cache.InformerSynced{ingInf.Informer().HasSynced, classInf.Informer().HasSynced,
		svcInf.Informer().HasSynced, secInf.Informer().HasSynced, routeInf.Informer().HasSynced}

	_, _ = ingInf.Informer().AddEventHandler(handler(func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			c.queue.Add(m.GetNamespace() + "/" + m.GetName())
		}
	}))
	namespaceHandler := handler(func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			c.enqueueNamespace(m.GetNamespace())
		}
	})
	_, _ = svcInf.Informer().AddEventHandler(namespaceHandler)
	_, _ = secInf.Informer().AddEventHandler(namespaceHandler)
	_, _ = classInf.Informer().AddEventHandler(handler(func(any) { c.enqueueNamespace(metav1.NamespaceAll) }))
	_, _ = routeInf.Informer().AddEventHandler(handler(func(obj any) {
		if r, ok := obj.(*routev1.Route); ok {
			if name, owned := OwnerIngress(r); owned {
				c.observed(r.Namespace+"/"+name, r.Name)
				c.queue.Add(r.Namespace + "/" + name)
			}
		}
	}))
	c.start = func(stop <-chan struct{}) {
		kf.Start(stop)
		rf.Start(stop)
	}
	return c
}

// handler calls fn for every add, update and delete (tombstones unwrapped).
func handler(fn func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    fn,
		UpdateFunc: func(_, obj any) { fn(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			fn(obj)
		},
	}
}

// enqueueNamespace queues every Ingress of a namespace (all namespaces for
// metav1.NamespaceAll).
func (c *Controller) enqueueNamespace(ns string) {
	ings, err := c.ings.Ingresses(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, i := range ings {
		c.queue.Add(i.Namespace + "/" + i.Name)
	}
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	defer c.stopEvents()
	c.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("ingress-to-route: caches not synced")
	}
	c.log.Info("Ingress-to-route controller started")
	// Routes whose Ingress is gone (deleted while no controller ran, or
	// on an API server without garbage collector) are deleted too.
	for _, r := range c.ownedRoutes(metav1.NamespaceAll, "") {
		name, _ := OwnerIngress(r)
		c.queue.Add(r.Namespace + "/" + name)
	}
	for range c.o.Workers {
		go func() {
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.log.Error(err, "Cannot sync the Routes of an Ingress, retrying", "ingress", key)
		if ns, name, splitErr := cache.SplitMetaNamespaceKey(key); splitErr == nil {
			c.events.Eventf(&corev1.ObjectReference{Kind: "Ingress", APIVersion: "networking.k8s.io/v1", Namespace: ns, Name: name},
				corev1.EventTypeWarning, "FailedIngressToRouteConversion", "Error in converting Ingress to Route: %v", err)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// ingressAPIVersions are the ownerReference apiVersions OpenShift recognises
// as an Ingress owner.
var ingressAPIVersions = map[string]bool{
	"networking.k8s.io/v1": true, "networking.k8s.io/v1beta1": true, "extensions.k8s.io/v1beta1": true,
}

// OwnerIngress returns the name of the Ingress that controls a Route.
func OwnerIngress(r *routev1.Route) (string, bool) {
	for _, o := range r.OwnerReferences {
		if o.Kind == "Ingress" && ingressAPIVersions[o.APIVersion] && o.Controller != nil && *o.Controller {
			return o.Name, true
		}
	}
	return "", false
}

// ownedRoutes lists the Routes controlled by the named Ingress (any Ingress
// when name is "").
func (c *Controller) ownedRoutes(ns, name string) []*routev1.Route {
	all, err := c.routes.Routes(ns).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*routev1.Route
	for _, r := range all {
		if owner, ok := OwnerIngress(r); ok && (name == "" || owner == name) {
			out = append(out, r)
		}
	}
	return out
}

// objects gives the translation the informers' caches.
type objects struct{ c *Controller }

func (o objects) Service(ns, name string) *corev1.Service {
	s, _ := o.c.services.Services(ns).Get(name)
	return s
}

func (o objects) Secret(ns, name string) *corev1.Secret {
	s, _ := o.c.secrets.Secrets(ns).Get(name)
	return s
}

func (o objects) IngressClass(name string) *networkingv1.IngressClass {
	ic, _ := o.c.classes.Get(name)
	return ic
}

// sync makes the Routes of one Ingress match its translation.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if c.expecting(key) {
		c.queue.AddAfter(key, time.Second)
		return nil
	}
	ing, err := c.ings.Ingresses(ns).Get(name)
	if kerrors.IsNotFound(err) {
		return c.deleteRoutesOf(ctx, key, ns, name)
	}
	if err != nil {
		return err
	}
	res := ingress.Translate(ing, objects{c})
	if !res.Managed {
		return nil // another controller's: its Routes, if any, are left as they are (as OpenShift does)
	}
	kept, errs := c.applyRoutes(ctx, key, ing, res.Routes)
	if len(res.Skipped) > 0 {
		reasons := strings.Join(res.Skipped, "; ")
		c.log.Info("Incomplete ingress to route rules", "ingress", key, "reasons", reasons)
		if len(errs) == 0 {
			c.events.Eventf(ing, corev1.EventTypeNormal, "IncompleteIngressToRouteRules", "Incomplete ingress to route rules detected: %s", reasons)
		}
	}
	if err := c.updateStatus(ctx, ing, kept); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteRoutesOf deletes the Routes of a deleted Ingress (the garbage
// collector would too).
func (c *Controller) deleteRoutesOf(ctx context.Context, key, ns, name string) error {
	var errs []error
	for _, r := range c.ownedRoutes(ns, name) {
		if err := c.routeClient(ns).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !kerrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete route %s/%s: %w", ns, r.Name, err))
		} else {
			c.log.Info("Deleted the Route of a deleted Ingress", "ingress", key, "route", r.Name)
		}
	}
	return errors.Join(errs...)
}

// applyRoutes brings the Routes ing owns to wanted (one per host and
// path): created, updated, and deleted when no longer wanted. It returns
// the Routes that stand for ing (an old one where its update failed).
func (c *Controller) applyRoutes(ctx context.Context, key string, ing *networkingv1.Ingress, wanted []*routev1.Route) ([]*routev1.Route, []error) {
	ns := ing.Namespace
	existing := map[string]*routev1.Route{}
	for _, r := range c.ownedRoutes(ns, ing.Name) {
		existing[r.Spec.Host+"\x00"+r.Spec.Path] = r
	}
	var errs []error
	var kept []*routev1.Route
	for _, want := range wanted {
		k := want.Spec.Host + "\x00" + want.Spec.Path
		old, ok := existing[k]
		delete(existing, k)
		var got *routev1.Route
		var err error
		if ok {
			got, err = c.updateRoute(ctx, key, ing, old, want)
		} else {
			got, err = c.create(ctx, key, want)
		}
		if err != nil {
			errs = append(errs, err)
		}
		if got != nil {
			kept = append(kept, got)
		}
	}
	for _, old := range existing {
		if err := c.routeClient(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil && !kerrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete route %s/%s: %w", ns, old.Name, err))
			continue
		}
		c.log.Info("Deleted a Route the Ingress no longer asks for", "ingress", key, "route", old.Name)
	}
	return kept, errs
}

// updateRoute brings the Route old of ing to want, keeping what preserve
// keeps (and its labels unless ing asks for them to be reconciled). It
// returns old when nothing changes or the update fails.
func (c *Controller) updateRoute(ctx context.Context, key string, ing *networkingv1.Ingress, old, want *routev1.Route) (*routev1.Route, error) {
	updated := want.DeepCopy()
	preserve(updated, old)
	if !reconcileLabels(ing) {
		updated.Labels = old.Labels // labels are copied at creation only, unless asked
	}
	if routeMatches(old, updated) {
		return old, nil
	}
	next := old.DeepCopy()
	next.Spec, next.Annotations, next.Labels, next.OwnerReferences = updated.Spec, updated.Annotations, updated.Labels, updated.OwnerReferences
	got, err := c.routeClient(ing.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return old, fmt.Errorf("update route %s/%s: %w", ing.Namespace, old.Name, err)
	}
	c.log.Info("Updated the Route of an Ingress", "ingress", key, "route", got.Name)
	return got, nil
}

func (c *Controller) routeClient(ns string) interface {
	Create(context.Context, *routev1.Route, metav1.CreateOptions) (*routev1.Route, error)
	Update(context.Context, *routev1.Route, metav1.UpdateOptions) (*routev1.Route, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
} {
	return c.o.Routes.RouteV1().Routes(ns)
}

// create creates a Route under its translated name; when a Route of that
// name exists (not ours: ours would have matched by host and path), it
// tries names with random suffixes, as OpenShift's generateName does.
func (c *Controller) create(ctx context.Context, key string, r *routev1.Route) (*routev1.Route, error) {
	base := strings.TrimSuffix(r.Name, r.Name[len(r.Name)-5:])
	var lastErr error
	for attempt := range 3 {
		if attempt > 0 {
			r.Name = base + utilrand.String(5)
		}
		c.expectCreated(key, r.Name)
		got, err := c.routeClient(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			c.observed(key, r.Name)
		}
		if err == nil {
			c.log.Info("Created the Route of an Ingress", "ingress", r.Namespace+"/"+r.OwnerReferences[0].Name, "route", got.Name, "host", got.Spec.Host, "path", got.Spec.Path)
			return got, nil
		}
		if !kerrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create route %s/%s: %w", r.Namespace, r.Name, err)
		}
		// Ours already (made by a previous leader, not in the cache yet)?
		if cur, getErr := c.o.Routes.RouteV1().Routes(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); getErr == nil {
			if owner, ok := OwnerIngress(cur); ok && owner == r.OwnerReferences[0].Name &&
				cur.Spec.Host == r.Spec.Host && cur.Spec.Path == r.Spec.Path {
				return cur, nil
			}
		}
		lastErr = err
	}
	return nil, fmt.Errorf("create route for %s%s: %w", r.Spec.Host, r.Spec.Path, lastErr)
}

// reconcileLabels tells whether the Ingress asks for its labels to be kept
// on its Routes after their creation (route.openshift.io/reconcile-labels).
func reconcileLabels(ing *networkingv1.Ingress) bool {
	v, err := strconv.ParseBool(strings.TrimSpace(ing.Annotations["route.openshift.io/reconcile-labels"]))
	return err == nil && v
}

// preserve keeps what OpenShift keeps of an existing Route on update: its
// name, weight, CA certificate, insecure policy, and destination CA unless
// the Ingress names one.
func preserve(r, old *routev1.Route) {
	r.Name = old.Name
	r.Spec.To.Weight = old.Spec.To.Weight
	if r.Spec.TLS != nil && old.Spec.TLS != nil {
		r.Spec.TLS.CACertificate = old.Spec.TLS.CACertificate
		r.Spec.TLS.InsecureEdgeTerminationPolicy = old.Spec.TLS.InsecureEdgeTerminationPolicy
		if _, named := r.Annotations[ingress.DestinationCAAnnotation]; r.Spec.TLS.Termination == routev1.TLSTerminationReencrypt && !named {
			r.Spec.TLS.DestinationCACertificate = old.Spec.TLS.DestinationCACertificate
		}
	}
	if r.Spec.WildcardPolicy == "" {
		r.Spec.WildcardPolicy = old.Spec.WildcardPolicy
	}
}

// routeMatches tells whether an existing Route already is what is wanted
// (API defaults of the existing Route aside).
func routeMatches(old, want *routev1.Route) bool {
	spec := want.Spec.DeepCopy()
	if spec.To.Weight == nil {
		spec.To.Weight = old.Spec.To.Weight
	}
	if spec.WildcardPolicy == "" {
		spec.WildcardPolicy = routev1.WildcardPolicyNone
	}
	return reflect.DeepEqual(*spec, old.Spec) &&
		equalMaps(want.Annotations, old.Annotations) && equalMaps(want.Labels, old.Labels) &&
		reflect.DeepEqual(want.OwnerReferences, old.OwnerReferences)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// updateStatus sets status.loadBalancer.ingress to the canonical hostnames
// of the routers that admitted the Ingress's Routes.
func (c *Controller) updateStatus(ctx context.Context, ing *networkingv1.Ingress, routes []*routev1.Route) error {
	set := map[string]bool{}
	for _, r := range routes {
		for _, ri := range r.Status.Ingress {
			for _, cond := range ri.Conditions {
				if cond.Type == routev1.RouteAdmitted && cond.Status == corev1.ConditionTrue && ri.RouterCanonicalHostname != "" {
					set[ri.RouterCanonicalHostname] = true
				}
			}
		}
	}
	hosts := make([]string, 0, len(set))
	for h := range set {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var current []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.Hostname != "" {
			current = append(current, lb.Hostname)
		}
	}
	sort.Strings(current)
	if strings.Join(hosts, ",") == strings.Join(current, ",") {
		return nil
	}
	next := ing.DeepCopy()
	next.Status.LoadBalancer.Ingress = nil
	for _, h := range hosts {
		next.Status.LoadBalancer.Ingress = append(next.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{Hostname: h})
	}
	if _, err := c.o.Kube.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of ingress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	return nil
}
