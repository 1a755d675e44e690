package upgradeload

// This file holds what a trial watches besides the sessions: a quiet
// machine before it, a new session after the upgrade, the proxy's /healthz
// and the lines of its log.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/procstat"
)

// waitQuiet waits up to maxWait until the machine, over one second, is busy
// under quiet percent of one core (this tool is idle between trials). It
// returns how long it waited and the last figure.
func waitQuiet(ctx context.Context, maxWait time.Duration, quiet float64) (time.Duration, float64) {
	start := time.Now()
	for {
		a, err := procstat.MachineCPU()
		if err != nil || harness.Sleep(ctx, time.Second) != nil {
			return time.Since(start), -1
		}
		b, err := procstat.MachineCPU()
		if err != nil {
			return time.Since(start), -1
		}
		busy, idle := b.Busy-a.Busy, b.Idle-a.Idle
		pct := -1.0
		if busy+idle > 0 {
			pct = 100 * float64(busy) / float64(busy+idle) * float64(runtime.NumCPU())
		}
		if pct < quiet || time.Since(start) >= maxWait {
			return time.Since(start), pct
		}
	}
}

// newSession opens a session through the proxy at addr, sends three
// messages of session id and checks their echoes, trying again for up to
// timeout.
func newSession(addr string, id uint32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for attempt := 1; ; attempt++ {
		last = oneSession(addr, id, deadline)
		if last == nil || time.Now().Add(100*time.Millisecond).After(deadline) {
			if last != nil {
				return fmt.Errorf("%d attempts over %s, the last: %w", attempt, timeout, last)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func oneSession(addr string, id uint32, deadline time.Time) error {
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	var out, in [msgLen]byte
	for seq := uint32(0); seq < 3; seq++ {
		putMessage(out[:], id, seq)
		if _, err := c.Write(out[:]); err != nil {
			return fmt.Errorf("writing message %d: %w", seq, err)
		}
		if _, err := io.ReadFull(c, in[:]); err != nil {
			return fmt.Errorf("reading echo %d: %w", seq, err)
		}
		if in != out {
			return fmt.Errorf("echo %d arrived as % x, want % x", seq, in, out)
		}
	}
	return nil
}

// healthClient reads the pid from the proxy's /healthz, a new connection
// each time (harness.NoKeepAlive).
type healthClient struct{ c *http.Client }

func newHealthClient() *healthClient { return &healthClient{harness.NoKeepAlive(2 * time.Second)} }

func (h *healthClient) close() { h.c.CloseIdleConnections() }

// pid reads the "pid" field of http://addr/healthz (harness.HealthPID).
func (h *healthClient) pid(addr string) (int, error) {
	pid, _, err := harness.HealthPID(context.Background(), h.c, addr)
	return pid, err
}

// waitPID polls /healthz until it names a pid that ok accepts, or timeout.
func (h *healthClient) waitPID(addr string, timeout time.Duration, ok func(int) bool) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		pid, err := h.pid(addr)
		if err == nil && ok(pid) {
			return pid, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("it still says pid %d", pid)
			}
			return 0, fmt.Errorf("http://%s/healthz within %s: %w", addr, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logWatch looks for a message in the proxy's log as it grows.
type logWatch struct {
	found chan string
	quit  chan struct{}
	done  chan struct{}
}

// watchLog reports on found the first line of the log at path, from its
// current end on, that holds msg.
func watchLog(path, msg string) *logWatch {
	w := &logWatch{found: make(chan string, 1), quit: make(chan struct{}), done: make(chan struct{})}
	var from int64
	if st, err := os.Stat(path); err == nil {
		from = st.Size()
	}
	needle := []byte(msg)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			f, err := os.Open(path)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(io.NewSectionReader(f, from, 1<<30))
			f.Close()
			if i := bytes.Index(b, needle); i >= 0 {
				start := bytes.LastIndexByte(b[:i], '\n') + 1
				end := bytes.IndexByte(b[i:], '\n')
				if end < 0 {
					end = len(b) - i
				}
				w.found <- string(b[start : i+end])
				return
			}
		}
	}()
	return w
}

func (w *logWatch) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}

// pidWatch polls /healthz until another pid answers: every `every` from
// the signal on, or, with every 0, from begin on (the old process's exit).
type pidWatch struct {
	pid   atomic.Int64
	at    atomic.Int64 // since the signal, ns
	begin chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

// newPIDPoll is how often /healthz is polled once the old process is gone.
const newPIDPoll = 10 * time.Millisecond

func (h *healthClient) watchNewPID(addr string, old int, since time.Time, every time.Duration) *pidWatch {
	w := &pidWatch{begin: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{})}
	if every > 0 {
		close(w.begin)
	} else {
		every = newPIDPoll
	}
	go func() {
		defer close(w.done)
		select {
		case <-w.begin:
		case <-w.quit:
			return
		}
		for {
			if pid, err := h.pid(addr); err == nil && pid != old {
				w.at.Store(int64(time.Since(since)))
				w.pid.Store(int64(pid))
				return
			}
			select {
			case <-w.quit:
				return
			case <-time.After(every):
			}
		}
	}()
	return w
}

// start starts polling, if it has not.
func (w *pidWatch) start() {
	select {
	case <-w.begin:
	default:
		close(w.begin)
	}
}

// wait waits up to timeout for the new pid; 0 if none answered.
func (w *pidWatch) wait(timeout time.Duration) int64 {
	select {
	case <-w.done:
	case <-time.After(timeout):
	}
	return w.pid.Load()
}

func (w *pidWatch) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}
