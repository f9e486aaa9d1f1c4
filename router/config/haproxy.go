package config

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/templates"
)

// Cipher profiles accepted in ROUTER_CIPHERS. The lists are OpenSSL names
// for TLS 1.2 and below, after Mozilla's Server Side TLS recommendations as
// OpenShift uses them: intermediate (the default) is OpenShift's
// Intermediate TLS profile; modern drops its DHE suites (ECDHE with AEAD
// only); old is OpenShift's Old TLS profile (adds CBC, SHA-1 MAC, RSA key
// exchange and 3DES suites).
var cipherProfiles = map[string]string{
	"modern": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" +
		"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305",
	"intermediate": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" +
		"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" +
		"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384",
	"old": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" +
		"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" +
		"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305:" +
		"ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:" +
		"ECDHE-ECDSA-AES256-SHA384:ECDHE-RSA-AES256-SHA384:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES256-SHA:" +
		"DHE-RSA-AES128-SHA256:DHE-RSA-AES256-SHA256:AES128-GCM-SHA256:AES256-GCM-SHA384:" +
		"AES128-SHA256:AES256-SHA256:AES128-SHA:AES256-SHA:DES-CBC3-SHA",
}

// DefaultCipherSuites is the default of ROUTER_CIPHERSUITES (TLS 1.3).
const DefaultCipherSuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

// DefaultCompressionMIME is the default of ROUTER_COMPRESSION_MIME.
const DefaultCompressionMIME = "text/html text/plain text/css"

var (
	// cipherToken is one element of an OpenSSL cipher list: a name, alias
	// or combination ("kEDH+AESGCM"), optionally prefixed by !, - or +,
	// or a directive such as @STRENGTH or @SECLEVEL=1.
	cipherToken      = regexp.MustCompile(`^[!+-]?@?[A-Za-z0-9][A-Za-z0-9_.+=-]*$`)
	cipherSuiteToken = regexp.MustCompile(`^TLS_[A-Z0-9_]+$`)
	mimeToken        = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9*][A-Za-z0-9._+*-]*$`)
	syslogPathToken  = regexp.MustCompile(`^/[A-Za-z0-9._/+-]+$`)
	// headerNameToken is an HTTP header name made of the token characters
	// (RFC 9110) that are plain in an HAProxy configuration line (not
	// # $ % & ' " ` or \).
	headerNameToken = regexp.MustCompile(`^[A-Za-z0-9!*+.^_|~-]{1,256}$`)
)

var (
	tlsVersions       = []string{"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"}
	balanceAlgos      = []string{"roundrobin", "leastconn", "source", "random"}
	logLevels         = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}
	logFacilities     = []string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2", "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}
	maxHAProxyThreads = 64
)

// haproxy reads the router-wide HAProxy settings.
func (p *parser) haproxy() model.HAProxySettings {
	h := model.HAProxySettings{
		StrictSNI:            p.boolean("ROUTER_STRICT_SNI", false),
		Ciphers:              p.ciphers("ROUTER_CIPHERS"),
		CipherSuites:         p.cipherSuites("ROUTER_CIPHERSUITES"),
		SSLMinVersion:        p.oneOfTrimmed("SSL_MIN_VERSION", "TLSv1.2", tlsVersions...),
		SSLMaxVersion:        p.oneOfTrimmed("SSL_MAX_VERSION", "", tlsVersions...),
		ConnectTimeout:       p.haproxyTime("ROUTER_DEFAULT_CONNECT_TIMEOUT", "5s"),
		ClientTimeout:        p.haproxyTime("ROUTER_DEFAULT_CLIENT_TIMEOUT", "30s"),
		ClientFinTimeout:     p.haproxyTime("ROUTER_CLIENT_FIN_TIMEOUT", "1s"),
		ServerTimeout:        p.haproxyTime("ROUTER_DEFAULT_SERVER_TIMEOUT", "30s"),
		ServerFinTimeout:     p.haproxyTime("ROUTER_DEFAULT_SERVER_FIN_TIMEOUT", "1s"),
		TunnelTimeout:        p.haproxyTime("ROUTER_DEFAULT_TUNNEL_TIMEOUT", "1h"),
		HTTPRequestTimeout:   p.haproxyTime("ROUTER_SLOWLORIS_TIMEOUT", "10s"),
		HTTPKeepAliveTimeout: p.haproxyTime("ROUTER_SLOWLORIS_HTTP_KEEPALIVE", "300s"),
		InspectDelay:         p.haproxyTime("ROUTER_INSPECT_DELAY", "5s"),
		BackendCheckInterval: p.haproxyTime("ROUTER_BACKEND_CHECK_INTERVAL", "5000ms"),
		HardStopAfter:        p.haproxyTime("ROUTER_HARD_STOP_AFTER", ""),
		IPMode:               p.oneOfTrimmed("ROUTER_IP_V4_V6_MODE", "v4", "v4", "v6", "v4v6"),
		UseProxyProtocol:     p.boolean("ROUTER_USE_PROXY_PROTOCOL", false),
		EnableCompression:    p.boolean("ROUTER_ENABLE_COMPRESSION", false),
		CompressionMIME:      p.mimeTypes("ROUTER_COMPRESSION_MIME"),
		LoadBalanceAlgorithm: p.oneOfTrimmed("ROUTER_LOAD_BALANCE_ALGORITHM", "leastconn", balanceAlgos...),
		TCPBalanceScheme:     p.oneOfTrimmed("ROUTER_TCP_BALANCE_SCHEME", "source", balanceAlgos...),
		Threads:              p.threads("ROUTER_THREADS"),
		SyslogAddress:        p.syslogAddress("ROUTER_SYSLOG_ADDRESS"),
		LogFacility:          p.oneOfTrimmed("ROUTER_LOG_FACILITY", "local1", logFacilities...),
		LogLevel:             p.oneOfTrimmed("ROUTER_LOG_LEVEL", "warning", logLevels...),
		SyslogFormat:         p.logFormat("ROUTER_SYSLOG_FORMAT"),
		CookieName:           p.cookieName("ROUTER_COOKIE_NAME"),
		ErrorFile503:         p.errorFile("ROUTER_ERRORFILE_503"),
		ErrorFile404:         p.errorFile("ROUTER_ERRORFILE_404"),
		ForwardedHeaders:     p.oneOfTrimmed("ROUTER_SET_FORWARDED_HEADERS", "append", "append", "replace", "if-none", "never"),
		MutualTLSAuth:        p.oneOfTrimmed("ROUTER_MUTUAL_TLS_AUTH", "none", "none", "optional", "required"),
		H1CaseAdjust:         p.headerNames("ROUTER_H1_CASE_ADJUST"),
	}
	if h.MutualTLSAuth != "none" {
		h.MutualTLSCA = p.pemFile("ROUTER_MUTUAL_TLS_AUTH_CA", "CERTIFICATE", true)
		h.MutualTLSCRL = p.pemFile("ROUTER_MUTUAL_TLS_AUTH_CRL", "X509 CRL", false)
		h.MutualTLSFilter = p.regexpValue("ROUTER_MUTUAL_TLS_AUTH_FILTER")
	}
	if h.SSLMaxVersion != "" && h.SSLMaxVersion < h.SSLMinVersion {
		p.errs = append(p.errs, fmt.Errorf("SSL_MAX_VERSION=%s is below SSL_MIN_VERSION=%s", h.SSLMaxVersion, h.SSLMinVersion))
	}
	return h
}

// maxH1CaseAdjust bounds the number of headers in ROUTER_H1_CASE_ADJUST.
const maxH1CaseAdjust = 1000

// headerNames reads a comma-separated list of HTTP header names (blanks
// around each name are ignored; empty entries are skipped) and returns it
// joined by ",", without duplicates (case-insensitive: HAProxy keeps one
// spelling per lower-case name).
func (p *parser) headerNames(name string) string {
	v, _ := p.getenv(name)
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !headerNameToken.MatchString(f) {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want a comma-separated list of HTTP header names such as Content-Type,X-Custom-Header (letters, digits and !*+.^_|~-; bad entry %q)", name, v, f))
			return ""
		}
		if lf := strings.ToLower(f); !seen[lf] {
			seen[lf] = true
			out = append(out, f)
		}
	}
	if len(out) > maxH1CaseAdjust {
		p.errs = append(p.errs, fmt.Errorf("%s: more than %d header names", name, maxH1CaseAdjust))
		return ""
	}
	return strings.Join(out, ",")
}

// oneOfTrimmed is oneOf for a value that may be unset or blank (default).
func (p *parser) oneOfTrimmed(name, def string, allowed ...string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: want one of %s", name, v, strings.Join(allowed, ", ")))
	return def
}

// haproxyTime reads an HAProxy time value (a positive whole number and an
// optional unit us, ms, s, m, h or d; milliseconds without one). Values
// above HAProxy's maximum are clipped to it, with a warning.
func (p *parser) haproxyTime(name, def string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	d, err := templates.ParseHAProxyDuration(v)
	switch {
	case errors.Is(err, templates.ErrHAProxyDurationOverflow) || (err == nil && d > templates.HAProxyMaxTimeoutDuration):
		p.warnings = append(p.warnings, fmt.Sprintf("%s=%q exceeds HAProxy's maximum time value: using %s", name, v, templates.HAProxyMaxTimeout))
		return templates.HAProxyMaxTimeout
	case err != nil:
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want an HAProxy time value such as 30s, 500ms or 1h (a positive whole number with unit us, ms, s, m, h or d; ms if none)", name, v))
		return def
	}
	return v
}

// ciphers resolves ROUTER_CIPHERS: a profile name or an explicit
// colon-separated OpenSSL cipher list.
func (p *parser) ciphers(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return cipherProfiles["intermediate"]
	}
	if list, ok := cipherProfiles[v]; ok {
		return list
	}
	for _, t := range strings.Split(v, ":") {
		if !cipherToken.MatchString(t) {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want modern, intermediate, old or a colon-separated OpenSSL cipher list such as ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384 (bad entry %q)", name, v, t))
			return cipherProfiles["intermediate"]
		}
	}
	return v
}

// cipherSuites reads a colon-separated list of TLS 1.3 cipher suites.
func (p *parser) cipherSuites(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultCipherSuites
	}
	for _, t := range strings.Split(v, ":") {
		if !cipherSuiteToken.MatchString(t) {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want a colon-separated list of TLS 1.3 cipher suites such as TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384 (bad entry %q)", name, v, t))
			return DefaultCipherSuites
		}
	}
	return v
}

// mimeTypes reads a blank-separated list of MIME types.
func (p *parser) mimeTypes(name string) string {
	v, _ := p.getenv(name)
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return DefaultCompressionMIME
	}
	for _, t := range fields {
		if !mimeToken.MatchString(t) {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want blank-separated MIME types such as \"text/html text/plain\" (bad entry %q)", name, v, t))
			return DefaultCompressionMIME
		}
	}
	return strings.Join(fields, " ")
}

func (p *parser) threads(name string) int {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxHAProxyThreads {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a whole number of threads from 1 to %d", name, v, maxHAProxyThreads))
		return 0
	}
	return n
}

// syslogAddress reads where HAProxy sends its logs: an absolute unix
// socket path, or host[:port] (UDP; port 514 if none).
func (p *parser) syslogAddress(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	bad := func() string {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a unix socket path such as /var/lib/rsyslog/rsyslog.sock or host[:port] such as 127.0.0.1:514", name, v))
		return ""
	}
	if strings.HasPrefix(v, "/") {
		if !syslogPathToken.MatchString(v) {
			return bad()
		}
		return v
	}
	host, port := v, ""
	if h, pt, err := net.SplitHostPort(v); err == nil {
		host, port = h, pt
	} else if strings.Count(v, ":") > 1 && net.ParseIP(v) == nil {
		return bad()
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad()
		}
	}
	if ip := net.ParseIP(host); ip == nil && !isDNSName(host) {
		return bad()
	}
	if port == "" {
		return v
	}
	return net.JoinHostPort(host, port)
}

var dnsName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$`)

func isDNSName(s string) bool { return len(s) <= 253 && dnsName.MatchString(s) }

// logFormat reads an HAProxy log-format string and returns it quoted for
// haproxy.config (the value may come quoted already).
func (p *parser) logFormat(name string) string {
	v, _ := p.getenv(name)
	if strings.TrimSpace(v) == "" {
		return ""
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			p.errs = append(p.errs, fmt.Errorf("%s: must not contain control characters (newlines, tabs); want an HAProxy log-format string such as %%ci:%%cp [%%tr] %%ft %%b/%%s %%ST", name))
			return ""
		}
	}
	// OpenShift writes the value as is, so deployments often quote it
	// themselves: one pair of enclosing double quotes is dropped.
	if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
		v = v[1 : len(v)-1]
	}
	if strings.TrimSpace(v) == "" {
		return ""
	}
	return templates.HAProxyQuote(v)
}

var cookieNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (p *parser) cookieName(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v != "" && !cookieNamePattern.MatchString(v) {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a cookie name of 1-256 letters, digits, '_' or '-'", name, v))
		return ""
	}
	return v
}

// safePath is a file path that can be written into haproxy.config as is.
var safePath = regexp.MustCompile(`^[A-Za-z0-9._/+@=:,-]+$`)

// errorFile reads the path of a custom error response: a readable file
// (at most 15000 bytes, HAProxy's buffer less its reserve) holding a
// complete HTTP response.
func (p *parser) errorFile(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	data, err := os.ReadFile(v)
	switch {
	case !filepath.IsAbs(v) || !safePath.MatchString(v):
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want the absolute path (no blanks or quotes) of a file with a complete HTTP response", name, v))
	case err != nil:
		p.errs = append(p.errs, fmt.Errorf("%s: %v", name, err))
	case !strings.HasPrefix(string(data), "HTTP/1.") || len(data) > 15000:
		p.errs = append(p.errs, fmt.Errorf("%s=%q: the file must hold a complete HTTP response starting with \"HTTP/1.\" (status line, headers, blank line, body), at most 15000 bytes", name, v))
	default:
		return v
	}
	return ""
}

// pemFile reads the path of a PEM file holding at least one block of the
// given type.
func (p *parser) pemFile(name, blockType string, required bool) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		if required {
			p.errs = append(p.errs, fmt.Errorf("%s is required with ROUTER_MUTUAL_TLS_AUTH optional or required: want the path of a PEM file of CA certificates", name))
		}
		return ""
	}
	if !filepath.IsAbs(v) || !safePath.MatchString(v) {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want the absolute path (no blanks or quotes) of a PEM file (%s)", name, v, blockType))
		return ""
	}
	data, err := os.ReadFile(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %v", name, err))
		return ""
	}
	for rest := data; len(rest) > 0; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == blockType {
			return v
		}
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: the file holds no PEM %s", name, v, blockType))
	return ""
}

// regexpValue reads a regular expression and returns it quoted for
// haproxy.config ("" if unset).
func (p *parser) regexpValue(name string) string {
	v, _ := p.getenv(name)
	if strings.TrimSpace(v) == "" {
		return ""
	}
	if _, err := regexp.Compile(v); err != nil || strings.ContainsAny(v, "\r\n\x00") {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want a regular expression on the client certificate subject such as CN=client[0-9]+", name, v))
		return ""
	}
	return templates.HAProxyQuote(v)
}
