// Package templates holds the default haproxy-config.template, the helper
// functions templates can call (sprig's plus OpenShift's template router
// helpers) and the renderer that turns a template and the model into files.
package templates

import (
	"bytes"
	_ "embed"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/template"

	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/model"
)

// OpenShiftBaseDir is the directory OpenShift's templates name their files
// under; the renderer writes those files relative to the working directory.
const OpenShiftBaseDir = "/var/lib/haproxy/"

// ConfigTemplateName is the named template that produces haproxy.config.
const ConfigTemplateName = OpenShiftBaseDir + layout.ConfigFile

//go:embed haproxy-config.template
var defaultTemplate string

// Default returns the text of the embedded default template.
func Default() string { return defaultTemplate }

// File is one rendered file.
type File struct {
	// Path is absolute, inside the working directory.
	Path string
	Data []byte
}

// Renderer executes a parsed template.
type Renderer struct {
	// files maps each file template name to the template set it is
	// executed from (a clone with generateHAProxyMap bound to that file).
	files map[string]*template.Template
	names []string

	// mu serialises Render: generated holds, during one Render, the
	// files the template asked for with generateHAProxyAllowlistFile.
	mu        sync.Mutex
	generated map[string][]byte
	// sizes are the sizes of the files last rendered, by template name:
	// the next Render allocates each buffer once at about that size
	// instead of doubling its way there (a configuration of 10,000 routes
	// is several MiB).
	sizes map[string]int
}

// allowlistFile is the renderer's generateHAProxyAllowlistFile: it
// returns the path of the allowlist file, as OpenShift's helper does, and
// records the file, which Render returns with the rendered files — the
// router writes it with them instead of the template writing to disk.
func (r *Renderer) allowlistFile(workingDir string, id model.ServiceAliasConfigKey, value string) string {
	p, data := AllowlistFile(workingDir, id, value)
	if p != "" && r.generated != nil {
		r.generated[p] = data
	}
	return p
}

// isFileTemplate reports whether a defined template is a file to write:
// absolute names must be under /var/lib/haproxy/ (OpenShift's layout), and
// relative names with a directory part ("conf/haproxy.config") are taken
// relative to the working directory. Other names are fragments.
func isFileTemplate(name string) (bool, error) {
	rel := name
	if strings.HasPrefix(name, "/") {
		if !strings.HasPrefix(name, OpenShiftBaseDir) {
			return false, fmt.Errorf("template %q: file templates must be named under %s (or relative, like conf/haproxy.config)", name, OpenShiftBaseDir)
		}
		rel = strings.TrimPrefix(name, OpenShiftBaseDir)
	} else if !strings.Contains(name, "/") {
		return false, nil
	}
	clean := filepath.Clean(rel)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return false, fmt.Errorf("template %q: file templates must stay inside the working directory", name)
	}
	return true, nil
}

// Parse parses a template. name is used in error messages (the file name
// for a custom template), so errors point at the template line.
func Parse(name, text string, funcs template.FuncMap) (*Renderer, error) {
	t, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing template: %w", err)
	}
	r := &Renderer{files: map[string]*template.Template{}, sizes: map[string]int{}}
	found := false
	for _, d := range t.Templates() {
		n := d.Name()
		if n == name {
			continue // the text outside any define
		}
		ok, err := isFileTemplate(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		r.names = append(r.names, n)
		if n == ConfigTemplateName || n == strings.TrimPrefix(ConfigTemplateName, OpenShiftBaseDir) {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("template %s: no template defines %q", name, ConfigTemplateName)
	}
	sort.Strings(r.names)
	for _, n := range r.names {
		clone, err := t.Clone()
		if err != nil {
			return nil, fmt.Errorf("preparing template %q: %w", n, err)
		}
		r.files[n] = clone.Funcs(MapFileFuncs(n)).Funcs(template.FuncMap{"generateHAProxyAllowlistFile": r.allowlistFile})
	}
	return r, nil
}

// FileNames returns the names of the file templates, sorted.
func (r *Renderer) FileNames() []string { return append([]string(nil), r.names...) }

// OutputPath maps a file template name to the path it is written to.
func OutputPath(workingDir, name string) string {
	return filepath.Join(workingDir, strings.TrimPrefix(name, OpenShiftBaseDir))
}

// Render executes every file template with td. The files the templates
// asked for with generateHAProxyAllowlistFile follow the file templates'
// output, sorted by path; a path a file template also writes is left to
// the file template.
func (r *Renderer) Render(td *model.TemplateData) ([]File, error) {
	return r.render(td, "", true)
}

// RenderExcept renders every file template but the one written to path
// (as Render does otherwise).
func (r *Renderer) RenderExcept(td *model.TemplateData, path string) ([]File, error) {
	return r.render(td, filepath.Clean(path), true)
}

// RenderPartial renders every file template for td, a model of a few
// routes only (the files are not the router's: their sizes do not size
// the next render's buffers).
func (r *Renderer) RenderPartial(td *model.TemplateData) ([]File, error) {
	return r.render(td, "", false)
}

func (r *Renderer) render(td *model.TemplateData, skip string, record bool) ([]File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.generated = map[string][]byte{}
	defer func() { r.generated = nil }()
	files := make([]File, 0, len(r.names))
	written := map[string]bool{}
	for _, n := range r.names {
		p := OutputPath(td.WorkingDir, n)
		if p == skip {
			written[p] = true
			continue
		}
		// 1/16 more than last time: a file that grew a little is not
		// copied to a buffer twice its size. A partial render is a few
		// routes: it starts small.
		last := 0
		if record {
			last = r.sizes[n]
		}
		buf := bytes.NewBuffer(make([]byte, 0, last+last/16))
		if err := r.files[n].ExecuteTemplate(buf, n, *td); err != nil {
			return nil, fmt.Errorf("executing template: %w", err)
		}
		if record {
			r.sizes[n] = buf.Len()
		}
		data := buf.Bytes()
		if cap(data) > len(data)+len(data)/8+4096 {
			// The buffer grew by doubling (a first render, or a file
			// that grew a lot): the router keeps the file until the
			// next pass, so keep no more than it takes.
			data = bytes.Clone(data)
		}
		written[p] = true
		files = append(files, File{Path: p, Data: data})
	}
	extra := make([]string, 0, len(r.generated))
	for p := range r.generated {
		if !written[filepath.Clean(p)] {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	for _, p := range extra {
		files = append(files, File{Path: filepath.Clean(p), Data: r.generated[p]})
	}
	return files, nil
}
