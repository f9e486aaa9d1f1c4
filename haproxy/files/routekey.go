package files

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RouteKey identifies the route a file is written for: "namespace:name".
// It is the router's route key (model.ServiceAliasConfigKey is an alias of
// it), defined here with the rule naming the files written for a route so
// that this package needs nothing of the model.
type RouteKey string

// MaxFileKeyLength is the longest route key ("namespace:name") the router
// uses as is in the name of a file it writes for the route. Kubernetes
// allows 63 + 1 + 253 characters, more than many file systems accept in
// one name (255 bytes); longer keys are shortened by FileName.
const MaxFileKeyLength = 128

// fileKeyPrefix is how much of a shortened key FileName keeps readable.
const fileKeyPrefix = 64

// FileName returns the base name (no directory, no extension) of the files
// the router writes for route k: its certificate, destination CA and
// allowlist. It is the key itself — the name OpenShift's router uses — when
// the key is at most MaxFileKeyLength bytes of the characters a route key
// is made of (lower-case letters, digits, '-', '.', ':'), and otherwise the
// first 64 bytes of the key (other characters replaced by '_') followed by
// '~' and 16 hex digits of the key's SHA-256. Route names cannot contain
// '~', so a shortened name never equals a key used as is; the namespace (at
// most 63 bytes) and its ':' are always part of the prefix, so two
// namespaces never share a prefix. The file's first line names the route
// (FileHeader) whatever its name.
//
// Templates call it as {{ $cfgIdx.FileName }}.
func (k RouteKey) FileName() string {
	s := string(k)
	if len(s) <= MaxFileKeyLength && isFileKey(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	prefix := s
	if len(prefix) > fileKeyPrefix {
		prefix = prefix[:fileKeyPrefix]
	}
	prefix = strings.Map(func(r rune) rune {
		if isFileKeyByte(r) {
			return r
		}
		return '_'
	}, prefix)
	return prefix + "~" + hex.EncodeToString(sum[:8])
}

// FileHeader is the first line of every file the router writes for route
// k: a comment naming the route ("# route namespace/name"), which HAProxy
// skips in allowlist files and OpenSSL skips before a PEM block. Keys of
// characters outside those of a route key are left out.
func (k RouteKey) FileHeader() string {
	s := string(k)
	if !isFileKey(s) {
		return "# route (name not shown: unexpected characters)\n"
	}
	return "# route " + strings.Replace(s, ":", "/", 1) + "\n"
}

func isFileKey(s string) bool {
	for _, r := range s {
		if !isFileKeyByte(r) {
			return false
		}
	}
	return s != ""
}

func isFileKeyByte(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == ':'
}
