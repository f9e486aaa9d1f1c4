package gateway

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

// MaxRetryAttempts bounds a rule's retry.attempts.
const MaxRetryAttempts = 10

// retryOf returns what a rule's retry asks of its routes (nil: none), or
// why it cannot be served: HAProxy retries a request on a connection that
// fails or closes without a response, and on the statuses of retry.codes
// (those of syntax.RetryOnStatuses), at most retry.attempts times (HAProxy's retries,
// 3 by default); it cannot wait between attempts, so a backoff other than
// 0s is refused.
func retryOf(r gatewayv1.HTTPRouteRule) (*model.Retry, string) {
	rt := r.Retry
	if rt == nil {
		return nil, ""
	}
	out := &model.Retry{On: "conn-failure empty-response"}
	if rt.Attempts != nil {
		if *rt.Attempts < 0 || *rt.Attempts > MaxRetryAttempts {
			return nil, fmt.Sprintf("retry.attempts %d: from 0 to %d are served", *rt.Attempts, MaxRetryAttempts)
		}
		out.Attempts = rt.Attempts
	}
	if b := rt.Backoff; b != nil {
		d, ok := parseDuration(*b)
		if !ok {
			return nil, fmt.Sprintf("retry.backoff: %q is not a duration such as 1h2m3s4ms", *b)
		}
		if d != 0 {
			return nil, fmt.Sprintf("retry.backoff %s: HAProxy cannot wait between attempts (0s is served)", *b)
		}
	}
	codes := make([]int, 0, len(rt.Codes))
	for _, c := range rt.Codes {
		if !slices.Contains(syntax.RetryOnStatuses, int(c)) {
			return nil, fmt.Sprintf("retry.codes: %d is not served (HAProxy retries on %s)", c, joinInts(syntax.RetryOnStatuses))
		}
		if !slices.Contains(codes, int(c)) {
			codes = append(codes, int(c))
		}
	}
	slices.Sort(codes)
	if len(codes) > 0 {
		out.On += " " + joinInts(codes)
	}
	return out, ""
}

// joinInts writes ns separated by spaces.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}
