package storm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/benchmarks/sockopt"
)

// heldMessage and stormMessage are the sizes of the checked messages a held
// session and a storm connection send: each is unique to its connection and
// (held) sequence number, so a byte from another connection or an old echo
// is caught.
const (
	heldMessage  = 64
	stormMessage = 32
)

// message returns size bytes starting with the tag, id and sequence number,
// filled with a pattern of id and seq.
func message(tag byte, id, seq, size int) []byte {
	b := fmt.Appendf(make([]byte, 0, size), "%c%d:%d:", tag, id, seq)
	for i := len(b); i < size; i++ {
		b = append(b, 'a'+byte((id+seq+i)%26))
	}
	return b[:size]
}

// echo writes msg on c and reads it back; it returns when the first echoed
// byte arrived. The error says which step failed; a wrong byte is errWrongEcho.
func echo(c net.Conn, msg []byte, deadline time.Time) (first time.Time, err error) {
	if err := c.SetDeadline(deadline); err != nil {
		return first, fmt.Errorf("setting the deadline: %w", err)
	}
	if _, err := c.Write(msg); err != nil {
		return first, &stepError{step: "write", err: err}
	}
	got := make([]byte, len(msg))
	n, err := io.ReadAtLeast(c, got, 1)
	if err != nil {
		return first, &stepError{step: "read", err: err}
	}
	first = time.Now()
	if _, err := io.ReadFull(c, got[n:]); err != nil {
		return first, &stepError{step: "read", err: err}
	}
	if !bytes.Equal(got, msg) {
		return first, fmt.Errorf("%w: sent %q, got %q", errWrongEcho, msg, got)
	}
	return first, nil
}

// errWrongEcho is an echo that differs from what was sent.
var errWrongEcho = errors.New("wrong echo")

// stepError is a failed write or read of an echo.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// Outcome is what became of one storm connection.
type Outcome int

// The outcomes of a storm connection. Every connection has exactly one.
const (
	// Accepted: connected and its message was echoed whole and right
	// within the deadline.
	Accepted Outcome = iota
	// Refused: the connect was refused (RST to the SYN: no listener), or
	// the connection was reset or closed before the echo was complete.
	Refused
	// TimedOut: no connection, or no complete echo, within the deadline
	// (HAProxy's answer at maxconn: the client waits in the backlog).
	TimedOut
	// Errored: anything else, a fault of the measurement rather than an
	// answer of the proxy: a wrong echo, the client out of descriptors or
	// ports, an unexpected error. A run with one is invalid.
	Errored
)

func (o Outcome) String() string {
	return [...]string{"accepted", "refused", "timed out", "errored"}[o]
}

// Classify turns the error of a storm connection's connect (dialErr) or of
// its echo (echoErr) into its outcome and a reason without addresses, so
// that reasons group. Both nil is Accepted.
func Classify(dialErr, echoErr error) (Outcome, string) {
	switch err := dialErr; {
	case err == nil:
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused, "connect refused"
	case errors.Is(err, syscall.ECONNRESET):
		return Refused, "reset during connect"
	case harness.IsTimeout(err):
		return TimedOut, "no connection"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return Errored, "client out of descriptors"
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return Errored, "client out of local ports"
	default:
		return Errored, "connect: " + err.Error()
	}
	switch err := echoErr; {
	case err == nil:
		return Accepted, ""
	case errors.Is(err, errWrongEcho):
		return Errored, "wrong echo"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Refused, "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Refused, "closed"
	case harness.IsTimeout(err):
		return TimedOut, "no echo"
	default:
		return Errored, "echo: " + err.Error()
	}
}

// StormConfig is one connection storm.
type StormConfig struct {
	// Addr is the proxy.
	Addr string
	// Count is the number of connections fired.
	Count int
	// Parallel bounds the connections in progress at once; 0 fires all of
	// them together.
	Parallel int
	// Sources are the local addresses connections are spread over.
	Sources []net.IP
	// Timeout bounds each connection from the start of its connect to the
	// last byte of its echo.
	Timeout time.Duration
}

// StormResult is what a storm measured. Accepted + Refused + TimedOut +
// Errored = Count.
type StormResult struct {
	Count    int `json:"count"`
	Accepted int `json:"accepted"`
	Refused  int `json:"refused"`
	TimedOut int `json:"timed_out"`
	Errored  int `json:"errored"`
	// Reasons counts the refusals, time-outs and errors by reason, such as
	// "refused: reset".
	Reasons map[string]int `json:"reasons,omitempty"`
	// Accept latency of the accepted connections: from the start of the
	// connect to the first echoed byte, which the proxy sends only once it
	// has accepted the client, connected the backend and relayed both ways.
	AcceptP50Ms float64 `json:"accept_p50_ms"`
	AcceptP99Ms float64 `json:"accept_p99_ms"`
	AcceptMaxMs float64 `json:"accept_max_ms"`
	// Connect latency of the accepted connections: from the start of the
	// connect to its completion, which the kernel answers from the
	// listener's backlog before the proxy accepts.
	ConnectP50Ms float64 `json:"connect_p50_ms"`
	ConnectP99Ms float64 `json:"connect_p99_ms"`
	// Seconds is the storm's wall time, from firing to the last outcome.
	Seconds float64 `json:"seconds"`
}

// Sum returns Accepted + Refused + TimedOut + Errored.
func (r *StormResult) Sum() int { return r.Accepted + r.Refused + r.TimedOut + r.Errored }

// SortedReasons returns the reasons, most frequent first.
func (r *StormResult) SortedReasons() []string { return harness.ByCount(r.Reasons) }

// StormRun is a fired storm: its result and the connections that were
// served, kept open until Close so that they hold their place in the proxy.
type StormRun struct {
	Result *StormResult
	served []net.Conn
}

// Close closes the served connections.
func (s *StormRun) Close() {
	for _, c := range s.served {
		c.Close()
	}
	s.served = nil
}

// Storm fires the connections and returns once every one has its outcome.
// Each connects, writes its message and waits for the echo; a served
// connection stays open (see StormRun.Close), the others are closed.
func Storm(ctx context.Context, cfg StormConfig) (*StormRun, error) {
	if cfg.Count < 1 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("storm: count %d and timeout %v must be positive", cfg.Count, cfg.Timeout)
	}
	parallel := cfg.Parallel
	if parallel <= 0 || parallel > cfg.Count {
		parallel = cfg.Count
	}
	type outcome struct {
		o                Outcome
		reason           string
		connect, firstAt time.Duration
		c                net.Conn
	}
	outs := make([]outcome, cfg.Count)
	next := make(chan int, cfg.Count)
	for i := range cfg.Count {
		next <- i
	}
	close(next)
	fire := make(chan struct{})
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-fire
			for i := range next {
				t0 := time.Now()
				deadline := t0.Add(cfg.Timeout)
				dctx, cancel := context.WithDeadline(ctx, deadline)
				c, err := sockopt.SourceDialer(cfg.Sources, i).DialContext(dctx, "tcp", cfg.Addr)
				cancel()
				out := &outs[i]
				if err != nil {
					out.o, out.reason = Classify(err, nil)
					continue
				}
				out.connect = time.Since(t0)
				first, err := echo(c, message('S', i, 0, stormMessage), deadline)
				out.o, out.reason = Classify(nil, err)
				if out.o != Accepted {
					c.Close()
					continue
				}
				c.SetDeadline(time.Time{})
				out.firstAt, out.c = first.Sub(t0), c
			}
		}()
	}
	start := time.Now()
	close(fire)
	wg.Wait()
	res := &StormResult{Count: cfg.Count, Reasons: map[string]int{}, Seconds: time.Since(start).Seconds()}
	run := &StormRun{Result: res}
	var accept, connect []time.Duration
	for _, o := range outs {
		switch o.o {
		case Accepted:
			res.Accepted++
			accept, connect = append(accept, o.firstAt), append(connect, o.connect)
			run.served = append(run.served, o.c)
			continue
		case Refused:
			res.Refused++
		case TimedOut:
			res.TimedOut++
		case Errored:
			res.Errored++
		}
		res.Reasons[o.o.String()+": "+o.reason]++
	}
	slices.Sort(accept)
	slices.Sort(connect)
	res.AcceptP50Ms, res.AcceptP99Ms = harness.Ms(harness.Percentile(accept, 50)), harness.Ms(harness.Percentile(accept, 99))
	res.AcceptMaxMs = harness.Ms(harness.Percentile(accept, 100))
	res.ConnectP50Ms, res.ConnectP99Ms = harness.Ms(harness.Percentile(connect, 50)), harness.Ms(harness.Percentile(connect, 99))
	if err := ctx.Err(); err != nil {
		run.Close()
		return nil, fmt.Errorf("storm on %s interrupted: %w", cfg.Addr, err)
	}
	return run, nil
}

// HeldConfig is the set of sessions held through a storm.
type HeldConfig struct {
	// Addr is the proxy.
	Addr string
	// Count sessions are opened, Parallel at a time.
	Count, Parallel int
	// Sources are the local addresses sessions are spread over.
	Sources []net.IP
	// Interval is the pause between two echoes of one session.
	Interval time.Duration
	// Timeout bounds each connect and each echo.
	Timeout time.Duration
}

// HeldResult is what became of the held sessions.
type HeldResult struct {
	Count int `json:"count"`
	// Lost sessions failed an echo (error, close, reset, time-out or
	// wrong bytes) at some point; each is counted once.
	Lost int `json:"lost"`
	// Echoes is the number of verified echoes over all sessions.
	Echoes int64 `json:"echoes"`
	// Reasons counts the lost sessions by what failed first.
	Reasons map[string]int `json:"reasons,omitempty"`
}

// Held is a set of open sessions, each echoing a checked message every
// Interval until Stop.
type Held struct {
	cfg      HeldConfig
	sessions []*heldSession
	stop     chan struct{}
	wg       sync.WaitGroup
}

type heldSession struct {
	id     int
	c      net.Conn
	echoes int64
	lost   string
}

// OpenHeld opens cfg.Count sessions, checks one echo on each and starts
// their echo loops. A session that cannot be opened is an error: the held
// sessions are below the proxy's limit by design.
func OpenHeld(ctx context.Context, cfg HeldConfig) (*Held, error) {
	if cfg.Count < 1 || cfg.Timeout <= 0 || cfg.Interval <= 0 {
		return nil, fmt.Errorf("held sessions: count %d, timeout %v and interval %v must be positive", cfg.Count, cfg.Timeout, cfg.Interval)
	}
	h := &Held{cfg: cfg, stop: make(chan struct{})}
	h.sessions = make([]*heldSession, cfg.Count)
	errs := make([]error, cfg.Count)
	// Every session is tried, so that the error names each one that failed.
	stopped := harness.Each(ctx, cfg.Count, cfg.Parallel, func(i int) error {
		deadline := time.Now().Add(cfg.Timeout)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := sockopt.SourceDialer(cfg.Sources, i).DialContext(dctx, "tcp", cfg.Addr)
		cancel()
		if err != nil {
			errs[i] = fmt.Errorf("held session %d: connect to %s: %w", i, cfg.Addr, err)
			return nil
		}
		if _, err := echo(c, message('H', i, 0, heldMessage), deadline); err != nil {
			c.Close()
			errs[i] = fmt.Errorf("held session %d: first echo through %s: %w", i, cfg.Addr, err)
			return nil
		}
		h.sessions[i] = &heldSession{id: i, c: c, echoes: 1}
		return nil
	})
	if err := errors.Join(stopped, errors.Join(errs...)); err != nil {
		h.closeAll()
		return nil, err
	}
	for _, s := range h.sessions {
		h.wg.Add(1)
		go h.loop(s)
	}
	return h, nil
}

// loop echoes on s every Interval (the first after an offset that spreads
// the sessions over one interval) until stop, then echoes once more.
func (h *Held) loop(s *heldSession) {
	defer h.wg.Done()
	wait := time.NewTimer(h.cfg.Interval * time.Duration(s.id) / time.Duration(len(h.sessions)))
	defer wait.Stop()
	for seq := 1; ; seq++ {
		final := false
		select {
		case <-wait.C:
		case <-h.stop:
			final = true
		}
		if _, err := echo(s.c, message('H', s.id, seq, heldMessage), time.Now().Add(h.cfg.Timeout)); err != nil {
			_, reason := Classify(nil, err)
			s.lost = reason
			return
		}
		s.echoes++
		if final {
			return
		}
		wait.Reset(h.cfg.Interval)
	}
}

// Stop ends the echo loops, each after one last checked echo, closes the
// sessions and returns what became of them.
func (h *Held) Stop() HeldResult {
	close(h.stop)
	h.wg.Wait()
	h.closeAll()
	r := HeldResult{Count: len(h.sessions), Reasons: map[string]int{}}
	for _, s := range h.sessions {
		r.Echoes += s.echoes
		if s.lost != "" {
			r.Lost++
			r.Reasons[s.lost]++
		}
	}
	return r
}

func (h *Held) closeAll() {
	for _, s := range h.sessions {
		if s != nil {
			s.c.Close()
		}
	}
}

// NewSession reports whether addr serves a new session: a connect and one
// checked echo, each attempt bounded by attempt, tried again every 100 ms
// until within passes. It returns the attempts made and, when it failed,
// the last attempt's error.
func NewSession(ctx context.Context, addr string, within, attempt time.Duration) (ok bool, attempts int, err error) {
	end := time.Now().Add(within)
	for {
		attempts++
		deadline := time.Now().Add(attempt)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		var c net.Conn
		c, err = (&net.Dialer{}).DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			_, err = echo(c, message('N', attempts, 0, stormMessage), deadline)
			c.Close()
			if err == nil {
				return true, attempts, nil
			}
		}
		if ctx.Err() != nil || time.Now().Add(100*time.Millisecond).After(end) {
			return false, attempts, fmt.Errorf("new session through %s, attempt %d: %w", addr, attempts, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
