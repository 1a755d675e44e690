// Package handoverwire carries a live upgrade's messages between two
// processes over a Unix stream socket: each message is a 4-byte big-endian
// length, the payload, and the descriptors passed with it (SCM_RIGHTS,
// attached to its first bytes). It knows nothing of gnet or the loops: the
// reactor's Detach and ListenerFiles give the descriptors it sends, and its
// Adopt takes the ones it receives.
package handoverwire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// maxPayload bounds one message; maxFiles the
// descriptors it carries.
const (
	maxPayload = 64 << 20
	maxFiles   = 64
)

// Conn carries hand-over messages between two processes over a Unix stream
// socket.
type Conn struct {
	c   *net.UnixConn
	oob []byte
}

// NewConn wraps c.
func NewConn(c *net.UnixConn) *Conn {
	return &Conn{c: c, oob: make([]byte, unix.CmsgSpace(4*maxFiles))}
}

// Close closes the socket.
func (h *Conn) Close() error { return h.c.Close() }

// CloseWrite ends this side's messages; the other side's Recv then reports
// io.EOF, and it may still send.
func (h *Conn) CloseWrite() error { return h.c.CloseWrite() }

// SetWriteDeadline bounds how long Send may block on a peer that stops
// reading (as net.Conn's does); a Send past it fails with
// os.ErrDeadlineExceeded, and a zero t removes the bound.
func (h *Conn) SetWriteDeadline(t time.Time) error { return h.c.SetWriteDeadline(t) }

// Send writes one message with files; the files stay open for the caller.
func (h *Conn) Send(payload []byte, files ...*os.File) error {
	if len(payload) > maxPayload || len(files) > maxFiles {
		return fmt.Errorf("handoverwire: handover message of %d bytes and %d descriptors is over the bounds (%d, %d)",
			len(payload), len(files), maxPayload, maxFiles)
	}
	msg := make([]byte, 4+len(payload))
	msg[0], msg[1], msg[2], msg[3] = byte(len(payload)>>24), byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	copy(msg[4:], payload)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			// Not f.Fd(): it puts the descriptor in blocking mode, and the
			// flag belongs to the open file, shared with the socket this
			// process and the other one still use (a listener left blocking
			// hangs its accept, and a close that waits for it).
			fd, err := rawFD(f)
			if err != nil {
				return fmt.Errorf("handoverwire: sending a handover message: %w", err)
			}
			fds[i] = fd
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := h.c.WriteMsgUnix(msg, oob, nil)
	runtime.KeepAlive(files) // the descriptors stay open until they are sent
	if err != nil {
		return fmt.Errorf("handoverwire: sending a handover message: %w", err)
	}
	if n < len(msg) { // the descriptors went with the first part
		if _, err := h.c.Write(msg[n:]); err != nil {
			return fmt.Errorf("handoverwire: sending a handover message: %w", err)
		}
	}
	return nil
}

// ErrFilesDropped is Recv's error for a message whose descriptors did not
// all arrive: the kernel installs what this process's descriptor limit
// allows and closes the rest (MSG_CTRUNC). Recv then returns the message's
// payload with it and no files (it closes those that came), and the Conn
// stays in step: the next Recv reads the next message.
var ErrFilesDropped = errors.New("handoverwire: the descriptors of a handover message were dropped on receipt")

// Recv reads one message and the files that came with it.
func (h *Conn) Recv() ([]byte, []*os.File, error) {
	var hdr [4]byte
	n, oobn, flags, _, err := h.c.ReadMsgUnix(hdr[:], h.oob)
	if err != nil {
		return nil, nil, err
	}
	files, ferr := parseRights(h.oob[:oobn])
	if ferr != nil {
		return nil, nil, ferr
	}
	fail := func(err error) ([]byte, []*os.File, error) {
		closeFiles(files)
		return nil, nil, err
	}
	if _, err := io.ReadFull(h.c, hdr[n:]); err != nil {
		return fail(fmt.Errorf("handoverwire: reading a handover message header: %w", err))
	}
	size := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
	if size > maxPayload {
		return fail(fmt.Errorf("handoverwire: handover message of %d bytes is over the bound of %d", size, maxPayload))
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(h.c, payload); err != nil {
		return fail(fmt.Errorf("handoverwire: reading a handover message of %d bytes: %w", size, err))
	}
	if flags&unix.MSG_CTRUNC != 0 {
		// Some of them may have come: a message is whole or refused.
		closeFiles(files)
		return payload, nil, fmt.Errorf("%w (%d of them arrived, in %d bytes of control data)", ErrFilesDropped, len(files), oobn)
	}
	return payload, files, nil
}

// rawFD returns f's descriptor without changing its blocking mode.
func rawFD(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("descriptor of %s: %w", f.Name(), err)
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1, fmt.Errorf("descriptor of %s: %w", f.Name(), err)
	}
	return fd, nil
}

// parseRights returns the descriptors passed in oob as files, close-on-exec.
func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("handoverwire: handover control message: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "handover"))
		}
	}
	return files, nil
}

// NewPair returns a connected pair of Unix stream sockets: the
// Conn for this process and the other end as a file, for a child
// process (exec.Cmd.ExtraFiles) to open with FromFile.
func NewPair() (*Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handoverwire: socketpair for a handover: %w", err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	mine := os.NewFile(uintptr(fds[0]), "handover")
	h, err := FromFile(mine)
	mine.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return h, os.NewFile(uintptr(fds[1]), "handover"), nil
}

// FromFile returns the Conn of a Unix socket given as a
// file, such as the end NewPair gave a child. f may be closed after.
func FromFile(f *os.File) (*Conn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("handoverwire: handover socket %s: %w", f.Name(), err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("handoverwire: handover socket %s is a %T, not a Unix socket", f.Name(), c)
	}
	return NewConn(uc), nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
