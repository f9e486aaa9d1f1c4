// Package manifests is the router's embedded default source: instead of a
// cluster, it reads a directory of Kubernetes manifests (exactly what a user
// would `kubectl apply`) and feeds the objects to a store.Sink, keeping it up
// to date as files are added, edited, renamed and deleted.
//
// # Files
//
// The directory is read recursively. Files ending in .yaml, .yml or .json
// are loaded; hidden files and directories (names starting with "."),
// editor backups and temporary files ("*~", "#*#") are ignored. Symbolic
// links to files and directories are followed (directory loops are
// detected), so Kubernetes ConfigMap and Secret volumes, whose files are
// symlinks through a "..data" symlink that is swapped atomically on update,
// work as expected.
//
// # Objects
//
// See ParseFile for the supported kinds and how they are decoded and
// defaulted. Objects without a creationTimestamp get the modification time
// of their file the first time they are seen; that timestamp is kept while
// the object exists (through edits of the file, or moves to another file,
// and for a grace period after it disappears, as some editors delete and
// recreate files), so that "oldest route wins" host claims are stable. It is
// not persisted:
// after a restart it is derived from the file times again, so set
// metadata.creationTimestamp explicitly when the order of conflicting routes
// matters.
//
// If several files define the same object (same kind, namespace and name),
// the file whose path sorts last wins; when that file stops defining it, the
// next one's version takes over. Within one file, the last definition wins.
//
// # Ingresses
//
// Ingresses (with the IngressClasses and Secrets they refer to) are not
// given to the sink: they are translated into the Routes OpenShift's
// ingress-to-route controller would create (see package ingress), which are
// given to the sink like the Routes of the files and admitted like them.
// Editing an Ingress, its Services or Secrets updates its Routes; deleting
// it deletes them.
//
// # Errors
//
// A document that cannot be loaded, or whose object the API server would
// refuse (see validateObject), is logged with its file, line and reason and
// skipped; the other documents of the file are still loaded. When a file
// that was loaded before is edited and one of its documents becomes
// malformed, the previous version of that document's object is KEPT (so a
// typo does not take down a serving route) until the file is fixed: if the
// malformed document can still be identified (its kind, namespace and name
// can be read), only that object is kept; otherwise (YAML syntax error,
// missing name...), no object of that file is deleted until it is fixed. The
// same holds when a file becomes unreadable. Deleting the file deletes its
// objects. A misspelled kind, or an apiVersion of another API group, makes
// a document of an unsupported kind: it is skipped with a warning, and the
// object it defined before is deleted.
//
// If the directory itself disappears or becomes unreadable after the start,
// the error is logged, the objects are kept, and the directory is retried.
package manifests

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift-router-go/router/router/source/endpointfilter"
	"github.com/openshift-router-go/router/router/store"
)

// SourceName is the name under which the source marks the sink synced.
const SourceName = "manifests"

const (
	// defaultDebounce is how long the source waits for a burst of file
	// system events to end before rescanning.
	defaultDebounce = 100 * time.Millisecond
	// defaultMaxDelay bounds how long a continuous stream of events can
	// delay a rescan.
	defaultMaxDelay = time.Second
	// defaultRetryInterval is the polling interval used when watching is
	// not possible (no inotify watches left, directory gone...).
	defaultRetryInterval = 2 * time.Second
	// timestampGrace is how long the creationTimestamp assigned to an
	// object is remembered after the object disappears, so that an editor
	// deleting and rewriting a file does not reset it.
	timestampGrace = 30 * time.Second
	// racyWindow: a file modified less than this long before it was read
	// may be modified again without a visible change of its modification
	// time and size (coarse timestamps), so it is read again (and compared
	// by content) on the next scan.
	racyWindow = 2 * time.Second
)

// Source loads a directory of manifests into a store.Sink and watches it.
type Source struct {
	dir           string
	sink          store.Sink
	log           logr.Logger
	debounce      time.Duration
	maxDelay      time.Duration
	retryInterval time.Duration
}

// New returns a source reading dir into sink. Restricted endpoint
// addresses and Service cluster IPs are dropped as in every source (see
// endpointfilter), except
// loopback ones: the directory is local and trusted, and its backends
// (the demo's among them) may listen on 127.0.0.1.
func New(dir string, sink store.Sink, logger logr.Logger) *Source {
	log := logger.WithValues("source", SourceName, "dir", dir)
	return &Source{
		dir:           dir,
		sink:          endpointfilter.Sink(sink, endpointfilter.Options{AllowLoopback: true}, log),
		log:           log,
		debounce:      defaultDebounce,
		maxDelay:      defaultMaxDelay,
		retryInterval: defaultRetryInterval,
	}
}

// Run loads the directory, marks the sink synced, then watches the directory
// and applies changes until ctx is done. It returns an error only if the
// directory cannot be read at start; it returns nil when ctx is done.
// Run must not be called concurrently with itself.
func (s *Source) Run(ctx context.Context) error {
	if err := checkDir(s.dir); err != nil {
		return err
	}
	st := newState(s)
	if stop := st.watch(); stop != nil {
		defer stop()
	}
	st.scan()
	s.sink.MarkSynced(SourceName)
	s.sink.MarkSynced(store.TLSRoutesWatched)
	s.log.Info("Loaded manifests", "files", len(st.files), "objects", len(st.emitted))
	st.follow(ctx)
	return nil
}

// checkDir tells why dir cannot be the manifests directory, if it cannot.
func checkDir(dir string) error {
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
	return nil
}

// watch starts the file watcher, and returns what stops it; without one
// (nil), the directory is polled.
func (st *state) watch() (stop func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		st.log.Error(err, "Cannot watch the manifests directory, polling it instead", "interval", st.retryInterval)
		return nil
	}
	st.watcher = w
	return func() {
		if err := w.Close(); err != nil {
			st.log.Error(err, "Closing the file watcher")
		}
	}
}

// debouncer fires once changes have been quiet for a delay, and at the
// latest maxDelay after the first change of a burst.
type debouncer struct {
	timer      *time.Timer
	maxDelay   time.Duration
	pending    bool
	burstStart time.Time
}

func newDebouncer(maxDelay time.Duration) *debouncer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &debouncer{timer: t, maxDelay: maxDelay}
}

// trigger (re)arms the timer for delay, within the burst's bound.
func (d *debouncer) trigger(delay time.Duration) {
	now := time.Now()
	if !d.pending {
		d.pending, d.burstStart = true, now
	}
	if limit := d.burstStart.Add(d.maxDelay); now.Add(delay).After(limit) {
		delay = max(limit.Sub(now), 0)
	}
	d.timer.Reset(delay)
}

// follow applies the directory's changes until ctx is done: file events
// (debounced), watch errors (a full scan), and a poll while the watcher
// cannot be relied on.
func (st *state) follow(ctx context.Context) {
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if st.watcher != nil {
		events, watchErrs = st.watcher.Events, st.watcher.Errors
	}
	d := newDebouncer(st.maxDelay)
	defer d.timer.Stop()
	poll := time.NewTicker(st.retryInterval)
	defer poll.Stop()
	if st.needRescan {
		st.fullScan = true
		d.trigger(st.debounce)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				st.degraded = true
				continue
			}
			st.log.V(5).Info("File event", "file", ev.Name, "op", ev.Op.String())
			st.noteEvent(ev)
			d.trigger(st.debounce)
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			st.log.Error(err, "Watching the manifests directory")
			st.fullScan = true
			d.trigger(st.debounce)
		case <-poll.C:
			if st.degraded || st.watcher == nil || events == nil {
				st.scan()
			}
		case <-d.timer.C:
			d.pending = false
			switch {
			case st.fullScan || st.degraded || st.rootFailing || st.watcher == nil:
				st.scan()
			case len(st.changed) > 0:
				st.scanChanged()
			}
			if st.needRescan {
				st.fullScan = true
				d.trigger(st.debounce)
			}
		}
	}
}

// state is the source's view of the directory, owned by Run.
type state struct {
	*Source
	watcher *fsnotify.Watcher
	// watched are the directories with a watch, with their real paths.
	watched map[string]string
	// unwatchable are the directories that could not be watched.
	unwatchable map[string]bool
	// unreadableDirs are the directories that could not be read.
	unreadableDirs map[string]error
	// rootFailing is set while the directory itself cannot be read.
	rootFailing bool
	// degraded is set when some directory could not be watched (or read):
	// the directory is then polled.
	degraded bool
	// needRescan asks for another scan soon (new directories were watched
	// after having been read).
	needRescan bool
	// files are the manifest files loaded, by path.
	files map[string]*fileState
	// emitted are the objects the sink has from this source.
	emitted map[objKey]object
	// timestamps are the creationTimestamps assigned to objects that had
	// none, kept while the object exists (and timestampGrace after).
	timestamps map[objKey]assignedTimestamp
	// ingressReports are the translation reports last logged, by Ingress.
	ingressReports map[objKey]string
	// changed are the manifest files file events named since the last
	// scan, and fullScan is set when an event needs the whole directory
	// read again (see noteEvent).
	changed  map[string]bool
	fullScan bool
	// swept is when timestamps of objects long gone were last forgotten.
	swept time.Time
	// simple is set by a reconcile of every file that found each object
	// defined in one file only and no Ingress (whose Routes depend on
	// other objects): changed files can then be reconciled alone.
	simple bool
}

func newState(s *Source) *state {
	return &state{
		Source:      s,
		watched:     map[string]string{},
		unwatchable: map[string]bool{},
		files:       map[string]*fileState{},
		emitted:     map[objKey]object{},
		timestamps:  map[objKey]assignedTimestamp{},
		changed:     map[string]bool{},
	}
}

// noteEvent records what a file event asks to read again. An event on a
// manifest file (a regular file, or one that is gone) directly in a
// watched directory that is no symbolic link asks for that file alone; an
// event on an ignored name asks for nothing (the walk skips those too);
// anything else (a directory come or gone, a symbolic link, a directory
// read through a link) asks for the whole directory. So a change of one
// file costs reading that file, not listing and stat-ing every file.
func (st *state) noteEvent(ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	if st.fullScan || ignoredName(name) {
		return
	}
	dir := filepath.Dir(ev.Name)
	if real, ok := st.watched[dir]; !ok || real != dir {
		st.fullScan = true
		return
	}
	fi, err := os.Lstat(ev.Name)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		if _, wasDir := st.watched[ev.Name]; wasDir || isManifest(name) {
			// A removed manifest is read alone; a removed directory
			// takes its files with it.
			st.fullScan = st.fullScan || wasDir
			if !wasDir {
				st.changed[ev.Name] = true
			}
		}
	case err != nil:
		st.fullScan = true
	case fi.Mode().IsRegular():
		if isManifest(name) {
			st.changed[ev.Name] = true
		}
	default:
		// A directory or a symbolic link (to a file or a directory).
		st.fullScan = true
	}
}

// scanChanged reads the files events named since the last scan again and
// applies the differences to the sink (see noteEvent).
func (st *state) scanChanged() {
	paths := make([]string, 0, len(st.changed))
	for p := range st.changed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	clear(st.changed)
	var before []fileObject
	for _, p := range paths {
		if f := st.files[p]; f != nil {
			before = append(before, f.objects...)
		}
	}
	for _, p := range paths {
		if !st.refresh(p) {
			if _, had := st.files[p]; had {
				st.log.V(1).Info("Manifest file removed", "file", p)
				delete(st.files, p)
			}
		}
	}
	if !st.reconcileFiles(paths, before) {
		st.reconcile()
	}
}

// reconcileFiles sends the sink the differences that the files at paths
// (whose objects were before) make, without working out every object of
// the directory, and reports true; it does nothing and reports false when
// reconcile has to: an object defined in more than one file (the last
// path wins), or an Ingress (its Routes depend on other objects). Without
// those, an object these files defined had no other definition, and one
// they define now must not have one elsewhere.
func (st *state) reconcileFiles(paths []string, before []fileObject) bool {
	if !st.simple {
		return false
	}
	ingressKind := func(k objKey) bool { return k.kind == "Ingress" || k.kind == "IngressClass" }
	was := make(map[objKey]bool, len(before))
	for _, o := range before {
		if ingressKind(o.key) {
			return false
		}
		was[o.key] = true
	}
	now := map[objKey]object{}
	for _, p := range paths {
		f := st.files[p]
		if f == nil {
			continue
		}
		for _, o := range f.objects {
			_, twice := now[o.key]
			_, elsewhere := st.emitted[o.key]
			if twice || ingressKind(o.key) || (elsewhere && !was[o.key]) {
				return false
			}
			now[o.key] = o.obj
		}
	}
	st.apply(now, maps.Keys(was))
	t := time.Now()
	for k := range was {
		if _, ok := now[k]; !ok {
			if a, ok := st.timestamps[k]; ok && a.goneSince.IsZero() {
				a.goneSince = t
				st.timestamps[k] = a
			}
		}
	}
	for k := range now {
		if a, ok := st.timestamps[k]; ok && !a.goneSince.IsZero() {
			a.goneSince = time.Time{}
			st.timestamps[k] = a
		}
	}
	st.sweepTimestamps(t)
	return true
}

// assignedTimestamp is a creationTimestamp assigned by the source.
type assignedTimestamp struct {
	ts metav1.Time
	// goneSince is when the object disappeared; zero while it exists.
	goneSince time.Time
}

// fileState is what was loaded from one file. It is kept for every file of
// the directory, so it holds only what the next scan compares (not the
// os.FileInfo) and the objects as a slice (files hold few objects).
type fileState struct {
	stamp   fileStamp
	readAt  time.Time
	sum     [sha256.Size]byte
	objects []fileObject
}

// fileObject is one object a file defines (once: the last definition).
type fileObject struct {
	key objKey
	obj object
}

// fileStamp is what tells a file's versions apart without reading it: its
// identity (device and inode where the platform has them), modification
// time and size.
type fileStamp struct {
	id      fileID
	modTime time.Time
	size    int64
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{id: fileIDOf(fi), modTime: fi.ModTime(), size: fi.Size()}
}

// changed tells whether a file must be read again.
func (f *fileState) changed(fi os.FileInfo) bool {
	now := stampOf(fi)
	return f.stamp.id != now.id ||
		!f.stamp.modTime.Equal(now.modTime) ||
		f.stamp.size != now.size ||
		f.readAt.Sub(now.modTime) < racyWindow
}

// object returns the file's object k.
func (f *fileState) object(k objKey) (object, bool) {
	for _, o := range f.objects {
		if o.key == k {
			return o.obj, true
		}
	}
	return nil, false
}

// ignoredName tells whether a directory entry is skipped.
func ignoredName(name string) bool {
	return strings.HasPrefix(name, ".") ||
		strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"))
}

// isManifest tells whether a file name has a manifest extension.
func isManifest(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// listing is what a walk of the directory found.
type listing struct {
	// files are the manifest files.
	files map[string]bool
	// dirs are the directories read, with their real paths.
	dirs map[string]string
	// unreadable are the directories that could not be read.
	unreadable map[string]error
	// visited are the real paths of the directories walked, to break
	// symbolic link loops.
	visited map[string]bool
}

// scan walks the directory, reloads the files that changed and applies the
// differences to the sink.
func (st *state) scan() {
	st.needRescan, st.fullScan = false, false
	clear(st.changed)
	l := listing{files: map[string]bool{}, dirs: map[string]string{}, unreadable: map[string]error{}, visited: map[string]bool{}}
	if err := st.walk(st.dir, &l); err != nil {
		// The whole directory is unreadable: keep serving what was
		// loaded, and retry.
		if !st.rootFailing {
			st.log.Error(err, "Cannot read the manifests directory, keeping the objects loaded so far")
		}
		st.rootFailing = true
		st.unwatchAll()
		st.degraded = true
		return
	}
	if st.rootFailing {
		st.log.Info("The manifests directory is readable again")
		st.rootFailing = false
	}
	for d, err := range l.unreadable {
		if _, known := st.unreadableDirs[d]; !known {
			st.log.Error(err, "Cannot read directory, keeping the objects loaded from it so far", "file", d)
		}
	}
	st.unreadableDirs = l.unreadable
	st.degraded = len(l.unreadable) > 0
	st.syncWatches(l.dirs)

	paths := make([]string, 0, len(l.files))
	for p := range l.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for i, load := range st.loadFiles(paths) {
		if !st.applyLoad(paths[i], load) {
			delete(l.files, paths[i])
		}
	}
	for p := range st.files {
		if !l.files[p] && !l.underUnreadable(p) {
			st.log.V(1).Info("Manifest file removed", "file", p)
			delete(st.files, p)
		}
	}
	st.reconcile()
}

// underUnreadable tells whether path is in a directory that could not be
// read.
func (l *listing) underUnreadable(path string) bool {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if _, ok := l.unreadable[d]; ok {
			return true
		}
		if parent := filepath.Dir(d); parent == d {
			return false
		}
	}
}

// walk lists the manifest files and the directories under dir, following
// symbolic links. Errors below the root are recorded in l; an error reading
// the root is returned.
func (st *state) walk(dir string, l *listing) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	if l.visited[real] {
		st.log.V(1).Info("Skipping directory already read through another path", "file", dir, "target", real)
		return nil
	}
	l.visited[real] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading directory: %w", err)
	}
	l.dirs[dir] = real
	for _, e := range entries {
		name := e.Name()
		if ignoredName(name) {
			continue
		}
		p := filepath.Join(dir, name)
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			if err != nil {
				st.log.V(1).Info("Skipping dangling symbolic link", "file", p, "err", err.Error())
				continue
			}
			typ = fi.Mode().Type()
		}
		switch {
		case typ.IsDir():
			if err := st.walk(p, l); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.unreadable[p] = err
			}
		case typ.IsRegular() && isManifest(name):
			l.files[p] = true
		}
	}
	return nil
}

// syncWatches watches exactly dirs (path -> real path).
func (st *state) syncWatches(dirs map[string]string) {
	if st.watcher == nil {
		return
	}
	for d, real := range st.watched {
		// A directory that is now another one (a swapped symbolic link)
		// is watched again.
		if dirs[d] != real {
			// Errors are expected: the watch of a deleted directory is
			// already gone.
			_ = st.watcher.Remove(d)
			delete(st.watched, d)
		}
	}
	added := false
	for d, real := range dirs {
		if _, ok := st.watched[d]; ok {
			continue
		}
		if err := st.watcher.Add(d); err != nil {
			if !st.unwatchable[d] {
				st.log.Error(err, "Cannot watch directory, polling it instead", "file", d)
				st.unwatchable[d] = true
			}
			st.degraded = true
			continue
		}
		delete(st.unwatchable, d)
		st.watched[d] = real
		added = true
	}
	// Files created in a new directory between reading it and watching it
	// would go unnoticed: read again once watched. The initial scan needs
	// it too, but harmlessly.
	if added {
		st.needRescan = true
	}
}

func (st *state) unwatchAll() {
	if st.watcher == nil {
		return
	}
	for d := range st.watched {
		_ = st.watcher.Remove(d)
		delete(st.watched, d)
	}
}

// fileLoad is what loadFile read of a file: what refresh then applies.
type fileLoad struct {
	// gone: the file does not exist; err: it cannot be read.
	gone bool
	err  error
	fi   os.FileInfo
	// same: the file has not changed since it was loaded (its stamp, or
	// else its contents).
	same   bool
	readAt time.Time
	sum    [sha256.Size]byte
	res    parseResult
}

// loadFile reads and parses the file at path unless it has not changed
// since old was loaded. It changes nothing: files are loaded concurrently
// (loadFiles) and applied in order.
func loadFile(path string, old *fileState) fileLoad {
	fi, err := os.Stat(path)
	if err != nil {
		return fileLoad{gone: errors.Is(err, fs.ErrNotExist), err: err}
	}
	if old != nil && !old.changed(fi) {
		return fileLoad{fi: fi, same: true}
	}
	readAt := time.Now()
	data, err := os.ReadFile(path)
	if err != nil {
		return fileLoad{gone: errors.Is(err, fs.ErrNotExist), err: err}
	}
	sum := sha256.Sum256(data)
	if old != nil && old.sum == sum {
		return fileLoad{fi: fi, same: true, readAt: readAt}
	}
	return fileLoad{fi: fi, readAt: readAt, sum: sum, res: parse(path, data)}
}

// loadFiles loads the files at paths (loadFile) on every CPU; the i-th
// result is paths[i]'s.
func (st *state) loadFiles(paths []string) []fileLoad {
	out := make([]fileLoad, len(paths))
	olds := make([]*fileState, len(paths))
	for i, p := range paths {
		olds[i] = st.files[p]
	}
	workers := min(runtime.GOMAXPROCS(0), len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(paths); i = int(next.Add(1) - 1) {
				out[i] = loadFile(paths[i], olds[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// refresh reloads a file if it changed. It returns false if the file is
// gone.
func (st *state) refresh(path string) bool {
	return st.applyLoad(path, loadFile(path, st.files[path]))
}

// applyLoad applies what loadFile read of the file at path. It returns
// false if the file is gone.
func (st *state) applyLoad(path string, l fileLoad) bool {
	old := st.files[path]
	switch {
	case l.gone:
		return false
	case l.err != nil:
		st.unreadable(path, old, l.err)
		return old != nil
	case l.same:
		if !l.readAt.IsZero() {
			old.stamp, old.readAt = stampOf(l.fi), l.readAt
		}
		return true
	}
	fi, readAt, sum, res := l.fi, l.readAt, l.sum, l.res
	for _, e := range res.errs {
		st.log.Error(e, "Invalid manifest, skipped", "file", e.File, "line", e.Line, "object", e.Object)
	}
	for _, w := range res.warnings {
		st.log.Info("Skipping manifest of unsupported kind", "file", w.File, "line", w.Line, "object", w.Object, "err", w.Err.Error())
	}

	objects := make([]fileObject, 0, len(res.objects))
	// index is where each key is in objects, with its line.
	index := make(map[objKey]struct{ at, line int }, len(res.objects))
	for _, p := range res.objects {
		prev, dup := index[p.key]
		if dup {
			st.log.Info("Object defined twice in the same file, the last definition wins",
				"file", path, "line", p.line, "previousLine", prev.line, "object", p.key.String())
		}
		ts := fileTimestamp(fi.ModTime())
		if a, ok := st.timestamps[p.key]; ok && (a.goneSince.IsZero() || readAt.Sub(a.goneSince) <= timestampGrace) {
			ts = a.ts
		} else if p.defaultedTimestamp {
			st.timestamps[p.key] = assignedTimestamp{ts: ts}
		}
		finalize(p, ts)
		if dup {
			objects[prev.at].obj = p.obj
			index[p.key] = struct{ at, line int }{prev.at, p.line}
			continue
		}
		index[p.key] = struct{ at, line int }{len(objects), p.line}
		objects = append(objects, fileObject{key: p.key, obj: p.obj})
	}
	if old != nil {
		keep := func(k objKey) {
			if o, ok := old.object(k); ok {
				if _, ok := index[k]; !ok {
					st.log.Info("Keeping the previous version of an object whose manifest is invalid", "file", path, "object", k.String())
					index[k] = struct{ at, line int }{len(objects), 0}
					objects = append(objects, fileObject{key: k, obj: o})
				}
			}
		}
		if res.unidentified {
			for _, o := range old.objects {
				keep(o.key)
			}
		} else {
			for _, k := range res.failedKeys {
				keep(k)
			}
		}
	}
	st.log.V(1).Info("Manifest file loaded", "file", path, "objects", len(objects), "errors", len(res.errs))
	st.files[path] = &fileState{stamp: stampOf(fi), readAt: readAt, sum: sum, objects: slices.Clip(objects)}
	return true
}

// unreadable reports a file that exists but cannot be read; its objects (if
// it was loaded before) are kept.
func (st *state) unreadable(path string, old *fileState, err error) {
	if old != nil {
		st.log.Error(err, "Cannot read manifest file, keeping its objects", "file", path)
		// Force a reread on the next scan.
		old.sum = [sha256.Size]byte{}
		old.readAt = time.Time{}
		return
	}
	st.log.Error(err, "Cannot read manifest file, skipped", "file", path)
}

// reconcile computes the objects the files define and sends the sink the
// differences with what it has.
func (st *state) reconcile() {
	paths := make([]string, 0, len(st.files))
	for p := range st.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	desired := map[objKey]object{}
	st.simple = true
	for _, p := range paths {
		for _, o := range st.files[p].objects {
			if _, twice := desired[o.key]; twice || o.key.kind == "Ingress" {
				st.simple = false
			}
			desired[o.key] = o.obj
		}
	}
	st.translateIngresses(desired)

	st.apply(desired, maps.Keys(st.emitted))
	now := time.Now()
	for k, a := range st.timestamps {
		switch _, ok := desired[k]; {
		case ok:
			if !a.goneSince.IsZero() {
				a.goneSince = time.Time{}
				st.timestamps[k] = a
			}
		case a.goneSince.IsZero():
			a.goneSince = now
			st.timestamps[k] = a
		case now.Sub(a.goneSince) > timestampGrace:
			delete(st.timestamps, k)
		}
	}
	st.swept = now
}

// sweepTimestamps forgets the timestamps of objects gone for longer than
// timestampGrace, at most once per timestampGrace: reconcileFiles marks
// objects gone but does not look at every timestamp.
func (st *state) sweepTimestamps(now time.Time) {
	if now.Sub(st.swept) < timestampGrace {
		return
	}
	st.swept = now
	for k, a := range st.timestamps {
		if !a.goneSince.IsZero() && now.Sub(a.goneSince) > timestampGrace {
			delete(st.timestamps, k)
		}
	}
}

// apply sends the sink, in dependency order, the objects of desired it
// does not have as they are, and deletes the keys among candidates that
// it has and desired lacks.
func (st *state) apply(desired map[objKey]object, candidates iter.Seq[objKey]) {
	var upserts, deletes []objKey
	for k := range candidates {
		if _, want := desired[k]; !want {
			if _, has := st.emitted[k]; has {
				deletes = append(deletes, k)
			}
		}
	}
	for k, o := range desired {
		if prev, ok := st.emitted[k]; !ok || prev.GetResourceVersion() != o.GetResourceVersion() {
			upserts = append(upserts, k)
		}
	}
	sortKeys(deletes, true)
	sortKeys(upserts, false)
	// One change where the sink takes one: a pass never sees a file's
	// deletions without its upserts (a route renamed in a file, say).
	batch, _ := st.sink.(store.BatchSink)
	var dels, ups []kruntime.Object
	for _, k := range deletes {
		st.log.V(2).Info("Deleting object", "object", k.String())
		if batch != nil {
			dels = append(dels, st.emitted[k])
		} else {
			st.sink.Delete(st.emitted[k])
		}
		delete(st.emitted, k)
	}
	for _, k := range upserts {
		st.log.V(2).Info("Upserting object", "object", k.String(), "resourceVersion", desired[k].GetResourceVersion())
		if batch != nil {
			ups = append(ups, desired[k])
		} else {
			st.sink.Upsert(desired[k])
		}
		st.emitted[k] = desired[k]
	}
	if batch != nil && len(dels)+len(ups) > 0 {
		batch.Apply(dels, ups)
	}
	if len(upserts)+len(deletes) > 0 {
		st.log.V(1).Info("Applied manifest changes", "upserts", len(upserts), "deletes", len(deletes), "objects", len(st.emitted))
	}
}

// sortKeys sorts keys by kind rank (descending if reverse), then namespace
// and name.
func sortKeys(keys []objKey, reverse bool) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if ra, rb := kindRank(a.kind), kindRank(b.kind); ra != rb {
			if reverse {
				return ra > rb
			}
			return ra < rb
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
}
