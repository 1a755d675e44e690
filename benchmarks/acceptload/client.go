package acceptload

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tidegate/tidegate/benchmarks/harness"
	"github.com/tidegate/tidegate/protocol/tlv"
)

// Defaults of the load.
const (
	DefaultConns    = 20000
	DefaultParallel = 8
	DefaultBody     = 16
	DefaultTimeout  = 5 * time.Second
	// requestType is the message type of every request (keep-alive bit clear).
	requestType = 1
	// keptErrors is how many error messages a Result keeps.
	keptErrors = 5
)

// LoadConfig is one run of short connections.
type LoadConfig struct {
	// Addr is the server's host:port.
	Addr string
	// Conns is N, the connections made in all.
	Conns int
	// Parallel is P, the workers each making one connection after another.
	Parallel int
	// Body is the request body size in bytes (at least 8: the body carries
	// the connection's number).
	Body int
	// Timeout bounds each connection, from the start of its connect to EOF.
	Timeout time.Duration
	// Format is the TLV layout; zero means tlv.DefaultFormat.
	Format tlv.Format
}

// Result is what one run measured.
type Result struct {
	// Conns is the connections attempted, OK those served right.
	Conns int `json:"conns"`
	OK    int `json:"ok"`
	// Errors counts failed connections, Timeouts those of them that ran
	// out of time; FirstErrors keeps the first few messages.
	Errors      int      `json:"errors"`
	Timeouts    int      `json:"timeouts"`
	FirstErrors []string `json:"first_errors,omitempty"`
	// Elapsed is from the first connect to the last close.
	Elapsed     time.Duration `json:"elapsed_ns"`
	ConnsPerSec float64       `json:"conns_per_sec"`
	// Latency of the connections served right, connect start to the last
	// response byte, in microseconds.
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// Failed reports whether any connection failed or none was attempted.
func (r Result) Failed() bool { return r.Errors > 0 || r.Conns == 0 || r.OK != r.Conns }

// withDefaults fills the zero fields and checks the rest.
func (c LoadConfig) withDefaults() (LoadConfig, error) {
	c.Conns = cmp.Or(c.Conns, DefaultConns)
	c.Parallel = cmp.Or(c.Parallel, DefaultParallel)
	c.Body = cmp.Or(c.Body, DefaultBody)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Format = cmp.Or(c.Format, tlv.DefaultFormat)
	switch {
	case c.Addr == "":
		return c, errors.New("acceptload: no server address")
	case c.Conns < 1:
		return c, fmt.Errorf("acceptload: connections %d: want at least 1", c.Conns)
	case c.Parallel < 1:
		return c, fmt.Errorf("acceptload: parallel %d: want at least 1", c.Parallel)
	case c.Body < 8:
		return c, fmt.Errorf("acceptload: body %d bytes: want at least 8 (it carries the connection number)", c.Body)
	case c.Timeout < 0:
		return c, fmt.Errorf("acceptload: timeout %v is negative", c.Timeout)
	}
	if err := c.Format.Validate(); err != nil {
		return c, fmt.Errorf("acceptload: %w", err)
	}
	if c.Body > c.Format.MaxBody {
		return c, fmt.Errorf("acceptload: body %d bytes is over the format's limit of %d", c.Body, c.Format.MaxBody)
	}
	return c, nil
}

// Request returns the request of connection i: a frame without the
// keep-alive bit whose body starts with i and is filled with a pattern of
// i. The echo server answers with the same bytes.
func Request(f tlv.Format, i, body int) []byte {
	b := make([]byte, body)
	b = b[:copy(b, fmt.Sprintf("%08x", uint32(i)))]
	for len(b) < body {
		b = append(b, 'a'+byte((i+len(b))%26))
	}
	return f.AppendFrame(nil, tlv.Header{Type: requestType}, b)
}

// StepError is a connection that failed: the step (connect, write, read
// response, read EOF) and why.
type StepError struct {
	Conn int
	Step string
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("connection %d: %s: %v", e.Conn, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// connectOnce makes connection i: connect, write req, read the response
// (want), read EOF, close. It returns the time from the start of the
// connect to the last byte of the response.
func connectOnce(addr string, i int, req []byte, timeout time.Duration, buf []byte) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, &StepError{Conn: i, Step: "connect to " + addr, Err: err}
	}
	defer c.Close()
	if err := c.SetDeadline(deadline); err != nil {
		return 0, &StepError{Conn: i, Step: "set deadline", Err: err}
	}
	if _, err := c.Write(req); err != nil {
		return 0, &StepError{Conn: i, Step: "write request", Err: err}
	}
	got := buf[:len(req)]
	if n, err := io.ReadFull(c, got); err != nil {
		return 0, &StepError{Conn: i, Step: fmt.Sprintf("read response (%d of %d bytes)", n, len(req)), Err: err}
	}
	latency := time.Since(start)
	if !bytes.Equal(got, req) {
		j := 0
		for got[j] == req[j] {
			j++
		}
		return 0, &StepError{Conn: i, Step: "check response",
			Err: fmt.Errorf("byte %d is %#02x, want %#02x (response %q, request %q)", j, got[j], req[j], got, req)}
	}
	n, err := c.Read(buf[:1])
	switch {
	case n > 0:
		return 0, &StepError{Conn: i, Step: "read EOF", Err: fmt.Errorf("byte %#02x after the response; the server must close", buf[0])}
	case err == nil:
		return 0, &StepError{Conn: i, Step: "read EOF", Err: errors.New("read returned nothing and no error")}
	case !errors.Is(err, io.EOF):
		return 0, &StepError{Conn: i, Step: "read EOF", Err: err}
	}
	return latency, nil
}

// tally is what the workers share.
type tally struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	ok       int
	errors   int
	timeouts int
	first    []string
}

func (t *tally) add(h *hdrhistogram.Histogram, ok int, errs []error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hist.Merge(h)
	t.ok += ok
	for _, err := range errs {
		t.errors++
		if harness.IsTimeout(err) {
			t.timeouts++
		}
		if len(t.first) < keptErrors {
			t.first = append(t.first, err.Error())
		}
	}
}

// Run makes cfg.Conns connections with cfg.Parallel workers and measures
// them. The error is for a configuration that cannot run or a canceled
// ctx; failed connections are counted in the Result (see Result.Failed).
func Run(ctx context.Context, cfg LoadConfig) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	t := &tally{hist: harness.NewLatencyHistogram()}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := harness.NewLatencyHistogram()
			buf := make([]byte, cfg.Format.HeaderLen()+cfg.Body)
			ok := 0
			var errs []error
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Conns {
					break
				}
				lat, err := connectOnce(cfg.Addr, i, Request(cfg.Format, i, cfg.Body), cfg.Timeout, buf)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				ok++
				_ = h.RecordValue(max(int64(lat), 1_000))
			}
			t.add(h, ok, errs)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("acceptload: run against %s interrupted after %d connections: %w", cfg.Addr, t.ok+t.errors, err)
	}
	r := Result{Conns: cfg.Conns, OK: t.ok, Errors: t.errors, Timeouts: t.timeouts, FirstErrors: t.first, Elapsed: elapsed}
	if elapsed > 0 {
		r.ConnsPerSec = float64(t.ok) / elapsed.Seconds()
	}
	if t.ok > 0 {
		r.P50Us = float64(t.hist.ValueAtQuantile(50)) / 1e3
		r.P99Us = float64(t.hist.ValueAtQuantile(99)) / 1e3
		r.MaxUs = float64(t.hist.Max()) / 1e3
	}
	return r, nil
}
