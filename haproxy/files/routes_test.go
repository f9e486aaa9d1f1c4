package files

import (
	"iter"
	"path/filepath"
	"slices"
	"testing"
)

// fakeRoutes is a Routes without the model: the package needs only plain
// values.
type fakeRoutes []RouteFiles

func (f fakeRoutes) FileRoutes() (string, iter.Seq[RouteFiles]) { return "/wd", slices.Values(f) }

func TestCertificateFilesFromPlainRouteValues(t *testing.T) {
	got := CertificateFiles(fakeRoutes{
		{Key: "ns:edge", Certificate: "CERT\n", PrivateKey: "KEY", CACertificate: " CA \n"},
		{Key: "ns:re", DestinationCA: "DEST"},
		{Key: "ns:plain", PrivateKey: "KEY without a certificate"},
	})
	want := []File{
		{Path: filepath.Join("/wd", "router", "certs", "ns:edge.pem"), Data: []byte("# route ns/edge\nCERT\nKEY\nCA\n"), Mode: 0o600, Route: "ns:edge"},
		{Path: filepath.Join("/wd", "router", "cacerts", "ns:re.pem"), Data: []byte("# route ns/re\nDEST\n"), Mode: 0o600, Route: "ns:re"},
	}
	if len(got) != len(want) {
		t.Fatalf("files %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Path != want[i].Path || string(got[i].Data) != string(want[i].Data) || got[i].Mode != want[i].Mode || got[i].Route != want[i].Route {
			t.Errorf("file %d: %+v (%q), want %+v (%q)", i, got[i], got[i].Data, want[i], want[i].Data)
		}
	}
}
