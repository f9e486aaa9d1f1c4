package syntax

import "strings"

// Quote returns s as a single word for haproxy.config. Strings made only
// of [A-Za-z0-9._:/@=+-] are returned unchanged. Anything else is wrapped
// in double quotes (HAProxy's "weak quoting"), with backslash, double
// quote, dollar (which would start an environment variable inside double
// quotes) and hash escaped by a backslash; blanks are kept literally inside
// the quotes. Control characters, including newlines, are removed. The
// empty string becomes "".
func Quote(s string) string {
	clean := StripControl(s)
	if clean != "" && isBareWord(clean) {
		return clean
	}
	var b strings.Builder
	b.Grow(len(clean) + 2)
	b.WriteByte('"')
	for i := 0; i < len(clean); i++ {
		switch c := clean[i]; c {
		case '\\', '"', '$', '#':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// LogFormat returns s as one haproxy.config word that is also inert as a
// log-format string — the argument of http-request/http-response
// set-header, add-header, return lf-string and the like, where HAProxy
// would otherwise evaluate "%[...]" (for instance %[env(NAME)], which would
// reveal the router's environment). It is Quote with every "%" doubled.
func LogFormat(s string) string {
	return Quote(strings.ReplaceAll(StripControl(s), "%", "%%"))
}

// EscapeSingleQuotes returns val for use inside single quotes in
// haproxy.config, as OpenShift's escapeSingleQuotes helper does: every "'"
// becomes the four characters quote, backslash, quote, quote (close,
// escaped quote, reopen); carriage returns and line feeds are removed (and,
// here, every other control character). The caller writes the enclosing
// quotes.
func EscapeSingleQuotes(val string) string {
	return strings.ReplaceAll(StripControl(val), "'", `'\''`)
}

// StripControl removes ASCII control characters (0x00-0x1f, 0x7f), which
// would end a line of haproxy.config or a word of it.
func StripControl(s string) string {
	keep := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			keep = false
			break
		}
	}
	if keep {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c != 0x7f {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isBareWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("._:/@=+-", c) >= 0:
		default:
			return false
		}
	}
	return true
}
