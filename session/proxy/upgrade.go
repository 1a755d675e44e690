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
// relayed, and the session's state. The old process stops reading a
// session, lets what it queued for either side drain, detaches both sockets
// and sends them; the new process registers both on one of its loops and
// goes on relaying. Neither peer sees anything but a pause.

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
	C2S       scannerState `json:"c2s"`
	S2C       scannerState `json:"s2c"`
	ClientIn  []byte       `json:"client_in,omitempty"`  // read from the client, not yet relayed
	BackendIn []byte       `json:"backend_in,omitempty"` // read from the backend, not yet relayed
	// Cluster is the session's place in the network's state, which the new
	// process takes over under the same token (cluster.go).
	Cluster *handoverCluster `json:"cluster,omitempty"`
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

func (f *frameScanner) state() scannerState {
	return scannerState{Remaining: f.remaining, Length: f.length, Shift: f.shift, Broken: f.broken}
}

func (st scannerState) scanner() frameScanner {
	return frameScanner{remaining: st.Remaining, length: st.Length, shift: st.Shift, broken: st.Broken}
}

// handoverPoll is how often HandOver looks at the sessions it waits for.
const handoverPoll = 2 * time.Millisecond

// handed is one detached session on its way to the sender.
type handed struct {
	state           []byte
	client, backend *os.File
}

// HandOver moves the proxy's sessions to the process at the other end of
// hc (which runs TakeOver), until every session has been handed over or
// has ended, or ctx ends. A session is handed over once it relays: one
// still logging in goes when it gets there; a half-closed one finishes
// here. The proxy should have stopped accepting (the new process has the
// listeners). It returns how many sessions went.
func (p *Proxy) HandOver(ctx context.Context, hc *reactor.HandoverConn) (int, error) {
	if p.cluster != nil {
		// The new process publishes the sessions under the same ID from now
		// on: stopping here must not take them out of the network.
		p.cluster.KeepKeysOnStop()
	}
	out := make(chan handed, 256)
	sent := make(chan error, 1)
	go func() {
		var err error
		for h := range out {
			if err == nil {
				err = hc.Send(h.state, h.client, h.backend)
			}
			h.client.Close()
			h.backend.Close()
		}
		sent <- err
	}()
	n := 0
	t := time.NewTicker(handoverPoll)
	defer t.Stop()
	for p.Stats().Active > 0 {
		done := make(chan int, len(p.rs.Loops()))
		for _, l := range p.rs.Loops() {
			if l.Execute(func() { done <- p.handOverOnLoop(l, out) }) != nil {
				done <- 0
			}
		}
		for range p.rs.Loops() {
			n += <-done
		}
		select {
		case <-ctx.Done():
			p.logLeftBehind()
			p.abandonHandOver()
			close(out)
			return n, errors.Join(fmt.Errorf("proxy: hand-over: %d sessions still here: %w", p.Stats().Active, ctx.Err()), <-sent)
		case <-t.C:
		}
	}
	close(out)
	return n, <-sent
}

// handOverOnLoop, on l, starts the hand-over of the sessions that relay
// and detaches those that are ready; it returns how many it detached.
func (p *Proxy) handOverOnLoop(l *reactor.Loop, out chan<- handed) int {
	n := 0
	l.EachConn(func(c *reactor.Conn) {
		s, ok := c.Value.(*session)
		if !ok || s.client != c {
			return
		}
		if !s.handingOver {
			if s.state != stRelay || s.clientEOF || s.backendEOF || s.backend == nil || !s.backend.Opened() || c.Closing() || s.backend.Closing() {
				return
			}
			s.handingOver = true
			c.PauseRead()
			s.backend.PauseRead()
		}
		if c.OutboundBuffered() > 0 || s.backend.OutboundBuffered() > 0 {
			return // still delivering what this process queued
		}
		if len(out) >= cap(out)-len(p.rs.Loops()) {
			// The new process takes sessions slower than they are ready:
			// wait for the next round rather than block this loop (and every
			// session still on it) on the channel.
			return
		}
		if h, ok := s.detach(); ok {
			out <- h
			n++
		}
	})
	return n
}

// detach takes both sockets of a session that is ready for the hand-over.
func (s *session) detach() (handed, bool) {
	c, b := s.client, s.backend
	st := handoverState{
		Listener: c.Listener(), Raw: s.raw, IP: s.ip, Host: s.host, User: s.username, Protocol: s.protocol,
		Group: s.group.name, Backend: s.target.addr, C2S: s.c2s.state(), S2C: s.s2c.state(),
	}
	if s.pp != nil {
		st.Remote = s.pp.src.String()
	}
	if s.ticket != nil {
		st.Cluster = &handoverCluster{Token: s.ticket.Token(), Record: s.ticket.Session().Record()}
	}
	s.state = stHandedOver
	cf, cin, err := c.Detach()
	if err != nil {
		s.state, s.handingOver = stRelay, false
		c.ResumeRead()
		b.ResumeRead()
		s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("hand-over: cannot detach the client; the session stays")
		return handed{}, false
	}
	bf, bin, err := b.Detach()
	if err != nil {
		cf.Close() // the client is gone from this process already: it ends
		b.Close()
		s.p.log.Error().Err(err).Str("remote", st.IP).Msg("hand-over: cannot detach the backend; the session is lost")
		return handed{}, false
	}
	st.ClientIn, st.BackendIn = cin, bin
	data, err := json.Marshal(st)
	if err != nil { // cannot happen for these types
		cf.Close()
		bf.Close()
		return handed{}, false
	}
	return handed{state: data, client: cf, backend: bf}, true
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
					Bool("handing_over", s.handingOver).Bool("client_eof", s.clientEOF).Bool("backend_eof", s.backendEOF).
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

// abandonHandOver resumes the sessions a hand-over paused but did not move.
func (p *Proxy) abandonHandOver() {
	for _, l := range p.rs.Loops() {
		_ = l.Execute(func() {
			l.EachConn(func(c *reactor.Conn) {
				if s, ok := c.Value.(*session); ok && s.client == c && s.handingOver && s.state == stRelay {
					s.handingOver = false
					c.ResumeRead()
					if s.backend != nil {
						s.backend.ResumeRead()
					}
				}
			})
		})
	}
}

// TakeOver receives sessions from the process at the other end of hc (which
// runs HandOver) and relays them, until that process closes hc. It returns
// how many sessions it took.
func (p *Proxy) TakeOver(hc *reactor.HandoverConn) (int, error) {
	// Each adoption waits for a loop to register the sockets, and the loops
	// are busy relaying the sessions already here: a few run at once.
	type msg struct {
		data  []byte
		files []*os.File
	}
	work := make(chan msg)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range takeOverWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				if err := p.adopt(m.data, m.files); err != nil {
					p.log.Error().Err(err).Msg("take-over: a session could not be adopted and is lost")
					continue
				}
				n.Add(1)
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
	if rerr != nil {
		return int(n.Load()), fmt.Errorf("proxy: take-over after %d sessions: %w", n.Load(), rerr)
	}
	return int(n.Load()), nil
}

// takeOverWorkers is how many sessions TakeOver adopts at once.
const takeOverWorkers = 16

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
		protocol: st.Protocol, c2s: st.C2S.scanner(), s2c: st.S2C.scanner(), adoptIn: [2][]byte{st.ClientIn, st.BackendIn},
		adoptTk: st.Cluster}
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
	c, err := p.rs.Adopt(cn, (*clientHandler)(p), s, st.Listener)
	if err != nil {
		return err
	}
	if _, err := c.Loop().Adopt(bn, &p.backendSide, s, -1); err != nil {
		_ = c.Loop().Execute(c.Close)
		return err
	}
	return nil
}

// adoptedClient is clientHandler.OnOpen for a handed-over session: it waits,
// not read, for its backend.
func (s *session) adoptedClient(c *reactor.Conn) {
	s.client = c
	s.listener = s.gen.listenerOf(c)
	s.p.admitAdopted(s.gen, s.ip)
	if tk := s.adoptTk; tk != nil && s.p.cluster != nil {
		if sess, err := cluster.ParseRecord(tk.Record); err == nil {
			s.ticket = s.p.cluster.Adopt(tk.Token, sess, s)
		} else {
			s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("take-over: the session's cluster record is unreadable; it is not published")
		}
		s.adoptTk = nil
	}
	s.p.loopOf(c).counters.active.Add(1)
	c.PauseRead()
}

// adoptedBackend is backendHandler.OnOpen for a handed-over session: the
// relay goes on where the old process left it.
func (s *session) adoptedBackend(bc *reactor.Conn) {
	s.backend = bc
	c := s.client
	if s.state != stAdopting || c.Closing() { // the client left meanwhile
		if in := s.adoptIn[0]; len(in) > 0 {
			_ = bc.Write(in)
		}
		bc.Close()
		return
	}
	s.target.active.Add(1)
	s.onBackend = true
	s.state = stRelay
	c.SetSink(bc)
	bc.SetSink(c)
	ls := s.p.loopOf(c)
	if in := s.adoptIn[0]; len(in) > 0 {
		_ = bc.Write(in)
		ls.counters.bytesC2S.Add(int64(len(in)))
		if !s.raw {
			ls.counters.framesC2S.Add(int64(s.c2s.scan(in)))
		}
	}
	if in := s.adoptIn[1]; len(in) > 0 {
		_ = c.Write(in)
		ls.counters.bytesS2C.Add(int64(len(in)))
		if !s.raw {
			ls.counters.framesS2C.Add(int64(s.s2c.scan(in)))
		}
	}
	s.adoptIn = [2][]byte{}
	c.ResumeRead()
	s.lastActive = c.Loop().Now()
	if idle := s.gen.cfg.Limits.IdleTimeout; idle > 0 {
		c.Loop().Schedule(&s.timer, idle)
	}
}
