package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Login registers a session and asks the network about it. A duplicate of a
// local session is answered at once (wait false) in mode Refuse; in mode
// KickOld the local holder is handed to OnKick. When Redis can be asked,
// wait is true and done is called later, from another goroutine, within
// LoginWait. Otherwise the answer is Local at once. The ticket is nil when
// the login is refused; else the caller must Release it when the session
// ends, whatever the answer (a refusal that came through done has already
// released it).
func (c *Client) Login(s Session, lim Limits, handle any, done func(Answer)) (t *Ticket, a Answer, wait bool) {
	s = s.normalize()
	t = &Ticket{sess: s, lname: LowerName(s.Name), record: s.Record(), handle: handle, token: c.nextToken()}
	var kick []*Ticket
	c.mu.Lock()
	for _, old := range []*Ticket{c.byName[t.lname], c.byUUID[s.UUID]} {
		if old == nil {
			continue
		}
		if c.cfg.Mode == Refuse {
			c.mu.Unlock()
			return nil, Answer{Verdict: Duplicate, Owner: c.cfg.ID + "/" + old.token}, false
		}
		if len(kick) == 0 || kick[0] != old {
			kick = append(kick, old)
		}
	}
	c.index(t)
	c.mu.Unlock()
	for _, old := range kick {
		c.kick(old)
	}
	if c.open.Load() {
		c.setLocal(t)
		c.fallbacks[OpLogin].Add(1)
		return t, Answer{Verdict: Local}, false
	}
	if !c.enqueue(op{login: true, t: t, lim: lim, done: done, deadline: time.Now().Add(c.cfg.LoginWait)}) {
		c.setLocal(t)
		c.fallbacks[OpLogin].Add(1)
		return t, Answer{Verdict: Local}, false
	}
	return t, Answer{}, true
}

// Adopt registers a session taken over from the previous process in a live
// upgrade, under its token; the heartbeat republishes it.
func (c *Client) Adopt(token string, s Session, handle any) *Ticket {
	s = s.normalize()
	t := &Ticket{sess: s, lname: LowerName(s.Name), record: s.Record(), handle: handle, token: token, state: tkLocal}
	c.mu.Lock()
	c.index(t)
	c.mu.Unlock()
	return t
}

// HandedOff takes t out of this client's registry without touching Redis:
// a live upgrade's new process took its session over, and publishes and
// releases it from now on under the same token. Left in the registry, it
// would refuse its player's next login here as a duplicate after the
// session ended there, and a republish from scratch here would put it back
// in the network. Release still removes it from Redis, for when that
// process went away with the session.
func (c *Client) HandedOff(t *Ticket) {
	c.mu.Lock()
	c.unindex(t)
	c.mu.Unlock()
}

// index adds t to the registry; c.mu is held.
func (c *Client) index(t *Ticket) {
	c.byToken[t.token] = t
	c.byName[t.lname] = t
	if t.sess.UUID != "" {
		c.byUUID[t.sess.UUID] = t
	}
}

// unindex removes t from the registry; c.mu is held.
func (c *Client) unindex(t *Ticket) {
	delete(c.byToken, t.token)
	if c.byName[t.lname] == t {
		delete(c.byName, t.lname)
	}
	if t.sess.UUID != "" && c.byUUID[t.sess.UUID] == t {
		delete(c.byUUID, t.sess.UUID)
	}
}

func (c *Client) setLocal(t *Ticket) {
	c.mu.Lock()
	if t.state == tkPending {
		t.state = tkLocal
	}
	c.mu.Unlock()
}

// Release ends a session: it leaves the registry and Redis.
func (c *Client) Release(t *Ticket) {
	c.mu.Lock()
	if t.state == tkGone {
		c.mu.Unlock()
		return
	}
	prev := t.state
	t.state = tkGone
	c.unindex(t)
	c.mu.Unlock()
	if prev == tkPending || prev == tkConflict {
		return // the login call releases it (see finishLogin); a conflict was never ours
	}
	c.release(t)
}

// release removes t from Redis: by a worker, or by the next heartbeat when
// the queue is full. While the breaker is open nothing is sent: the
// republish that closes it starts from a clean slate.
func (c *Client) release(t *Ticket) {
	if c.open.Load() {
		c.fallbacks[OpRelease].Add(1)
		return
	}
	if c.enqueue(op{t: t}) {
		return
	}
	c.mu.Lock()
	if len(c.pending) < maxPendingReleases {
		c.pending = append(c.pending, t)
	} else {
		c.needReset.Store(true)
	}
	c.mu.Unlock()
}

// enqueue hands o to the workers unless the queue is full or closed.
func (c *Client) enqueue(o op) bool {
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	if c.closed {
		return false
	}
	select {
	case c.queue <- o:
		return true
	default:
		return false
	}
}

// work makes the queued calls.
func (c *Client) work() {
	defer c.wg.Done()
	for o := range c.queue {
		if o.login {
			c.login(o)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		err := c.runRelease(ctx, []*Ticket{o.t})
		cancel()
		c.result(OpRelease, err)
		if err != nil {
			// It may or may not have been made: the next heartbeat
			// starts from a clean slate, so that no record outlives
			// its session.
			c.needReset.Store(true)
		}
	}
}

// runRelease runs the release script for ts, in one call.
func (c *Client) runRelease(ctx context.Context, ts []*Ticket) error {
	args := make([]any, 0, 1+4*len(ts))
	args = append(args, c.cfg.ID)
	for _, t := range ts {
		args = append(args, t.token, t.lname, t.sess.UUID, t.sess.Subnet)
	}
	floor := c.acked.Load()
	g, err := c.run(ctx, releaseScript, args...).Int64()
	if err == nil {
		c.checkGen(floor, g)
	}
	return err
}

// run runs s with args by EVALSHA, and by EVAL when Redis does not have
// it (it restarted): the client is called directly, never as an
// interface (see script).
func (c *Client) run(ctx context.Context, s *script, args ...any) *redis.Cmd {
	keys := []string{c.prefix}
	cmd := c.rdb.EvalSha(ctx, s.sha, keys, args...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return c.rdb.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}

// checkGen takes the write count g that a script returned, for a call sent
// when the highest count seen was floor. The count only grows, and a call
// sent after floor's answer came runs after it: so a g not above floor
// means that Redis no longer holds writes it had acknowledged (a failover
// to a replica that had not received them yet, or a restart), and the next
// heartbeat republishes this proxy's sessions from a clean slate.
func (c *Client) checkGen(floor, g int64) {
	if g > floor {
		for cur := c.acked.Load(); g > cur && !c.acked.CompareAndSwap(cur, g); cur = c.acked.Load() {
		}
		return
	}
	c.acked.Store(g)
	if !c.needReset.Swap(true) {
		c.lostWrites.Add(1)
		c.cfg.Log.Info().Str("redis", c.addr()).Int64("count", g).Int64("acknowledged", floor).
			Msg("cluster: Redis lost writes it had acknowledged (a failover or a restart); republishing this proxy's sessions")
	}
}

// login makes a login call and hands its answer to the caller.
func (c *Client) login(o op) {
	t := o.t
	if c.open.Load() || time.Now().After(o.deadline) {
		c.fallbacks[OpLogin].Add(1)
		c.finishLogin(t, Answer{Verdict: Local}, o.done)
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), o.deadline)
	if dl := time.Now().Add(c.cfg.Timeout); dl.Before(o.deadline) {
		ctx, cancel = context.WithDeadline(context.Background(), dl)
	}
	mode := "refuse"
	if c.cfg.Mode == KickOld {
		mode = "kick"
	}
	floor := c.acked.Load()
	res, err := c.run(ctx, loginScript, c.cfg.ID, t.token, t.lname, t.sess.UUID, t.record, c.ttl.Milliseconds(), mode,
		t.sess.Subnet, o.lim.SubnetCap, o.lim.RateKey, ms(o.lim.RateInterval), ms(o.lim.RateTolerance)).StringSlice()
	cancel()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("login script answered %q, want a verdict, a detail and a write count", res)
	}
	if err == nil && res[2] != "" {
		if g, e := strconv.ParseInt(res[2], 10, 64); e == nil {
			c.checkGen(floor, g)
		}
	}
	c.result(OpLogin, err)
	if err != nil {
		c.finishLogin(t, Answer{Verdict: Local}, o.done)
		return
	}
	a := Answer{Owner: res[1]}
	switch res[0] {
	case "ok":
		a.Verdict = Accepted
	case "dup":
		a.Verdict = Duplicate
	case "rate":
		a.Verdict = LoginRate
	case "subnet":
		a.Verdict = SubnetCap
	default:
		c.cfg.Log.Warn().Str("verdict", res[0]).Msg("cluster: login script gave an unknown verdict; decided locally")
		a.Verdict = Local
	}
	c.finishLogin(t, a, o.done)
}

// ms is d in milliseconds, with a fraction.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// finishLogin applies a login's answer to the registry and passes it on.
func (c *Client) finishLogin(t *Ticket, a Answer, done func(Answer)) {
	c.mu.Lock()
	prev := t.state
	refused := a.Verdict != Accepted && a.Verdict != Local
	switch {
	case prev == tkGone:
	case a.Verdict == Accepted:
		t.state = tkPublished
	case a.Verdict == Local:
		if prev == tkPending {
			t.state = tkLocal
		}
	default:
		t.state = tkGone
		c.unindex(t)
	}
	c.mu.Unlock()
	switch {
	case prev == tkGone && !refused:
		c.release(t) // it ended while its login was in flight
	case refused && prev != tkPending && prev != tkGone:
		c.release(t) // a republish published it before the refusal
	}
	if done != nil {
		done(a)
	}
}

// result feeds the circuit breaker with a call's outcome.
func (c *Client) result(opName string, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		c.fails.Store(0)
		return
	}
	c.fallbacks[opName].Add(1)
	if c.reload != nil {
		c.reload()
	}
	n := c.fails.Add(1)
	if int(n) >= c.cfg.Failures && c.open.CompareAndSwap(false, true) {
		c.cfg.Log.Warn().Err(err).Str("op", opName).Str("redis", c.addr()).Int32("failures", n).Dur("retry", c.cfg.Retry).
			Msg("cluster: Redis unreachable; logins are decided by this proxy's own state until it answers again")
	}
}
