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
	// Redis is where Redis is: one server by URL or address, the master
	// of Sentinels, or a Redis Cluster.
	Redis clusterconf.Redis
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
	rdb      redis.UniversalClient
	prefix   string // of every key (see redis.go)
	reload   func() // on Redis Cluster: re-read the slot map (see New)
	where    string // the Redis, for messages
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
	acked      atomic.Int64 // the highest write count a script returned (checkGen)
	lostWrites atomic.Int64

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
	if cfg.Heartbeat <= 0 || cfg.Timeout <= 0 || cfg.LoginWait <= 0 || cfg.Retry <= 0 {
		return nil, fmt.Errorf("cluster: heartbeat %v, timeout %v, login wait %v and retry %v must be positive",
			cfg.Heartbeat, cfg.Timeout, cfg.LoginWait, cfg.Retry)
	}
	cfg.Workers, cfg.Queue, cfg.Failures = max(cfg.Workers, 1), max(cfg.Queue, 1), max(cfg.Failures, 1)
	cfg.Sample = min(max(cfg.Sample, 0), 12)
	rdb, prefix, where, err := newRedis(&cfg)
	if err != nil {
		return nil, err
	}
	var inst [4]byte
	_, _ = rand.Read(inst[:])
	c := &Client{
		cfg: cfg, ttl: TTLFactor * cfg.Heartbeat, rdb: rdb, prefix: prefix, where: where, instance: hex.EncodeToString(inst[:]),
		byToken: map[string]*Ticket{}, byName: map[string]*Ticket{}, byUUID: map[string]*Ticket{},
		queue: make(chan op, cfg.Queue), fallbacks: map[string]*atomic.Int64{}, stop: make(chan struct{}),
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		// go-redis re-reads the slot map on MOVED and READONLY and every
		// minute; a failed call asks for it too (once per 200 ms at most),
		// so that the replica promoted in place of a master that died
		// takes the calls within a node timeout, not a minute.
		c.reload = func() { cc.ReloadState(context.Background()) }
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
	c.pubsub = c.rdb.Subscribe(context.Background(), kickChannel+c.cfg.ID)
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
func (c *Client) addr() string { return c.where }

// nextToken returns a token no other session of any process has.
func (c *Client) nextToken() string {
	return c.instance + "." + strconv.FormatUint(c.seq.Add(1), 10)
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

// LostWrites returns how many times Redis was found to have lost writes it
// had acknowledged (a failover, a restart), each followed by a republish.
func (c *Client) LostWrites() int64 { return c.lostWrites.Load() }

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
