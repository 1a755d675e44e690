package proxy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/Tnze/go-mc/bot"

	"github.com/tidegate/tidegate/internal/testkit/gomcbot"
	"github.com/tidegate/tidegate/internal/testkit/seam"
	"github.com/tidegate/tidegate/internal/testkit/sessionserver"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// streamFrame is the payload of frame i of a stream: its number, then
// filler of a length that varies with i (some frames above the
// compression threshold, some below).
func streamFrame(i int) []byte {
	p := fmt.Appendf(nil, "frame %d;", i)
	for j := range (i * 37) % 1500 {
		p = append(p, byte(i+j*7))
	}
	return p
}

// TestHandOverGoMCBotInPlay: go-mc's bot (protocol 764) in play through a
// proxy that completed its login, online (AES/CFB8 on the client's side)
// or offline, compressed or not, echoes a stream of 600 frames while the
// proxy hands it to another one: 200 before, 20 written while the session
// is detached (the hand-over's send seam waits for them), 180 more while it
// ends, and 200 after. Every frame comes back once and in order (count
// and sha256 of the echoes), the bot never disconnects, the backend sees
// one player, and the new proxy relays the session.
func TestHandOverGoMCBotInPlay(t *testing.T) {
	for _, tc := range []struct {
		online, compression bool
	}{{true, false}, {true, true}, {false, true}} {
		t.Run(fmt.Sprintf("online=%t/compression=%t", tc.online, tc.compression), func(t *testing.T) {
			checkNoLeaks(t)
			srv, be := startBackendServer(t, mcbackend.Config{Compression: tc.compression, CompressionThreshold: 64,
				Forwarding: mcbackend.ForwardVelocity, ForwardingSecret: []byte(testForwardingSecret)})
			cfg, auth := offlineConfig(t, be, "velocity"), bot.Auth{Name: alice.Name}
			if tc.online {
				ss := sessionserver.Start(t)
				ss.AddPlayer(alice)
				ss.RedirectDefaultClient(t)
				cfg, auth = onlineConfig(t, be, "velocity", ss.URL, 5*time.Second, 5*time.Second), aliceAuth
			}
			oldP, addr := startProxy(t, cfg)
			newP, _ := startProxy(t, cfg)
			b := gomcbot.JoinAs(t, addr, auth, 90*time.Second)
			streamAcrossHandOver(t, b, func() {
				if n := handOverV2(t, oldP, newP, nil); n != 1 {
					t.Errorf("handed over %d sessions, want 1", n)
				}
			})
			if st := oldP.Stats(); st.Active != 0 || st.HandedOver != 1 {
				t.Fatalf("old proxy: %d sessions, %d handed over; want 0, 1", st.Active, st.HandedOver)
			}
			waitStats(t, newP, "the rest of the stream relayed by the new proxy", func(st proxymetrics.Stats) bool {
				return st.Active == 1 && st.FramesC2S >= 200 && st.FramesS2C >= 200 && st.Unframed == 0
			})
			if st := srv.Stats(); st.PlayStarted != 1 || st.Rejected() != 0 {
				t.Fatalf("backend: %d in play, %d rejected; want 1, 0", st.PlayStarted, st.Rejected())
			}
		})
	}
}

// streamAcrossHandOver echoes 600 frames through b (streamFrame), and runs
// handOver once 200 have come back: 20 frames are written while the
// session is detached (in testHookHandOverSend), the rest as the
// hand-over ends and after it. It checks that every echo came back once,
// in order.
func streamAcrossHandOver(t *testing.T, b *gomcbot.Bot, handOver func()) {
	t.Helper()
	const frames, before, detached, during = 600, 200, 20, 180
	detachedNow, detachedSent := make(chan struct{}), make(chan struct{})
	seam.Set(t, &testHookHandOverSend, func(*os.File) {
		close(detachedNow)
		select {
		case <-detachedSent:
		case <-time.After(30 * time.Second):
			t.Error("the bot did not write while its session was detached")
		}
	})
	handedOver := make(chan struct{})
	sendErr := make(chan error, 1)
	// A test that fails stops the sender before the bot closes (go-mc
	// panics on a write to a closed connection).
	stop, stopped := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-stopped }()
	go func() {
		defer close(stopped)
		send := func(from, to int) error {
			for i := from; i < to; i++ {
				select {
				case <-stop:
					return fmt.Errorf("stopped at frame %d", i)
				default:
				}
				if err := b.Send(streamFrame(i)); err != nil {
					return fmt.Errorf("frame %d: %w", i, err)
				}
			}
			return nil
		}
		err := send(0, before)
		if err == nil {
			select {
			case <-detachedNow:
				err = send(before, before+detached)
				close(detachedSent)
			case <-stop:
				err = fmt.Errorf("stopped before the detach")
			}
		}
		for i := before + detached; err == nil && i < before+detached+during; i += 10 {
			err = send(i, i+10)
			time.Sleep(time.Millisecond) // spread over the hand-over's end
		}
		if err == nil {
			select {
			case <-handedOver:
				err = send(before+detached+during, frames)
			case <-stop:
			}
		}
		sendErr <- err
	}()
	want, got := sha256.New(), sha256.New()
	received := 0
	for i := range frames {
		if i == before {
			handOver()
			close(handedOver)
		}
		p, err := b.NextEcho(30 * time.Second)
		if err != nil {
			t.Fatalf("after %d of %d echoes: %v", received, frames, err)
		}
		if w := streamFrame(i); !bytes.Equal(p, w) {
			t.Fatalf("echo %d: %d bytes differ from frame %d's %d (%.20q)", i, len(p), i, len(w), p)
		}
		received++
		want.Write(streamFrame(i))
		got.Write(p)
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if received != frames || !bytes.Equal(want.Sum(nil), got.Sum(nil)) {
		t.Fatalf("%d echoes of %d, checksums %x and %x", received, frames, got.Sum(nil), want.Sum(nil))
	}
}
