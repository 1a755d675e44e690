package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// TTLFactor is how many heartbeats a proxy's keys outlive its last one: a
// proxy that stops heartbeating (killed, or cut off from Redis) drops out of
// the network within TTLFactor × the heartbeat.
const TTLFactor = 3

// Mode is what a login of a name or UUID that a live session already holds
// gets.
type Mode uint8

// Duplicate login modes.
const (
	// Refuse refuses the new login.
	Refuse Mode = iota
	// KickOld accepts the new login and ends the session that held the
	// name, on whichever proxy it is.
	KickOld
)

// Config configures a Client.
type Config struct {
	// URL is the Redis server, as redis://[user:password@]host:port/db
	// (rediss:// for TLS, unix:///path).
	URL string
	// ID names this proxy in the network; proxies must have distinct IDs.
	ID string
	// Heartbeat is how often the proxy refreshes its keys; they expire
	// TTLFactor heartbeats after the last refresh.
	Heartbeat time.Duration
	// Timeout bounds one Redis call (connect included).
	Timeout time.Duration
	// LoginWait bounds the answer to a login, queueing included: past it
	// the answer is Local.
	LoginWait time.Duration
	// Mode is what a duplicate login gets.
	Mode Mode
	// Sample is how many session records Network samples (0 to 12).
	Sample int
	// Workers is the number of goroutines that make Redis calls; Queue
	// bounds the calls waiting for them. A call that finds the queue full
	// is not made (a login is decided locally).
	Workers, Queue int
	// Failures is how many failed calls in a row open the circuit breaker:
	// then no call is made, everything is decided locally, and a probe
	// every Retry decides when Redis is back.
	Failures int
	Retry    time.Duration
	// Log receives the client's logs.
	Log zerolog.Logger
	// OnKick is called, from any goroutine, with the handle of a local
	// session that a newer login of its name or UUID displaced (mode
	// KickOld). It must not block.
	OnKick func(handle any)
}

// Verdict is the answer to a login.
type Verdict uint8

// Verdicts.
const (
	// Accepted: the network took the session.
	Accepted Verdict = iota
	// Local: Redis was not asked (breaker open, queue full) or did not
	// answer in time; this proxy's own state let the login in.
	Local
	// Duplicate: a live session holds the name or the UUID.
	Duplicate
	// LoginRate: the network-wide login rate of the address is spent.
	LoginRate
	// SubnetCap: the subnet has the network-wide cap of sessions.
	SubnetCap
)

var verdictNames = [...]string{"accepted", "local", "duplicate", "login_rate", "subnet_cap"}

func (v Verdict) String() string { return verdictNames[v] }

// Answer is the verdict on a login and what came with it.
type Answer struct {
	Verdict Verdict
	// Owner is who holds the name (Duplicate), or who was displaced
	// (Accepted with KickOld), as proxy/token; "" if nobody.
	Owner string
}

// Limits are the network-wide checks of one login; zero values turn each
// off.
type Limits struct {
	// RateKey identifies the client address whose logins are limited
	// (RateInterval per login, RateTolerance of burst).
	RateKey                     string
	RateInterval, RateTolerance time.Duration
	// SubnetCap bounds the sessions of Session.Subnet across the network.
	SubnetCap int
}

// ticket states, guarded by Client.mu.
const (
	tkPending   = iota // a login call is in flight
	tkPublished        // in Redis
	tkLocal            // not known to be in Redis: republished by the heartbeat
	tkConflict         // another owner took its name while Redis was away: kept local
	tkGone             // released
)

// Ticket is one local session in the client's registry, from Login (or
// Adopt) to Release.
type Ticket struct {
	token  string
	sess   Session
	lname  string
	record string
	handle any
	state  int
	kicked bool // handed to OnKick
}

// Token identifies the session in Redis; a live upgrade hands it over.
func (t *Ticket) Token() string { return t.token }

// Session returns what is published of the session.
func (t *Ticket) Session() Session { return t.sess }

// Network is the network-wide state the heartbeat last read.
type Network struct {
	// Online is the number of sessions published by live proxies.
	Online int
	// Proxies is the number of live proxies.
	Proxies int
	// Sample is up to Config.Sample sessions picked at random.
	Sample []Session
	// At is when it was read.
	At time.Time
}

// Operation names, the op label of the fallback counts.
const (
	OpLogin     = "login"
	OpRelease   = "release"
	OpHeartbeat = "heartbeat"
	OpRepublish = "republish"
	OpNetwork   = "network"
)

// Ops lists the operation names.
var Ops = []string{OpLogin, OpRelease, OpHeartbeat, OpRepublish, OpNetwork}

// maxPendingReleases bounds the releases kept for the heartbeat when the
// queue is full; past it the next heartbeat republishes everything instead.
const maxPendingReleases = 65536

// republishChunk is how many sessions one republish call carries.
const republishChunk = 256

// op is a call for the workers.
type op struct {
	login    bool
	t        *Ticket
	lim      Limits
	done     func(Answer)
	deadline time.Time
}

// Client publishes a proxy's sessions in Redis and answers its logins with
// the network's state. Its calls run on Config.Workers goroutines fed by a
// bounded queue, never on the caller's goroutine, and each is bounded by
// Config.Timeout.
type Client struct {
	cfg      Config
	ttl      time.Duration
	rdb      *redis.Client
	instance string
	seq      atomic.Uint64

	mu      sync.Mutex
	byToken map[string]*Ticket
	byName  map[string]*Ticket
	byUUID  map[string]*Ticket
	pending []*Ticket // releases the queue had no room for

	qmu    sync.RWMutex // held to send on queue; Lock to close it
	queue  chan op
	closed bool

	open      atomic.Bool // circuit breaker
	fails     atomic.Int32
	needReset atomic.Bool
	beaten    atomic.Bool // a heartbeat succeeded since the last reset
	network   atomic.Pointer[Network]

	fallbacks  map[string]*atomic.Int64
	roundTrips atomic.Int64
	conflicts  atomic.Int64
	kicks      atomic.Int64

	stop     chan struct{}
	wg       sync.WaitGroup
	pubsub   *redis.PubSub
	started  bool
	keepKeys atomic.Bool
}

var setLogger sync.Once

// New returns a client for cfg; it connects on Start.
func New(cfg Config) (*Client, error) {
	if msg := clusterconf.CheckID(cfg.ID); msg != "" {
		return nil, fmt.Errorf("cluster: id %s", msg)
	}
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("cluster: redis %s", clusterconf.CheckURL(cfg.URL))
	}
	if cfg.Heartbeat <= 0 || cfg.Timeout <= 0 || cfg.LoginWait <= 0 || cfg.Retry <= 0 {
		return nil, fmt.Errorf("cluster: heartbeat %v, timeout %v, login wait %v and retry %v must be positive",
			cfg.Heartbeat, cfg.Timeout, cfg.LoginWait, cfg.Retry)
	}
	cfg.Workers, cfg.Queue, cfg.Failures = max(cfg.Workers, 1), max(cfg.Queue, 1), max(cfg.Failures, 1)
	cfg.Sample = min(max(cfg.Sample, 0), 12)
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout, cfg.Timeout
	opt.MaxRetries = -1 // a failed call falls back at once; the breaker decides when to try again
	opt.PoolSize = cfg.Workers + 2
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	var inst [4]byte
	_, _ = rand.Read(inst[:])
	c := &Client{
		cfg: cfg, ttl: TTLFactor * cfg.Heartbeat, rdb: redis.NewClient(opt), instance: hex.EncodeToString(inst[:]),
		byToken: map[string]*Ticket{}, byName: map[string]*Ticket{}, byUUID: map[string]*Ticket{},
		queue: make(chan op, cfg.Queue), fallbacks: map[string]*atomic.Int64{}, stop: make(chan struct{}),
	}
	for _, o := range Ops {
		c.fallbacks[o] = new(atomic.Int64)
	}
	c.rdb.AddHook(countHook{&c.roundTrips})
	// go-redis logs reconnects itself; the client logs what matters once.
	setLogger.Do(func() { redis.SetLogger(quietLogger{}) })
	return c, nil
}

// quietLogger drops go-redis's own log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// countHook counts round trips to Redis: one per command (the client sends
// no pipelines).
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// Start starts the workers, the heartbeat and the kick subscription. With
// reset, what Redis holds under this proxy's ID (left by a previous run
// that did not stop cleanly) is removed first; a process that takes over
// from the previous one in a live upgrade starts without it, so that the
// sessions it is handed stay published.
func (c *Client) Start(reset bool) {
	c.started = true
	c.needReset.Store(reset)
	for range c.cfg.Workers {
		c.wg.Add(1)
		go c.work()
	}
	c.pubsub = c.rdb.Subscribe(context.Background(), "tidegate:kick:"+c.cfg.ID)
	ch := c.pubsub.Channel()
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		for m := range ch {
			c.kicked(m.Payload)
		}
	}()
	// The first heartbeat (with the reset) runs before Start returns, so
	// before the proxy takes a login: a reset that ran after a login was
	// let in removed that login's name for a moment, and another proxy's
	// login of the same name got in too (seen in TestDuplicateLoginRace).
	// It is bounded by Config.Timeout; with Redis away the breaker decides.
	c.tick()
	go c.heartbeat()
}

// KeepKeysOnStop makes Stop leave this proxy's keys in Redis (keep true),
// for the process a live upgrade hands the sessions to, or remove them again
// (false, the default), when that process went away.
func (c *Client) KeepKeysOnStop(keep bool) { c.keepKeys.Store(keep) }

// Stop stops the client: the queued calls are made (releases of the
// sessions that ended), then, unless KeepKeysOnStop was called, the proxy's
// sessions are removed and it leaves the network.
func (c *Client) Stop(ctx context.Context) error {
	c.qmu.Lock()
	if c.closed {
		c.qmu.Unlock()
		return nil
	}
	c.closed = true
	close(c.queue)
	c.qmu.Unlock()
	if !c.started {
		return c.rdb.Close()
	}
	close(c.stop)
	if c.pubsub != nil {
		_ = c.pubsub.Close()
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("cluster: workers did not stop: %w", ctx.Err())
	}
	if !c.open.Load() {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		c.flushReleases(cctx)
		if !c.keepKeys.Load() {
			if e := c.run(cctx, republishScript, c.cfg.ID, c.ttl.Milliseconds(), "2").Err(); e != nil && !errors.Is(e, redis.Nil) {
				err = errors.Join(err, fmt.Errorf("cluster: leaving the network at %s: %w", c.addr(), e))
			}
		}
		cancel()
	}
	return errors.Join(err, c.rdb.Close())
}

// addr is the Redis address, for messages.
func (c *Client) addr() string { return c.rdb.Options().Addr }

// nextToken returns a token no other session of any process has.
func (c *Client) nextToken() string {
	return c.instance + "." + strconv.FormatUint(c.seq.Add(1), 10)
}

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
	}
}

// runRelease runs the release script for ts, in one call.
func (c *Client) runRelease(ctx context.Context, ts []*Ticket) error {
	args := make([]any, 0, 1+4*len(ts))
	args = append(args, c.cfg.ID)
	for _, t := range ts {
		args = append(args, t.token, t.lname, t.sess.UUID, t.sess.Subnet)
	}
	return c.run(ctx, releaseScript, args...).Err()
}

// run runs s with args by EVALSHA, and by EVAL when Redis does not have
// it (it restarted): the client is called directly, never as an
// interface (see script).
func (c *Client) run(ctx context.Context, s *script, args ...any) *redis.Cmd {
	cmd := c.rdb.EvalSha(ctx, s.sha, nil, args...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return c.rdb.Eval(ctx, s.src, nil, args...)
	}
	return cmd
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
	res, err := c.run(ctx, loginScript, c.cfg.ID, t.token, t.lname, t.sess.UUID, t.record, c.ttl.Milliseconds(), mode,
		t.sess.Subnet, o.lim.SubnetCap, o.lim.RateKey, ms(o.lim.RateInterval), ms(o.lim.RateTolerance)).StringSlice()
	cancel()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("login script answered %q, want a verdict and a detail", res)
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
	n := c.fails.Add(1)
	if int(n) >= c.cfg.Failures && c.open.CompareAndSwap(false, true) {
		c.cfg.Log.Warn().Err(err).Str("op", opName).Str("redis", c.addr()).Int32("failures", n).Dur("retry", c.cfg.Retry).
			Msg("cluster: Redis unreachable; logins are decided by this proxy's own state until it answers again")
	}
}

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
	if c.needReset.Load() {
		if err := c.republish(true); err != nil {
			c.result(OpRepublish, err)
			return
		}
		c.needReset.Store(false)
	} else {
		c.flushReleases(ctx)
		if err := c.republish(false); err != nil {
			c.result(OpRepublish, err)
			return
		}
	}
	res, err := c.run(ctx, heartbeatScript, c.cfg.ID, c.ttl.Milliseconds(), c.instance).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("heartbeat script answered %v, want 2 numbers", res)
	}
	c.result(OpHeartbeat, err)
	if err != nil {
		return
	}
	if res[0] == 0 && c.beaten.Load() {
		// Redis lost this proxy's keys (a restart, or no heartbeat for a
		// whole TTL): publish everything again now.
		c.cfg.Log.Info().Str("redis", c.addr()).Msg("cluster: this proxy's keys were gone from Redis; republishing its sessions")
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
		for _, t := range ts[:n] {
			args = append(args, t.token, t.record)
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		res, err := c.run(ctx, republishScript, args...).StringSlice()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("republishing %d sessions at %s: %w", len(ts), c.addr(), err)
		}
		conflicts = append(conflicts, res...)
		c.published(ts[:n], res)
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
// after its release.
func (c *Client) published(ts []*Ticket, conflicts []string) {
	bad := map[string]bool{}
	for _, tok := range conflicts {
		bad[tok] = true
	}
	var again []*Ticket
	c.mu.Lock()
	for _, t := range ts {
		switch {
		case t.state == tkGone:
			if !bad[t.token] {
				again = append(again, t)
			}
		case bad[t.token]:
			t.state = tkConflict
		default:
			t.state = tkPublished
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

// Network returns the network's state as the last heartbeat read it; ok is
// false when that is older than the TTL or Redis is unreachable now.
func (c *Client) Network() (n Network, ok bool) {
	p := c.network.Load()
	if p == nil || c.open.Load() || time.Since(p.At) > c.ttl {
		return Network{}, false
	}
	return *p, true
}

// Up reports whether Redis answers (the circuit breaker is closed).
func (c *Client) Up() bool { return !c.open.Load() }

// Fallbacks returns, by operation, the calls not made or failed, whose
// outcome this proxy's own state decided.
func (c *Client) Fallbacks() map[string]int64 {
	out := make(map[string]int64, len(c.fallbacks))
	for k, v := range c.fallbacks {
		out[k] = v.Load()
	}
	return out
}

// RoundTrips returns how many round trips to Redis the client made (one per
// command or pipeline).
func (c *Client) RoundTrips() int64 { return c.roundTrips.Load() }

// Conflicts returns how many sessions a republish found another owner's
// session holding the name or UUID of.
func (c *Client) Conflicts() int64 { return c.conflicts.Load() }

// Kicks returns how many local sessions a newer login displaced.
func (c *Client) Kicks() int64 { return c.kicks.Load() }

// Sessions returns how many sessions the registry holds.
func (c *Client) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byToken)
}

// ID returns the proxy's ID.
func (c *Client) ID() string { return c.cfg.ID }

// TTL returns how long the proxy's keys outlive its last heartbeat.
func (c *Client) TTL() time.Duration { return c.ttl }

// HostID is a default proxy ID: the host name, cut to what clusterconf.CheckID takes.
func HostID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "tidegate"
	}
	b := []byte(h)
	for i, ch := range b {
		if !(ch == '.' || ch == '_' || ch == '-' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 64)])
}
