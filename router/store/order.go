package store

import (
	"slices"
	"strings"
	"sync"

	routev1 "github.com/openshift/api/route/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// sortedCache caches the values of one of the store's maps in an order
// (View.Routes, View.HTTPRoutes) once asked for: a value added or deleted
// later is put in or taken out in place, up to maxOrderEdits between two
// asks (more, as while the objects are first loaded, and the cache is
// dropped: the next ask sorts once). Upsert and Delete change it under the
// store's mu; an ask, which runs under mu's read lock, builds it under the
// cache's own mu.
type sortedCache[T any] struct {
	cmp   func(a, b *T) int
	mu    sync.Mutex
	items []*T
	known bool
	edits int
}

// maxOrderEdits bounds the values put in or taken out of a cached order
// between two asks (each costs a copy of the order's tail).
const maxOrderEdits = 64

// upsert keeps the cached order up to date with o added or replaced.
func (c *sortedCache[T]) upsert(o *T) {
	if !c.known {
		return
	}
	i, found := slices.BinarySearchFunc(c.items, o, c.cmp)
	switch {
	case found:
		c.items[i] = o
	case c.edits < maxOrderEdits:
		c.items = slices.Insert(c.items, i, o)
		c.edits++
	default:
		c.items, c.known = nil, false
	}
}

// remove keeps the cached order up to date with o deleted.
func (c *sortedCache[T]) remove(o *T) {
	if !c.known {
		return
	}
	i, found := slices.BinarySearchFunc(c.items, o, c.cmp)
	switch {
	case !found:
	case c.edits < maxOrderEdits:
		c.items = slices.Delete(c.items, i, i+1)
		c.edits++
	default:
		c.items, c.known = nil, false
	}
}

// sorted returns the values of m in order (a slice of the caller's own):
// a change since the last ask costs a copy, not a sort.
func (c *sortedCache[T]) sorted(m map[Key]*T) []*T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		c.items = make([]*T, 0, len(m))
		for _, o := range m {
			c.items = append(c.items, o)
		}
		slices.SortFunc(c.items, c.cmp)
		c.known = true
	}
	c.edits = 0
	return slices.Clone(c.items)
}

// compareRoutes orders routes by namespace, then name (View.Routes): -1,
// 0 or +1 as slices.SortFunc takes it.
func compareRoutes(a, b *routev1.Route) int {
	if a.Namespace != b.Namespace {
		return strings.Compare(a.Namespace, b.Namespace)
	}
	return strings.Compare(a.Name, b.Name)
}

// compareHTTPRoutes orders HTTPRoutes by key, "namespace/name" (as
// sortedByKey), without making the keys.
func compareHTTPRoutes(a, b *gatewayv1.HTTPRoute) int {
	return CompareKeys(a.Namespace, a.Name, b.Namespace, b.Name)
}

// CompareKeys compares the keys "ans/an" and "bns/bn" of two namespaced
// objects (-1, 0, +1) without making them (sorting 10,000 objects by their
// keys made two keys a comparison).
func CompareKeys(ans, an, bns, bn string) int {
	if ans == bns {
		return strings.Compare(an, bn)
	}
	n := min(len(ans), len(bns))
	if c := strings.Compare(ans[:n], bns[:n]); c != 0 {
		return c
	}
	// One namespace starts the other (rare): compare the keys.
	return strings.Compare(ans+"/"+an, bns+"/"+bn)
}
