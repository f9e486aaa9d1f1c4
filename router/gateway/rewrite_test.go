package gateway

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestTimeoutsAreTheShorterOfBothAsHAProxyTimes: GEP-2257 durations only;
// the shorter of request and backendRequest, in whole milliseconds rounded
// up; 0s is HAProxy's longest time.
func TestTimeoutsAreTheShorterOfBothAsHAProxyTimes(t *testing.T) {
	d := func(s string) *gatewayv1.Duration { v := gatewayv1.Duration(s); return &v }
	for _, tc := range []struct {
		name     string
		t        *gatewayv1.HTTPRouteTimeouts
		want     string
		rejected bool
	}{
		{"none", nil, "", false},
		{"neither set", &gatewayv1.HTTPRouteTimeouts{}, "", false},
		{"request", &gatewayv1.HTTPRouteTimeouts{Request: d("500ms")}, "500ms", false},
		{"all four units", &gatewayv1.HTTPRouteTimeouts{Request: d("1h2m3s4ms")}, "3723004ms", false},
		{"the shorter", &gatewayv1.HTTPRouteTimeouts{Request: d("10s"), BackendRequest: d("2s")}, "2000ms", false},
		{"0s disables: the other one", &gatewayv1.HTTPRouteTimeouts{Request: d("0s"), BackendRequest: d("3s")}, "3000ms", false},
		{"0s alone: HAProxy's longest", &gatewayv1.HTTPRouteTimeouts{BackendRequest: d("0s")}, "2147483647ms", false},
		{"beyond HAProxy's longest", &gatewayv1.HTTPRouteTimeouts{Request: d("99999h")}, "2147483647ms", false},
		{"a fraction", &gatewayv1.HTTPRouteTimeouts{Request: d("1.5s")}, "", true},
		{"six digits", &gatewayv1.HTTPRouteTimeouts{Request: d("100000ms")}, "", true},
		{"microseconds", &gatewayv1.HTTPRouteTimeouts{Request: d("10us")}, "", true},
		{"five parts", &gatewayv1.HTTPRouteTimeouts{Request: d("1h1m1s1ms1s")}, "", true},
		{"negative", &gatewayv1.HTTPRouteTimeouts{Request: d("-1s")}, "", true},
		{"no unit", &gatewayv1.HTTPRouteTimeouts{Request: d("10")}, "", true},
	} {
		got, why := timeoutOf(tc.t)
		if got != tc.want || (why != "") != tc.rejected {
			t.Errorf("%s: %q, %q; want %q, rejected %v", tc.name, got, why, tc.want, tc.rejected)
		}
	}
}
