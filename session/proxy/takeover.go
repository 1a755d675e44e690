package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/handover"
	"github.com/tidegate/tidegate/session/proxy/login"
)

// The new process's side of a live upgrade (the old one's is upgrade.go):
// it receives each session's state and sockets, registers both sockets on
// one loop, and goes on relaying where the old process left off.

// TakeOver receives sessions from the process at the other end of hc (which
// runs HandOver) and relays them, until that process ends its side of hc;
// it acknowledges each session it handled. It returns how many sessions it
// took.
func (p *Proxy) TakeOver(hc *handoverwire.Conn) (int, error) {
	p.takingOver.Add(1)
	defer p.takingOver.Add(-1)
	// Each adoption waits for a loop to register both sockets, and the loops
	// are busy relaying the sessions already here: a few run at once.
	type msg struct {
		place int64 // in the order sent, from 0
		data  []byte
		files []*os.File
	}
	work := make(chan msg)
	var n atomic.Int64
	// Each acknowledgement is written before the session's sockets are used
	// here (package handover).
	acker := handover.NewAcker(hc)
	var wg sync.WaitGroup
	for range takeOverWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				if testHookTakeOverAdopt != nil {
					testHookTakeOverAdopt(m.place, m.files)
				}
				err := p.adopt(m.data, m.files, func() { acker.Ack(m.place, true) }, false)
				if testHookTakeOverAdopted != nil {
					testHookTakeOverAdopted(m.place, err)
				}
				if err != nil {
					p.log.Error().Err(err).Msg("take-over: a session could not be adopted; the old process takes it back if it can")
					acker.Ack(m.place, false)
				} else {
					n.Add(1)
				}
			}
		}()
	}
	var rerr error
	for place := int64(0); ; place++ {
		data, files, err := hc.Recv()
		if errors.Is(err, handoverwire.ErrFilesDropped) {
			// Its sockets did not come (this process's descriptor limit):
			// adopt refuses it, and the old process takes it back.
			p.log.Warn().Err(err).Int64("place", place).Msg("take-over: a session came without its sockets")
		} else if err != nil {
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				rerr = err
			}
			break
		}
		work <- msg{place, data, files}
	}
	close(work)
	wg.Wait()
	if rerr != nil {
		return int(n.Load()), fmt.Errorf("proxy: take-over after %d sessions: %w", n.Load(), rerr)
	}
	return int(n.Load()), nil
}

// ErrTakingOver is HandOver's error while the proxy is still taking over
// the sessions of the process before it: a second live upgrade then would
// send on sessions still arriving, and end this process before they have.
var ErrTakingOver = errors.New("proxy: still taking over the sessions of the process before this one")

// TakingOver reports whether TakeOver is running.
func (p *Proxy) TakingOver() bool { return p.takingOver.Load() > 0 }

// testHookTakeOverAdopt, when a test sets it, runs in TakeOver before each
// session is adopted, with its place and descriptors: a seam for faults
// while a session is on its way.
var testHookTakeOverAdopt func(place int64, files []*os.File)

// testHookAdoptRegistered, when a test sets it, runs in adopt once both
// sockets are registered, before the session's goAhead is queued on c's loop.
var testHookAdoptRegistered func(c *reactor.Conn)

// testHookTakeOverAdopted, when a test sets it, runs in TakeOver after each
// adoption, with its place and error (before a failed one is acknowledged).
var testHookTakeOverAdopted func(place int64, err error)

// takeOverWorkers is how many sessions TakeOver adopts at once: each waits
// for a round of its loop, so they overlap.
const takeOverWorkers = 256

// adopt registers one handed-over session. Both sockets are registered
// paused; once both are, tell (if set) runs and then the session relays,
// so that nothing is read from or written to them before tell. keep marks
// it as taken back by the running hand-over.
func (p *Proxy) adopt(data []byte, files []*os.File, tell func(), keep bool) error {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	st, resumed, err := login.DecodeState(data)
	if err != nil {
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
		opened: st.Opened, protocol: st.Protocol, c2s: mc.FrameCounterAt(mc.FramePosition(st.C2S)), s2c: mc.FrameCounterAt(mc.FramePosition(st.S2C)),
		pre: &preRelay{adoptIn: [2][]byte{st.ClientIn, st.BackendIn}, adoptOut: [2][]byte{st.ToClient, st.ToBackend},
			adoptTk: st.Cluster, adoptLogin: resumed}}
	s.timer.F = s.onTimer
	s.keptHere = keep
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
	c, _, err := p.rs.AdoptPair(cn, bn, (*clientHandler)(p), &p.backendSide, s, gen.listenerIndex(st.Listen, st.Listener), -1)
	if err != nil {
		return err
	}
	if testHookAdoptRegistered != nil {
		testHookAdoptRegistered(c)
	}
	if tell != nil {
		tell()
	}
	_ = c.Loop().Execute(s.goAhead) // fails only when the loops stop, which closes the session
	return nil
}

// listenerIndex returns the reactor index of the listener configured at
// listen, or index when none is (or listen is empty: an older process sent
// the session).
func (g *generation) listenerIndex(listen string, index int) int {
	for i, l := range g.cfg.Listeners {
		if listen != "" && l.Listen == listen {
			return g.live[i]
		}
	}
	return index
}

// adoptedClient is clientHandler.OnOpen for a handed-over session. Its two
// sockets open in either order; neither is read before both are open.
func (s *session) adoptedClient(c *reactor.Conn) {
	s.client = c
	s.p.admitAdopted(s.gen, s.ip)
	s.p.loopOf(c).counters.active.Add(1)
	s.encrypted = login.Install(s.pre.adoptLogin, s, &s.p.loopOf(c).kept, &s.p.loopOf(c).ciphers) // before any byte of it moves
	c.PauseRead()                                                                                 // until goAhead
}

// adoptedBackend is backendHandler.OnOpen for a handed-over session.
func (s *session) adoptedBackend(bc *reactor.Conn) {
	s.backend = bc
	bc.PauseRead() // until goAhead
}

// goAhead, on the session's loop once both of its sockets are registered
// and the other process knows (adopt), takes its ticket and lets it relay.
// A session that ended meanwhile leaves the network's state here: this
// process answered for it.
func (s *session) goAhead() {
	if tk := s.pre.adoptTk; tk != nil && s.p.cluster != nil {
		if sess, err := cluster.ParseRecord(tk.Record); err == nil {
			s.ticket = s.p.cluster.Adopt(tk.Token, sess, s)
		} else {
			s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("take-over: the session's cluster record is unreadable; it is not published")
		}
		s.pre.adoptTk = nil
	}
	if s.state != stAdopting {
		// One socket ended before the other opened, or a drain's deadline
		// here closed the session first: a socket left gets what the old
		// process left for it, and closes.
		for side, c := range []*reactor.Conn{s.client, s.backend} {
			if c != nil && !c.Closing() {
				s.flushAdopted(c, side)
				c.Close()
			}
		}
		s.releaseTicket()
		s.dropPre()
		return
	}
	s.resumeAdopted()
}

// flushAdopted writes what the old process left for one side of a session
// (side 0 the client, 1 the backend): first what it had queued, then what
// the other side had sent that it had not relayed yet, through the ciphers.
func (s *session) flushAdopted(to *reactor.Conn, side int) {
	ls := s.p.loopOf(to)
	pre := s.pre
	if q := pre.adoptOut[side]; len(q) > 0 {
		_ = to.Write(q)
	}
	if in := pre.adoptIn[1-side]; len(in) > 0 {
		s.ciphers().Inbound(in, side == 1)
		bytes, frames, sc := &ls.counters.bytesC2S, &ls.counters.framesC2S, &s.c2s
		if side == 0 {
			bytes, frames, sc = &ls.counters.bytesS2C, &ls.counters.framesS2C, &s.s2c
		}
		bytes.Add(int64(len(in)))
		if !s.raw {
			frames.Add(int64(sc.Count(in))) // in the clear
		}
		s.ciphers().Outbound(in, side == 0)
		_ = to.Write(in)
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
