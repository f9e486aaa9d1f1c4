package syntax

import "testing"

func TestQuoteWritesOneWord(t *testing.T) {
	for in, want := range map[string]string{
		"be_http:ns:name": "be_http:ns:name",
		"":                `""`,
		"a b":             `"a b"`,
		`a"$#\`:           `"a\"\$\#\\"`,
		"a\nb":            "ab",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := LogFormat("%[env(X)] a"); got != `"%%[env(X)] a"` {
		t.Errorf("LogFormat: %s", got)
	}
	if got := EscapeSingleQuotes("it's\n"); got != `it'\''s` {
		t.Errorf("EscapeSingleQuotes: %s", got)
	}
}
