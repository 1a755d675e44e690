package reactor

import (
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
)

// DefaultFDReserve is how many descriptors the admission budget keeps free
// for listeners, backend dials in flight, metrics and logs.
const DefaultFDReserve = 128

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

// FileLimitError reports a connection limit that cannot fit in the process's
// descriptor limit.
type FileLimitError struct {
	MaxConns int    // connections the configuration allows
	PerConn  int    // descriptors each one needs
	Reserve  int    // descriptors kept free for listeners, dials and metrics
	InUse    int    // descriptors already open
	Limit    uint64 // the soft RLIMIT_NOFILE
}

// Error implements the error interface.
func (e *FileLimitError) Error() string {
	need := e.MaxConns*e.PerConn + e.Reserve + e.InUse
	return fmt.Sprintf("reactor: %d connections x %d descriptors + %d reserve + %d open = %d descriptors, "+
		"but the limit (RLIMIT_NOFILE) is %d: lower the connection limit to %d or raise the limit (LimitNOFILE=, ulimit -n)",
		e.MaxConns, e.PerConn, e.Reserve, e.InUse, need, e.Limit, max(0, (int(e.Limit)-e.Reserve-e.InUse)/e.PerConn))
}

// fdAccount is the process's descriptor budget, shared by every Server in the
// process: the limit is the process's, so is the budget. Connections are
// accounted when they are accepted, for the descriptors their handler will
// need (Config.FDsPerConn), so that accepting stops before the process runs
// out, instead of after.
var fdAccount struct {
	limit atomic.Int64 // soft RLIMIT_NOFILE
	base  atomic.Int64 // descriptors open that no connection accounts for
	held  atomic.Int64 // descriptors accounted to accepted connections
}

// HeldFDs returns the descriptors the budget accounts to connections now,
// in every Server of the process: what a test checks comes back to where it
// was once the connections it made are gone.
func HeldFDs() int64 { return fdAccount.held.Load() }

// HoldFDs accounts n descriptors (negative n gives them back) that the
// caller holds outside any connection, such as sockets detached for another
// process and not yet sent: admission and HandoverFDs count them.
func HoldFDs(n int) { holdFDs(n) }

// HandoverFDs returns how many more descriptors a hand-over may hold now
// for sockets on their way to another process (see HoldFDs): those free
// under the limit, less half of s's reserve, which stays for listeners,
// dials and metrics. It is math.MaxInt when the process has no limit.
func (s *Server) HandoverFDs() int {
	limit := fdAccount.limit.Load()
	if limit <= 0 {
		return math.MaxInt
	}
	free := limit - fdAccount.held.Load() - fdAccount.base.Load() - int64(s.cfg.FDReserve/2)
	return int(max(0, free))
}

// fdRoom reports whether n more descriptors fit, keeping reserve free.
func fdRoom(n, reserve int) bool {
	limit := fdAccount.limit.Load()
	return limit <= 0 || fdAccount.held.Load()+fdAccount.base.Load()+int64(n+reserve) <= limit
}

// measureFDBase records the descriptors open now that no connection accounts for.
func measureFDBase() (open int, err error) {
	open, err = openFDs()
	if err != nil {
		return 0, err
	}
	fdAccount.base.Store(max(0, int64(open)-fdAccount.held.Load()))
	return open, nil
}
