// Package files writes the router's generated files (haproxy.config, map
// files, certificates) into the working directory. A write is staged: only
// files whose content changed are touched, the previous versions are kept
// until the caller commits, and a rollback restores exactly what was on disk
// before — so a configuration HAProxy refuses never replaces the last good one.
package files

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openshift-router-go/router/haproxy/layout"
)

// File is one file to write.
type File struct {
	Path string
	Data []byte
	// Mode defaults to layout.FileMode (the router's user only).
	Mode os.FileMode
	// Route is the route the file is written for ("" for the files of
	// the whole configuration): a failure to write it is the route's.
	Route RouteKey
}

const backupSuffix = ".prev"

// Writer writes sets of files. It is not safe for concurrent use.
type Writer struct {
	// current maps every path the writer manages to its content hash.
	current map[string][32]byte
	staged  *stage
}

type stage struct {
	previous map[string][32]byte
	// touched holds the paths written or removed, and whether a backup exists.
	touched map[string]bool
}

// NewWriter returns a writer that manages no files yet.
func NewWriter() *Writer { return &Writer{current: map[string][32]byte{}} }

// Stage writes the set of files: changed and new files are written, files
// managed before but absent from the set are removed. It returns the paths
// that changed. Stage must be followed by Commit or Rollback.
func (w *Writer) Stage(files []File) ([]string, error) {
	if w.staged != nil {
		return nil, errors.New("files: a previous stage was neither committed nor rolled back")
	}
	st := &stage{previous: w.current, touched: map[string]bool{}}
	next := make(map[string][32]byte, len(files))
	w.staged = st
	var changed []string
	var failed []FileError
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		next[f.Path] = sum
		if old, ok := st.previous[f.Path]; ok && old == sum {
			continue
		}
		if err := w.write(st, f); err != nil {
			if f.Route != "" && acceptsFiles(filepath.Dir(f.Path)) {
				// The directory takes other files: the failure is this
				// file's own (its name, its size), hence its route's.
				failed = append(failed, FileError{Path: f.Path, Route: f.Route, Err: err})
				continue
			}
			w.current = next
			_ = w.Rollback()
			return nil, err
		}
		changed = append(changed, f.Path)
	}
	if len(failed) > 0 {
		w.current = next
		_ = w.Rollback()
		return nil, &StageError{Files: failed}
	}
	for p := range st.previous {
		if _, ok := next[p]; ok {
			continue
		}
		if err := w.backup(st, p); err != nil {
			w.current = next
			_ = w.Rollback()
			return nil, err
		}
		changed = append(changed, p)
	}
	w.current = next
	sort.Strings(changed)
	return changed, nil
}

// FileError is a file of a route that could not be written while its
// directory accepts other files.
type FileError struct {
	Path  string
	Route RouteKey
	Err   error
}

// StageError is returned by Stage when files of routes could not be
// written (and nothing else failed); the stage was rolled back. Writing
// the same set without those routes' files can succeed.
type StageError struct {
	Files []FileError
}

func (e *StageError) Error() string {
	msgs := make([]string, len(e.Files))
	for i, f := range e.Files {
		msgs[i] = f.Err.Error()
	}
	return fmt.Sprintf("%d route file(s) could not be written: %s", len(e.Files), strings.Join(msgs, "; "))
}

// acceptsFiles reports whether a small file with a short name can be
// created in dir: when it can, a failure to write another file there is
// that file's own (its name or its size), not the directory's (read-only,
// no permission, no space or inodes left).
func acceptsFiles(dir string) bool {
	f, err := os.CreateTemp(dir, ".probe")
	if err != nil {
		return false
	}
	name := f.Name()
	_, err = f.Write([]byte("probe\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	os.Remove(name)
	return err == nil
}

func (w *Writer) backup(st *stage, path string) error {
	if _, done := st.touched[path]; done {
		return nil
	}
	err := os.Rename(path, path+backupSuffix)
	switch {
	case err == nil:
		st.touched[path] = true
	case errors.Is(err, os.ErrNotExist):
		st.touched[path] = false
	default:
		return fmt.Errorf("keeping previous %s: %w", path, err)
	}
	return nil
}

func (w *Writer) write(st *stage, f File) error {
	mode := f.Mode
	if mode == 0 {
		mode = layout.FileMode
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), layout.DirMode); err != nil {
		return fmt.Errorf("creating directory for %s: %w", f.Path, err)
	}
	// A short temporary name: the final name may be up to NAME_MAX long.
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	tmpName := tmp.Name()
	_, werr := tmp.Write(f.Data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmpName, mode)
	}
	if werr != nil {
		os.Remove(tmpName)
		return fmt.Errorf("writing %s: %w", f.Path, werr)
	}
	// Keep the previous version (hard link, so the path never disappears).
	if _, done := st.touched[f.Path]; !done {
		os.Remove(f.Path + backupSuffix)
		err := os.Link(f.Path, f.Path+backupSuffix)
		switch {
		case err == nil:
			st.touched[f.Path] = true
		case errors.Is(err, os.ErrNotExist):
			st.touched[f.Path] = false
		default:
			os.Remove(tmpName)
			return fmt.Errorf("keeping previous %s: %w", f.Path, err)
		}
	}
	if err := os.Rename(tmpName, f.Path); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("replacing %s: %w", f.Path, err)
	}
	return nil
}

// Commit makes the staged files current and drops the previous versions.
func (w *Writer) Commit() {
	if w.staged == nil {
		return
	}
	for p, hadBackup := range w.staged.touched {
		if hadBackup {
			os.Remove(p + backupSuffix)
		}
	}
	w.staged = nil
}

// Rollback restores the files as they were before Stage.
func (w *Writer) Rollback() error {
	st := w.staged
	if st == nil {
		return nil
	}
	var errs []string
	for p, hadBackup := range st.touched {
		if hadBackup {
			if err := os.Rename(p+backupSuffix, p); err != nil {
				errs = append(errs, err.Error())
			}
		} else if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	w.current = st.previous
	w.staged = nil
	if len(errs) > 0 {
		return fmt.Errorf("rolling back files: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Rewrite replaces the file at path with what write writes, at once: no
// stage, no previous version kept — for a file brought up to date with
// what HAProxy already runs. The writer then no longer knows the file's
// content (it is not hashed): the next Stage writes it again.
func (w *Writer) Rewrite(path string, mode os.FileMode, write func(io.Writer) error) error {
	if w.staged != nil {
		return errors.New("files: a stage is neither committed nor rolled back")
	}
	if mode == 0 {
		mode = layout.FileMode
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmpName := tmp.Name()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmpName, mode)
	}
	if werr == nil {
		werr = os.Rename(tmpName, path)
	}
	if werr != nil {
		os.Remove(tmpName)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	// No content hashes to this: Stage compares unequal.
	w.current[path] = [32]byte{}
	return nil
}
