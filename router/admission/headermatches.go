package admission

import (
	"fmt"

	routev1 "github.com/openshift/api/route/v1"
)

// MaxHeaderMatchRoutes bounds the routes with header matches (the Gateway
// API's, Options.HeaderMatched) one namespace has admitted. Each is a rule
// in the frontends that requests to its host and path test, unlike other
// routes (map entries): one tenant's thousands would slow every other's
// requests down.
const MaxHeaderMatchRoutes = 64

// MaxHeaderMatchRoutesTotal bounds the routes with header matches of all
// namespaces together (the oldest kept): every request passes the
// frontends' test of each header chain once, so many namespaces of 64 each
// would slow every tenant's requests down too.
const MaxHeaderMatchRoutesTotal = 512

// ReasonHeaderMatchesExceeded refuses a route with header matches beyond
// its namespace's MaxHeaderMatchRoutes (this router's addition).
const ReasonHeaderMatchesExceeded = "HeaderMatchesExceeded"

// limitHeaderMatches refuses the routes with header matches (matched) of a
// namespace beyond MaxHeaderMatchRoutes, and of all beyond
// MaxHeaderMatchRoutesTotal, the oldest kept: candidates are sorted oldest
// first.
func limitHeaderMatches(candidates []*routev1.Route, matched func(Key) bool, results map[Key]Result) []*routev1.Route {
	if matched == nil {
		return candidates
	}
	count := map[string]int{}
	total := 0
	kept := candidates[:0:0]
	for _, r := range candidates {
		if matched(KeyOf(r)) {
			switch {
			case count[r.Namespace] >= MaxHeaderMatchRoutes:
				results[KeyOf(r)] = Result{Host: hostOf(r), Reason: ReasonHeaderMatchesExceeded,
					Message: fmt.Sprintf("the namespace has %d routes with header matches, the most the router serves", MaxHeaderMatchRoutes)}
				continue
			case total >= MaxHeaderMatchRoutesTotal:
				results[KeyOf(r)] = Result{Host: hostOf(r), Reason: ReasonHeaderMatchesExceeded,
					Message: fmt.Sprintf("the router serves %d routes with header matches, older than this one, the most it serves", MaxHeaderMatchRoutesTotal)}
				continue
			}
			count[r.Namespace]++
			total++
		}
		kept = append(kept, r)
	}
	return kept
}
