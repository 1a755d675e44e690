package writev

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Scratch is a reused iovec array for Write. Its zero value is ready; it is
// not safe for concurrent use (a loop owns one).
type Scratch struct{ iovecs []unix.Iovec }

// Write writes bufs to fd with one writev from the reused iovec array
// (x/sys's Writev allocates one past 8 slices), retrying on EINTR. It
// returns the bytes written, never negative.
func (s *Scratch) Write(fd int, bufs [][]byte) (int, error) {
	if len(bufs) == 1 {
		n, err := unix.Write(fd, bufs[0])
		return max(n, 0), err
	}
	vecs := s.iovecs[:0]
	for _, p := range bufs {
		if len(p) == 0 {
			continue
		}
		v := unix.Iovec{Base: &p[0]}
		v.SetLen(len(p))
		vecs = append(vecs, v)
	}
	s.iovecs = vecs
	if len(vecs) == 0 {
		return 0, nil
	}
	for {
		r, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
		if errno == unix.EINTR {
			continue
		}
		clear(vecs) // keep no pointers into the caller's buffers
		if errno != 0 {
			return 0, errno
		}
		return int(r), nil
	}
}
