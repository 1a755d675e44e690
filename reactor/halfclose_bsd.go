//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package reactor

import "golang.org/x/sys/unix"

// forgetFD needs nothing on kqueue: closing a descriptor removes its
// filters, and the duplicate kept for a half-closed connection has none.
func (l *Loop) forgetFD(int) {}

// dupOnto makes descriptor newfd refer to what oldfd refers to.
func dupOnto(oldfd, newfd int) error { return unix.Dup2(oldfd, newfd) }
