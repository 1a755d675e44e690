package proxy

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/fdlimit"
	"github.com/tidegate/tidegate/internal/testkit/seam"
)

// The descriptor-limit test is Linux's: RLIMIT_NOFILE's type differs
// between the systems.

// TestHandOverAtTheDescriptorLimitKeepsSessions: at the descriptor limit,
// the client's socket can be duplicated for the hand-over and the backend's
// not; the session then stays here whole, rather than its client being
// given away and the rest dropped.
func TestHandOverAtTheDescriptorLimitKeepsSessions(t *testing.T) {
	be := echoListener(t)
	p, addr := startProxy(t, rawConfig(be))
	conns := rawSessions(t, addr, 1)
	send, recv := handoverPair(t)
	go func() {
		for {
			_, files, err := recv.Recv()
			for _, f := range files {
				f.Close()
			}
			if err != nil {
				return
			}
		}
	}()
	restore := fdlimit.Free(t, 1) // the client's duplicate, not the backend's
	_, err := p.HandOver(context.Background(), send, HandOverOptions{Stall: 300 * time.Millisecond})
	restore()
	if err == nil {
		t.Fatal("a hand-over that could not detach its session reported success")
	}
	if a := p.Stats().Active; a != 1 {
		t.Fatalf("%d sessions here after the hand-over failed, want the 1 it could not move", a)
	}
	if got := relaying(conns, 5*time.Second); got != 1 {
		t.Fatal("the session the hand-over could not move no longer relays")
	}
}

// descriptorLimitAtAdoption takes every descriptor away for the new
// process's first adoption, which then cannot take the session's sockets
// and says so; the old process takes the session back. The adoptions run
// one at a time meanwhile, and the limit is put back before the refusal is
// acknowledged, so that the take-back, the old process's, runs under the
// limit put back. The limit is 0, not the lowest free descriptor: a
// descriptor some other goroutine closes meanwhile (a loop closing gnet's
// copy of a session the old side detached) would open room below that.
func descriptorLimitAtAdoption(t *testing.T) {
	var mu sync.Mutex
	var once sync.Once
	var restore func()
	seam.Set(t, &testHookTakeOverAdopt, func(int64, []*os.File) {
		mu.Lock()
		once.Do(func() { restore = fdlimit.None(t) })
	})
	seam.Set(t, &testHookTakeOverAdopted, func(int64, error) {
		restore()
		mu.Unlock()
	})
}

// descriptorLimitAtReceive takes every descriptor away once the old side
// has the first session's duplicates and is about to send it: the kernel
// drops that session's sockets as the new side receives it (MSG_CTRUNC),
// the new side refuses it, and the old one takes it back. Every step is
// held to an order by seams rather than timing, since the limit is the
// whole test process's, the old side's too:
//   - the limit is 0, so that no descriptor closed meanwhile anywhere in
//     the process (gnet's copies of the sessions detached) opens room for
//     the two that come;
//   - the old side sends no other session until the limit is back (those
//     would meet it too and come back as well: the count of sessions the
//     new process refused would vary);
//   - the limit is put back before that session's adoption is tried, so
//     before its refusal is acknowledged and the old side takes it back.
//
// A round of the old side meanwhile may fail to detach a session
// (DetachPair meets the limit): it stays, and goes in a later round.
func descriptorLimitAtReceive(t *testing.T, _, _ *Proxy) <-chan struct{} {
	var once sync.Once
	lowered := make(chan func(), 1) // the restore, from one side to the other
	restored := make(chan struct{})
	seam.Set(t, &testHookHandOverSend, func(*os.File) {
		first := false
		once.Do(func() {
			first = true
			lowered <- fdlimit.None(t)
		})
		if !first {
			<-restored
		}
	})
	seam.Set(t, &testHookTakeOverAdopt, func(place int64, files []*os.File) {
		if place == 0 {
			(<-lowered)()
			close(restored)
			if len(files) != 0 {
				t.Errorf("the session received at the descriptor limit came with %d descriptors, want none", len(files))
			}
		}
	})
	return nil
}
