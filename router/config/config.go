// Package config reads the router's settings from OpenShift's environment
// variables, validating each one. Malformed values are start-up errors that
// name the variable and the accepted form.
package config

import (
	"fmt"
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
	// BackendProcessEndpoints is ROUTER_BACKEND_PROCESS_ENDPOINTS ("" or "shuffle").
	BackendProcessEndpoints string
	DisableHTTP2            bool
	// MaxConnections is ROUTER_MAX_CONNECTIONS (HAProxy's global maxconn).
	MaxConnections int
	// MaxDynamicServers is ROUTER_MAX_DYNAMIC_SERVERS: the spare server
	// slots of every backend (endpoints added between reloads go there
	// without a reload), unless a route sets router.openshift.io/pool-size.
	MaxDynamicServers int

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

	// Warnings are values that were accepted with a change (e.g. a time
	// clipped to HAProxy's maximum); the router logs them at start.
	Warnings []string
}

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
		BackendProcessEndpoints:  p.oneOf("ROUTER_BACKEND_PROCESS_ENDPOINTS", "", "", "shuffle"),
		DisableHTTP2:             p.boolean("ROUTER_DISABLE_HTTP2", false),
		MaxConnections:           p.positive("ROUTER_MAX_CONNECTIONS", 20000),
		MaxDynamicServers:        p.intRange("ROUTER_MAX_DYNAMIC_SERVERS", 5, 0, annotations.MaxPoolSize),
	}
	c.Admission = p.admission()
	c.Metrics = p.metrics()
	c.Kube = p.kube()
	c.HAProxy = p.haproxy()
	p.stats(c) // metrics.go: stats port, metrics address, credentials
	if c.HTTPPort == c.HTTPSPort && c.HTTPPort != 0 {
		p.errs = append(p.errs, fmt.Errorf("ROUTER_SERVICE_HTTP_PORT and ROUTER_SERVICE_HTTPS_PORT must differ (both %d)", c.HTTPPort))
	}
	if len(p.errs) > 0 {
		return nil, joinErrors(p.errs)
	}
	c.Warnings = p.warnings
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

func (p *parser) boolean(name string, def bool) bool {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want true or false", name, v))
		return def
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
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a port number 1-65535", name, v))
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

func (p *parser) intRange(name string, def, lo, hi int) int {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi))
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
	p.errs = append(p.errs, fmt.Errorf("%s=%q: want one of %q", name, v, allowed))
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
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a duration such as 5s or 500ms (or whole seconds)", name, v))
		return def
	}
	return d
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
