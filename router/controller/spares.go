package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/layout"
	"github.com/openshift-router-go/router/router/pipeline"
)

// maxSpareBackends bounds the spare backends of one configuration, of
// every shape together.
const maxSpareBackends = 64

// writeSpares writes the spare backends of config (dynamic.Spares: empty
// backends of the shapes routes share, for routes added before the next
// reload) to Options.SparesFile, the second configuration file HAProxy
// loads, before a start or reload; it returns them (none when spares are
// off or could not be written: the file is then left empty).
func (c *Controller) writeSpares(config []byte) []byte {
	if c.o.SparesFile == "" {
		return nil
	}
	spares := dynamic.Spares(config, c.o.SpareBackends, maxSpareBackends)
	if err := writeFileAtomic(c.o.SparesFile, spares); err != nil {
		c.o.Logger.Error(err, "writing the spare backends; loading without them")
		if err := writeFileAtomic(c.o.SparesFile, nil); err != nil {
			c.o.Logger.Error(err, "emptying the spare backends' file")
		}
		return nil
	}
	return spares
}

// checkWithSpares checks the staged configuration with the spare backends
// written (spares). They are the router's own addition, never a reason to
// refuse a configuration: refused with them, it is checked without them.
// It returns the spares HAProxy will load and the check's error.
func (c *Controller) checkWithSpares(ctx context.Context, out *pipeline.Output, spares []byte) ([]byte, error) {
	err := c.o.Process.Check(ctx, out.ConfigPath)
	if err == nil || len(spares) == 0 {
		return spares, err
	}
	c.o.Logger.Error(err, "configuration with spare backends refused; loading it without them")
	if werr := writeFileAtomic(c.o.SparesFile, nil); werr != nil {
		return nil, fmt.Errorf("%w (and emptying the spare backends: %v)", err, werr)
	}
	return nil, c.o.Process.Check(ctx, out.ConfigPath)
}

// parseLoaded parses what HAProxy loaded (config and the spare backends),
// for the runtime diffs that follow: the spares are orphans from the start
// (the configuration does not have them).
func parseLoaded(config, spares []byte) *dynamic.Config {
	rendered := dynamic.Parse(config)
	if len(spares) == 0 {
		return rendered
	}
	all := dynamic.Parse(append(append([]byte{}, config...), spares...))
	if ch := dynamic.Diff(all, rendered); !ch.Reload && len(ch.Commands) == 0 {
		return ch.Running
	}
	return rendered
}

// writeFileAtomic replaces the file at p with data (the router's user
// only).
func writeFileAtomic(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".spares")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), layout.FileMode)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
