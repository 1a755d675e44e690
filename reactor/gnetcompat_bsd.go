//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package reactor

// The kqueue side of the reliances in gnetcompat.go: gnet's kqueue poller
// keeps EVFILT_READ and EVFILT_WRITE as separate filters and only adds and
// deletes EVFILT_WRITE after registration
// (pkg/netpoll/poller_kqueue_default.go), so a read filter disabled here
// stays disabled. Checked by checkPollerFD at Start; TestPollerFD runs
// where there is a BSD or macOS machine.

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// checkPollerFD checks that fd is a kqueue: kevent with no changes and no
// room for events returns at once on a kqueue and fails (EBADF) on any other
// descriptor.
func checkPollerFD(fd int) error {
	if _, err := unix.Kevent(fd, nil, nil, &unix.Timespec{}); err != nil {
		return fmt.Errorf("not a kqueue: %w", err)
	}
	return nil
}

// setReadInterest turns reading of c on or off with EV_DISABLE/EV_ENABLE on
// its EVFILT_READ filter in the loop's kqueue. gnet only adds and deletes
// EVFILT_WRITE, so it never undoes this. Compiled and vetted here, not run:
// there is no BSD or macOS machine in this project's CI.
func (l *Loop) setReadInterest(c *Conn, on bool) {
	if l.pollFD < 0 {
		return
	}
	flags := uint16(unix.EV_DISABLE)
	if on {
		flags = unix.EV_ENABLE
	}
	fd := c.gc.Fd()
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], fd, unix.EVFILT_READ, int(flags))
	if _, err := unix.Kevent(l.pollFD, ev[:], nil, nil); err != nil {
		l.srv.log.Error().Err(err).Int("fd", fd).Bool("read", on).Msg("kevent: changing read interest failed")
	}
}

// forgetFD needs nothing on kqueue: closing a descriptor removes its
// filters, and the duplicate kept for a half-closed connection has none.
func (l *Loop) forgetFD(int) {}
