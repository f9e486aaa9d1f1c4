package dynamic

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// ReasonFiles: a file HAProxy reads only when it loads changed (an
// allowlist, a destination CA, a map or crt-list used in a way whose
// entries cannot change at runtime, one whose contents HAProxy runs are
// unknown), or a certificate too large for the runtime API.
const ReasonFiles = "files"

// Files is what FileCommands works on.
type Files struct {
	// WD is the working directory's layout, Config the configuration
	// HAProxy is brought to.
	WD     layout.Layout
	Config []byte
	// Changed are the paths of the files written or removed.
	Changed []string
	// New holds the changed files' contents by cleaned path (a removed
	// file has none), Old the contents HAProxy runs of those it has
	// (nil: not known; then only certificates are replaced).
	New, Old map[string][]byte
	// Running names the backends as HAProxy runs them once the server
	// commands are applied (a Change's Running; nil: as configured), and
	// keeps what HAProxy runs of the crt-lists where it differs from the
	// files.
	Running *Config
	// Renewed are the destination CA files whose servers the Diff
	// producing Running renewed (Config.RenewServers with ChangedCAFiles):
	// only those may change contents at runtime, any other reloads.
	Renewed []string
	// WasRunning names the backends as HAProxy runs them before the
	// change (nil: as Running): the keys of map entries removed are sent
	// with these names, those HAProxy has them under.
	WasRunning *Config
	// ReadFile reads a file the configuration names (the default
	// certificate a deleted route's crt-list line shows instead); nil:
	// such a deletion reloads.
	ReadFile func(string) ([]byte, error)
	// All returns every file written, by cleaned path: the maps whose
	// entries name a backend that moved (a route whose backend lines
	// changed, see Diff) are sent again from it. Nil: such a move reloads.
	All func() map[string][]byte
}

// FileChange is what FileCommands found.
type FileChange struct {
	// Before go before the server commands: destination CA files added
	// (a server added names its ca-file).
	Before []Command
	// Commands bring the files' contents to HAProxy: certificates
	// replaced or added, map entries and crt-list lines added or set. They
	// go after the server commands (a new backend has its servers before
	// a map entry leads to it). Removals (map entries, crt-list lines and
	// certificates deleted) go last.
	Commands, Removals []Command
	// Certificates is how many certificates Commands replace or add,
	// Entries how many map entries and crt-list lines change.
	Certificates, Entries int
	// Reload is set when a file needs a reload (ReasonFiles); File names it
	// and TooLarge says it is a certificate longer than the runtime API
	// takes.
	Reload   bool
	File     string
	TooLarge bool
	// crt is the running state of the crt-lists once the commands are
	// applied, ca what HAProxy holds of destination CA files removed
	// (Config.KeepFiles).
	crt map[string]crtEntry
	ca  map[string]caHeld
}

// KeepFiles records, once fc's commands are applied, what HAProxy runs of
// the crt-lists (the names of certificates added at runtime, the lines of
// deleted routes it keeps) in c, the configuration HAProxy runs.
func (c *Config) KeepFiles(fc FileChange) {
	if fc.crt != nil {
		c.crt = fc.crt
	}
	if fc.ca != nil {
		c.ca = fc.ca
	}
}

// FileCommands works out how HAProxy takes the changed files without a
// reload:
//   - a map used only for exact or prefix lookups (map, map_str, map_beg,
//     map_str_int: indexed, so the order of its entries does not matter)
//     gets "add map", "set map" and "del map" for the entries that differ,
//     each key and value that names a backend sent with the name HAProxy
//     runs it as (see Diff);
//   - a file of IP patterns read only by "acl NAME src -f" (an allowlist)
//     gets "add acl" and "del acl" for the patterns that differ;
//   - a crt-list gets, for a line added, its certificate ("new ssl cert",
//     "set ssl cert", "commit ssl cert") and "add ssl crt-list"; for a line
//     removed, "del ssl crt-list" and "del ssl cert";
//   - a route certificate (router/certs/*.pem) whose content changed is
//     replaced with "set ssl cert" / "commit ssl cert";
//   - a destination CA file (router/cacerts/*.pem) added, read only by
//     server lines' "ca-file", gets "new ssl ca-file", "set ssl ca-file",
//     "commit ssl ca-file" before the server commands (see caChange); one
//     whose contents changed, "set ssl ca-file" and "commit ssl ca-file",
//     its servers renewed by the Diff (ChangedCAFiles);
//   - a file removed that the configuration no longer names needs nothing
//     (a backend HAProxy keeps until the next reload read it at load).
//
// Anything else needs a reload: another file added or changed, a map
// used otherwise (map_reg
// matches in list order), a crt-list line changed in place, contents not
// known, a certificate longer than the runtime API takes (MaxPayload). The
// configuration file itself is the caller's (Diff).
func FileCommands(in Files) FileChange {
	configPath := filepath.Clean(in.WD.Config())
	certDir := in.WD.Certs() + string(filepath.Separator)
	isCert := func(p string) bool { return strings.HasPrefix(p, certDir) && strings.HasSuffix(p, ".pem") }
	caDir := in.WD.CACerts() + string(filepath.Separator)
	isCA := func(p string) bool { return strings.HasPrefix(p, caDir) && strings.HasSuffix(p, ".pem") }
	maxPayload := 0
	fits := func(p string, pem []byte) bool {
		if maxPayload == 0 {
			maxPayload = MaxPayload(in.Config)
		}
		return len(pem)+len(p)+len("set ssl cert  <<\n\n") <= maxPayload
	}
	changed := make([]string, 0, len(in.Changed))
	for _, p := range in.Changed {
		changed = append(changed, filepath.Clean(p))
	}
	slices.Sort(changed)
	var out FileChange
	moved := movedBackends(in.WasRunning, in.Running)
	lists := newCrtListChange(in.Running)
	cas := newCAChange(in.Running)
	var certs []string
	for _, p := range changed {
		if p == configPath {
			continue
		}
		if isCert(p) {
			certs = append(certs, p)
			continue
		}
		if isCA(p) {
			if !cas.add(p, in, fits) {
				return FileChange{Reload: true, File: p}
			}
			continue
		}
		_, written := in.New[p]
		switch use := fileUse(in.Config, p); use {
		case usedNowhere:
			if !written {
				continue // removed, and nothing loads it again
			}
			return FileChange{Reload: true, File: p}
		case usedAsMap, usedAsIPList:
			var cmds entryCommands
			ok := false
			if use == usedAsIPList {
				cmds, ok = aclCommands(p, in)
			} else {
				cmds, ok = mapCommands(p, in, moved)
			}
			if !ok {
				return FileChange{Reload: true, File: p}
			}
			out.addEntries(cmds)
		case usedAsCrtList:
			if !lists.add(p, in, fits) {
				return FileChange{Reload: true, File: p}
			}
		default:
			return FileChange{Reload: true, File: p}
		}
	}
	if reload := out.replaceCertificates(certs, in, lists, fits); reload != nil {
		return *reload
	}
	if len(moved) > 0 {
		cmds, ok := movedMapCommands(changed, in, moved)
		if !ok {
			return FileChange{Reload: true, File: "maps naming a backend that moved"}
		}
		out.addEntries(cmds)
	}
	out.addLists(lists, cas)
	return out
}

// addLists adds the commands of the crt-lists' lines and the destination
// CA files, and what HAProxy runs of them once they are applied.
func (out *FileChange) addLists(lists *crtListChange, cas *caChange) {
	out.Commands = append(append(out.Commands, lists.certs...), lists.adds...)
	out.Removals = append(out.Removals, lists.dels...)
	out.Certificates += lists.count + cas.count
	out.Entries += len(lists.adds) + len(lists.dels)
	out.crt = lists.entries
	out.Before, out.ca = cas.cmds, cas.held
}

// addEntries adds the commands of a map's or allowlist's entries.
func (out *FileChange) addEntries(cmds entryCommands) {
	out.Commands = append(out.Commands, cmds.adds...)
	out.Removals = append(out.Removals, cmds.dels...)
	out.Entries += len(cmds.adds) + len(cmds.dels)
}

// replaceCertificates adds the commands that replace the route
// certificates certs (changed files) in place, but for those a crt-list
// line's commands handle; it returns the change that says why a reload is
// needed instead, if one is.
func (out *FileChange) replaceCertificates(certs []string, in Files, lists *crtListChange, fits func(string, []byte) bool) *FileChange {
	for _, p := range certs {
		pem, written := in.New[p]
		switch {
		case lists.handled[p]:
			// Added, created again or deleted with its crt-list line.
		case !written:
			return &FileChange{Reload: true, File: p}
		case !fits(p, pem):
			// HAProxy would drop it unanswered: a limit of the runtime
			// API, not a fault of the route.
			return &FileChange{Reload: true, File: p, TooLarge: true}
		default:
			out.Commands = append(out.Commands, CertificateCommands(lists.name(p), pem)...)
			out.Certificates++
		}
	}
	return nil
}

// movedMapCommands are the commands of the maps not among changed whose
// entries name a backend that moved: every map the configuration uses
// only for exact or prefix lookups, in the configuration directory.
func movedMapCommands(changed []string, in Files, moved map[string]bool) (entryCommands, bool) {
	var out entryCommands
	if in.All == nil || in.Running == nil || in.WasRunning == nil {
		return out, false
	}
	all := in.All()
	paths := make([]string, 0, len(all))
	confDir := in.WD.Conf() + string(filepath.Separator)
	for p := range all {
		if strings.HasPrefix(p, confDir) && strings.HasSuffix(p, ".map") && !slices.Contains(changed, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		switch fileUse(in.Config, p) {
		case usedNowhere:
			continue
		case usedAsMap:
		default:
			for b := range moved {
				if bytes.Contains(all[p], []byte(b)) {
					return out, false // a map used otherwise (map_reg) names it
				}
			}
			continue
		}
		cmds, ok := movedCommands(p, all[p], in, moved)
		if !ok {
			return out, false
		}
		out.adds = append(out.adds, cmds.adds...)
		out.dels = append(out.dels, cmds.dels...)
	}
	return out, true
}
