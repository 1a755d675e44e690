package pushserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// startServer runs a push server on ephemeral ports.
func startServer(t testing.TB, mod func(*Config)) (*Server, string, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"
	cfg.Loops = 2
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	pa, err := s.PublishAddr()
	if err != nil {
		t.Fatal(err)
	}
	sa, err := s.SubscribeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return s, pa.String(), sa.String()
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// publishFrame is one TLV publish frame.
func publishFrame(t testing.TB, topic string, events ...[]byte) []byte {
	t.Helper()
	body, err := push.AppendPublish(nil, []byte(topic), events...)
	if err != nil {
		t.Fatal(err)
	}
	return tlv.DefaultFormat.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, body)
}

// legacyReader decodes legacy frames with its own code, independent of protocol/push.
type legacyReader struct {
	r     *bufio.Reader
	topic string
}

type legacyEvent struct {
	op      byte
	payload []byte
}

// next reads one frame and returns its events.
func (lr *legacyReader) next() ([]legacyEvent, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(lr.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 8<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(lr.r, body); err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != 1 || int(body[1]) > len(body)-2 {
		return nil, fmt.Errorf("bad frame header % x", body[:min(len(body), 8)])
	}
	if name := string(body[2 : 2+int(body[1])]); name != lr.topic {
		return nil, fmt.Errorf("frame name %q, want %q", name, lr.topic)
	}
	var evs []legacyEvent
	for rest := body[2+int(body[1]):]; len(rest) > 0; {
		if len(rest) < 5 {
			return nil, fmt.Errorf("truncated event header")
		}
		l := int(binary.BigEndian.Uint32(rest))
		if l < 1 || l > len(rest)-4 {
			return nil, fmt.Errorf("event length %d in %d bytes", l, len(rest)-4)
		}
		evs = append(evs, legacyEvent{op: rest[4], payload: rest[5 : 4+l]})
		rest = rest[4+l:]
	}
	return evs, nil
}

// subscribeTCP subscribes and waits for the acknowledgement.
func subscribeTCP(t testing.TB, addr, topic string) (net.Conn, *legacyReader) {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write([]byte("SUBSCRIBE " + topic + "\r\n")); err != nil {
		t.Fatal(err)
	}
	lr := &legacyReader{r: bufio.NewReader(c), topic: topic}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	evs, err := lr.next()
	if err != nil || len(evs) != 1 || evs[0].op != push.OpSubscribed {
		t.Fatalf("subscribe ack: %v %+v", err, evs)
	}
	return c, lr
}

func TestTCPSubscriberReceivesEventsInFrames(t *testing.T) {
	srv, pub, sub := startServer(t, func(c *Config) { c.Window = 50 * time.Millisecond })
	c, lr := subscribeTCP(t, sub, "prices")
	_, other := subscribeTCP(t, sub, "other")
	p := dial(t, pub)
	want := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte("x"), 3000), []byte("four")}
	frames := append(publishFrame(t, "prices", want[:2]...), publishFrame(t, "prices", want[2:]...)...)
	frames = append(frames, publishFrame(t, "nobody", []byte("lost"))...)
	if _, err := p.Write(frames); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < len(want) {
		evs, err := lr.next()
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		for _, e := range evs {
			if e.op != push.OpNext {
				t.Fatalf("op %d, want %d", e.op, push.OpNext)
			}
			got = append(got, e.payload)
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
	// The other topic's subscriber got nothing but heartbeats.
	other.r.Reset(other.r) // keep the reader; nothing to assert without waiting
	waitStats(t, srv, "the writes, the unrouted event and the frames", func(st Stats) bool {
		return st.SuccessfulWrites == 4 && st.UnroutedEvents == 1 && st.PublishFrames == 3
	})
	st := srv.Stats()
	if st.TCPSubscribers != 2 || st.Batches < 1 || st.Batches > 2 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// waitStats waits until the server's stats satisfy cond; a failure shows the
// last stats seen.
func waitStats(t testing.TB, srv *Server, what string, cond func(Stats) bool) {
	t.Helper()
	waitfor.Value(t, what, srv.Stats, cond)
}

func TestHeartbeatAndReadIdle(t *testing.T) {
	srv, _, sub := startServer(t, func(c *Config) {
		c.Heartbeat = 50 * time.Millisecond
		c.ReadIdle = 300 * time.Millisecond
	})
	// From before the subscription: the server's last read of it is the
	// SUBSCRIBE line, after this.
	start := time.Now()
	c, lr := subscribeTCP(t, sub, "quiet")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	beats := 0
	for {
		evs, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("after %d heartbeats: %v, want EOF from the read idle close", beats, err)
			}
			break
		}
		if len(evs) != 1 || evs[0].op != push.OpHeartbeat || len(evs[0].payload) != 0 {
			t.Fatalf("got %+v, want one heartbeat", evs)
		}
		beats++
	}
	// The last read is stamped with the loop clock, which lags real time by
	// up to a tick (10 ms) when the ticker runs on time: 50 ms allows it to
	// run 40 ms late at that moment. The upper bound only tells the read-idle
	// close from the read deadline (5 s). Heartbeats are due every 50 ms of
	// write idleness, 5 before the close; two show they repeat, unless the
	// loop stalls for 200 ms.
	if el := time.Since(start); beats < 2 || el < 250*time.Millisecond || el > 2*time.Second {
		t.Fatalf("%d heartbeats, closed after %v", beats, el)
	}
	waitStats(t, srv, "the read-idle close", func(st Stats) bool { return st.ReadIdleCloses == 1 })

	// A connection that never sends its request is closed too.
	idle := dial(t, sub)
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("silent connection: read %d, %v; want EOF", n, err)
	}
}

func TestSSEOverCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	srv, pub, sub := startServer(t, func(c *Config) { c.Window = 20 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, curl, "-sS", "-N", "-i", "http://"+sub+"/events?topic=news")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	waitStats(t, srv, "the SSE subscriber", func(st Stats) bool { return st.SSESubscribers == 1 })
	p := dial(t, pub)
	if _, err := p.Write(publishFrame(t, "news", []byte("hello"), []byte("two\nlines"), []byte(`{"k":1}`))); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	br := bufio.NewReader(out)
	want := "data: hello\n\ndata: two\ndata: lines\n\ndata: {\"k\":1}\n\n"
	for !strings.HasSuffix(got.String(), want) {
		line, err := br.ReadString('\n')
		got.WriteString(line)
		if err != nil {
			t.Fatalf("curl output so far %q: %v", got.String(), err)
		}
	}
	head := got.String()
	for _, h := range []string{"HTTP/1.1 200 OK\r\n", "Content-Type: text/event-stream\r\n", "Cache-Control: no-cache\r\n"} {
		if !strings.Contains(head, h) {
			t.Fatalf("response lacks %q: %q", h, head)
		}
	}
}

func TestHTTPRefusals(t *testing.T) {
	srv, _, sub := startServer(t, nil)
	cases := map[string]string{
		"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n":                           "HTTP/1.1 404 Not Found\r\n",
		"POST /events?topic=a HTTP/1.1\r\n\r\n":                           "HTTP/1.1 405 Method Not Allowed\r\n",
		"GET /events HTTP/1.1\r\n\r\n":                                    "HTTP/1.1 400 Bad Request\r\n",
		"\x16\x03\x01 garbage":                                            "HTTP/1.1 400 Bad Request\r\n",
		"GET /events?topic=a HTTP/1.1\r\nX: " + strings.Repeat("y", 9000): "HTTP/1.1 431 ",
		"SUBSCRIBE bad topic\n":                                           "ERROR ",
	}
	for req, want := range cases {
		c := dial(t, sub)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		resp, err := io.ReadAll(c)
		if err != nil || !strings.HasPrefix(string(resp), want) {
			t.Errorf("request %.30q: response %q, %v; want prefix %q", req, resp, err, want)
		}
	}
	st := srv.Stats()
	if st.Refusals["http_404"] != 1 || st.Refusals["http_405"] != 1 || st.Refusals["http_400"] != 2 ||
		st.Refusals["http_431"] != 1 || st.Refusals["bad_subscribe_line"] != 1 {
		t.Fatalf("refusals %v", st.Refusals)
	}
}

func TestBadPublishFrameGetsErrorFrameAndClose(t *testing.T) {
	srv, pub, _ := startServer(t, nil)
	f := tlv.DefaultFormat
	cases := map[string][]byte{
		"bad_topic":      f.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, []byte{3, 'a', ' ', 'b', 0, 0, 0, 0}),
		"unknown_type":   f.AppendFrame(nil, tlv.Header{Type: 9}, nil),
		"truncated":      f.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, []byte{1, 't', 0, 0, 0, 9}),
		"body_too_large": f.AppendHeader(nil, tlv.Header{Type: push.TypePublish, Length: f.MaxBody + 1}),
	}
	for reason, frame := range cases {
		c := dial(t, pub)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		// A good frame first: it is accepted, the bad one ends the connection.
		if _, err := c.Write(append(publishFrame(t, "t", []byte("ok")), frame...)); err != nil {
			t.Fatal(err)
		}
		resp, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%s: %v", reason, err)
		}
		h, n, err := f.Decode(resp)
		if err != nil || n != len(resp) || h.Type != f.ErrorType() {
			t.Fatalf("%s: reply %q is not one error frame (%v)", reason, resp, err)
		}
	}
	st := srv.Stats()
	for reason := range cases {
		if st.Rejects[reason] != 1 {
			t.Errorf("reject %s counted %d times; all: %v", reason, st.Rejects[reason], st.Rejects)
		}
	}
	if st.PublishFrames != int64(len(cases)) {
		t.Errorf("accepted %d publish frames, want %d", st.PublishFrames, len(cases))
	}
}

// TestDropsAreReportedToSSE fills a subscriber that does not read, then
// checks that the stream carries a drop meta message with the dropped count.
func TestDropsAreReportedToSSE(t *testing.T) {
	srv, pub, sub := startServer(t, func(c *Config) {
		c.Window = 0
		c.HighWatermark = 64 << 10
	})
	c := dial(t, sub)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(16 << 10)
	}
	if _, err := c.Write([]byte("GET /events?topic=bulk HTTP/1.1\r\nHost: t\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	waitStats(t, srv, "the subscriber", func(st Stats) bool { return st.SSESubscribers == 1 })
	p := dial(t, pub)
	payload := bytes.Repeat([]byte("z"), 32<<10)
	for i := 0; srv.Stats().Dropped == 0; i++ {
		if i == 2000 {
			t.Fatalf("nothing dropped after %d events: %+v", i, srv.Stats())
		}
		if _, err := p.Write(publishFrame(t, "bulk", payload)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	dropped := srv.Stats().Dropped
	// Drain the stream while publishing small events until one arrives: the
	// first batch written after the drops leads with the report.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	wantMeta := `data: {"tidegate.meta":"droppedMessageCount","value":"`
	type result struct {
		meta string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		br := bufio.NewReaderSize(c, 64<<10)
		var meta string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				done <- result{err: err}
				return
			}
			if strings.HasPrefix(line, wantMeta) {
				meta = line
			}
			if strings.HasPrefix(line, "data: after") {
				done <- result{meta: meta}
				return
			}
		}
	}()
	var res result
	waitfor.Check(t, `the reader to get an "after" event`, func() error {
		if _, err := p.Write(publishFrame(t, "bulk", []byte("after"))); err != nil {
			t.Fatal(err)
		}
		select {
		case res = <-done:
			return nil
		default:
			return errors.New("published, not read yet")
		}
	})
	if res.err != nil {
		t.Fatalf("stream ended before the drop report: %v", res.err)
	}
	meta := res.meta
	final := srv.Stats().Dropped
	if meta == "" {
		t.Fatal("no drop meta message before the last event")
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(meta, wantMeta), "\"}\n"), 10, 64)
	if err != nil || n < dropped || n > final {
		t.Fatalf("meta %q reports %d, dropped counted %d..%d", meta, n, dropped, final)
	}
	st := srv.Stats()
	if st.ProcessedWrites != st.SuccessfulWrites+st.Dropped+st.FailedWrites {
		t.Fatalf("processed %d != successful %d + dropped %d + failed %d", st.ProcessedWrites, st.SuccessfulWrites, st.Dropped, st.FailedWrites)
	}
}

// TestManySubscribersReceiveEveryEventOnceInOrder runs 5,000 subscribers (one
// in ten over SSE) against one publisher, with and without a window.
func TestManySubscribersReceiveEveryEventOnceInOrder(t *testing.T) {
	const subscribers, events, perFrame = 5000, 210, 10
	for _, window := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(fmt.Sprintf("window=%v", window), func(t *testing.T) {
			srv, pub, sub := startServer(t, func(c *Config) {
				c.Window = window
				c.Heartbeat = 0 // keep the streams to the events
				c.ReadIdle = 0  // the clients send nothing after their request
			})
			start := time.Now()
			conns := make([]net.Conn, subscribers)
			var dialWG sync.WaitGroup
			dialErr := make(chan error, subscribers)
			for i := range conns {
				dialWG.Add(1)
				go func() {
					defer dialWG.Done()
					c, err := net.DialTimeout("tcp", sub, 10*time.Second)
					if err != nil {
						dialErr <- err
						return
					}
					conns[i] = c
					req := "SUBSCRIBE fan\n"
					if i%10 == 0 {
						req = "GET /events?topic=fan HTTP/1.1\r\nHost: t\r\n\r\n"
					}
					if _, err := c.Write([]byte(req)); err != nil {
						dialErr <- err
					}
				}()
				if i%500 == 499 {
					dialWG.Wait() // keep the accept queue short
				}
			}
			dialWG.Wait()
			t.Cleanup(func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			})
			close(dialErr)
			for err := range dialErr {
				t.Fatalf("dial: %v", err)
			}
			waitStats(t, srv, fmt.Sprintf("%d subscribers", subscribers), func(st Stats) bool { return st.TCPSubscribers+st.SSESubscribers == subscribers })
			t.Logf("%v: %d subscribed", time.Since(start), subscribers)

			var readWG sync.WaitGroup
			errs := make(chan error, subscribers)
			for i, c := range conns {
				readWG.Add(1)
				go func() {
					defer readWG.Done()
					c.SetReadDeadline(time.Now().Add(60 * time.Second))
					if err := readSequence(c, i%10 == 0, events); err != nil {
						errs <- fmt.Errorf("subscriber %d: %w", i, err)
					}
				}()
			}
			p := dial(t, pub)
			// Three writes: the server's reads see one or more hand-offs each.
			for part := range 3 {
				var frames []byte
				for seq := part * events / 3; seq < (part+1)*events/3; seq += perFrame {
					var evs [][]byte
					for k := seq; k < seq+perFrame; k++ {
						evs = append(evs, []byte(fmt.Sprintf("ev-%05d", k)))
					}
					frames = append(frames, publishFrame(t, "fan", evs...)...)
				}
				if _, err := p.Write(frames); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			readWG.Wait()
			t.Logf("%v: all events read", time.Since(start))
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			waitStats(t, srv, "every write", func(st Stats) bool { return st.SuccessfulWrites == subscribers*events })
			st := srv.Stats()
			if st.Dropped != 0 || st.FailedWrites != 0 || st.ProcessedWrites != subscribers*events {
				t.Fatalf("stats %+v", st)
			}
			if window > 0 && st.Batches >= int64(subscribers*events/perFrame) {
				t.Errorf("window %v: %d batches for %d hand-offs per subscriber: no batching", window, st.Batches, events/perFrame)
			}
			t.Logf("window %v: %d batches, mean %.1f events per batch, %d hand-offs", window, st.Batches,
				float64(st.BatchEvents)/float64(st.Batches), st.Handoffs)
		})
	}
}

// readSequence reads events "ev-00000", "ev-00001", ... until n have arrived.
func readSequence(c net.Conn, sse bool, n int) error {
	br := bufio.NewReaderSize(c, 16<<10)
	next := 0
	want := []byte("ev-00000")
	check := func(p []byte) error {
		v := next
		for i := len(want) - 1; i >= 3; i-- {
			want[i] = byte('0' + v%10)
			v /= 10
		}
		if !bytes.Equal(p, want) {
			return fmt.Errorf("event %q, want %q", p, want)
		}
		next++
		return nil
	}
	if sse {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("after %d events: %w", next, err)
			}
			if line == "\r\n" {
				break // end of the response head
			}
		}
		for next < n {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("after %d events: %w", next, err)
			}
			if p, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				if err := check(bytes.TrimSuffix(p, []byte("\n"))); err != nil {
					return err
				}
			} else if len(line) != 1 {
				return fmt.Errorf("unexpected line %q", line)
			}
		}
		return nil
	}
	lr := &legacyReader{r: br, topic: "fan"}
	for next < n {
		evs, err := lr.next()
		if err != nil {
			return fmt.Errorf("after %d events: %w", next, err)
		}
		for _, e := range evs {
			if e.op == push.OpSubscribed {
				continue
			}
			if e.op != push.OpNext {
				return fmt.Errorf("op %d", e.op)
			}
			if err := check(e.payload); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestResetSubscribersDoNotDisturbOthers resets some subscribers while
// events flow: a write that fails closes its connection inside the fan-out
// walk, and the walk must still reach every other subscriber.
func TestResetSubscribersDoNotDisturbOthers(t *testing.T) {
	const subscribers, events = 60, 200
	for _, window := range []time.Duration{0, 20 * time.Millisecond} {
		srv, pub, sub := startServer(t, func(c *Config) { c.Window = window; c.Loops = 1 })
		var readers []*legacyReader
		var conns []net.Conn
		for i := 0; i < subscribers; i++ {
			c, lr := subscribeTCP(t, sub, "r")
			conns, readers = append(conns, c), append(readers, lr)
		}
		p := dial(t, pub)
		var errs []error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, c := range conns {
			if i%3 == 0 {
				c.(*net.TCPConn).SetLinger(0)
				c.Close() // RST: the server's next write to it fails
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				got := 0
				for got < events {
					evs, err := readers[i].next()
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("subscriber %d after %d events: %w", i, got, err))
						mu.Unlock()
						return
					}
					for _, e := range evs {
						if e.op == push.OpNext {
							got++
						}
					}
				}
			}()
		}
		for k := 0; k < events; k++ {
			if _, err := p.Write(publishFrame(t, "r", []byte(strconv.Itoa(k)))); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for _, err := range errs {
			t.Error(err)
		}
		reset := int64((subscribers + 2) / 3)
		waitStats(t, srv, fmt.Sprintf("window %v: the reset subscribers' closes", window), func(st Stats) bool { return st.TCPSubscribers == subscribers-reset })

	}
}

// TestSlowReaderStreamStaysFramed reads slowly, so that the server's writes
// are partial and the rest is queued behind them, and checks every frame and
// event on the way out. (Shrinking SO_RCVBUF after the handshake is avoided:
// Linux then stalls the connection at the window already advertised.)
func TestSlowReaderStreamStaysFramed(t *testing.T) {
	const events = 4000
	srv, pub, sub := startServer(t, func(c *Config) {
		c.Window = 5 * time.Millisecond
		c.HighWatermark = 64 << 20 // nothing is dropped
	})
	nc := dial(t, sub)
	if _, err := nc.Write([]byte("SUBSCRIBE slow\n")); err != nil {
		t.Fatal(err)
	}
	lr := &legacyReader{r: bufio.NewReaderSize(nc, 4096), topic: "slow"}
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if evs, err := lr.next(); err != nil || evs[0].op != push.OpSubscribed {
		t.Fatalf("ack: %v", err)
	}
	p := dial(t, pub)
	go func() {
		payload := make([]byte, 517)
		for k := 0; k < events; k += 20 {
			var evs [][]byte
			for j := k; j < k+20; j++ {
				e := append([]byte(nil), payload...)
				binary.BigEndian.PutUint32(e, uint32(j))
				for i := 4; i < len(e); i++ {
					e[i] = 'a' + byte((i+j)%26)
				}
				evs = append(evs, e)
			}
			body, _ := push.AppendPublish(nil, []byte("slow"), evs...)
			if _, err := p.Write(tlv.DefaultFormat.AppendFrame(nil, tlv.Header{Type: push.TypePublish}, body)); err != nil {
				return
			}
			if k%400 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	for got := 0; got < events; {
		if got%100 == 0 {
			time.Sleep(2 * time.Millisecond) // read slowly
		}
		evs, err := lr.next()
		if err != nil {
			t.Fatalf("after %d events: %v; stats %+v", got, err, srv.Stats())
		}
		for _, e := range evs {
			if e.op != push.OpNext {
				continue
			}
			if len(e.payload) != 517 || binary.BigEndian.Uint32(e.payload) != uint32(got) {
				t.Fatalf("event %d: %d bytes, seq %d", got, len(e.payload), binary.BigEndian.Uint32(e.payload))
			}
			got++
		}
	}
}

// TestShutdownFlushesPendingBatches: with a long window, events are still
// pending when the server shuts down; every subscriber gets them and then a
// clean end, new connections are refused, and Shutdown returns as soon as
// the publishers are gone, not after the window.
func TestShutdownFlushesPendingBatches(t *testing.T) {
	srv, pub, sub := startServer(t, func(c *Config) { c.Window = time.Minute; c.Heartbeat = 0 })
	c, lr := subscribeTCP(t, sub, "news")
	waitStats(t, srv, "the subscriber", func(st Stats) bool { return st.TCPSubscribers == 1 })
	p := dial(t, pub)
	if _, err := p.Write(publishFrame(t, "news", []byte("a"), []byte("b"))); err != nil {
		t.Fatal(err)
	}
	waitStats(t, srv, "the publish frame", func(st Stats) bool { return st.PublishFrames == 1 })
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Shutdown took %s: it waited for the window, not for the publishers", d)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for {
		evs, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("after %q: %v, want a clean end", got, err)
			}
			break
		}
		for _, e := range evs {
			if e.op == push.OpNext {
				got = append(got, string(e.payload))
			}
		}
	}
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("got events %q, want a,b", got)
	}
	if c, err := net.DialTimeout("tcp", sub, time.Second); err == nil {
		c.Close()
		t.Fatal("a subscriber was accepted after Shutdown")
	}
}

func TestWindowEnd(t *testing.T) {
	const w = int64(200)
	for _, tc := range []struct{ now, phase, want int64 }{
		{now: 0, phase: 0, want: 200},   // on a boundary: the next one, a whole window later
		{now: 1, phase: 0, want: 200},   // just after one
		{now: 199, phase: 0, want: 200}, // just before one
		{now: 1000, phase: 50, want: 1050},
		{now: 1049, phase: 50, want: 1050},
		{now: 1050, phase: 50, want: 1250},
		{now: 10, phase: 150, want: 150}, // now before the first phase point
		{now: -30, phase: 20, want: 20},  // a loop clock below zero still works
	} {
		got := windowEnd(tc.now, tc.phase, w)
		if got != tc.want {
			t.Errorf("windowEnd(%d, %d, %d) = %d, want %d", tc.now, tc.phase, w, got, tc.want)
		}
		if got <= tc.now || got > tc.now+w || ((got-tc.phase)%w+w)%w != 0 {
			t.Errorf("windowEnd(%d, %d, %d) = %d: not in (now, now+window] on the phase", tc.now, tc.phase, w, got)
		}
	}
}

// TestWindowsAreSpread: with WindowPhases, subscribers of one topic on one
// loop get an event at the same moment but write it at different moments
// within the window, so that a fan-out does not become one burst of writes at
// the window's end.
func TestWindowsAreSpread(t *testing.T) {
	const subscribers, window = 8, 400 * time.Millisecond
	_, pub, sub := startServer(t, func(c *Config) { c.Window = window; c.WindowPhases = subscribers; c.Loops = 1; c.Heartbeat = 0 })
	var readers []*legacyReader
	for i := 0; i < subscribers; i++ {
		_, lr := subscribeTCP(t, sub, "spread")
		readers = append(readers, lr)
	}
	p := dial(t, pub)
	if _, err := p.Write(publishFrame(t, "spread", []byte("now"))); err != nil {
		t.Fatal(err)
	}
	arrived := make(chan time.Time, subscribers)
	for i, lr := range readers {
		go func() {
			for {
				evs, err := lr.next()
				if err != nil {
					t.Errorf("subscriber %d: %v", i, err)
					arrived <- time.Time{}
					return
				}
				for _, e := range evs {
					if e.op == push.OpNext {
						arrived <- time.Now()
						return
					}
				}
			}
		}()
	}
	var first, last time.Time
	for range subscribers {
		at := <-arrived
		if at.IsZero() {
			t.FailNow()
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread < window/4 {
		t.Fatalf("the %d batches arrived within %s of each other, want them spread over the %s window", subscribers, spread, window)
	}
}
