package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultGracefulShutdownDelay is OpenShift's ROUTER_GRACEFUL_SHUTDOWN_DELAY
// default: the time almost every cloud load balancer needs to take an
// unhealthy endpoint out of rotation.
const DefaultGracefulShutdownDelay = 45 * time.Second

// DefaultMaxReloadWaitTime is OpenShift's MAX_RELOAD_WAIT_TIME default
// (reload-haproxy's max_wait_time, seconds).
const DefaultMaxReloadWaitTime = 30 * time.Second

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
	// MaxReloadWaitTime is MAX_RELOAD_WAIT_TIME (whole seconds, default
	// 30): how long a reload waits for the new HAProxy to serve before it
	// counts as failed (OpenShift's reload script waits that long for the
	// HTTP port to answer after a reload).
	MaxReloadWaitTime time.Duration
	// MaxShutdownTimeout is ROUTER_MAX_SHUTDOWN_TIMEOUT (whole seconds,
	// default MAX_RELOAD_WAIT_TIME's value): how long HAProxy's soft stop
	// (SIGUSR1: finish the open connections) may take when the router
	// stops before HAProxy is stopped hard (SIGTERM), as OpenShift's reload
	// script does when the router shuts down.
	MaxShutdownTimeout time.Duration
}

func (p *parser) process() Process {
	wait := p.seconds("MAX_RELOAD_WAIT_TIME", DefaultMaxReloadWaitTime)
	return Process{
		HAProxyAdminSocket:    strings.TrimSpace(p.str("ROUTER_HAPROXY_ADMIN_UNIX_SOCKET", "")),
		GracefulShutdownDelay: p.shutdownDelay("ROUTER_GRACEFUL_SHUTDOWN_DELAY", DefaultGracefulShutdownDelay),
		MaxReloadWaitTime:     wait,
		MaxShutdownTimeout:    p.seconds("ROUTER_MAX_SHUTDOWN_TIMEOUT", wait),
	}
}

// seconds reads a whole number of seconds as OpenShift's reload script
// does (^[0-9]+$; unset or empty: the default). Anything else is a warning
// and the default, as the script's "Invalid max reload wait time, using
// default".
func (p *parser) seconds(name string, def time.Duration) time.Duration {
	v, ok := p.getenv(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil {
		p.ignore(name, v, "not a whole number of seconds", def)
		return def
	}
	return time.Duration(n) * time.Second
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
