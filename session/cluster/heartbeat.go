package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeat refreshes the proxy's keys every Heartbeat (probes Redis every
// Retry while the breaker is open) until Stop.
func (c *Client) heartbeat() {
	defer c.wg.Done()
	t := time.NewTimer(c.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.tick()
		if c.open.Load() {
			t.Reset(c.cfg.Retry)
		} else {
			t.Reset(c.cfg.Heartbeat)
		}
	}
}

// tick is one heartbeat: probe when the breaker is open, republish what
// needs it, send the releases left over, refresh the keys and read the
// network's state.
func (c *Client) tick() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	if c.open.Load() {
		if err := c.rdb.Ping(ctx).Err(); err != nil {
			c.fallbacks[OpHeartbeat].Add(1)
			return
		}
		c.fails.Store(0)
		c.needReset.Store(true)
		c.open.Store(false)
		c.cfg.Log.Info().Str("redis", c.addr()).Msg("cluster: Redis answers again; republishing this proxy's sessions")
	}
	if c.needReset.Swap(false) {
		// Cleared first: a failure while this runs asks for another.
		if err := c.republish(true); err != nil {
			c.needReset.Store(true)
			c.result(OpRepublish, err)
			return
		}
	} else {
		c.flushReleases(ctx)
		if err := c.republish(false); err != nil {
			c.result(OpRepublish, err)
			return
		}
	}
	floor := c.acked.Load()
	res, err := c.run(ctx, heartbeatScript, c.cfg.ID, c.ttl.Milliseconds(), c.instance).Int64Slice()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("heartbeat script answered %v, want 3 numbers", res)
	}
	c.result(OpHeartbeat, err)
	if err != nil {
		return
	}
	c.checkGen(floor, res[2])
	if lost := res[0] == 0 && c.beaten.Load(); lost || c.needReset.Load() {
		// Redis lost this proxy's keys (a restart, or no heartbeat for a
		// whole TTL), or writes it had acknowledged (checkGen): publish
		// everything again now.
		if lost {
			c.cfg.Log.Info().Str("redis", c.addr()).Msg("cluster: this proxy's keys were gone from Redis; republishing its sessions")
		}
		c.needReset.Store(false)
		if err := c.republish(true); err != nil {
			c.needReset.Store(true)
			c.result(OpRepublish, err)
			return
		}
	}
	c.beaten.Store(true)
	c.readNetwork(ctx)
}

// flushReleases sends the releases the queue had no room for, a few
// hundred a call.
func (c *Client) flushReleases(ctx context.Context) {
	c.mu.Lock()
	ts := c.pending
	c.pending = nil
	c.mu.Unlock()
	if len(ts) == 0 {
		return
	}
	var err error
	for len(ts) > 0 && err == nil {
		n := min(len(ts), republishChunk)
		err = c.runRelease(ctx, ts[:n])
		ts = ts[n:]
	}
	c.result(OpRelease, err)
	if err != nil {
		c.needReset.Store(true) // the next heartbeat starts from a clean slate
	}
}

// republish publishes the sessions of the registry that are not known to
// be in Redis (all of them, after removing what Redis holds of this proxy,
// with reset).
func (c *Client) republish(reset bool) error {
	c.mu.Lock()
	var ts []*Ticket
	for _, t := range c.byToken {
		if reset || t.state == tkLocal {
			ts = append(ts, t)
		}
	}
	c.mu.Unlock()
	if !reset && len(ts) == 0 {
		return nil
	}
	if err := c.publish(ts, reset); err != nil || !reset {
		return err
	}
	// A login that registered after the sessions were collected may have
	// been published before the reset removed it: publish those again.
	seen := make(map[*Ticket]bool, len(ts))
	for _, t := range ts {
		seen[t] = true
	}
	ts = ts[:0]
	c.mu.Lock()
	for _, t := range c.byToken {
		if !seen[t] {
			ts = append(ts, t)
		}
	}
	c.mu.Unlock()
	if len(ts) == 0 {
		return nil
	}
	return c.publish(ts, false)
}

// publish runs the republish script over ts, in chunks; with reset the
// first chunk first removes what Redis holds of this proxy.
func (c *Client) publish(ts []*Ticket, reset bool) error {
	mode := "0"
	if reset {
		mode = "1"
		c.beaten.Store(false)
	}
	var conflicts []string
	for first := true; first || len(ts) > 0; first = false {
		n := min(len(ts), republishChunk)
		args := make([]any, 0, 3+2*n)
		args = append(args, c.cfg.ID, c.ttl.Milliseconds(), mode)
		c.mu.Lock() // a move rewrites a record (Moved)
		for _, t := range ts[:n] {
			args = append(args, t.token, t.record)
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		floor := c.acked.Load()
		res, err := c.run(ctx, republishScript, args...).StringSlice()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("republishing %d sessions at %s: %w", len(ts), c.addr(), err)
		}
		if len(res) == 0 {
			return fmt.Errorf("republishing %d sessions at %s: the script answered nothing, want a write count", len(ts), c.addr())
		}
		if g, e := strconv.ParseInt(res[0], 10, 64); e == nil && !reset {
			c.checkGen(floor, g)
		} else if e == nil {
			c.acked.Store(g) // a clean slate: what was lost before is published again
		}
		res = res[1:]
		conflicts = append(conflicts, res...)
		c.published(ts[:n], res, args[3:])
		ts, mode = ts[n:], "0"
	}
	if len(conflicts) > 0 {
		c.conflicts.Add(int64(len(conflicts)))
		c.cfg.Log.Warn().Int("sessions", len(conflicts)).Strs("tokens", conflicts[:min(len(conflicts), 5)]).
			Msg("cluster: sessions let in while Redis was away hold names or UUIDs another proxy's sessions hold; kept on this proxy only")
	}
	return nil
}

// published marks the republished tickets, those in conflict apart; one
// released meanwhile is released again, since the republish may have come
// after its release. sent holds each ticket's token and the record sent;
// one moved since (Moved) stays to be republished.
func (c *Client) published(ts []*Ticket, conflicts []string, sent []any) {
	bad := map[string]bool{}
	for _, tok := range conflicts {
		bad[tok] = true
	}
	var again []*Ticket
	c.mu.Lock()
	for i, t := range ts {
		switch {
		case t.state == tkGone:
			if !bad[t.token] {
				again = append(again, t)
			}
		case bad[t.token]:
			t.state = tkConflict
		case t.record == sent[2*i+1]:
			t.state = tkPublished
		default:
			t.state = tkLocal
		}
	}
	c.mu.Unlock()
	for _, t := range again {
		c.release(t)
	}
}

// readNetwork reads the network's state for Network.
func (c *Client) readNetwork(ctx context.Context) {
	res, err := c.run(ctx, networkScript, c.cfg.Sample).Slice()
	if err == nil && len(res) < 2 {
		err = fmt.Errorf("network script answered %d values, want at least 2", len(res))
	}
	if err != nil {
		c.fallbacks[OpNetwork].Add(1)
		return
	}
	n := &Network{At: time.Now()}
	online, ok1 := res[0].(int64)
	proxies, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		c.fallbacks[OpNetwork].Add(1)
		return
	}
	n.Online, n.Proxies = int(online), int(proxies)
	for _, v := range res[2:] {
		if rec, ok := v.(string); ok {
			if s, err := ParseRecord(rec); err == nil {
				n.Sample = append(n.Sample, s)
			}
		}
	}
	c.network.Store(n)
}

// kicked ends the local session with token (a login elsewhere displaced it).
func (c *Client) kicked(token string) {
	c.mu.Lock()
	t := c.byToken[token]
	c.mu.Unlock()
	if t != nil {
		c.kick(t)
	}
}

// kick hands t's session to OnKick, once.
func (c *Client) kick(t *Ticket) {
	c.mu.Lock()
	first := !t.kicked && t.state != tkGone
	t.kicked = true
	c.mu.Unlock()
	if first {
		c.kicks.Add(1)
		c.cfg.OnKick(t.handle)
	}
}
