package mtls

import (
	"bytes"
	"context"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/openshift-router-go/router/router/model"
)

// crlServer serves one CRL per path from 127.0.0.1 and counts requests.
type crlServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	body  map[string][]byte
	code  map[string]int
	hits  atomic.Int64
	delay time.Duration
}

func newCRLServer(t *testing.T) *crlServer {
	s := &crlServer{body: map[string][]byte{}, code: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, code := s.body[r.URL.Path], s.code[r.URL.Path]
		s.mu.Unlock()
		if code == 0 {
			code = http.StatusOK
		}
		if body == nil {
			code = http.StatusNotFound
		}
		w.WriteHeader(code)
		w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *crlServer) url(path string) string { return s.srv.URL + path }

func (s *crlServer) set(path string, code int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body[path], s.code[path] = body, code
}

// given returns what the manager gives HAProxy now.
func given(m *Manager) (ca, crl []byte, td *model.TemplateData) {
	td = &model.TemplateData{}
	for _, f := range m.Apply(td) {
		switch filepath.Base(f.Path) {
		case CABundleName:
			ca = f.Data
		case CRLName:
			crl = f.Data
		}
	}
	return ca, crl, td
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeAtomic replaces path as a tool that writes a new file and renames it would.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type harness struct {
	m       *Manager
	changes atomic.Int64
	ctx     context.Context
	done    chan struct{}
	started bool
}

// startManager creates a manager (not running yet) with short timeouts.
func startManager(t *testing.T, o Options) *harness {
	t.Helper()
	h := &harness{done: make(chan struct{})}
	o.Logger = testr.New(t)
	o.Dir = filepath.Join(t.TempDir(), "mtls", "latest")
	o.Changed = func() { h.changes.Add(1) }
	if o.FetchTimeout == 0 {
		o.FetchTimeout = 2 * time.Second
	}
	if o.MinBackoff == 0 {
		o.MinBackoff, o.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	t.Cleanup(func() {
		cancel()
		if !h.started {
			return
		}
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			t.Error("manager did not stop")
		}
	})
	return h
}

func (h *harness) run() {
	h.started = true
	go func() { h.m.Run(h.ctx); close(h.done) }()
}

func start(t *testing.T, o Options) *harness {
	t.Helper()
	h := startManager(t, o)
	h.run()
	return h
}

// crlNumbers returns the CRL numbers in a crls.pem (the placeholder's
// counts as 0; the tests' lists are numbered from 1).
func crlNumbers(t *testing.T, data []byte) []int64 {
	var out []int64
	for _, rl := range pemCRLs(t, data) {
		n := rl.Number.Int64()
		if strings.Contains(rl.Issuer.CommonName, "placeholder") {
			n = 0
		}
		out = append(out, n)
	}
	return out
}

func TestManagerStartsWithAPlaceholderAndThenServesTheDownloadedCRL(t *testing.T) {
	srv := newCRLServer(t)
	ca := newTestCA(t, "client CA", srv.url("/ca.crl"))
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	writeAtomic(t, caFile, ca.pem)
	now := time.Now()
	srv.set("/ca.crl", 200, ca.crl(t, 1, now.Add(-time.Minute), now.Add(time.Hour), 42))

	h := startManager(t, Options{CAFile: caFile})
	gotCA, crl, td := given(h.m)
	if !bytes.Equal(gotCA, ca.pem) || !td.HaveClientCA || !td.HaveCRLs || td.HAProxy.MutualTLSCRL == "" || td.HAProxy.MutualTLSCA != filepath.Join(h.m.o.Dir, CABundleName) {
		t.Fatalf("before Run: td %+v", td)
	}
	if !bytes.Equal(crl, h.m.placeholder) {
		t.Fatal("before the download the CRL file must be the placeholder")
	}
	h.run()
	waitFor(t, 5*time.Second, "the downloaded CRL", func() bool {
		_, crl, _ := given(h.m)
		n := crlNumbers(t, crl)
		return len(n) == 1 && n[0] == 1
	})
	_, crl, _ = given(h.m)
	rl := pemCRLs(t, crl)[0]
	if len(rl.RevokedCertificateEntries) != 1 || rl.RevokedCertificateEntries[0].SerialNumber.Cmp(big.NewInt(42)) != 0 || rl.Issuer.CommonName != "client CA" {
		t.Fatalf("crls.pem holds %+v", rl)
	}
	if h.changes.Load() != 1 {
		t.Fatalf("Changed called %d times, want 1", h.changes.Load())
	}
}

func TestManagerWithoutDistributionPointsGivesNoCRLFile(t *testing.T) {
	srv := newCRLServer(t)
	ca := newTestCA(t, "plain CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomic(t, caFile, ca.pem)
	h := start(t, Options{CAFile: caFile})
	time.Sleep(200 * time.Millisecond)
	_, crl, td := given(h.m)
	if crl != nil || td.HaveCRLs || td.HAProxy.MutualTLSCRL != "" || !td.HaveClientCA {
		t.Fatalf("crl-file given without distribution points: %+v", td)
	}
	if srv.hits.Load() != 0 || h.changes.Load() != 0 {
		t.Fatalf("hits %d changes %d", srv.hits.Load(), h.changes.Load())
	}
}

func TestManagerFetchesTheCRLAgainBeforeItsNextUpdate(t *testing.T) {
	srv := newCRLServer(t)
	ca := newTestCA(t, "client CA", srv.url("/ca.crl"))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomic(t, caFile, ca.pem)
	now := time.Now()
	// Valid for 4 s: fetched again 0.4 s before it expires.
	srv.set("/ca.crl", 200, ca.crl(t, 1, now, now.Add(4*time.Second), 1))
	h := start(t, Options{CAFile: caFile, Policy: Policy{MaxLead: time.Hour, NoNextUpdate: time.Hour}})
	waitFor(t, 5*time.Second, "the first CRL", func() bool {
		_, crl, _ := given(h.m)
		n := crlNumbers(t, crl)
		return len(n) == 1 && n[0] == 1
	})
	srv.set("/ca.crl", 200, ca.crl(t, 2, time.Now(), time.Now().Add(time.Hour), 1, 2))
	waitFor(t, 6*time.Second, "the second CRL", func() bool {
		_, crl, _ := given(h.m)
		n := crlNumbers(t, crl)
		return len(n) == 1 && n[0] == 2
	})
	if time.Since(now) > 4*time.Second {
		t.Fatalf("the new list arrived after the old one expired (%v)", time.Since(now))
	}
	if h.changes.Load() != 2 {
		t.Fatalf("Changed called %d times, want 2", h.changes.Load())
	}
}

func TestManagerRetriesAFailedDownloadWithBackoff(t *testing.T) {
	srv := newCRLServer(t)
	ca := newTestCA(t, "client CA", srv.url("/ca.crl"))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomic(t, caFile, ca.pem)
	srv.set("/ca.crl", http.StatusServiceUnavailable, []byte("later"))
	h := start(t, Options{CAFile: caFile})
	waitFor(t, 5*time.Second, "three attempts", func() bool { return srv.hits.Load() >= 3 })
	if _, crl, _ := given(h.m); !bytes.Equal(crl, h.m.placeholder) || h.changes.Load() != 0 {
		t.Fatal("a failed download must leave the placeholder (mutual TLS refused) in place")
	}
	now := time.Now()
	srv.set("/ca.crl", 200, ca.crl(t, 1, now.Add(-time.Minute), now.Add(time.Hour)))
	waitFor(t, 5*time.Second, "the CRL after the server recovered", func() bool {
		_, crl, _ := given(h.m)
		n := crlNumbers(t, crl)
		return len(n) == 1 && n[0] == 1 && h.changes.Load() == 1
	})
	// Backoff is bounded: no more than one attempt per MinBackoff.
	hits := srv.hits.Load()
	time.Sleep(300 * time.Millisecond)
	if srv.hits.Load() != hits {
		t.Fatalf("fetched again %d times after success, want none before the refresh time", srv.hits.Load()-hits)
	}
}

func TestManagerRefusesUnusableDownloads(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		body func(ca, other *testCA) []byte
		max  int64
	}{
		{"another CA's list", func(ca, other *testCA) []byte { return other.crl(t, 1, now, now.Add(time.Hour)) }, 0},
		{"expired list", func(ca, other *testCA) []byte {
			return ca.crl(t, 1, now.Add(-2*time.Hour), now.Add(-time.Hour))
		}, 0},
		{"larger than MaxCRLSize", func(ca, other *testCA) []byte { return ca.crl(t, 1, now, now.Add(time.Hour)) }, 100},
		{"not a CRL", func(ca, other *testCA) []byte { return []byte(strings.Repeat("x", 50)) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCRLServer(t)
			ca, other := newTestCA(t, "client CA", srv.url("/ca.crl")), newTestCA(t, "other")
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			writeAtomic(t, caFile, ca.pem)
			srv.set("/ca.crl", 200, tc.body(ca, other))
			h := start(t, Options{CAFile: caFile, MaxCRLSize: tc.max})
			waitFor(t, 5*time.Second, "two attempts", func() bool { return srv.hits.Load() >= 2 })
			if _, crl, _ := given(h.m); !bytes.Equal(crl, h.m.placeholder) || h.changes.Load() != 0 {
				t.Fatal("an unusable download replaced the placeholder")
			}
		})
	}
}

func TestManagerPicksUpCABundleChanges(t *testing.T) {
	for _, style := range []string{"file renamed over", "ConfigMap ..data symlink swap"} {
		t.Run(style, func(t *testing.T) {
			srv := newCRLServer(t)
			oldCA := newTestCA(t, "old CA", srv.url("/old.crl"))
			newCA := newTestCA(t, "new CA", srv.url("/new.crl"))
			now := time.Now()
			srv.set("/old.crl", 200, oldCA.crl(t, 1, now.Add(-time.Minute), now.Add(time.Hour)))
			srv.set("/new.crl", 200, newCA.crl(t, 7, now.Add(-time.Minute), now.Add(time.Hour)))
			dir := t.TempDir()
			caFile := filepath.Join(dir, "ca-bundle.pem")
			// replace installs a new bundle the way style does.
			var replace func(data []byte)
			if style == "file renamed over" {
				writeAtomic(t, caFile, oldCA.pem)
				replace = func(data []byte) { writeAtomic(t, caFile, data) }
			} else {
				// kubelet: ca-bundle.pem -> ..data/ca-bundle.pem, ..data -> ..v1
				must(t, os.Mkdir(filepath.Join(dir, "..v1"), 0o755))
				must(t, os.WriteFile(filepath.Join(dir, "..v1", "ca-bundle.pem"), oldCA.pem, 0o644))
				must(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
				must(t, os.Symlink("..data/ca-bundle.pem", caFile))
				replace = func(data []byte) {
					must(t, os.Mkdir(filepath.Join(dir, "..v2"), 0o755))
					must(t, os.WriteFile(filepath.Join(dir, "..v2", "ca-bundle.pem"), data, 0o644))
					must(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
					must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
					must(t, os.RemoveAll(filepath.Join(dir, "..v1")))
				}
			}
			// A long poll interval: the change must be seen through the watch.
			h := start(t, Options{CAFile: caFile, Poll: time.Hour})
			waitFor(t, 5*time.Second, "the old CA's CRL", func() bool {
				_, crl, _ := given(h.m)
				n := crlNumbers(t, crl)
				return len(n) == 1 && n[0] == 1
			})
			replace(newCA.pem)
			waitFor(t, 5*time.Second, "the new CA and its CRL", func() bool {
				ca, crl, _ := given(h.m)
				n := crlNumbers(t, crl)
				return bytes.Equal(ca, newCA.pem) && len(n) == 1 && n[0] == 7
			})
		})
	}
}

func TestManagerKeepsThePreviousFilesWhenTheNewBundleIsBroken(t *testing.T) {
	ca, next := newTestCA(t, "ca"), newTestCA(t, "next")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomic(t, caFile, ca.pem)
	h := start(t, Options{CAFile: caFile, Poll: 50 * time.Millisecond})
	writeAtomic(t, caFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	time.Sleep(400 * time.Millisecond)
	if got, _, _ := given(h.m); !bytes.Equal(got, ca.pem) || h.changes.Load() != 0 {
		t.Fatal("a broken bundle replaced the working one")
	}
	writeAtomic(t, caFile, next.pem)
	waitFor(t, 5*time.Second, "the next good bundle", func() bool { got, _, _ := given(h.m); return bytes.Equal(got, next.pem) })
}

func TestManagerWithAnExplicitCRLFileDownloadsNothing(t *testing.T) {
	srv := newCRLServer(t)
	ca := newTestCA(t, "client CA", srv.url("/ca.crl"))
	dir := t.TempDir()
	caFile, crlFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "crl.pem")
	now := time.Now()
	writeAtomic(t, caFile, ca.pem)
	writeAtomic(t, crlFile, ca.crl(t, 3, now, now.Add(time.Hour)))
	srv.set("/ca.crl", 200, ca.crl(t, 1, now, now.Add(time.Hour)))
	h := start(t, Options{CAFile: caFile, CRLFile: crlFile, Poll: time.Hour})
	if _, crl, td := given(h.m); !td.HaveCRLs || crlNumbers(t, crl)[0] != 3 {
		t.Fatal("the explicit CRL file is not the one given to HAProxy")
	}
	writeAtomic(t, crlFile, ca.crl(t, 4, now, now.Add(time.Hour)))
	waitFor(t, 5*time.Second, "the changed CRL file", func() bool { _, crl, _ := given(h.m); return crlNumbers(t, crl)[0] == 4 })
	if srv.hits.Load() != 0 {
		t.Fatalf("%d downloads despite ROUTER_MUTUAL_TLS_AUTH_CRL", srv.hits.Load())
	}
}

func TestNewRefusesAnUnusableBundle(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	writeAtomic(t, bad, []byte("nothing here"))
	for name, path := range map[string]string{"missing": filepath.Join(dir, "none.pem"), "no certificate": bad} {
		if _, err := New(Options{CAFile: path, Dir: dir}); err == nil || !strings.Contains(err.Error(), "ROUTER_MUTUAL_TLS_AUTH_CA") {
			t.Errorf("%s: error %v, want one naming ROUTER_MUTUAL_TLS_AUTH_CA", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
