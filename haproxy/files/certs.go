package files

import (
	"path/filepath"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/model"
)

// CertificateFiles returns the certificate files the templates refer to:
// WorkingDir/router/certs/<name>.pem (certificate, key and CA chain, for
// edge and re-encrypt routes with their own certificate) and
// WorkingDir/router/cacerts/<name>.pem (destination CA of re-encrypt
// routes), where <name> is the route key's FileName ("namespace:name", the
// paths OpenShift's router uses, for all but very long keys). Each file
// starts with a comment line naming the route (OpenSSL skips it).
func CertificateFiles(td *model.TemplateData) []File {
	var out []File
	wd := layout.New(td.WorkingDir)
	certDir, caDir := wd.Certs(), wd.CACerts()
	for _, key := range td.SortedStateKeys() {
		cfg := td.State[key]
		if cert, ok := cfg.Certificates[cfg.Host]; ok && cert.Contents != "" {
			parts := []string{cert.Contents, cert.PrivateKey}
			if ca, ok := cfg.Certificates[cfg.Host+model.CACertPostfix]; ok {
				parts = append(parts, ca.Contents)
			}
			out = append(out, File{Path: filepath.Join(certDir, key.FileName()+".pem"), Data: routeFile(key, joinPEM(parts...)), Mode: 0o600, Route: key})
		}
		if dest, ok := cfg.Certificates[cfg.Host+model.DestCACertPostfix]; ok && dest.Contents != "" {
			out = append(out, File{Path: filepath.Join(caDir, key.FileName()+".pem"), Data: routeFile(key, joinPEM(dest.Contents)), Mode: 0o600, Route: key})
		}
	}
	return out
}

// AllowlistFiles returns the allowlist files the templates refer to:
// WorkingDir/router/allowlists/<name>.txt (<name> as for CertificateFiles),
// a comment line naming the route then one address or CIDR a line, for the
// routes whose validated allowlist is longer than
// annotations.AllowlistFileThreshold.
func AllowlistFiles(td *model.TemplateData) []File {
	var out []File
	dir := layout.New(td.WorkingDir).Allowlists()
	for _, key := range td.SortedStateKeys() {
		s := td.State[key].Settings
		if !s.AllowlistInFile() {
			continue
		}
		data := strings.Join(s.Allowlist, "\n") + "\n"
		out = append(out, File{Path: filepath.Join(dir, key.FileName()+".txt"), Data: routeFile(key, []byte(data)), Route: key})
	}
	return out
}

// routeFile returns the contents of a file written for route key: its
// header line, then data.
func routeFile(key model.ServiceAliasConfigKey, data []byte) []byte {
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
