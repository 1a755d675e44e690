package soak

// This file holds the serve soak's steady clients: connections that send
// a pipeline of TLV requests on a fixed schedule for the whole run, check
// every response against its request, and at the end compare the sha256
// of everything sent with that of everything received, per connection.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/mcclient"
)

// Shape of the steady TLV clients' traffic.
const (
	// tlvPipeline is the requests each steady client sends at once.
	tlvPipeline = 4
	// tlvBodyMin and tlvBodyMax bound a request's body.
	tlvBodyMin, tlvBodyMax = 60, 200
	// connectParallel is how many steady clients connect at once.
	connectParallel = 64
	// kindSteady labels the steady clients' payloads.
	kindSteady = "steady"
)

// steadyTLV is the serve soak's steady clients.
type steadyTLV struct {
	addr          string
	conns, rate   int
	stall, period time.Duration

	frames, replies, wrong atomic.Int64
	// digests counts the connections whose sha256 of what came back
	// equalled that of what was sent.
	digests atomic.Int64

	mu      sync.Mutex
	samples []string
	hist    *hdrhistogram.Histogram
}

// fail counts n wrong replies of connection id with why.
func (st *steadyTLV) fail(id int, n int64, why error) {
	st.wrong.Add(n)
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.samples) < maxFailureSamples {
		st.samples = append(st.samples, fmt.Sprintf("connection %d: %v", id, why))
	}
}

// runSteadyTLV connects conns steady clients to addr, calls began once all
// are connected, then runs them until ctx ends; rate is each one's
// pipelines per second, stall how long a reply may take.
func runSteadyTLV(ctx context.Context, addr string, conns, rate int, stall time.Duration, began func()) (Steady, error) {
	st := &steadyTLV{addr: addr, conns: conns, rate: rate, stall: stall, period: time.Second / time.Duration(rate), hist: harness.NewLatencyHistogram()}
	cs := make([]net.Conn, conns)
	var dialErr atomic.Pointer[error]
	sem := make(chan struct{}, connectParallel)
	var wg sync.WaitGroup
	for i := range cs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := net.DialTimeout("tcp", addr, loginTimeout)
			if err != nil {
				e := fmt.Errorf("steady client %d: %w", i, err)
				dialErr.CompareAndSwap(nil, &e)
				return
			}
			cs[i] = c
		}()
	}
	wg.Wait()
	if e := dialErr.Load(); e != nil {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
		return Steady{}, *e
	}
	began()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			st.client(ctx, i, c)
		}()
	}
	wg.Wait()
	s := Steady{Sessions: conns, Frames: st.frames.Load(), Replies: st.replies.Load(), Wrong: st.wrong.Load(), Samples: st.samples}
	if st.hist.TotalCount() > 0 {
		s.RTTP50Ms = float64(st.hist.ValueAtQuantile(50)) / 1e6
		s.RTTP99Ms = float64(st.hist.ValueAtQuantile(99)) / 1e6
		s.RTTMaxMs = float64(st.hist.Max()) / 1e6
	}
	if n := st.digests.Load(); n != int64(conns) && s.Wrong == 0 {
		s.Wrong = int64(conns) - n
		s.Samples = append(s.Samples, fmt.Sprintf("%d of %d connections' sha256 of what came back differed from what was sent", s.Wrong, conns))
	}
	return s, nil
}

// client runs connection id until ctx ends: a pipeline every period, every
// response checked; then it leaves in order and compares the digests.
func (st *steadyTLV) client(ctx context.Context, id int, c net.Conn) {
	sent, got := sha256.New(), sha256.New()
	// Spread the clients' schedules over one period.
	next := time.Now().Add(st.period * time.Duration(id) / time.Duration(st.conns))
	var w tlvWire
	buf := make([]byte, 0, tlvPipeline*(tlvBodyMax+8))
	back := make([]byte, 0, cap(buf))
	for seq := 0; ; seq++ {
		if harness.Sleep(ctx, time.Until(next)) != nil {
			break
		}
		next = next.Add(st.period)
		buf = buf[:0]
		for i := range tlvPipeline {
			n := seq*tlvPipeline + i
			buf = append(buf, w.frame(kindSteady, id, n, tlvBodyMin+(n*37+id)%(tlvBodyMax-tlvBodyMin))...)
		}
		start := time.Now()
		if err := st.roundTrip(c, buf, &back, sent, got); err != nil {
			st.fail(id, tlvPipeline, err)
			return
		}
		st.frames.Add(tlvPipeline)
		st.replies.Add(tlvPipeline)
		st.mu.Lock()
		_ = st.hist.RecordValue(max(int64(time.Since(start)), harness.LatencyLowest))
		st.mu.Unlock()
	}
	if err := leave(c); err != nil {
		st.fail(id, 0, err)
		return
	}
	if bytes.Equal(sent.Sum(nil), got.Sum(nil)) {
		st.digests.Add(1)
	}
}

// roundTrip writes req and reads as many bytes back into *back within the
// stall, feeding both digests; the echo must equal the requests.
func (st *steadyTLV) roundTrip(c net.Conn, req []byte, back *[]byte, sent, got hash.Hash) error {
	_ = c.SetDeadline(time.Now().Add(st.stall))
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("writing %d bytes of requests: %w", len(req), err)
	}
	sent.Write(req)
	b := (*back)[:len(req)]
	if _, err := io.ReadFull(c, b); err != nil {
		return fmt.Errorf("reading %d bytes of responses within %s: %w", len(req), st.stall, err)
	}
	got.Write(b)
	*back = b
	if !bytes.Equal(b, req) {
		return fmt.Errorf("responses differ from the requests at byte %d", mcclient.FirstDifference(b, req))
	}
	_ = c.SetDeadline(time.Time{})
	return nil
}
