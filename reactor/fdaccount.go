package reactor

import "github.com/tidegate/tidegate/reactor/fdbudget"

// HeldFDs returns the descriptors the budget accounts to connections now,
// in every Server of the process: what a test checks comes back to where it
// was once the connections it made are gone.
func HeldFDs() int64 { return fdbudget.Held() }

// HoldFDs accounts n descriptors (negative n gives them back) that the
// caller holds outside any connection, such as sockets detached for another
// process and not yet sent: admission and HandoverFDs count them.
func HoldFDs(n int) { fdbudget.Hold(n) }

// HandoverFDs returns how many more descriptors a hand-over may hold now
// for sockets on their way to another process (see HoldFDs): those free
// under the limit, less half of s's reserve, which stays for listeners,
// dials and metrics. It is math.MaxInt when the process has no limit.
func (s *Server) HandoverFDs() int { return fdbudget.Free(s.cfg.FDReserve / 2) }
