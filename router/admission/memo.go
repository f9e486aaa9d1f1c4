package admission

import (
	"sync"

	routev1 "github.com/openshift/api/route/v1"
)

// ValidationMemo remembers, between passes, how route objects validated:
// validating an edge or re-encrypt route parses its certificates and key,
// which at 10,000 routes is most of a pass, and every route change is a
// pass over every route. A route object is validated once: the store
// replaces an object that changes and never changes one in place (as
// client-go's informers require), so another object is another entry.
// What Admit decides does not depend on the memo. It keeps the objects of
// the last pass only (what a pass does not look at is forgotten), and is
// safe for concurrent use. The zero value is not usable: NewValidationMemo.
type ValidationMemo struct {
	mu sync.Mutex
	// last are the entries of the last pass, cur those of the pass
	// running (taken from last as they are used).
	last, cur map[memoKey]validated
}

type memoKey struct {
	route          *routev1.Route
	extended, made bool
}

// NewValidationMemo returns an empty memo.
func NewValidationMemo() *ValidationMemo {
	return &ValidationMemo{last: map[memoKey]validated{}, cur: map[memoKey]validated{}}
}

// validate is validate(r, extended, made), remembered.
func (m *ValidationMemo) validate(r *routev1.Route, extended, made bool) validated {
	if m == nil {
		return validate(r, extended, made)
	}
	k := memoKey{r, extended, made}
	m.mu.Lock()
	v, ok := m.cur[k]
	if !ok {
		if v, ok = m.last[k]; ok {
			m.cur[k] = v
		}
	}
	m.mu.Unlock()
	if ok {
		return v
	}
	v = validate(r, extended, made)
	m.mu.Lock()
	m.cur[k] = v
	m.mu.Unlock()
	return v
}

// endPass forgets the objects the pass that ends did not validate.
func (m *ValidationMemo) endPass() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.last, m.cur = m.cur, make(map[memoKey]validated, len(m.cur))
	m.mu.Unlock()
}
