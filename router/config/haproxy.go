package config

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/haproxy/syntax"
	"github.com/openshift-router-go/router/router/model"
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
		LoadBalanceAlgorithm: p.oneOfTrimmed("ROUTER_LOAD_BALANCE_ALGORITHM", "random", balanceAlgos...),
		TCPBalanceScheme:     p.oneOfTrimmed("ROUTER_TCP_BALANCE_SCHEME", "", balanceAlgos...),
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

		MutualTLSHeaderFilter:     p.boolean("ROUTER_MUTUAL_TLS_HEADER_FILTER", true),
		BufSize:                   p.intRange("ROUTER_BUF_SIZE", DefaultBufSize, 1024, maxBufSize),
		MaxRewrite:                p.intRange("ROUTER_MAX_REWRITE_SIZE", DefaultMaxRewrite, 0, maxBufSize),
		LogMaxLength:              p.intRange("ROUTER_LOG_MAX_LENGTH", 1024, 80, 65535),
		Curves:                    p.curves("ROUTER_CURVES"),
		CaptureRequestHeaders:     p.captureHeaders("ROUTER_CAPTURE_HTTP_REQUEST_HEADERS"),
		CaptureResponseHeaders:    p.captureHeaders("ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS"),
		CaptureCookie:             p.captureCookie("ROUTER_CAPTURE_HTTP_COOKIE"),
		HTTPRequestHeaderActions:  p.headerActions("ROUTER_HTTP_REQUEST_HEADERS"),
		HTTPResponseHeaderActions: p.headerActions("ROUTER_HTTP_RESPONSE_HEADERS"),
		HTTPIgnoreProbes:          p.boolean("ROUTER_HTTP_IGNORE_PROBES", false),
		DontLogNull:               p.boolean("ROUTER_DONT_LOG_NULL", false),
		IdleCloseOnResponse:       p.boolean("ROUTER_IDLE_CLOSE_ON_RESPONSE", false),
		AbortOnClose:              p.boolean("ROUTER_ABORT_ON_CLOSE", false),
		ContStats:                 p.boolean("ROUTER_HAPROXY_CONTSTATS", false),
	}
	if h.MaxRewrite >= h.BufSize {
		p.ignore("ROUTER_MAX_REWRITE_SIZE", strconv.Itoa(h.MaxRewrite), fmt.Sprintf("must be below ROUTER_BUF_SIZE (%d)", h.BufSize), h.BufSize/4)
		h.MaxRewrite = h.BufSize / 4
	}
	h.UniqueIDFormat = p.logFormat("ROUTER_UNIQUE_ID_FORMAT")
	h.UniqueIDHeader = p.headerName("ROUTER_UNIQUE_ID_HEADER_NAME")
	if (h.UniqueIDFormat == "") != (h.UniqueIDHeader == "") {
		// OpenShift's template renders them only together.
		h.UniqueIDFormat, h.UniqueIDHeader = "", ""
	}
	// Passthrough backends: ROUTER_TCP_BALANCE_SCHEME, else a valid
	// ROUTER_LOAD_BALANCE_ALGORITHM (as OpenShift's template falls back),
	// else source.
	if h.TCPBalanceScheme == "" {
		h.TCPBalanceScheme = "source"
		if v, _ := p.getenv("ROUTER_LOAD_BALANCE_ALGORITHM"); strings.TrimSpace(v) != "" && h.LoadBalanceAlgorithm == strings.TrimSpace(v) {
			h.TCPBalanceScheme = h.LoadBalanceAlgorithm
		}
	}
	if h.MutualTLSAuth != "none" {
		h.MutualTLSCA = p.pemFile("ROUTER_MUTUAL_TLS_AUTH_CA", "CERTIFICATE", false)
		h.MutualTLSClientCA = h.MutualTLSCA != ""
		if h.MutualTLSCA == "" {
			h.MutualTLSCA = p.systemCABundle()
		}
		h.MutualTLSCRL = p.pemFile("ROUTER_MUTUAL_TLS_AUTH_CRL", "X509 CRL", false)
		h.MutualTLSFilter = p.regexpValue("ROUTER_MUTUAL_TLS_AUTH_FILTER")
	}
	if h.SSLMaxVersion != "" && h.SSLMaxVersion < h.SSLMinVersion {
		p.ignore("SSL_MAX_VERSION", h.SSLMaxVersion, "is below SSL_MIN_VERSION="+h.SSLMinVersion, "no maximum")
		h.SSLMaxVersion = ""
	}
	return h
}

// Defaults of ROUTER_BUF_SIZE and ROUTER_MAX_REWRITE_SIZE (OpenShift's).
const (
	DefaultBufSize    = 32768
	DefaultMaxRewrite = 8192
	maxBufSize        = 1 << 24
)

// maxCaptures bounds the entries of a capture or header-action list.
const maxCaptures = 100

// curveToken is a TLS group name as OpenSSL spells them (X25519,
// secp256r1, P-256, X25519MLKEM768, ffdhe2048).
var curveToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// curves reads ROUTER_CURVES: TLS group names separated by ':' (or ',').
func (p *parser) curves(name string) string {
	v, _ := p.getenv(name)
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' }) {
		f = strings.TrimSpace(f)
		if !curveToken.MatchString(f) {
			p.ignore(name, v, fmt.Sprintf("want TLS group names separated by ':' such as X25519:secp256r1 (bad entry %q)", f), "HAProxy's default curves")
			return ""
		}
		out = append(out, f)
	}
	return strings.Join(out, ":")
}

// headerName reads one HTTP header name ("" if unset or malformed).
func (p *parser) headerName(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v != "" && !headerNameToken.MatchString(v) {
		p.ignore(name, v, "want an HTTP header name such as X-Unique-ID", "none")
		return ""
	}
	return v
}

// captureHeaders reads "Name:Len[,Name:Len…]" as OpenShift does; a
// malformed list is a start-up error there and here.
func (p *parser) captureHeaders(name string) []model.Capture {
	v, _ := p.getenv(name)
	var out []model.Capture
	for _, f := range strings.Split(v, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		parts := strings.Split(strings.TrimSpace(f), ":")
		c, ok := model.Capture{}, len(parts) == 2
		if ok {
			c.Name = strings.TrimSpace(parts[0])
			c.Len, ok = captureLen(parts[1])
			ok = ok && headerNameToken.MatchString(c.Name)
		}
		if !ok {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want a comma-separated list of Name:MaxLength such as Host:90,User-Agent:128 (bad entry %q)", name, v, f))
			return nil
		}
		out = append(out, c)
	}
	if len(out) > maxCaptures {
		p.errs = append(p.errs, fmt.Errorf("%s: more than %d entries", name, maxCaptures))
		return nil
	}
	return out
}

func captureLen(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil && n > 0 && n <= 65535
}

// captureCookie reads "name:len" ("name=:len" for an exact match).
func (p *parser) captureCookie(name string) *model.Capture {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	i := strings.LastIndex(v, ":")
	c := &model.Capture{}
	ok := i > 0
	if ok {
		c.Name = v[:i]
		if strings.HasSuffix(c.Name, "=") {
			c.Name, c.Exact = strings.TrimSuffix(c.Name, "="), true
		}
		c.Len, ok = captureLen(v[i+1:])
		ok = ok && cookieNamePattern.MatchString(c.Name)
	}
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: want name:MaxLength (name=:MaxLength for an exact match) such as session=:64", name, v))
		return nil
	}
	return c
}

// headerActions reads ROUTER_HTTP_REQUEST_HEADERS / _RESPONSE_HEADERS as
// the ingress operator writes them: comma-separated entries
// "name:value:Set" or "name:Delete", name and value URL-escaped. A
// malformed list is a start-up error, as in OpenShift's router.
func (p *parser) headerActions(name string) []model.HeaderAction {
	v, _ := p.getenv(name)
	var out []model.HeaderAction
	for _, f := range strings.Split(v, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		a, err := parseHeaderAction(strings.TrimSpace(f))
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: want comma-separated name:value:Set or name:Delete entries, name and value URL-escaped (entry %q: %v)", name, v, f, err))
			return nil
		}
		out = append(out, a)
	}
	if len(out) > maxCaptures {
		p.errs = append(p.errs, fmt.Errorf("%s: more than %d entries", name, maxCaptures))
		return nil
	}
	return out
}

func parseHeaderAction(f string) (model.HeaderAction, error) {
	parts := strings.Split(f, ":")
	var a model.HeaderAction
	switch len(parts) {
	case 3:
		a.Action = parts[2]
		if a.Action != "Set" {
			return a, fmt.Errorf("action %q: want Set (with a value) or Delete", a.Action)
		}
	case 2:
		a.Action = parts[1]
		if a.Action != "Delete" {
			return a, fmt.Errorf("action %q: want Delete (or name:value:Set)", a.Action)
		}
	default:
		return a, fmt.Errorf("want name:value:Set or name:Delete")
	}
	n, err := url.QueryUnescape(parts[0])
	if err != nil || !headerNameToken.MatchString(n) {
		return a, fmt.Errorf("header name %q: want an HTTP token", parts[0])
	}
	a.Name = n
	if a.Action == "Set" {
		val, err := url.QueryUnescape(parts[1])
		if err != nil || val == "" || strings.ContainsAny(val, "\x00\r\n") || len(val) > 16384 {
			return a, fmt.Errorf("value %q: want a non-empty URL-escaped value without line breaks", parts[1])
		}
		a.Value = syntax.Quote(val)
		a.RawValue = val
	}
	return a, nil
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
	p.ignore(name, v, "want one of "+strings.Join(allowed, ", "), def)
	return def
}

// haproxyTime reads an HAProxy time value (a positive whole number and an
// optional unit us, ms, s, m, h or d; milliseconds without one) with the
// rule of route annotations and templates (syntax.ClipTimeout): written
// as given, values above HAProxy's maximum clipped to it, with a warning.
func (p *parser) haproxyTime(name, def string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	out, clipped, err := syntax.ClipTimeout(v)
	switch {
	case clipped:
		p.warnings = append(p.warnings, fmt.Sprintf("%s=%q exceeds HAProxy's maximum time value: using %s", name, v, out))
	case err != nil:
		p.ignore(name, v, "want an HAProxy time value such as 30s, 500ms or 1h (a positive whole number with unit us, ms, s, m, h or d; ms if none)", def)
		return def
	}
	return out
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
			p.ignore(name, v, fmt.Sprintf("want modern, intermediate, old or a colon-separated OpenSSL cipher list such as ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384 (bad entry %q)", t), "intermediate")
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
			p.ignore(name, v, fmt.Sprintf("want a colon-separated list of TLS 1.3 cipher suites such as TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384 (bad entry %q)", t), DefaultCipherSuites)
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
			p.ignore(name, v, fmt.Sprintf("want blank-separated MIME types such as \"text/html text/plain\" (bad entry %q)", t), DefaultCompressionMIME)
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
		p.ignore(name, v, fmt.Sprintf("want a whole number of threads from 1 to %d", maxHAProxyThreads), "HAProxy's default (no nbthread)")
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
		p.ignore(name, v, "want a unix socket path such as /var/lib/rsyslog/rsyslog.sock or host[:port] such as 127.0.0.1:514", "no syslog (HAProxy does not log)")
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
			p.warnings = append(p.warnings, fmt.Sprintf("%s: must not contain control characters (newlines, tabs); want an HAProxy log-format string such as %%ci:%%cp [%%tr] %%ft %%b/%%s %%ST; ignored, using HAProxy's httplog format", name))
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
	return syntax.Quote(v)
}

var cookieNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (p *parser) cookieName(name string) string {
	v, _ := p.getenv(name)
	v = strings.TrimSpace(v)
	if v != "" && !cookieNamePattern.MatchString(v) {
		p.ignore(name, v, "want a cookie name of 1-256 letters, digits, '_' or '-'", "the route's hashed name")
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
	using := "the built-in error page"
	switch {
	case !filepath.IsAbs(v) || !safePath.MatchString(v):
		p.ignore(name, v, "want the absolute path (no blanks or quotes) of a file with a complete HTTP response", using)
	case err != nil:
		p.ignore(name, v, fmt.Sprintf("cannot read it (%v)", err), using)
	case !strings.HasPrefix(string(data), "HTTP/1.") || len(data) > 15000:
		p.ignore(name, v, "the file must hold a complete HTTP response starting with \"HTTP/1.\" (status line, headers, blank line, body), at most 15000 bytes", using)
	default:
		return v
	}
	return ""
}

// systemCABundles are where the system's CA bundle is looked for, in order:
// OpenShift's router image path first (RHEL), then Debian's.
var systemCABundles = []string{
	"/etc/ssl/certs/ca-bundle.trust.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/certs/ca-certificates.crt",
}

// systemCABundle is the CA file client certificates are verified against
// when ROUTER_MUTUAL_TLS_AUTH is on without ROUTER_MUTUAL_TLS_AUTH_CA, as
// OpenShift does. Without one, client certificates could not be verified:
// a start-up error rather than turning mutual TLS off.
func (p *parser) systemCABundle() string {
	for _, f := range systemCABundles {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return f
		}
	}
	p.errs = append(p.errs, fmt.Errorf("ROUTER_MUTUAL_TLS_AUTH without ROUTER_MUTUAL_TLS_AUTH_CA verifies client certificates against the system CA bundle, and none was found (%s)", strings.Join(systemCABundles, ", ")))
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
	return syntax.Quote(v)
}
