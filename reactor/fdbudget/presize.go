package fdbudget

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// The kernel grows a process's descriptor table by doubling it when a new
// descriptor does not fit. On Linux, in a process of more than one thread,
// each growth waits for an RCU grace period (expand_fdtable calls
// synchronize_rcu), and every accept, socket and dup of the process waits
// behind it: milliseconds on a busy machine. Each Go goroutine stuck in
// such a call has its P taken by the runtime, which starts another OS
// thread to go on, and the runtime keeps every thread it started; under an
// accept storm one growth made a dozen threads at once (reactor/doc.go,
// Threads). Growing the table once, at start, to what the server may come to
// use takes those waits, and the threads they made, out of the storms.

// MaxPresize bounds PresizeTable: the table costs the kernel about 8 bytes
// per slot whether or not it is used, so one of 131,072 slots (1 MiB) is
// the most a server asks for ahead of need; past it, the table grows as
// the descriptors come.
const MaxPresize = 1 << 17

// Need is how many descriptors a server may come to hold: those open, the
// reserve and maxConns connections of perConn each; with no connection
// limit (0), as many as the limit allows (PresizeTable caps it).
func Need(maxConns, perConn, reserve, open int) int {
	if maxConns <= 0 {
		return math.MaxInt
	}
	return open + reserve + maxConns*perConn
}

// PresizeTable grows the process's descriptor table, if it is smaller, to
// hold descriptors numbered below n (at most MaxPresize and the soft
// RLIMIT_NOFILE): it duplicates a descriptor onto the lowest free number at
// or above n-1 and closes it again. The kernel never shrinks the table.
func PresizeTable(n int) error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("reactor: getrlimit RLIMIT_NOFILE: %w", err)
	}
	n = int(min(uint64(max(n, 0)), uint64(MaxPresize), uint64(rl.Cur))) // Cur is int64 on FreeBSD
	if n <= 1 {
		return nil
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("reactor: growing the descriptor table: %w", err)
	}
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, n-1)
	if err != nil {
		return fmt.Errorf("reactor: growing the descriptor table to %d (fcntl F_DUPFD_CLOEXEC): %w", n, err)
	}
	return unix.Close(fd)
}
