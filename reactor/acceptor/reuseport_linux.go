package acceptor

import "golang.org/x/sys/unix"

func setReusePort(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }
