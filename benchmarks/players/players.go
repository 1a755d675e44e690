package players

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidegate/tidegate/benchmarks/fdlimit"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// Params is the players workload: many logged-in sessions, each
// sending small PLAY frames at a fixed rate and getting one reply for each,
// an echo or now and then a chunk-sized frame, for a fixed time. It is open
// loop: a session sends on its schedule whether or not its replies came.
type Params struct {
	// Sessions is the number of sessions, each on its own connection.
	Sessions int `json:"sessions"`
	// Rate is the frames per second each session sends, and so gets back.
	Rate int `json:"rate"`
	// Warmup is the sending before the measured interval, Duration the
	// measured interval, Drain how long after it every reply may take.
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	Drain    time.Duration `json:"drain_ns"`
	// FrameMin and FrameMax bound the body (packet ID and data) of the
	// frames the sessions send; sizes are drawn per frame from Seed.
	FrameMin int `json:"frame_min"`
	FrameMax int `json:"frame_max"`
	// ChunkEvery makes one frame in ChunkEvery of each session a chunk
	// request, answered by a frame of ChunkMin..ChunkMax body bytes instead
	// of its echo; 0 sends none.
	ChunkEvery int `json:"chunk_every"`
	ChunkMin   int `json:"chunk_min"`
	ChunkMax   int `json:"chunk_max"`
	// Seed picks the frame and chunk sizes.
	Seed uint64 `json:"seed"`
	// Senders is the number of goroutines writing the sessions' frames.
	Senders int `json:"senders"`
	// SendTick is the shortest sleep of a sender: with thousands of
	// sessions their send times are microseconds apart, and waking for
	// each would cost more CPU than the sends, so a sender wakes at most
	// once a tick and writes every frame then due. A send is then up to a
	// tick late (half of one on average); its frame carries its real send
	// time.
	SendTick time.Duration `json:"send_tick_ns"`
	// Modern logs the sessions in at protocol 764 (1.20.2) with
	// mcclient.ModernLogin, which follows the server into online mode
	// (encryption) and through the configuration state, where proxies
	// that terminate the login need a client of their time; their echo
	// frames then carry ModernEchoID, a packet ID no proxy knows. Without
	// it, protocol 5 (1.7.10) and PlayPacketID.
	Modern bool `json:"modern,omitempty"`
	// VelocitySecret, with Modern, is the secret of a backend behind
	// modern forwarding that the direct phases log in to (ModernOptions).
	VelocitySecret []byte `json:"-"`
}

// ModernEchoID is the packet ID of a Modern workload's echo frames: unused
// in 1.20.2's play state either way, so a proxy that decodes the packets
// it knows (Gate) passes them on untouched, as it does chunk requests (0x7F).
const ModernEchoID = 0x7E

// Default is the workload of issue #14: 5,000 sessions at 20 frames
// a second each way, 60–200-byte frames and 1 in 20 answered with 8–32 KiB.
var Default = Params{
	Sessions: 5000, Rate: 20, Warmup: 5 * time.Second, Duration: 20 * time.Second, Drain: 5 * time.Second,
	FrameMin: 60, FrameMax: 200, ChunkEvery: 20, ChunkMin: 8 << 10, ChunkMax: 32 << 10, Seed: 1, Senders: 4,
	SendTick: time.Millisecond,
}

// Limits of Params.
const (
	// minPlayersFrame is a chunk request's body: its header, then the
	// session, sequence, send time and check word.
	minPlayersFrame = mcbackend.ChunkRequestHeaderLen + playersFieldsLen
	// maxPlayersFrame keeps a session's frame well within one write.
	maxPlayersFrame = 16 << 10
	maxPlayersRate  = 1000
	maxSenders      = 64
)

// Validate reports every value that cannot work.
func (p Params) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if p.Sessions < 1 {
		bad("sessions %d: want at least 1", p.Sessions)
	}
	if p.Rate < 1 || p.Rate > maxPlayersRate {
		bad("rate %d frames/s: want 1..%d", p.Rate, maxPlayersRate)
	}
	if p.Warmup < 0 {
		bad("warmup %v is negative", p.Warmup)
	}
	if p.Duration < 100*time.Millisecond {
		bad("duration %v: want at least 100ms", p.Duration)
	}
	if p.Drain <= 0 {
		bad("drain %v: want a positive time", p.Drain)
	}
	if secs := (p.Warmup + p.Duration).Seconds() + 1; secs*float64(p.Rate) > 1<<31 {
		bad("warmup+duration %v at %d frames/s exceeds the 32-bit sequence number", p.Warmup+p.Duration, p.Rate)
	}
	if p.FrameMin < minPlayersFrame || p.FrameMax > maxPlayersFrame || p.FrameMin > p.FrameMax {
		bad("frame sizes %d..%d bytes: want %d <= min <= max <= %d", p.FrameMin, p.FrameMax, minPlayersFrame, maxPlayersFrame)
	}
	if p.ChunkEvery < 0 {
		bad("chunk-every %d is negative", p.ChunkEvery)
	}
	if p.ChunkEvery > 0 && (p.ChunkMin < p.FrameMax || p.ChunkMax > mcbackend.MaxChunkReply || p.ChunkMin > p.ChunkMax) {
		bad("chunk sizes %d..%d bytes: want frame-max %d <= min <= max <= %d", p.ChunkMin, p.ChunkMax, p.FrameMax, mcbackend.MaxChunkReply)
	}
	if p.Senders < 1 || p.Senders > maxSenders {
		bad("senders %d: want 1..%d", p.Senders, maxSenders)
	}
	if p.SendTick < 10*time.Microsecond || p.SendTick > 100*time.Millisecond {
		bad("send tick %v: want 10µs..100ms", p.SendTick)
	}
	if len(errs) > 0 {
		return fmt.Errorf("players workload: %s", strings.Join(errs, "; "))
	}
	return nil
}

// String formats p as the flags that select it.
func (p Params) String() string {
	return fmt.Sprintf("--sessions %d --rate %d --warmup %v --duration %v --drain %v --frame-min %d --frame-max %d "+
		"--chunk-every %d --chunk-min %d --chunk-max %d --seed %d --senders %d --send-tick %v",
		p.Sessions, p.Rate, p.Warmup, p.Duration, p.Drain, p.FrameMin, p.FrameMax,
		p.ChunkEvery, p.ChunkMin, p.ChunkMax, p.Seed, p.Senders, p.SendTick)
}

// maxReplyBody is the largest reply body a session may get.
func (p Params) maxReplyBody() int {
	if p.ChunkEvery > 0 {
		return max(p.FrameMax, p.ChunkMax)
	}
	return p.FrameMax
}

// proxyReserve is what a proxy holds beyond two descriptors per session:
// its configuration's margin (peers' fdMargin of 256 sessions, two
// descriptors each), tidegate's spare 128 and what a proxy opens at start.
const proxyReserve = 2*256 + 128 + 64

// toolReserve is what this tool holds beyond its sessions' descriptors:
// the reply readers' epoll sets, the senders' timers, the pipes to the
// processes it starts and its standard files.
const toolReserve = maxSenders + 64

// CheckDescriptors fails when n sessions cannot fit in limit
// descriptors per process (the hard RLIMIT_NOFILE, to which the processes
// raise their soft limits). Every proxy holds two per session (client and
// backend), and so does this tool on Linux, where the reply readers read a
// duplicate of each session's socket; the backend holds one.
func CheckDescriptors(n int, limit uint64) error {
	return fdlimit.Check(n, limit, "raise the hard limit (ulimit -Hn) or use fewer --sessions",
		fdlimit.Holder{Name: "a proxy", PerSession: 2, Holds: "client and backend", Reserve: proxyReserve},
		fdlimit.Holder{Name: "this tool", PerSession: 2, Holds: "each socket and its duplicate for the reply readers", Reserve: toolReserve})
}
