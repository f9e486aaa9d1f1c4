package dynamic

import (
	"path/filepath"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// ReasonFiles: a file HAProxy reads only when it loads (a map, an
// allowlist, a destination CA, a removed file) changed, or a certificate
// too large for the runtime API.
const ReasonFiles = "files"

// FileChange is what FileCommands found.
type FileChange struct {
	// Commands replace route certificates in place.
	Commands []Command
	// Certificates is how many certificates Commands replace.
	Certificates int
	// Reload is set when a file needs a reload (ReasonFiles); File names it
	// and TooLarge says it is a certificate longer than the runtime API
	// takes.
	Reload   bool
	File     string
	TooLarge bool
}

// FileCommands works out how HAProxy, running the configuration config
// from the working directory wd, takes the changed files (their paths;
// data holds the new contents by cleaned path) without a reload. A route
// certificate (router/certs/*.pem) whose content changed while the
// configuration did not is replaced with "set ssl cert" / "commit ssl
// cert", unless it is longer than the runtime API takes (MaxPayload).
// Destination CAs are not: HAProxy 2.6 accepts "commit ssl ca-file" but
// its server connections keep verifying against the old CA. Any other
// file (maps, allowlists, CAs, removed files) is read at load time only.
// The configuration file itself is the caller's (Diff).
func FileCommands(wd layout.Layout, config []byte, changed []string, data map[string][]byte) FileChange {
	configPath := filepath.Clean(wd.Config())
	certDir := wd.Certs() + string(filepath.Separator)
	var out FileChange
	maxPayload := 0
	for _, p := range changed {
		p = filepath.Clean(p)
		if p == configPath {
			continue
		}
		pem := data[p]
		if pem == nil || !strings.HasPrefix(p, certDir) || !strings.HasSuffix(p, ".pem") {
			return FileChange{Reload: true, File: p}
		}
		if maxPayload == 0 {
			maxPayload = MaxPayload(config)
		}
		if len(pem)+len(p)+len("set ssl cert  <<\n\n") > maxPayload {
			// HAProxy would drop it unanswered: a limit of the runtime
			// API, not a fault of the route.
			return FileChange{Reload: true, File: p, TooLarge: true}
		}
		out.Commands = append(out.Commands, CertificateCommands(p, pem)...)
		out.Certificates++
	}
	return out
}
