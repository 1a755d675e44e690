package acceptor

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// errnoCounter counts errors by errno name.
type errnoCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

// count counts err under its errno name.
func (e *errnoCounter) count(err error) {
	name := errnoName(err)
	e.mu.Lock()
	if e.counts == nil {
		e.counts = map[string]int64{}
	}
	e.counts[name]++
	e.mu.Unlock()
}

// snapshot returns the counts so far, by errno name.
func (e *errnoCounter) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.counts))
	for k, v := range e.counts {
		out[k] = v
	}
	return out
}

// errnoName names the errno inside err (EMFILE, ENFILE, ...), or "other".
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := errnoNames[errno]; n != "" {
			return n
		}
		return fmt.Sprintf("errno_%d", int(errno))
	}
	return "other"
}

var errnoNames = map[syscall.Errno]string{
	syscall.EMFILE:       "EMFILE",
	syscall.ENFILE:       "ENFILE",
	syscall.ENOBUFS:      "ENOBUFS",
	syscall.ENOMEM:       "ENOMEM",
	syscall.EPERM:        "EPERM",
	syscall.EPROTO:       "EPROTO",
	syscall.ECONNABORTED: "ECONNABORTED",
	syscall.ECONNRESET:   "ECONNRESET",
	syscall.EINVAL:       "EINVAL",
	syscall.EBADF:        "EBADF",
	syscall.ENOTSOCK:     "ENOTSOCK",
	syscall.EOPNOTSUPP:   "EOPNOTSUPP",
}

// rateLimitedLog passes at most one event a second to its logger; how many
// were held back is added to the next one.
type rateLimitedLog struct {
	log        zerolog.Logger
	last       atomic.Int64 // unix nanoseconds of the last event passed
	suppressed atomic.Int64
}

// Warn returns an event at warn level, or nil (which zerolog ignores) when
// an event passed less than a second ago.
func (r *rateLimitedLog) Warn() *zerolog.Event { return r.event(zerolog.WarnLevel) }

// Info is like Warn at info level.
func (r *rateLimitedLog) Info() *zerolog.Event { return r.event(zerolog.InfoLevel) }

// Error is like Warn at error level.
func (r *rateLimitedLog) Error() *zerolog.Event { return r.event(zerolog.ErrorLevel) }

func (r *rateLimitedLog) event(level zerolog.Level) *zerolog.Event {
	now := time.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(time.Second) || !r.last.CompareAndSwap(last, now) {
		r.suppressed.Add(1)
		return nil
	}
	ev := r.log.WithLevel(level)
	if n := r.suppressed.Swap(0); n > 0 {
		ev = ev.Int64("suppressed", n)
	}
	return ev
}
