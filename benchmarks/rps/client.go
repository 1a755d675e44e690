package rps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// Defaults for Config fields left at their zero value.
const (
	DefaultPipeline    = 1
	DefaultPayloadSize = 64
	DefaultTimeout     = time.Second
	DefaultDialTimeout = 5 * time.Second
)

// maxLatencyMicros is the largest latency the histograms record; longer ones
// are recorded as this value.
const maxLatencyMicros = 600_000_000 // 10 minutes

// Config configures a load run.
type Config struct {
	// Addr is the server's TCP address, host:port.
	Addr string
	// Clients is the number of client connections, each with its own
	// deterministic requests.
	Clients int
	// Payloads is the number of requests each client sends in a run.
	Payloads int
	// Warmups is the number of whole runs made and thrown away before the
	// measured one.
	Warmups int
	// PayloadSize is the body length of every request; 0 means
	// DefaultPayloadSize.
	PayloadSize int
	// Pipeline is the number of requests each client keeps in flight: 1 is
	// strict request/response. 0 means DefaultPipeline.
	Pipeline int
	// Timeout is how long a request may wait for its response; when the
	// oldest request of a connection is older, the connection is closed,
	// its requests in flight count as timeouts and the client reconnects
	// for the rest. 0 means DefaultTimeout.
	Timeout time.Duration
	// Loops is the number of client event loops; 0 means one per core.
	Loops int
	// Format is the TLV header layout; zero means tlv.DefaultFormat.
	Format tlv.Format
	// DialTimeout bounds each connect; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives the generator's logs (and gnet's).
	Logger zerolog.Logger
	// OnConnected, if set, runs in the measured run once every client is
	// connected and before the first request is sent.
	OnConnected func()
	// OnFinished, if set, runs in the measured run once every client has
	// finished and before the connections are closed.
	OnFinished func()
}

// normalize fills in defaults and validates c.
func (c *Config) normalize() error {
	if c.Addr == "" {
		return errors.New("rps: no server address")
	}
	if c.Clients < 1 {
		return fmt.Errorf("rps: clients %d: want at least 1", c.Clients)
	}
	if c.Payloads < 1 {
		return fmt.Errorf("rps: payloads %d: want at least 1 request per client", c.Payloads)
	}
	if c.Warmups < 0 {
		return fmt.Errorf("rps: warmups %d is negative", c.Warmups)
	}
	c.Format = cmp.Or(c.Format, tlv.DefaultFormat)
	if err := c.Format.Validate(); err != nil {
		return fmt.Errorf("rps: %w", err)
	}
	c.PayloadSize = cmp.Or(c.PayloadSize, DefaultPayloadSize)
	if c.PayloadSize < 0 || c.PayloadSize > c.Format.MaxBody {
		return fmt.Errorf("rps: payload size %d: want 0..%d (the format's max body)", c.PayloadSize, c.Format.MaxBody)
	}
	c.Pipeline = cmp.Or(c.Pipeline, DefaultPipeline)
	if c.Pipeline < 1 {
		return fmt.Errorf("rps: pipeline %d: want at least 1 request in flight", c.Pipeline)
	}
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	if c.Timeout < 0 {
		return fmt.Errorf("rps: timeout %v is negative", c.Timeout)
	}
	c.DialTimeout = cmp.Or(c.DialTimeout, DefaultDialTimeout)
	c.Loops = cmp.Or(c.Loops, runtime.NumCPU())
	if c.Loops < 1 {
		return fmt.Errorf("rps: loops %d: want at least 1", c.Loops)
	}
	return nil
}

// Run makes cfg.Warmups discarded runs and one measured run against
// cfg.Addr and returns the measured run's result. Every run opens fresh
// connections. It returns an error when the configuration is invalid, when a
// client cannot connect at the start of a run, or when ctx ends; failed
// requests are not errors of Run but counts in the Result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.normalize(); err != nil {
		return Result{}, err
	}
	g := &generator{cfg: cfg, log: cfg.Logger, loops: map[gnet.EventLoop]*loopState{}}
	cli, err := gnet.NewClient(g,
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(cfg.Loops),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(harness.GnetLogger(cfg.Logger.With().Str("component", "gnet").Logger())),
	)
	if err != nil {
		return Result{}, fmt.Errorf("rps: creating gnet client: %w", err)
	}
	if err := cli.Start(); err != nil {
		return Result{}, fmt.Errorf("rps: starting gnet client: %w", err)
	}
	g.cli = cli
	defer func() {
		if err := cli.Stop(); err != nil {
			g.log.Debug().Err(err).Msg("stopping gnet client")
		}
	}()
	for i := 0; i < cfg.Warmups; i++ {
		res, err := g.runOnce(ctx, false)
		if err != nil {
			return Result{}, fmt.Errorf("rps: warmup %d: %w", i+1, err)
		}
		g.log.Debug().Int("warmup", i+1).Float64("rps", res.RPS).Int64("errors", res.Errors).Int64("timeouts", res.Timeouts).Msg("warmup run done")
	}
	return g.runOnce(ctx, true)
}

// generator is the gnet event handler of the client connections; it lives
// for one Run and serves its runs one after the other.
type generator struct {
	gnet.BuiltinEventEngine
	cfg Config
	log zerolog.Logger
	cli *gnet.Client

	mu    sync.Mutex
	loops map[gnet.EventLoop]*loopState
}

// loopState is one client event loop's share of the work. Its fields are
// used only on that loop, except index, set once.
type loopState struct {
	index   int
	loop    gnet.EventLoop
	clients []*clientState // the clients whose connection is on this loop
}

// loopOf returns the state of c's loop, creating it on first sight.
func (g *generator) loopOf(c gnet.Conn) *loopState {
	el := c.EventLoop()
	g.mu.Lock()
	defer g.mu.Unlock()
	ls, ok := g.loops[el]
	if !ok {
		ls = &loopState{index: len(g.loops), loop: el}
		g.loops[el] = ls
	}
	return ls
}

// eachLoop runs f on every loop that has had a client and waits for it.
func (g *generator) eachLoop(f func(ls *loopState)) {
	g.mu.Lock()
	loops := make([]*loopState, 0, len(g.loops))
	for _, ls := range g.loops {
		loops = append(loops, ls)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, ls := range loops {
		wg.Add(1)
		err := ls.loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			f(ls)
			return nil
		}))
		if err != nil {
			wg.Done()
			g.log.Debug().Err(err).Int("loop", ls.index).Msg("could not reach client loop")
		}
	}
	wg.Wait()
}

// run is the state of one run (warmup or measured).
type run struct {
	g       *generator
	base    time.Time
	clients []*clientState
	hists   []*hdrhistogram.Histogram // indexed by loopState.index

	started   atomic.Bool
	closing   atomic.Bool
	open      atomic.Int64 // connections open now
	remaining atomic.Int64 // clients not finished
	done      chan struct{}
	redial    chan *clientState
	stop      chan struct{}
}

// now returns nanoseconds since the run's base time (monotonic).
func (r *run) now() int64 { return int64(time.Since(r.base)) }

// clientState is one client: its deterministic requests, its connection and
// its counts. It is used on the loop of its current connection, or by the
// redial goroutine between connections.
type clientState struct {
	r    *run
	id   int
	p    *payloads
	conn gnet.Conn
	loop *loopState
	slot int // index in loop.clients

	nextSeq   int     // next request to send
	completed int     // requests finished: succeeded, failed or timed out
	sendTimes []int64 // ring of send times of the requests in flight
	// win[winOff:] are the frames of the requests in flight, oldest first:
	// a correct response is byte for byte its request's frame, so whole
	// responses are checked by comparing them with these bytes.
	win      []byte
	winOff   int
	head     int // ring index of the oldest request in flight
	inflight int
	timedOut bool // the connection is being closed for a timeout

	successes  int64
	errors     int64
	timeouts   int64
	reconnects int64
	finishedAt int64
	finished   bool
}

// runOnce makes one run with fresh connections.
func (g *generator) runOnce(ctx context.Context, measured bool) (Result, error) {
	cfg := g.cfg
	r := &run{
		g:      g,
		done:   make(chan struct{}),
		redial: make(chan *clientState, cfg.Clients),
		stop:   make(chan struct{}),
	}
	r.hists = make([]*hdrhistogram.Histogram, cfg.Loops)
	for i := range r.hists {
		r.hists[i] = hdrhistogram.New(1, maxLatencyMicros, 3)
	}
	r.remaining.Store(int64(cfg.Clients))
	r.base = time.Now()
	r.clients = make([]*clientState, cfg.Clients)
	for i := range r.clients {
		p := newPayloads(cfg.Format, i, cfg.PayloadSize)
		r.clients[i] = &clientState{r: r, id: i, p: p, sendTimes: make([]int64, cfg.Pipeline),
			win: make([]byte, 0, 2*cfg.Pipeline*p.frameSize)} // room to append a window before moving one

	}
	defer r.teardown()
	for _, cs := range r.clients {
		if err := r.connect(cs); err != nil {
			return Result{}, err
		}
	}
	go r.redialLoop()
	if measured && cfg.OnConnected != nil {
		cfg.OnConnected()
	}
	var cpu0, cpu1 time.Duration
	if measured {
		var err error
		if cpu0, err = procstat.SelfCPU(); err != nil {
			return Result{}, fmt.Errorf("rps: %w", err)
		}
	}
	r.base = time.Now()
	r.started.Store(true)
	g.eachLoop(func(ls *loopState) {
		now := r.now()
		for _, cs := range ls.clients {
			if cs.r == r {
				r.sendWindow(cs, now)
			}
		}
	})
	go r.timeoutLoop()
	select {
	case <-r.done:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("run interrupted: %w", ctx.Err())
	}
	if measured {
		var err error
		if cpu1, err = procstat.SelfCPU(); err != nil {
			return Result{}, fmt.Errorf("rps: %w", err)
		}
	}
	if measured && cfg.OnFinished != nil {
		cfg.OnFinished()
	}
	res := r.result()
	res.ClientCPUSeconds = (cpu1 - cpu0).Seconds()
	return res, nil
}

// connect dials cs's connection and registers it on a client loop.
func (r *run) connect(cs *clientState) error {
	cfg := r.g.cfg
	nc, err := net.DialTimeout("tcp", cfg.Addr, cfg.DialTimeout)
	if err != nil {
		return fmt.Errorf("connecting client %d to %s: %w", cs.id, cfg.Addr, err)
	}
	if _, err := r.g.cli.EnrollContext(nc, cs); err != nil {
		return fmt.Errorf("registering client %d's connection to %s: %w", cs.id, cfg.Addr, err)
	}
	return nil
}

// redialLoop reconnects clients whose connection failed while they still
// had requests to make; a client that cannot reconnect counts the rest of
// its requests as errors and finishes.
func (r *run) redialLoop() {
	for {
		select {
		case <-r.stop:
			return
		case cs := <-r.redial:
			if r.closing.Load() {
				return
			}
			cs.reconnects++
			if err := r.connect(cs); err != nil {
				r.g.log.Warn().Err(err).Int("client", cs.id).Msg("reconnect failed: counting the client's remaining requests as errors")
				left := r.g.cfg.Payloads - cs.completed
				cs.errors += int64(left)
				cs.completed += left
				cs.finish(r.now())
			}
		}
	}
}

// timeoutLoop scans every loop's clients for expired requests, on the
// loops, a few times per timeout.
func (r *run) timeoutLoop() {
	tick := min(max(r.g.cfg.Timeout/10, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.g.eachLoop(r.scanTimeouts)
		}
	}
}

// scanTimeouts closes the connections of ls whose oldest request has waited
// longer than the timeout. It runs on ls's loop.
func (r *run) scanTimeouts(ls *loopState) {
	now := r.now()
	limit := int64(r.g.cfg.Timeout)
	var expired []*clientState
	for _, cs := range ls.clients {
		if cs.r == r && cs.inflight > 0 && now-cs.sendTimes[cs.head] > limit {
			expired = append(expired, cs)
		}
	}
	for _, cs := range expired {
		cs.timedOut = true
		if err := ls.loop.Close(cs.conn); err != nil {
			r.g.log.Debug().Err(err).Int("client", cs.id).Msg("closing timed-out connection")
		}
	}
}

// teardown closes the run's connections and waits (briefly) for them to
// close, so that runs do not overlap.
func (r *run) teardown() {
	r.closing.Store(true)
	close(r.stop)
	r.g.eachLoop(func(ls *loopState) {
		var mine []*clientState
		for _, cs := range ls.clients {
			if cs.r == r {
				mine = append(mine, cs)
			}
		}
		for _, cs := range mine {
			_ = ls.loop.Close(cs.conn)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for r.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := r.open.Load(); n > 0 {
		r.g.log.Warn().Int64("open", n).Msg("client connections still open after the run")
	}
}

// sendWindow fills cs's pipeline and writes the requests.
func (r *run) sendWindow(cs *clientState, now int64) {
	if out := cs.addRequests(r.g.cfg.Pipeline-cs.inflight, now); len(out) > 0 {
		if _, err := cs.conn.Write(out); err != nil {
			r.g.log.Debug().Err(err).Int("client", cs.id).Msg("writing requests")
		}
	}
}

// addRequests makes up to n more requests of cs, sent at now, and returns
// their frames, valid until the next call (gnet's Write copies what the
// kernel does not take).
func (cs *clientState) addRequests(n int, now int64) []byte {
	n = min(n, cs.r.g.cfg.Payloads-cs.nextSeq)
	if n <= 0 {
		return nil
	}
	need := n * cs.p.frameSize
	if cap(cs.win)-len(cs.win) < need {
		k := copy(cs.win, cs.win[cs.winOff:]) // at most a window, moved at most once a window
		cs.win, cs.winOff = slices.Grow(cs.win[:k], need), 0
	}
	start := len(cs.win)
	pipe := len(cs.sendTimes)
	slot := cs.head + cs.inflight // the ring index of the first new request
	if slot >= pipe {
		slot -= pipe
	}
	for ; n > 0; n-- {
		cs.win = cs.p.appendRequest(cs.win, cs.nextSeq)
		cs.sendTimes[slot] = now
		if slot++; slot == pipe {
			slot = 0
		}
		cs.inflight++
		cs.nextSeq++
	}
	return cs.win[start:]
}

// settle ends the oldest request in flight; its response has been read.
func (cs *clientState) settle() (sent int64) {
	sent = cs.sendTimes[cs.head]
	if cs.head++; cs.head == len(cs.sendTimes) {
		cs.head = 0
	}
	cs.inflight--
	cs.completed++
	if cs.winOff += cs.p.frameSize; cs.winOff == len(cs.win) {
		cs.win, cs.winOff = cs.win[:0], 0
	}
	return sent
}

// dropInFlight forgets the requests in flight: their connection is gone.
func (cs *clientState) dropInFlight() {
	cs.completed += cs.inflight
	cs.inflight, cs.head = 0, 0
	cs.win, cs.winOff = cs.win[:0], 0
}

// latencies records the latencies of the responses of one read: requests
// sent in one write share their send time, so each run of equal send times
// is one histogram update instead of one per response.
type latencies struct {
	hist *hdrhistogram.Histogram
	now  int64
	sent int64 // send time of the current run
	n    int64 // responses in it
}

func (l *latencies) add(sent int64) {
	if sent != l.sent && l.n > 0 {
		l.flush()
	}
	l.sent = sent
	l.n++
}

func (l *latencies) flush() {
	if l.n > 0 {
		_ = l.hist.RecordValues(min((l.now-l.sent)/1000, maxLatencyMicros), l.n)
		l.n = 0
	}
}

// finish marks cs as done with all its requests.
func (cs *clientState) finish(now int64) {
	if cs.finished {
		return
	}
	cs.finished = true
	cs.finishedAt = now
	if cs.r.remaining.Add(-1) == 0 {
		close(cs.r.done)
	}
}
