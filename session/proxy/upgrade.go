package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/cluster"
)

// A live upgrade moves every relaying session to a new process: both of its
// sockets (passed with SCM_RIGHTS), what each side sent that was not yet
// relayed, what was relayed but not yet sent, and the session's state. The
// old process stops reading a session and detaches both sockets in one
// callback; the new process registers both on one of its loops and goes on
// relaying, sending first what the old one had queued. Neither peer sees
// anything but a pause, as long as the session's few kilobytes take to
// travel. The new process acknowledges what it took, so that only a window
// of sessions is on its way at any time: the others go on relaying here
// until their turn, and no session waits for the whole hand-over.

// handoverState is a relaying session as it travels to the new process.
type handoverState struct {
	Listener  int          `json:"listener"`
	Raw       bool         `json:"raw"`
	IP        string       `json:"ip"`
	Remote    string       `json:"remote,omitempty"` // ip:port the PROXY header gave, if any
	Host      string       `json:"host,omitempty"`
	User      string       `json:"user,omitempty"`
	Protocol  int32        `json:"protocol,omitempty"`
	Group     string       `json:"group"`
	Backend   string       `json:"backend"`
	Opened    int64        `json:"opened,omitempty"` // unix nanoseconds, when the client connected
	C2S       scannerState `json:"c2s"`
	S2C       scannerState `json:"s2c"`
	ClientIn  []byte       `json:"client_in,omitempty"`  // read from the client, not yet relayed
	BackendIn []byte       `json:"backend_in,omitempty"` // read from the backend, not yet relayed
	// Relayed (and counted, and scanned) here but not yet sent: the new
	// process sends these before the input above.
	ToClient  []byte `json:"to_client,omitempty"`
	ToBackend []byte `json:"to_backend,omitempty"`
	// Cluster is the session's place in the network's state, which the new
	// process takes over under the same token (cluster.go).
	Cluster *handoverCluster `json:"cluster,omitempty"`
}

// handoverAck is what the new process sends back: how many sessions it has
// handled (adopted or lost) so far.
type handoverAck struct {
	Handled int64 `json:"handled"`
}

// handoverCluster is a session's cluster ticket as it travels.
type handoverCluster struct {
	Token  string `json:"token"`
	Record string `json:"record"` // cluster.Session.Record, read back with cluster.ParseRecord
}

// scannerState is a frameScanner's position, for a hand-over.
type scannerState struct {
	Remaining int    `json:"remaining"`
	Length    uint32 `json:"length"`
	Shift     uint8  `json:"shift"`
	Broken    bool   `json:"broken"`
}

// The form keeps the remaining body and a partial length prefix apart, as
// scanners before the 8-byte one did, so that processes of either kind can
// hand over to each other.
func (f *frameScanner) state() scannerState {
	st := scannerState{Shift: f.shift, Broken: f.broken}
	if f.shift > 0 {
		st.Length = f.n
	} else {
		st.Remaining = int(f.n)
	}
	return st
}

func (st scannerState) scanner() frameScanner {
	f := frameScanner{shift: st.Shift, broken: st.Broken, n: uint32(st.Remaining)}
	if st.Shift > 0 {
		f.n = st.Length
	}
	return f
}

// handoverPoll is how often HandOver looks for sessions to move when no
// acknowledgement wakes it.
const handoverPoll = 2 * time.Millisecond

// handoverWindow bounds the sessions on their way to the new process
// (detached here, not yet acknowledged there). Each waits for those ahead
// of it, so it bounds the pause a session sees; and it is enough to keep the
// new process's adopters busy.
const handoverWindow = 1024

// handoverProgressEvery is how often a hand-over logs its progress.
const handoverProgressEvery = 5 * time.Second

// HandOverOptions tune HandOver.
type HandOverOptions struct {
	// Stall ends the hand-over when, for this long, no session has moved,
	// been acknowledged or ended (default 30 s). Sessions still here then
	// stay here.
	Stall time.Duration
	// Acked says the other process acknowledges the sessions it handled
	// (TakeOver does): at most handoverWindow are then on their way at
	// once. Without it, only this side's send queue bounds them.
	Acked bool
}

// handed is one detached session on its way to the sender.
type handed struct {
	state           []byte
	client, backend *os.File
	ticket          *cluster.Ticket // its place in the network's state, or nil
}

// HandOver moves the proxy's sessions to the process at the other end of
// hc (which runs TakeOver), until every session has been handed over or
// has ended, no session moved for opt.Stall, or ctx ends. A session is
// handed over once it relays: one still logging in goes when it gets there;
// a half-closed one finishes here. The proxy should have stopped accepting
// (the new process has the listeners). It returns how many sessions went.
func (p *Proxy) HandOver(ctx context.Context, hc *reactor.HandoverConn, opt HandOverOptions) (int, error) {
	stall := opt.Stall
	if stall <= 0 {
		stall = 30 * time.Second
	}
	if p.cluster != nil {
		// The new process publishes the sessions under the same ID from now
		// on: stopping here must not take them out of the network.
		p.cluster.KeepKeysOnStop(true)
	}
	out := make(chan handed, handoverWindow)
	sent := make(chan error, 1)
	sendFailed := make(chan struct{})
	var takenBack atomic.Int64
	go func() {
		var err error
		for h := range out {
			if err == nil {
				if err = hc.Send(h.state, h.client, h.backend); err != nil {
					close(sendFailed)
				}
			}
			if err != nil {
				// Not sent: this process takes the session back, as the new
				// one would have (adopt closes the files).
				if aerr := p.adopt(h.state, []*os.File{h.client, h.backend}); aerr != nil {
					p.log.Error().Err(aerr).Msg("hand-over: a session that could not be sent could not be taken back either; it is lost")
				} else {
					p.handedOver.Add(-1)
					takenBack.Add(1)
				}
				continue
			}
			if h.ticket != nil {
				p.sentMu.Lock()
				p.sentTickets = append(p.sentTickets, h.ticket)
				p.sentMu.Unlock()
			}
			h.client.Close()
			h.backend.Close()
		}
		sent <- err
	}()
	var acked atomic.Int64
	ackc := make(chan struct{}, 1)
	acksDone := make(chan error, 1)
	if opt.Acked {
		go readAcks(hc, &acked, ackc, acksDone)
	}
	loops := p.rs.Loops()
	done := make(chan int, len(loops))
	n := 0
	active, last := p.activeSessions(), time.Now()
	t := time.NewTicker(handoverPoll)
	defer t.Stop()
	var err error
	progress := time.Now()
	var rounds int
	var roundTime time.Duration
	for active > 0 {
		room := cap(out) - len(out)
		if opt.Acked {
			room = min(room, handoverWindow-(n-int(acked.Load())))
		}
		if time.Since(progress) >= handoverProgressEvery {
			p.log.Info().Int("sessions", n).Int64("acked", acked.Load()).Int64("left", active).Int("rounds", rounds).
				Dur("round_avg", roundTime/time.Duration(max(rounds, 1))).Int("room", room).Int("out", len(out)).Msg("hand-over: progress")
			progress, rounds, roundTime = time.Now(), 0, 0
		}
		if room > 0 {
			rounds++
			rs := time.Now()
			quota := (room + len(loops) - 1) / len(loops)
			for _, l := range loops {
				if l.Execute(func() { done <- p.handOverOnLoop(l, out, quota) }) != nil {
					done <- 0
				}
			}
			moved := 0
			for range loops {
				moved += <-done
			}
			roundTime += time.Since(rs)
			if moved > 0 {
				n += moved
				last = time.Now()
			}
		}
		if a := p.activeSessions(); a != active {
			active, last = a, time.Now()
		}
		if time.Since(last) > stall {
			err = fmt.Errorf("proxy: hand-over: no session moved or ended for %s", stall)
			break
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("proxy: hand-over: %w", ctx.Err())
		case <-sendFailed:
		case aerr := <-acksDone:
			// The other side closed before this one was done: it is gone.
			err = fmt.Errorf("proxy: hand-over: the new process stopped answering: %w", aerr)
		case <-ackc:
			last = time.Now()
			continue
		case <-t.C:
			continue
		}
		break
	}
	close(out)
	err = errors.Join(err, <-sent)
	if err != nil {
		p.logLeftBehind()
		n -= int(takenBack.Load())
		return n, fmt.Errorf("%w (%d sessions still here, %d of them taken back)", err, p.activeSessions(), takenBack.Load())
	}
	if opt.Acked {
		// Everything is sent: the other side sees the end, handles what it
		// has, acknowledges the last and closes.
		_ = hc.CloseWrite()
		select {
		case <-acksDone:
		case <-time.After(stall):
		case <-ctx.Done():
		}
		if h := acked.Load(); h < int64(n) {
			return n, fmt.Errorf("proxy: hand-over: the new process acknowledged %d of %d sessions", h, n)
		}
	}
	return n, nil
}

// readAcks records the other process's acknowledgements in acked, waking
// ackc at each, until hc ends.
func readAcks(hc *reactor.HandoverConn, acked *atomic.Int64, ackc chan<- struct{}, done chan<- error) {
	for {
		data, files, err := hc.Recv()
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			done <- err
			return
		}
		var a handoverAck
		if json.Unmarshal(data, &a) == nil && a.Handled > acked.Load() {
			acked.Store(a.Handled)
			select {
			case ackc <- struct{}{}:
			default:
			}
		}
	}
}

// handOverOnLoop, on l, detaches up to quota sessions that relay and puts
// them on out; it returns how many it detached.
func (p *Proxy) handOverOnLoop(l *reactor.Loop, out chan<- handed, quota int) int {
	n := 0
	l.EachConn(func(c *reactor.Conn) {
		s, ok := c.Value.(*session)
		if n >= quota || !ok || s.client != c {
			return
		}
		if s.state != stRelay || s.clientEOF || s.backendEOF || s.backend == nil || !s.backend.Opened() || c.Closing() || s.backend.Closing() {
			return
		}
		if len(out) == cap(out) {
			return // never block a loop (and every session on it) on the sender
		}
		c.PauseRead()
		s.backend.PauseRead()
		if h, ok := s.detach(); ok {
			out <- h
			n++
		}
	})
	return n
}

// detach takes both sockets of a relaying session, paused on both sides,
// with what either side has queued or left unread.
func (s *session) detach() (handed, bool) {
	c, b := s.client, s.backend
	st := handoverState{
		Listener: c.Listener(), Raw: s.raw, IP: s.ip, Host: s.host, User: s.username, Protocol: s.protocol,
		Group: s.group.name, Backend: s.target.addr, Opened: s.opened, C2S: s.c2s.state(), S2C: s.s2c.state(),
	}
	if s.pp != nil {
		st.Remote = s.pp.src.String()
	}
	if s.ticket != nil {
		st.Cluster = &handoverCluster{Token: s.ticket.Token(), Record: s.ticket.Session().Record()}
	}
	s.state = stHandedOver
	cd, err := c.Detach()
	if err != nil {
		s.state = stRelay
		c.ResumeRead()
		b.ResumeRead()
		s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("hand-over: cannot detach the client; the session stays")
		return handed{}, false
	}
	bd, err := b.Detach()
	if err != nil {
		cd.File.Close() // the client is gone from this process already: it ends
		b.Close()
		s.p.log.Error().Err(err).Str("remote", st.IP).Msg("hand-over: cannot detach the backend; the session is lost")
		return handed{}, false
	}
	st.ClientIn, st.BackendIn = cd.Unread, bd.Unread
	st.ToClient, st.ToBackend = cd.Queued, bd.Queued
	s.p.handedOver.Add(1)
	s.p.handedOverQueued.Add(int64(len(cd.Queued) + len(bd.Queued)))
	data, err := json.Marshal(st)
	if err != nil { // cannot happen for these types
		cd.File.Close()
		bd.File.Close()
		return handed{}, false
	}
	return handed{state: data, client: cd.File, backend: bd.File, ticket: s.ticket}, true
}

// HandOverLost is for when the process a hand-over sent sessions to went
// away: those sessions are gone with it, so with cluster on their tickets
// are released here (this process's heartbeat would otherwise keep them
// published, and their players would be refused as duplicates), and the
// proxy's keys are removed again when it stops.
func (p *Proxy) HandOverLost() {
	if p.cluster == nil {
		return
	}
	p.cluster.KeepKeysOnStop(false)
	p.sentMu.Lock()
	ts := p.sentTickets
	p.sentTickets = nil
	p.sentMu.Unlock()
	for _, t := range ts {
		p.cluster.Release(t)
	}
	if len(ts) > 0 {
		p.log.Warn().Int("sessions", len(ts)).Msg("hand-over: the sessions sent to the new process are gone with it; released from the network's state")
	}
}

// logLeftBehind logs, for a hand-over that ran out of time, why each
// session still here did not go (at most 20).
func (p *Proxy) logLeftBehind() {
	for _, l := range p.rs.Loops() {
		done := make(chan struct{})
		if l.Execute(func() {
			defer close(done)
			n := 0
			l.EachConn(func(c *reactor.Conn) {
				s, ok := c.Value.(*session)
				if !ok || s.client != c || n >= 20 {
					return
				}
				n++
				ev := p.log.Warn().Str("remote", c.RemoteAddr().String()).Int("state", int(s.state)).
					Bool("client_eof", s.clientEOF).Bool("backend_eof", s.backendEOF).
					Int("client_queued", c.OutboundBuffered())
				if s.backend != nil {
					ev = ev.Bool("backend_open", s.backend.Opened()).Int("backend_queued", s.backend.OutboundBuffered())
				}
				ev.Msg("hand-over: session left behind")
			})
		}) == nil {
			<-done
		}
	}
}

// TakeOver receives sessions from the process at the other end of hc (which
// runs HandOver) and relays them, until that process ends its side of hc;
// it acknowledges each session it handled. It returns how many sessions it
// took.
func (p *Proxy) TakeOver(hc *reactor.HandoverConn) (int, error) {
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
	s.pre = nil // both sides have what the old process left
	c.ResumeRead()
	bc.ResumeRead()
	c.Backpressure()
	bc.Backpressure()
	s.lastActive = c.Loop().Now()
	if idle := s.gen.cfg.Limits.IdleTimeout; idle > 0 {
		c.Loop().Schedule(&s.timer, idle)
	}
}
