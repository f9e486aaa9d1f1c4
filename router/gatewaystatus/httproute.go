package gatewaystatus

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/store"
)

// writeRoute makes a route's entries (an HTTPRoute's or a TLSRoute's, by
// resource) the wanted ones. A route that left (dropped) is read from the
// API, not the cache: the cache may not have the router's last write yet,
// and entries it shows none of could still be there.
func (w *Writer) writeRoute(ctx context.Context, resource, ns, name string, fresh bool, now metav1.Time) error {
	k := store.KeyOf(ns, name)
	w.mu.Lock()
	rs, dropped := w.routes[resource][k], w.dropped[resource][k]
	served := w.served
	w.mu.Unlock()
	if rs == nil && !dropped {
		return nil
	}
	obj, err := w.routeObject(ctx, resource, ns, name, fresh || rs == nil)
	if obj == nil || apierrors.IsNotFound(err) {
		w.forget(resource, k)
		return nil
	}
	if err != nil {
		return err
	}
	var want []gatewayv1.RouteParentStatus
	if rs != nil {
		want = rs.Parents
	}
	mine := func(ref gatewayv1.ParentReference) bool { return served[parentKey(ns, ref)] || !inSpec(obj.refs, ref) }
	if !routeParents(obj.parents, want, w.o.ControllerName, mine, now) {
		if rs == nil {
			w.forget(resource, k)
		}
		return nil
	}
	err = obj.update(ctx)
	if err == nil && rs == nil {
		w.forget(resource, k)
	}
	return w.sent(nil, err)
}

// routeObject is a copy of a route to write: its parentRefs, its status
// entries (to change) and how to write its status.
type routeObject struct {
	refs    []gatewayv1.ParentReference
	parents *[]gatewayv1.RouteParentStatus
	update  func(context.Context) error
}

// routeObject reads an HTTPRoute or a TLSRoute (by resource): from the
// cache, or (fresh) from the API; nil when there is none.
func (w *Writer) routeObject(ctx context.Context, resource, ns, name string, fresh bool) (*routeObject, error) {
	opts := metav1.UpdateOptions{}
	switch resource {
	case HTTPRoutes:
		c := w.o.Client.GatewayV1().HTTPRoutes(ns)
		obj, err := cached(fresh, w.o.Cache.HTTPRoute(ns, name), func() (*gatewayv1.HTTPRoute, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		})
		if obj == nil || err != nil {
			return nil, err
		}
		out := obj.DeepCopy()
		return &routeObject{refs: out.Spec.ParentRefs, parents: &out.Status.Parents,
			update: func(ctx context.Context) error { _, err := c.UpdateStatus(ctx, out, opts); return err }}, nil
	case TLSRoutes:
		c := w.o.Client.GatewayV1().TLSRoutes(ns)
		obj, err := cached(fresh, w.o.Cache.TLSRoute(ns, name), func() (*gatewayv1.TLSRoute, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		})
		if obj == nil || err != nil {
			return nil, err
		}
		out := obj.DeepCopy()
		return &routeObject{refs: out.Spec.ParentRefs, parents: &out.Status.Parents,
			update: func(ctx context.Context) error { _, err := c.UpdateStatus(ctx, out, opts); return err }}, nil
	}
	return nil, nil
}

// forget drops a route that left once its entries are gone (unless it
// came back meanwhile).
func (w *Writer) forget(resource string, k store.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, back := w.routes[resource][k]; !back {
		delete(w.dropped[resource], k)
	}
}

// parentKey is the Gateway key a parentRef of a route of namespace ns
// names (the route's namespace by default).
func parentKey(ns string, ref gatewayv1.ParentReference) store.Key {
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return store.KeyOf(ns, string(ref.Name))
}

// inSpec reports whether a route's parentRefs still have ref.
func inSpec(refs []gatewayv1.ParentReference, ref gatewayv1.ParentReference) bool {
	for _, r := range refs {
		if equality.Semantic.DeepEqual(r, ref) {
			return true
		}
	}
	return false
}

// routeParents makes the entries of controller the wanted ones: an entry
// of a wanted parentRef is replaced where it stands (its conditions'
// transition times kept while their status holds), one that is not wanted
// is removed if mine says its parentRef is this router's to manage (a
// Gateway it serves, or a parentRef the route no longer has) and kept
// otherwise (another shard's, of the same controller name), and wanted
// entries not there yet are appended. Other controllers' entries are left
// as they are.
func routeParents(parents *[]gatewayv1.RouteParentStatus, want []gatewayv1.RouteParentStatus, controller string,
	mine func(gatewayv1.ParentReference) bool, now metav1.Time) bool {
	placed := make([]bool, len(want))
	wanted := func(ref gatewayv1.ParentReference) int {
		for i, p := range want {
			if equality.Semantic.DeepEqual(p.ParentRef, ref) {
				return i
			}
		}
		return -1
	}
	merged := func(i int, old []metav1.Condition) gatewayv1.RouteParentStatus {
		p := *want[i].DeepCopy()
		conds := append([]metav1.Condition(nil), old...)
		setConditions(&conds, p.Conditions, now)
		p.Conditions = conds
		placed[i] = true
		return p
	}
	var next []gatewayv1.RouteParentStatus
	for _, p := range *parents {
		switch i := wanted(p.ParentRef); {
		case string(p.ControllerName) != controller:
			next = append(next, p)
		case i >= 0 && !placed[i]:
			next = append(next, merged(i, p.Conditions))
		case i < 0 && !mine(p.ParentRef):
			next = append(next, p)
		}
	}
	for i := range want {
		if !placed[i] {
			next = append(next, merged(i, nil))
		}
	}
	if equality.Semantic.DeepEqual(*parents, next) || len(*parents) == 0 && len(next) == 0 {
		return false
	}
	*parents = next
	return true
}
