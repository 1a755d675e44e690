package delayq

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Sleeper waits for points in time. On Linux it arms a timerfd that the Go
// netpoller watches, so it wakes within microseconds of the deadline: a Go
// timer may wake up to a millisecond late when the process is idle, since
// the runtime's epoll_wait takes its timeout in whole milliseconds, and
// that is the size of the holds an emulated RTT of a few milliseconds
// needs. One goroutine at a time may sleep on a Sleeper.
type Sleeper struct {
	fd  int
	f   *os.File
	buf [8]byte
}

// NewSleeper returns a sleeper; Close releases its descriptor.
func NewSleeper() (*Sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("delayq: timerfd_create: %w", err)
	}
	return &Sleeper{fd: fd, f: os.NewFile(uintptr(fd), "delayq-timerfd")}, nil
}

func (s *Sleeper) sleep(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		if errors.Is(err, unix.EBADF) {
			return os.ErrClosed
		}
		return fmt.Errorf("delayq: timerfd_settime %v: %w", d, err)
	}
	if _, err := s.f.Read(s.buf[:]); err != nil {
		return fmt.Errorf("delayq: waiting %v on the timerfd: %w", d, err)
	}
	return nil
}

// Close releases the descriptor and wakes a SleepUntil in progress, which
// returns an error.
func (s *Sleeper) Close() error { return s.f.Close() }
