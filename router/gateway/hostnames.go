package gateway

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// intersect returns the hostnames an HTTPRoute is served for on a listener
// (the spec's hostname intersection): the route's hostnames that the
// listener's hostname matches, the more specific of the two where a
// wildcard is involved. A listener without a hostname takes every route
// hostname; a route without hostnames takes the listener's. With neither,
// the result is [""]: every host (a catch-all). Nil: no intersection.
func intersect(listener *gatewayv1.Hostname, route []gatewayv1.Hostname) []string {
	l := strings.ToLower(hostnameOf(listener))
	if len(route) == 0 {
		return []string{l}
	}
	var out []string
	for _, h := range route {
		r := strings.ToLower(string(h))
		switch {
		case l == "" || l == r:
			out = append(out, r)
		case wildcardMatches(l, r):
			out = append(out, r)
		case wildcardMatches(r, l):
			out = append(out, l)
		}
	}
	return out
}

// wildcardMatches reports whether pattern, a wildcard hostname
// ("*.example.com"), matches host: a hostname with at least one more label
// in front of the pattern's suffix ("a.example.com", "a.b.example.com",
// "*.b.example.com"), never the suffix itself.
func wildcardMatches(pattern, host string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	return strings.HasSuffix(host, suffix) && len(host) > len(suffix) && host != pattern
}
