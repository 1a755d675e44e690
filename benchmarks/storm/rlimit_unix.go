//go:build unix

package storm

import (
	"fmt"
	"syscall"
)

// checkClientDescriptors fails when this process may not open need files:
// the storm's own client must not be what runs out. (Go raises the soft
// limit to the hard one at start.)
func checkClientDescriptors(need int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading this process's descriptor limit: %w", err)
	}
	if uint64(need) > uint64(lim.Cur) {
		return fmt.Errorf("held + storm sessions need about %d descriptors in this client, its limit is %d: hold or fire fewer", need, lim.Cur)
	}
	return nil
}
