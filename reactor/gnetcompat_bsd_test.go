//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package reactor

import (
	"testing"

	"golang.org/x/sys/unix"
)

// checkIsGnetPoller fails t unless pollFD is a kqueue. (Compiled here, not
// run: there is no BSD or macOS machine in this project's CI.)
func checkIsGnetPoller(t *testing.T, pollFD, _ int) {
	t.Helper()
	if err := checkPollerFD(pollFD); err != nil {
		t.Fatalf("checkPollerFD(%d): %v", pollFD, err)
	}
}

// fionread is FIONREAD, _IOR('f', 127, int), on macOS and the BSDs; x/sys
// does not define it there.
const fionread = 0x4004667f

// kernelQueued returns the bytes in sock's receive queue.
func kernelQueued(sock int) (int, error) { return unix.IoctlGetInt(sock, fionread) }
