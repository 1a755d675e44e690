//go:build !linux

package writev

import "golang.org/x/sys/unix"

// Scratch stands for the reused iovec array of the Linux build, which
// writes with writev; here each buffer is written on its own.
type Scratch struct{}

// Write writes bufs to fd, one write each, until the kernel takes less
// than a whole buffer. It returns the bytes written, never negative.
func (*Scratch) Write(fd int, bufs [][]byte) (int, error) {
	total := 0
	for _, p := range bufs {
		n, err := unix.Write(fd, p)
		if n > 0 {
			total += n
		}
		if err != nil {
			if total > 0 {
				return total, nil
			}
			return 0, err
		}
		if n < len(p) {
			break
		}
	}
	return total, nil
}
