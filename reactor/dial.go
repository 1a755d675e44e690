package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/reactor/workerpool"

	"github.com/panjf2000/gnet/v2"
)

// DialError reports an outbound connection that could not be made.
type DialError struct {
	Addr    string
	Timeout bool
	// Local is true when the failure is this process's, not the peer's: no
	// descriptor or memory left, the dial queue full, the server stopping.
	// Such a failure says nothing about the peer's health.
	Local bool
	Err   error
}

// Error implements the error interface.
func (e *DialError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("dial %s: timed out", e.Addr)
	}
	// net.Dial's errors name the operation and the address already ("dial
	// tcp 127.0.0.1:25565: connect: connection refused"); a second "dial
	// ADDR:" in front would read as two failures.
	if msg := e.Err.Error(); strings.Contains(msg, e.Addr) {
		return msg
	}
	return fmt.Sprintf("dial %s: %v", e.Addr, e.Err)
}

// Unwrap returns the underlying error.
func (e *DialError) Unwrap() error { return e.Err }

// Dial connects to the TCP address addr and registers the connection on this
// loop, so that it and the connection that asked for it share a loop and
// need no locks. It returns at once; h.OnOpen runs when the connection is
// up, or h.OnClose with a *DialError when it cannot be made within timeout.
// Until OnOpen the Conn exists but cannot be written; Close cancels it
// (without an OnClose).
//
// The connect itself (net.Dial, then gnet's Enroll onto this loop) runs on
// the server's bounded pool of dial goroutines, not a goroutine per dial.
func (l *Loop) Dial(addr string, timeout time.Duration, h Handler, value any) *Conn {
	c := newConn(l, h)
	c.state |= stateOutbound
	c.Value = value
	// The deadline lives in c's aux, which goes once the connection opens.
	a := c.more()
	a.dialTimer.F = func() { l.dialFailed(c, &DialError{Addr: addr, Timeout: true}) }
	l.Schedule(&a.dialTimer, timeout)
	if !l.srv.dialer.Submit(dialJob{l: l, c: c, addr: addr, deadline: time.Now().Add(timeout)}) {
		// Not from here: the caller is still setting up around the Conn.
		_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Local: true, Err: errDialQueueFull}) })
	}
	return c
}

var errDialQueueFull = errors.New("too many connects in progress")

// Bounds of the dial pool.
const (
	maxDialWorkers  = 128
	dialQueueLength = 4096
	dialWorkerIdle  = 5 * time.Second
)

// dialJob is one connect for the dial pool.
type dialJob struct {
	l        *Loop
	c        *Conn
	addr     string
	deadline time.Time // the connect's, from its Dial (also the loop's timer)
}

// newDialPool returns the pool a server's dials run on.
func newDialPool() *workerpool.Pool[dialJob] {
	return workerpool.New[dialJob]("reactor: dial", maxDialWorkers, dialQueueLength, dialWorkerIdle)
}

// Run connects and hands the connection to gnet on the job's loop; it stops
// waiting for gnet's registration when stop closes (the loop may be gone).
func (j dialJob) Run(stop <-chan struct{}) {
	l, c, addr := j.l, j.c, j.addr
	if time.Now().After(j.deadline) { // timed out in the queue (soak-hour-2.md: stale dials took every worker)
		return // the loop's timer tells the handler
	}
	// KeepAlive -1: Go would otherwise make four system calls on every
	// backend connect (HAProxy's default sets none); a dead backend ends its
	// sessions through limits.idle_timeout (or, with it off, nothing, as for
	// a vanished client, whose accepted socket has no keep-alive either).
	d := net.Dialer{Deadline: j.deadline, KeepAlive: -1}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Local: isLocalDialError(err), Err: err}) })
		return
	}
	res, err := l.el.Enroll(gnet.NewContext(context.Background(), c), nc)
	if err != nil {
		_ = nc.Close()
		_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Local: true, Err: err}) })
		return
	}
	select {
	case r := <-res:
		if r.Err != nil {
			_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Local: true, Err: r.Err}) })
		}
	case <-stop:
	}
}

// isLocalDialError reports whether a connect failed for want of this
// process's resources rather than because of the peer.
func isLocalDialError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL:
		return true
	}
	return false
}

// dialFailed runs on the loop when a dial times out or fails. A dial that
// times out but connects later is closed in OnOpen.
func (l *Loop) dialFailed(c *Conn, err *DialError) {
	if c.gc != nil || c.state&(stateClosed|stateCanceled) != 0 {
		return
	}
	c.stopDial()
	c.state |= stateClosed | stateCanceled
	l.stats.DialFailed.Add(1)
	c.handler.OnClose(c, err)
}
