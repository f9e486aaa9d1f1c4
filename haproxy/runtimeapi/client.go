// Package runtimeapi is a minimal client for HAProxy's runtime API (the
// "stats socket") and for the master CLI of a master-worker HAProxy (the
// socket given with -S). Both speak the same line protocol over a unix socket:
// the client writes one command terminated by "\n" and HAProxy writes the
// reply and closes the connection, as long as the session is not switched to
// interactive mode with "prompt".
//
// The client half-closes its side of the connection once the command is
// written. The stats socket closes after one reply anyway, but HAProxy 2.6's
// master CLI only ends a non-interactive session once it has seen the end of
// the client's input: without the half-close a "show proc" sent to the master
// socket waits until the client gives up.
package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
	"unsafe"
)

// DefaultTimeout bounds one Exec call when Client.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// ErrInvalidCommand is returned (wrapped) for a command that cannot be sent
// safely as a single runtime API command.
var ErrInvalidCommand = errors.New("invalid runtime API command")

// Client sends commands to one HAProxy runtime API or master CLI socket.
// The zero Timeout means DefaultTimeout. A Client holds no connection and is
// safe for concurrent use.
type Client struct {
	// Path is the unix socket path.
	Path string
	// Timeout bounds a whole Exec call (connect, write and read).
	Timeout time.Duration
}

// Exec connects to the socket, sends command followed by "\n" and returns
// HAProxy's whole reply, read until HAProxy closes the connection.
//
// A command HAProxy does not understand is not an error here: HAProxy
// answers with an error text (e.g. "Unknown command...") and that text is
// returned with a nil error; interpreting replies is the caller's job.
//
// Commands containing "\n", "\r" or ";" (HAProxy's command separator) or NUL
// are refused with an error wrapping ErrInvalidCommand, so that a value
// interpolated into a command can never smuggle in a second command.
func (c *Client) Exec(ctx context.Context, command string) (string, error) {
	name := commandName(command)
	if err := validateCommand(command); err != nil {
		return "", fmt.Errorf("runtime API %s: command %q: %w", c.Path, name, err)
	}
	return c.send(ctx, name, command+"\n", 0)
}

// ExecSized is Exec for a command whose reply is about sizeHint bytes
// (e.g. the last reply to the same command): the reply is read into one
// buffer of that size instead of one grown as it arrives. A long reply
// ("show stat" of 10,000 routes is about 7 MB) read without a hint
// allocates several times its size.
func (c *Client) ExecSized(ctx context.Context, command string, sizeHint int) (string, error) {
	name := commandName(command)
	if err := validateCommand(command); err != nil {
		return "", fmt.Errorf("runtime API %s: command %q: %w", c.Path, name, err)
	}
	return c.send(ctx, name, command+"\n", sizeHint)
}

// ExecPayload sends a command that takes a multi-line payload (e.g. "set
// ssl cert FILE" with a PEM), using the runtime API's "<<" syntax: the
// command, " <<", the payload lines and an empty line that ends it. Blank
// lines of the payload are dropped (one would end it early) and CRLF line
// ends become LF; a payload with NUL or a lone CR is refused with
// ErrInvalidCommand.
func (c *Client) ExecPayload(ctx context.Context, command, payload string) (string, error) {
	name := commandName(command)
	if err := validateCommand(command); err != nil {
		return "", fmt.Errorf("runtime API %s: command %q: %w", c.Path, name, err)
	}
	payload = strings.ReplaceAll(payload, "\r\n", "\n")
	if strings.ContainsAny(payload, "\r\x00") {
		return "", fmt.Errorf("runtime API %s: command %q: %w: payload contains CR or NUL", c.Path, name, ErrInvalidCommand)
	}
	var b strings.Builder
	b.WriteString(command + " <<\n")
	for _, line := range strings.Split(payload, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	return c.send(ctx, name, b.String(), 0)
}

// send writes text (one command, terminated) and reads the whole reply,
// into a buffer of sizeHint bytes to begin with.
func (c *Client) send(ctx context.Context, name, text string, sizeHint int) (string, error) {

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return "", fmt.Errorf("runtime API %s: command %q: connect: %w", c.Path, name, err)
	}
	defer conn.Close()

	// The deadline bounds the I/O; AfterFunc makes a cancellation of ctx
	// interrupt blocked reads and writes as well.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	ioErr := func(op string, err error) error {
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The connection deadline is ctx's deadline; it can fire
			// a moment before ctx itself reports it.
			err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("runtime API %s: command %q: %s: %w", c.Path, name, op, err)
	}

	if _, err := io.WriteString(conn, text); err != nil {
		return "", ioErr("write", err)
	}
	if uc, ok := conn.(*net.UnixConn); ok {
		if err := uc.CloseWrite(); err != nil {
			return "", ioErr("close write side", err)
		}
	}
	reply, err := ReadString(conn, sizeHint)
	if err != nil {
		return reply, ioErr("read reply", err)
	}
	return reply, nil
}

// ReadString reads r to its end into a string: into one buffer of
// sizeHint bytes (plus a little, to see the end) when the text fits,
// returned without a copy; a longer text goes on into chunks that double
// from 4 KiB up to 1 MiB and is joined once whole (about twice its size
// allocated, where a buffer grown as the text arrives allocates about
// five times its size; a reply of a few hundred bytes, as most commands
// get, allocates about the hint). What was read is returned with an
// error.
func ReadString(r io.Reader, sizeHint int) (string, error) {
	buf := make([]byte, 0, max(sizeHint, 0)+512)
	var full [][]byte
	n := 0
	for {
		if len(buf) == cap(buf) {
			full = append(full, buf)
			buf = make([]byte, 0, min(max(2*cap(buf), 4<<10), spillChunk))
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf, n = buf[:len(buf)+k], n+k
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return joined(full, buf, n), err
		}
	}
}

// spillChunk is the largest chunk ReadString reads into.
const spillChunk = 1 << 20

// joined is the text of the full chunks and last (n bytes in all), as a
// string sharing its bytes with no one: last itself when it is all.
func joined(full [][]byte, last []byte, n int) string {
	if n == 0 {
		return ""
	}
	out := last
	if len(full) > 0 {
		out = make([]byte, 0, n)
		for _, c := range full {
			out = append(out, c...)
		}
		out = append(out, last...)
	}
	// The bytes are not written again (strings.Builder does the same).
	return unsafe.String(unsafe.SliceData(out), len(out))
}

func validateCommand(command string) error {
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("%w: empty command", ErrInvalidCommand)
	}
	if i := strings.IndexAny(command, "\n\r\x00"); i >= 0 {
		return fmt.Errorf("%w: contains %q", ErrInvalidCommand, command[i])
	}
	// A ';' separates commands unless escaped ("\;", which HAProxy reads
	// as a ';' in an argument, e.g. a map value).
	for i := 0; i < len(command); i++ {
		if command[i] == ';' && (i == 0 || command[i-1] != '\\' || (i >= 2 && command[i-2] == '\\')) {
			return fmt.Errorf("%w: contains ';'", ErrInvalidCommand)
		}
	}
	return nil
}

// commandName returns the first two words of a command, for error messages
// that must not repeat arguments (which may be long or sensitive).
func commandName(command string) string {
	f := strings.Fields(command)
	if len(f) > 2 {
		f = f[:2]
	}
	name := strings.Join(f, " ")
	// Never echo control characters of a refused command.
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
}
