// Package config reads the router's settings from OpenShift's environment
// variables, validating each one. Where OpenShift's router ignores a
// malformed value (its template falls back to the default, or HAProxy would
// be given it), the value is ignored with a warning that names the variable,
// the accepted form and the value used instead; values OpenShift's router
// refuses at start-up (and unsafe ones) are start-up errors.
package config

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
)

// Config is the validated router configuration.
type Config struct {
	// WorkingDir is where configuration, maps and certificates are written.
	WorkingDir string
	// TemplateFile is TEMPLATE_FILE (or --template); empty: the embedded default.
	TemplateFile string
	// ReloadScript is RELOAD_SCRIPT (or --reload).
	ReloadScript string
	// ReloadInterval is RELOAD_INTERVAL: the minimum time between reloads.
	ReloadInterval time.Duration
	HTTPPort       int
	HTTPSPort      int

	// DefaultCertificate (PEM contents), DefaultCertificatePath and
	// DefaultCertificateDir, in that precedence.
	DefaultCertificate     string
	DefaultCertificatePath string
	DefaultCertificateDir  string
	// DefaultDestinationCAPath verifies re-encrypt backends without a
	// destinationCACertificate; used only if the file exists.
	DefaultDestinationCAPath string

	// WatchEndpoints is ROUTER_WATCH_ENDPOINTS: use Endpoints instead of
	// EndpointSlices.
	WatchEndpoints bool
	// ExtendedValidation is EXTENDED_VALIDATION (default true).
	ExtendedValidation bool
	// ExternalCertificates is ROUTER_ENABLE_EXTERNAL_CERTIFICATE (default
	// true, as OpenShift): routes' spec.tls.externalCertificate is served.
	ExternalCertificates bool
	// BackendProcessEndpoints is ROUTER_BACKEND_PROCESS_ENDPOINTS ("" or "shuffle").
	BackendProcessEndpoints string
	DisableHTTP2            bool
	// MaxConnections is ROUTER_MAX_CONNECTIONS (HAProxy's global maxconn;
	// default 50000); 0 is "auto": no maxconn line, HAProxy derives it
	// from its open-files limit.
	MaxConnections int
	// MaxDynamicServers is ROUTER_MAX_DYNAMIC_SERVERS: the spare server
	// slots of every backend (endpoints added between reloads go there
	// without a reload, health-checked where the open-files budget
	// affords it), unless a route sets router.openshift.io/pool-size.
	// 0 by default (OpenShift deprecated the variable): endpoints without
	// a slot are added through the runtime API ("add server") instead,
	// which costs HAProxy nothing until they come.
	MaxDynamicServers int
	// SpareBackends is ROUTER_SPARE_BACKENDS (router addition): the empty
	// backends of each shape that several routes' backends share (a
	// passthrough route, a route without a sticky cookie of its own)
	// loaded with every configuration, for routes of that shape added
	// before the next reload (default 8; 0: none).
	SpareBackends int

	// StatsPort is the stats port (ROUTER_LISTEN_ADDR's port, else
	// STATS_PORT; 0: none); StatsUser and StatsPassword the credentials
	// (STATS_USERNAME/STATS_PASSWORD or the *_FILE pair). See metrics.go.
	StatsPort     int
	StatsUser     string
	StatsPassword string

	// Admission holds the route admission settings (admission.go).
	Admission Admission
	// Metrics holds the metrics and health server settings (metrics.go).
	Metrics Metrics
	// Kube holds the Kubernetes API source settings (kube.go).
	Kube Kube
	// HAProxy holds the router-wide HAProxy settings (haproxy.go).
	HAProxy model.HAProxySettings
	// Process holds the HAProxy sidecar and shutdown settings (process.go).
	Process Process

	// Warnings are values that were accepted with a change (e.g. a time
	// clipped to HAProxy's maximum); the router logs them at start.
	Warnings []string
	// Notices name OpenShift variables that are set and accepted but need
	// nothing here, with the reason; the router logs them at start.
	Notices []string
}

// withoutEffect are OpenShift's variables this router accepts and needs
// nothing for, with the reason (docs/env.md lists them too).
var withoutEffect = []struct{ name, why string }{
	{"ROUTER_HAPROXY_CONFIG_MANAGER", dcmWhy},
	{"ROUTER_BLUEPRINT_ROUTE_NAMESPACE", dcmWhy},
	{"ROUTER_BLUEPRINT_ROUTE_LABELS", dcmWhy},
	{"ROUTER_BLUEPRINT_ROUTE_POOL_SIZE", dcmWhy},
	{"COMMIT_INTERVAL", dcmWhy},
	{"ROUTER_BIND_PORTS_BEFORE_SYNC", "OpenShift's router uses it only to leave its admin-socket check out of /healthz; this router's /healthz has no such check"},
	{"UPGRADE_VALIDATION", "OpenShift's upgrade validation flags routes a future HAProxy version could not serve; this router validates against the HAProxy it runs (haproxy -c)"},
	{"HAPROXY_MAX_SHUTDOWN_TIMEOUT", "OpenShift's HAProxy container entrypoint (start-haproxy, for HAProxy run as a sidecar) reads it to bound HAProxy's soft stop; the router never stops a sidecar HAProxy, and the HAProxy it runs itself is bounded by ROUTER_MAX_SHUTDOWN_TIMEOUT, as OpenShift's reload script bounds it"},
	{"DEBUG_UPGRADE_VALIDATION_FORCE_ADD_CONDITION", "a testing switch of OpenShift's upgrade validation, which this router does not have"},
	{"DEBUG_UPGRADE_VALIDATION_FORCE_REMOVE_CONDITION", "a testing switch of OpenShift's upgrade validation, which this router does not have"},
}

const dcmWhy = "OpenShift's dynamic configuration manager applies endpoint changes without reloads; this router always does (HAProxy's runtime API: servers added, set and removed at runtime; spare server slots with ROUTER_MAX_DYNAMIC_SERVERS)"

// Getenv looks a variable up; os.LookupEnv in production.
type Getenv func(string) (string, bool)

// FromEnv reads the configuration. All problems are reported together.
func FromEnv(getenv Getenv) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	p := parser{getenv: getenv}
	c := &Config{
		WorkingDir:               p.str("ROUTER_WORKING_DIR", "/var/lib/haproxy"),
		TemplateFile:             p.str("TEMPLATE_FILE", ""),
		ReloadScript:             p.str("RELOAD_SCRIPT", ""),
		ReloadInterval:           p.duration("RELOAD_INTERVAL", 5*time.Second),
		HTTPPort:                 p.port("ROUTER_SERVICE_HTTP_PORT", 80),
		HTTPSPort:                p.port("ROUTER_SERVICE_HTTPS_PORT", 443),
		DefaultCertificate:       p.str("DEFAULT_CERTIFICATE", ""),
		DefaultCertificatePath:   p.str("DEFAULT_CERTIFICATE_PATH", ""),
		DefaultCertificateDir:    p.str("DEFAULT_CERTIFICATE_DIR", ""),
		DefaultDestinationCAPath: p.str("DEFAULT_DESTINATION_CA_PATH", "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt"),
		WatchEndpoints:           p.boolean("ROUTER_WATCH_ENDPOINTS", false),
		ExtendedValidation:       p.boolean("EXTENDED_VALIDATION", true),
		ExternalCertificates:     p.boolean("ROUTER_ENABLE_EXTERNAL_CERTIFICATE", true),
		BackendProcessEndpoints:  p.oneOf("ROUTER_BACKEND_PROCESS_ENDPOINTS", "", "", "shuffle"),
		DisableHTTP2:             p.boolean("ROUTER_DISABLE_HTTP2", false),
		MaxConnections:           p.maxConnections("ROUTER_MAX_CONNECTIONS"),
		MaxDynamicServers:        p.intRange("ROUTER_MAX_DYNAMIC_SERVERS", 0, 0, annotations.MaxPoolSize),
		SpareBackends:            p.intRange("ROUTER_SPARE_BACKENDS", 8, 0, 64),
	}
	c.Admission = p.admission()
	c.Metrics = p.metrics()
	c.Kube = p.kube()
	c.HAProxy = p.haproxy()
	c.Process = p.process()
	p.stats(c) // metrics.go: stats port, metrics address, credentials
	if c.HTTPPort == c.HTTPSPort && c.HTTPPort != 0 {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_SERVICE_HTTP_PORT and ROUTER_SERVICE_HTTPS_PORT must differ (both %d)", c.HTTPPort))
	}
	if len(p.errs) > 0 {
		return nil, joinErrors(p.errs)
	}
	c.Warnings = p.warnings
	for _, w := range withoutEffect {
		if v, ok := getenv(w.name); ok && strings.TrimSpace(v) != "" {
			c.Notices = append(c.Notices, fmt.Sprintf("%s=%q is accepted and needs nothing here: %s", w.name, v, w.why))
		}
	}
	return c, nil
}

type parser struct {
	getenv   Getenv
	errs     []error
	warnings []string
}

func (p *parser) str(name, def string) string {
	if v, ok := p.getenv(name); ok && v != "" {
		return v
	}
	return def
}

// ignore records a malformed value that OpenShift's router ignores: a
// warning naming the variable, the accepted form and the value used.
func (p *parser) ignore(name, v, want string, using any) {
	u := fmt.Sprint(using)
	if u == "" {
		u = "none"
	}
	p.warnings = append(p.warnings, fmt.Sprintf("%s=%q: %s; ignored, using %s", name, v, want, u))
}

// boolean reads a boolean as OpenShift's isTrue does: anything
// strconv.ParseBool does not accept is false (with a warning here).
func (p *parser) boolean(name string, def bool) bool {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.ignore(name, v, "want true or false", "false (as OpenShift reads it)")
		return false
	}
	return b
}

func (p *parser) port(name string, def int) int {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 65535 {
		p.ignore(name, v, "want a port number 1-65535", def)
		return def
	}
	return n
}

func (p *parser) positive(name string, def int) int {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a positive whole number", name, v))
		return def
	}
	return n
}

// DefaultMaxConnections is OpenShift's default of ROUTER_MAX_CONNECTIONS.
const DefaultMaxConnections = 50000

// maxConnections reads ROUTER_MAX_CONNECTIONS as OpenShift's template does:
// unset or empty is 50000, a whole number is itself, and "auto" (or, with a
// warning here, anything else that is not a positive whole number) leaves
// maxconn to HAProxy (0).
func (p *parser) maxConnections(name string) int {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return DefaultMaxConnections
	case "auto":
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		p.ignore(name, v, "want a positive whole number or auto", "auto (HAProxy derives maxconn from its open-files limit, as OpenShift does)")
		return 0
	}
	return n
}

func (p *parser) intRange(name string, def, lo, hi int) int {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		p.ignore(name, v, fmt.Sprintf("want a whole number from %d to %d", lo, hi), def)
		return def
	}
	return n
}

func (p *parser) portOrZero(name string, def int) int {
	v, ok := p.getenv(name)
	if ok && strings.TrimSpace(v) == "0" {
		return 0
	}
	return p.port(name, def)
}

func (p *parser) oneOf(name, def string, allowed ...string) string {
	v, ok := p.getenv(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.ignore(name, v, fmt.Sprintf("want one of %q", allowed), def)
	return def
}

// duration parses a Go duration or a plain number of seconds, as OpenShift's
// RELOAD_INTERVAL accepts both ("5s", "5").
func (p *parser) duration(name string, def time.Duration) time.Duration {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	v = strings.TrimSpace(v)
	d, err := parseSecondsOrDuration(v)
	if err != nil || d < 0 {
		p.ignore(name, v, "want a duration such as 5s or 500ms (or whole seconds)", def)
		return def
	}
	return d
}

// parseSecondsOrDuration parses a whole number of seconds ("5") or a Go
// duration ("5s", "500ms"), the two forms OpenShift's duration variables
// (RELOAD_INTERVAL, ROUTER_METRICS_HAPROXY_*) accept. It is the one parser
// of those variables; HAProxy time values are syntax.ClipTimeout's.
func parseSecondsOrDuration(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if int64(n) > math.MaxInt64/int64(time.Second) || int64(n) < math.MinInt64/int64(time.Second) {
			return 0, fmt.Errorf("%q seconds out of range", v)
		}
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(v)
}

func joinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("invalid router configuration: %s", strings.Join(msgs, "; "))
}

// CheckConfigPath reports whether a file path can be written into
// haproxy.config as one word: no white space, quotes, '#', '\\', '$' or
// control characters.
func CheckConfigPath(path string) error {
	for _, c := range path {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("\"'#\\$`", c) {
			return fmt.Errorf("must not contain white space, quotes, '#', '\\', '$' or control characters (it is written into haproxy.config)")
		}
	}
	return nil
}
