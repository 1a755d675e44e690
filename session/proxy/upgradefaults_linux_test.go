package proxy

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidegate/tidegate/internal/testkit/seam"
)

// The descriptor-limit test is Linux's: RLIMIT_NOFILE's type differs
// between the systems.

// limitFDsTo lets the process open free more descriptors, by lowering the
// soft RLIMIT_NOFILE to just above the lowest free descriptor numbers, until
// the returned function puts it back.
func limitFDsTo(t *testing.T, free int) (restore func()) {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	limit, seen := 0, 0
	for fd := 0; fd < int(min(rl.Cur, 1<<20)); fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			if seen == free {
				limit = fd
				break
			}
			seen++
		}
	}
	low := rl
	low.Cur = uint64(limit)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
				t.Errorf("restoring RLIMIT_NOFILE: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

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
	restore := limitFDsTo(t, 1) // the client's duplicate, not the backend's
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
		once.Do(func() { restore = limitFDsTo(t, 0) })
	})
	seam.Set(t, &testHookTakeOverAdopted, func(int64, error) {
		restore()
		mu.Unlock()
	})
}
