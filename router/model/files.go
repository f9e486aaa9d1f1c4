package model

import (
	"iter"

	"github.com/openshift-router-go/router/haproxy/files"
)

// FileRoutes returns the working directory and, in key order, what the
// files of each route are made of (its certificates, destination CA and,
// when it is too long for one line, its allowlist): the view of the
// template data files.CertificateFiles and files.AllowlistFiles take.
func (td *TemplateData) FileRoutes() (string, iter.Seq[files.RouteFiles]) {
	return td.WorkingDir, func(yield func(files.RouteFiles) bool) {
		for _, key := range td.SortedStateKeys() {
			cfg := td.State[key]
			rf := files.RouteFiles{Key: key}
			if cert, ok := cfg.Certificates[cfg.Host]; ok {
				rf.Certificate, rf.PrivateKey = cert.Contents, cert.PrivateKey
			}
			if ca, ok := cfg.Certificates[cfg.Host+CACertPostfix]; ok {
				rf.CACertificate = ca.Contents
			}
			if dest, ok := cfg.Certificates[cfg.Host+DestCACertPostfix]; ok {
				rf.DestinationCA = dest.Contents
			}
			if cfg.Settings.AllowlistInFile() {
				rf.Allowlist = cfg.Settings.Allowlist
			}
			if !yield(rf) {
				return
			}
		}
	}
}
