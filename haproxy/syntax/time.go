package syntax

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"time"
)

// MaxTimeout is the largest time value HAProxy accepts (2^31-1 ms), as it
// is written into haproxy.config when a larger value is clipped.
const MaxTimeout = "2147483647ms"

// MaxTimeoutDuration is MaxTimeout as a time.Duration.
const MaxTimeoutDuration = 2147483647 * time.Millisecond

// Errors returned by ParseDuration.
var (
	ErrTimeSyntax   = errors.New("not an HAProxy time value (a positive whole number without leading zeros and an optional unit us, ms, s, m, h or d; ms if none)")
	ErrTimeOverflow = errors.New("HAProxy time value out of range")
)

// timePattern is the time format OpenShift accepts (its template's
// $timeSpecPattern, anchored): a positive integer without leading zeros and
// an optional unit.
var timePattern = regexp.MustCompile(`^([1-9][0-9]*)(us|ms|s|m|h|d)?$`)

// ParseDuration parses an HAProxy time value as OpenShift does: a positive
// integer without sign or leading zeros, optionally followed by one of the
// units us, ms, s, m, h, d (milliseconds when omitted). It returns
// ErrTimeSyntax for anything else (including "0", blanks and combined units
// such as "1h30m") and ErrTimeOverflow when the value does not fit in a
// time.Duration.
//
// Sub-millisecond values keep their microseconds here. HAProxy itself
// rounds a time value up to the next whole millisecond ("500us" and "1us"
// mean 1ms), so a positive value never becomes 0, which for a timeout
// means "none" (and for a check interval is refused).
func ParseDuration(s string) (time.Duration, error) {
	m := timePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, ErrTimeSyntax
	}
	unit := time.Millisecond
	switch m[2] {
	case "us":
		unit = time.Microsecond
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, ErrTimeOverflow
	}
	return time.Duration(n) * unit, nil
}

// ClipTimeout validates an HAProxy time value (see ParseDuration) for
// haproxy.config, with the rule every path of this router follows (route
// annotations, environment variables and the clipHAProxyTimeoutValue
// template helper, as OpenShift's helper does):
//
//   - a valid value up to MaxTimeout is returned as written — including
//     sub-millisecond values, which HAProxy rounds up to 1ms, never to 0;
//   - a larger one, or one too large for a time.Duration, gives MaxTimeout
//     and clipped true;
//   - anything else gives "" and ErrTimeSyntax.
func ClipTimeout(v string) (out string, clipped bool, err error) {
	d, err := ParseDuration(v)
	switch {
	case errors.Is(err, ErrTimeOverflow):
		return MaxTimeout, true, nil
	case err != nil:
		return "", false, err
	case d > MaxTimeoutDuration:
		return MaxTimeout, true, nil
	}
	return v, false, nil
}
