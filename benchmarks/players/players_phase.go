package players

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/benchmarks/procstat"
	"github.com/tidegate/tidegate/internal/delayq"
	"github.com/tidegate/tidegate/protocol/mc"
)

// Tuning of the players load generator.
const (
	// playersLoginParallel is how many sessions log in at once: the proxy
	// dials the backend for each, and a burst of thousands of dials would
	// overflow the listen backlogs.
	playersLoginParallel = 64
	// modernLoginParallel is as many for Modern logins, which wait for
	// the backend's Login (play) (held 20 ms by the session benchmark).
	modernLoginParallel = 128
	// smallReadBuffer holds a few small frames; a session's reader
	// borrows a large buffer from largeBuffers only while a chunk is in it.
	smallReadBuffer = 1024
	// maxErrorSamples is how many messages of wrong replies a phase keeps.
	maxErrorSamples = 8
)

// player is one session of the players workload. Its sender writes it,
// its reader goroutine reads it.
type player struct {
	id uint32
	nc net.Conn
	// sent is the number of frames handed to the connection (the next
	// sequence number), set before each write so that no reply can come
	// before it counts; recv is the next sequence number a reply is due for.
	sent, recv atomic.Uint32
	// sentBytes and recvBytes count the bytes written and read.
	sentBytes, recvBytes atomic.Int64
	// leftover is what came after Login Success, the start of the replies.
	leftover []byte
	// enc and dec are the ciphers of an encrypted (online-mode) session,
	// nil otherwise: its sender encrypts each frame in place, its reader
	// decrypts what it reads.
	enc, dec *mc.CFB8
	// lastOther is the start of the last frame of the server's own its
	// reader skipped (Params.Modern), for the message of a closed stream.
	lastOther []byte
	// broken is set when the connection failed or its framing was lost:
	// nothing more is sent to it, and its missing replies are not counted
	// again as unanswered.
	broken atomic.Bool
}

// latencyShard is a histogram of round trips the readers record into
// (players_read_*.go decide which reader records into which shard).
type latencyShard struct {
	// mu is nil when a single reader goroutine records into the shard:
	// then a reply costs no lock.
	mu     *sync.Mutex
	hist   *hdrhistogram.Histogram
	chunks int64 // chunk replies among the recorded round trips
}

// newLatencyShard returns an empty shard; shared makes it take a lock for
// each record, for a shard that several goroutines record into.
func newLatencyShard(shared bool) *latencyShard {
	sh := &latencyShard{hist: harness.NewLatencyHistogram()}
	if shared {
		sh.mu = new(sync.Mutex)
	}
	return sh
}

// record records one round trip of rtt ns, a chunk reply's when chunk.
func (sh *latencyShard) record(rtt int64, chunk bool) {
	if sh.mu != nil {
		sh.mu.Lock()
	}
	_ = sh.hist.RecordValue(max(rtt, harness.LatencyLowest))
	if chunk {
		sh.chunks++
	}
	if sh.mu != nil {
		sh.mu.Unlock()
	}
}

// Measurement is what Run measured.
type Measurement struct {
	// Login is how long the sessions took to log in, Elapsed the measured
	// interval and GeneratorCPU this process's CPU time in it.
	Login, Elapsed, GeneratorCPU time.Duration
	// Frames and bytes sent and received in the measured interval.
	Sent, Received           int64
	SentBytes, ReceivedBytes int64
	// Hist holds the round trips of the frames due in the measured
	// interval, in ns; Chunks is how many of them were chunk replies.
	Hist   *hdrhistogram.Histogram
	Chunks int64
	// Late holds how long after its due time each send of the measured
	// interval was written, in ns.
	Late *hdrhistogram.Histogram
	// Lost, Duplicated, Corrupted and Unanswered count the wrong replies,
	// Samples holds some of their messages.
	Lost, Duplicated, Corrupted, Unanswered int64
	Samples                                 []string
	// Others counts the frames of the server's own a Modern phase skipped.
	Others int64
}

// Errors is the number of wrong replies of every kind.
func (r *Measurement) Errors() int64 { return r.Lost + r.Duplicated + r.Corrupted + r.Unanswered }

// playersPhase is the state of one players phase.
type playersPhase struct {
	p       Params
	k       *playersCodec
	base    time.Time
	players []*player
	// measureFrom and measureTo bound the measured interval, in ns since
	// base; sends are due from sendFrom and none at measureTo or later.
	sendFrom, measureFrom, measureTo int64
	period                           int64 // between two frames of a session, ns
	// shards are the round-trip histograms, made by startReaders and
	// merged once the readers stopped.
	shards       []*latencyShard
	largeBuffers sync.Pool

	closing atomic.Bool  // the phase is over: connection errors are expected
	others  atomic.Int64 // frames of the server's own skipped (Params.Modern)
	abort   chan struct{}
	once    sync.Once
	why     atomic.Pointer[error] // the first failure

	mu                                      sync.Mutex
	lost, duplicated, corrupted, unanswered int64
	samples                                 []string
}

func (ph *playersPhase) now() int64 { return int64(time.Since(ph.base)) }

// due returns when frame seq of session is due (ns since base): sessions
// send a frame every period, each at its own offset, so that their sends
// are spread evenly over the period.
func (ph *playersPhase) due(session, seq uint32) int64 {
	return ph.sendFrom + int64(seq)*ph.period + int64(session)*ph.period/int64(len(ph.players))
}

// measured reports whether frame seq of session is one of the measured
// interval's: due in it (whenever it went out).
func (ph *playersPhase) measured(session, seq uint32) bool {
	due := ph.due(session, seq)
	return due >= ph.measureFrom && due < ph.measureTo
}

// fail ends the phase with err (the first failure is kept).
func (ph *playersPhase) fail(err error) {
	ph.why.CompareAndSwap(nil, &err)
	ph.once.Do(func() { close(ph.abort) })
}

// count counts one wrong reply in *n and keeps its message if there is room.
func (ph *playersPhase) count(n *int64, by int64, err error) {
	ph.mu.Lock()
	*n += by
	if len(ph.samples) < maxErrorSamples {
		ph.samples = append(ph.samples, err.Error())
	}
	ph.mu.Unlock()
}

// Run logs p.Sessions sessions in at addr, sends their frames
// on schedule for p.Warmup and p.Duration, checks every reply and waits up
// to p.Drain for the last ones. hooks.Start runs before the first session
// connects, Before and After around the measured interval. A session that
// cannot log in, a connection that breaks and a stream whose framing is
// lost end the phase with an error; lost, duplicated, corrupted and
// unanswered replies are counted. The phase fails when no reply came for
// stall.
func Run(ctx context.Context, addr string, p Params, stall time.Duration, hooks harness.PhaseHooks) (Measurement, error) {
	host, port, err := mcclient.SplitHostPort(addr)
	if err != nil {
		return Measurement{}, err
	}
	ph := &playersPhase{p: p, k: newPlayersCodec(p), base: time.Now(), abort: make(chan struct{})}
	bufLen := mc.MaxFrameHeaderLen + p.maxReplyBody()
	ph.largeBuffers.New = func() any { b := make([]byte, bufLen); return &b }
	if hooks.Start != nil {
		hooks.Start()
	}
	started := time.Now()
	if err := ph.login(ctx, addr, host, port); err != nil {
		ph.closeAll()
		return Measurement{}, err
	}
	run := Measurement{Login: time.Since(started)}
	if hooks.LoggedIn != nil {
		hooks.LoggedIn()
	}
	readers, err := ph.startReaders()
	if err != nil {
		ph.closeAll()
		return run, err
	}
	ph.period = int64(time.Second) / int64(p.Rate)
	ph.sendFrom = ph.now() + int64(10*time.Millisecond)
	ph.measureFrom = ph.sendFrom + int64(p.Warmup)
	ph.measureTo = ph.measureFrom + int64(p.Duration)
	senders := make([]*sender, min(p.Senders, len(ph.players)))
	var sending sync.WaitGroup
	for s := range senders {
		sn, err := ph.newSender(s, len(senders))
		if err != nil {
			ph.fail(err)
			break
		}
		senders[s] = sn
		sending.Add(1)
		go func() {
			defer sending.Done()
			sn.run()
		}()
	}
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		ph.watch(ctx, stall, hooks.Progress)
	}()

	var hookErr error
	var before, after [2]int64 // frames sent and received
	var beforeBytes, afterBytes [2]int64
	if ph.sleepUntil(ph.measureFrom) {
		if hooks.Before != nil {
			hookErr = hooks.Before()
		}
		before, beforeBytes = ph.totals()
		from := ph.now()
		cpuFrom, cpuErr := procstat.SelfCPU()
		if ph.sleepUntil(ph.measureTo) {
			after, afterBytes = ph.totals()
			run.Elapsed = time.Duration(ph.now() - from)
			// A CPU figure that could not be read fails the phase rather
			// than report the generator at 0%.
			cpuTo, err := procstat.SelfCPU()
			if err = errors.Join(cpuErr, err); err != nil {
				hookErr = errors.Join(hookErr, fmt.Errorf("the load generator's CPU: %w", err))
			} else {
				run.GeneratorCPU = cpuTo - cpuFrom
			}
			if hooks.After != nil {
				hookErr = errors.Join(hookErr, hooks.After())
			}
		}
	}
	select {
	case <-ph.abort:
		// Wake senders sleeping towards a send that will not come.
		closeSleepers(senders)
	default:
	}
	sending.Wait()
	closeSleepers(senders)
	if ph.why.Load() == nil {
		ph.drain()
	}
	ph.closing.Store(true)
	ph.fail(errPhaseOver)
	<-watchdogDone
	readers.stop()
	ph.closeAll()
	if err := *ph.why.Load(); err != errPhaseOver {
		return run, err
	}
	if hookErr != nil {
		return run, hookErr
	}
	run.Sent, run.Received = after[0]-before[0], after[1]-before[1]
	run.SentBytes, run.ReceivedBytes = afterBytes[0]-beforeBytes[0], afterBytes[1]-beforeBytes[1]
	run.Hist = harness.NewLatencyHistogram()
	for _, sh := range ph.shards {
		run.Hist.Merge(sh.hist)
		run.Chunks += sh.chunks
	}
	run.Late = harness.NewLatencyHistogram()
	for _, sn := range senders {
		run.Late.Merge(sn.late) // every sender was made: a failure to make one fails the phase
	}
	run.Lost, run.Duplicated, run.Corrupted, run.Unanswered = ph.lost, ph.duplicated, ph.corrupted, ph.unanswered
	run.Samples = ph.samples
	run.Others = ph.others.Load()
	if hooks.Progress != nil {
		hooks.Progress(1, 1)
	}
	return run, nil
}

// closeSleepers closes the senders' sleepers, waking any that sleeps.
func closeSleepers(senders []*sender) {
	for _, sn := range senders {
		if sn != nil {
			_ = sn.sleeper.Close()
		}
	}
}

// errPhaseOver ends a phase that went to its end; any other reason is a failure.
var errPhaseOver = errors.New("phase over")

// login connects and logs in every session, playersLoginParallel at a time.
func (ph *playersPhase) login(ctx context.Context, addr, host string, port uint16) error {
	ph.players = make([]*player, ph.p.Sessions)
	inFlight := playersLoginParallel
	if ph.p.Modern {
		inFlight = modernLoginParallel
	}
	return harness.Each(ctx, len(ph.players), inFlight, func(i int) error {
		what, name := fmt.Sprintf("session %d", i), fmt.Sprintf("player%d", i)
		if !ph.p.Modern {
			nc, left, err := mcclient.DialLogin(ctx, addr, host, port, what, name)
			if err != nil {
				return err
			}
			ph.players[i] = &player{id: uint32(i), nc: nc, leftover: append([]byte(nil), left...)}
			return nil
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: connecting to %s: %w", what, addr, err)
		}
		s, err := mcclient.ModernLogin(nc, host, port, name, mcclient.ModernOptions{VelocitySecret: ph.p.VelocitySecret}, time.Now().Add(20*time.Second))
		if err != nil {
			nc.Close()
			return fmt.Errorf("%s via %s: %w", what, addr, err)
		}
		ph.players[i] = &player{id: uint32(i), nc: nc, leftover: s.Left, enc: s.Encrypt, dec: s.Decrypt}
		return nil
	})
}

// closeAll closes every connection with a reset: thousands of sessions
// closed with a FIN would leave as many ports in TIME_WAIT for a minute, and
// a few phases would use up the ephemeral ports.
func (ph *playersPhase) closeAll() {
	for _, pl := range ph.players {
		if pl == nil {
			continue
		}
		if tc, ok := pl.nc.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		pl.nc.Close()
	}
}

// sleepUntil waits until t (ns since base); false when the phase was
// aborted first.
func (ph *playersPhase) sleepUntil(t int64) bool {
	timer := time.NewTimer(time.Duration(t - ph.now()))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ph.abort:
		return false
	}
}

// totals returns the frames sent and received so far, and their bytes.
func (ph *playersPhase) totals() (frames, bytes [2]int64) {
	for _, pl := range ph.players {
		frames[0] += int64(pl.sent.Load())
		frames[1] += int64(pl.recv.Load())
		bytes[0] += pl.sentBytes.Load()
		bytes[1] += pl.recvBytes.Load()
	}
	return frames, bytes
}

// watch reports progress, and aborts the phase when ctx ends or replies
// are due but none came for stall.
func (ph *playersPhase) watch(ctx context.Context, stall time.Duration, progress func(done, total int64)) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last int64 = -1
	lastMove := time.Now()
	total := ph.measureTo - ph.sendFrom
	for {
		select {
		case <-ph.abort:
			return
		case <-ctx.Done():
			ph.fail(ctx.Err())
			return
		case now := <-t.C:
			if progress != nil {
				progress(min(max(ph.now()-ph.sendFrom, 0), total), total)
			}
			f, _ := ph.totals()
			if f[1] != last || f[0] == f[1] {
				last, lastMove = f[1], now
			} else if now.Sub(lastMove) > stall {
				ph.fail(fmt.Errorf("%w: %d frames sent, %d replies", harness.ErrStalled, f[0], f[1]))
				return
			}
		}
	}
}

// drain waits until every frame sent has its reply, or p.Drain has passed;
// the replies still missing then are counted as unanswered.
func (ph *playersPhase) drain() {
	deadline := time.Now().Add(ph.p.Drain)
	for {
		var missing int64
		var first *player
		for _, pl := range ph.players {
			if pl.broken.Load() {
				continue
			}
			if n := int64(pl.sent.Load()) - int64(pl.recv.Load()); n > 0 {
				missing += n
				if first == nil {
					first = pl
				}
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			ph.count(&ph.unanswered, missing, fmt.Errorf("%d replies missing %v after the last send (session %d waits for frame %d of %d, among others)",
				missing, ph.p.Drain, first.id, first.recv.Load(), first.sent.Load()))
			return
		}
		select {
		case <-ph.abort:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sender writes the frames of every senders-th session, from session
// index on, when they are due (playersPhase.due).
type sender struct {
	ph      *playersPhase
	players []*player
	sleeper *delayq.Sleeper
	late    *hdrhistogram.Histogram
}

func (ph *playersPhase) newSender(index, senders int) (*sender, error) {
	sl, err := delayq.NewSleeper()
	if err != nil {
		return nil, fmt.Errorf("sender %d: %w", index, err)
	}
	s := &sender{ph: ph, sleeper: sl, late: harness.NewLatencyHistogram()}
	for i := index; i < len(ph.players); i += senders {
		s.players = append(s.players, ph.players[i])
	}
	return s, nil
}

// run sends until the measured interval ends or the phase is aborted. Its
// sessions are in the order of their offsets, so it goes round them.
func (s *sender) run() {
	ph := s.ph
	buf := make([]byte, 0, mc.MaxFrameHeaderLen+ph.p.FrameMax)
	i, round := 0, uint32(0)
	woke := int64(0)
	for {
		next := ph.due(s.players[i].id, round)
		if next >= ph.measureTo {
			return
		}
		if now := ph.now(); now < next {
			if err := s.sleeper.SleepUntil(ph.base.Add(time.Duration(max(next, woke+int64(ph.p.SendTick))))); err != nil {
				select {
				case <-ph.abort: // the phase ends: the sleeper was closed to wake us
				default:
					// Its sessions would stop sending and, sent matching
					// received, nothing else would notice.
					ph.fail(fmt.Errorf("sender: waiting for the next send: %w", err))
				}
				return
			}
			woke = ph.now()
			continue
		}
		select {
		case <-ph.abort:
			return
		default:
		}
		for now := ph.now(); next <= now && next < ph.measureTo; next = ph.due(s.players[i].id, round) {
			if pl := s.players[i]; !pl.broken.Load() {
				s.send(pl, round, next, buf)
			}
			if i++; i == len(s.players) {
				i, round = 0, round+1
			}
		}
	}
}

// send writes frame seq of pl, due at due.
func (s *sender) send(pl *player, seq uint32, due int64, buf []byte) {
	ph := s.ph
	now := ph.now()
	buf = ph.k.appendFrame(buf[:0], pl.id, seq, now)
	pl.sent.Store(seq + 1)
	if pl.enc != nil {
		pl.enc.XORKeyStream(buf, buf)
	}
	if _, err := pl.nc.Write(buf); err != nil {
		pl.broken.Store(true)
		if !ph.closing.Load() {
			ph.fail(fmt.Errorf("session %d: writing frame %d: %w", pl.id, seq, err))
		}
		return
	}
	pl.sentBytes.Add(int64(len(buf)))
	if ph.measured(pl.id, seq) {
		_ = s.late.RecordValue(max(now-due, harness.LatencyLowest))
	}
}
