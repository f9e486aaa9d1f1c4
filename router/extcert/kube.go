package extcert

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
)

// Kube is the Checker of a cluster: SubjectAccessReviews for the router's
// own identity (learnt once with a SelfSubjectReview; OpenShift's router
// asks for its fixed service account openshift-ingress/router) and a GET
// of the secret.
type Kube struct {
	Client kubernetes.Interface
	Logger logr.Logger

	mu       sync.Mutex
	identity *authnv1.UserInfo
}

// Check implements Checker.
func (k *Kube) Check(ctx context.Context, ref Ref) Answer {
	var a Answer
	// The verbs OpenShift's router checks, in its order.
	for _, verb := range []string{"get", "watch", "list"} {
		ok, err := k.allowed(ctx, ref, verb)
		if err != nil {
			// Not a denial: the answer is unknown (OpenShift's router
			// counts it as one; here the previous answer stands).
			k.Logger.Error(err, "asking whether the router may use a secret", "secret", ref.String(), "verb", verb)
			return Answer{Err: field.InternalError(fieldPath(), errors.New("the router's permission to read the secret could not be checked"))}
		}
		if !ok {
			a.Forbidden = append(a.Forbidden, field.Forbidden(fieldPath(), fmt.Sprintf("router serviceaccount does not have permission to %s this secret", verb)))
		}
	}
	s, err := k.Client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		a.Exists = true
		if len(a.Forbidden) == 0 {
			a.Secret = s
		}
	case apierrors.IsNotFound(err):
	case len(a.Forbidden) > 0 && apierrors.IsForbidden(err):
		// Said already; the API's message would name the router's
		// identity, an object of another namespace.
	default:
		k.Logger.Error(err, "reading a secret", "secret", ref.String())
		a.Err = field.InternalError(fieldPath(), errors.New("the secret could not be read"))
	}
	return a
}

// allowed asks whether the router may use verb on the secret.
func (k *Kube) allowed(ctx context.Context, ref Ref, verb string) (bool, error) {
	attrs := &authzv1.ResourceAttributes{Namespace: ref.Namespace, Verb: verb, Resource: "secrets", Name: ref.Name}
	id, err := k.whoAmI(ctx)
	if err != nil {
		// Without the identity the router asks about itself.
		k.Logger.V(1).Info("SelfSubjectReview failed; using SelfSubjectAccessReviews", "err", err.Error())
		r, err := k.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("self subject access review: %w", err)
		}
		return decided(r.Status)
	}
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range id.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	r, err := k.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		ResourceAttributes: attrs, User: id.Username, Groups: id.Groups, UID: id.UID, Extra: extra,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return decided(r.Status)
}

// decided returns a review's answer; one not allowed because an
// authorizer failed (an evaluation error, no explicit denial) is no
// answer: the permission is unknown, not refused.
func decided(s authzv1.SubjectAccessReviewStatus) (bool, error) {
	if !s.Allowed && !s.Denied && s.EvaluationError != "" {
		return false, fmt.Errorf("access review not evaluated: %s", s.EvaluationError)
	}
	return s.Allowed, nil
}

// whoAmI returns the router's identity, asked once.
func (k *Kube) whoAmI(ctx context.Context) (*authnv1.UserInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.identity != nil {
		return k.identity, nil
	}
	r, err := k.Client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	k.identity = &r.Status.UserInfo
	k.Logger.Info("external certificates: permissions are checked for the router's identity", "user", k.identity.Username)
	return k.identity, nil
}
