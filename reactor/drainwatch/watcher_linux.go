package drainwatch

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Watcher is a loop's second epoll set: waiting sockets registered
// edge-triggered for EPOLLOUT, and an eventfd that ends its goroutine.
// Add and Remove are for the loop; Close for after the loop has ended.
type Watcher struct {
	epfd   int
	wakefd int
	queue  queue
	notify Notifier
	done   chan struct{}
}

// New makes a watcher and starts its goroutine, which reports to n.
func New(n Notifier) (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("reactor: drain watcher: epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("reactor: drain watcher: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		unix.Close(wakefd)
		unix.Close(epfd)
		return nil, fmt.Errorf("reactor: drain watcher: epoll_ctl add eventfd %d: %w", wakefd, err)
	}
	w := &Watcher{epfd: epfd, wakefd: wakefd, notify: n, done: make(chan struct{})}
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
	for {
		n, err := unix.EpollWait(w.epfd, evs[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.notify.Failed(fmt.Errorf("epoll_wait on drain watcher %d: %w", w.epfd, err))
			return
		}
		for i := 0; i < n; i++ {
			if int(evs[i].Fd) == w.wakefd {
				return
			}
			w.queue.push(evs[i].Fd)
		}
		if n > 0 {
			w.notify.Writable()
		}
	}
}

// Close ends the goroutine and closes the set; the loop must not use the
// watcher any more.
func (w *Watcher) Close() {
	one := [8]byte{1}
	if _, err := unix.Write(w.wakefd, one[:]); err == nil {
		select {
		case <-w.done:
		case <-time.After(time.Second):
		}
	}
	unix.Close(w.wakefd)
	unix.Close(w.epfd)
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
