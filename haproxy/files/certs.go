package files

import (
	"path/filepath"
	"strings"

	"github.com/openshift-router-go/router/router/model"
)

// CertificateFiles returns the certificate files the templates refer to:
// WorkingDir/router/certs/<namespace:name>.pem (certificate, key and CA
// chain, for edge and re-encrypt routes with their own certificate) and
// WorkingDir/router/cacerts/<namespace:name>.pem (destination CA of
// re-encrypt routes) — the paths OpenShift's router uses.
func CertificateFiles(td *model.TemplateData) []File {
	var out []File
	certDir := filepath.Join(td.WorkingDir, "router", "certs")
	caDir := filepath.Join(td.WorkingDir, "router", "cacerts")
	for _, key := range td.SortedStateKeys() {
		cfg := td.State[key]
		if cert, ok := cfg.Certificates[cfg.Host]; ok && cert.Contents != "" {
			parts := []string{cert.Contents, cert.PrivateKey}
			if ca, ok := cfg.Certificates[cfg.Host+model.CACertPostfix]; ok {
				parts = append(parts, ca.Contents)
			}
			out = append(out, File{Path: filepath.Join(certDir, string(key)+".pem"), Data: joinPEM(parts...), Mode: 0o600})
		}
		if dest, ok := cfg.Certificates[cfg.Host+model.DestCACertPostfix]; ok && dest.Contents != "" {
			out = append(out, File{Path: filepath.Join(caDir, string(key)+".pem"), Data: joinPEM(dest.Contents), Mode: 0o600})
		}
	}
	return out
}

// AllowlistFiles returns the allowlist files the templates refer to:
// WorkingDir/router/allowlists/<namespace:name>.txt, one address or CIDR a
// line, for the routes whose validated allowlist is longer than
// annotations.AllowlistFileThreshold (the path OpenShift's router uses).
func AllowlistFiles(td *model.TemplateData) []File {
	var out []File
	dir := filepath.Join(td.WorkingDir, "router", "allowlists")
	for _, key := range td.SortedStateKeys() {
		s := td.State[key].Settings
		if !s.AllowlistInFile() {
			continue
		}
		data := strings.Join(s.Allowlist, "\n") + "\n"
		out = append(out, File{Path: filepath.Join(dir, string(key)+".txt"), Data: []byte(data)})
	}
	return out
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
