package files

import (
	"iter"
	"path/filepath"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// Routes is what CertificateFiles and AllowlistFiles write files for:
// the working directory and, in key order, what each route's files are
// made of. *model.TemplateData implements it (FileRoutes), so this package
// knows nothing of the model.
type Routes interface {
	FileRoutes() (workingDir string, routes iter.Seq[RouteFiles])
}

// RouteFiles is what the files of one route are made of.
type RouteFiles struct {
	Key RouteKey
	// Certificate, PrivateKey and CACertificate are the PEM blocks of the
	// route's own serving certificate file (none when Certificate is "").
	Certificate, PrivateKey, CACertificate string
	// DestinationCA is the re-encrypt route's destination CA ("": none).
	DestinationCA string
	// Allowlist holds the entries of an allowlist too long for one line
	// (nil: no allowlist file).
	Allowlist []string
}

// CertificateFiles returns the certificate files the templates refer to:
// WorkingDir/router/certs/<name>.pem (certificate, key and CA chain, for
// edge and re-encrypt routes with their own certificate) and
// WorkingDir/router/cacerts/<name>.pem (destination CA of re-encrypt
// routes), where <name> is the route key's FileName ("namespace:name", the
// paths OpenShift's router uses, for all but very long keys). Each file
// starts with a comment line naming the route (OpenSSL skips it).
func CertificateFiles(src Routes) []File {
	var out []File
	workingDir, routes := src.FileRoutes()
	wd := layout.New(workingDir)
	certDir, caDir := wd.Certs(), wd.CACerts()
	for r := range routes {
		if r.Certificate != "" {
			data := joinPEM(r.Certificate, r.PrivateKey, r.CACertificate)
			out = append(out, File{Path: filepath.Join(certDir, r.Key.FileName()+".pem"), Data: routeFile(r.Key, data), Mode: layout.FileMode, Route: r.Key})
		}
		if r.DestinationCA != "" {
			out = append(out, File{Path: filepath.Join(caDir, r.Key.FileName()+".pem"), Data: routeFile(r.Key, joinPEM(r.DestinationCA)), Mode: layout.FileMode, Route: r.Key})
		}
	}
	return out
}

// AllowlistFiles returns the allowlist files the templates refer to:
// WorkingDir/router/allowlists/<name>.txt (<name> as for CertificateFiles),
// a comment line naming the route then one address or CIDR a line, for the
// routes with an allowlist too long for one line (RouteFiles.Allowlist).
func AllowlistFiles(src Routes) []File {
	var out []File
	workingDir, routes := src.FileRoutes()
	dir := layout.New(workingDir).Allowlists()
	for r := range routes {
		if r.Allowlist == nil {
			continue
		}
		data := strings.Join(r.Allowlist, "\n") + "\n"
		out = append(out, File{Path: filepath.Join(dir, r.Key.FileName()+".txt"), Data: routeFile(r.Key, []byte(data)), Route: r.Key})
	}
	return out
}

// routeFile returns the contents of a file written for route key: its
// header line, then data.
func routeFile(key RouteKey, data []byte) []byte {
	h := key.FileHeader()
	out := make([]byte, 0, len(h)+len(data))
	return append(append(out, h...), data...)
}

// joinPEM concatenates PEM blocks, each ending in exactly one newline.
func joinPEM(parts ...string) []byte {
	var b strings.Builder
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
