package peers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/benchmarks/connset"
)

// errTooManyFiles is accept's error when the process is out of descriptors;
// the relay waits and retries, as net/http does.
var errTooManyFiles = syscall.EMFILE

// DefaultGoRelayDialTimeout is GoRelay's backend connect timeout when
// DialTimeout is 0.
const DefaultGoRelayDialTimeout = 5 * time.Second

// GoRelay is Go's idiomatic TCP relay: one goroutine per direction of each
// session, each running io.Copy (which splices on Linux). It is the design
// tidegate is measured against, kept as plain as the proxies that use it
// (Gate lite mode, Infrared, mc-router).
type GoRelay struct {
	// Backend is the address every accepted connection is relayed to.
	Backend string
	// DialTimeout bounds the backend connect; 0 means DefaultGoRelayDialTimeout.
	DialTimeout time.Duration

	ln       net.Listener
	conns    connset.Set // every session's client and backend connections, and its goroutine
	accepted atomic.Int64
	active   atomic.Int64
	failed   atomic.Int64
}

// GoRelayStats are the relay's counters.
type GoRelayStats struct {
	Accepted      int64 // client connections accepted
	Active        int64 // sessions open now
	ConnectFailed int64 // backend connects that failed
}

// Listen binds addr; Serve then relays what it accepts.
func (r *GoRelay) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("goproxy: listen %s: %w", addr, err)
	}
	r.ln = ln
	return nil
}

// Addr returns the bound listen address.
func (r *GoRelay) Addr() net.Addr { return r.ln.Addr() }

// Stats returns the relay's counters.
func (r *GoRelay) Stats() GoRelayStats {
	return GoRelayStats{Accepted: r.accepted.Load(), Active: r.active.Load(), ConnectFailed: r.failed.Load()}
}

// Serve accepts connections until Close and relays each to Backend. It
// returns nil after Close.
func (r *GoRelay) Serve() error {
	if r.ln == nil {
		return errors.New("goproxy: Serve before Listen")
	}
	timeout := r.DialTimeout
	timeout = cmp.Or(timeout, DefaultGoRelayDialTimeout)
	var delay time.Duration
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.conns.Closed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("goproxy: accept: %w", err)
		}
		delay = 0
		r.accepted.Add(1)
		if !r.conns.Go(c, func(c net.Conn) { r.session(c, timeout) }) {
			return nil
		}
	}
}

// Close stops accepting, closes every session and waits for their goroutines.
func (r *GoRelay) Close() error {
	r.conns.Close()
	var err error
	if r.ln != nil {
		err = r.ln.Close()
	}
	r.conns.Wait()
	return err
}

// session relays client to a new backend connection: one goroutine per
// direction. A direction that ends cleanly half-closes its destination; when
// either fails, or both have ended, both sockets close. (When it returns,
// connset.Set.Go takes client out of the set and closes it.)
func (r *GoRelay) session(client net.Conn, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	backend, err := (&net.Dialer{}).DialContext(ctx, "tcp", r.Backend)
	cancel()
	if err != nil {
		r.failed.Add(1)
		return
	}
	if !r.conns.Add(backend) {
		backend.Close()
		return
	}
	r.active.Add(1)
	done := make(chan struct{})
	go func() {
		if pipe(backend, client) != nil {
			closeBoth(client, backend)
		}
		close(done)
	}()
	if pipe(client, backend) != nil {
		closeBoth(client, backend)
	}
	<-done
	closeBoth(client, backend)
	r.conns.Remove(backend)
	r.active.Add(-1)
}

// closeBoth closes both sockets of a session, which ends any copy still
// blocked on either: a reset or failed write means the other direction
// cannot finish cleanly.
func closeBoth(a, b net.Conn) {
	a.Close()
	b.Close()
}

// pipe copies src to dst until src ends, then half-closes dst so the peer
// sees the end of the stream.
func pipe(dst, src net.Conn) error {
	_, err := io.Copy(dst, src)
	if err != nil {
		return err
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
