package pushserver

import (
	"fmt"
	"runtime"
	"time"

	"github.com/rs/zerolog"
	"github.com/tidegate/tidegate/protocol/push"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// Config holds the options of a Server. Start from DefaultConfig: unlike
// reactor.Config, zero values are meaningful here (a zero Window writes at
// once, a zero Heartbeat or ReadIdle disables it).
type Config struct {
	// PublishAddr is the publishers' listen address ("host:port").
	PublishAddr string
	// SubscribeAddr is the subscribers' listen address, for TCP and SSE.
	SubscribeAddr string
	// PublishLoops is the number of event loops for publishers.
	PublishLoops int
	// Loops is the number of event loops for subscribers; 0 means one per core.
	Loops int
	// Window is how long a subscriber's events are buffered before they are
	// written as one batch; 0 writes them at once.
	Window time.Duration
	// WindowPhases spreads the batches of a loop's subscribers over this
	// many moments of a fixed grid of windows (0 and 1: a window starts
	// with a batch's first event, and the subscribers of a topic write at
	// the same moment). A fan-out reaches every subscriber of a topic at
	// once; written at one moment, the last of a large fan-out waits for all
	// the others' writes past the window's end. Spread, no event waits
	// longer than the window, but every separate moment costs wake-ups and
	// a grid takes fewer events per batch (see
	// benchmarks/results/2026-12-01-push-vs-nethttp.md).
	WindowPhases int
	// Heartbeat is the write idleness after which a heartbeat is sent; 0 disables.
	Heartbeat time.Duration
	// ReadIdle is the read idleness after which a TCP subscriber, or a
	// connection that has not finished its request, is closed; 0 disables.
	ReadIdle time.Duration
	// HighWatermark bounds the output queued for a subscriber: a batch is
	// written only as far as it fits in the room left under it (oldest
	// events first), and the rest is dropped, counted and reported to the
	// subscriber. A batch written while nothing is queued is exempt, as the
	// kernel takes it first: what it leaves queued is at most one batch.
	HighWatermark int
	// NotWritableTimeout aborts a subscriber that stays not writable this
	// long: the clock starts when one of its batches is cut while output is
	// queued for it, or when a heartbeat is due and output is still queued,
	// and stops when a batch is written whole or nothing is queued. 0
	// disables.
	NotWritableTimeout time.Duration
	// BufferBudget bounds the output queued for all subscribers of the
	// server together, in bytes; 0 disables. A subscriber with output
	// queued may come to hold at most a sixteenth of what the budget has
	// left, so as the total approaches the budget the subscribers holding the
	// most have their batches cut first and room is left for the others; one
	// with nothing queued needs its batch to fit in what is left.
	BufferBudget int
	// MaxBatchEvents and MaxBatchBytes write a subscriber's pending events
	// before its window ends once they reach either bound, which bounds the
	// pending list and the size of a legacy frame.
	MaxBatchEvents int
	MaxBatchBytes  int
	// MaxTopics bounds the number of topics at once (a topic exists while it
	// has subscribers).
	MaxTopics int
	// MaxInflight is how many hand-offs to subscriber loops one publisher
	// may have queued before it stops being read.
	MaxInflight int
	// Limits bound a publish body.
	Limits push.Limits
	// Format is the publishers' TLV framing.
	Format tlv.Format
	// MaxHeader bounds an SSE subscriber's HTTP request head.
	MaxHeader int
	// Tick is the resolution of the loops' timers.
	Tick time.Duration
	// Logger receives the server's logs.
	Logger zerolog.Logger
}

// DefaultConfig returns Mantis' settings: a 200 ms window, a 2 s heartbeat,
// a 10 s read idle limit; and a 1 MiB high watermark (Mantis uses Netty's
// 5 MiB), a 30 s not-writable timeout and a 1 GiB buffer budget, so that
// subscribers that stop reading hold at most the watermark plus one batch
// each, are closed in the end, and cannot together exhaust memory.
func DefaultConfig() Config {
	return Config{
		PublishAddr:        "127.0.0.1:7301",
		SubscribeAddr:      "127.0.0.1:7302",
		PublishLoops:       1,
		Window:             200 * time.Millisecond,
		Heartbeat:          2 * time.Second,
		ReadIdle:           10 * time.Second,
		HighWatermark:      1 << 20,
		NotWritableTimeout: 30 * time.Second,
		BufferBudget:       1 << 30,
		MaxBatchEvents:     1000,
		MaxBatchBytes:      1 << 20,
		MaxTopics:          1 << 16,
		MaxInflight:        64,
		Limits:             push.DefaultLimits,
		Format:             tlv.DefaultFormat,
		MaxHeader:          push.DefaultMaxHeader,
		Tick:               10 * time.Millisecond,
		Logger:             zerolog.Nop(),
	}
}

// Validate fills in Loops when it is 0 and reports values that cannot work.
func (c *Config) Validate() error {
	if c.PublishAddr == "" || c.SubscribeAddr == "" {
		return fmt.Errorf("push: publish address %q and subscribe address %q must both be set", c.PublishAddr, c.SubscribeAddr)
	}
	if c.Loops == 0 {
		c.Loops = runtime.NumCPU()
	}
	if c.Loops < 0 || c.PublishLoops < 1 {
		return fmt.Errorf("push: loops %d / publish loops %d: need loops >= 0 and publish loops >= 1", c.Loops, c.PublishLoops)
	}
	if c.Window < 0 || c.Heartbeat < 0 || c.ReadIdle < 0 || c.NotWritableTimeout < 0 {
		return fmt.Errorf("push: window %v, heartbeat %v, read idle %v, not-writable timeout %v: none may be negative",
			c.Window, c.Heartbeat, c.ReadIdle, c.NotWritableTimeout)
	}
	if c.WindowPhases < 0 || c.WindowPhases > 1000 {
		return fmt.Errorf("push: window phases %d: want 0 to 1000 (0 and 1 write a loop's batches together)", c.WindowPhases)
	}
	if c.HighWatermark < 1 {
		return fmt.Errorf("push: high watermark %d must be positive", c.HighWatermark)
	}
	if c.BufferBudget < 0 {
		return fmt.Errorf("push: buffer budget %d must not be negative (0 disables it)", c.BufferBudget)
	}
	if c.MaxBatchEvents < 1 || c.MaxBatchBytes < 1 || c.MaxTopics < 1 || c.MaxInflight < 1 {
		return fmt.Errorf("push: max batch events %d, max batch bytes %d, max topics %d, max inflight %d: all must be positive",
			c.MaxBatchEvents, c.MaxBatchBytes, c.MaxTopics, c.MaxInflight)
	}
	if c.Limits.MaxEvents < 1 || c.Limits.MaxEventSize < 0 {
		return fmt.Errorf("push: publish limits %+v: need at least one event and a non-negative size", c.Limits)
	}
	if err := c.Format.Validate(); err != nil {
		return fmt.Errorf("push: publish format: %w", err)
	}
	if c.Format.ErrorType() < push.TypePublish+1 {
		return fmt.Errorf("push: publish format error type %d leaves no room for type %d", c.Format.ErrorType(), push.TypePublish)
	}
	if c.MaxHeader < 64 {
		return fmt.Errorf("push: max HTTP header %d bytes is below 64", c.MaxHeader)
	}
	return nil
}
