package cluster

// Moved records that the session of t is now on backend (the group a move
// between servers took it to): its record in the network view says so
// from the next heartbeat, which republishes it. A session kept local (a
// conflict) stays so. It may be called from any goroutine.
func (c *Client) Moved(t *Ticket, backend string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.sess.Backend = clean(backend, maxHostBytes)
	t.record = t.sess.Record()
	if t.state == tkPublished {
		t.state = tkLocal
	}
}
