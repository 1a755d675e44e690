package upgradeload

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// msgLen is the size of one message and of its echo: session id (u32),
// sequence number (u32) and a check word of both (u64), big-endian.
const msgLen = 16

// readBuf is each session's read buffer: a burst of echoes after a pause
// is read in a few calls.
const readBuf = 64 * msgLen

// checkWord is the last 8 bytes of message seq of session id.
func checkWord(id, seq uint32) uint64 {
	x := uint64(id)<<32 | uint64(seq)
	x ^= 0x9e3779b97f4a7c15 // splitmix64's finalizer
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// putMessage writes message seq of session id into b.
func putMessage(b []byte, id, seq uint32) {
	binary.BigEndian.PutUint32(b[0:], id)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint64(b[8:], checkWord(id, seq))
}

// The windows of a trial, in order. Gaps are counted in the window their
// second arrival falls in.
const (
	phaseWarmup = iota
	phaseBaseline
	phaseUpgrade
	phaseAfter
	numPhases
)

var phaseNames = [numPhases]string{"warm-up", "baseline", "upgrade", "after the upgrade"}

// Kinds of session failure, as counted in a trial.
const (
	kindLost      = "lost or reordered echo"
	kindRepeated  = "duplicated or reordered echo"
	kindCorrupted = "corrupted echo"
	kindEnded     = "session ended"
	kindWrite     = "write failed"
	kindMissing   = "echoes missing at the end"
	kindNoEcho    = "no echo in the warm-up"
)

// session is one client connection through the proxy.
type session struct {
	id   uint32
	conn *net.TCPConn
	// sent is how many messages were written; recv how many echoes arrived
	// in order and unchanged.
	sent, recv atomic.Uint32
	// lastAt is when the last good echo arrived (ns since the clients'
	// base), -1 before the first.
	lastAt atomic.Int64
	// maxGap is, per window, the longest time between two good echoes whose
	// second one arrived in it (ns); openGap the time since the last echo
	// when the window closed.
	maxGap  [numPhases]atomic.Int64
	openGap [numPhases]int64
	failed  atomic.Bool
	buf     [readBuf]byte
}

// failureLog keeps each session's first failure.
type failureLog struct {
	mu     sync.Mutex
	first  map[uint32]string
	kinds  map[string]int
	order  []uint32
	extern []string // failures of the trial, not of a session
}

func newFailureLog() *failureLog {
	return &failureLog{first: map[uint32]string{}, kinds: map[string]int{}}
}

// session records a failure of session id; only its first counts.
func (f *failureLog) session(s *session, kind, detail string) {
	if !s.failed.CompareAndSwap(false, true) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.first[s.id] = fmt.Sprintf("session %d: %s: %s", s.id, kind, detail)
	f.order = append(f.order, s.id)
	f.kinds[kind]++
}

// trial records a failure of the trial as a whole.
func (f *failureLog) trial(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extern = append(f.extern, fmt.Sprintf(format, args...))
}

// sessionCount returns how many sessions failed.
func (f *failureLog) sessionCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// summary returns the trial's failures, then the sessions' by kind with
// the first few of each, at most limit session lines in all.
func (f *failureLog) summary(limit int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.extern)
	if len(f.order) == 0 {
		return out
	}
	kinds := make([]string, 0, len(f.kinds))
	for k := range f.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, f.kinds[k])
	}
	out = append(out, fmt.Sprintf("%d sessions failed: %s", len(f.order), strings.Join(parts, ", ")))
	ids := slices.Clone(f.order)
	slices.Sort(ids)
	for i, id := range ids {
		if i == limit {
			out = append(out, fmt.Sprintf("... and %d more sessions", len(ids)-limit))
			break
		}
		out = append(out, f.first[id])
	}
	return out
}

// clients are the sessions of a trial, their readers and writers.
type clients struct {
	base     time.Time
	interval time.Duration
	phase    atomic.Int32
	closing  atomic.Bool
	sess     []*session
	fails    *failureLog
	readers  sync.WaitGroup
	writers  sync.WaitGroup
	stop     chan struct{}
	// lag is, per window, the longest lateness of a writer's slot (ns).
	lag [numPhases]atomic.Int64
}

func newClients(n int, interval time.Duration, fails *failureLog) *clients {
	cs := &clients{base: time.Now(), interval: interval, sess: make([]*session, n), fails: fails, stop: make(chan struct{})}
	for i := range cs.sess {
		s := &session{id: uint32(i)}
		s.lastAt.Store(-1)
		cs.sess[i] = s
	}
	return cs
}

// now is the time since the clients' base, in ns (monotonic).
func (cs *clients) now() int64 { return int64(time.Since(cs.base)) }

// connect dials every session through the proxy at addr, limit at a
// time, and starts its reader once the echo of its first message came
// back: a session counts as open only when the proxy relays it both ways,
// and no more than limit sessions are being set up at once (the proxy
// dials the backend for each, which a burst of dials would overflow).
func (cs *clients) connect(ctx context.Context, addr string, limit int) error {
	d := net.Dialer{Timeout: 10 * time.Second}
	return harness.Each(ctx, len(cs.sess), limit, func(i int) error {
		s := cs.sess[i]
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("session %d: connecting to the proxy at %s: %w", s.id, addr, err)
		}
		s.conn = c.(*net.TCPConn)
		if err := cs.first(s); err != nil {
			return fmt.Errorf("session %d: through the proxy at %s: %w", s.id, addr, err)
		}
		cs.readers.Add(1)
		go cs.read(s)
		return nil
	})
}

// firstEchoTimeout bounds the echo of a session's first message.
const firstEchoTimeout = 10 * time.Second

// first sends message 0 of s and checks its echo.
func (cs *clients) first(s *session) error {
	var out, in [msgLen]byte
	putMessage(out[:], s.id, 0)
	_ = s.conn.SetDeadline(time.Now().Add(firstEchoTimeout))
	if _, err := s.conn.Write(out[:]); err != nil {
		return fmt.Errorf("writing message 0: %w", err)
	}
	if _, err := io.ReadFull(s.conn, in[:]); err != nil {
		return fmt.Errorf("no echo of message 0 within %s: %w", firstEchoTimeout, err)
	}
	if in != out {
		return fmt.Errorf("echo 0 arrived as % x, want % x", in, out)
	}
	_ = s.conn.SetDeadline(time.Time{})
	s.lastAt.Store(cs.now())
	s.sent.Store(1)
	s.recv.Store(1)
	return nil
}

// read reads session s's echoes until its connection ends, checking each.
func (cs *clients) read(s *session) {
	defer cs.readers.Done()
	have := 0
	for {
		n, err := s.conn.Read(s.buf[have:])
		if n > 0 {
			now := cs.now()
			have += n
			off := 0
			for ; have-off >= msgLen; off += msgLen {
				if !s.failed.Load() {
					cs.check(s, s.buf[off:off+msgLen], now)
				}
			}
			have = copy(s.buf[:], s.buf[off:have])
		}
		if err != nil {
			if !cs.closing.Load() {
				cs.fails.session(s, kindEnded, fmt.Sprintf("after %d echoes, in the %s window, %.3fs into the trial: %v",
					s.recv.Load(), phaseNames[cs.phase.Load()], time.Duration(cs.now()).Seconds(), err))
			}
			return
		}
	}
}

// check verifies one echo of s that arrived at now.
func (cs *clients) check(s *session, m []byte, now int64) {
	id := binary.BigEndian.Uint32(m[0:])
	seq := binary.BigEndian.Uint32(m[4:])
	want := s.recv.Load()
	switch {
	case id != s.id || binary.BigEndian.Uint64(m[8:]) != checkWord(id, seq):
		cs.fails.session(s, kindCorrupted, fmt.Sprintf("echo %d arrived as % x, want session %d sequence %d (% x)",
			want, m, s.id, want, expected(s.id, want)))
	case seq < want:
		cs.fails.session(s, kindRepeated, fmt.Sprintf("echo %d arrived again after echo %d", seq, want-1))
	case seq > want:
		cs.fails.session(s, kindLost, fmt.Sprintf("echo %d arrived where echo %d was due (%d missing before it)", seq, want, seq-want))
	default:
		if last := s.lastAt.Load(); last >= 0 {
			ph := cs.phase.Load()
			if g := now - last; g > s.maxGap[ph].Load() {
				s.maxGap[ph].Store(g)
			}
		}
		s.lastAt.Store(now)
		s.recv.Store(want + 1)
	}
}

// expected returns message seq of session id.
func expected(id, seq uint32) []byte {
	var b [msgLen]byte
	putMessage(b[:], id, seq)
	return b[:]
}

// writeSlots is how many slots an interval is cut into: each writer sends
// to one slot of its sessions at a time, so that the sends of an interval
// are spread over it. A slot lasts at least 5 ms.
func writeSlots(interval time.Duration) int {
	return int(max(1, min(10, interval/(5*time.Millisecond))))
}

// startWriters starts n writers over the sessions, staggered.
func (cs *clients) startWriters(n int) {
	n = max(1, min(n, len(cs.sess)))
	slots := writeSlots(cs.interval)
	period := cs.interval / time.Duration(slots)
	start := time.Now()
	for w := 0; w < n; w++ {
		var mine []*session
		for i := w; i < len(cs.sess); i += n {
			mine = append(mine, cs.sess[i])
		}
		cs.writers.Add(1)
		go cs.write(mine, slots, period, start.Add(period*time.Duration(w)/time.Duration(n)))
	}
}

// write sends the next message of one slot of shard every period, from
// first on, until stop.
func (cs *clients) write(shard []*session, slots int, period time.Duration, first time.Time) {
	defer cs.writers.Done()
	var buf [msgLen]byte
	timer := time.NewTimer(time.Until(first))
	defer timer.Stop()
	next := first
	for tick := 0; ; tick++ {
		select {
		case <-cs.stop:
			return
		case <-timer.C:
		}
		for i := tick % slots; i < len(shard); i += slots {
			s := shard[i]
			if s.failed.Load() {
				continue
			}
			seq := s.sent.Load()
			putMessage(buf[:], s.id, seq)
			if _, err := s.conn.Write(buf[:]); err != nil {
				if !cs.closing.Load() {
					cs.fails.session(s, kindWrite, fmt.Sprintf("message %d, in the %s window: %v", seq, phaseNames[cs.phase.Load()], err))
				}
				continue
			}
			s.sent.Store(seq + 1)
		}
		ph := cs.phase.Load()
		if late := int64(time.Since(next)); late > cs.lag[ph].Load() {
			casMax(&cs.lag[ph], late)
		}
		next = next.Add(period)
		timer.Reset(time.Until(next))
	}
}

// casMax raises v to x unless it is already higher.
func casMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// setPhase starts window ph and notes, for the window that ends, each
// session's time since its last echo.
func (cs *clients) setPhase(ph int) {
	old := int(cs.phase.Load())
	cs.phase.Store(int32(ph))
	now := cs.now()
	for _, s := range cs.sess {
		if last := s.lastAt.Load(); last >= 0 {
			s.openGap[old] = now - last
		}
	}
}

// stopWriters stops sending and waits for the writers.
func (cs *clients) stopWriters() {
	select {
	case <-cs.stop:
	default:
		close(cs.stop)
	}
	cs.writers.Wait()
}

// waitEchoes waits until every session that has not failed got an echo of
// every message it sent, or timeout; it returns how many still wait.
func (cs *clients) waitEchoes(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		waiting := 0
		for _, s := range cs.sess {
			if !s.failed.Load() && s.recv.Load() != s.sent.Load() {
				waiting++
			}
		}
		if waiting == 0 || time.Now().After(deadline) {
			return waiting
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// close closes every connection and waits for the readers. before runs
// first, once the sessions' ends are no longer failures (the backend resets
// its side there). The connections are reset, not closed: 9,000 sessions
// closed with a FIN leave 18,000 ports in TIME_WAIT here and in the proxy
// for a minute, and a few trials exhaust the machine's ephemeral ports.
func (cs *clients) close(before func()) {
	cs.closing.Store(true)
	cs.stopWriters()
	if before != nil {
		before()
	}
	for _, s := range cs.sess {
		if s.conn != nil {
			resetClose(s.conn)
		}
	}
	cs.readers.Wait()
}

// resetClose closes c with a reset (SO_LINGER 0), which leaves no TIME_WAIT.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// GapStats is one window's longest echo gaps over the sessions.
type GapStats struct {
	// Window is how long the window lasted.
	WindowS float64 `json:"window_s"`
	// Sessions is how many sessions the figures are over (those that did
	// not fail).
	Sessions int `json:"sessions"`
	// MaxMs, P99Ms and MedianMs are the greatest, the 99th percentile and
	// the median (nearest rank) of the sessions' longest gaps.
	MaxMs    float64 `json:"max_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MedianMs float64 `json:"median_ms"`
	// SendLagMs is the longest lateness of this tool's sends in the window.
	SendLagMs float64 `json:"send_lag_ms"`
}

// gaps returns the figures of window ph over the sessions that did not
// fail.
func (cs *clients) gaps(ph int, window time.Duration) GapStats {
	var v []float64
	for _, s := range cs.sess {
		if s.failed.Load() {
			continue
		}
		g := max(s.maxGap[ph].Load(), s.openGap[ph])
		v = append(v, float64(g)/1e6)
	}
	st := GapStats{WindowS: window.Seconds(), Sessions: len(v), SendLagMs: float64(cs.lag[ph].Load()) / 1e6}
	if len(v) > 0 {
		slices.Sort(v)
		st.MaxMs, st.P99Ms, st.MedianMs = v[len(v)-1], rank(v, 0.99), rank(v, 0.50)
	}
	return st
}

// rank is the nearest-rank q-quantile of sorted v.
func rank(v []float64, q float64) float64 {
	i := int(math.Ceil(float64(len(v))*q)) - 1
	return v[max(0, min(i, len(v)-1))]
}
