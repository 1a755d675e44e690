package reactor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// writevBatch writes iov with one writev syscall from a reused iovec array
// when nothing is queued for c, so that the hot path does not allocate (x/sys's
// Writev allocates its iovec array past 8 slices). What the kernel does not
// take, or an error, is handed to gnet's Writev, which queues the rest or
// closes the connection the way it does for its own writes.
func (c *Conn) writevBatch(iov [][]byte) error {
	if c.gc == nil || c.ownsQueue() || c.state&(stateCloseQueued|stateClosed|stateWriteShut) != 0 {
		return c.Writev(iov) // the reactor's own queue, or the error Writev gives
	}
	if c.gc.OutboundBuffered() > 0 {
		return c.Writev(iov)
	}
	vecs := c.loop.iovecs[:0]
	total := 0
	for _, p := range iov {
		if len(p) == 0 {
			continue
		}
		v := unix.Iovec{Base: &p[0]}
		v.SetLen(len(p))
		vecs = append(vecs, v)
		total += len(p)
	}
	c.loop.iovecs = vecs
	if len(vecs) == 0 {
		return nil
	}
	r, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(c.gc.Fd()), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
	clear(vecs) // keep no pointers into frames
	n := int(r)
	if errno != 0 {
		n = 0
	}
	if n == total {
		return nil
	}
	for len(iov) > 0 && n >= len(iov[0]) {
		n -= len(iov[0])
		iov = iov[1:]
	}
	if n > 0 {
		iov[0] = iov[0][n:]
	}
	return c.Writev(iov)
}
