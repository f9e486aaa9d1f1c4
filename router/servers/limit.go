package servers

import (
	"sort"

	"github.com/openshift-router-go/router/router/model"
)

// MaxEndpointsPerService is the most endpoints of one service that the
// router renders as server lines (this router's limit; OpenShift's router
// has none). HAProxy 2.6 compares every server's cookie with every other
// server's of the same backend while it loads a configuration, so one
// backend of n servers costs time in n²: measured on this project's 2-core
// machine, `haproxy -c` of one backend takes 0.04 s of CPU at 1,000
// servers, 0.64 s at 10,000 and 2.9 s at 19,000, and every check, start and
// reload of the whole router pays it. 1,000 is also what the Kubernetes
// Endpoints API keeps of a service (it truncates beyond that).
const MaxEndpointsPerService = 1000

// Limit returns at most max of eps (sorted by ID, as a service's endpoint
// table is) and how many it left out. The ones kept are those whose IdHash
// is smallest: the choice depends on each endpoint alone, so it is the same
// on every replica and across restarts, and it is stable as endpoints come
// and go — an endpoint that is added or removed changes at most one other
// endpoint's place (the one that enters or leaves at the edge), which the
// runtime API can follow. The result keeps the order of eps; eps is not
// modified.
func Limit(eps []model.Endpoint, max int) ([]model.Endpoint, int) {
	if max < 0 || len(eps) <= max {
		return eps, 0
	}
	idx := make([]int, len(eps))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		ea, eb := &eps[idx[a]], &eps[idx[b]]
		if ea.IdHash != eb.IdHash {
			return ea.IdHash < eb.IdHash
		}
		return ea.ID < eb.ID
	})
	keep := idx[:max]
	sort.Ints(keep)
	out := make([]model.Endpoint, 0, max)
	for _, i := range keep {
		out = append(out, eps[i])
	}
	return out, len(eps) - max
}
