//go:build !linux

package reactor

import "golang.org/x/sys/unix"

// writeBufs writes bufs to fd, one write each, until the kernel takes less
// than a whole buffer. It returns the bytes written, never negative.
func (l *Loop) writeBufs(fd int, bufs [][]byte) (int, error) {
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
