package process

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// recordingSink records each log line's message, level and whether it
// was logged as an error.
type recordingSink struct{ lines *[]string }

func (s recordingSink) Init(logr.RuntimeInfo)          {}
func (s recordingSink) Enabled(int) bool               { return true }
func (s recordingSink) WithValues(...any) logr.LogSink { return s }
func (s recordingSink) WithName(string) logr.LogSink   { return s }
func (s recordingSink) Info(level int, msg string, _ ...any) {
	*s.lines = append(*s.lines, "info"+string(rune('0'+level))+" "+msg)
}
func (s recordingSink) Error(_ error, msg string, _ ...any) {
	*s.lines = append(*s.lines, "error "+msg)
}

// A backend left without a server in service is routine once routes
// change at runtime (a deleted route's backend stays until the next
// reload): it is logged as information, every other alert as an error,
// and all are kept for diagnostics.
func TestHAProxyOutputIsLoggedAtTheLevelItDeserves(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"[ALERT]    (15192) : backend 'be_http:ns:web' has no server available!", "info1 haproxy: a backend has no server in service"},
		{"[ALERT]    (15192) : config : parsing [/x/haproxy.config:12] : unknown keyword 'bogus'", "error haproxy alert"},
		{"[ALERT]    (15192) : backend 'be_http:ns:web' has no server available! (and more)", "error haproxy alert"},
		{"[WARNING]  (15192) : Server be_http:ns:web/pod is DOWN", "info1 haproxy warning"},
		{"[NOTICE]   (15192) : haproxy version is 3.0.11", "info2 haproxy output"},
	} {
		var lines []string
		o := &outputLog{}
		o.drain(strings.NewReader(tc.line+"\n"), logr.New(recordingSink{&lines}))
		if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
			t.Errorf("%q logged as %q, want %q", tc.line, lines, tc.want)
		}
		if got := o.since(0); len(got) != 1 || got[0] != tc.line {
			t.Errorf("%q kept as %q", tc.line, got)
		}
	}
}
