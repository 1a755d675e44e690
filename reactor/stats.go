package reactor

import "net"

// Stats is a snapshot of reactor counters, summed over loops.
type Stats struct {
	Accepted      int64 // connections accepted
	Dialed        int64 // outbound connections opened
	DialFailed    int64 // outbound connections that could not be made
	Active        int64 // connections open now
	Paused        int64 // connections not being read now
	PauseEvents   int64 // times a connection stopped being read
	SpuriousWakes int64 // reads gnet made on a paused connection
	// AbortResets counts Aborts that reset the connection because output was
	// still queued; AbortQueuedBytes sums that output as it stood before the
	// close's one last write attempt (an upper bound of what was dropped).
	AbortResets      int64
	AbortQueuedBytes int64
	HalfClosed       int64 // connections whose peer half-closed and that were kept for writing
	HalfCloseKept    int64 // queued bytes gnet would have dropped at a half-close, sent from the copy
	LingerExpired    int64 // closes reset because output was still queued at the linger deadline
	// LingerQueuedBytes sums the output still queued in user space at those
	// deadlines: bytes the kernel never took and the peer never got.
	LingerQueuedBytes int64

	QueuedBytes  int64            // output queued in the whole process, as last accounted
	AcceptPauses int64            // times accepting paused at MaxConns or the descriptor budget
	AcceptErrors map[string]int64 // accept errors by errno (EMFILE, ...)
}

func (s *Stats) add(l *LoopStats) {
	s.Accepted += l.Accepted.Load()
	s.Dialed += l.Dialed.Load()
	s.DialFailed += l.DialFailed.Load()
	s.Active += l.Active.Load()
	s.Paused += l.Paused.Load()
	s.PauseEvents += l.PauseEvents.Load()
	s.SpuriousWakes += l.SpuriousWakes.Load()
	s.LingerExpired += l.LingerExpired.Load()
	s.AbortResets += l.AbortResets.Load()
	s.AbortQueuedBytes += l.AbortQueuedBytes.Load()
	s.HalfClosed += l.HalfClosed.Load()
	s.HalfCloseKept += l.HalfCloseKept.Load()
	s.LingerQueuedBytes += l.LingerQueuedBytes.Load()
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
