package reactor

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// DialError reports an outbound connection that could not be made.
type DialError struct {
	Addr    string
	Timeout bool
	Err     error
}

func (e *DialError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("dial %s: timed out", e.Addr)
	}
	return fmt.Sprintf("dial %s: %v", e.Addr, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// Dial connects to the TCP address addr and registers the connection on this
// loop, so that it and the connection that asked for it share a loop and
// need no locks. It returns at once; h.OnOpen runs when the connection is
// up, or h.OnClose with a *DialError when it cannot be made within timeout.
// Until OnOpen the Conn exists but cannot be written; Close cancels it
// (without an OnClose).
//
// The connect itself blocks a short-lived goroutine, as net.Dial does; the
// connection then lives on the loop like any accepted one.
func (l *Loop) Dial(addr string, timeout time.Duration, h Handler, value any) *Conn {
	c := newConn(l, h)
	c.state |= stateOutbound
	c.Value = value
	c.dialTimer.F = func() { l.dialFailed(c, &DialError{Addr: addr, Timeout: true}) }
	l.Schedule(&c.dialTimer, timeout)
	go func() {
		d := net.Dialer{Timeout: timeout}
		nc, err := d.Dial("tcp", addr)
		if err != nil {
			_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Err: err}) })
			return
		}
		res, err := l.el.Enroll(gnet.NewContext(context.Background(), c), nc)
		if err != nil {
			_ = nc.Close()
			_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Err: err}) })
			return
		}
		if r := <-res; r.Err != nil {
			_ = l.Execute(func() { l.dialFailed(c, &DialError{Addr: addr, Err: r.Err}) })
		}
	}()
	return c
}

// dialFailed runs on the loop when a dial times out or fails. A dial that
// times out but connects later is closed in OnOpen.
func (l *Loop) dialFailed(c *Conn, err *DialError) {
	if c.gc != nil || c.state&(stateClosed|stateCanceled) != 0 {
		return
	}
	l.timers.stop(&c.dialTimer)
	c.state |= stateClosed | stateCanceled
	l.stats.DialFailed.Add(1)
	c.handler.OnClose(c, err)
}
