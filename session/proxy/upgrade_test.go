package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/testserver"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/mcbackend"
	"github.com/tidegate/tidegate/session/proxy/proxymetrics"
)

// handOver moves every session of from to to over a fresh socket pair and
// returns how many went.
func handOver(t *testing.T, from, to *Proxy) int {
	t.Helper()
	send, recv := handoverPair(t)
	took := make(chan int, 1)
	go func() {
		n, err := to.TakeOver(recv)
		if err != nil {
			t.Errorf("TakeOver: %v", err)
		}
		recv.Close()
		took <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := from.HandOver(ctx, send, HandOverOptions{Stall: 10 * time.Second, Acked: true, AckEach: true})
	send.Close()
	if err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	if got := <-took; got != n {
		t.Fatalf("handed over %d sessions, taken over %d", n, got)
	}
	return n
}

// TestHandOverKeepsStreamsWhole: 40 raw sessions stream random bytes both
// ways (an echo backend), and go on writing while the proxy hands them to
// another proxy, once each has sent a quarter of its stream. Every
// session's echo arrives whole and in order (sha256), no session ends, and
// the sessions are counted on the new proxy only.
func TestHandOverKeepsStreamsWhole(t *testing.T) {
	const sessions, size, piece = 40, 1 << 20, 16 << 10
	be := echoListener(t)
	oldP, addr := startProxy(t, rawConfig(be))
	newP, _ := startProxy(t, rawConfig(be))
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	quarter := make(chan struct{}, sessions)
	// No stream may end before the hand-over: on a loaded machine one that
	// ended first is not handed over, and the count below would not say
	// whether the hand-over works.
	handedOver := make(chan struct{})
	var gate sync.Once
	openGate := func() { gate.Do(func() { close(handedOver) }) }
	t.Cleanup(openGate) // a failed hand-over leaves no writer blocked
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			data := make([]byte, size)
			_, _ = rand.NewChaCha8([32]byte{byte(i), 9}).Read(data) // in bulk: a call a byte is slow under -race
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				errs <- err
				quarter <- struct{}{}
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			go func() {
				for off := 0; off < size; off += piece {
					if off == size/4 {
						quarter <- struct{}{}
					}
					if off == size/2 {
						<-handedOver
					}
					if _, err := c.Write(data[off : off+piece]); err != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			h := sha256.New()
			if n, err := io.CopyN(h, c, size); err != nil {
				errs <- fmt.Errorf("session %d: after %d of %d bytes: %w", i, n, size, err)
				return
			}
			if [32]byte(h.Sum(nil)) != sha256.Sum256(data) {
				errs <- fmt.Errorf("session %d: the echo differs from what was sent", i)
			}
		}(i)
	}
	for i := 0; i < sessions; i++ {
		<-quarter
	}
	waitStats(t, oldP, fmt.Sprintf("%d sessions", sessions), func(st proxymetrics.Stats) bool { return st.Active == sessions })
	n := handOver(t, oldP, newP)
	openGate()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n != sessions {
		t.Fatalf("handed over %d sessions, want %d", n, sessions)
	}
	if a := oldP.Stats().Active; a != 0 {
		t.Fatalf("old proxy still has %d sessions", a)
	}
	if st := newP.Stats(); st.BytesC2S == 0 || st.BytesS2C == 0 {
		t.Fatalf("new proxy relayed %d bytes up and %d down, want both", st.BytesC2S, st.BytesS2C)
	}
}

// TestHandOverMinecraftPlay: a player in play state is handed over
// mid-stream; its frames go on being relayed and counted whole on the new
// proxy.
func TestHandOverMinecraftPlay(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	oldP, addr := startProxy(t, mcConfig(be, ""))
	newP, _ := startProxy(t, mcConfig(be, ""))
	c := dial(t, addr)
	login17(t, c, "localhost", "Mover")
	echo(t, c, []byte("before"))
	if n := handOver(t, oldP, newP); n != 1 {
		t.Fatalf("handed over %d sessions, want 1", n)
	}
	for i := 0; i < 10; i++ {
		echo(t, c, []byte(fmt.Sprintf("after %d", i)))
	}
	// The loop counts a frame after writing it: the echo can arrive first.
	waitStats(t, newP, "the handed-over sessions' frames", func(st proxymetrics.Stats) bool { return st.FramesC2S >= 10 && st.FramesS2C >= 10 })
	st := newP.Stats()
	if st.FramesC2S != 10 || st.FramesS2C != 10 || st.Unframed != 0 {
		t.Fatalf("new proxy counted %d frames up, %d down, %d unframed; want 10, 10, 0", st.FramesC2S, st.FramesS2C, st.Unframed)
	}
	if st.Active != 1 {
		t.Fatalf("new proxy has %d sessions, want 1", st.Active)
	}
}

// TestHandOverKeepsGoMCBotsInPlay: go-mc bots (compressed, protocol 764)
// in play state are handed over to another proxy and stay connected: each
// goes on getting its play packets echoed through the new proxy.
func TestHandOverKeepsGoMCBotsInPlay(t *testing.T) {
	be := startBackend(t, mcbackend.Config{Compression: true, CompressionThreshold: 64})
	oldP, addr := startProxy(t, mcConfig(be, ""))
	newP, _ := startProxy(t, mcConfig(be, ""))
	var bots []*goMCBot
	for i := 0; i < 5; i++ {
		b := joinGoMCBot(t, addr, fmt.Sprintf("Bot%d", i))
		b.echo(t, bytes.Repeat([]byte("before "), 30))
		bots = append(bots, b)
	}
	if n := handOver(t, oldP, newP); n != len(bots) {
		t.Fatalf("handed over %d sessions, want %d", n, len(bots))
	}
	for _, b := range bots {
		b.echo(t, bytes.Repeat([]byte("after the hand-over "), 30))
	}
	if st := newP.Stats(); st.Active != int64(len(bots)) || st.Unframed != 0 {
		t.Fatalf("new proxy: %d sessions, %d unframed; want %d and 0", st.Active, st.Unframed, len(bots))
	}
}

// echoListener is a plain TCP echo server.
func echoListener(t *testing.T) string {
	t.Helper()
	return testserver.Conns(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// TestHandOverTakesQueuedOutput: clients that do not read while their
// backends stream 32 MiB (more than loopback's socket buffers hold) leave
// output queued in the old proxy; the hand-over
// takes that output along instead of waiting for it to drain, and once the
// clients read, every byte arrives whole and in order from the new proxy.
func TestHandOverTakesQueuedOutput(t *testing.T) {
	const sessions, size = 4, 32 << 20
	oldP, conns, data := stalledStreams(t, sessions, size, 7)
	newP, _ := startProxy(t, rawConfig(echoListener(t)))
	if n := handOver(t, oldP, newP); n != sessions {
		t.Fatalf("handed over %d sessions, want %d", n, sessions)
	}
	if q := oldP.Stats().HandedOverQueued; q == 0 {
		t.Fatal("no queued output went with the sessions: the test did not test the hand-over of queued output")
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		if n, err := io.CopyN(h, c, size); err != nil {
			t.Fatalf("session %d: after %d of %d bytes: %v", i, n, size, err)
		}
		if [32]byte(h.Sum(nil)) != sha256.Sum256(data) {
			t.Fatalf("session %d: the stream differs from what the backend sent", i)
		}
	}
	if st := newP.Stats(); st.Active != sessions || st.BytesS2C == 0 {
		t.Fatalf("new proxy: %d sessions, %d bytes relayed down; want %d and some", st.Active, st.BytesS2C, sessions)
	}
}

// TestHandOverTakesBackWhatItCannotSend: when the new process goes away in
// the middle of a hand-over, the sessions this process detached but could
// not send are taken back and go on here. Each session carries 32 MiB of
// queued output, so the second one cannot be sent before the receiver,
// which reads only the first, closes.
func TestHandOverTakesBackWhatItCannotSend(t *testing.T) {
	const sessions, size = 4, 32 << 20
	oldP, conns, data := stalledStreams(t, sessions, size, 9)
	send, recv := handoverPair(t)
	t.Cleanup(func() { send.Close() })
	go dieAfterOne(recv) // a new process that dies after one session
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := oldP.HandOver(ctx, send, HandOverOptions{Stall: 10 * time.Second, Acked: true})
	if err == nil {
		t.Fatalf("HandOver to a receiver that died: no error (%d sessions)", n)
	}
	waitStats(t, oldP, fmt.Sprintf("%d sessions left", sessions-1), func(st proxymetrics.Stats) bool { return st.Active == sessions-1 })
	whole, cut := 0, 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		if _, err := io.CopyN(h, c, size); err != nil {
			cut++ // the one the receiver took, and dropped
			continue
		}
		if [32]byte(h.Sum(nil)) != sha256.Sum256(data) {
			t.Fatal("a session taken back delivered a stream that differs from what the backend sent")
		}
		whole++
	}
	if whole != sessions-1 || cut != 1 {
		t.Fatalf("%d sessions whole and %d cut, want %d and 1 (HandOver: %d, %v)", whole, cut, sessions-1, n, err)
	}
}

// stalledStreams starts a raw proxy in front of a backend that streams size
// random bytes (from seed) to each of n clients that do not read yet, and
// waits until every session is paused behind a full queue toward its
// client. It returns the proxy, the clients and the bytes each is sent.
func stalledStreams(t *testing.T, n, size int, seed uint64) (*Proxy, []net.Conn, []byte) {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := 0; i+8 <= size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	be := testserver.Conns(t, func(c net.Conn) {
		go func() { _, _ = io.Copy(io.Discard, c) }()
		_, _ = c.Write(data)
	})
	p, addr := startProxy(t, rawConfig(be))
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	waitStats(t, p, fmt.Sprintf("%d paused sessions", n), func(st proxymetrics.Stats) bool { return st.Reactor.Paused >= int64(n) })
	return p, conns, data
}

// handoverPair returns the two ends of a hand-over socket.
func handoverPair(t *testing.T) (send, recv *handoverwire.Conn) {
	t.Helper()
	send, other, err := handoverwire.NewPair()
	if err != nil {
		t.Fatal(err)
	}
	recv, err = handoverwire.FromFile(other)
	other.Close()
	if err != nil {
		send.Close()
		t.Fatal(err)
	}
	return send, recv
}

// dieAfterOne is a new process that receives one session, drops it and
// dies without acknowledging it.
func dieAfterOne(recv *handoverwire.Conn) {
	if _, files, err := recv.Recv(); err == nil {
		for _, f := range files {
			f.Close()
		}
	}
	recv.Close()
}
