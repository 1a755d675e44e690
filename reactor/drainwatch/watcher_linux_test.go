package drainwatch

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"

	"golang.org/x/sys/unix"
)

// countingNotifier counts a watcher's reports.
type countingNotifier struct {
	writable atomic.Int64
	failed   atomic.Pointer[error]
}

func (n *countingNotifier) Writable()        { n.writable.Add(1) }
func (n *countingNotifier) Failed(err error) { n.failed.Store(&err) }

// watcherState returns the scheduling state of the goroutine running
// Watcher.run ("IO wait", "syscall", ...), or "" when there is none.
func watcherState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("drainwatch.(*Watcher).run(")) {
			continue
		}
		hdr, _, _ := bytes.Cut(g, []byte("\n")) // goroutine 7 [IO wait]:
		_, state, _ := bytes.Cut(hdr, []byte("["))
		state, _, _ = bytes.Cut(state, []byte("]"))
		state, _, _ = bytes.Cut(state, []byte(","))
		return string(state)
	}
	return ""
}

// TestWatcherWaitsWithoutThread: a watcher reports a socket with room, and
// between reports its goroutine waits in Go's netpoller ("IO wait"), holding
// no OS thread, rather than in a blocking epoll_wait ("syscall"); Close
// ends it without a failure.
func TestWatcherWaitsWithoutThread(t *testing.T) {
	var n countingNotifier
	w, err := New(&n)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	waitfor.Check(t, "the watcher to wait in the netpoller", func() error {
		if s := watcherState(); s != "IO wait" {
			return fmt.Errorf("its goroutine is in state %q", s)
		}
		return nil
	})
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := w.Add(fds[0]); err != nil {
		t.Fatal(err)
	}
	waitfor.For(t, "the socket's room to be reported", func() bool { return n.writable.Load() > 0 })
	if fd, ok := w.Pop(); !ok || fd != fds[0] {
		t.Fatalf("Pop = %d, %v; want %d, true", fd, ok, fds[0])
	}
	// Fill the socket, then drain it: the new room is a new edge.
	reports := n.writable.Load()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(fds[0], chunk); errors.Is(err, unix.EAGAIN) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	for {
		if _, err := unix.Read(fds[1], chunk); errors.Is(err, unix.EAGAIN) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	waitfor.For(t, "the drained socket's room to be reported", func() bool { return n.writable.Load() > reports })
	waitfor.Check(t, "the watcher to wait in the netpoller again", func() error {
		if s := watcherState(); s != "IO wait" {
			return fmt.Errorf("its goroutine is in state %q", s)
		}
		return nil
	})
	w.Close()
	closed = true
	select {
	case <-w.done:
	case <-time.After(waitfor.Timeout):
		t.Fatal("Close did not end the watcher's goroutine")
	}
	if p := n.failed.Load(); p != nil {
		t.Fatalf("Close was reported as a failure: %v", *p)
	}
}
