package extcert

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeAPI answers SelfSubjectReviews with user, SubjectAccessReviews with
// allow(verb) (recording the reviewed user) and secret GETs with getErr or
// the objects given.
func fakeAPI(t *testing.T, allow func(verb string) bool, getErr error, objs ...runtime.Object) (*fake.Clientset, *[]string) {
	t.Helper()
	c := fake.NewClientset(objs...)
	var reviewed []string
	c.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{
			Username: "system:serviceaccount:ingress:router", Groups: []string{"system:serviceaccounts"}}}}, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		reviewed = append(reviewed, sar.Spec.User+" "+sar.Spec.ResourceAttributes.Verb+" "+sar.Spec.ResourceAttributes.Namespace+"/"+sar.Spec.ResourceAttributes.Name)
		sar.Status.Allowed = allow(sar.Spec.ResourceAttributes.Verb)
		return true, sar, nil
	})
	if getErr != nil {
		c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, getErr })
	}
	return c, &reviewed
}

func TestKubeCheck(t *testing.T) {
	ref := Ref{"shop", "shop-tls"}
	present := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-tls"}, Type: corev1.SecretTypeTLS}
	forbiddenGet := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "shop-tls",
		errors.New(`User "system:serviceaccount:ingress:router" cannot get resource "secrets"`))
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	tests := []struct {
		name      string
		allow     func(string) bool
		getErr    error
		objs      []runtime.Object
		forbidden int
		exists    bool
		errSet    bool
	}{
		{"allowed and present", all, nil, []runtime.Object{present}, 0, true, false},
		{"allowed and missing", all, nil, nil, 0, false, false},
		{"nothing allowed: the forbidden GET is not reported again", none, forbiddenGet, nil, 3, false, false},
		{"only get allowed", func(v string) bool { return v == "get" }, nil, []runtime.Object{present}, 2, true, false},
		{"a failing GET is an internal error naming nothing", all, errors.New(`dial tcp 10.0.0.1:443: connection refused for system:serviceaccount:ingress:router`), nil, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, reviewed := fakeAPI(t, tt.allow, tt.getErr, tt.objs...)
			k := &Kube{Client: c, Logger: logr.Discard()}
			a := k.Check(context.Background(), ref)
			if len(a.Forbidden) != tt.forbidden || a.Exists != tt.exists || (a.Err != nil) != tt.errSet {
				t.Fatalf("answer %+v", a)
			}
			if tt.forbidden == 0 && a.Exists != (a.Secret != nil) {
				t.Errorf("secret %v with exists %v", a.Secret, a.Exists)
			}
			want := []string{"system:serviceaccount:ingress:router get shop/shop-tls",
				"system:serviceaccount:ingress:router watch shop/shop-tls", "system:serviceaccount:ingress:router list shop/shop-tls"}
			if strings.Join(*reviewed, ",") != strings.Join(want, ",") {
				t.Errorf("reviews %v, want %v", *reviewed, want)
			}
			var msgs []string
			for _, e := range a.Forbidden {
				msgs = append(msgs, e.Error())
			}
			if a.Err != nil {
				msgs = append(msgs, a.Err.Error())
			}
			for _, m := range msgs {
				if strings.Contains(m, "ingress") || strings.Contains(m, "10.0.0.1") {
					t.Errorf("message names the router or its API: %q", m)
				}
			}
		})
	}
}

// TestKubeCheckReviewFailureIsNotADenial: a SubjectAccessReview the API
// fails to answer leaves the answer unknown (an internal error), never a
// denial.
func TestKubeCheckReviewFailureIsNotADenial(t *testing.T) {
	c, _ := fakeAPI(t, func(string) bool { return true }, nil)
	c.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd timeout")
	})
	a := (&Kube{Client: c, Logger: logr.Discard()}).Check(context.Background(), Ref{"shop", "shop-tls"})
	if len(a.Forbidden) != 0 || a.Err == nil || strings.Contains(a.Err.Error(), "etcd") {
		t.Errorf("answer %+v", a)
	}
}

// TestKubeCheckUnevaluatedReviewIsNotADenial: a review the cluster's
// authorizer could not evaluate (not allowed, not denied, an
// evaluationError) leaves the answer unknown; an explicit denial with one
// is a denial.
func TestKubeCheckUnevaluatedReviewIsNotADenial(t *testing.T) {
	for _, denied := range []bool{false, true} {
		c, _ := fakeAPI(t, func(string) bool { return true }, nil)
		c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
			sar.Status = authzv1.SubjectAccessReviewStatus{Denied: denied, EvaluationError: "webhook authorizer: 500"}
			return true, sar, nil
		})
		a := (&Kube{Client: c, Logger: logr.Discard()}).Check(context.Background(), Ref{"shop", "shop-tls"})
		if denied && (len(a.Forbidden) != 3 || a.Err != nil) {
			t.Errorf("explicit denial: answer %+v", a)
		}
		if !denied && (len(a.Forbidden) != 0 || a.Err == nil || strings.Contains(a.Err.Error(), "webhook")) {
			t.Errorf("not evaluated: answer %+v", a)
		}
	}
}
