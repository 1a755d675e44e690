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

// descriptorLimitAtAdoption lowers the descriptor limit for the new
// process's first adoption, which then cannot take the session's sockets
// and says so; the old process takes the session back. The adoptions run
// one at a time meanwhile, so that the take-back runs under the limit put
// back.
func descriptorLimitAtAdoption(t *testing.T) {
	var mu sync.Mutex
	var once sync.Once
	var restore func()
	seam.Set(t, &testHookTakeOverAdopt, func(int64, []*os.File) {
		mu.Lock()
		once.Do(func() { restore = fdlimit.Free(t, 0) })
	})
	seam.Set(t, &testHookTakeOverAdopted, func(int64, error) {
		restore()
		mu.Unlock()
	})
}

// descriptorLimitAtReceive brings the process to its descriptor limit once
// the old side has the first session's duplicates and sends it: the kernel
// drops that session's sockets as the new side receives it (MSG_CTRUNC),
// the new side refuses it, and the old one takes it back. The old loops
// run what they have queued first (the closes of gnet's copies of the
// sessions detached, which would open room under the limit). The limit is
// put back before that adoption is tried (sessions the old side detaches
// or the new one receives meanwhile meet the limit too, and stay or come
// back as well).
func descriptorLimitAtReceive(t *testing.T, oldP, _ *Proxy) <-chan struct{} {
	var once sync.Once
	lowered := make(chan func(), 1) // the restore, from one side to the other
	seam.Set(t, &testHookHandOverSend, func(*os.File) {
		once.Do(func() {
			for _, l := range oldP.Reactor().Loops() {
				ran := make(chan struct{})
				if l.Execute(func() { close(ran) }) == nil {
					<-ran
				}
			}
			lowered <- fdlimit.Free(t, 0)
		})
	})
	seam.Set(t, &testHookTakeOverAdopt, func(place int64, files []*os.File) {
		if place == 0 {
			(<-lowered)()
			if len(files) != 0 {
				t.Errorf("the session received at the descriptor limit came with %d descriptors, want none", len(files))
			}
		}
	})
	return nil
}
