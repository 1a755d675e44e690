package mcbackend

import (
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
)

// Stats is a snapshot of the backend's counters, summed over loops.
type Stats struct {
	// Reactor holds the connection counters of the loops.
	Reactor reactor.Stats

	StatusRequests int64 // Status Requests answered
	Pings          int64 // status Pings answered
	LoginStarts    int64 // Login Starts accepted
	PlayStarted    int64 // connections that reached play
	Playing        int64 // connections in play now
	EchoFrames     int64 // play frames echoed
	EchoBytes      int64 // play bytes echoed
	SlowPauses     int64 // times slow-sink mode stopped reading to keep to its rate
	Stalled        int64 // connections stall mode stopped reading for good
	Timeouts       int64 // connections closed because login did not finish in time
	// HeldWrites counts the writes of held echo under Config.ReplyDelay;
	// HeldLateNs sums how long after its due time each went out.
	HeldWrites int64
	HeldLateNs int64
	// ChunkReplies counts the chunk requests answered (Config.ChunkReplies)
	// and ChunkReplyBytes the bytes of their replies, length prefixes
	// included; each request is also in EchoFrames and EchoBytes.
	ChunkReplies    int64
	ChunkReplyBytes int64
	// Forwarded counts the logins whose velocity forwarding verified.
	Forwarded int64

	// Rejected counts connections closed on bad input, by reason.
	BadFrame         int64
	BadHandshake     int64
	BadStatus        int64
	BadLoginStart    int64
	UnexpectedPacket int64
	BadCompression   int64
	LegacyPing       int64
	BadChunkRequest  int64
	BadForwarding    int64
}

// Rejected returns the number of connections closed on bad input, all
// reasons together.
func (s Stats) Rejected() int64 {
	return s.BadFrame + s.BadHandshake + s.BadStatus + s.BadLoginStart + s.UnexpectedPacket +
		s.BadCompression + s.LegacyPing + s.BadChunkRequest + s.BadForwarding
}

// loopCounters are one loop's counters, written only on that loop.
type loopCounters struct {
	statusRequests  atomic.Int64
	pings           atomic.Int64
	loginStarts     atomic.Int64
	playStarted     atomic.Int64
	playing         atomic.Int64
	echoFrames      atomic.Int64
	echoBytes       atomic.Int64
	slowPauses      atomic.Int64
	stalled         atomic.Int64
	timeouts        atomic.Int64
	heldWrites      atomic.Int64
	heldLateNs      atomic.Int64
	chunkReplies    atomic.Int64
	chunkReplyBytes atomic.Int64
	forwarded       atomic.Int64
	rejected        [numReasons]atomic.Int64
}

func (s *Stats) add(c *loopCounters) {
	s.StatusRequests += c.statusRequests.Load()
	s.Pings += c.pings.Load()
	s.LoginStarts += c.loginStarts.Load()
	s.PlayStarted += c.playStarted.Load()
	s.Playing += c.playing.Load()
	s.EchoFrames += c.echoFrames.Load()
	s.EchoBytes += c.echoBytes.Load()
	s.SlowPauses += c.slowPauses.Load()
	s.Stalled += c.stalled.Load()
	s.Timeouts += c.timeouts.Load()
	s.HeldWrites += c.heldWrites.Load()
	s.HeldLateNs += c.heldLateNs.Load()
	s.BadFrame += c.rejected[ReasonBadFrame].Load()
	s.BadHandshake += c.rejected[ReasonBadHandshake].Load()
	s.BadStatus += c.rejected[ReasonBadStatus].Load()
	s.BadLoginStart += c.rejected[ReasonBadLoginStart].Load()
	s.UnexpectedPacket += c.rejected[ReasonUnexpectedPacket].Load()
	s.BadCompression += c.rejected[ReasonBadCompression].Load()
	s.LegacyPing += c.rejected[ReasonLegacyPing].Load()
	s.BadChunkRequest += c.rejected[ReasonBadChunkRequest].Load()
	s.ChunkReplies += c.chunkReplies.Load()
	s.ChunkReplyBytes += c.chunkReplyBytes.Load()
	s.Forwarded += c.forwarded.Load()
	s.BadForwarding += c.rejected[ReasonBadForwarding].Load()
}
