package soak

// This file holds the soak's short-lived sessions, each kind a loop per
// worker until the run ends: churn (log in, echo one frame, hold, leave),
// stalled readers (send a burst, read nothing for a while, then read and
// check it all) and half-closes (send a frame, shut the write side, read
// the echo to the end of the stream). Every byte that comes back is
// checked against what was sent.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// Kinds of short-lived session.
const (
	kindChurn     = "churn"
	kindStalled   = "stalled"
	kindHalfClose = "half-close"
)

// Sizes of the short-lived sessions' frames.
const (
	churnFrameBody   = 200
	stalledFrameBody = 8 << 10
	// stalledReadBuffer is a stalled reader's SO_RCVBUF: small, so that
	// what it does not read queues in the proxy rather than in its socket.
	stalledReadBuffer = 4 << 10
	// loginTimeout bounds a short-lived session's connect and login.
	loginTimeout = 10 * time.Second
	// maxFailureSamples is how many failure messages a run keeps.
	maxFailureSamples = 20
)

// KindCount is what one kind of short-lived session did.
type KindCount struct {
	// Done went through to the end with every byte right; Cut ended early
	// while a backend restart was under way (expected); Failed went wrong
	// otherwise.
	Done   int64 `json:"done"`
	Cut    int64 `json:"cut"`
	Failed int64 `json:"failed"`
}

// shortLived runs the short-lived sessions and counts what they did.
type shortLived struct {
	addr string
	// wire is the protocol the sessions speak: Minecraft through the
	// proxy, or TLV to serve.
	wire wire
	hold time.Duration
	// burst is what each stalled reader sends, in frames of
	// stalledFrameBody bytes.
	burst int
	// leak keeps every churn connection open instead of closing it: a
	// leak on purpose, which the soak must notice (tests only).
	leak bool

	// restart is odd while the churn backend is being restarted, and
	// counts the restarts' starts and ends: a session that saw it change,
	// or saw it odd, was cut by a restart.
	restart atomic.Int64
	// zero is when the load started, for the failures' times.
	zero atomic.Pointer[time.Time]

	mu       sync.Mutex
	counts   map[string]*KindCount
	failures []string
	lat      *hdrhistogram.Histogram // churn logins and echoes since the last sample
	leaked   []net.Conn
}

func newShortLived(addr string, w wire, hold time.Duration, burst int) *shortLived {
	return &shortLived{addr: addr, wire: w, hold: hold, burst: burst, lat: harness.NewLatencyHistogram(),
		counts: map[string]*KindCount{kindChurn: {}, kindStalled: {}, kindHalfClose: {}}}
}

// wire is what the short-lived sessions speak: how a session starts once
// connected, and what one frame of it is. Every frame comes back as it was
// sent (the fake backend behind the proxy and serve both echo).
type wire interface {
	// start begins a session on nc (a login, for the proxy) by deadline
	// and returns what arrived past its start.
	start(nc net.Conn, name string, deadline time.Time) ([]byte, error)
	// frame returns a frame with body bytes of payload unique to kind's
	// worker w and its session seq.
	frame(kind string, w, seq, body int) []byte
}

// minecraftWire logs in as the proxy's player, to host:port, and sends
// PLAY frames.
type minecraftWire struct {
	host string
	port uint16
}

// newMinecraftWire logs in to the proxy at addr with host as the server
// address.
func newMinecraftWire(addr, host string) (minecraftWire, error) {
	_, port, err := mcclient.SplitHostPort(addr)
	return minecraftWire{host: host, port: port}, err
}

func (m minecraftWire) start(nc net.Conn, name string, deadline time.Time) ([]byte, error) {
	return mcclient.Login(nc, m.host, m.port, name, nil, deadline)
}

func (minecraftWire) frame(kind string, w, seq, body int) []byte {
	return mc.AppendPacket(nil, mcclient.PlayPacketID, payload(kind, w, seq, body-1))
}

// tlvWire sends keep-alive TLV requests (tidegate serve) in the default
// format; a session needs no start.
type tlvWire struct{}

func (tlvWire) start(net.Conn, string, time.Time) ([]byte, error) { return nil, nil }

func (tlvWire) frame(kind string, w, seq, body int) []byte {
	p := payload(kind, w, seq, body)
	f := make([]byte, tlv.DefaultFormat.HeaderLen(), tlv.DefaultFormat.HeaderLen()+len(p))
	tlv.DefaultFormat.PutHeader(f, tlv.Header{Type: uint16(seq % 64), KeepAlive: true, Length: len(p)})
	return append(f, p...)
}

// session is one short-lived session of worker w, its seq-th.
type session func(ctx context.Context, w, seq int) error

// run starts n workers of kind, each running one session after another
// until ctx ends; wg tracks them.
func (s *shortLived) run(ctx context.Context, wg *sync.WaitGroup, kind string, n int, one session) {
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the workers' first sessions over one hold.
			if harness.Sleep(ctx, s.hold*time.Duration(w)/time.Duration(max(n, 1))) != nil {
				return
			}
			for seq := 0; ctx.Err() == nil; seq++ {
				started := time.Now()
				epoch := s.restart.Load()
				startedAt := s.clock()
				err := one(ctx, w, seq)
				s.count(ctx, kind, epoch, startedAt, err)
				// One session a hold per worker at most, however fast it went.
				if harness.Sleep(ctx, s.hold-time.Since(started)) != nil {
					return
				}
			}
		}()
	}
}

// clock returns the time since the load started, in seconds.
func (s *shortLived) clock() float64 {
	if z := s.zero.Load(); z != nil {
		return time.Since(*z).Seconds()
	}
	return 0
}

// count counts one session of kind that started in restart epoch, at
// startedAt (s since the load started).
func (s *shortLived) count(ctx context.Context, kind string, epoch int64, startedAt float64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts[kind]
	switch {
	case err == nil:
		c.Done++
	case epoch%2 == 1 || s.restart.Load() != epoch:
		c.Cut++
	case ctx.Err() != nil || ended(ctx):
		// The run ended under it: neither done nor failed.
	default:
		c.Failed++
		if len(s.failures) < maxFailureSamples {
			s.failures = append(s.failures, fmt.Sprintf("%s session started at %.1fs, failed at %.1fs: %v", kind, startedAt, s.clock(), err))
		}
	}
}

// ended reports whether ctx's deadline has passed: a connect bounded by it
// can fail with a timeout a moment before ctx itself reports it done.
func ended(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// snapshot returns the counts and failure samples so far.
func (s *shortLived) snapshot() (map[string]KindCount, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]KindCount, len(s.counts))
	for k, c := range s.counts {
		out[k] = *c
	}
	return out, append([]string(nil), s.failures...)
}

// takeLatency returns the churn latencies recorded since the last call.
func (s *shortLived) takeLatency() *hdrhistogram.Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.lat
	s.lat = harness.NewLatencyHistogram()
	return h
}

func (s *shortLived) record(d time.Duration) {
	s.mu.Lock()
	_ = s.lat.RecordValue(max(int64(d), harness.LatencyLowest))
	s.mu.Unlock()
}

// closeLeaked closes what the leak knob kept open.
func (s *shortLived) closeLeaked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.leaked {
		c.Close()
	}
	s.leaked = nil
}

// payload returns n bytes (or the label, if longer) unique to kind's
// worker w and its session seq.
func payload(kind string, w, seq, n int) []byte {
	data := fmt.Appendf(nil, "%s %d %d ", kind, w, seq)
	pattern := mcclient.FillerPattern(n + 1)
	off := (w*31 + seq) % mcclient.PatternPeriod
	return append(data, pattern[off:off+max(n-len(data), 0)]...)
}

// login dials the server (with dialer d; nil for a plain one) and starts a
// session as name within timeout.
func (s *shortLived) login(ctx context.Context, d *net.Dialer, name string, timeout time.Duration) (net.Conn, []byte, error) {
	if d == nil {
		d = &net.Dialer{Timeout: timeout}
	}
	nc, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", s.addr, err)
	}
	left, err := s.wire.start(nc, name, time.Now().Add(timeout))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, left, nil
}

// expect reads len(want) bytes after left from c, within timeout, and
// checks them against want.
func expect(c net.Conn, left, want []byte, timeout time.Duration) error {
	got := make([]byte, len(want))
	n := copy(got, left)
	if len(left) > len(want) {
		return fmt.Errorf("%d bytes came where %d were due", len(left), len(want))
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.ReadFull(c, got[n:]); err != nil {
		return fmt.Errorf("reading the echo (%d of %d bytes): %w", n, len(want), err)
	}
	if !bytes.Equal(got, want) {
		i := mcclient.FirstDifference(got, want)
		return fmt.Errorf("echo of %d bytes differs from what was sent at byte %d", len(want), i)
	}
	return nil
}

// churn logs in, echoes one frame (timing the login and the echo), holds
// the session a while and leaves.
func (s *shortLived) churn(ctx context.Context, w, seq int) error {
	start := time.Now()
	c, left, err := s.login(ctx, nil, fmt.Sprintf("c%d_%d", w, seq%1000), loginTimeout)
	if err != nil {
		return err
	}
	if s.leak {
		s.mu.Lock()
		s.leaked = append(s.leaked, c)
		s.mu.Unlock()
	} else {
		defer c.Close()
	}
	s.record(time.Since(start))
	f := s.wire.frame(kindChurn, w, seq, churnFrameBody)
	sent := time.Now()
	if _, err := c.Write(f); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	if err := expect(c, left, f, 10*time.Second); err != nil {
		return err
	}
	s.record(time.Since(sent))
	// Hold the session for part of the hold; the rest the worker sleeps.
	if err := harness.Sleep(ctx, s.hold/2); err != nil || s.leak {
		return err
	}
	return leave(c)
}

// leaveTimeout bounds the wait for the proxy to end a session this side
// has shut its write side of.
const leaveTimeout = 30 * time.Second

// leave ends a session in order: shutdown(SHUT_WR), then nothing more but
// the end of the stream, which comes once the proxy has closed the
// session's backend and client sockets. So a worker's next connect never
// overlaps its previous session in the proxy, however late a loaded proxy
// closes it: the sessions the soak asks for at once are the proxy's
// sessions at once, which is what its descriptor budget is sized for
// (doc.go). Without it, each closed session lingered in the proxy while
// its worker connected again, and at 9,000 sessions the overlap took the
// budget to its reserve (benchmarks/results/2026-12-02-soak-hour.md).
func leave(c net.Conn) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("connection %T is not TCP", c)
	}
	if err := tc.CloseWrite(); err != nil {
		return fmt.Errorf("leaving: shutting the write side: %w", err)
	}
	return expectEOF(c, "leaving")
}

// expectEOF reads from c until the end of the stream, which must come
// within leaveTimeout with no byte before it; what names the step.
func expectEOF(c net.Conn, what string) error {
	_ = c.SetReadDeadline(time.Now().Add(leaveTimeout))
	var one [1]byte
	if n, err := c.Read(one[:]); n > 0 || !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: want the end of the stream; got %d bytes, %v", what, n, err)
	}
	return nil
}

// stalled sends a burst it does not read for a hold, then reads it all.
func (s *shortLived) stalled(ctx context.Context, w, seq int) error {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: smallReadBuffer}
	c, left, err := s.login(ctx, d, fmt.Sprintf("s%d_%d", w, seq%1000), loginTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	var burst []byte
	frames := max(s.burst/stalledFrameBody, 1)
	for i := range frames {
		burst = append(burst, s.wire.frame(kindStalled, w, seq*frames+i, stalledFrameBody)...)
	}
	wrote := make(chan error, 1)
	go func() {
		_ = c.SetWriteDeadline(time.Now().Add(s.hold + 30*time.Second))
		_, err := c.Write(burst)
		wrote <- err
	}()
	if err := harness.Sleep(ctx, s.hold); err != nil {
		return err
	}
	err = expect(c, left, burst, 30*time.Second)
	if werr := <-wrote; werr != nil {
		err = errors.Join(fmt.Errorf("writing the burst: %w", werr), err)
	}
	if err != nil {
		return err
	}
	return leave(c)
}

// halfClose sends a frame, shuts its write side and reads the echo and
// then the end of the stream.
func (s *shortLived) halfClose(ctx context.Context, w, seq int) error {
	c, left, err := s.login(ctx, nil, fmt.Sprintf("h%d_%d", w, seq%1000), loginTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	f := s.wire.frame(kindHalfClose, w, seq, churnFrameBody)
	if _, err := c.Write(f); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("connection %T is not TCP", c)
	}
	if err := tc.CloseWrite(); err != nil {
		return fmt.Errorf("shutting the write side: %w", err)
	}
	if err := expect(c, left, f, 10*time.Second); err != nil {
		return err
	}
	return expectEOF(c, "after the echo")
}
