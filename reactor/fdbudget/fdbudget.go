// Package fdbudget is the process's descriptor budget: the soft
// RLIMIT_NOFILE, raised to the hard limit, less the descriptors open at a
// server's start, less those accounted to accepted connections. A server
// accepts only while the connection's descriptors fit (Room), so that the
// process stops accepting before it runs out instead of after. The limit is
// the process's, so is the budget: every server in the process shares it.
package fdbudget

import (
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
)

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit, as a server
// that holds many connections needs, and returns the soft limit in force.
func RaiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("reactor: getrlimit RLIMIT_NOFILE: %w", err)
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
			rl = want
		}
		// Where the hard limit cannot be the soft one (macOS caps it at
		// kern.maxfilesperproc), the soft limit stays as it was.
	}
	return uint64(rl.Cur), nil
}

// LimitError reports a connection limit that cannot fit in the process's
// descriptor limit.
type LimitError struct {
	MaxConns int    // connections the configuration allows
	PerConn  int    // descriptors each one needs
	Reserve  int    // descriptors kept free for listeners, dials and metrics
	InUse    int    // descriptors already open
	Limit    uint64 // the soft RLIMIT_NOFILE
}

// Error implements the error interface.
func (e *LimitError) Error() string {
	need := e.MaxConns*e.PerConn + e.Reserve + e.InUse
	return fmt.Sprintf("reactor: %d connections x %d descriptors + %d reserve + %d open = %d descriptors, "+
		"but the limit (RLIMIT_NOFILE) is %d: lower the connection limit to %d or raise the limit (LimitNOFILE=, ulimit -n)",
		e.MaxConns, e.PerConn, e.Reserve, e.InUse, need, e.Limit, max(0, (int(e.Limit)-e.Reserve-e.InUse)/e.PerConn))
}

// account is the budget. Connections are accounted when they are
// accepted, for the descriptors their handler will need, so that accepting
// stops before the process runs out, instead of after.
var account struct {
	limit atomic.Int64 // soft RLIMIT_NOFILE
	base  atomic.Int64 // descriptors open that no connection accounts for
	held  atomic.Int64 // descriptors accounted to accepted connections
}

// SetLimit records the soft RLIMIT_NOFILE in force, as RaiseFileLimit
// returned it.
func SetLimit(limit uint64) { account.limit.Store(int64(limit)) }

// Limit returns the limit last set (0 before any).
func Limit() int64 { return account.limit.Load() }

// Accounted returns the descriptors the budget counts as used: those open
// that no connection accounts for, and those held for connections.
func Accounted() int64 { return account.held.Load() + account.base.Load() }

// Hold accounts n descriptors to connections (negative n releases them).
func Hold(n int) { account.held.Add(int64(n)) }

// Room reports whether n more descriptors fit, keeping reserve free; with
// no limit set everything fits.
func Room(n, reserve int) bool {
	limit := account.limit.Load()
	return limit <= 0 || Accounted()+int64(n+reserve) <= limit
}

// MeasureBase records the descriptors open now that no connection accounts
// for, and returns how many are open.
func MeasureBase() (open int, err error) {
	open, err = OpenFDs()
	if err != nil {
		return 0, err
	}
	account.base.Store(max(0, int64(open)-account.held.Load()))
	return open, nil
}

// Held returns the descriptors accounted to connections now, in every
// server of the process.
func Held() int64 { return account.held.Load() }

// Free returns how many more descriptors fit under the limit while reserve
// stay free, or math.MaxInt when no limit is set.
func Free(reserve int) int {
	limit := account.limit.Load()
	if limit <= 0 {
		return math.MaxInt
	}
	return int(max(0, limit-Accounted()-int64(reserve)))
}
