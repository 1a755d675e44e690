package handover

import "time"

// Window bounds the sessions on their way to the new process (detached by
// the old one, not yet acknowledged by the new). Each waits for those ahead
// of it, so it bounds the pause a session sees; and it is enough to keep the
// new process's adopters busy.
const Window = 1024

// Options tune a hand-over (proxy.Proxy.HandOver).
type Options struct {
	// Stall ends the hand-over when, for this long, no session has moved,
	// been acknowledged or ended (default 30 s). Sessions still here then
	// stay here.
	Stall time.Duration
	// Acked says the other process acknowledges the sessions it handled
	// (TakeOver does): at most Window are then on their way at once.
	// Without it, only this side's send queue bounds them.
	Acked bool
	// AckEach says the other process also acknowledges each session by
	// its place before it touches it (TakeOver does): this process then
	// keeps its copies of a session's sockets until that acknowledgement,
	// and takes back what the other did not adopt. It needs Acked.
	AckEach bool
	// StateVersion is the newest state message the other process reads (0:
	// 1); sessions that need a later one stay there (NeedsV2).
	StateVersion int
}
