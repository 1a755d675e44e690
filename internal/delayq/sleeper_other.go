//go:build !linux

package delayq

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Sleeper waits for points in time. Outside Linux it is a Go timer, which
// may wake up to a millisecond or so late. One goroutine at a time may
// sleep on a Sleeper.
type Sleeper struct {
	t      *time.Timer
	once   sync.Once
	closed chan struct{}
}

// NewSleeper returns a sleeper; Close ends it.
func NewSleeper() (*Sleeper, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Sleeper{t: t, closed: make(chan struct{})}, nil
}

func (s *Sleeper) sleep(d time.Duration) error {
	s.t.Reset(d)
	select {
	case <-s.t.C:
		return nil
	case <-s.closed:
		s.t.Stop()
		return fmt.Errorf("delayq: waiting %v: %w", d, os.ErrClosed)
	}
}

// Close wakes a SleepUntil in progress, which returns an error.
func (s *Sleeper) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
