package dynamic

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Execer sends one runtime API command and returns HAProxy's reply
// (haproxy/runtimeapi.Client); ExecPayload sends one with a multi-line
// payload.
type Execer interface {
	Exec(ctx context.Context, command string) (string, error)
	ExecPayload(ctx context.Context, command, payload string) (string, error)
}

// CertificateCommands replace the contents of a certificate file HAProxy
// loaded (a crt of a bind line or crt-list: certificate, key and chain)
// with data, in one transaction.
func CertificateCommands(path string, data []byte) []Command {
	return []Command{
		{Kind: "ssl-set", Text: "set ssl cert " + path, Payload: string(data)},
		{Kind: "ssl-commit", Text: "commit ssl cert " + path},
	}
}

// Apply sends the commands in order and stops at the first one HAProxy
// refuses or that cannot be sent. It returns how many were applied.
func Apply(ctx context.Context, api Execer, cmds []Command) (int, error) {
	for i, c := range cmds {
		var reply string
		var err error
		if c.Payload != "" {
			reply, err = api.ExecPayload(ctx, c.Text, c.Payload)
		} else {
			reply, err = api.Exec(ctx, c.Text)
		}
		if err != nil {
			return i, err
		}
		if !accepted(c, reply) {
			return i, &RefusedError{Command: c, Reply: firstLine(reply)}
		}
	}
	return len(cmds), nil
}

// RefusedError is a command HAProxy answered with an error (as opposed to
// one that could not be sent): the command names what it was about (a
// backend's server, a certificate file), so the failure can be traced.
type RefusedError struct {
	Command Command
	// Reply is the first line of HAProxy's answer.
	Reply string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("haproxy refused %q: %s", e.Command.Text, e.Reply)
}

// accepted interprets the reply of a "set server" command: HAProxy answers
// nothing when a weight or state is set, and describes the change of an
// address; anything else is an error message.
func accepted(c Command, reply string) bool {
	r := strings.TrimSpace(reply)
	switch c.Kind {
	case "addr":
		return strings.Contains(r, "changed from") || strings.HasPrefix(r, "no need to change")
	case "ca-new":
		return strings.HasPrefix(r, "New CA file created")
	case "ssl-set", "ca-set":
		l := strings.ToLower(r)
		return strings.HasPrefix(l, "transaction created") || strings.HasPrefix(l, "transaction updated")
	case "ssl-commit", "ca-commit":
		return strings.HasSuffix(r, "Success!")
	case "add":
		return strings.HasPrefix(r, "New server registered")
	case "del":
		return strings.HasPrefix(r, "Server deleted")
	case "ssl-new":
		return strings.HasPrefix(r, "New empty certificate store")
	case "crt-list-add":
		return strings.HasSuffix(r, "Success!")
	case "crt-list-del":
		return strings.HasPrefix(r, "Entry '") && strings.HasSuffix(r, "!") && strings.Contains(r, " deleted in crtlist ")
	case "ssl-del":
		return strings.HasPrefix(r, "Certificate '") && strings.HasSuffix(r, "' deleted!")
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

// defaultBufSize is HAProxy's tune.bufsize when the configuration sets
// none.
const defaultBufSize = 16384

// payloadMargin is what MaxPayload keeps for the command line and the
// framing around the payload.
const payloadMargin = 1024

// MaxPayload returns the largest command with its payload (a certificate
// for "set ssl cert") that HAProxy's runtime API takes under the
// configuration config: HAProxy reads a command and its payload into one
// buffer of tune.bufsize (16384 unless the global section sets it); a
// longer one is dropped and the connection closed without an answer.
func MaxPayload(config []byte) int {
	size := defaultBufSize
	global := false
	for _, line := range strings.Split(string(config), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			f := strings.Fields(line)
			global = len(f) > 0 && f[0] == "global"
			continue
		}
		if !global {
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "tune.bufsize" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				size = n
			}
		}
	}
	return size - payloadMargin
}
