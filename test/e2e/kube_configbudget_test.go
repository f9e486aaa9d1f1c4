package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/kubetest"
)

// TestKubeConfigBudgetRejectsInStatus: on a cluster, a tenant's routes
// over its namespace's share of ROUTER_MAX_CONFIG_BYTES are rejected with
// ConfigBudgetExceeded in their status (the message names only the route's
// own size), while another tenant's route is admitted and served.
func TestKubeConfigBudgetRejectsInStatus(t *testing.T) {
	c := kubetest.Shared(t)
	net := kubetest.NewNetNS(t)
	be := net.StartBackend(t, net.IP(), 8080, "small-pod")
	small := c.CreateNamespace(t, "budget-small-", nil).Name
	big := c.CreateNamespace(t, "budget-big-", nil).Name
	kubeService(t, c, small, "web", be)
	kubeService(t, c, big, "web", be)

	r := startKubeRouter(t, c.KubeconfigPath, map[string]string{"ROUTER_MAX_CONFIG_BYTES": "1Mi"})
	kubeRoute(t, c, small, "web", "web.budget-small.example.com", "web", nil)
	// Six routes of 40 header actions of 8 KiB values (330 KB each; the
	// API server's validation refuses 20 values of 16 KiB in one list, its
	// rules' cost limit): three fit in the big namespace's share of 1 MiB.
	value := strings.Repeat("v", 8192)
	h := &routev1.RouteHTTPHeaders{}
	for i := 0; i < 20; i++ {
		set := routev1.RouteHTTPHeaderActionUnion{Type: routev1.Set, Set: &routev1.RouteSetHTTPHeader{Value: value}}
		h.Actions.Request = append(h.Actions.Request, routev1.RouteHTTPHeader{Name: fmt.Sprintf("X-Req-%02d", i), Action: set})
		h.Actions.Response = append(h.Actions.Response, routev1.RouteHTTPHeader{Name: fmt.Sprintf("X-Resp-%02d", i), Action: set})
	}
	for i := 0; i < 6; i++ {
		route := &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: big, Name: fmt.Sprintf("r%d", i)},
			Spec: routev1.RouteSpec{Host: fmt.Sprintf("r%d.budget-big.example.com", i),
				To: routev1.RouteTargetReference{Kind: "Service", Name: "web"}, HTTPHeaders: h},
		}
		if _, err := c.Routes.RouteV1().Routes(big).Create(kctx(t), route, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	expectBackend(t, 15*time.Second, func() (response, error) { return r.httpGet("web.budget-small.example.com", "/") }, "small-pod")
	ingressOf(t, c, small, "web", "public", admitted(corev1.ConditionTrue, ""))
	eventually(t, 15*time.Second, "three big routes admitted, three rejected for the budget", func() error {
		admittedN, rejected := 0, 0
		for i := 0; i < 6; i++ {
			rt, err := c.Routes.RouteV1().Routes(big).Get(kctx(t), fmt.Sprintf("r%d", i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, ing := range rt.Status.Ingress {
				for _, cond := range ing.Conditions {
					switch {
					case ing.RouterName != "public" || cond.Type != routev1.RouteAdmitted:
					case cond.Status == corev1.ConditionTrue:
						admittedN++
					case cond.Reason == "ConfigBudgetExceeded" &&
						strings.Contains(cond.Message, "does not fit in the router's configuration size budget for its namespace") &&
						!strings.Contains(cond.Message, small):
						rejected++
					default:
						return fmt.Errorf("%s/r%d: %s %s %q", big, i, cond.Status, cond.Reason, cond.Message)
					}
				}
			}
		}
		if admittedN != 3 || rejected != 3 {
			return fmt.Errorf("%d admitted, %d rejected for the budget", admittedN, rejected)
		}
		return nil
	})
}
