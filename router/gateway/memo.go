package gateway

import (
	"cmp"
	"slices"
	"sync"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/store"
)

// Memo remembers, between passes, what each HTTPRoute translated into, so
// that a pass translates again only the HTTPRoutes whose inputs changed —
// and hands on the same route objects for the others (admission's memo then
// knows them too). An HTTPRoute's translation is reused when the HTTPRoute
// object is the same (the store replaces an object that changes), every
// Service, Route and Namespace it looked up is the same object (or still
// missing), and the Gateway-wide inputs are the same objects: the
// GatewayClasses, Gateways, ReferenceGrants, the Gateways' Namespaces and
// the listeners' Secrets. What a pass does not translate is forgotten. It
// is safe for concurrent use; the zero value is not usable: NewMemo.
type Memo struct {
	mu sync.Mutex
	// world are the Gateway-wide inputs the entries were made with.
	world []any
	// last and cur are the entries of the last pass and of this one, by
	// the HTTPRoute object (the store replaces an object that changes).
	last, cur map[*gatewayv1.HTTPRoute]*memoEntry
	// seq counts the translations made afresh; log holds the latest
	// (their seq and HTTPRoute), for RetranslatedSince.
	seq uint64
	log []memoLogEntry
	// routes and httpRoutes are the last pass's numbers of routes made
	// and HTTPRoutes translated (sizes).
	routes, httpRoutes int
}

// memoLogEntry is a translation made afresh.
type memoLogEntry struct {
	seq uint64
	key store.Key
}

// maxMemoLog bounds the log of translations made afresh: a pass that
// follows more of them than it holds is told it cannot know
// (RetranslatedSince).
const maxMemoLog = 4096

type memoEntry struct {
	hr    *gatewayv1.HTTPRoute
	reads []read
	t     *translation
}

// read is one lookup a translation made, and the object it got (a typed
// nil when there was none).
type read struct {
	kind     byte
	ns, name string
	got      any
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{last: map[*gatewayv1.HTTPRoute]*memoEntry{}, cur: map[*gatewayv1.HTTPRoute]*memoEntry{}}
}

// begin starts a pass whose Gateway-wide inputs are world: entries made
// with other ones are dropped.
func (m *Memo) begin(world []any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(m.world, world) {
		m.world, m.last = world, map[*gatewayv1.HTTPRoute]*memoEntry{}
	}
	m.cur = make(map[*gatewayv1.HTTPRoute]*memoEntry, len(m.last))
}

// logFresh records that HTTPRoute k was translated afresh.
func (m *Memo) logFresh(k store.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	if len(m.log) >= maxMemoLog {
		m.log = slices.Delete(m.log, 0, len(m.log)/2)
	}
	m.log = append(m.log, memoLogEntry{m.seq, k})
}

// sizes returns the last pass's numbers of routes made and HTTPRoutes
// translated (0 without a memo).
func (m *Memo) sizes() (routes, httpRoutes int) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.routes, m.httpRoutes
}

// setSizes records a pass's numbers of routes made and HTTPRoutes
// translated.
func (m *Memo) setSizes(routes, httpRoutes int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.routes, m.httpRoutes = routes, httpRoutes
}

// position returns the memo's count of fresh translations.
func (m *Memo) position() uint64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq
}

// since returns the HTTPRoutes translated afresh after position from (up
// to position to), and whether the log still holds them all.
func (m *Memo) since(from, to uint64) ([]store.Key, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.log) > 0 && m.log[0].seq > from+1 && from < to {
		return nil, false
	}
	i, _ := slices.BinarySearchFunc(m.log, from+1, func(e memoLogEntry, s uint64) int {
		return cmp.Compare(e.seq, s)
	})
	var out []store.Key
	for _, e := range m.log[i:] {
		if e.seq > to {
			break
		}
		out = append(out, e.key)
	}
	return out, true
}

// end finishes a pass: what it did not translate is forgotten.
func (m *Memo) end() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last, m.cur = m.cur, map[*gatewayv1.HTTPRoute]*memoEntry{}
}

// translate is translateHTTPRoute(v, hr, res), remembered; the
// translation returned is shared with the memo and must not be changed
// (Finish copies a status it changes).
func (m *Memo) translate(v View, hr *gatewayv1.HTTPRoute, res *Result) *translation {
	if m == nil {
		return translateHTTPRoute(v, hr, res)
	}
	m.mu.Lock()
	e, ok := m.last[hr]
	m.mu.Unlock()
	if !ok || !e.same(v) {
		rec := &recorder{View: v}
		e = &memoEntry{hr: hr, t: translateHTTPRoute(rec, hr, res)}
		e.reads = rec.reads
		m.logFresh(store.KeyOf(hr.Namespace, hr.Name))
	}
	m.mu.Lock()
	m.cur[hr] = e
	m.mu.Unlock()
	return e.t
}

// same reports whether every lookup of the entry gives the same object.
func (e *memoEntry) same(v View) bool {
	for _, r := range e.reads {
		if lookupOf(v, r.kind, r.ns, r.name) != r.got {
			return false
		}
	}
	return true
}

// The lookups a translation makes.
const (
	readService byte = iota
	readRoute
	readNamespace
)

func lookupOf(v View, kind byte, ns, name string) any {
	switch kind {
	case readService:
		return v.Service(ns, name)
	case readRoute:
		return v.Route(ns, name)
	default:
		return v.Namespace(name)
	}
}

// recorder is a View that records the lookups made through it.
type recorder struct {
	View
	reads []read
}

func (r *recorder) Service(ns, name string) *corev1.Service {
	s := r.View.Service(ns, name)
	r.reads = append(r.reads, read{readService, ns, name, s})
	return s
}

func (r *recorder) Route(ns, name string) *routev1.Route {
	rt := r.View.Route(ns, name)
	r.reads = append(r.reads, read{readRoute, ns, name, rt})
	return rt
}

func (r *recorder) Namespace(name string) *corev1.Namespace {
	n := r.View.Namespace(name)
	r.reads = append(r.reads, read{readNamespace, "", name, n})
	return n
}

// worldOf are the Gateway-wide inputs of a translation: the objects every
// HTTPRoute's translation may depend on besides its own lookups.
func worldOf(v View, res *Result) []any {
	var w []any
	for _, c := range v.GatewayClasses() {
		w = append(w, c)
	}
	for _, g := range v.Gateways() {
		w = append(w, g, v.Namespace(g.Namespace))
	}
	for _, g := range v.ReferenceGrants() {
		w = append(w, g)
	}
	for _, k := range res.Secrets {
		ns, name := k.Split()
		w = append(w, v.Secret(ns, name))
	}
	return w
}
