package drainload

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/tlvserver"

	"github.com/rs/zerolog"
)

func TestStreamFillAndCheck(t *testing.T) {
	st, err := newStream(100)
	if err != nil {
		t.Fatal(err)
	}
	whole := make([]byte, 1000)
	st.fill(whole, 0)
	for _, cut := range []struct{ pos, n int }{{0, 7}, {3, 250}, {97, 6}, {99, 1}, {450, 550}} {
		part := make([]byte, cut.n)
		st.fill(part, int64(cut.pos))
		if string(part) != string(whole[cut.pos:cut.pos+cut.n]) {
			t.Fatalf("fill at %d+%d differs from the whole stream", cut.pos, cut.n)
		}
	}
	scratch := make([]byte, 64)
	if err := st.check(whole[300:700], scratch, 300); err != nil {
		t.Fatal(err)
	}
	// Responses of requests 3 and 4 swapped: the sequence numbers differ.
	swapped := append(append([]byte{}, whole[400:500]...), whole[300:400]...)
	if err := st.check(swapped, scratch, 300); err == nil {
		t.Fatal("reordered responses passed the check")
	}
	if _, err := newStream(5); err == nil {
		t.Fatal("a request too small for its sequence number was accepted")
	}
}

// TestFlowsStallAndResume runs the client against an in-process echo
// server: every flow must stall, the server must count them paused, and
// each must resume with every byte back.
func TestFlowsStallAndResume(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	srv, err := tlvserver.New(tlvserver.Config{Reactor: reactor.Config{Addrs: []string{"127.0.0.1:0"}, Loops: 1,
		HighWatermark: 256 << 10, LowWatermark: 128 << 10, Logger: zerolog.New(os.Stderr).Level(zerolog.WarnLevel)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	}()
	cfg := Config{Conns: 5, FillParallel: 5, RequestSize: 4096, ClientRcvBuf: 64 << 10, ClientSndBuf: 64 << 10, ClientMSS: 1460,
		Tail: 1 << 20, StallTimeout: 30 * time.Second, ResumeTimeout: 20 * time.Second}
	st, _ := newStream(cfg.RequestSize)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := newSockDiag()
	if err != nil {
		t.Fatal(err)
	}
	diag := &lockedDiag{d: d}
	flows, err := fill(ctx, cfg, srv.Addr().String(), st, diag)
	defer func() {
		cancel()
		for _, f := range flows {
			_ = f.c.Close()
			<-f.done
		}
		d.close()
	}()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().Reactor.Paused != int64(cfg.Conns) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d paused", srv.Stats().Reactor.Paused, cfg.Conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf, scratch := make([]byte, 256<<10), make([]byte, 256<<10)
	for i, f := range flows {
		s, err := f.drain(diag, buf, scratch, cfg.ResumeTimeout)
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		t.Logf("flow %d: resume %v, after drain %v, backlog %d", i, s.Resume, s.AfterDrain, s.Backlog)
		if s.Backlog <= 0 || s.Resume <= 0 {
			t.Fatalf("flow %d: backlog %d, resume %v: the stall left nothing to drain", i, s.Backlog, s.Resume)
		}
	}
}
