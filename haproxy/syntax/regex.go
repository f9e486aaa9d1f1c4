package syntax

import (
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Bounds of the regular expressions MatchRegex takes.
const (
	// MaxRegexLength bounds an expression as written.
	MaxRegexLength = 256
	// MaxRegexRepeat bounds the counts of a repetition ("{n,m}").
	MaxRegexRepeat = 100
	// MaxRegexUnbounded bounds the unbounded repetitions ("*", "+",
	// "{n,}") of an expression.
	MaxRegexUnbounded = 2
	// MaxRegexChoices bounds the parts of an expression whose width
	// varies: repetitions of varying counts ("?", "*", "{1,3}") and
	// alternatives ("a|b"); each multiplies what a backtracking engine
	// may try.
	MaxRegexChoices = 4
	// maxRegexOutput bounds the pattern written.
	maxRegexOutput = 4096
)

// MatchRegex returns the PCRE pattern (HAProxy's "-m reg") that matches
// what the regular expression expr, in Go's RE2 syntax, matches in full —
// a whole path or header value, not a part of it — or why expr is not
// taken. The pattern is written anew from expr's parse tree (nothing of
// expr is copied as it is): literals other than letters and digits as
// "\xHH", classes as byte ranges, groups non-capturing, "$" as "\z"; it
// is then a plain string of printable ASCII characters to quote as one
// haproxy.config word (Quote).
//
// What is taken: ASCII text and classes, flags i and s, at most
// MaxRegexLength characters. HAProxy matches bytes: "." and a class match
// one byte (a character beyond ASCII is two to four), a class's characters
// beyond ASCII stand for every byte beyond it. As the pattern is run by
// HAProxy's backtracking engine for every request, the shapes that make
// such engines take exponential time are refused: a repetition of more
// than once of something that itself repeats or has alternatives
// ("(a+)+", "(a|b)*", "(a?){9}"), more than MaxRegexChoices parts of
// varying width ("a?a?a?a?a?", "(a|aa)(a|aa)…"), of which at most
// MaxRegexUnbounded unbounded; counts of at most MaxRegexRepeat. PCRE2's
// match limit bounds what is left (a few unbounded parts: polynomial).
func MatchRegex(expr string) (string, error) {
	if len(expr) > MaxRegexLength {
		return "", fmt.Errorf("longer than %d characters", MaxRegexLength)
	}
	for i := 0; i < len(expr); i++ {
		if expr[i] < ' ' || expr[i] >= 0x7f {
			return "", fmt.Errorf("only printable ASCII characters are taken")
		}
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("not a regular expression: %w", err)
	}
	w := regexWriter{}
	w.b.WriteString("^(?:")
	if err := w.write(re, false); err != nil {
		return "", err
	}
	w.b.WriteString(`)\z`)
	if w.b.Len() > maxRegexOutput {
		return "", fmt.Errorf("too complex")
	}
	return w.b.String(), nil
}

// regexWriter writes a PCRE pattern from a parse tree.
type regexWriter struct {
	b                  strings.Builder
	unbounded, choices int
}

// choice counts a part of varying width.
func (w *regexWriter) choice() error {
	if w.choices++; w.choices > MaxRegexChoices {
		return fmt.Errorf("more than %d parts of varying width (repetitions, alternatives) are not taken", MaxRegexChoices)
	}
	return nil
}

// write writes re; repeated: re is inside a repetition of more than once
// (where neither repetitions nor alternatives are taken).
func (w *regexWriter) write(re *syntax.Regexp, repeated bool) error {
	switch re.Op {
	case syntax.OpNoMatch:
		w.b.WriteString(noMatch)
	case syntax.OpEmptyMatch:
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			w.b.WriteString("(?i:")
		}
		for _, r := range re.Rune {
			if r >= 0x80 {
				return fmt.Errorf("only ASCII literals are taken")
			}
			writeRegexByte(&w.b, byte(r))
		}
		if re.Flags&syntax.FoldCase != 0 {
			w.b.WriteByte(')')
		}
	case syntax.OpCharClass:
		w.writeClass(re.Rune)
	case syntax.OpAnyCharNotNL:
		w.b.WriteString(`[^\x0a]`)
	case syntax.OpAnyChar:
		w.b.WriteString(`[\x00-\xff]`)
	case syntax.OpBeginText:
		w.b.WriteString(`\A`)
	case syntax.OpEndText:
		w.b.WriteString(`\z`)
	case syntax.OpWordBoundary:
		w.b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		w.b.WriteString(`\B`)
	case syntax.OpBeginLine, syntax.OpEndLine:
		return fmt.Errorf("the multi-line flag (m) is not taken")
	case syntax.OpCapture:
		return w.group(re.Sub, "", repeated)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if err := w.write(s, repeated); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		if repeated {
			return fmt.Errorf("alternatives inside a repetition are not taken")
		}
		if err := w.choice(); err != nil {
			return err
		}
		w.b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 {
				w.b.WriteByte('|')
			}
			if err := w.write(s, false); err != nil {
				return err
			}
		}
		w.b.WriteByte(')')
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		return w.repeat(re, repeated)
	default:
		return fmt.Errorf("%v is not taken", re.Op)
	}
	return nil
}

// repeat writes a repetition of re.Sub[0].
func (w *regexWriter) repeat(re *syntax.Regexp, repeated bool) error {
	var q string
	more := true // repeats more than once
	switch re.Op {
	case syntax.OpStar:
		q = "*"
	case syntax.OpPlus:
		q = "+"
	case syntax.OpQuest:
		q, more = "?", false
	default:
		if re.Min > MaxRegexRepeat || re.Max > MaxRegexRepeat {
			return fmt.Errorf("repetition counts over %d are not taken", MaxRegexRepeat)
		}
		more = re.Max != 0 && re.Max != 1
		switch {
		case re.Max < 0:
			q = "{" + strconv.Itoa(re.Min) + ",}"
		case re.Min == re.Max:
			q = "{" + strconv.Itoa(re.Min) + "}"
		default:
			q = "{" + strconv.Itoa(re.Min) + "," + strconv.Itoa(re.Max) + "}"
		}
	}
	if re.Op == syntax.OpStar || re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Max < 0 {
		if w.unbounded++; w.unbounded > MaxRegexUnbounded {
			return fmt.Errorf("more than %d unbounded repetitions are not taken", MaxRegexUnbounded)
		}
	}
	if re.Op != syntax.OpRepeat || re.Min != re.Max {
		if err := w.choice(); err != nil {
			return err
		}
	}
	if repeated {
		return fmt.Errorf("a repetition inside a repetition is not taken")
	}
	if re.Flags&syntax.NonGreedy != 0 {
		q += "?"
	}
	return w.group(re.Sub, q, repeated || more)
}

// group writes subs as one non-capturing group followed by q.
func (w *regexWriter) group(subs []*syntax.Regexp, q string, repeated bool) error {
	w.b.WriteString("(?:")
	for _, s := range subs {
		if err := w.write(s, repeated); err != nil {
			return err
		}
	}
	w.b.WriteString(")" + q)
	return nil
}

// writeClass writes a character class of rune ranges as byte ranges: the
// runes beyond ASCII as the bytes beyond it (0x80-0xff).
func (w *regexWriter) writeClass(ranges []rune) {
	if len(ranges) == 0 {
		w.b.WriteString(noMatch)
		return
	}
	w.b.WriteByte('[')
	high := false
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi >= 0x80 {
			high = true
			hi = 0x7f
		}
		if lo > hi {
			continue
		}
		writeRegexHex(&w.b, byte(lo))
		if hi != lo {
			w.b.WriteByte('-')
			writeRegexHex(&w.b, byte(hi))
		}
	}
	if high {
		w.b.WriteString(`\x80-\xff`)
	}
	w.b.WriteByte(']')
}

// writeRegexByte writes c to match itself: letters and digits as they are,
// anything else as "\xHH".
func writeRegexByte(b *strings.Builder, c byte) {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		b.WriteByte(c)
		return
	}
	writeRegexHex(b, c)
}

// writeRegexHex writes c as "\xHH".
func writeRegexHex(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&15])
}

// noMatch is a class of no byte: it matches nothing.
const noMatch = `[^\x00-\xff]`
