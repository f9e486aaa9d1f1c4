// Package gatewaystatus writes the status of the Gateway API objects the
// router serves, as router/gateway wants it: the conditions of its
// GatewayClasses; the addresses, conditions and listeners of its Gateways;
// its entries (status.parents with its controller name) of HTTPRoutes and
// TLSRoutes, other controllers' entries untouched.
//
// It works as the route status writer (router/status) does: an object is
// looked at only when its wanted status changed or its cached status did
// (Recheck, from the informers), the status is compared with the informer's
// copy ignoring transition times, and a write is an update of the status
// subresource whose resourceVersion makes the API server refuse it if the
// object changed meanwhile (then the object is read again).
package gatewaystatus

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/router/gateway"
	"github.com/openshift-router-go/router/router/statusqueue"
	"github.com/openshift-router-go/router/router/store"
)

// Cache is the informers' copies of the objects (router/source/kube).
type Cache interface {
	GatewayClass(name string) *gatewayv1.GatewayClass
	Gateway(namespace, name string) *gatewayv1.Gateway
	HTTPRoute(namespace, name string) *gatewayv1.HTTPRoute
	// HTTPRoutes lists the cached HTTPRoutes (once, at the first Update:
	// entries of this router's Gateways left behind while it was down).
	HTTPRoutes() []*gatewayv1.HTTPRoute
	// TLSRoute and TLSRoutes: the same of TLSRoutes.
	TLSRoute(namespace, name string) *gatewayv1.TLSRoute
	TLSRoutes() []*gatewayv1.TLSRoute
}

// Options configure the writer.
type Options struct {
	Client gatewayclient.Interface
	Cache  Cache
	Logger logr.Logger
	// ControllerName is ROUTER_GATEWAY_CONTROLLER_NAME: the HTTPRoute
	// status entries of that name are the router's.
	ControllerName string
	// Now returns the current time (tests may inject it).
	Now func() time.Time
}

// Resources, as the informers name them (kube.Options.GatewayStatusChanged).
const (
	GatewayClasses = "gatewayclasses"
	Gateways       = "gateways"
	HTTPRoutes     = "httproutes"
	TLSRoutes      = "tlsroutes"
)

// routeResources are the resources of the routes whose entries the writer
// keeps.
var routeResources = []string{HTTPRoutes, TLSRoutes}

// item is an object to look at: its resource and key.
type item struct {
	resource string
	key      store.Key
}

// Writer writes the status.
type Writer struct {
	o     Options
	queue workqueue.TypedRateLimitingInterface[item]

	mu       sync.Mutex
	classes  map[store.Key]gateway.ClassStatus
	gateways map[store.Key]*gateway.GatewayStatus
	// routes are the wanted entries of the routes, by resource
	// (HTTPRoutes, TLSRoutes) and key.
	routes map[string]map[store.Key]*gateway.RouteStatus
	// dropped are routes no longer attached to the router's Gateways
	// (by resource): their entries go.
	dropped map[string]map[store.Key]bool
	// served are the Gateways this router serves: the HTTPRoute entries
	// of its controller name it may change or remove are those naming
	// them (another shard's are left alone).
	served map[store.Key]bool
	// scanned: the cache was searched for entries left behind.
	scanned bool
	writes  int
}

// New returns a writer; call Run to start it.
func New(o Options) *Writer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ControllerName == "" {
		o.ControllerName = gateway.DefaultControllerName
	}
	return &Writer{
		o: o,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "gateway-status"}),
		classes:  map[store.Key]gateway.ClassStatus{},
		gateways: map[store.Key]*gateway.GatewayStatus{},
		routes:   map[string]map[store.Key]*gateway.RouteStatus{HTTPRoutes: {}, TLSRoutes: {}},
		dropped:  map[string]map[store.Key]bool{HTTPRoutes: {}, TLSRoutes: {}},
		served:   map[store.Key]bool{},
	}
}

// Update records a pass's translation and queues the objects whose wanted
// status is new or changed, and the HTTPRoutes that left.
func (w *Writer) Update(res *gateway.Result) {
	if res == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, cs := range res.Classes {
		k := store.KeyOf("", name)
		if old, ok := w.classes[k]; !ok || !reflect.DeepEqual(old, cs) {
			w.classes[k] = cs
			w.queue.Add(item{GatewayClasses, k})
		}
	}
	for k := range w.classes {
		if _, ok := res.Classes[string(k)]; !ok {
			delete(w.classes, k)
		}
	}
	update(w.gateways, res.Gateways, func(k store.Key) { w.queue.Add(item{Gateways, k}) }, nil)
	w.served = make(map[store.Key]bool, len(res.Gateways))
	for k := range res.Gateways {
		w.served[k] = true
	}
	for resource, want := range map[string]map[store.Key]*gateway.RouteStatus{HTTPRoutes: res.HTTPRoutes, TLSRoutes: res.TLSRoutes} {
		dropped := w.dropped[resource]
		update(w.routes[resource], want, func(k store.Key) {
			delete(dropped, k)
			w.queue.Add(item{resource, k})
		}, func(k store.Key) {
			dropped[k] = true
			w.queue.Add(item{resource, k})
		})
	}
	if !w.scanned {
		w.scanned = true
		w.scanLeftBehind()
	}
}

// scanLeftBehind marks dropped the cached routes with entries of this
// router's controller name for its Gateways that it no longer wants (w.mu
// held).
func (w *Writer) scanLeftBehind() {
	type cachedRoute struct {
		resource, ns, name string
		parents            []gatewayv1.RouteParentStatus
	}
	var cached []cachedRoute
	for _, hr := range w.o.Cache.HTTPRoutes() {
		cached = append(cached, cachedRoute{HTTPRoutes, hr.Namespace, hr.Name, hr.Status.Parents})
	}
	for _, tr := range w.o.Cache.TLSRoutes() {
		cached = append(cached, cachedRoute{TLSRoutes, tr.Namespace, tr.Name, tr.Status.Parents})
	}
	for _, r := range cached {
		k := store.KeyOf(r.ns, r.name)
		if _, wanted := w.routes[r.resource][k]; wanted {
			continue
		}
		for _, p := range r.parents {
			if string(p.ControllerName) == w.o.ControllerName && w.served[parentKey(r.ns, p.ParentRef)] {
				w.dropped[r.resource][k] = true
				w.queue.Add(item{r.resource, k})
				break
			}
		}
	}
}

// update makes have want, calling changed for each key added or changed
// and gone (if set) for each key removed. (reflect.DeepEqual: the values
// hold unexported fields, which equality.Semantic refuses.)
func update[T any](have, want map[store.Key]*T, changed, gone func(store.Key)) {
	for k, s := range want {
		if old, ok := have[k]; !ok || !reflect.DeepEqual(old, s) {
			have[k] = s
			changed(k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			delete(have, k)
			if gone != nil {
				gone(k)
			}
		}
	}
}

// Recheck queues an object whose status changed in the cache.
func (w *Writer) Recheck(resource, namespace, name string) {
	k := store.KeyOf(namespace, name)
	w.mu.Lock()
	defer w.mu.Unlock()
	var ok bool
	switch resource {
	case GatewayClasses:
		_, ok = w.classes[k]
	case Gateways:
		_, ok = w.gateways[k]
	case HTTPRoutes, TLSRoutes:
		_, ok = w.routes[resource][k]
		ok = ok || w.dropped[resource][k]
	}
	if ok {
		w.queue.Add(item{resource, k})
	}
}

// Writes returns how many status writes the writer has sent.
func (w *Writer) Writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// Run processes the queue with the given number of workers until ctx is done.
func (w *Writer) Run(ctx context.Context, workers int) {
	statusqueue.Run(ctx, w.queue, workers, w.sync, w.failed)
}

func (w *Writer) processNext(ctx context.Context) bool {
	return statusqueue.Next(ctx, w.queue, w.sync, w.failed)
}

func (w *Writer) failed(it item, err error) {
	w.o.Logger.Error(err, "writing Gateway API status", "resource", it.resource, "object", string(it.key))
}

// sync writes one object's status if it differs from the wanted one,
// reading the object again after a conflict (three attempts).
func (w *Writer) sync(ctx context.Context, it item) error {
	ns, name := it.key.Split()
	for attempt := 0; attempt < 3; attempt++ {
		err := w.write(ctx, it, ns, name, attempt > 0)
		if !apierrors.IsConflict(err) {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("%s %s: status kept conflicting", it.resource, it.key)
}

// write compares and writes once: from the cache, or (fresh) from the API.
func (w *Writer) write(ctx context.Context, it item, ns, name string, fresh bool) error {
	now := metav1.NewTime(w.o.Now())
	c := w.o.Client.GatewayV1()
	w.mu.Lock()
	class, gw := w.classes[it.key], w.gateways[it.key]
	w.mu.Unlock()
	switch it.resource {
	case GatewayClasses:
		obj, err := cached(fresh, w.o.Cache.GatewayClass(name), func() (*gatewayv1.GatewayClass, error) {
			return c.GatewayClasses().Get(ctx, name, metav1.GetOptions{})
		})
		if obj == nil || err != nil || class.Conditions == nil {
			return err
		}
		out := obj.DeepCopy()
		changed := setConditions(&out.Status.Conditions, class.Conditions, now)
		if !equality.Semantic.DeepEqual(out.Status.SupportedFeatures, class.SupportedFeatures) &&
			(len(out.Status.SupportedFeatures) > 0 || len(class.SupportedFeatures) > 0) {
			out.Status.SupportedFeatures, changed = class.SupportedFeatures, true
		}
		if !changed {
			return nil
		}
		return w.sent(c.GatewayClasses().UpdateStatus(ctx, out, metav1.UpdateOptions{}))
	case Gateways:
		obj, err := cached(fresh, w.o.Cache.Gateway(ns, name), func() (*gatewayv1.Gateway, error) {
			return c.Gateways(ns).Get(ctx, name, metav1.GetOptions{})
		})
		if obj == nil || err != nil || gw == nil {
			return err
		}
		out := obj.DeepCopy()
		if !gatewayStatus(&out.Status, gw, now) {
			return nil
		}
		return w.sent(c.Gateways(ns).UpdateStatus(ctx, out, metav1.UpdateOptions{}))
	case HTTPRoutes, TLSRoutes:
		return w.writeRoute(ctx, it.resource, ns, name, fresh, now)
	}
	return nil
}

// sent counts a write and returns its error.
func (w *Writer) sent(_ any, err error) error {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	return err
}

// cached returns the cache's copy, or with fresh (after a conflict) the
// API's.
func cached[T any](fresh bool, c *T, get func() (*T, error)) (*T, error) {
	if !fresh {
		return c, nil
	}
	return get()
}

// setConditions makes conds hold exactly the wanted conditions (by type,
// in their order), keeping a condition's transition time while its status
// holds. It reports whether anything changed.
func setConditions(conds *[]metav1.Condition, want []metav1.Condition, now metav1.Time) bool {
	next := make([]metav1.Condition, 0, len(want))
	for _, c := range want {
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(*conds, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		next = append(next, c)
	}
	if equality.Semantic.DeepEqual(*conds, next) {
		return false
	}
	*conds = next
	return true
}

// gatewayStatus makes a Gateway's status the wanted one.
func gatewayStatus(st *gatewayv1.GatewayStatus, want *gateway.GatewayStatus, now metav1.Time) bool {
	changed := setConditions(&st.Conditions, want.Conditions, now)
	if !equality.Semantic.DeepEqual(st.Addresses, want.Addresses) && (len(st.Addresses) > 0 || len(want.Addresses) > 0) {
		st.Addresses = want.Addresses
		changed = true
	}
	listeners := make([]gatewayv1.ListenerStatus, 0, len(want.Listeners))
	for _, l := range want.Listeners {
		ls := *l.ListenerStatus.DeepCopy()
		var conds []metav1.Condition
		for _, old := range st.Listeners {
			if old.Name == ls.Name {
				conds = old.Conditions
			}
		}
		setConditions(&conds, ls.Conditions, now)
		ls.Conditions = conds
		listeners = append(listeners, ls)
	}
	if !equality.Semantic.DeepEqual(st.Listeners, listeners) {
		st.Listeners = listeners
		changed = true
	}
	return changed
}
