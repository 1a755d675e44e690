// Package pushload is the end-to-end load generator of tidegate's push
// server: one publisher sends sequence-numbered events at a fixed rate, and
// subscribers on an event-loop client (gnet.Client, no goroutine per
// connection) decode the legacy TCP frames, count deliveries and check that
// every subscriber sees the sequence in order.
//
// The figure of merit is events delivered per second (events times
// subscribers) and the server's CPU time per delivered event, read with
// benchmarks/procstat: the scheduler's nanoseconds of the server's threads
// when it runs in another process (ServerPID), this process's CPU time
// otherwise.
package pushload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// Config describes one load run.
type Config struct {
	PublishAddr   string
	SubscribeAddr string
	// Subscribers is the number of TCP subscribers.
	Subscribers int
	// Topic is the topic published and subscribed to.
	Topic string
	// Rate is the events published per second.
	Rate int
	// EventsPerFrame is the most events per publish frame.
	EventsPerFrame int
	// PayloadSize is each event's size in bytes (at least 8: the sequence number).
	PayloadSize int
	// Warmup runs before the measurement; Duration is measured.
	Warmup, Duration time.Duration
	// Drain is how long to wait after publishing stops for the last deliveries.
	Drain time.Duration
	// ServerPID is the server's process id for its CPU time; 0 measures this process.
	ServerPID int
	// ClientLoops is the subscribers' event loops.
	ClientLoops int
	// SSE makes the subscribers SSE streams (GET /events?topic=) instead of
	// TCP ones; their events carry the sequence number and the publish time
	// as text (PayloadSize at least MinSSEPayload), and the run measures
	// publish-to-delivery latency.
	SSE bool
	// AllowDrops accepts events the server dropped or subscribers it
	// disconnected (SSE only: what a drop report announced, or what a
	// subscriber closed by the server missed); they are counted either way.
	AllowDrops bool
	// OnConnected runs once every subscriber is connected, before the
	// first publish; OnMeasured at the end of the measurement, still
	// publishing. An error from either ends the run.
	OnConnected, OnMeasured func() error
	Logger                  zerolog.Logger
}

// Result is the outcome of a run.
type Result struct {
	Subscribers int
	Measured    time.Duration
	// Published and Delivered are counted in the measurement window.
	Published, Delivered int64
	// DeliveredPerSec is Delivered over Measured.
	DeliveredPerSec float64
	// ServerCPU is the server's CPU time in the window; CPUPerEvent is it over Delivered.
	ServerCPU   time.Duration
	CPUPerEvent time.Duration
	// ClientCPU is this process' CPU time in the window (the load generator itself
	// when the server runs elsewhere).
	ClientCPU time.Duration
	// Over the whole run, after the drain: events published, events every
	// subscriber should have got, events received, sequence breaks, frames
	// (TCP subscribers only).
	TotalPublished, TotalExpected, TotalDelivered, OutOfOrder, Frames int64
	// SSE only: subscribers the server closed during the run, events it
	// dropped (reported, or missed by those it closed), and whether drops
	// were allowed.
	Closed, Dropped int64
	DropsAllowed    bool
	// SSE only: publish-to-delivery latency of the events published in the
	// measurement window, over LatencySamples deliveries.
	P50, P99, MaxLatency time.Duration
	LatencySamples       int64
}

// String formats the result as one line.
func (r Result) String() string {
	sse := ""
	if r.LatencySamples > 0 || r.Closed > 0 || r.Dropped > 0 {
		sse = fmt.Sprintf(" p50=%v p99=%v max=%v closed=%d dropped=%d", r.P50, r.P99, r.MaxLatency, r.Closed, r.Dropped)
	}
	return fmt.Sprintf("subscribers=%d measured=%v published=%d delivered=%d delivered/s=%.0f server_cpu=%v cpu/event=%dns client_cpu=%v total_expected=%d total_delivered=%d lost=%d out_of_order=%d frames=%d",
		r.Subscribers, r.Measured.Round(time.Millisecond), r.Published, r.Delivered, r.DeliveredPerSec, r.ServerCPU.Round(time.Millisecond),
		r.CPUPerEvent.Nanoseconds(), r.ClientCPU.Round(time.Millisecond), r.TotalExpected, r.TotalDelivered,
		r.TotalExpected-r.TotalDelivered-r.Dropped, r.OutOfOrder, r.Frames) + sse
}

// subscriber is one client connection's state; only its loop touches it
// except the atomic counters.
type subscriber struct {
	next    uint64 // expected sequence number
	started bool
	counts
}

// counts are one subscriber's counters, added to by its loop and read by
// the run.
type counts struct {
	delivered, breaks, frames atomic.Int64
	ready                     atomic.Bool
}

// sumCounts adds up the counters of subs.
func sumCounts(subs []*counts) (delivered, breaks, frames int64) {
	for _, s := range subs {
		delivered += s.delivered.Load()
		breaks += s.breaks.Load()
		frames += s.frames.Load()
	}
	return delivered, breaks, frames
}

// waitReady polls until every one of subs is ready, failed returns an error
// (nil failed: never), or 30 seconds have passed; it returns how many were
// ready and, if not all, why.
func waitReady(subs []*counts, failed func() error) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := 0
		for _, s := range subs {
			if s.ready.Load() {
				ready++
			}
		}
		if ready == len(subs) {
			return ready, nil
		}
		if failed != nil {
			if err := failed(); err != nil {
				return ready, err
			}
		}
		if time.Now().After(deadline) {
			return ready, fmt.Errorf("pushload: %d of %d subscribers ready after 30s", ready, len(subs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type client struct {
	gnet.BuiltinEventEngine
	firstErr
	topic []byte
	subs  []*counts
}

func (cl *client) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	return push.AppendSubscribe(nil, cl.topic), gnet.None
}

func (cl *client) OnTraffic(c gnet.Conn) gnet.Action {
	s, _ := c.Context().(*subscriber)
	if s == nil {
		return gnet.None // the context is set right after Dial returns
	}
	buf, _ := c.Peek(-1)
	off := 0
	for {
		f, n, err := push.DecodeFrame(buf[off:], push.DefaultMaxFrame)
		if errors.Is(err, push.ErrIncomplete) {
			break
		}
		if err != nil {
			return cl.fail(fmt.Errorf("pushload: subscriber frame: %w", err))
		}
		off += n
		s.frames.Add(1)
		var delivered int64
		for rest := f.Events; len(rest) > 0; {
			op, payload, r, err := push.NextEvent(rest)
			if err != nil {
				return cl.fail(fmt.Errorf("pushload: subscriber event: %w", err))
			}
			rest = r
			switch op {
			case push.OpSubscribed:
				s.ready.Store(true)
			case push.OpNext:
				if len(payload) >= 8 {
					seq := binary.BigEndian.Uint64(payload)
					if s.started && seq != s.next {
						s.breaks.Add(1)
					}
					s.started, s.next = true, seq+1
				}
				delivered++
			}
		}
		s.delivered.Add(delivered)
	}
	if off > 0 { // gnet's Discard(0) discards everything, partial frame included
		_, _ = c.Discard(off)
	}
	return gnet.None
}

// firstErr keeps the first error a gnet client's handlers met.
type firstErr struct{ p atomic.Pointer[error] }

// fail keeps err if it is the first and closes the connection.
func (f *firstErr) fail(err error) gnet.Action {
	f.p.CompareAndSwap(nil, &err)
	return gnet.Close
}

// err returns the first error kept, or nil.
func (f *firstErr) err() error {
	if e := f.p.Load(); e != nil {
		return *e
	}
	return nil
}

// dialSubscribers starts a gnet client running h and enrolls
// cfg.Subscribers connections to the subscribe address, each with the
// context newSub returns; what names them in errors.
func dialSubscribers(cfg Config, what string, h gnet.EventHandler, newSub func() any) (*gnet.Client, []gnet.Conn, error) {
	gc, err := gnet.NewClient(h, gnet.WithMulticore(true), gnet.WithNumEventLoop(max(cfg.ClientLoops, 1)),
		gnet.WithLogger(harness.GnetLogger(zerolog.Nop())), gnet.WithReadBufferCap(256<<10))
	if err != nil {
		return nil, nil, fmt.Errorf("pushload: gnet client: %w", err)
	}
	if err := gc.Start(); err != nil {
		return nil, nil, fmt.Errorf("pushload: start gnet client: %w", err)
	}
	conns := make([]gnet.Conn, 0, cfg.Subscribers)
	for i := range cfg.Subscribers {
		nc, err := net.DialTimeout("tcp", cfg.SubscribeAddr, 5*time.Second)
		if err != nil {
			_ = gc.Stop()
			return nil, nil, fmt.Errorf("pushload: %s %d: dial %s: %w", what, i, cfg.SubscribeAddr, err)
		}
		c, err := gc.EnrollContext(nc, newSub())
		if err != nil {
			nc.Close()
			_ = gc.Stop()
			return nil, nil, fmt.Errorf("pushload: %s %d: enroll: %w", what, i, err)
		}
		conns = append(conns, c)
	}
	return gc, conns, nil
}

// loadReaders are the counting subscribers of a run, TCP or SSE.
type loadReaders interface {
	sum() (delivered, breaks, frames int64)
	drain(want int64, d time.Duration)
	err() error
	close()
}

// Run performs one load run. It returns an error, with the result, when any
// subscriber lost, got twice or got out of order an event (every subscriber
// must get every event published, in order; with AllowDrops, events the
// server reported dropped or a subscriber it closed missed are counted
// apart and accepted), and an error without a result when the run could
// not be made or measured, or ctx ended before it did: a run cut short is
// no measurement.
func Run(ctx context.Context, cfg Config) (Result, error) {
	minPayload := 8
	if cfg.SSE {
		minPayload = MinSSEPayload
	}
	if cfg.Subscribers < 1 || cfg.Rate < 1 || cfg.EventsPerFrame < 1 || cfg.PayloadSize < minPayload || cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("pushload: subscribers %d, rate %d, events per frame %d, payload %d, duration %v: all must be positive, payload >= %d",
			cfg.Subscribers, cfg.Rate, cfg.EventsPerFrame, cfg.PayloadSize, cfg.Duration, minPayload)
	}
	var rd loadReaders
	var sse *sseReaders
	var err error
	if cfg.SSE {
		sse, err = startSSEReaders(cfg)
		rd = sse
	} else {
		rd, err = startReaders(cfg)
	}
	if err != nil {
		return Result{}, err
	}
	defer rd.close()
	if cfg.OnConnected != nil {
		if err := cfg.OnConnected(); err != nil {
			return Result{}, err
		}
	}

	pc, err := net.DialTimeout("tcp", cfg.PublishAddr, 5*time.Second)
	if err != nil {
		return Result{}, fmt.Errorf("pushload: publisher: dial %s: %w", cfg.PublishAddr, err)
	}
	defer pc.Close()
	var published atomic.Int64
	stop := make(chan struct{})
	pubErr := make(chan error, 1)
	// The publisher gets the channel, not the variable: stopPublishing sets
	// stop to nil, maybe before the goroutine has started.
	go func(stop <-chan struct{}) { pubErr <- publish(pc, cfg, &published, stop) }(stop)

	// stopPublishing ends the publisher and returns its error; on a return
	// before that, the deferred call also closes the connection, which
	// unblocks a publisher stuck in a write.
	stopPublishing := func(abort bool) error {
		if stop == nil {
			return nil
		}
		close(stop)
		stop = nil
		if abort {
			_ = pc.Close()
		}
		return <-pubErr
	}
	defer func() { _ = stopPublishing(true) }()
	sum := rd.sum
	if err := harness.Sleep(ctx, cfg.Warmup); err != nil {
		return Result{}, fmt.Errorf("pushload: interrupted during the warmup: %w", err)
	}
	p0, d0, t0 := published.Load(), first(sum()), time.Now()
	if sse != nil {
		sse.window(t0.UnixNano(), 1<<63-1)
	}
	s0, c0, err := cpuTimes(cfg.ServerPID)
	if err != nil {
		return Result{}, err
	}
	if err := harness.Sleep(ctx, cfg.Duration); err != nil {
		return Result{}, fmt.Errorf("pushload: interrupted during the measurement: %w", err)
	}
	p1, d1, t1 := published.Load(), first(sum()), time.Now()
	s1, c1, err := cpuTimes(cfg.ServerPID)
	if err != nil {
		return Result{}, err
	}
	if sse != nil {
		sse.window(t0.UnixNano(), t1.UnixNano())
	}
	if cfg.OnMeasured != nil {
		if err := cfg.OnMeasured(); err != nil {
			return Result{}, err
		}
	}
	if err := stopPublishing(false); err != nil {
		return Result{}, err
	}
	rd.drain(published.Load()*int64(cfg.Subscribers), cfg.Drain)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("pushload: interrupted during the drain: %w", err)
	}
	if err := rd.err(); err != nil {
		return Result{}, err
	}
	td, tb, tf := sum()
	r := Result{
		Subscribers: cfg.Subscribers, Measured: t1.Sub(t0),
		Published: p1 - p0, Delivered: d1 - d0,
		ServerCPU: s1 - s0, ClientCPU: c1 - c0,
		TotalPublished: published.Load(), TotalExpected: published.Load() * int64(cfg.Subscribers),
		TotalDelivered: td, OutOfOrder: tb, Frames: tf, DropsAllowed: cfg.AllowDrops,
	}
	if sse != nil {
		r.Closed, r.Dropped = sse.drops(r.TotalPublished)
		r.P50, r.P99, r.MaxLatency, r.LatencySamples = sse.latency()
	}
	r.DeliveredPerSec = float64(r.Delivered) / r.Measured.Seconds()
	if r.Delivered > 0 {
		r.CPUPerEvent = r.ServerCPU / time.Duration(r.Delivered)
	}
	return r, r.Failure()
}

// Failure returns why the run does not count, or nil: subscribers that got
// fewer events than published (lost), more (duplicated), or a sequence
// break (reordered, or lost or duplicated in the middle); events the server
// dropped (Dropped) unless DropsAllowed.
func (r Result) Failure() error {
	unexplained := r.TotalExpected - r.TotalDelivered - r.Dropped
	if unexplained == 0 && r.OutOfOrder == 0 && (r.Dropped == 0 || r.DropsAllowed) {
		return nil
	}
	var what []string
	if unexplained > 0 {
		what = append(what, fmt.Sprintf("%d lost", unexplained))
	} else if unexplained < 0 {
		what = append(what, fmt.Sprintf("%d duplicated", -unexplained))
	}
	if r.OutOfOrder > 0 {
		what = append(what, fmt.Sprintf("%d sequence breaks", r.OutOfOrder))
	}
	if r.Dropped > 0 && !r.DropsAllowed {
		what = append(what, fmt.Sprintf("%d dropped by the server (%d subscribers closed by it), and no drops were allowed", r.Dropped, r.Closed))
	}
	return fmt.Errorf("pushload: subscribers got %d of %d events: %s", r.TotalDelivered, r.TotalExpected, strings.Join(what, ", "))
}

// readers are the counting TCP subscribers of a run, on one gnet client.
type readers struct {
	gc     *gnet.Client
	cl     *client
	kaStop chan struct{}
}

// startReaders connects cfg.Subscribers TCP subscribers to cfg.Topic, keeps
// them alive past the server's read idle limit, and waits until every one
// has been acknowledged.
func startReaders(cfg Config) (*readers, error) {
	cl := &client{topic: []byte(cfg.Topic)}
	gc, conns, err := dialSubscribers(cfg, "subscriber", cl, func() any {
		s := &subscriber{}
		cl.subs = append(cl.subs, &s.counts)
		return s
	})
	if err != nil {
		return nil, err
	}
	rd := &readers{gc: gc, cl: cl, kaStop: make(chan struct{})}
	// Keep the subscribers alive past the server's read idle limit.
	go func() {
		keepalive := time.NewTicker(3 * time.Second)
		defer keepalive.Stop()
		for {
			select {
			case <-rd.kaStop:
				return
			case <-keepalive.C:
				for _, c := range conns {
					_ = c.AsyncWrite([]byte("\n"), nil)
				}
			}
		}
	}()
	if _, err := waitReady(cl.subs, nil); err != nil {
		rd.close()
		return nil, fmt.Errorf("%w: not acknowledged", err)
	}
	cfg.Logger.Info().Int("subscribers", cfg.Subscribers).Msg("subscribed")
	return rd, nil
}

// sum adds up the readers' counters.
func (rd *readers) sum() (delivered, breaks, frames int64) { return sumCounts(rd.cl.subs) }

// drain waits up to d for the readers to have received want events, or for
// their deliveries to stop growing.
func (rd *readers) drain(want int64, d time.Duration) { drainCounts(rd.sum, want, d) }

// drainCounts waits up to d for sum's deliveries to reach want and stop
// growing, or to stop growing below want for a second (a subscriber was
// closed, or lost events).
func drainCounts(sum func() (int64, int64, int64), want int64, d time.Duration) {
	last, _, _ := sum()
	still := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		cur, _, _ := sum()
		if cur == last {
			still++
			if cur >= want || still >= 10 {
				return
			}
		} else {
			still = 0
		}
		last = cur
	}
}

// err returns the first decoding error a reader met, or nil.
func (rd *readers) err() error { return rd.cl.err() }

func (rd *readers) close() {
	close(rd.kaStop)
	_ = rd.gc.Stop()
}

func first(a, _, _ int64) int64 { return a }

// publish sends Rate events per second, sequence-numbered, every 10 ms.
func publish(c net.Conn, cfg Config, published *atomic.Int64, stop <-chan struct{}) error {
	const tick = 10 * time.Millisecond
	payload := make([]byte, cfg.PayloadSize)
	for i := 8; i < len(payload); i++ {
		payload[i] = 'a' + byte(i%26)
	}
	events := make([][]byte, 0, cfg.EventsPerFrame)
	scratch := make([][]byte, cfg.EventsPerFrame) // AppendPublish copies them
	for i := range scratch {
		scratch[i] = append([]byte(nil), payload...)
	}
	var buf, body []byte
	var seq uint64
	start := time.Now()
	put := func(p []byte, seq uint64, _ int64) { binary.BigEndian.PutUint64(p, seq) }
	if cfg.SSE {
		put = putTextEvent
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		now := time.Now()
		due := uint64(now.Sub(start).Seconds() * float64(cfg.Rate))
		buf = buf[:0]
		for seq < due {
			events = events[:0]
			for len(events) < cfg.EventsPerFrame && seq < due {
				p := scratch[len(events)]
				put(p, seq, now.UnixNano())
				events = append(events, p)
				seq++
			}
			var err error
			body, err = push.AppendPublish(body[:0], []byte(cfg.Topic), events...)
			if err != nil {
				return fmt.Errorf("pushload: publish: %w", err)
			}
			buf = tlv.DefaultFormat.AppendFrame(buf, tlv.Header{Type: push.TypePublish}, body)
		}
		if len(buf) == 0 {
			continue
		}
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("pushload: publish to %s: %w", cfg.PublishAddr, err)
		}
		published.Store(int64(seq))
	}
}

// cpuTimes returns the server's CPU time so far (process pid, or this
// process when pid is 0) and this process's.
func cpuTimes(pid int) (server, self time.Duration, err error) {
	if self, err = procstat.SelfCPU(); err != nil {
		return 0, 0, fmt.Errorf("pushload: %w", err)
	}
	if pid == 0 {
		return self, self, nil
	}
	if server, err = procstat.CPU(pid); err != nil {
		return 0, 0, fmt.Errorf("pushload: server CPU time: %w", err)
	}
	return server, self, nil
}
