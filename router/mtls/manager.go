package mtls

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/model"
)

// File names inside Options.Dir, as in OpenShift
// (/var/lib/haproxy/mtls/latest/…).
const (
	CABundleName = "ca-bundle.pem"
	CRLName      = "crls.pem"
)

// Defaults of Options.
const (
	DefaultFetchTimeout = 30 * time.Second
	DefaultMaxCRLSize   = 64 << 20
	DefaultMinBackoff   = 30 * time.Second
	// DefaultMaxBackoff is OpenShift's retry interval after an error.
	DefaultMaxBackoff = 5 * time.Minute
	DefaultPoll       = time.Minute
	// settle is how long after a file system event the files are read,
	// so a file being written is read once it is complete.
	settle = 200 * time.Millisecond
)

// Options configure a Manager.
type Options struct {
	// CAFile is ROUTER_MUTUAL_TLS_AUTH_CA.
	CAFile string
	// CRLFile is ROUTER_MUTUAL_TLS_AUTH_CRL. When set it is the CRL file
	// (copied and watched like the CA bundle) and nothing is downloaded:
	// OpenShift's template then uses it instead of the downloaded lists.
	CRLFile string
	// Dir is the directory HAProxy reads the copies from
	// (WORKDIR/mtls/latest).
	Dir    string
	Logger logr.Logger
	// Changed is called, from the manager's goroutine, whenever what
	// Apply returns has changed; it must not block (store.Poke).
	Changed func()
	// Client fetches CRLs; nil means one with FetchTimeout that uses the
	// proxy from the environment (HTTP_PROXY, NO_PROXY) as OpenShift's.
	Client       *http.Client
	FetchTimeout time.Duration
	// MaxCRLSize bounds one download.
	MaxCRLSize int64
	// MinBackoff and MaxBackoff bound the retry interval after a failed
	// fetch (doubling from the minimum).
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often the input files are read again besides file
	// system events.
	Poll   time.Duration
	Policy Policy
}

// state is what HAProxy is given.
type state struct {
	ca  []byte
	crl []byte // nil: no crl-file
}

// Manager keeps the client CA copy and the CRL file current. Apply is
// safe for concurrent use with Run.
type Manager struct {
	o           Options
	log         logr.Logger
	placeholder []byte

	mu  sync.Mutex
	cur state

	// The fields below belong to Run's goroutine.
	caData   []byte
	crlData  []byte
	bundle   Bundle
	crls     map[string]CRL
	failures int
	// badInput is the last input content that was refused (logged once).
	badInput string
}

// New reads the CA bundle (and the CRL file, if given). A bundle that
// cannot be read or parsed is an error, as in OpenShift. Until Run has
// downloaded the CRLs the bundle names, the CRL file is a placeholder that
// refuses every client certificate, so HAProxy starts at once and serves
// everything but mutual TLS meanwhile.
func New(o Options) (*Manager, error) {
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.MaxCRLSize <= 0 {
		o.MaxCRLSize = DefaultMaxCRLSize
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Policy == (Policy{}) {
		o.Policy = DefaultPolicy()
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.FetchTimeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	}
	if o.Changed == nil {
		o.Changed = func() {}
	}
	ph, err := Placeholder()
	if err != nil {
		return nil, fmt.Errorf("placeholder CRL: %w", err)
	}
	m := &Manager{o: o, log: o.Logger, placeholder: ph, crls: map[string]CRL{}}
	ca, b, err := readBundle(o.CAFile)
	if err != nil {
		return nil, err
	}
	m.caData, m.bundle = ca, b
	if o.CRLFile != "" {
		if m.crlData, err = readCRLFile(o.CRLFile); err != nil {
			return nil, err
		}
	}
	m.cur = m.target()
	return m, nil
}

func readBundle(path string) ([]byte, Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Bundle{}, fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CA: %w", err)
	}
	b, err := ParseBundle(data)
	if err != nil {
		return nil, Bundle{}, fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CA %s: %w", path, err)
	}
	return data, b, nil
}

func readCRLFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CRL: %w", err)
	}
	if hasCRL(data) {
		return data, nil
	}
	return nil, fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CRL %s: the file holds no PEM X509 CRL", path)
}

// hasCRL reports whether data holds a PEM X509 CRL block.
func hasCRL(data []byte) bool {
	for rest := data; len(rest) > 0; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return false
		}
		if b.Type == "X509 CRL" {
			return true
		}
	}
	return false
}

// target is what HAProxy should be given now.
func (m *Manager) target() state {
	switch {
	case m.o.CRLFile != "":
		return state{ca: m.caData, crl: m.crlData}
	case len(m.bundle.Authorities) == 0:
		return state{ca: m.caData}
	case len(m.crls) == 0:
		return state{ca: m.caData, crl: m.placeholder}
	default:
		return state{ca: m.caData, crl: Encode(m.crls)}
	}
}

// Apply points the template data at the managed files (HaveClientCA,
// HaveCRLs and the mutual TLS paths of the settings) and returns them, to
// be written with the configuration. It is the controller's hook.
func (m *Manager) Apply(td *model.TemplateData) []files.File {
	m.mu.Lock()
	st := m.cur
	m.mu.Unlock()
	caPath := filepath.Join(m.o.Dir, CABundleName)
	td.HaveClientCA = true
	td.HaveCRLs = st.crl != nil
	td.HAProxy.MutualTLSCA = caPath
	td.HAProxy.MutualTLSCRL = ""
	out := []files.File{{Path: caPath, Data: st.ca}}
	if st.crl != nil {
		crlPath := filepath.Join(m.o.Dir, CRLName)
		td.HAProxy.MutualTLSCRL = crlPath
		out = append(out, files.File{Path: crlPath, Data: st.crl})
	}
	return out
}

// publish makes the target state current and reports a change.
func (m *Manager) publish() {
	next := m.target()
	m.mu.Lock()
	same := bytes.Equal(next.ca, m.cur.ca) && bytes.Equal(next.crl, m.cur.crl) && (next.crl == nil) == (m.cur.crl == nil)
	if !same {
		m.cur = next
	}
	m.mu.Unlock()
	if same {
		return
	}
	m.log.Info("mutual TLS files changed; reloading", "crlFile", next.crl != nil, "crls", len(m.crls), "authoritiesWithCRLs", len(m.bundle.Authorities))
	m.o.Changed()
}

// Run keeps the files current until ctx is done: it fetches the CRLs the
// bundle names, fetches each again before it expires, and reads the input
// files again when they change (file system events on their directories,
// which also see a ConfigMap's ..data symlink swap, and every Poll).
func (m *Manager) Run(ctx context.Context) {
	events := m.watch(ctx)
	poll := time.NewTicker(m.o.Poll)
	defer poll.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// What changed between New and the watch.
	m.readInputs()
	next := m.round(ctx)
	var check time.Time
	for {
		var timerC <-chan time.Time
		if wake := earliest(next, check); !wake.IsZero() {
			timer.Reset(time.Until(wake))
			timerC = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-events:
			if check.IsZero() {
				check = time.Now().Add(settle)
			}
			continue
		case <-poll.C:
			check = time.Now()
		case <-timerC:
		}
		now := time.Now()
		if !check.IsZero() && !now.Before(check) {
			check = time.Time{}
			if m.readInputs() {
				m.failures = 0
				next = m.round(ctx)
				continue
			}
		}
		if !next.IsZero() && !now.Before(next) {
			next = m.round(ctx)
		}
	}
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// watch reports file system events in the input files' directories; nil
// (polling only) if they cannot be watched.
func (m *Manager) watch(ctx context.Context) <-chan struct{} {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		m.log.Error(err, "cannot watch the mutual TLS files; reading them every poll interval", "interval", m.o.Poll.String())
		return nil
	}
	dirs := []string{filepath.Dir(m.o.CAFile)}
	if m.o.CRLFile != "" && filepath.Dir(m.o.CRLFile) != dirs[0] {
		dirs = append(dirs, filepath.Dir(m.o.CRLFile))
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			m.log.Error(err, "cannot watch the mutual TLS files; reading them every poll interval", "dir", d, "interval", m.o.Poll.String())
		}
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				m.log.Error(err, "watching the mutual TLS files")
			}
		}
	}()
	return out
}

// readInputs reads the CA bundle (and CRL file) again and reports whether
// they changed. Content that cannot be used keeps the previous files.
func (m *Manager) readInputs() bool {
	ca, err := os.ReadFile(m.o.CAFile)
	var crl []byte
	if err == nil && m.o.CRLFile != "" {
		crl, err = os.ReadFile(m.o.CRLFile)
	}
	if err != nil {
		m.refuse(err.Error(), err)
		return false
	}
	if bytes.Equal(ca, m.caData) && bytes.Equal(crl, m.crlData) {
		return false
	}
	b, err := ParseBundle(ca)
	if err != nil {
		err = fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CA %s: %w", m.o.CAFile, err)
	} else if m.o.CRLFile != "" && !hasCRL(crl) {
		err = fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH_CRL %s: the file holds no PEM X509 CRL", m.o.CRLFile)
	}
	if err != nil {
		m.refuse(string(ca)+string(crl), err)
		return false
	}
	m.badInput = ""
	m.log.Info("client CA bundle or CRL file changed", "caFile", m.o.CAFile, "certificates", len(b.Certs), "authoritiesWithCRLs", len(b.Authorities))
	m.caData, m.bundle, m.crlData = ca, b, crl
	return true
}

func (m *Manager) refuse(key string, err error) {
	if key == m.badInput {
		return
	}
	m.badInput = key
	m.log.Error(err, "mutual TLS files not updated; the previous ones stay in use")
}

// round fetches the CRLs that are missing or due, publishes the result and
// returns when to run again (zero: only on input changes).
func (m *Manager) round(ctx context.Context) time.Time {
	if m.o.CRLFile != "" {
		m.publish()
		return time.Time{}
	}
	now := time.Now()
	p := m.o.Policy
	keep, fetch := p.Plan(m.bundle, m.crls, now)
	failed := false
	for _, a := range fetch {
		c, err := m.fetch(ctx, a, now)
		old, haveOld := m.crls[a.Key]
		switch {
		case err != nil:
			failed = true
			m.log.Error(err, "cannot fetch the certificate revocation list; retrying (clients of this CA are refused while it has no current list)", "ca", a.Cert.Subject.String(), "keepingPreviousList", haveOld)
			if haveOld {
				// Kept even once expired: HAProxy then refuses this CA's
				// clients rather than accept revoked certificates.
				keep[a.Key] = old
			}
		case haveOld && !Newer(c, old):
			keep[a.Key] = old
		default:
			keep[a.Key] = c
			m.log.Info("certificate revocation list fetched", "ca", a.Cert.Subject.String(), "url", c.URL, "thisUpdate", c.ThisUpdate, "nextUpdate", c.NextUpdate)
		}
	}
	m.crls = keep
	m.publish()
	next := p.NextRefresh(keep, now)
	if failed || len(p.Due(m.bundle, keep, time.Now())) > 0 {
		backoff := m.o.MaxBackoff
		if m.failures < 16 {
			backoff = min(m.o.MinBackoff<<m.failures, m.o.MaxBackoff)
		}
		m.failures++
		next = earliest(next, time.Now().Add(backoff))
	} else {
		m.failures = 0
	}
	return next
}

// fetch downloads a's CRL from its distribution points, in order.
func (m *Manager) fetch(ctx context.Context, a Authority, now time.Time) (CRL, error) {
	var errs []error
	for _, u := range a.URLs {
		data, err := m.get(ctx, u)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		c, err := ParseCRL(data, a.Cert, m.bundle.Certs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if !c.NextUpdate.IsZero() && c.NextUpdate.Before(now) {
			errs = append(errs, fmt.Errorf("%s: the CRL expired at %s", u, c.NextUpdate.Format(time.RFC3339)))
			continue
		}
		c.Key, c.URL, c.Fetched = a.Key, u, now
		return c, nil
	}
	for _, u := range a.Unsupported {
		errs = append(errs, fmt.Errorf("%s: unsupported distribution point (http only)", u))
	}
	return CRL{}, errors.Join(errs...)
}

func (m *Manager) get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, m.o.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, m.o.MaxCRLSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > m.o.MaxCRLSize {
		return nil, fmt.Errorf("CRL larger than %d bytes", m.o.MaxCRLSize)
	}
	return data, nil
}
