package drainwatch

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Watcher is a loop's second epoll set: waiting sockets registered
// edge-triggered for EPOLLOUT. Add and Remove are for the loop; Close for
// after the loop has ended.
//
// Its goroutine does not block in epoll_wait, which would hold an OS thread
// for as long as nothing drains (one per loop, for the process's life): an
// epoll set is itself pollable, readable while it has events, so the set is
// an os.File in Go's netpoller, and the goroutine takes its events with
// epoll_wait without a timeout when the netpoller says there are some.
type Watcher struct {
	epfd    int
	file    *os.File        // epfd, in Go's netpoller; Close closes it
	conn    syscall.RawConn // file's, for the goroutine's reads
	queue   queue
	notify  Notifier
	closing atomic.Bool // Close was called: the wait's end is no failure
	done    chan struct{}
}

// New makes a watcher and starts its goroutine, which reports to n.
func New(n Notifier) (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("reactor: drain watcher: epoll_create1: %w", err)
	}
	// Non-blocking, so that os.NewFile puts it in the netpoller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("reactor: drain watcher: setting epoll set %d non-blocking: %w", epfd, err)
	}
	file := os.NewFile(uintptr(epfd), "drainwatch")
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("reactor: drain watcher: epoll set %d: %w", epfd, err)
	}
	w := &Watcher{epfd: epfd, file: file, conn: conn, notify: n, done: make(chan struct{})}
	go w.run()
	return w, nil
}

// Add registers fd; if the socket has room already, the event comes at once.
func (w *Watcher) Add(fd int) error {
	err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLET, Fd: int32(fd)})
	if err != nil {
		return fmt.Errorf("epoll_ctl add fd %d to drain watcher %d: %w", fd, w.epfd, err)
	}
	return nil
}

// Remove unregisters fd. It fails only when fd is gone already, which
// removed it from the set too.
func (w *Watcher) Remove(fd int) {
	_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

func (w *Watcher) run() {
	defer close(w.done)
	var evs [128]unix.EpollEvent
	var waitErr error
	// The netpoller reports the set readable once per new event (edge
	// triggered), so each wake-up takes every event there is before it
	// waits again; one that comes meanwhile is a new edge, not a lost one.
	err := w.conn.Read(func(fd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(fd), evs[:], 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				waitErr = err
				return true
			}
			for i := 0; i < n; i++ {
				w.queue.push(evs[i].Fd)
			}
			if n > 0 {
				w.notify.Writable()
			}
			if n < len(evs) {
				return false // none left: wait in the netpoller
			}
		}
	})
	switch {
	case waitErr != nil:
		w.notify.Failed(fmt.Errorf("epoll_wait on drain watcher %d: %w", w.epfd, waitErr))
	case err != nil && !w.closing.Load():
		w.notify.Failed(fmt.Errorf("waiting for drain watcher %d in the netpoller: %w", w.epfd, err))
	}
}

// Close ends the goroutine and closes the set; the loop must not use the
// watcher any more.
func (w *Watcher) Close() {
	w.closing.Store(true)
	_ = w.file.Close() // wakes the goroutine's wait, which then ends
	select {
	case <-w.done:
	case <-time.After(time.Second):
	}
}

// UnackedBytes is what the kernel holds of fd's output, sent or not, that
// the peer has not acknowledged (SIOCOUTQ).
func UnackedBytes(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return -1
	}
	return n
}
