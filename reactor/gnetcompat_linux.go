package reactor

// The epoll side of the reliances in gnetcompat.go: gnet's default epoll
// poller registers each socket with EpollEvent{Fd: fd}
// (pkg/netpoll/poller_epoll_default.go, AddRead) and rewrites the whole
// mask itself in ModRead and ModReadWrite; the reactor pauses a connection
// by rewriting that registration with the same data, and removes a
// half-closed connection's descriptor before gnet closes it. Checked by
// checkPollerFD at Start and by TestPollerFD.

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// checkPollerFD checks that fd is an epoll instance: deleting a descriptor
// that is not in its set fails with ENOENT on an epoll instance and with
// EINVAL (or EBADF) on anything else. It does not need /proc.
func checkPollerFD(fd int) error {
	probe, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd for the epoll check: %w", err)
	}
	defer unix.Close(probe)
	err = unix.EpollCtl(fd, unix.EPOLL_CTL_DEL, probe, &unix.EpollEvent{})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err == nil {
		return errors.New("not gnet's epoll instance: a descriptor it never registered was in its set")
	}
	return fmt.Errorf("not an epoll instance: %w", err)
}

// setReadInterest turns reading of c on or off by rewriting its epoll mask in
// the loop's poller, keeping EPOLLOUT while gnet has output queued for it.
// gnet registers each socket with EpollEvent{Fd: fd}; the same data is kept.
func (l *Loop) setReadInterest(c *Conn, on bool) {
	if l.pollFD < 0 {
		return
	}
	var ev uint32
	if on {
		ev = unix.EPOLLIN | unix.EPOLLPRI
	}
	if c.gc.OutboundBuffered() > 0 {
		ev |= unix.EPOLLOUT
	}
	fd := c.gc.Fd()
	if err := unix.EpollCtl(l.pollFD, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Fd: int32(fd), Events: ev}); err != nil {
		l.srv.log.Error().Err(err).Int("fd", fd).Bool("read", on).Msg("epoll_ctl: changing read interest failed")
	}
}

// forgetFD removes fd from the loop's epoll set before gnet closes it, so
// that the duplicate kept for a half-closed connection gets no events there
// (epoll keys on the descriptor number and the open file together).
func (l *Loop) forgetFD(fd int) {
	if l.pollFD >= 0 {
		_ = unix.EpollCtl(l.pollFD, unix.EPOLL_CTL_DEL, fd, nil)
	}
}
