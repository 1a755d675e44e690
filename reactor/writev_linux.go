package reactor

// writevBatch writes iov with one writev syscall from the loop's reused
// iovec array when nothing is queued for c, so that the hot path does not
// allocate (x/sys's Writev allocates its iovec array past 8 slices). What
// the kernel does not take, or an error, is handed to gnet's Writev, which
// queues the rest or closes the connection the way it does for its own
// writes.
func (c *Conn) writevBatch(iov [][]byte) error {
	if c.gc == nil || c.ownsQueue() || c.state&(stateCloseQueued|stateClosed|stateWriteShut) != 0 {
		return c.Writev(iov) // the reactor's own queue, or the error Writev gives
	}
	if c.gc.OutboundBuffered() > 0 {
		return c.Writev(iov)
	}
	total := 0
	for _, p := range iov {
		total += len(p)
	}
	// An error writes nothing; gnet's Writev meets it again and reports it.
	n, _ := c.loop.iovecs.Write(c.gc.Fd(), iov)
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
