package soak

import "syscall"

// smallReadBuffer sets a stalled reader's SO_RCVBUF before it connects
// (the window is agreed on in the handshake).
func smallReadBuffer(_, _ string, rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, stalledReadBuffer)
	}); cerr != nil {
		return cerr
	}
	return err
}
