// Package deploy builds the Kubernetes objects that run the router in a
// cluster (what `openshift-router adm router` prints or applies): the
// ServiceAccount, the minimal ClusterRole and its binding, the Deployment,
// the Service, and the Secrets and ConfigMap for a default certificate,
// stats password and custom template.
package deploy

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Paths and defaults shared with the image (images/router/Dockerfile) and
// the binary; a unit test keeps them in agreement.
const (
	// WorkingDir is the router's working directory in the image
	// (ROUTER_WORKING_DIR's default).
	WorkingDir = "/var/lib/haproxy"
	// DefaultTemplatePath is where the image keeps a copy of the embedded
	// default template (OpenShift's path).
	DefaultTemplatePath = "/var/lib/haproxy/conf/haproxy-config.template"
	// CustomTemplateDir is where a --template ConfigMap is mounted.
	CustomTemplateDir = "/var/lib/haproxy/conf/custom"
	// CustomTemplateKey is the ConfigMap key (and file name) of a custom template.
	CustomTemplateKey = "haproxy-config.template"
	// DefaultCertificateDir is where a --default-cert Secret is mounted
	// (DEFAULT_CERTIFICATE_DIR), OpenShift's path.
	DefaultCertificateDir = "/etc/pki/tls/private"
	// ImageUID is the non-root user the image runs as.
	ImageUID = 1001
	// DefaultImage is the image used without --image.
	DefaultImage = "ghcr.io/openshift-router-go/router:latest"
	// DefaultStatsPort is oc adm router's --stats-port default: the port
	// of the metrics and health server (and ROUTER_LISTEN_ADDR's default).
	DefaultStatsPort = 1936
	// TerminationGracePeriodSeconds is the router pod's grace period:
	// the 45s ROUTER_GRACEFUL_SHUTDOWN_DELAY, then HAProxy's soft stop.
	TerminationGracePeriodSeconds = 120
	// DefaultStatsUser is oc adm router's --stats-user default.
	DefaultStatsUser = "admin"
	// MetricsCertDir is where a --metrics-cert-secret is mounted (oc adm
	// router's path).
	MetricsCertDir = "/etc/pki/tls/metrics"
	// MutualTLSDir is where Secret NAME-mutual-tls-auth is mounted (oc adm
	// router's path), with the keys MutualTLSCAKey and MutualTLSCRLKey.
	MutualTLSDir    = "/etc/pki/tls/client-certs"
	MutualTLSCAKey  = "ca.pem"
	MutualTLSCRLKey = "crl.pem"
	// MonitoringClusterRoleName is the ClusterRole that lets Prometheus
	// read the router's /metrics (OpenShift's name).
	MonitoringClusterRoleName = "router-monitoring"
	// DefaultPrometheusServiceAccount is OpenShift's cluster Prometheus.
	DefaultPrometheusServiceAccount = "openshift-monitoring/prometheus-k8s"
	// DefaultMonitoringCAFile is where OpenShift's Prometheus finds the
	// service CA that signs serving certificates.
	DefaultMonitoringCAFile = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
	// ServiceAccountTokenFile is the bearer token Prometheus sends.
	ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	// ClusterRoleName is the shared ClusterRole of all routers.
	ClusterRoleName = "openshift-router"
	// IngressClusterRoleName is the ClusterRole of the ingress-to-route
	// controller (adm ingress-to-route, adm router --ingress), bound to
	// its own service account; a Role of the same name in its namespace
	// holds its Lease.
	IngressClusterRoleName = "openshift-router-ingress-to-route"
	// FieldManager is the server-side apply field manager.
	FieldManager = "openshift-router"
)

// Options describe one router deployment. Empty strings are defaults;
// StatsPort is taken as given (0 disables the stats/metrics port, as with
// oc adm router --stats-port=0): callers that want oc adm router's default
// set it to DefaultStatsPort.
type Options struct {
	Name      string
	Namespace string
	Image     string
	Replicas  int32
	// NodeSelector is --selector ("k=v,k2=v2").
	NodeSelector string
	// Labels is --labels ("k=v,..."); default router=NAME.
	Labels string
	// Ports is --ports: "HTTP[:HOSTPORT],HTTPS[:HOSTPORT]".
	Ports       string
	HostNetwork bool
	HostPorts   bool
	// StatsPort is oc adm router's --stats-port: the port of the health
	// and metrics server (STATS_PORT, ROUTER_LISTEN_ADDR=0.0.0.0:PORT,
	// ROUTER_METRICS_TYPE=haproxy; the probes). 0: none (HAProxy then
	// answers /healthz on 1936 itself, as OpenShift's template does).
	StatsPort int
	// StatsUser is STATS_USERNAME (default "admin"); StatsPassword is
	// STATS_PASSWORD, kept in Secret NAME-stats (random when empty).
	StatsUser      string
	StatsPassword  string
	ServiceAccount string
	// DefaultCert is the PEM (certificate chain and private key) of
	// --default-cert; DefaultCertFile names it in errors.
	DefaultCert     []byte
	DefaultCertFile string
	// Template is the text of --template; TemplateFile names it.
	Template     []byte
	TemplateFile string

	Ciphers                        string
	StrictSNI                      bool
	DisableNamespaceOwnershipCheck bool
	CanonicalHostname              string
	// MaxConnections is ROUTER_MAX_CONNECTIONS: "auto" or a positive
	// number; empty: the router's default.
	MaxConnections  string
	RouteLabels     string
	NamespaceLabels string
	AllowedDomains  string
	DeniedDomains   string
	// Subdomain is ROUTER_SUBDOMAIN; ForceSubdomain also sets
	// ROUTER_OVERRIDE_HOSTNAME=true (only one of them).
	Subdomain      string
	ForceSubdomain string
	// Threads is ROUTER_THREADS (0: HAProxy's default).
	Threads int
	// MutualTLSAuth is ROUTER_MUTUAL_TLS_AUTH: "required", "optional" or
	// "none" (default). MutualTLSAuthCA / CRL are PEM data kept in Secret
	// NAME-mutual-tls-auth; MutualTLSAuthFilter is
	// ROUTER_MUTUAL_TLS_AUTH_FILTER.
	MutualTLSAuth        string
	MutualTLSAuthCA      []byte
	MutualTLSAuthCAFile  string
	MutualTLSAuthCRL     []byte
	MutualTLSAuthCRLFile string
	MutualTLSAuthFilter  string
	// MetricsCertSecret names a kubernetes.io/tls Secret served on the
	// stats port (ROUTER_METRICS_TLS_CERT_FILE/KEY_FILE); the Service asks
	// OpenShift's service CA for it.
	MetricsCertSecret string

	// PrometheusServiceAccount ("NAMESPACE/NAME") is bound to the
	// router-monitoring ClusterRole (get routers/metrics); "" omits it.
	PrometheusServiceAccount string
	// Monitoring adds a ServiceMonitor and a PrometheusRule (and lets the
	// Prometheus service account discover the router's endpoints).
	Monitoring bool
	// MonitoringCAFile is the CA file, in the Prometheus pod, that checks
	// the metrics certificate (with MetricsCertSecret).
	MonitoringCAFile string
	// Ingress adds the ingress-to-route controller as a Deployment of its
	// own (NAME-ingress-to-route, IngressToRouteObjects) with its own
	// service account: the controller reads every Secret, the router none.
	Ingress bool
}

// IngressClusterRoleRules are the permissions of the ingress-to-route
// controller: read Ingresses, classes, Services and Secrets, write Routes
// and Ingress status.
func IngressClusterRoleRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes/custom-host"}, Verbs: []string{"create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// IngressLeaseRules let the controller's replicas elect a leader.
func IngressLeaseRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}
}

// ClusterRoleRules are the permissions the router needs (docs/kubernetes.md,
// "Minimal RBAC").
func ClusterRoleRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
		// The bearer-token check of /metrics (TokenReview, then a
		// SubjectAccessReview on routers/metrics), and whether the router
		// may read a route's external certificate secret (router/extcert),
		// as OpenShift's router. No access to secrets: as with OpenShift,
		// a tenant grants it on its own secret with a Role
		// (docs/kubernetes.md, "External certificates").
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		// The Gateway API (docs/gateway-api.md): read GatewayClasses,
		// Gateways, HTTPRoutes, TLSRoutes and ReferenceGrants, write their
		// status. Without these the router serves Routes and Ingresses
		// alone, as OpenShift's router does.
		{APIGroups: []string{gatewayGroup}, Resources: []string{"gatewayclasses", "gateways", "httproutes", "tlsroutes", "referencegrants"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{gatewayGroup}, Resources: []string{"gatewayclasses/status", "gateways/status", "httproutes/status", "tlsroutes/status"}, Verbs: []string{"update"}},
	}
}

// gatewayGroup is the Gateway API's group.
const gatewayGroup = "gateway.networking.k8s.io"

// MonitoringClusterRoleRules let a scraper read the router's /metrics:
// the router asks for "get" on route.openshift.io routers/metrics.
func MonitoringClusterRoleRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routers/metrics"}, Verbs: []string{"get"}},
	}
}

// discoveryRules let Prometheus find the router's endpoints (in its
// namespace) for a ServiceMonitor.
func discoveryRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	}
}

type ports struct {
	http, https, httpHost, httpsHost int
}

func parsePorts(s string, hostNetwork bool) (ports, error) {
	if s == "" {
		s = "80:80,443:443"
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return ports{}, fmt.Errorf("--ports %q: want HTTP[:HOSTPORT],HTTPS[:HOSTPORT], e.g. 80:80,443:443", s)
	}
	var nums [2][2]int
	for i, p := range parts {
		cp, hp, found := strings.Cut(strings.TrimSpace(p), ":")
		c, err := parsePort(cp)
		if err != nil {
			return ports{}, fmt.Errorf("--ports %q: %w", s, err)
		}
		h := c
		if found {
			if h, err = parsePort(hp); err != nil {
				return ports{}, fmt.Errorf("--ports %q: %w", s, err)
			}
		}
		if hostNetwork && h != c {
			return ports{}, fmt.Errorf("--ports %q: with host networking the host port must equal the container port (%d:%d)", s, c, h)
		}
		nums[i] = [2]int{c, h}
	}
	if nums[0][0] == nums[1][0] || nums[0][1] == nums[1][1] {
		return ports{}, fmt.Errorf("--ports %q: the HTTP and HTTPS ports must differ", s)
	}
	return ports{http: nums[0][0], httpHost: nums[0][1], https: nums[1][0], httpsHost: nums[1][1]}, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port (1-65535)", s)
	}
	return n, nil
}

func parseLabelMap(flag, s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m, err := labels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: want key=value[,key=value...]: %w", flag, s, err)
	}
	for k, v := range m {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: key %q: %s", flag, s, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: value %q: %s", flag, s, v, strings.Join(errs, "; "))
		}
	}
	return m, nil
}

func checkDomains(flag, s string) error {
	if s == "" {
		return nil
	}
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(d)
		if errs := validation.IsDNS1123Subdomain(strings.TrimPrefix(d, "*.")); len(errs) > 0 {
			return fmt.Errorf("%s %q: domain %q: %s", flag, s, d, strings.Join(errs, "; "))
		}
	}
	return nil
}

// checkCertificate requires a certificate and its private key in pem.
func checkCertificate(file string, data []byte) error {
	var certs, keys [][]byte
	rest := data
	for i := 0; i < 10000; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certs = append(certs, pem.EncodeToMemory(b))
		} else if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			keys = append(keys, pem.EncodeToMemory(b))
		}
	}
	if len(certs) == 0 || len(keys) != 1 {
		return fmt.Errorf("--default-cert %s: want PEM with the certificate (chain) and one private key, found %d certificate(s) and %d key(s)", file, len(certs), len(keys))
	}
	if _, err := tls.X509KeyPair(bytes.Join(certs, nil), keys[0]); err != nil {
		return fmt.Errorf("--default-cert %s: %w", file, err)
	}
	return nil
}

// splitPEM returns the certificates and the private key of pem.
func splitPEM(data []byte) (crt, key []byte) {
	rest := data
	for i := 0; i < 10000; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			key = append(key, pem.EncodeToMemory(b)...)
		} else {
			crt = append(crt, pem.EncodeToMemory(b)...)
		}
	}
	return crt, key
}

// defaults fills in the defaults and validates o.
func (o *Options) defaults() (ports, error) {
	if errs := validation.IsDNS1035Label(o.Name); len(errs) > 0 {
		return ports{}, fmt.Errorf("router name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if len(o.Name) > 50 {
		return ports{}, fmt.Errorf("router name %q: at most 50 characters (object names are derived from it)", o.Name)
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return ports{}, fmt.Errorf("namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Replicas < 0 {
		return ports{}, fmt.Errorf("--replicas %d: must not be negative", o.Replicas)
	}
	if o.ServiceAccount == "" {
		o.ServiceAccount = o.Name
	}
	if errs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(errs) > 0 {
		return ports{}, fmt.Errorf("--service-account %q: %s", o.ServiceAccount, strings.Join(errs, "; "))
	}
	if err := o.checkIngress(); err != nil {
		return ports{}, err
	}
	if o.Labels == "" {
		o.Labels = "router=" + o.Name
	}
	if _, err := parseLabelMap("--labels", o.Labels); err != nil {
		return ports{}, err
	}
	if _, err := parseLabelMap("--selector", o.NodeSelector); err != nil {
		return ports{}, err
	}
	for _, s := range []struct{ flag, v string }{{"--route-labels", o.RouteLabels}, {"--namespace-labels", o.NamespaceLabels}} {
		if _, err := labels.Parse(s.v); err != nil {
			return ports{}, fmt.Errorf("%s %q: not a label selector: %w", s.flag, s.v, err)
		}
	}
	if err := checkDomains("--allowed-domains", o.AllowedDomains); err != nil {
		return ports{}, err
	}
	if err := checkDomains("--denied-domains", o.DeniedDomains); err != nil {
		return ports{}, err
	}
	p, err := parsePorts(o.Ports, o.HostNetwork)
	if err != nil {
		return ports{}, err
	}
	if o.StatsPort < 0 || o.StatsPort > 65535 {
		return ports{}, fmt.Errorf("--stats-port %d: not a port (1-65535, or 0 for none)", o.StatsPort)
	}
	if o.StatsPort == p.http || o.StatsPort == p.https {
		return ports{}, fmt.Errorf("--stats-port %d: already used by the HTTP or HTTPS port (--ports)", o.StatsPort)
	}
	if o.StatsUser == "" {
		o.StatsUser = DefaultStatsUser
	}
	for _, s := range []struct{ flag, v string }{{"--stats-user", o.StatsUser}, {"--stats-password", o.StatsPassword}} {
		if strings.ContainsAny(s.v, " \t\r\n:\"'#\\") {
			return ports{}, fmt.Errorf("%s: must not contain spaces, quotes, ':', '#' or '\\'", s.flag)
		}
	}
	if o.StatsPort != 0 && o.StatsPassword == "" {
		if o.StatsPassword, err = GeneratePassword(); err != nil {
			return ports{}, err
		}
	}
	if o.MaxConnections != "" && o.MaxConnections != "auto" {
		if n, err := strconv.Atoi(o.MaxConnections); err != nil || n < 1 {
			return ports{}, fmt.Errorf("--max-connections %q: want auto or a positive whole number", o.MaxConnections)
		}
	}
	if o.Threads < 0 {
		return ports{}, fmt.Errorf("--threads %d: must not be negative", o.Threads)
	}
	if strings.ContainsAny(o.Ciphers, " \t\r\n") {
		return ports{}, fmt.Errorf("--ciphers %q: a colon-separated OpenSSL cipher list without spaces", o.Ciphers)
	}
	if o.CanonicalHostname != "" {
		if errs := validation.IsDNS1123Subdomain(o.CanonicalHostname); len(errs) > 0 {
			return ports{}, fmt.Errorf("--router-canonical-hostname %q: %s", o.CanonicalHostname, strings.Join(errs, "; "))
		}
		if net.ParseIP(o.CanonicalHostname) != nil {
			return ports{}, fmt.Errorf("--router-canonical-hostname %q: must be a host name, not an IP address", o.CanonicalHostname)
		}
	}
	if o.Subdomain != "" && o.ForceSubdomain != "" {
		return ports{}, errors.New("only one of --subdomain, --force-subdomain can be given")
	}
	for _, s := range []struct{ flag, v string }{{"--subdomain", o.Subdomain}, {"--force-subdomain", o.ForceSubdomain}} {
		if strings.ContainsAny(s.v, " \t\r\n\"'") {
			return ports{}, fmt.Errorf("%s %q: a host name template such as ${name}-${namespace}.apps.example.com", s.flag, s.v)
		}
	}
	if o.DefaultCert != nil {
		if err := checkCertificate(o.DefaultCertFile, o.DefaultCert); err != nil {
			return ports{}, err
		}
	}
	if o.Template != nil && len(bytes.TrimSpace(o.Template)) == 0 {
		return ports{}, fmt.Errorf("--template %s: empty file", o.TemplateFile)
	}
	if err := o.checkMutualTLS(); err != nil {
		return ports{}, err
	}
	if o.MetricsCertSecret != "" {
		if errs := validation.IsDNS1123Subdomain(o.MetricsCertSecret); len(errs) > 0 {
			return ports{}, fmt.Errorf("--metrics-cert-secret %q: %s", o.MetricsCertSecret, strings.Join(errs, "; "))
		}
		if o.StatsPort == 0 {
			return ports{}, errors.New("--metrics-cert-secret needs --stats-port (the metrics port)")
		}
	}
	if o.PrometheusServiceAccount != "" {
		ns, name, ok := strings.Cut(o.PrometheusServiceAccount, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return ports{}, fmt.Errorf("--prometheus-service-account %q: want NAMESPACE/NAME", o.PrometheusServiceAccount)
		}
	}
	if o.Monitoring {
		if o.StatsPort == 0 {
			return ports{}, errors.New("--monitoring needs --stats-port (the metrics port)")
		}
		if o.PrometheusServiceAccount == "" {
			return ports{}, errors.New("--monitoring needs --prometheus-service-account (whom /metrics lets in)")
		}
	}
	if o.MonitoringCAFile == "" {
		o.MonitoringCAFile = DefaultMonitoringCAFile
	}
	return p, nil
}

// checkMutualTLS validates the --mutual-tls-auth* options.
func (o *Options) checkMutualTLS() error {
	switch o.MutualTLSAuth {
	case "", "none":
		o.MutualTLSAuth = "none"
		if o.MutualTLSAuthCA != nil || o.MutualTLSAuthCRL != nil || o.MutualTLSAuthFilter != "" {
			return errors.New("--mutual-tls-auth-ca, -crl and -filter need --mutual-tls-auth required or optional")
		}
		return nil
	case "required", "optional":
	default:
		return fmt.Errorf("--mutual-tls-auth %q: want required, optional or none", o.MutualTLSAuth)
	}
	if o.MutualTLSAuthCA != nil && !hasPEM(o.MutualTLSAuthCA, "CERTIFICATE") {
		return fmt.Errorf("--mutual-tls-auth-ca %s: no PEM certificate", o.MutualTLSAuthCAFile)
	}
	if o.MutualTLSAuthCRL != nil && !hasPEM(o.MutualTLSAuthCRL, "X509 CRL") {
		return fmt.Errorf("--mutual-tls-auth-crl %s: no PEM certificate revocation list (X509 CRL)", o.MutualTLSAuthCRLFile)
	}
	if o.MutualTLSAuthFilter != "" {
		if _, err := regexp.Compile(o.MutualTLSAuthFilter); err != nil || strings.ContainsAny(o.MutualTLSAuthFilter, "\r\n\x00") {
			return fmt.Errorf("--mutual-tls-auth-filter %q: want a regular expression on the client certificate subject", o.MutualTLSAuthFilter)
		}
	}
	return nil
}

// hasPEM reports whether data holds a PEM block of type typ.
func hasPEM(data []byte, typ string) bool {
	rest := data
	for i := 0; i < 10000; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return false
		}
		if b.Type == typ {
			return true
		}
	}
	return false
}

// GeneratePassword returns a random stats password (20 letters and
// digits; oc adm router generated one when --stats-password was not given).
func GeneratePassword() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 20)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("generating the stats password: %w", err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b), nil
}

// Objects returns the objects to create, in creation order. Options are
// validated first; invalid ones are an error naming the flag. With
// StatsPort set and no StatsPassword, a random password is generated
// (each call: pass the existing one to keep it).
func Objects(o Options) ([]runtime.Object, error) {
	p, err := o.defaults()
	if err != nil {
		return nil, err
	}
	podLabels, _ := parseLabelMap("--labels", o.Labels)
	nodeSelector, _ := parseLabelMap("--selector", o.NodeSelector)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: podLabels}
	}
	var objs []runtime.Object
	objs = append(objs,
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(o.ServiceAccount)},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"),
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}, Rules: ClusterRoleRules()},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleBindingName(o.Namespace, o.Name), Labels: podLabels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: o.ServiceAccount, Namespace: o.Namespace}}},
	)
	if o.PrometheusServiceAccount != "" {
		promNS, promName, _ := strings.Cut(o.PrometheusServiceAccount, "/")
		prom := []rbacv1.Subject{{Kind: "ServiceAccount", Name: promName, Namespace: promNS}}
		objs = append(objs,
			&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"),
				ObjectMeta: metav1.ObjectMeta{Name: MonitoringClusterRoleName}, Rules: MonitoringClusterRoleRules()},
			&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
				ObjectMeta: metav1.ObjectMeta{Name: MonitoringBindingName(promNS, promName)},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: MonitoringClusterRoleName},
				Subjects:   prom},
		)
		if o.Monitoring {
			objs = append(objs,
				&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"),
					ObjectMeta: metav1.ObjectMeta{Name: MonitoringClusterRoleName, Namespace: o.Namespace}, Rules: discoveryRules()},
				&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"),
					ObjectMeta: metav1.ObjectMeta{Name: MonitoringBindingName(promNS, promName), Namespace: o.Namespace},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: MonitoringClusterRoleName},
					Subjects:   prom},
			)
		}
	}

	if o.Ingress {
		// The controller reads every Secret: its own Deployment and
		// service account, never the router's.
		ing, err := IngressToRouteObjects(IngressToRouteOptions{Name: IngressToRouteName(o.Name), Namespace: o.Namespace,
			Image: o.Image, Replicas: DefaultIngressToRouteReplicas})
		if err != nil {
			return nil, fmt.Errorf("--ingress: %w", err)
		}
		objs = append(objs, ing...)
	}

	env := []corev1.EnvVar{
		{Name: "ROUTER_SERVICE_NAME", Value: o.Name},
		{Name: "ROUTER_SERVICE_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "ROUTER_SERVICE_HTTP_PORT", Value: strconv.Itoa(p.http)},
		{Name: "ROUTER_SERVICE_HTTPS_PORT", Value: strconv.Itoa(p.https)},
		{Name: "STATS_PORT", Value: strconv.Itoa(o.StatsPort)},
	}
	add := func(name, value string) {
		if value != "" {
			env = append(env, corev1.EnvVar{Name: name, Value: value})
		}
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if o.StatsPort != 0 {
		// oc adm router: the stats port is the metrics and health server's.
		add("ROUTER_LISTEN_ADDR", "0.0.0.0:"+strconv.Itoa(o.StatsPort))
		add("ROUTER_METRICS_TYPE", "haproxy")
		add("STATS_USERNAME", o.StatsUser)
		objs = append(objs, &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: meta(StatsSecretName(o.Name)),
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte(o.StatsPassword)}})
		env = append(env, corev1.EnvVar{Name: "STATS_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: StatsSecretName(o.Name)}, Key: "password"}}})
		if o.MetricsCertSecret != "" {
			add("ROUTER_METRICS_TLS_CERT_FILE", path.Join(MetricsCertDir, corev1.TLSCertKey))
			add("ROUTER_METRICS_TLS_KEY_FILE", path.Join(MetricsCertDir, corev1.TLSPrivateKeyKey))
			volumes = append(volumes, corev1.Volume{Name: "metrics-certs", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: o.MetricsCertSecret}}})
			mounts = append(mounts, corev1.VolumeMount{Name: "metrics-certs", MountPath: MetricsCertDir, ReadOnly: true})
		}
	}
	add("ROUTER_CIPHERS", o.Ciphers)
	if o.StrictSNI {
		add("ROUTER_STRICT_SNI", "true")
	}
	if o.DisableNamespaceOwnershipCheck {
		add("ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK", "true")
	}
	add("ROUTER_CANONICAL_HOSTNAME", o.CanonicalHostname)
	add("ROUTER_MAX_CONNECTIONS", o.MaxConnections)
	if o.Threads > 0 {
		add("ROUTER_THREADS", strconv.Itoa(o.Threads))
	}
	add("ROUTER_SUBDOMAIN", o.Subdomain)
	if o.ForceSubdomain != "" {
		add("ROUTER_SUBDOMAIN", o.ForceSubdomain)
		add("ROUTER_OVERRIDE_HOSTNAME", "true")
	}
	add("ROUTE_LABELS", o.RouteLabels)
	add("NAMESPACE_LABELS", o.NamespaceLabels)
	add("ROUTER_ALLOWED_DOMAINS", o.AllowedDomains)
	add("ROUTER_DENIED_DOMAINS", o.DeniedDomains)
	if o.MutualTLSAuth != "none" {
		add("ROUTER_MUTUAL_TLS_AUTH", o.MutualTLSAuth)
		if o.MutualTLSAuthCA != nil || o.MutualTLSAuthCRL != nil {
			data := map[string][]byte{}
			if o.MutualTLSAuthCA != nil {
				data[MutualTLSCAKey] = o.MutualTLSAuthCA
				add("ROUTER_MUTUAL_TLS_AUTH_CA", path.Join(MutualTLSDir, MutualTLSCAKey))
			}
			if o.MutualTLSAuthCRL != nil {
				data[MutualTLSCRLKey] = o.MutualTLSAuthCRL
				add("ROUTER_MUTUAL_TLS_AUTH_CRL", path.Join(MutualTLSDir, MutualTLSCRLKey))
			}
			objs = append(objs, &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: meta(MutualTLSSecretName(o.Name)),
				Type: corev1.SecretTypeOpaque, Data: data})
			volumes = append(volumes, corev1.Volume{Name: "mutual-tls-auth", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: MutualTLSSecretName(o.Name)}}})
			mounts = append(mounts, corev1.VolumeMount{Name: "mutual-tls-auth", MountPath: MutualTLSDir, ReadOnly: true})
		}
		add("ROUTER_MUTUAL_TLS_AUTH_FILTER", o.MutualTLSAuthFilter)
	}

	if o.DefaultCert != nil {
		crt, key := splitPEM(o.DefaultCert)
		objs = append(objs, &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: meta(CertSecretName(o.Name)),
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}})
		volumes = append(volumes, corev1.Volume{Name: "default-certificate", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: CertSecretName(o.Name)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "default-certificate", MountPath: DefaultCertificateDir, ReadOnly: true})
		add("DEFAULT_CERTIFICATE_DIR", DefaultCertificateDir)
	}
	if o.Template != nil {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: tm("v1", "ConfigMap"), ObjectMeta: meta(TemplateConfigMapName(o.Name)),
			Data: map[string]string{CustomTemplateKey: string(o.Template)}})
		volumes = append(volumes, corev1.Volume{Name: "template", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: TemplateConfigMapName(o.Name)}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "template", MountPath: CustomTemplateDir, ReadOnly: true})
		add("TEMPLATE_FILE", path.Join(CustomTemplateDir, CustomTemplateKey))
	}

	usesHostPorts := o.HostNetwork || o.HostPorts
	containerPorts := []corev1.ContainerPort{
		{Name: "http", ContainerPort: int32(p.http), Protocol: corev1.ProtocolTCP},
		{Name: "https", ContainerPort: int32(p.https), Protocol: corev1.ProtocolTCP},
	}
	if o.StatsPort != 0 {
		containerPorts = append(containerPorts, corev1.ContainerPort{Name: "metrics", ContainerPort: int32(o.StatsPort), Protocol: corev1.ProtocolTCP})
	}
	if usesHostPorts {
		containerPorts[0].HostPort = int32(p.httpHost)
		containerPorts[1].HostPort = int32(p.httpsHost)
		if o.HostNetwork {
			for i := range containerPorts {
				containerPorts[i].HostPort = containerPorts[i].ContainerPort
			}
		}
	}
	// Without a stats port HAProxy's own stats listener answers /healthz
	// on 1936 (OpenShift's template); it has no readiness path.
	probePort, readyPath := intstr.FromInt32(int32(o.StatsPort)), "/healthz/ready"
	if o.StatsPort == 0 {
		probePort, readyPath = intstr.FromInt32(DefaultStatsPort), "/healthz"
	}
	probe := func(p string, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: probePort, Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      1,
			FailureThreshold:    failures,
		}
	}
	maxUnavailable := intstr.FromString("25%")
	maxSurge := intstr.FromString("25%")
	if usesHostPorts {
		// A surge pod would need the same host ports on the same node.
		maxSurge = intstr.FromInt32(0)
	}
	replicas := o.Replicas
	// The router waits ROUTER_GRACEFUL_SHUTDOWN_DELAY (45s) with readiness
	// failing before it stops HAProxy, which then finishes its
	// connections: leave room for both, as the ingress operator does.
	yes, uid, grace := true, int64(ImageUID), int64(TerminationGracePeriodSeconds)
	pod := corev1.PodSpec{
		ServiceAccountName:            o.ServiceAccount,
		HostNetwork:                   o.HostNetwork,
		NodeSelector:                  nodeSelector,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid},
		Containers: []corev1.Container{{
			Name:           "router",
			Image:          o.Image,
			Env:            env,
			Ports:          containerPorts,
			LivenessProbe:  probe("/healthz", 3),
			ReadinessProbe: probe(readyPath, 3),
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			}},
			VolumeMounts: mounts,
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
		}},
		Volumes: volumes,
	}
	if o.HostNetwork {
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if usesHostPorts {
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
	objs = append(objs, &appsv1.Deployment{
		TypeMeta:   tm("apps/v1", "Deployment"),
		ObjectMeta: meta(o.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: pod},
		},
	})
	svcPorts := []corev1.ServicePort{
		{Name: "http", Port: int32(p.http), TargetPort: intstr.FromInt32(int32(p.http)), Protocol: corev1.ProtocolTCP},
		{Name: "https", Port: int32(p.https), TargetPort: intstr.FromInt32(int32(p.https)), Protocol: corev1.ProtocolTCP},
	}
	if o.StatsPort != 0 {
		svcPorts = append(svcPorts, corev1.ServicePort{Name: "metrics", Port: int32(o.StatsPort), TargetPort: probePort, Protocol: corev1.ProtocolTCP})
	}
	svc := &corev1.Service{TypeMeta: tm("v1", "Service"), ObjectMeta: meta(o.Name), Spec: corev1.ServiceSpec{Selector: podLabels, Ports: svcPorts}}
	if o.MetricsCertSecret != "" {
		// On OpenShift the service CA fills the Secret; elsewhere create it
		// (e.g. with cert-manager) for NAME.NAMESPACE.svc.
		svc.Annotations = map[string]string{ServingCertAnnotation: o.MetricsCertSecret}
	}
	objs = append(objs, svc)
	if o.Monitoring {
		objs = append(objs, ServiceMonitor(o, podLabels), PrometheusRule(o, podLabels))
	}
	return objs, nil
}

// ServingCertAnnotation asks OpenShift's service CA for a serving
// certificate Secret of the Service.
const ServingCertAnnotation = "service.beta.openshift.io/serving-cert-secret-name"

// ClusterRoleBindingName is the binding of one router's service account.
func ClusterRoleBindingName(namespace, name string) string {
	return "openshift-router:" + namespace + ":" + name
}

// MonitoringBindingName is the binding of a Prometheus service account
// to the router-monitoring role.
func MonitoringBindingName(namespace, name string) string {
	return MonitoringClusterRoleName + ":" + namespace + ":" + name
}

// CertSecretName is the Secret holding --default-cert.
func CertSecretName(name string) string { return name + "-certs" }

// StatsSecretName is the Secret holding the stats password.
func StatsSecretName(name string) string { return name + "-stats" }

// MutualTLSSecretName is the Secret holding --mutual-tls-auth-ca/-crl.
func MutualTLSSecretName(name string) string { return name + "-mutual-tls-auth" }

// TemplateConfigMapName is the ConfigMap holding --template.
func TemplateConfigMapName(name string) string { return name + "-template" }

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}
