package dynamic

import (
	"context"
	"fmt"
	"strings"
)

// Execer sends one runtime API command and returns HAProxy's reply
// (haproxy/runtimeapi.Client).
type Execer interface {
	Exec(ctx context.Context, command string) (string, error)
}

// Apply sends the commands in order and stops at the first one HAProxy
// refuses or that cannot be sent. It returns how many were applied.
func Apply(ctx context.Context, api Execer, cmds []Command) (int, error) {
	for i, c := range cmds {
		reply, err := api.Exec(ctx, c.Text)
		if err != nil {
			return i, err
		}
		if !accepted(c, reply) {
			return i, fmt.Errorf("haproxy refused %q: %s", c.Text, firstLine(reply))
		}
	}
	return len(cmds), nil
}

// accepted interprets the reply of a "set server" command: HAProxy answers
// nothing when a weight or state is set, and describes the change of an
// address; anything else is an error message.
func accepted(c Command, reply string) bool {
	r := strings.TrimSpace(reply)
	if c.Kind == "addr" {
		return strings.Contains(r, "changed from") || strings.HasPrefix(r, "no need to change")
	}
	return r == ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
