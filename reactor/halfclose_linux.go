package reactor

import "golang.org/x/sys/unix"

// forgetFD removes fd from the loop's epoll set before gnet closes it, so
// that the duplicate kept for a half-closed connection gets no events there
// (epoll keys on the descriptor number and the open file together).
func (l *Loop) forgetFD(fd int) {
	if l.pollFD >= 0 {
		_ = unix.EpollCtl(l.pollFD, unix.EPOLL_CTL_DEL, fd, nil)
	}
}
