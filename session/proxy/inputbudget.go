package proxy

import (
	"github.com/tidegate/tidegate/reactor/bufferbudget"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Input held before routing. A connection that has not reached its
// backend keeps its unread input in gnet's inbound buffer, which no
// watermark bounds: 1,000 connections each holding most of a 64 KiB
// handshake frame took 65 MB (issue #26 item 6). So the proxy reads no
// more than a frame can need: a handshake or Login Start frame that
// declares more than the largest one (mc.MaxHandshakeBody,
// mc.MaxLoginStartBody) is refused at once as bad_frame, not waited for;
// and what a session does hold until it relays is counted against
// limits.buffer_budget (reactor.Loop.AccountInput). While the process is
// over the budget, new connections are refused at accept (admit) and a
// session whose held input grows is refused, both as buffer_budget.

// accountInput brings the input the session holds before relaying (if it
// is not done) up to date in the process's buffer budget, and refuses the
// session when its input grew while the process is over the budget.
func (s *session) accountInput() {
	pre, c := s.pre, s.client
	if pre == nil || s.state == stDone {
		return
	}
	n := bufferbudget.InputFootprint(c.InboundBuffered())
	d := n - pre.heldInput
	if d == 0 {
		return
	}
	c.Loop().AccountInput(d)
	pre.heldInput = n
	if d > 0 && c.Loop().OverBudget() {
		s.reject(reasons.BufferBudget, nil)
	}
}

// dropPre drops what the session needed only until it relays, giving the
// input it held back to the budget.
func (s *session) dropPre() {
	s.releaseInput()
	s.pre = nil
}

// releaseInput gives the input the session held back to the budget. A
// closed session keeps pre: callbacks already queued for it (a take-over's
// goAhead, a verdict) still read it.
func (s *session) releaseInput() {
	if s.pre != nil && s.pre.heldInput != 0 {
		s.client.Loop().AccountInput(-s.pre.heldInput)
		s.pre.heldInput = 0
	}
}
