package syntax

import (
	"errors"
	"net"
	"strings"
)

// Errors returned by ParseIPList for a list it ignores as a whole.
var (
	ErrIPListEmpty  = errors.New("empty list")
	ErrIPListBlanks = errors.New("leading or trailing blanks: the whole list is ignored, as in OpenShift")
)

// ParseIPList parses a list of IPv4/IPv6 addresses and CIDRs separated by
// blanks (the value of the haproxy.router.openshift.io/ip_allowlist and
// ip_whitelist annotations) with OpenShift's semantics (its parseIPList
// template helper):
//
//   - an empty or blank list gives ErrIPListEmpty, and a list with leading
//     or trailing blanks (a trailing newline included) ErrIPListBlanks:
//     the list is ignored as a whole;
//   - otherwise valid lists the entries that are an IP address or a CIDR
//     (as Go's net.ParseIP and net.ParseCIDR accept them: no zones, no
//     leading zeros), as written, and invalid the others, which are
//     dropped. valid may be empty, and then the list restricts nothing.
//
// Every entry of valid is made of hexadecimal digits, '.', ':' and '/',
// so it can be written into haproxy.config as is.
func ParseIPList(list string) (valid, invalid []string, err error) {
	trimmed := strings.TrimSpace(list)
	if trimmed == "" {
		return nil, nil, ErrIPListEmpty
	}
	if trimmed != list {
		return nil, nil, ErrIPListBlanks
	}
	for _, entry := range strings.Fields(list) {
		if IsIPOrCIDR(entry) {
			valid = append(valid, entry)
		} else {
			invalid = append(invalid, entry)
		}
	}
	return valid, invalid, nil
}

// IsIPOrCIDR reports whether entry is an entry ParseIPList keeps: an IPv4
// or IPv6 address or CIDR.
func IsIPOrCIDR(entry string) bool {
	if net.ParseIP(entry) != nil {
		return true
	}
	_, _, err := net.ParseCIDR(entry)
	return err == nil
}

// MaxLineWords is the largest number of words HAProxy reads on one line of
// haproxy.config.
const MaxLineWords = 64

// MaxInlineAllowlist is the largest number of addresses an
// "acl allowlist src ..." line takes (MaxLineWords less the 3 words of
// "acl allowlist src"). Longer allowlists go to a file the ACL reads with
// -f, as OpenShift's validateHAProxyAllowlist decides.
const MaxInlineAllowlist = MaxLineWords - 3
