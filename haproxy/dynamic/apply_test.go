package dynamic

import "testing"

func TestMaxPayloadFollowsTuneBufsize(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   int
	}{
		{"default", "global\n  maxconn 100\n", 16384 - payloadMargin},
		{"global tune.bufsize", "global\n  tune.bufsize 32768\n\ndefaults\n  timeout client 1s\n", 32768 - payloadMargin},
		{"not global", "global\n  maxconn 1\nbackend b\n  tune.bufsize 65536\n", 16384 - payloadMargin},
		{"malformed", "global\n  tune.bufsize lots\n", 16384 - payloadMargin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxPayload([]byte(tt.config)); got != tt.want {
				t.Fatalf("MaxPayload = %d, want %d", got, tt.want)
			}
		})
	}
}
