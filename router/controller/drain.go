package controller

import (
	"context"
	"time"

	"github.com/openshift-router-go/router/haproxy/dynamic"
)

// drainInterval is how often the servers a runtime change left in
// maintenance (their lines are gone) are tried for deletion.
const drainInterval = time.Second

// maxDeletesPerDrain bounds the runtime commands one drain sends, so the
// loop that applies changes is never held long.
const maxDeletesPerDrain = 200

// noteRemoved records the removed servers of changed (the sections a
// runtime change left running): HAProxy keeps them, in maintenance, until
// their connections are done, and drain deletes them then.
func (c *Controller) noteRemoved(changed *dynamic.Config) {
	refs := changed.Removed()
	if len(refs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining == nil {
		c.draining = make(map[dynamic.ServerRef]bool, len(refs))
	}
	for _, r := range refs {
		c.draining[r] = true
	}
}

// drain deletes the removed servers whose connections are done ("del
// server", which HAProxy refuses while a server has any: tried again at
// the next drain). A server added back meanwhile, or gone with a reload,
// is no longer drained. It runs in the loop that applies changes.
func (c *Controller) drain(ctx context.Context) {
	c.mu.RLock()
	running, n := c.running, len(c.draining)
	refs := make([]dynamic.ServerRef, 0, min(n, maxDeletesPerDrain))
	for r := range c.draining {
		if len(refs) == maxDeletesPerDrain {
			break
		}
		refs = append(refs, r)
	}
	c.mu.RUnlock()
	if n == 0 {
		return
	}
	if running == nil || c.o.Runtime == nil || !c.o.Process.Running() {
		// What runs is unknown: the next load starts from the file.
		c.mu.Lock()
		c.draining = nil
		c.mu.Unlock()
		return
	}
	deleted := 0
	for _, r := range refs {
		if !running.IsRemoved(r) {
			c.mu.Lock()
			delete(c.draining, r)
			c.mu.Unlock()
			continue
		}
		if _, err := dynamic.Apply(ctx, c.o.Runtime, []dynamic.Command{dynamic.DeleteCommand(r)}); err != nil {
			c.o.Logger.V(2).Info("removed server not deleted yet", "server", r.String(), "reply", err.Error())
			continue
		}
		c.mu.Lock()
		running.Forget(r)
		delete(c.draining, r)
		c.mu.Unlock()
		deleted++
	}
	if deleted > 0 {
		c.o.Logger.V(1).Info("drained servers deleted", "servers", deleted)
	}
}
