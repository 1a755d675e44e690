//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package reactor

// forgetFD needs nothing on kqueue: closing a descriptor removes its
// filters, and the duplicate kept for a half-closed connection has none.
func (l *Loop) forgetFD(int) {}
