package manifests

import (
	"fmt"
	"os"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/router/store"
)

// LoadDir reads dir once into sink, exactly as Source.Run's initial load
// does (same files, same decoding, same creationTimestamps from the file
// times), marks the sink synced and returns without watching. Malformed
// documents are logged and skipped, as by Run. It is an error if dir cannot
// be read.
func LoadDir(dir string, sink store.Sink, logger logr.Logger) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("manifests directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("manifests directory %s: not a directory", dir)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("manifests directory: %w", err)
	}
	s := New(dir, sink, logger)
	st := newState(s)
	st.scan()
	if st.rootFailing {
		return fmt.Errorf("manifests directory %s: cannot be read", dir)
	}
	sink.MarkSynced(SourceName)
	sink.MarkSynced(store.TLSRoutesWatched)
	s.log.V(1).Info("Loaded manifests", "files", len(st.files), "objects", len(st.emitted))
	return nil
}
