package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	routeclient "github.com/openshift/client-go/route/clientset/versioned"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/openshift-router-go/router/router/config"
	"github.com/openshift-router-go/router/router/extcert"
	"github.com/openshift-router-go/router/router/gatewaystatus"
	"github.com/openshift-router-go/router/router/source/kube"
	"github.com/openshift-router-go/router/router/source/manifests"
	"github.com/openshift-router-go/router/router/status"
	"github.com/openshift-router-go/router/router/store"
)

// inClusterTokenFile exists in pods that run with a service account.
const inClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// source is what feeds the store: the manifests directory or the cluster.
type source struct {
	name string
	run  func(ctx context.Context) error
	// status writes route status (cluster only); nil otherwise.
	status *status.Writer
	// gatewayStatus writes the Gateway API's status (cluster only); nil
	// otherwise.
	gatewayStatus *gatewaystatus.Writer
	desc          []any
	// metricsKube is a client of the cluster (cluster only) with a rate
	// budget of its own: the metrics server authorises bearer tokens with
	// it, never waiting behind the router's other requests.
	metricsKube kubernetes.Interface
	// extcert resolves external certificates with the cluster (cluster
	// only; nil: the pipeline's own, from the store's secrets).
	extcert *extcert.Resolver
	// gatewaySecrets watches the Secrets of Gateways' HTTPS listeners
	// (cluster only; in the manifests directory they are files).
	gatewaySecrets *kube.GatewaySecrets
	// namespaceLabels is NAMESPACE_LABELS (cluster only): the Gateways
	// served, as the routes, are those of the namespaces it selects.
	namespaceLabels labels.Selector
}

// chooseSource picks the source: --manifests when given; otherwise the
// cluster from --kubeconfig, KUBECONFIG or the in-cluster configuration.
func chooseSource(ctx context.Context, f runFlags, cfg *config.Config, st *store.Store, log logr.Logger) (*source, error) {
	if f.manifests != "" {
		if fi, err := os.Stat(f.manifests); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--manifests %q: not a readable directory", f.manifests)
		}
		m := manifests.New(f.manifests, st, log.WithName("manifests"))
		return &source{name: manifests.SourceName, run: m.Run, desc: []any{"manifests", f.manifests}}, nil
	}
	return clusterSource(ctx, f, cfg, st, log)
}

// clusterSource is the source of the cluster: its informers, and the
// secrets and status writers that go with them.
func clusterSource(ctx context.Context, f runFlags, cfg *config.Config, st *store.Store, log logr.Logger) (*source, error) {
	restConfig, where, err := f.upstream.restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	if restConfig == nil {
		return nil, errors.New("no source of routes: give --manifests DIR (a directory of YAML manifests), or --kubeconfig FILE / KUBECONFIG, or run in a pod")
	}
	restConfig.UserAgent = "openshift-router"
	kc, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	rc, err := routeclient.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("route client: %w", err)
	}
	gc, err := gatewayclient.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
	}
	namespace := f.upstream.namespace()
	if err := kube.CheckReachable(ctx, kc, rc, namespace, 15*time.Second); err != nil {
		return nil, fmt.Errorf("%s (%s): %w", where, restConfig.Host, err)
	}
	k := cfg.Kube
	out := &source{name: kube.SourceName, namespaceLabels: k.NamespaceLabels, desc: []any{"cluster", restConfig.Host, "routerName", k.RouterName,
		"routeLabels", k.RouteLabels.String(), "namespaceLabels", fmt.Sprint(k.NamespaceLabels), "namespace", namespace}}
	// The writers are made below; the informers only run after this returns.
	src := kube.New(kube.Options{
		Kube: kc, Routes: rc, Gateway: gc, Sink: st, Logger: log.WithName("kube"),
		RouteLabels: k.RouteLabels, RouteFields: k.RouteFields, NamespaceLabels: k.NamespaceLabels, Namespace: namespace,
		WatchEndpoints: cfg.WatchEndpoints, Resync: k.ResyncInterval,
		StatusChanged: func(namespace, name string) {
			if out.status != nil {
				out.status.Recheck(namespace, name)
			}
		},
		GatewayStatusChanged: func(resource, namespace, name string) {
			if out.gatewayStatus != nil {
				out.gatewayStatus.Recheck(resource, namespace, name)
			}
		},
	})
	out.run = src.Run
	if v := os.Getenv("ROUTER_ENABLE_INGRESS"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			log.Info("Warning: ROUTER_ENABLE_INGRESS is not a boolean, using the default false", "value", v)
		}
	}
	if f.enableIngress {
		out.run = withIngressToRoute(src.Run, kc, rc, namespace, log.WithName("ingress-to-route"))
	}
	if out.metricsKube, err = ownClient(restConfig, "metrics-auth", metricsAuthQPS, metricsAuthBurst); err != nil {
		return nil, err
	}
	if err := out.watchSecrets(ctx, restConfig, cfg, st, log); err != nil {
		return nil, err
	}
	if k.UpdateStatus {
		out.status = status.New(status.Options{Client: rc, Routes: src, Logger: log.WithName("status"),
			RouterName: k.RouterName, CanonicalHostname: k.CanonicalHostname})
		out.gatewayStatus = gatewaystatus.New(gatewaystatus.Options{Client: gc, Cache: src, Logger: log.WithName("gateway-status"),
			ControllerName: k.GatewayControllerName})
	}
	return out, nil
}

// watchSecrets sets up the Secrets named by routes' external certificates
// and by Gateways' HTTPS listeners: checked and watched one by one, with a
// client of their own, apart from the routes' informers and status writes.
func (out *source) watchSecrets(ctx context.Context, restConfig *rest.Config, cfg *config.Config, st *store.Store, log logr.Logger) error {
	ec, err := ownClient(restConfig, "secrets", extcertQPS, extcertBurst)
	if err != nil {
		return err
	}
	watches := kube.NewSecretWatches(ctx, ec, st, cfg.Kube.ResyncInterval, log.WithName("secrets"))
	out.gatewaySecrets = kube.NewGatewaySecrets(ctx, watches, &extcert.Kube{Client: ec, Logger: log.WithName("gateway-secrets")}, st.Poke, log.WithName("gateway-secrets"))
	if cfg.ExternalCertificates {
		out.extcert = clusterExtcert(ec, watches, st, log.WithName("extcert"))
	}
	return nil
}

// clusterExtcert returns the resolver of external certificates that asks
// the cluster with client ec, its secrets watched by watches.
func clusterExtcert(ec kubernetes.Interface, watches *kube.SecretWatches, st *store.Store, log logr.Logger) *extcert.Resolver {
	return extcert.New(extcert.Options{
		Enabled: true,
		Checker: &extcert.Kube{Client: ec, Logger: log},
		Watcher: watches,
		Changed: st.Poke,
		Logger:  log,
	})
}

// The rate budgets (requests per second, burst) of the clients that have
// their own; the routes' informers and status writes keep client-go's
// default (5, 10).
const (
	// extcertQPS, extcertBurst: external certificates' permission checks
	// (three SubjectAccessReviews and a GET per secret) and secret watches.
	extcertQPS, extcertBurst = 20, 40
	// metricsAuthQPS, metricsAuthBurst: /metrics bearer-token
	// TokenReviews and SubjectAccessReviews.
	metricsAuthQPS, metricsAuthBurst = 10, 20
)

// ownClient returns a client of the cluster for one purpose with a rate
// limiter of its own (qps, burst), so that purpose never waits for another
// one's requests.
func ownClient(c *rest.Config, purpose string, qps float32, burst int) (kubernetes.Interface, error) {
	cc := rest.CopyConfig(c)
	cc.QPS, cc.Burst, cc.RateLimiter = qps, burst, nil
	cc.UserAgent = c.UserAgent + "/" + purpose
	kc, err := kubernetes.NewForConfig(cc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client (%s): %w", purpose, err)
	}
	return kc, nil
}

// clusterConfig returns the client configuration from a kubeconfig file
// (flag, then KUBECONFIG) or the in-cluster service account; nil if none.
func clusterConfig(kubeconfig string) (*rest.Config, string, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return c, "kubeconfig " + kubeconfig, nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		if _, err := os.Stat(inClusterTokenFile); err == nil {
			c, err := rest.InClusterConfig()
			if err != nil {
				return nil, "", fmt.Errorf("in-cluster configuration: %w", err)
			}
			return c, "in-cluster configuration", nil
		}
	}
	return nil, "", nil
}
