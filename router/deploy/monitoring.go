package deploy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Prometheus Operator's API (monitoring.coreos.com/v1): CRDs that a
// cluster may lack, so these objects are unstructured and Apply skips
// them when the API is not there.
const (
	MonitoringAPIVersion = "monitoring.coreos.com/v1"
	// AlertRuleGroup names the PrometheusRule's group of alerts.
	AlertRuleGroup = "openshift-router.rules"
)

// Alert is one alerting rule of PrometheusRule.
type Alert struct {
	Name        string
	Expr        string
	For         string
	Severity    string
	Summary     string
	Description string
	Message     string
}

// Alerts returns the alerts OpenShift ships for its routers (the ingress
// operator's HAProxyReloadFail and HAProxyDown: same names, thresholds,
// severities and texts), scoped to one router's series: the Prometheus
// Operator labels a ServiceMonitor's series with the Service's name (job)
// and namespace, so alerts of several routers do not repeat each other.
func Alerts(namespace, name string) []Alert {
	sel := fmt.Sprintf(`{job=%q,namespace=%q}`, name, namespace)
	return []Alert{
		{
			Name: "HAProxyReloadFail", Expr: "template_router_reload_failure" + sel + " == 1", For: "5m", Severity: "warning",
			Summary:     "HAProxy reload failure",
			Description: "This alert fires when HAProxy fails to reload its configuration, which will result in the router not picking up recently created or modified routes.",
			Message:     "HAProxy reloads are failing on {{ $labels.pod }}. Router is not respecting recently created or modified routes",
		},
		{
			Name: "HAProxyDown", Expr: "haproxy_up" + sel + " == 0", For: "5m", Severity: "critical",
			Summary:     "HAProxy is down",
			Description: "This alert fires when metrics report that HAProxy is down.",
			Message:     "HAProxy metrics are reporting that HAProxy is down on pod {{ $labels.namespace }} / {{ $labels.pod }}",
		},
	}
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ServiceMonitor scrapes the router's Service port "metrics" every 30s
// with Prometheus' service account token (the router checks it with a
// TokenReview and a SubjectAccessReview), over HTTPS when a metrics
// certificate is configured, as the ingress operator's ServiceMonitor.
func ServiceMonitor(o Options, labels map[string]string) *unstructured.Unstructured {
	endpoint := map[string]any{
		"port":            "metrics",
		"path":            "/metrics",
		"interval":        "30s",
		"scheme":          "http",
		"bearerTokenFile": ServiceAccountTokenFile,
	}
	if o.MetricsCertSecret != "" {
		endpoint["scheme"] = "https"
		endpoint["tlsConfig"] = map[string]any{
			"caFile":     o.MonitoringCAFile,
			"serverName": o.Name + "." + o.Namespace + ".svc",
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MonitoringAPIVersion,
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": o.Name, "namespace": o.Namespace, "labels": stringMap(labels)},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchNames": []any{o.Namespace}},
			"selector":          map[string]any{"matchLabels": stringMap(labels)},
			"endpoints":         []any{endpoint},
		},
	}}
}

// PrometheusRule holds Alerts for one router.
func PrometheusRule(o Options, labels map[string]string) *unstructured.Unstructured {
	var rules []any
	for _, a := range Alerts(o.Namespace, o.Name) {
		rules = append(rules, map[string]any{
			"alert":  a.Name,
			"expr":   a.Expr,
			"for":    a.For,
			"labels": map[string]any{"severity": a.Severity},
			"annotations": map[string]any{
				"summary":     a.Summary,
				"description": a.Description,
				"message":     a.Message,
			},
		})
	}
	l := stringMap(labels)
	l["role"] = "alert-rules"
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MonitoringAPIVersion,
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": o.Name, "namespace": o.Namespace, "labels": l},
		"spec": map[string]any{
			"groups": []any{map[string]any{"name": AlertRuleGroup, "rules": rules}},
		},
	}}
}
