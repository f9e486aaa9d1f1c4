package server

import (
	"crypto/tls"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster answers TokenReviews from a token table and
// SubjectAccessReviews from an allow list of users, recording the reviews.
type fakeCluster struct {
	tokens     map[string]authnv1.UserInfo
	allowed    map[string]bool
	reviewErr  error
	sarErr     error
	tokenCalls atomic.Int32
	sarCalls   atomic.Int32
	lastSAR    atomic.Pointer[authzv1.SubjectAccessReviewSpec]
}

func (f *fakeCluster) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.tokenCalls.Add(1)
		if f.reviewErr != nil {
			return true, nil, f.reviewErr
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		if u, ok := f.tokens[tr.Spec.Token]; ok {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: u}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.sarCalls.Add(1)
		if f.sarErr != nil {
			return true, nil, f.sarErr
		}
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
		spec := sar.Spec
		f.lastSAR.Store(&spec)
		// A scoped token (Extra set) is never allowed here.
		if f.allowed[sar.Spec.User] && len(sar.Spec.Extra) == 0 {
			sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed"}
		} else {
			sar.Status = authzv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}
		}
		return true, sar, nil
	})
	return c
}

// TestBearerTokenAuthorisation: the decision of OpenShift's router for
// /metrics with basic credentials, bearer tokens and anonymous requests.
func TestBearerTokenAuthorisation(t *testing.T) {
	cluster := &fakeCluster{
		tokens: map[string]authnv1.UserInfo{
			"prometheus-token": {Username: "system:serviceaccount:openshift-monitoring:prometheus-k8s", Groups: []string{"system:serviceaccounts"}},
			"other-token":      {Username: "system:serviceaccount:default:other"},
		},
		allowed: map[string]bool{"system:serviceaccount:openshift-monitoring:prometheus-k8s": true},
	}
	reg, _ := registryWithRouterMetrics(t)
	authz := &KubeAuthorizer{Client: cluster.client(), RouterName: "default", Logger: logr.Discard()}
	s := start(t, Options{Gatherer: reg, Username: "admin", Password: "s3cret", Authorizer: authz, Logger: logr.Discard()})
	base := "http://" + s.Addr().String()
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }

	cases := []struct {
		name   string
		path   string
		mod    func(*http.Request)
		status int
		sars   int32 // SubjectAccessReviews sent for this request
	}{
		{"basic credentials that match", "/metrics", basic("admin", "s3cret"), 200, 0},
		{"basic credentials that do not match", "/metrics", basic("admin", "wrong"), 401, 0},
		{"token of a user allowed get on routers/metrics", "/metrics", bearer("prometheus-token"), 200, 1},
		{"token of a user without the permission", "/metrics", bearer("other-token"), 403, 1},
		{"token the cluster does not know", "/metrics", bearer("forged"), 401, 0},
		{"anonymous", "/metrics", nil, 403, 1},
		{"health checks stay open", "/healthz", nil, 200, 0},
		{"readiness stays open", "/healthz/ready", bearer("forged"), 200, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := cluster.sarCalls.Load()
			r := do(t, plain, base+tc.path, tc.mod)
			if r.status != tc.status {
				t.Fatalf("%s: %d %q, want %d", tc.path, r.status, r.body, tc.status)
			}
			if got := cluster.sarCalls.Load() - before; got != tc.sars {
				t.Errorf("%d SubjectAccessReviews, want %d", got, tc.sars)
			}
		})
	}

	// The review asks what OpenShift's router asks.
	cluster.lastSAR.Store(nil)
	forget := func() { authz.mu.Lock(); authz.access = ttlCache[accessResult]{}; authz.mu.Unlock() }
	forget() // force a review
	do(t, plain, base+"/metrics", bearer("prometheus-token"))
	spec := cluster.lastSAR.Load()
	if spec == nil || spec.ResourceAttributes == nil {
		t.Fatal("no SubjectAccessReview sent")
	}
	want := authzv1.ResourceAttributes{Verb: "get", Group: "route.openshift.io", Resource: "routers", Subresource: "metrics", Name: "default"}
	if *spec.ResourceAttributes != want || spec.User != "system:serviceaccount:openshift-monitoring:prometheus-k8s" || len(spec.Groups) != 1 {
		t.Errorf("SubjectAccessReview %+v for %q %v, want %+v", *spec.ResourceAttributes, spec.User, spec.Groups, want)
	}
	// Anonymous requests are reviewed as system:anonymous.
	forget()
	do(t, plain, base+"/metrics", nil)
	if spec := cluster.lastSAR.Load(); spec.User != "system:anonymous" || len(spec.Groups) != 1 || spec.Groups[0] != "system:unauthenticated" {
		t.Errorf("anonymous reviewed as %q %v", spec.User, spec.Groups)
	}
}

// TestBearerTokenReviewsAreCached: a token is reviewed once per 10s and an
// allowed access once per 2 minutes; denials only for 5s.
func TestBearerTokenReviewsAreCached(t *testing.T) {
	cluster := &fakeCluster{
		tokens:  map[string]authnv1.UserInfo{"tok": {Username: "u"}, "tok2": {Username: "v"}},
		allowed: map[string]bool{"u": true},
	}
	now := time.Unix(1000, 0)
	a := &KubeAuthorizer{Client: cluster.client(), RouterName: "public", Logger: logr.Discard(), Now: func() time.Time { return now }}
	req := func(tok string) Decision {
		r, _ := http.NewRequest(http.MethodGet, "http://x/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authorize(r)
	}
	for i := 0; i < 3; i++ {
		if d := req("tok"); !d.Allowed() {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	if cluster.tokenCalls.Load() != 1 || cluster.sarCalls.Load() != 1 {
		t.Fatalf("%d token reviews, %d access reviews for 3 requests; want 1 and 1", cluster.tokenCalls.Load(), cluster.sarCalls.Load())
	}
	now = now.Add(11 * time.Second)
	req("tok")
	if cluster.tokenCalls.Load() != 2 || cluster.sarCalls.Load() != 1 {
		t.Errorf("after 11s: %d token reviews, %d access reviews; want 2 and 1", cluster.tokenCalls.Load(), cluster.sarCalls.Load())
	}
	if d := req("tok2"); d.Status != http.StatusForbidden {
		t.Fatalf("denied user: %+v", d)
	}
	req("tok2")
	if cluster.sarCalls.Load() != 2 {
		t.Errorf("denial not cached: %d access reviews", cluster.sarCalls.Load())
	}
	now = now.Add(6 * time.Second)
	req("tok2")
	if cluster.sarCalls.Load() != 3 {
		t.Errorf("denial cached beyond 5s: %d access reviews", cluster.sarCalls.Load())
	}
}

// TestBearerTokenReviewErrors: a failing TokenReview is 401, a failing
// SubjectAccessReview 500; neither serves the metrics.
func TestBearerTokenReviewErrors(t *testing.T) {
	cluster := &fakeCluster{reviewErr: errors.New("apiserver down")}
	a := &KubeAuthorizer{Client: cluster.client(), Logger: logr.Discard()}
	r, _ := http.NewRequest(http.MethodGet, "http://x/metrics", nil)
	r.Header.Set("Authorization", "Bearer tok")
	if d := a.Authorize(r); d.Status != http.StatusUnauthorized {
		t.Errorf("TokenReview error: %+v", d)
	}
	cluster.sarErr = errors.New("apiserver down")
	r.Header.Del("Authorization")
	if d := a.Authorize(r); d.Status != http.StatusInternalServerError {
		t.Errorf("SubjectAccessReview error: %+v", d)
	}
}

// TestWithoutAClusterCredentialsAreRequired: no Authorizer (manifests
// mode) with credentials: basic authentication is the only way in.
func TestWithoutAClusterCredentialsAreRequired(t *testing.T) {
	reg, _ := registryWithRouterMetrics(t)
	s := start(t, Options{Gatherer: reg, Username: "admin", Password: "s3cret", Logger: logr.Discard()})
	base := "http://" + s.Addr().String()
	if r := do(t, plain, base+"/metrics", func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }); r.status != 401 {
		t.Errorf("bearer token without a cluster: %d", r.status)
	}
	if r := do(t, plain, base+"/metrics", func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }); r.status != 200 {
		t.Errorf("basic credentials: %d", r.status)
	}
}

// TestTLSSettingsAreApplied: ROUTER_METRICS_TLS_MIN_VERSION, _CIPHERS and
// _CURVES reach the handshake.
func TestTLSSettingsAreApplied(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir, "metrics-tls")
	reg, _ := registryWithRouterMetrics(t)
	s := start(t, Options{Gatherer: reg, TLSCertFile: certFile, TLSKeyFile: keyFile, Logger: logr.Discard(),
		TLSMinVersion:   tls.VersionTLS12,
		TLSCipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		TLSCurves:       []tls.CurveID{tls.CurveP384},
	})
	addr := s.Addr().String()
	dial := func(c *tls.Config) (tls.ConnectionState, error) {
		c.RootCAs = pool
		conn, err := tls.Dial("tcp", addr, c)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}
	st, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12})
	if err != nil || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 || st.CurveID != tls.CurveP384 {
		t.Errorf("TLS 1.2: %v, suite %s, curve %v", err, tls.CipherSuiteName(st.CipherSuite), st.CurveID)
	}
	if _, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}); err == nil {
		t.Error("a cipher suite outside ROUTER_METRICS_TLS_CIPHERS was accepted")
	}
	if _, err := dial(&tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}); err == nil {
		t.Error("a curve outside ROUTER_METRICS_TLS_CURVES was accepted")
	}

	s13 := start(t, Options{Gatherer: reg, TLSCertFile: certFile, TLSKeyFile: keyFile, Logger: logr.Discard(), TLSMinVersion: tls.VersionTLS13})
	c, err := tls.Dial("tcp", s13.Addr().String(), &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12})
	if err == nil {
		c.Close()
		t.Error("TLS 1.2 accepted with VersionTLS13 as the minimum")
	}
}

// TestScopedTokensDoNotShareCachedAnswers: two tokens of one user, one
// scoped (OpenShift puts scopes in the user's Extra, which the access
// review judges), never share a cached answer either way.
func TestScopedTokensDoNotShareCachedAnswers(t *testing.T) {
	cluster := &fakeCluster{
		tokens: map[string]authnv1.UserInfo{
			"full":   {Username: "u"},
			"scoped": {Username: "u", Extra: map[string]authnv1.ExtraValue{"scopes.authorization.openshift.io": {"user:info"}}},
		},
		allowed: map[string]bool{"u": true},
	}
	a := &KubeAuthorizer{Client: cluster.client(), RouterName: "public", Logger: logr.Discard()}
	req := func(tok string) Decision {
		r, _ := http.NewRequest(http.MethodGet, "http://x/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authorize(r)
	}
	if d := req("scoped"); d.Status != http.StatusForbidden {
		t.Fatalf("scoped first: %+v", d)
	}
	if d := req("full"); !d.Allowed() {
		t.Fatalf("full after a scoped denial: %+v", d)
	}
	if d := req("scoped"); d.Status != http.StatusForbidden {
		t.Fatalf("scoped after the full token was allowed: %+v", d)
	}
}

// TestRefusedTokensAreCachedBriefly: a token the TokenReview refuses is
// refused again without a review for a few seconds.
func TestRefusedTokensAreCachedBriefly(t *testing.T) {
	cluster := &fakeCluster{tokens: map[string]authnv1.UserInfo{}}
	now := time.Unix(1000, 0)
	a := &KubeAuthorizer{Client: cluster.client(), RouterName: "public", Logger: logr.Discard(), Now: func() time.Time { return now }}
	req := func() Decision {
		r, _ := http.NewRequest(http.MethodGet, "http://x/metrics", nil)
		r.Header.Set("Authorization", "Bearer junk")
		return a.Authorize(r)
	}
	for i := 0; i < 5; i++ {
		if d := req(); d.Status != http.StatusUnauthorized {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	if n := cluster.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token reviews for 5 requests with one bad token", n)
	}
	now = now.Add(6 * time.Second)
	req()
	if n := cluster.tokenCalls.Load(); n != 2 {
		t.Fatalf("a refusal cached beyond 5s: %d token reviews", n)
	}
}
