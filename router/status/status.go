// Package status writes the router's admission results into route status:
// one status.ingress[] entry per router (routerName), with the host served,
// the wildcard policy, the router's canonical host name and an Admitted
// condition. Only this router's entry is touched: the write is an update of
// the status subresource (the one verb OpenShift's router role has there)
// of the cached copy with only that entry changed, and its resourceVersion
// makes the API server refuse it if another router wrote meanwhile.
//
// Writes happen only when the status seen in the informer cache differs
// from the desired one (ignoring transition times), so resyncs write
// nothing and several replicas of one router converge without a storm: a
// replica that loses the race gets a conflict, rereads the route, finds it
// already right and stops. A route is looked at only when its admission
// result changed or its cached status did; an idle router does nothing.
package status

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	routev1 "github.com/openshift/api/route/v1"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/statusqueue"
)

// Routes looks a route up in the informer's cache: the copy whose status
// the writer compares with the wanted one. It returns nil when the route is
// not (or not yet) known.
type Routes interface {
	Route(namespace, name string) *routev1.Route
}

// Options configure the writer.
type Options struct {
	Client routeclient.Interface
	// Routes is the informer's cache of routes (router/source/kube).
	Routes Routes
	Logger logr.Logger
	// RouterName is ROUTER_SERVICE_NAME.
	RouterName string
	// CanonicalHostname is ROUTER_CANONICAL_HOSTNAME.
	CanonicalHostname string
	// Now returns the current time (tests may inject it).
	Now func() time.Time
}

// Writer writes route status.
//
// Work is per route and only when something may be wrong: Update queues the
// routes whose admission result changed since the previous call, and
// Recheck (called by the source when a route's status changed in the
// cache, e.g. someone else edited it) queues one route. Nothing is queued
// while nothing changes, and no write looks at any other route.
type Writer struct {
	o     Options
	queue workqueue.TypedRateLimitingInterface[admission.Key]

	mu      sync.Mutex
	desired map[admission.Key]admission.Result
	// written remembers, per route, the result last written and the
	// resourceVersion of the cached copy it was computed from: until the
	// cache moves past that copy, the write is in flight through the watch
	// and the same result is not written again.
	written map[admission.Key]writtenStatus
	// writes counts the status writes sent (successful or not).
	writes int
}

type writtenStatus struct {
	res     admission.Result
	basedOn string
}

// New returns a writer; call Run to start it.
func New(o Options) *Writer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Writer{
		o: o,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[admission.Key](),
			workqueue.TypedRateLimitingQueueConfig[admission.Key]{Name: "route-status"}),
		desired: map[admission.Key]admission.Result{},
		written: map[admission.Key]writtenStatus{},
	}
}

// Update records the latest admission results and queues the routes whose
// result is new or changed. Routes whose status someone else changes are
// queued by Recheck, from the informer's update event. The results of
// notRoutes (routes the Gateway API's objects were translated into: they
// have no Route object, and a Route may later take the name) are not
// written.
func (w *Writer) Update(results map[admission.Key]admission.Result, notRoutes func(admission.Key) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	routes := 0
	for k, res := range results {
		if notRoutes != nil && notRoutes(k) {
			continue
		}
		routes++
		if old, ok := w.desired[k]; ok && old == res {
			continue
		}
		w.desired[k] = res
		w.queue.Add(k)
	}
	if len(w.desired) == routes {
		return
	}
	for k := range w.desired {
		if _, ok := results[k]; !ok || notRoutes != nil && notRoutes(k) {
			delete(w.desired, k)
			delete(w.written, k)
		}
	}
}

// Recheck queues one route: its status in the cache changed (or it was
// added), and the worker compares it with the wanted one again.
func (w *Writer) Recheck(namespace, name string) {
	k := admission.Key(namespace + "/" + name)
	w.mu.Lock()
	_, ok := w.desired[k]
	w.mu.Unlock()
	if ok {
		w.queue.Add(k)
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

func (w *Writer) failed(key admission.Key, err error) {
	w.o.Logger.Error(err, "writing route status", "route", string(key))
}

func (w *Writer) sync(ctx context.Context, key admission.Key) error {
	w.mu.Lock()
	res, ok := w.desired[key]
	prev := w.written[key]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	ns, name := splitKey(key)
	route := w.o.Routes.Route(ns, name)
	if route == nil {
		return nil
	}
	if prev.basedOn != "" && prev.basedOn == route.ResourceVersion && prev.res == res {
		// Written from this very copy: the cache has not seen the write
		// yet, and its update event will queue the route again.
		return nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		updated, changed := w.apply(route, res)
		if !changed {
			return nil
		}
		w.mu.Lock()
		w.writes++
		w.mu.Unlock()
		// An update of the status subresource (the verb OpenShift's router
		// role grants), of a copy that differs from the cached one only in
		// this router's entry; its resourceVersion makes the API server
		// refuse it if the route changed meanwhile (another router wrote
		// its entry), and the route is read again.
		_, err := w.o.Client.RouteV1().Routes(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil:
			w.mu.Lock()
			if _, still := w.desired[key]; still {
				w.written[key] = writtenStatus{res: res, basedOn: route.ResourceVersion}
			}
			w.mu.Unlock()
			w.o.Logger.V(2).Info("route status written", "route", string(key), "admitted", res.Admitted, "reason", res.Reason)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			fresh, gerr := w.o.Client.RouteV1().Routes(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				return nil
			}
			if gerr != nil {
				return fmt.Errorf("rereading route after a conflict: %w", gerr)
			}
			route = fresh
		default:
			return fmt.Errorf("updating route status: %w", err)
		}
	}
	return fmt.Errorf("route %s: status kept conflicting", key)
}

func ingressIndex(ings []routev1.RouteIngress, router string) int {
	for i, ing := range ings {
		if ing.RouterName == router {
			return i
		}
	}
	return -1
}

// apply returns a copy of route with this router's ingress entry set to
// res, and whether that changes anything.
func (w *Writer) apply(route *routev1.Route, res admission.Result) (*routev1.Route, bool) {
	want := routev1.RouteIngress{
		Host:                    res.Host,
		RouterName:              w.o.RouterName,
		WildcardPolicy:          route.Spec.WildcardPolicy,
		RouterCanonicalHostname: w.o.CanonicalHostname,
	}
	if want.WildcardPolicy == "" {
		want.WildcardPolicy = routev1.WildcardPolicyNone
	}
	cond := routev1.RouteIngressCondition{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue}
	if !res.Admitted {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, res.Reason, res.Message
	}
	idx := ingressIndex(route.Status.Ingress, w.o.RouterName)
	now := metav1.NewTime(w.o.Now())
	cond.LastTransitionTime = &now
	if idx >= 0 {
		cur := route.Status.Ingress[idx]
		if old := admittedCondition(cur); old != nil && old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
			if sameIngress(cur, want) && old.Reason == cond.Reason && old.Message == cond.Message && len(cur.Conditions) == 1 {
				return route, false
			}
		}
	}
	want.Conditions = []routev1.RouteIngressCondition{cond}
	out := route.DeepCopy()
	if idx >= 0 {
		out.Status.Ingress[idx] = want
	} else {
		out.Status.Ingress = append(out.Status.Ingress, want)
	}
	return out, true
}

func admittedCondition(ing routev1.RouteIngress) *routev1.RouteIngressCondition {
	for i := range ing.Conditions {
		if ing.Conditions[i].Type == routev1.RouteAdmitted {
			return &ing.Conditions[i]
		}
	}
	return nil
}

func sameIngress(a, b routev1.RouteIngress) bool {
	return a.Host == b.Host && a.RouterName == b.RouterName && a.WildcardPolicy == b.WildcardPolicy &&
		a.RouterCanonicalHostname == b.RouterCanonicalHostname
}

func splitKey(k admission.Key) (string, string) {
	s := string(k)
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return "", s
}
