//go:build unix

package manifests

import (
	"os"
	"syscall"
)

// fileID is a file's identity: what os.SameFile compares.
type fileID struct{ dev, ino uint64 }

func fileIDOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} //nolint:unconvert // types differ between platforms
	}
	return fileID{}
}
