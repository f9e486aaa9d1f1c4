package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	"github.com/spf13/cobra"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/openshift-router-go/router/router/ingress/controller"
)

type ingressToRouteFlags struct {
	kubeconfig     string
	leaseNamespace string
	leaseName      string
	identity       string
	noLeaderElect  bool
	resync         time.Duration
}

func newIngressToRouteCommand() *cobra.Command {
	var f ingressToRouteFlags
	cmd := &cobra.Command{
		Use:   "ingress-to-route",
		Short: "Run the ingress-to-route controller against a cluster",
		Long: `ingress-to-route keeps, for every networking.k8s.io/v1 Ingress of the cluster
that names no class or an IngressClass of controller openshift.io/ingress-to-route,
the Routes OpenShift's ingress-to-route controller would create: one per host and
path, owned by the Ingress, with its TLS secret. It never touches Routes it does
not own. Ingress status lists the canonical hostnames of the routers that
admitted its Routes. Replicas elect a leader through a Lease; only the leader
acts.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runIngressToRoute(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: KUBECONFIG, else the in-cluster configuration)")
	fl.StringVar(&f.leaseNamespace, "lease-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace, else \"default\")")
	fl.StringVar(&f.leaseName, "lease-name", "ingress-to-route", "name of the leader-election Lease")
	fl.StringVar(&f.identity, "identity", "", "this replica's identity in the Lease (default: host name and a random suffix)")
	fl.BoolVar(&f.noLeaderElect, "no-leader-elect", false, "run without leader election (a single replica only)")
	fl.DurationVar(&f.resync, "resync-interval", 10*time.Minute, "informers' resync period")
	return cmd
}

func runIngressToRoute(cmd *cobra.Command, f ingressToRouteFlags) error {
	log := klog.NewKlogr().WithName("ingress-to-route")
	cfg, err := ingressRESTConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "openshift-router-ingress-to-route"
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	rc, err := routeclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("route client: %w", err)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := controller.New(controller.Options{Kube: kc, Routes: rc, Logger: log, Resync: f.resync})
	if f.noLeaderElect {
		return c.Run(ctx)
	}
	ns := f.leaseNamespace
	if ns == "" {
		ns = podNamespace()
	}
	id := f.identity
	if id == "" {
		id = replicaIdentity()
	}
	return c.RunElected(ctx, controller.LeaseOptions{Namespace: ns, Name: f.leaseName, Identity: id})
}

// podNamespace is the namespace of the pod the process runs in, or
// "default".
func podNamespace() string {
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(inClusterTokenFile), "namespace")); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// replicaIdentity is the host name and a random suffix.
func replicaIdentity() string {
	host, _ := os.Hostname()
	return host + "-" + utilrand.String(5)
}

// withIngressToRoute runs the ingress-to-route controller beside the
// router's cluster source (--enable-ingress), under the same Lease as the
// separate command ("ingress-to-route" in the router's namespace, else the
// pod's), so that only one replica of either acts. A replica that loses the
// Lease keeps serving and stands for it again.
func withIngressToRoute(run func(context.Context) error, kc kubernetes.Interface, rc routeclient.Interface, namespace string, log logr.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		lease := controller.LeaseOptions{Namespace: namespace, Name: "ingress-to-route", Identity: replicaIdentity()}
		if lease.Namespace == "" {
			lease.Namespace = podNamespace()
		}
		go func() {
			for ctx.Err() == nil {
				c := controller.New(controller.Options{Kube: kc, Routes: rc, Logger: log, Resync: 10 * time.Minute})
				if err := c.RunElected(ctx, lease); err != nil {
					log.Error(err, "Ingress-to-route controller stopped; standing for the Lease again")
				}
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Second):
				}
			}
		}()
		log.Info("Ingress-to-route controller enabled", "lease", lease.Namespace+"/"+lease.Name, "identity", lease.Identity)
		log.Info("Warning: the ingress-to-route controller in the router needs the router's service account to read every Secret of the cluster, which also lets every route's external certificate pass the per-Secret permission check; run it as a Deployment of its own instead (adm ingress-to-route, adm router --ingress)")
		return run(ctx)
	}
}

// ingressRESTConfig loads --kubeconfig, else KUBECONFIG, else the in-cluster
// configuration.
func ingressRESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, errors.New("no cluster: give --kubeconfig FILE or KUBECONFIG, or run in a pod")
		}
		return c, nil
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return c, nil
}
