package gateway

import (
	"fmt"
	"regexp/syntax"
	"strings"

	hasyntax "github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
)

// RegularExpression matches (paths, headers, query parameters) take Go's
// RE2 syntax, matched against the whole value, case-sensitive unless the
// expression says (?i), within the bounds of hasyntax.MatchRegex (the
// dialect the Gateway API leaves to implementations; docs/gateway-api.md).

// regexPathOf returns a RegularExpression path match as a match's path
// (the expression's literal start up to its last "/", without it: the
// route map key it is tested at, so that a longer path prefix or exact
// path of the host comes first) and pattern, or why it is not served.
func regexPathOf(expr string) (path string, exact bool, regex string, why string) {
	pattern, err := hasyntax.MatchRegex(expr)
	if err != nil {
		return "", false, "", fmt.Sprintf("path expression %q: %v", expr, err)
	}
	prefix := literalPrefix(expr)
	if i := strings.IndexFunc(prefix, func(r rune) bool { return !pathKeyChar(r) }); i >= 0 {
		// (A route path takes fewer characters than an expression.)
		prefix = prefix[:i]
	}
	if !strings.HasPrefix(prefix, "/") {
		return "", false, pattern, ""
	}
	return strings.TrimRight(prefix[:strings.LastIndexByte(prefix, '/')+1], "/"), false, pattern, ""
}

// literalPrefix returns the text every value expr matches in full starts
// with ("" where it is not known; expr parses).
func literalPrefix(expr string) string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	var walk func(re *syntax.Regexp) bool // false: stop there
	walk = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpBeginText, syntax.OpEmptyMatch:
			return true
		case syntax.OpLiteral:
			if re.Flags&syntax.FoldCase != 0 {
				return false
			}
			b.WriteString(string(re.Rune))
			return true
		case syntax.OpCapture:
			return walk(re.Sub[0])
		case syntax.OpConcat:
			for _, s := range re.Sub {
				if !walk(s) {
					return false
				}
			}
			return true
		}
		return false
	}
	walk(re)
	return b.String()
}

// pathKeyChar reports whether r may be in the path an expression is
// tested at: letters, digits and "/._~-".
func pathKeyChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._~-", r)
}

// valueMatch returns a header or query parameter match of name: value
// exactly, or with regex, the values the expression value matches in full.
func valueMatch(name, value string, regex bool) (model.HeaderMatch, string) {
	if !regex {
		return model.HeaderMatch{Name: name, Value: value}, ""
	}
	pattern, err := hasyntax.MatchRegex(value)
	if err != nil {
		return model.HeaderMatch{}, fmt.Sprintf("expression %q: %v", value, err)
	}
	return model.HeaderMatch{Name: name, Value: pattern, Regex: true}, ""
}
