package reactor

import (
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/reactor/acceptor"
	"github.com/tidegate/tidegate/reactor/flowcontrol"
)

// Defaults for Config fields left at their zero value.
const (
	DefaultReadBufferCap = 64 << 10
	DefaultTick          = 10 * time.Millisecond
	DefaultDrainPoll     = time.Millisecond
	// The flow-control defaults are defined in flowcontrol, which the
	// configurations that set them import; they are named here beside the
	// reactor's other defaults.
	DefaultHighWatermark = flowcontrol.DefaultHighWatermark
	DefaultLowWatermark  = flowcontrol.DefaultLowWatermark
	DefaultLinger        = flowcontrol.DefaultLinger
	// DefaultFDReserve is how many descriptors the admission budget keeps
	// free for listeners, backend dials in flight, metrics and logs.
	DefaultFDReserve = 128
)

// Config holds the options of a Server. The zero value of each field selects
// its default; Normalize fills them in and reports values that cannot work.
type Config struct {
	// Addrs are the listen addresses, as "tcp://host:port" or "host:port".
	Addrs []string
	// Loops is the number of event loops; 0 means one per core.
	Loops int
	// ReusePort sets SO_REUSEPORT on the listeners (ignored by gnet on BSD/macOS).
	ReusePort bool
	// Nagle enables Nagle's algorithm on accepted connections (TCP_NODELAY is
	// set by default).
	Nagle bool
	// ReadBufferCap is the size of each loop's read buffer: the most one read
	// syscall takes from a socket.
	ReadBufferCap int
	// WriteBufferCap is the static part of gnet's outbound buffer per connection.
	WriteBufferCap int
	// HighWatermark is the output a connection may have queued before the
	// connections producing into it stop being read.
	HighWatermark int
	// LowWatermark is the queued output under which they are read again.
	LowWatermark int
	// Tick is the resolution of loop timers.
	Tick time.Duration
	// DrainPoll is how often a connection waiting for its output to drain is
	// checked while its socket has room but the kernel will not say when it
	// drains (see drain.go); a waiting connection whose socket is full costs
	// nothing until the kernel reports room. Where the drain watcher cannot
	// run, every waiting connection is checked this often.
	DrainPoll time.Duration
	// Linger bounds how long Close waits for queued output to drain. When it
	// expires with output still queued, the connection is reset (SO_LINGER 0:
	// the peer sees a reset, not a clean end of a truncated stream), counted
	// in LingerExpired and logged with the bytes still queued.
	Linger time.Duration
	// MaxConns limits the accepted connections open at once. At the limit the
	// server stops accepting and leaves new connections in the kernel's
	// backlog, as HAProxy's maxconn does, and accepts again as connections
	// end. 0 means no limit but the descriptor budget.
	MaxConns int
	// FDsPerConn is how many descriptors each accepted connection may come to
	// hold (2 for a proxied session: the client and its backend); the
	// descriptor budget counts them when the connection is accepted.
	FDsPerConn int
	// FDReserve is how many descriptors the budget keeps free for listeners,
	// dials in flight, metrics and logs; 0 means DefaultFDReserve.
	FDReserve int
	// BufferBudget bounds the output queued in the whole process (all
	// servers, all connections), with the unread input handlers account
	// (Loop.AccountInput): past it, a producer is paused as soon as
	// its sink holds more than 16 KiB (one chunk), whatever the watermarks allow. 0
	// means no budget but the watermarks. The total is the process's,
	// shared by its servers; the smallest budget set applies.
	BufferBudget int64
	// Listeners, when set, holds for each of Addrs (by index) a socket that
	// is listening already, such as one a process being upgraded handed over
	// (Server.ListenerFiles); a nil entry is bound as usual.
	Listeners []net.Listener
	// Logger receives the server's and gnet's logs.
	Logger zerolog.Logger

	// pollDrain makes every loop poll its waiting connections every
	// DrainPoll instead of running a drain watcher: the fallback, for tests.
	pollDrain bool
	// holdAccept, for tests, keeps every accept goroutine from calling
	// accept until it is closed or the server stops accepting, so that
	// connections pile up in the backlog.
	holdAccept chan struct{}
}

// Normalize fills in defaults and validates the configuration.
func (c *Config) Normalize() error {
	if len(c.Addrs) == 0 {
		return fmt.Errorf("reactor: no listen address")
	}
	if c.Loops < 0 {
		return fmt.Errorf("reactor: loops %d is negative", c.Loops)
	}
	if c.Loops == 0 {
		c.Loops = runtime.NumCPU()
	}
	if c.ReadBufferCap == 0 {
		c.ReadBufferCap = DefaultReadBufferCap
	}
	if c.ReadBufferCap < 512 {
		return fmt.Errorf("reactor: read buffer %d bytes is below 512", c.ReadBufferCap)
	}
	if c.HighWatermark == 0 && c.LowWatermark == 0 {
		c.HighWatermark, c.LowWatermark = DefaultHighWatermark, DefaultLowWatermark
	}
	if flowcontrol.CheckWatermarks(c.LowWatermark, c.HighWatermark) != flowcontrol.WatermarksValid {
		return fmt.Errorf("reactor: watermarks low %d / high %d: need 0 <= low <= high and high > 0",
			c.LowWatermark, c.HighWatermark)
	}
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.DrainPoll == 0 {
		c.DrainPoll = DefaultDrainPoll
	}
	if c.Tick < time.Millisecond || c.DrainPoll < 100*time.Microsecond {
		return fmt.Errorf("reactor: tick %v or drain poll %v is too fine", c.Tick, c.DrainPoll)
	}
	if c.BufferBudget < 0 {
		return fmt.Errorf("reactor: buffer budget %d bytes is negative", c.BufferBudget)
	}
	if c.MaxConns < 0 || c.FDsPerConn < 0 || c.FDReserve < 0 {
		return fmt.Errorf("reactor: max conns %d, descriptors per conn %d and descriptor reserve %d must not be negative",
			c.MaxConns, c.FDsPerConn, c.FDReserve)
	}
	if c.FDsPerConn == 0 {
		c.FDsPerConn = 1
	}
	if c.FDReserve == 0 {
		c.FDReserve = DefaultFDReserve
	}
	for _, a := range c.Addrs {
		if network, _ := acceptor.SplitAddr(a); network != "tcp" && network != "tcp4" && network != "tcp6" && network != "unix" {
			return fmt.Errorf("reactor: listen address %q: network %q is not tcp, tcp4, tcp6 or unix", a, network)
		}
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.Linger < 0 {
		return fmt.Errorf("reactor: linger %v is negative", c.Linger)
	}
	return nil
}
