package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// lines is a logger that keeps its lines.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.l = append(l.l, prefix+" "+args)
	}, funcr.Options{})
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

func served(version string, resources ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: GatewayGroup + "/" + version}
	for _, r := range resources {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
	}
	return l
}

// TestWatchedGatewayKindsAreThoseServedAndListable: the Gateway API is
// watched only when GatewayClasses, Gateways and HTTPRoutes are all served
// and listable; TLSRoutes and ReferenceGrants when they are; ReferenceGrants
// of v1beta1 when v1 is not served. Anything missing is said in the log.
func TestWatchedGatewayKindsAreThoseServedAndListable(t *testing.T) {
	all := []string{"gatewayclasses", "gateways", "httproutes", "tlsroutes", "referencegrants"}
	tests := []struct {
		name      string
		served    []*metav1.APIResourceList
		forbidden string
		want      string
		log       string
	}{
		{"everything of v1.6", []*metav1.APIResourceList{served("v1", all...), served("v1beta1", "referencegrants")},
			"", "v1/gatewayclasses v1/gateways v1/httproutes v1/tlsroutes v1/referencegrants", ""},
		{"a release before v1.5: ReferenceGrant v1beta1, no TLSRoute",
			[]*metav1.APIResourceList{served("v1", "gatewayclasses", "gateways", "httproutes"), served("v1beta1", "gateways", "referencegrants")},
			"", "v1/gatewayclasses v1/gateways v1/httproutes v1beta1/referencegrants", "v1/tlsroutes (not served)"},
		{"no CRDs", nil, "", "", "v1/gatewayclasses not served"},
		{"no HTTPRoute", []*metav1.APIResourceList{served("v1", "gatewayclasses", "gateways")}, "", "", "v1/httproutes not served"},
		{"Gateways forbidden", []*metav1.APIResourceList{served("v1", all...)}, "gateways", "", "v1/gateways the router may not list them"},
		{"ReferenceGrants forbidden", []*metav1.APIResourceList{served("v1", all...)}, "referencegrants",
			"v1/gatewayclasses v1/gateways v1/httproutes v1/tlsroutes", "v1/referencegrants (the router may not list them)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			kc.Discovery().(*fakediscovery.FakeDiscovery).Resources = tc.served
			gc := gatewayfake.NewSimpleClientset()
			if tc.forbidden != "" {
				gc.PrependReactor("list", tc.forbidden, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: GatewayGroup, Resource: tc.forbidden}, "", fmt.Errorf("no"))
				})
			}
			l := &lines{}
			s := New(Options{Kube: kc, Gateway: gc, Logger: l.logger()})
			var got []string
			for _, k := range s.watchedGatewayKinds(context.Background(), true) {
				got = append(got, k.name())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("watched %q, want %q", strings.Join(got, " "), tc.want)
			}
			if tc.log != "" && !strings.Contains(l.String(), tc.log) {
				t.Errorf("log %q does not say %q", l.String(), tc.log)
			}
			if tc.log == "" && l.String() != "" {
				t.Errorf("log %q, want nothing", l.String())
			}
		})
	}
}
