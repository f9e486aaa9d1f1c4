// Package layout is the one home of the router's working-directory layout:
// where haproxy.config, the route certificates, destination CAs,
// allowlists, maps, sockets and the pid file live, relative to the working
// directory (OpenShift's /var/lib/haproxy). It imports nothing of the
// project (only logr), so every package that names a file of the working
// directory (templates, haproxy/files, the controller, the commands) can
// use it.
package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
)

// Paths relative to the working directory, as OpenShift's router lays it
// out (a custom template refers to them under /var/lib/haproxy/).
const (
	// ConfDir holds haproxy.config, the map files and the default
	// certificate.
	ConfDir = "conf"
	// ConfigFile is the configuration HAProxy loads.
	ConfigFile = ConfDir + "/haproxy.config"
	// SparesFile is the router's spare backends (haproxy/dynamic.Spares),
	// a second configuration file HAProxy loads after ConfigFile.
	SparesFile = ConfDir + "/spare-backends.cfg"
	// StickyRenamesFile is the map of the backends HAProxy runs with
	// another sticky cookie name than their route's (haproxy/dynamic:
	// filled at runtime, empty when HAProxy loads it).
	StickyRenamesFile = ConfDir + "/sticky_renames.map"
	// DefaultCertificateFile is the default certificate (and key).
	DefaultCertificateFile = ConfDir + "/default_pub_keys.pem"
	// RunDir holds the sockets and the pid file.
	RunDir = "run"
	// RuntimeSocket is the worker's stats socket (the runtime API).
	RuntimeSocket = RunDir + "/haproxy.sock"
	// PIDFile is the pid file of HAProxy's master.
	PIDFile = RunDir + "/haproxy.pid"
	// longestSocket is the longest socket name under RunDir the default
	// template binds (unix sockets have a short path limit).
	longestSocket = RunDir + "/haproxy-no-sni.sock"
	// CertsDir holds the routes' certificates (certificate, key, chain).
	CertsDir = "router/certs"
	// CACertsDir holds re-encrypt routes' destination CAs.
	CACertsDir = "router/cacerts"
	// AllowlistsDir holds the routes' IP allowlists.
	AllowlistsDir = "router/allowlists"
	// MTLSDir holds the copy of the client CA and its CRLs (router/mtls).
	MTLSDir = "mtls/latest"
)

// MaxSocketPath is the longest unix socket path the kernel accepts
// (108 bytes with the terminating NUL), less room.
const MaxSocketPath = 100

// Layout is the working directory of one router: every path the router
// writes or HAProxy reads is one of its methods.
type Layout struct {
	// Dir is the working directory, absolute.
	Dir string
}

// New returns the layout of working directory dir.
func New(dir string) Layout { return Layout{Dir: dir} }

// Path returns rel (one of this package's constants) under the directory.
func (l Layout) Path(rel string) string { return filepath.Join(l.Dir, filepath.FromSlash(rel)) }

// Config is the path of haproxy.config.
func (l Layout) Config() string { return l.Path(ConfigFile) }

// Spares is the spare backends' configuration file (SparesFile).
func (l Layout) Spares() string { return l.Path(SparesFile) }

// Conf is the directory of haproxy.config and the maps.
func (l Layout) Conf() string { return l.Path(ConfDir) }

// DefaultCertificate is the path of the default certificate.
func (l Layout) DefaultCertificate() string { return l.Path(DefaultCertificateFile) }

// Run is the directory of the sockets and the pid file.
func (l Layout) Run() string { return l.Path(RunDir) }

// RuntimeSocket is the path of HAProxy's runtime API socket.
func (l Layout) RuntimeSocket() string { return l.Path(RuntimeSocket) }

// PIDFile is the path of HAProxy's pid file.
func (l Layout) PIDFile() string { return l.Path(PIDFile) }

// Certs is the directory of the routes' certificates.
func (l Layout) Certs() string { return l.Path(CertsDir) }

// CACerts is the directory of the destination CAs.
func (l Layout) CACerts() string { return l.Path(CACertsDir) }

// Allowlists is the directory of the allowlist files.
func (l Layout) Allowlists() string { return l.Path(AllowlistsDir) }

// MTLS is the directory of the client CA copy and its CRLs.
func (l Layout) MTLS() string { return l.Path(MTLSDir) }

// CheckSocketPaths returns an error when the sockets under the run
// directory would be longer than a unix socket path may be.
func (l Layout) CheckSocketPaths() error {
	if p := l.Path(longestSocket); len(p) > MaxSocketPath {
		return fmt.Errorf("working directory %q is too long for unix socket paths (keep it under %d characters)", l.Dir, MaxSocketPath-len(longestSocket)-1)
	}
	return nil
}

// FileMode and DirMode are the modes of the files and directories the
// router writes (haproxy/files) and prepares: its own user only, as HAProxy
// runs as the same user. haproxy.config holds STATS_PASSWORD, the
// certificate files hold private keys.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// Prepare creates the directories HAProxy expects before the router writes
// anything (the others are created with the files in them), open to the
// router's user only; directories that exist already (an image's) are
// restricted to it. A directory the router does not own (an image built
// for another user, with group write access) keeps its mode, with a
// warning. The working directory itself is left as it is (it may be
// shared), unless Prepare creates it.
func (l Layout) Prepare(log logr.Logger) error {
	for _, d := range []string{ConfDir, RunDir, "router", CertsDir, CACertsDir} {
		p := l.Path(d)
		if err := os.MkdirAll(p, DirMode); err != nil {
			return fmt.Errorf("preparing working directory: %w", err)
		}
		err := os.Chmod(p, DirMode)
		switch {
		case errors.Is(err, fs.ErrPermission):
			log.Info("Warning: cannot restrict a directory of the working directory to the router's user (not its owner); haproxy.config and the certificates in it are still written 0600",
				"dir", p, "error", err.Error())
		case err != nil:
			return fmt.Errorf("preparing working directory: restricting %s to the router's user: %w", p, err)
		}
	}
	return nil
}
