package delayq

import (
	"fmt"
	"os"
	"syscall"
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
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte
}

// NewSleeper returns a sleeper; Close releases its descriptor.
func NewSleeper() (*Sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("delayq: timerfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "delayq-timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delayq: timerfd %d: %w", fd, err)
	}
	return &Sleeper{f: f, rc: rc}, nil
}

func (s *Sleeper) sleep(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	var serr error
	// Control holds the descriptor open while it runs, so a concurrent
	// Close cannot hand its number to another file meanwhile.
	if err := s.rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), 0, &spec, nil) }); err != nil {
		return fmt.Errorf("delayq: arming the timerfd for %v: %w", d, err)
	}
	if serr != nil {
		return fmt.Errorf("delayq: timerfd_settime %v: %w", d, serr)
	}
	if _, err := s.f.Read(s.buf[:]); err != nil {
		return fmt.Errorf("delayq: waiting %v on the timerfd: %w", d, err)
	}
	return nil
}

// Close releases the descriptor and wakes a SleepUntil in progress, which
// returns an error.
func (s *Sleeper) Close() error { return s.f.Close() }
