// Package fairshare is the one allocator of the router's per-namespace
// budgets: it divides a budget between demands max-min fair (Shares), and
// picks what a demand over its share gives up, largest first
// (LargestFirst). The open-files budget (router/pipeline/budget.go) and
// the configuration size budget (router/admission/budget.go) use it.
//
// Both are pure and deterministic: for the same demands in the same order
// they give the same result. Callers pass demands in a canonical order
// (namespaces and routes sorted by name) so that results do not depend on
// the order objects arrived in.
package fairshare

import "sort"

// Shares divides budget between demands, max-min fair: each gets its
// demand if the demands that are smaller or equal leave enough, otherwise
// an equal share of what they leave. The result is in the order of
// demands; equal demands that do not fit get equal shares but for the
// remainder of the division, which goes to the later ones.
func Shares(demands []int, budget int) []int {
	out := make([]int, len(demands))
	idx := make([]int, len(demands))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return demands[idx[a]] < demands[idx[b]] })
	left := budget
	for n, i := range idx {
		share := left / (len(idx) - n)
		if demands[i] < share {
			share = demands[i]
		}
		if share < 0 {
			share = 0
		}
		out[i] = share
		left -= share
	}
	return out
}

// LargestFirst returns the indices of the sizes to give up so that the
// rest add up to at most share: the largest first (of equal sizes, the
// earlier index first), in that order; sizes of 0 are never given up. It
// returns nil when the sizes fit.
func LargestFirst(sizes []int, share int) []int {
	used := 0
	for _, s := range sizes {
		used += s
	}
	if used <= share {
		return nil
	}
	idx := make([]int, len(sizes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return sizes[idx[a]] > sizes[idx[b]] })
	var out []int
	for _, i := range idx {
		if used <= share || sizes[i] <= 0 {
			break
		}
		used -= sizes[i]
		out = append(out, i)
	}
	return out
}
