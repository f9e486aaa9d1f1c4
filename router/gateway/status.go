package gateway

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/store"
)

// maxUnservedListed bounds the parts of an HTTPRoute a PartiallyInvalid
// message lists.
const maxUnservedListed = 5

// Finish completes the HTTPRoutes' status with admission's results for
// their routes: a parent none of whose routes was admitted is not Accepted
// (with the reason of the first refusal, e.g. HostAlreadyClaimed, or
// UnsupportedValue when nothing could be made of the route), and a route
// with parts not served (refused, or not served by this router yet) gets
// PartiallyInvalid=True listing them. Only the status needs it: a pass
// leaves it to the status writer (after the pass's configuration is
// applied, and not at all without a status writer). A Result is finished
// once: a later call does nothing.
func (res *Result) Finish(results map[admission.Key]admission.Result) {
	if res == nil || res.finished {
		return
	}
	res.finished = true
	// (Each route's status is its own: the order does not matter.)
	var gws gatewayCache
	for k, rs := range res.HTTPRoutes {
		if done := rs.finish(res, results, &gws); done != rs {
			res.HTTPRoutes[k] = done
		}
	}
	for k, rs := range res.TLSRoutes {
		if done := rs.finish(res, results, &gws); done != rs {
			res.TLSRoutes[k] = done
		}
	}
}

// gatewayCache remembers the Gateway last looked up in a Result's
// Gateways: the routes of one Gateway follow one another, and a lookup by
// name hashes it.
type gatewayCache struct {
	key store.Key
	gs  *GatewayStatus
}

func (c *gatewayCache) get(res *Result, k store.Key) *GatewayStatus {
	if c.gs == nil || c.key != k {
		c.key, c.gs = k, res.Gateways[k]
	}
	return c.gs
}

// finish completes one HTTPRoute's status (see Finish) and counts it in
// the attachedRoutes of the listeners of its Accepted parents. The status
// may be a remembered translation's (Memo): one that changes is a copy,
// returned; rs is returned when nothing changes.
func (rs *RouteStatus) finish(res *Result, results map[admission.Key]admission.Result, gws *gatewayCache) *RouteStatus {
	var few [4]int
	var fewRefusals [4]*admission.Result
	t := rs.tally(res, results, few[:0], fewRefusals[:0])
	rs.countAttached(res, gws)
	out := rs
	own := func() {
		if out == rs {
			cp := *rs
			cp.Parents = slices.Clone(rs.Parents)
			out = &cp
		}
	}
	accepted := false
	for i := range rs.Parents {
		switch {
		case rs.Parents[i].Conditions[0].Status != metav1.ConditionTrue:
		case t.admitted[i] > 0:
			accepted = true
		case t.refusal[i] != nil:
			own()
			setAccepted(&out.Parents[i], condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteConditionReason(t.refusal[i].Reason), t.refusal[i].Message, rs.Generation))
		case t.backendOnly:
			// Only backend references are invalid: Accepted, with
			// ResolvedRefs=False saying why.
			accepted = true
		default:
			own()
			setAccepted(&out.Parents[i], condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonUnsupportedValue, listed(t.unserved), rs.Generation))
		}
	}
	if !accepted || len(t.unserved) == 0 {
		return out
	}
	own()
	for i := range out.Parents {
		if out.Parents[i].Conditions[0].Status == metav1.ConditionTrue {
			out.Parents[i].Conditions = append(slices.Clip(out.Parents[i].Conditions),
				condition(gatewayv1.RouteConditionPartiallyInvalid, true, gatewayv1.RouteReasonUnsupportedValue, listed(t.unserved), rs.Generation))
		}
	}
	return out
}

// addResolved adds the ResolvedRefs condition to each parent's conditions
// (its Accepted). The usual pair, both True without a message, is one
// slice per generation for every route of this Result translated with it
// (10,000 HTTPRoutes would hold 10,000 equal pairs): conditions are read
// only, a change is made in a copy (setAccepted, Finish).
func (res *Result) addResolved(rs *RouteStatus, resolved metav1.Condition) {
	for i := range rs.Parents {
		conds := rs.Parents[i].Conditions
		if len(conds) == 1 && conds[0] == condition(gatewayv1.RouteConditionAccepted, true, gatewayv1.RouteReasonAccepted, "", rs.Generation) &&
			resolved == condition(gatewayv1.RouteConditionResolvedRefs, true, gatewayv1.RouteReasonResolvedRefs, "", rs.Generation) {
			shared := res.usual[rs.Generation]
			if shared == nil {
				if res.usual == nil {
					res.usual = map[int64][]metav1.Condition{}
				}
				shared = slices.Clip([]metav1.Condition{conds[0], resolved})
				res.usual[rs.Generation] = shared
			}
			rs.Parents[i].Conditions = shared
			continue
		}
		rs.Parents[i].Conditions = append(conds, resolved)
	}
}

// setAccepted replaces the Accepted condition (the first) of p, whose
// conditions may be shared with a remembered translation (Memo): in a
// copy of them.
func setAccepted(p *gatewayv1.RouteParentStatus, c metav1.Condition) {
	p.Conditions = slices.Clone(p.Conditions)
	p.Conditions[0] = c
}

// tally is what admission made of an HTTPRoute's routes, by parent.
type tally struct {
	// admitted counts, per parent, its routes admitted; refusal is the
	// first refusal of one of its routes.
	admitted []int
	refusal  []*admission.Result
	// unserved lists what is not served: parts not made, routes refused.
	unserved []string
	// backendOnly: parts were not made, for invalid backend references
	// alone.
	backendOnly bool
}

// tally tallies admission's results for rs's routes. admitted and
// refusal are empty slices whose room, when there is enough
// for every parent, the tally uses (the caller's arrays: no allocation for
// a route of a few parents).
func (rs *RouteStatus) tally(res *Result, results map[admission.Key]admission.Result, admitted []int, refusal []*admission.Result) tally {
	n := len(rs.Parents)
	t := tally{admitted: slices.Grow(admitted[:0], n)[:n], refusal: slices.Grow(refusal[:0], n)[:n], backendOnly: len(rs.unserved) > 0 || rs.noValidBackend}
	for _, u := range rs.unserved {
		t.unserved = append(t.unserved, u.msg)
		t.backendOnly = t.backendOnly && u.backend
	}
	for _, rk := range rs.routes {
		o, r := res.Origins[rk], results[rk]
		if o == nil {
			continue // (add puts every key of rs.routes in)
		}
		if res.shadowed(o, r) {
			// An older route on the same Gateways has the same
			// hostname and match: the spec serves the older one and
			// the route stays Accepted.
			r.Admitted = true
		}
		if !r.Admitted {
			t.unserved = append(t.unserved, fmt.Sprintf("hostname %s, rule %d, match %d: %s: %s", r.Host, o.Rule, o.Match, r.Reason, r.Message))
		}
		for _, p := range o.Parents {
			if r.Admitted {
				t.admitted[p]++
			} else if t.refusal[p] == nil {
				refused := r // (only a refusal is kept: allocated)
				t.refusal[p] = &refused
			}
		}
	}
	return t
}

// shadowed reports whether admission refused a route (of origin o) only
// because an older route made from an HTTPRoute on the same Gateways
// (claim group) has the same hostname and match.
func (res *Result) shadowed(o *Origin, r admission.Result) bool {
	if r.Admitted || r.Reason != admission.ReasonHostAlreadyClaimed {
		return false
	}
	h := res.Origins[r.Holder]
	return h != nil && o.ClaimGroup != "" && h.ClaimGroup == o.ClaimGroup
}

// listed joins the first parts of what is not served.
func listed(parts []string) string {
	if len(parts) == 0 {
		return "nothing of the route can be served"
	}
	if len(parts) <= maxUnservedListed {
		return strings.Join(parts, "; ")
	}
	return strings.Join(parts[:maxUnservedListed], "; ") + fmt.Sprintf("; and %d more", len(parts)-maxUnservedListed)
}

// countAttached counts the route once in the attachedRoutes of each
// listener it attaches to, whatever its conditions (the spec: attachment
// depends on allowedRoutes and parentRefs alone).
func (rs *RouteStatus) countAttached(res *Result, gws *gatewayCache) {
	var few [8]listenerRef // (a route attaches to a few listeners)
	counted := few[:0]
	for i := range rs.Parents {
		for _, l := range rs.listeners[i] {
			if !slices.Contains(counted, l) {
				counted = append(counted, l)
				gws.get(res, l.gateway).Listeners[l.index].AttachedRoutes++
			}
		}
	}
}
