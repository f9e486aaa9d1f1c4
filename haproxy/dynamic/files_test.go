package dynamic

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/layout"
)

func TestFileCommandsReplaceCertificatesAndReloadTheRest(t *testing.T) {
	wd := layout.New("/wd")
	cert := filepath.Join(wd.Certs(), "ns:r.pem")
	small := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	config := []byte("global\n  tune.bufsize 4096\n")
	for _, c := range []struct {
		name     string
		changed  []string
		data     map[string][]byte
		reload   bool
		tooLarge bool
		certs    int
	}{
		{"the configuration itself is the diff's", []string{wd.Config()}, nil, false, false, 0},
		{"a route certificate is replaced in place", []string{wd.Config(), cert}, map[string][]byte{cert: small}, false, false, 1},
		{"a removed certificate reloads", []string{cert}, nil, true, false, 0},
		{"a map reloads", []string{filepath.Join(wd.Conf(), "os_http_be.map")}, map[string][]byte{filepath.Join(wd.Conf(), "os_http_be.map"): []byte("x y\n")}, true, false, 0},
		{"a destination CA reloads", []string{filepath.Join(wd.CACerts(), "ns:r.pem")}, map[string][]byte{filepath.Join(wd.CACerts(), "ns:r.pem"): small}, true, false, 0},
		{"a certificate longer than tune.bufsize allows reloads", []string{cert}, map[string][]byte{cert: []byte(strings.Repeat("x", 4096))}, true, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FileCommands(Files{WD: wd, Config: config, Changed: c.changed, New: c.data})
			if got.Reload != c.reload || got.TooLarge != c.tooLarge || got.Certificates != c.certs {
				t.Fatalf("got %+v", got)
			}
			if c.certs > 0 && (len(got.Commands) != 2 || got.Commands[0].Text != "set ssl cert "+cert || got.Commands[1].Text != "commit ssl cert "+cert) {
				t.Fatalf("commands %+v", got.Commands)
			}
		})
	}
}
