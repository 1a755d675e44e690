package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/cluster"
)

// The new process's side of a live upgrade (the old one's is upgrade.go):
// it receives each session's state and sockets, registers both sockets on
// one loop, and goes on relaying where the old process left off.

// TakeOver receives sessions from the process at the other end of hc (which
// runs HandOver) and relays them, until that process ends its side of hc;
// it acknowledges each session it handled. It returns how many sessions it
// took.
func (p *Proxy) TakeOver(hc *handoverwire.Conn) (int, error) {
	// Each adoption waits for a loop to register both sockets, and the loops
	// are busy relaying the sessions already here: a few run at once.
	type msg struct {
		data  []byte
		files []*os.File
	}
	work := make(chan msg)
	var n, handled atomic.Int64
	acks := make(chan struct{}, 1)
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		var sent int64
		for range acks {
			if h := handled.Load(); h > sent {
				data, _ := json.Marshal(handoverAck{Handled: h})
				if hc.Send(data) != nil {
					return // the old process is gone; it needs no more
				}
				sent = h
			}
		}
	}()
	ack := func() {
		select {
		case acks <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	for range takeOverWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				if testHookTakeOverAdopt != nil {
					testHookTakeOverAdopt()
				}
				if err := p.adopt(m.data, m.files); err != nil {
					p.log.Error().Err(err).Msg("take-over: a session could not be adopted and is lost")
				} else {
					n.Add(1)
				}
				handled.Add(1)
				ack()
			}
		}()
	}
	var rerr error
	for {
		data, files, err := hc.Recv()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				rerr = err
			}
			break
		}
		work <- msg{data, files}
	}
	close(work)
	wg.Wait()
	acks <- struct{}{} // the last count, if it is not on its way yet
	close(acks)
	<-ackDone
	if rerr != nil {
		return int(n.Load()), fmt.Errorf("proxy: take-over after %d sessions: %w", n.Load(), rerr)
	}
	return int(n.Load()), nil
}

// testHookTakeOverAdopt, when a test sets it, runs in TakeOver before each
// session is adopted: a seam for faults while a session is on its way.
var testHookTakeOverAdopt func()

// takeOverWorkers is how many sessions TakeOver adopts at once: each waits
// for a round of its loop, so they overlap.
const takeOverWorkers = 256

// adopt registers one handed-over session.
func (p *Proxy) adopt(data []byte, files []*os.File) error {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var st handoverState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("session state: %w", err)
	}
	if len(files) != 2 {
		return fmt.Errorf("session of %s came with %d descriptors, want 2", st.IP, len(files))
	}
	cn, err := net.FileConn(files[0])
	if err != nil {
		return fmt.Errorf("client socket: %w", err)
	}
	defer cn.Close()
	bn, err := net.FileConn(files[1])
	if err != nil {
		return fmt.Errorf("backend socket: %w", err)
	}
	defer bn.Close()
	gen := p.cur()
	s := &session{p: p, gen: gen, ip: st.IP, state: stAdopting, adopted: true, raw: st.Raw, host: st.Host, username: st.User,
		opened: st.Opened, protocol: st.Protocol, c2s: st.C2S.scanner(), s2c: st.S2C.scanner(),
		pre: &preRelay{adoptIn: [2][]byte{st.ClientIn, st.BackendIn}, adoptOut: [2][]byte{st.ToClient, st.ToBackend},
			adoptTk: st.Cluster}}
	s.timer.F = s.onTimer
	if ap, err := netip.ParseAddrPort(st.Remote); err == nil {
		s.pp = &proxied{src: ap}
	}
	s.group = gen.router.groups[st.Group]
	if s.group == nil {
		s.group = &group{name: st.Group}
	}
	for _, b := range s.group.backends {
		if b.addr == st.Backend {
			s.target = b
		}
	}
	if s.target == nil { // no longer configured: counted on its own
		s.target = &backend{addr: st.Backend, group: s.group, backendHealth: &backendHealth{}}
	}
	_, _, err = p.rs.AdoptPair(cn, bn, (*clientHandler)(p), &p.backendSide, s, st.Listener, -1)
	return err
}

// adoptedClient is clientHandler.OnOpen for a handed-over session. Its two
// sockets open in either order; neither is read before both are open.
func (s *session) adoptedClient(c *reactor.Conn) {
	s.client = c
	s.p.admitAdopted(s.gen, s.ip)
	if tk := s.pre.adoptTk; tk != nil && s.p.cluster != nil {
		if sess, err := cluster.ParseRecord(tk.Record); err == nil {
			s.ticket = s.p.cluster.Adopt(tk.Token, sess, s)
		} else {
			s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("take-over: the session's cluster record is unreadable; it is not published")
		}
		s.pre.adoptTk = nil
	}
	s.p.loopOf(c).counters.active.Add(1)
	c.PauseRead()
	switch {
	case s.state == stDone: // the backend socket ended before this one opened
		s.flushAdopted(c, 0)
		c.Close()
	case s.backend != nil:
		s.resumeAdopted()
	}
}

// adoptedBackend is backendHandler.OnOpen for a handed-over session.
func (s *session) adoptedBackend(bc *reactor.Conn) {
	s.backend = bc
	bc.PauseRead()
	switch {
	case s.state == stDone: // the client left before this socket opened
		s.flushAdopted(bc, 1)
		bc.Close()
	case s.client != nil:
		s.resumeAdopted()
	}
}

// flushAdopted writes what the old process left for one side of a session
// (side 0 the client, 1 the backend): first what it had queued, then what
// the other side had sent that it had not relayed yet.
func (s *session) flushAdopted(to *reactor.Conn, side int) {
	ls := s.p.loopOf(to)
	pre := s.pre
	if q := pre.adoptOut[side]; len(q) > 0 {
		_ = to.Write(q)
	}
	if in := pre.adoptIn[1-side]; len(in) > 0 {
		_ = to.Write(in)
		bytes, frames, sc := &ls.counters.bytesC2S, &ls.counters.framesC2S, &s.c2s
		if side == 0 {
			bytes, frames, sc = &ls.counters.bytesS2C, &ls.counters.framesS2C, &s.s2c
		}
		bytes.Add(int64(len(in)))
		if !s.raw {
			frames.Add(int64(sc.scan(in)))
		}
	}
	pre.adoptOut[side], pre.adoptIn[1-side] = nil, nil
}

// resumeAdopted goes on relaying a handed-over session where the old process
// left it, once both of its sockets are open here.
func (s *session) resumeAdopted() {
	c, bc := s.client, s.backend
	s.target.Active.Add(1)
	s.onBackend = true
	s.state = stRelay
	c.SetSink(bc)
	bc.SetSink(c)
	s.flushAdopted(bc, 1)
	s.flushAdopted(c, 0)
	s.dropPre() // both sides have what the old process left
	c.ResumeRead()
	bc.ResumeRead()
	c.Backpressure()
	bc.Backpressure()
	s.lastActive = c.Loop().Now()
	if idle := s.gen.cfg.Limits.IdleTimeout; idle > 0 {
		c.Loop().Schedule(&s.timer, idle)
	}
}
