// Package status writes the router's admission results into route status:
// one status.ingress[] entry per router (routerName), with the host served,
// the wildcard policy, the router's canonical host name and an Admitted
// condition. Only this router's entry is touched.
//
// Writes happen only when the status seen in the informer cache differs
// from the desired one (ignoring transition times), so resyncs write
// nothing and several replicas of one router converge without a storm: a
// replica that loses the race gets a conflict, rereads the route, finds it
// already right and stops.
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
	"github.com/openshift-router-go/router/router/store"
)

// Options configure the writer.
type Options struct {
	Client routeclient.Interface
	Store  *store.Store
	Logger logr.Logger
	// RouterName is ROUTER_SERVICE_NAME.
	RouterName string
	// CanonicalHostname is ROUTER_CANONICAL_HOSTNAME.
	CanonicalHostname string
	// Now returns the current time (tests may inject it).
	Now func() time.Time
}

// Writer writes route status.
type Writer struct {
	o     Options
	queue workqueue.TypedRateLimitingInterface[admission.Key]

	mu      sync.Mutex
	desired map[admission.Key]admission.Result
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
	}
}

// Update records the latest admission results and queues every route: the
// worker compares each with the status in the informer cache and writes
// only the differences, so a status that someone else changed is put back.
func (w *Writer) Update(results map[admission.Key]admission.Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, res := range results {
		w.desired[k] = res
		w.queue.Add(k)
	}
	for k := range w.desired {
		if _, ok := results[k]; !ok {
			delete(w.desired, k)
		}
	}
}

// Run processes the queue with the given number of workers until ctx is done.
func (w *Writer) Run(ctx context.Context, workers int) {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w.processNext(ctx) {
			}
		}()
	}
	wg.Wait()
}

func (w *Writer) processNext(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil {
		w.o.Logger.Error(err, "writing route status", "route", string(key))
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

func (w *Writer) sync(ctx context.Context, key admission.Key) error {
	w.mu.Lock()
	res, ok := w.desired[key]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	var route *routev1.Route
	ns, name := splitKey(key)
	_ = w.o.Store.Read(func(v store.View) error {
		route = v.Route(ns, name)
		return nil
	})
	if route == nil {
		return nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		updated, changed := w.apply(route, res)
		if !changed {
			return nil
		}
		_, err := w.o.Client.RouteV1().Routes(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil:
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
			return err
		}
	}
	return fmt.Errorf("route %s: status kept conflicting", key)
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
	idx := -1
	for i, ing := range route.Status.Ingress {
		if ing.RouterName == w.o.RouterName {
			idx = i
			break
		}
	}
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
