package pushload

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/session/pushserver"
)

func TestRunDeliversEverything(t *testing.T) {
	srv, pa, sa := testserver.Push(t, func(c *pushserver.Config) { c.Window = 20 * time.Millisecond })
	r, err := Run(context.Background(), Config{
		PublishAddr: pa, SubscribeAddr: sa, Subscribers: 20, Topic: "load",
		Rate: 2000, EventsPerFrame: 10, PayloadSize: 64,
		Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Drain: 2 * time.Second, ClientLoops: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalPublished == 0 || r.TotalDelivered != r.TotalExpected || r.OutOfOrder != 0 || r.Delivered == 0 {
		t.Fatalf("result %s", r)
	}
	if st := srv.Stats(); st.SuccessfulWrites != r.TotalDelivered {
		t.Fatalf("server wrote %d events, clients counted %d", st.SuccessfulWrites, r.TotalDelivered)
	}
}

// frameRelay sits between the subscribers and the server's subscribe
// address and hands each whole server frame to edit, which returns what the
// subscriber gets instead.
func frameRelay(t *testing.T, server string, edit func(conn, frame int, raw []byte) []byte) string {
	return unitRelay(t, server, func(buf []byte) int {
		_, size, err := push.DecodeFrame(buf, push.DefaultMaxFrame)
		if err != nil {
			return 0
		}
		return size
	}, edit)
}

// unitRelay is frameRelay for any stream cut into units by split, which
// returns the size of the whole unit at the start of buf, or 0.
func unitRelay(t *testing.T, server string, split func([]byte) int, edit func(conn, unit int, raw []byte) []byte) string {
	t.Helper()
	var ids atomic.Int64
	return testserver.Conns(t, func(c net.Conn) {
		id := int(ids.Add(1) - 1)
		s, err := net.Dial("tcp", server)
		if err != nil {
			return
		}
		up := make(chan struct{})
		go func() { // not io.Copy: its splice keeps pipes that the descriptor check counts
			defer close(up)
			defer s.Close() // the subscriber left: so does the relay, even from a server with nothing to send
			b := make([]byte, 4096)
			for {
				k, err := c.Read(b)
				if _, werr := s.Write(b[:k]); werr != nil || err != nil {
					return
				}
			}
		}()
		defer func() { s.Close(); c.Close(); <-up }()
		var buf []byte
		tmp := make([]byte, 64<<10)
		for n := 0; ; {
			k, err := s.Read(tmp)
			buf = append(buf, tmp[:k]...)
			for {
				size := split(buf)
				if size == 0 {
					break
				}
				if _, werr := c.Write(edit(id, n, buf[:size])); werr != nil {
					return
				}
				n++
				buf = buf[size:]
			}
			if err != nil {
				return
			}
		}
	})
}

func smallRun(pa, sa string) Config {
	return Config{
		PublishAddr: pa, SubscribeAddr: sa, Subscribers: 3, Topic: "load",
		Rate: 2000, EventsPerFrame: 10, PayloadSize: 64,
		Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond, Drain: time.Second, ClientLoops: 1,
	}
}

// TestRunFailsOnLostOrDuplicatedEvents: one subscriber's fifth frame (well
// after the subscription's acknowledgement) dropped or sent twice must fail
// the run, with the result still returned.
func TestRunFailsOnLostOrDuplicatedEvents(t *testing.T) {
	for name, edit := range map[string]func([]byte) []byte{
		"lost":       func([]byte) []byte { return nil },
		"duplicated": func(raw []byte) []byte { return append(append([]byte{}, raw...), raw...) },
	} {
		t.Run(name, func(t *testing.T) {
			_, pa, sa := testserver.Push(t, func(c *pushserver.Config) { c.Window = 5 * time.Millisecond })
			relay := frameRelay(t, sa, func(conn, frame int, raw []byte) []byte {
				if conn == 1 && frame == 5 {
					return edit(raw)
				}
				return raw
			})
			r, err := Run(context.Background(), smallRun(pa, relay))
			if err == nil {
				t.Fatalf("a run with a %s frame passed: %s", name, r)
			}
			if r.TotalPublished == 0 || r.OutOfOrder == 0 || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %v, result %s: want the result, a sequence break and %q in the error", err, r, name)
			}
		})
	}
	// The relay itself passes everything through unharmed.
	_, pa, sa := testserver.Push(t, func(c *pushserver.Config) { c.Window = 5 * time.Millisecond })
	relay := frameRelay(t, sa, func(_, _ int, raw []byte) []byte { return raw })
	if r, err := Run(context.Background(), smallRun(pa, relay)); err != nil {
		t.Fatalf("through an unharmed relay: %v (%s)", err, r)
	}
}

// TestRunCancelledReturnsNoResult: a run whose context ends during the
// measurement is an error and no result.
func TestRunCancelledReturnsNoResult(t *testing.T) {
	_, pa, sa := testserver.Push(t, func(c *pushserver.Config) { c.Window = 5 * time.Millisecond })
	cfg := smallRun(pa, sa)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := Run(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) || r != (Result{}) {
		t.Fatalf("cancelled run: %v, %s; want the context's error and no result", err, r)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled run took %v", time.Since(start))
	}
}
