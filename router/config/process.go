package config

import (
	"fmt"
	"strings"
	"time"
)

// DefaultGracefulShutdownDelay is OpenShift's ROUTER_GRACEFUL_SHUTDOWN_DELAY
// default: the time almost every cloud load balancer needs to take an
// unhealthy endpoint out of rotation.
const DefaultGracefulShutdownDelay = 45 * time.Second

// Process holds how the router runs HAProxy and stops.
type Process struct {
	// HAProxyAdminSocket is ROUTER_HAPROXY_ADMIN_UNIX_SOCKET: the master
	// CLI socket of a HAProxy that runs as a sidecar (started by someone
	// else with -W -S). When set, the router does not start HAProxy and
	// reloads it through this socket.
	HAProxyAdminSocket string
	// GracefulShutdownDelay is ROUTER_GRACEFUL_SHUTDOWN_DELAY: on SIGTERM
	// readiness fails at once, then the router waits this long, with
	// HAProxy serving, before it stops.
	GracefulShutdownDelay time.Duration
}

func (p *parser) process() Process {
	return Process{
		HAProxyAdminSocket:    strings.TrimSpace(p.str("ROUTER_HAPROXY_ADMIN_UNIX_SOCKET", "")),
		GracefulShutdownDelay: p.shutdownDelay("ROUTER_GRACEFUL_SHUTDOWN_DELAY", DefaultGracefulShutdownDelay),
	}
}

// shutdownDelay parses a Go duration as OpenShift does (time.ParseDuration;
// a bare number such as "45" is not one). A malformed value is a warning and
// the default is used; a negative one means no delay, as in OpenShift.
func (p *parser) shutdownDelay(name string, def time.Duration) time.Duration {
	v, ok := p.getenv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		p.warnings = append(p.warnings, fmt.Sprintf("%s=%q is not a duration such as 45s or 1m30s: using the default %s", name, v, def))
		return def
	}
	if d < 0 {
		return 0
	}
	return d
}
