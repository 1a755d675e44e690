package harness

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The load tools' latency histograms cover 1 µs (LatencyLowest) to 60 s at
// 3 significant digits, in ns; a sample below the range is recorded as
// LatencyLowest.
const (
	LatencyLowest  = 1_000
	latencyHighest = 60_000_000_000
	latencyDigits  = 3
)

// NewLatencyHistogram returns an empty latency histogram, in ns.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LatencyLowest, latencyHighest, latencyDigits)
}

// PhaseHooks are called around the measured interval of a load phase,
// after every connection has connected and warmed up, and after the last
// reply.
type PhaseHooks struct {
	// Start, if set, runs before the first connection is made.
	Start func()
	// LoggedIn, if set, runs once every connection has logged in, before
	// the load starts (a phase whose connections log in first).
	LoggedIn func()
	// Before and After, if set, run at the start and the end of the
	// measured interval; an error they return fails the phase.
	Before, After func() error
	// Progress, if set, is called about every 100 ms with the replies
	// received so far and the phase's total, warmup included.
	Progress func(done, total int64)
}

// ErrStalled fails a load phase that made no progress for its stall
// timeout.
var ErrStalled = errors.New("no echo for the stall timeout")

// Ms converts d to milliseconds, the unit of the reports' durations.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// IsTimeout reports whether err is a deadline that passed: a connection's
// (os.ErrDeadlineExceeded, a net.Error that says so) or a context's. The
// load clients count such failures apart from refusals and errors.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
