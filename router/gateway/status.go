package gateway

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/router/admission"
)

// maxUnservedListed bounds the parts of an HTTPRoute a PartiallyInvalid
// message lists.
const maxUnservedListed = 5

// Finish completes the HTTPRoutes' status with admission's results for
// their routes: a parent none of whose routes was admitted is not Accepted
// (with the reason of the first refusal, e.g. HostAlreadyClaimed, or
// UnsupportedValue when nothing could be made of the route), and a route
// with parts not served (refused, or not served by this router yet) gets
// PartiallyInvalid=True listing them.
func (res *Result) Finish(results map[admission.Key]admission.Result) {
	for _, rs := range res.HTTPRoutes {
		admitted := make([]int, len(rs.Parents))
		refusal := make([]*admission.Result, len(rs.Parents))
		unserved := rs.unserved
		for _, rk := range rs.routes {
			o, r := res.Origins[rk], results[rk]
			if !r.Admitted {
				unserved = append(unserved, fmt.Sprintf("hostname %s, rule %d, match %d: %s: %s", r.Host, o.Rule, o.Match, r.Reason, r.Message))
			}
			for _, p := range o.Parents {
				if r.Admitted {
					admitted[p]++
				} else if refusal[p] == nil {
					refusal[p] = &r
				}
			}
		}
		accepted := false
		for i := range rs.Parents {
			c := &rs.Parents[i].Conditions[0]
			switch {
			case c.Status != metav1.ConditionTrue:
			case admitted[i] > 0:
				accepted = true
			case refusal[i] != nil:
				*c = condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteConditionReason(refusal[i].Reason), refusal[i].Message, rs.Generation)
			default:
				*c = condition(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonUnsupportedValue, listed(unserved), rs.Generation)
			}
		}
		if !accepted || len(unserved) == 0 {
			continue
		}
		for i := range rs.Parents {
			if rs.Parents[i].Conditions[0].Status == metav1.ConditionTrue {
				rs.Parents[i].Conditions = append(rs.Parents[i].Conditions,
					condition(gatewayv1.RouteConditionPartiallyInvalid, true, gatewayv1.RouteReasonUnsupportedValue, listed(unserved), rs.Generation))
			}
		}
	}
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
