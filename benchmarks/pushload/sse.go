package pushload

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/panjf2000/gnet/v2"

	"github.com/tidegate/tidegate/protocol/push"
)

// An SSE event's payload is text, so that it is one data line whatever its
// bytes: "<seq> <unix ns published> " with both numbers zero-padded to 20
// digits, then letters up to the payload size.
const (
	seqDigits = 20
	// MinSSEPayload is the smallest payload of a run with SSE subscribers.
	MinSSEPayload = 2*seqDigits + 2
	// maxHTTPHead bounds the response head a subscriber waits for.
	maxHTTPHead = 16 << 10
)

// putTextEvent writes seq and the publish time ts at the start of p (at
// least MinSSEPayload bytes; the rest is left as it is).
func putTextEvent(p []byte, seq uint64, ts int64) {
	putDigits(p[:seqDigits], seq)
	p[seqDigits] = ' '
	putDigits(p[seqDigits+1:2*seqDigits+1], uint64(ts))
	p[2*seqDigits+1] = ' '
}

func putDigits(dst []byte, v uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = '0' + byte(v%10)
		v /= 10
	}
}

// parseTextEvent reads what putTextEvent wrote.
func parseTextEvent(p []byte) (seq uint64, ts int64, ok bool) {
	if len(p) < MinSSEPayload || p[seqDigits] != ' ' || p[2*seqDigits+1] != ' ' {
		return 0, 0, false
	}
	s, ok1 := digits(p[:seqDigits])
	t, ok2 := digits(p[seqDigits+1 : 2*seqDigits+1])
	return s, int64(t), ok1 && ok2
}

func digits(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// sseSub is one SSE subscriber's state; only its loop touches the plain
// fields.
type sseSub struct {
	head    bool   // the response head was read
	named   bool   // inside an event with an "event:" line (a ping)
	next    uint64 // expected sequence number
	started bool
	gapOK   bool // a drop report came: the next event may skip ahead

	counts
	reported atomic.Int64
	closed   atomic.Bool
}

// sseClient reads the SSE streams of every subscriber on one gnet client.
type sseClient struct {
	gnet.BuiltinEventEngine
	firstErr
	request []byte
	subs    []*sseSub
	counts  []*counts // of subs
	closing atomic.Bool

	// Latency of the events published in [win0, win1] (unix ns), in µs.
	win0, win1 atomic.Int64
	mu         sync.Mutex
	hist       *hdrhistogram.Histogram
}

func (cl *sseClient) OnOpen(gnet.Conn) ([]byte, gnet.Action) { return cl.request, gnet.None }

func (cl *sseClient) OnClose(c gnet.Conn, _ error) gnet.Action {
	if s, _ := c.Context().(*sseSub); s != nil && !cl.closing.Load() {
		s.closed.Store(true)
	}
	return gnet.None
}

func (cl *sseClient) OnTraffic(c gnet.Conn) gnet.Action {
	s, _ := c.Context().(*sseSub)
	if s == nil {
		return gnet.None // the context is set right after Dial returns
	}
	buf, _ := c.Peek(-1)
	off := 0
	if !s.head {
		i := bytes.Index(buf, []byte("\r\n\r\n"))
		if i < 0 {
			if len(buf) > maxHTTPHead {
				return cl.fail(fmt.Errorf("pushload: SSE response head longer than %d bytes", maxHTTPHead))
			}
			return gnet.None
		}
		if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) && !bytes.HasPrefix(buf, []byte("HTTP/1.0 200 ")) {
			line, _, _ := bytes.Cut(buf, []byte("\r\n"))
			return cl.fail(fmt.Errorf("pushload: SSE subscribe answered %q", line))
		}
		s.head, off = true, i+4
		s.ready.Store(true)
	}
	now := time.Now().UnixNano()
	w0, w1 := cl.win0.Load(), cl.win1.Load()
	locked := false
	var delivered int64
	for {
		j := bytes.IndexByte(buf[off:], '\n')
		if j < 0 {
			break
		}
		line := buf[off : off+j]
		off += j + 1
		switch {
		case len(line) == 0:
			s.named = false
		case bytes.HasPrefix(line, []byte("event:")):
			s.named = true
		case bytes.HasPrefix(line, []byte(push.SSEDataPrefix)) && !s.named:
			data := line[len(push.SSEDataPrefix):]
			if len(data) > 0 && data[0] == '{' {
				n, err := dropReport(data)
				if err != nil {
					return cl.fail(err)
				}
				s.reported.Add(n)
				s.gapOK = true
				continue
			}
			seq, ts, ok := parseTextEvent(data)
			if !ok {
				return cl.fail(fmt.Errorf("pushload: SSE data line %q is no event of this load", data))
			}
			if s.started && seq != s.next && !(s.gapOK && seq > s.next) {
				s.breaks.Add(1)
			}
			s.started, s.next, s.gapOK = true, seq+1, false
			delivered++
			if ts >= w0 && ts <= w1 {
				if !locked {
					cl.mu.Lock()
					locked = true
				}
				_ = cl.hist.RecordValue(max(now-ts, 0) / 1e3)
			}
		}
	}
	if locked {
		cl.mu.Unlock()
	}
	s.delivered.Add(delivered)
	if off > 0 {
		_, _ = c.Discard(off)
	}
	return gnet.None
}

// dropReport reads the count of a {"tidegate.meta":"droppedMessageCount","value":"n"} message.
func dropReport(data []byte) (int64, error) {
	prefix := push.AppendDropMeta(nil, 0)
	prefix = prefix[:len(prefix)-len(`0"}`)]
	if !bytes.HasPrefix(data, prefix) || !bytes.HasSuffix(data, []byte(`"}`)) {
		return 0, fmt.Errorf("pushload: SSE meta message %q is no drop report", data)
	}
	n, err := strconv.ParseInt(string(data[len(prefix):len(data)-2]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pushload: SSE drop report %q: %w", data, err)
	}
	return n, nil
}

// sseReaders are the counting SSE subscribers of a run, on one gnet client.
type sseReaders struct {
	gc *gnet.Client
	cl *sseClient
}

// startSSEReaders connects cfg.Subscribers SSE subscribers to cfg.Topic and
// waits until every one has its response head.
func startSSEReaders(cfg Config) (*sseReaders, error) {
	cl := &sseClient{
		request: []byte("GET " + push.EventsPath + "?topic=" + url.QueryEscape(cfg.Topic) + " HTTP/1.1\r\nHost: pushload\r\n\r\n"),
		hist:    hdrhistogram.New(1, 120_000_000, 3),
	}
	cl.win0.Store(1<<63 - 1) // nothing recorded until the measurement starts
	gc, _, err := dialSubscribers(cfg, "SSE subscriber", cl, func() any {
		s := &sseSub{}
		cl.subs = append(cl.subs, s)
		cl.counts = append(cl.counts, &s.counts)
		return s
	})
	if err != nil {
		return nil, err
	}
	rd := &sseReaders{gc: gc, cl: cl}
	if _, err := waitReady(cl.counts, rd.err); err != nil {
		rd.close()
		return nil, fmt.Errorf("%w: no SSE response", err)
	}
	cfg.Logger.Info().Int("subscribers", cfg.Subscribers).Msg("SSE subscribers connected")
	return rd, nil
}

func (rd *sseReaders) sum() (delivered, breaks, frames int64) { return sumCounts(rd.cl.counts) }

// window sets the publish times whose latency is recorded.
func (rd *sseReaders) window(from, to int64) {
	rd.cl.win1.Store(to)
	rd.cl.win0.Store(from)
}

func (rd *sseReaders) drain(want int64, d time.Duration) { drainCounts(rd.sum, want, d) }

func (rd *sseReaders) err() error { return rd.cl.err() }

// drops returns the subscribers the server closed during the run and the
// events it did not deliver: those it reported dropped, and what closed
// subscribers missed of the published events.
func (rd *sseReaders) drops(published int64) (closed, dropped int64) {
	for _, s := range rd.cl.subs {
		dropped += s.reported.Load()
		if s.closed.Load() {
			closed++
			dropped += max(published-s.delivered.Load()-s.reported.Load(), 0)
		}
	}
	return closed, dropped
}

// latency returns the recorded latency quantiles.
func (rd *sseReaders) latency() (p50, p99, maxLat time.Duration, n int64) {
	rd.cl.mu.Lock()
	defer rd.cl.mu.Unlock()
	h := rd.cl.hist
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(99)), us(h.Max()), h.TotalCount()
}

func (rd *sseReaders) close() {
	rd.cl.closing.Store(true)
	_ = rd.gc.Stop()
}
