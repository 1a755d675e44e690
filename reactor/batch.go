package reactor

import "github.com/tidegate/tidegate/reactor/writev"

// WriteBatch writes b to c with one write or writev call (what the kernel
// does not take is queued, as by Write) and empties b. Frames b references
// may be reused once it returns.
func (c *Conn) WriteBatch(b *writev.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	iov := b.Bytes()
	var err error
	if len(iov) == 1 {
		err = c.Write(iov[0])
	} else {
		err = c.writevBatch(iov)
	}
	b.Reset()
	return err
}
