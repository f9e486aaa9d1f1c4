package extcert

// fairQueue holds the secrets waiting for a check, one FIFO per namespace,
// and hands them out round-robin over the namespaces, at most perNS of a
// namespace at a time: a namespace with hundreds of references waiting,
// or whose checks are slow, delays another namespace's next check by at
// most one check per waiting namespace and never holds every worker. Not
// safe for concurrent use (the Resolver's lock guards it).
type fairQueue struct {
	perNS int
	byNS  map[string][]Ref
	// ring is the namespaces with checks waiting, in turn order; next is
	// the index of the one whose turn it is.
	ring []string
	next int
	// busy counts the checks handed out and not done, by namespace.
	busy map[string]int
}

func newFairQueue(perNS int) *fairQueue {
	return &fairQueue{perNS: perNS, byNS: map[string][]Ref{}, busy: map[string]int{}}
}

// push adds ref at the end of its namespace's queue.
func (q *fairQueue) push(ref Ref) {
	refs, ok := q.byNS[ref.Namespace]
	if !ok {
		// A namespace that joins takes its turn at the end of the round.
		q.ring = append(q.ring, ref.Namespace)
	}
	q.byNS[ref.Namespace] = append(refs, ref)
}

// pop hands out the first waiting secret of the next namespace in turn
// with fewer than perNS checks out; done must be called when its check
// ends.
func (q *fairQueue) pop() (Ref, bool) {
	for tried := 0; tried < len(q.ring); tried++ {
		if q.next >= len(q.ring) {
			q.next = 0
		}
		ns := q.ring[q.next]
		if q.busy[ns] >= q.perNS {
			q.next++
			continue
		}
		refs := q.byNS[ns]
		ref := refs[0]
		if len(refs) == 1 {
			delete(q.byNS, ns)
			q.ring = append(q.ring[:q.next], q.ring[q.next+1:]...)
		} else {
			q.byNS[ns] = refs[1:]
			q.next++
		}
		q.busy[ns]++
		return ref, true
	}
	return Ref{}, false
}

// done ends a check pop handed out.
func (q *fairQueue) done(ref Ref) {
	if q.busy[ref.Namespace]--; q.busy[ref.Namespace] <= 0 {
		delete(q.busy, ref.Namespace)
	}
}
