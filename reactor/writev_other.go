//go:build !linux

package reactor

// writevBatch writes iov with gnet's Writev.
func (c *Conn) writevBatch(iov [][]byte) error { return c.Writev(iov) }
