// Package syntax is the one home of the rules for writing values into
// haproxy.config that every other package shares: quoting a string as one
// HAProxy word (Quote, LogFormat, EscapeSingleQuotes, StripControl),
// HAProxy time values (ParseDuration, ClipTimeout and the largest value
// HAProxy accepts, MaxTimeout), lists of IP addresses and CIDRs
// (ParseIPList), PCRE patterns from regular expressions (MatchRegex) and the
// statuses retry-on takes (RetryOnStatuses).
//
// It imports nothing of this project, so the configuration parser
// (router/config), the annotation parser (router/annotations) and the
// template helpers (templates) can all use it; the template helpers keep
// OpenShift's names and call these functions.
package syntax
