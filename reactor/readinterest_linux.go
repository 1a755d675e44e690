package reactor

import (
	"golang.org/x/sys/unix"
)

// setReadInterest turns reading of c on or off by rewriting its epoll mask in
// the loop's poller, keeping EPOLLOUT while gnet has output queued for it.
// gnet registers each socket with EpollEvent{Fd: fd}; the same data is kept.
func (l *Loop) setReadInterest(c *Conn, on bool) {
	if l.pollFD < 0 {
		return
	}
	var ev uint32
	if l.srv.cfg.EdgeTriggered {
		// gnet registers edge-triggered sockets for both directions once and
		// never changes the mask. EPOLLRDHUP is left out while paused: gnet
		// closes on RDHUP without EPOLLIN, which would drop unread input.
		ev = unix.EPOLLOUT | unix.EPOLLET
		if on {
			ev |= unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLRDHUP
		}
	} else {
		if on {
			ev = unix.EPOLLIN | unix.EPOLLPRI
		}
		if c.gc.OutboundBuffered() > 0 {
			ev |= unix.EPOLLOUT
		}
	}
	fd := c.gc.Fd()
	if err := unix.EpollCtl(l.pollFD, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Fd: int32(fd), Events: ev}); err != nil {
		l.srv.log.Error().Err(err).Int("fd", fd).Bool("read", on).Msg("epoll_ctl: changing read interest failed")
	}
}
