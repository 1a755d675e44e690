package reactor

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// checkIsGnetPoller fails t unless pollFD is an epoll instance (as /proc
// names it) in which gnet registered the socket sock.
func checkIsGnetPoller(t *testing.T, pollFD, sock int) {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", pollFD))
	if err != nil {
		t.Fatalf("readlink of the poller descriptor %d: %v", pollFD, err)
	}
	if link != "anon_inode:[eventpoll]" {
		t.Fatalf("the poller descriptor %d is %q, not an epoll instance", pollFD, link)
	}
	if err := checkPollerFD(pollFD); err != nil {
		t.Fatalf("checkPollerFD(%d): %v", pollFD, err)
	}
	// Adding a socket that is already in the set fails with EEXIST: gnet
	// registered the connection in this very instance.
	err = unix.EpollCtl(pollFD, unix.EPOLL_CTL_ADD, sock, &unix.EpollEvent{Fd: int32(sock)})
	if err == nil {
		_ = unix.EpollCtl(pollFD, unix.EPOLL_CTL_DEL, sock, nil)
		t.Fatalf("socket %d was not in the epoll set %d: it is not the loop gnet reads it on", sock, pollFD)
	}
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("epoll_ctl(ADD) of socket %d in %d: %v, want EEXIST", sock, pollFD, err)
	}
}

// kernelQueued returns the bytes in sock's receive queue.
func kernelQueued(sock int) (int, error) { return unix.IoctlGetInt(sock, unix.SIOCINQ) }
