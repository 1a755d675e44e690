//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package drainwatch

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Watcher is a loop's second kqueue: waiting sockets with an
// EVFILT_WRITE filter in EV_CLEAR mode (reported again only after new room),
// and a pipe that ends its goroutine. Compiled and vetted here, not run:
// there is no BSD or macOS machine in this project's CI.
type Watcher struct {
	kq     int
	wake   [2]int // pipe: read end registered, write end written by Close
	queue  queue
	notify Notifier
	done   chan struct{}
}

// New makes a watcher and starts its goroutine, which reports to n.
func New(n Notifier) (*Watcher, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("reactor: drain watcher: kqueue: %w", err)
	}
	unix.CloseOnExec(kq)
	w := &Watcher{kq: kq, notify: n, done: make(chan struct{})}
	if err := unix.Pipe(w.wake[:]); err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("reactor: drain watcher: pipe: %w", err)
	}
	for _, fd := range w.wake {
		unix.CloseOnExec(fd)
		_ = unix.SetNonblock(fd, true)
	}
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], w.wake[0], unix.EVFILT_READ, unix.EV_ADD)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		w.closeFDs()
		return nil, fmt.Errorf("reactor: drain watcher: kevent add pipe %d: %w", w.wake[0], err)
	}
	go w.run()
	return w, nil
}

// Add registers fd; if the socket has room already, the event comes at once.
func (w *Watcher) Add(fd int) error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], fd, unix.EVFILT_WRITE, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(w.kq, ev[:], nil, nil); err != nil {
		return fmt.Errorf("kevent add EVFILT_WRITE fd %d to drain watcher %d: %w", fd, w.kq, err)
	}
	return nil
}

// Remove unregisters fd. It fails only when fd is gone already, which
// removed its filters too.
func (w *Watcher) Remove(fd int) {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], fd, unix.EVFILT_WRITE, unix.EV_DELETE)
	_, _ = unix.Kevent(w.kq, ev[:], nil, nil)
}

func (w *Watcher) run() {
	defer close(w.done)
	var evs [128]unix.Kevent_t
	for {
		n, err := unix.Kevent(w.kq, nil, evs[:], nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.notify.Failed(fmt.Errorf("kevent wait on drain watcher %d: %w", w.kq, err))
			return
		}
		for i := 0; i < n; i++ {
			fd := int(evs[i].Ident)
			if fd == w.wake[0] {
				return
			}
			w.queue.push(int32(fd))
		}
		if n > 0 {
			w.notify.Writable()
		}
	}
}

// Close ends the goroutine and closes the kqueue; the loop must not use
// the watcher any more.
func (w *Watcher) Close() {
	if _, err := unix.Write(w.wake[1], []byte{1}); err == nil {
		select {
		case <-w.done:
		case <-time.After(time.Second):
		}
	}
	w.closeFDs()
}

func (w *Watcher) closeFDs() {
	unix.Close(w.wake[0])
	unix.Close(w.wake[1])
	unix.Close(w.kq)
}

// UnackedBytes is not read here: FreeBSD's FIONWRITE and macOS's SO_NWRITE
// would tell, but nothing here could run them.
func UnackedBytes(int) int { return -1 }
