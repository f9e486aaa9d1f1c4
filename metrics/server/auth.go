package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Attributes of the SubjectAccessReview OpenShift's router asks for: get
// on routers/metrics in route.openshift.io, named after the router.
const (
	SARGroup               = "route.openshift.io"
	SARResource            = "routers"
	SARMetricsSubresource  = "metrics"
	anonymousUser          = "system:anonymous"
	unauthenticatedGroup   = "system:unauthenticated"
	defaultTokenTTL        = 10 * time.Second
	defaultAllowTTL        = 2 * time.Minute
	defaultDenyTTL         = 5 * time.Second
	defaultReviewTimeout   = 10 * time.Second
	defaultCacheMaxEntries = 1024
)

// Decision is the outcome of an authorisation: Status 0 means allowed,
// otherwise the HTTP status and message to answer with.
type Decision struct {
	Status  int
	Message string
}

// Allowed reports whether the request may be served.
func (d Decision) Allowed() bool { return d.Status == 0 }

// Authorizer decides requests to the protected paths (/metrics) that carry
// no basic authentication.
type Authorizer interface {
	Authorize(r *http.Request) Decision
}

// KubeAuthorizer authorises as OpenShift's router does: the bearer token
// is authenticated with a TokenReview (authentication.k8s.io/v1); a
// request without one is the anonymous user; the user is then authorised
// with a SubjectAccessReview (authorization.k8s.io/v1) for the verb of the
// request on routers/metrics (route.openshift.io), name RouterName.
// Results are cached briefly: authenticated tokens for 10s, allowed
// reviews for 2m, denied ones for 5s.
type KubeAuthorizer struct {
	Client     kubernetes.Interface
	RouterName string
	Logger     logr.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu     sync.Mutex
	tokens ttlCache[authnv1.UserInfo]
	// rejected remembers tokens the TokenReview refused, for as long as a
	// denial: a client repeating a bad token costs no review per request.
	rejected ttlCache[bool]
	access   ttlCache[accessResult]
}

type accessResult struct {
	allowed bool
	reason  string
}

// errUnauthenticated: the token was reviewed and is not valid.
var errUnauthenticated = errors.New("token not authenticated")

// Authorize implements Authorizer.
func (a *KubeAuthorizer) Authorize(r *http.Request) Decision {
	ctx, cancel := context.WithTimeout(r.Context(), defaultReviewTimeout)
	defer cancel()
	user := authnv1.UserInfo{Username: anonymousUser, Groups: []string{unauthenticatedGroup}}
	if token, ok := bearerToken(r); ok {
		u, err := a.authenticate(ctx, token)
		if err != nil {
			if !errors.Is(err, errUnauthenticated) {
				a.Logger.Error(err, "metrics server: TokenReview failed")
			}
			return Decision{Status: http.StatusUnauthorized, Message: "Unauthorized"}
		}
		user = u
	}
	res, err := a.authorize(ctx, user, verbOf(r.Method), subresourceOf(r.URL.Path))
	if err != nil {
		a.Logger.Error(err, "metrics server: SubjectAccessReview failed", "user", user.Username)
		return Decision{Status: http.StatusInternalServerError, Message: "Unable to authorize the user due to an error"}
	}
	if !res.allowed {
		a.Logger.V(2).Info("metrics request forbidden", "user", user.Username, "path", r.URL.Path, "reason", res.reason)
		return Decision{Status: http.StatusForbidden, Message: "Forbidden: " + res.reason}
	}
	return Decision{}
}

func (a *KubeAuthorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *KubeAuthorizer) authenticate(ctx context.Context, token string) (authnv1.UserInfo, error) {
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	a.mu.Lock()
	u, ok := a.tokens.get(key, a.now())
	_, refused := a.rejected.get(key, a.now())
	a.mu.Unlock()
	if ok {
		return u, nil
	}
	if refused {
		return authnv1.UserInfo{}, errUnauthenticated
	}
	tr, err := a.Client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		a.mu.Lock()
		a.rejected.put(key, true, a.now(), defaultDenyTTL)
		a.mu.Unlock()
		return authnv1.UserInfo{}, errUnauthenticated
	}
	a.mu.Lock()
	a.tokens.put(key, tr.Status.User, a.now(), defaultTokenTTL)
	a.mu.Unlock()
	return tr.Status.User, nil
}

func (a *KubeAuthorizer) authorize(ctx context.Context, u authnv1.UserInfo, verb, subresource string) (accessResult, error) {
	groups := append([]string(nil), u.Groups...)
	sort.Strings(groups)
	// Extra is part of the identity the review judges (OpenShift's scoped
	// tokens carry their scopes there): two tokens of one user with
	// different scopes must not share a cached answer.
	extraKeys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		extraKeys = append(extraKeys, k)
	}
	sort.Strings(extraKeys)
	var extraText strings.Builder
	for _, k := range extraKeys {
		vals := append([]string(nil), u.Extra[k]...)
		sort.Strings(vals)
		fmt.Fprintf(&extraText, "%q=%q;", k, vals)
	}
	key := strings.Join([]string{u.Username, u.UID, strings.Join(groups, ","), extraText.String(), verb, subresource}, "\xff")
	a.mu.Lock()
	res, ok := a.access.get(key, a.now())
	a.mu.Unlock()
	if ok {
		return res, nil
	}
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb:        verb,
			Group:       SARGroup,
			Resource:    SARResource,
			Subresource: subresource,
			Name:        a.RouterName,
		},
		User:   u.Username,
		Groups: u.Groups,
		UID:    u.UID,
		Extra:  extra,
	}}
	out, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return accessResult{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	res = accessResult{allowed: out.Status.Allowed && !out.Status.Denied, reason: out.Status.Reason}
	ttl := defaultDenyTTL
	if res.allowed {
		ttl = defaultAllowTTL
	}
	a.mu.Lock()
	a.access.put(key, res, a.now(), ttl)
	a.mu.Unlock()
	return res, nil
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(h[len(prefix):])
	return t, t != ""
}

// verbOf maps the HTTP method to the Kubernetes verb as OpenShift's router.
func verbOf(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

func subresourceOf(path string) string {
	switch {
	case path == "/metrics":
		return SARMetricsSubresource
	case strings.HasPrefix(path, "/debug/"):
		return "debug"
	}
	return ""
}

// ttlCache is a small map with expiry; when full, expired entries are
// dropped, then everything.
type ttlCache[V any] struct {
	m map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	if c.m == nil {
		c.m = map[string]ttlEntry[V]{}
	}
	if len(c.m) >= defaultCacheMaxEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= defaultCacheMaxEntries {
			c.m = map[string]ttlEntry[V]{}
		}
	}
	c.m[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}
