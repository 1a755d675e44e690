package pushload

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pushproto "github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/session/push"
)

// startServer runs a push server with two subscriber loops on ephemeral ports.
func startServer(t *testing.T, mod func(*push.Config)) (srv *push.Server, pub, sub string) {
	t.Helper()
	cfg := push.DefaultConfig()
	cfg.PublishAddr, cfg.SubscribeAddr, cfg.Loops = "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2
	mod(&cfg)
	srv, err := push.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	pa, _ := srv.PublishAddr()
	sa, _ := srv.SubscribeAddr()
	return srv, pa.String(), sa.String()
}

func TestRunDeliversEverything(t *testing.T) {
	srv, pa, sa := startServer(t, func(c *push.Config) { c.Window = 20 * time.Millisecond })
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
// subscriber gets instead (a test relay: goroutines per connection).
func frameRelay(t *testing.T, server string, edit func(conn, frame int, raw []byte) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := 0; ; id++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(s)
			wg.Add(2)
			go func() { // not io.Copy: its splice keeps pipes that the descriptor check counts
				defer wg.Done()
				b := make([]byte, 4096)
				for {
					k, err := c.Read(b)
					if _, werr := s.Write(b[:k]); werr != nil || err != nil {
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				defer c.Close()
				var buf []byte
				tmp := make([]byte, 64<<10)
				for n := 0; ; {
					k, err := s.Read(tmp)
					buf = append(buf, tmp[:k]...)
					for {
						_, size, ferr := pushproto.DecodeFrame(buf, pushproto.DefaultMaxFrame)
						if ferr != nil {
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
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
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
			_, pa, sa := startServer(t, func(c *push.Config) { c.Window = 5 * time.Millisecond })
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
	_, pa, sa := startServer(t, func(c *push.Config) { c.Window = 5 * time.Millisecond })
	relay := frameRelay(t, sa, func(_, _ int, raw []byte) []byte { return raw })
	if r, err := Run(context.Background(), smallRun(pa, relay)); err != nil {
		t.Fatalf("through an unharmed relay: %v (%s)", err, r)
	}
}

// TestRunCancelledReturnsNoResult: a run whose context ends during the
// measurement is an error and no result.
func TestRunCancelledReturnsNoResult(t *testing.T) {
	_, pa, sa := startServer(t, func(c *push.Config) { c.Window = 5 * time.Millisecond })
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
