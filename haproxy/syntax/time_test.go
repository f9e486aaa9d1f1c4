package syntax

import (
	"testing"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"1", "1ms", nil},
		{"1us", "1µs", nil},
		{"500us", "500µs", nil},
		{"1d", "24h0m0s", nil},
		{"106751d", "2562024h0m0s", nil},
		{"9223372036854775us", "2562047h47m16.854775s", nil},
		{"106752d", "", ErrTimeOverflow},
		{"9223372036855ms", "", ErrTimeOverflow},
		{"99999999999999999999", "", ErrTimeOverflow},
		{"0", "", ErrTimeSyntax},
		{"", "", ErrTimeSyntax},
	}
	for _, tt := range tests {
		d, err := ParseDuration(tt.in)
		if err != tt.wantErr {
			t.Errorf("ParseDuration(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && d.String() != tt.want {
			t.Errorf("ParseDuration(%q) = %s, want %s", tt.in, d, tt.want)
		}
	}
}

// TestClipTimeoutKeepsValidValuesClipsLargeOnesAndRejectsTheRest holds the
// cases of the annotation parser's and the template helper's former tests:
// both now follow this one rule.
func TestClipTimeoutKeepsValidValuesClipsLargeOnesAndRejectsTheRest(t *testing.T) {
	tests := []struct {
		in          string
		want        string
		wantClipped bool
		wantErr     bool
	}{
		{"1", "1", false, false},
		{"10s", "10s", false, false},
		{"24d", "24d", false, false},
		{"2147483647", "2147483647", false, false},
		{"2147483647ms", "2147483647ms", false, false},
		{"2147483s", "2147483s", false, false},
		// Sub-millisecond values are written as given, as OpenShift
		// does: HAProxy rounds them up to 1ms (never to 0).
		{"1us", "1us", false, false},
		{"500us", "500us", false, false},
		{"999us", "999us", false, false},
		{"1000us", "1000us", false, false},
		{"2147483647000us", "2147483647000us", false, false},
		{"2147483647001us", MaxTimeout, true, false},
		{"2147483648", MaxTimeout, true, false},
		{"2147484s", MaxTimeout, true, false},
		{"25d", MaxTimeout, true, false},
		{"999999999999999999h", MaxTimeout, true, false},
		{"106752d", MaxTimeout, true, false},
		{"18446744073709551615us", MaxTimeout, true, false},
		{"99999999999999999999", MaxTimeout, true, false},
		{"", "", false, true},
		{"0", "", false, true},
		{"0us", "", false, true},
		{"010s", "", false, true},
		{"-1s", "", false, true},
		{"+1s", "", false, true},
		{"1.5s", "", false, true},
		{"10ns", "", false, true},
		{" 10s", "", false, true},
		{"10 s", "", false, true},
		{"1h30m", "", false, true},
		{"1s\nbackend x", "", false, true},
		{"s", "", false, true},
	}
	for _, tt := range tests {
		got, clipped, err := ClipTimeout(tt.in)
		if got != tt.want || clipped != tt.wantClipped || (err != nil) != tt.wantErr {
			t.Errorf("ClipTimeout(%q) = %q, %v, %v; want %q, %v, error %v", tt.in, got, clipped, err, tt.want, tt.wantClipped, tt.wantErr)
		}
	}
}
