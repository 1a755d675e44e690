package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/reactor/handoverwire"
	"github.com/tidegate/tidegate/session/cluster"
	"github.com/tidegate/tidegate/session/proxy/handover"
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

// The hand-over's messages (package handover).
type (
	handoverState   = handover.State
	handoverCluster = handover.Cluster
	scannerState    = handover.Scanner
)

// handoverPoll is how often HandOver looks for sessions to move when no
// acknowledgement wakes it.
const handoverPoll = 2 * time.Millisecond

// handoverProgressEvery is how often a hand-over logs its progress.
const handoverProgressEvery = 5 * time.Second

// HandOverOptions tune HandOver (the hand-over's options live with its
// messages, in package handover).
type HandOverOptions = handover.Options

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
func (p *Proxy) HandOver(ctx context.Context, hc *handoverwire.Conn, opt HandOverOptions) (int, error) {
	if p.TakingOver() {
		return 0, ErrTakingOver
	}
	defer p.HoldReloads()()
	stall := opt.Stall
	if stall <= 0 {
		stall = 30 * time.Second
	}
	if p.cluster != nil {
		// The new process publishes the sessions under the same ID from now
		// on: stopping here must not take them out of the network.
		p.cluster.KeepKeysOnStop(true)
	}
	p.clearKeptHere()
	pending := handover.New[handed](opt.Acked && opt.AckEach)
	out := make(chan handed, handover.Window)
	sent := make(chan error, 1)
	sendFailed := make(chan struct{})
	var takenBack atomic.Int64
	settle := func(h handed, v handover.Verdict) { p.settle(h, v, &takenBack) }
	go func() {
		sent <- pending.SendAll(out, func(h handed) error {
			if testHookHandOverSend != nil {
				testHookHandOverSend(h.client)
			}
			// A new process that stops reading must not hold the sender,
			// and with it the hand-over, for good.
			_ = hc.SetWriteDeadline(time.Now().Add(stall))
			return hc.Send(h.state, h.client, h.backend)
		}, func() { close(sendFailed) }, settle)
	}()
	var acked atomic.Int64
	ackc := make(chan struct{}, 1)
	acksDone := make(chan error, 1)
	if opt.Acked {
		readerDone := make(chan struct{})
		p.sentMu.Lock()
		p.ackReaderDone = readerDone
		p.sentMu.Unlock()
		go func() {
			defer close(readerDone)
			acksDone <- pending.ReadAcks(hc, &acked, ackc, settle)
		}()
	}
	loops := p.rs.Loops()
	done := make(chan int, len(loops))
	n := 0
	active, last := p.activeSessions(), time.Now()
	t := time.NewTicker(handoverPoll)
	defer t.Stop()
	var err error
	progress := time.Now()
	var rounds, turn int
	var roundTime time.Duration
	for active > 0 {
		room := cap(out) - len(out)
		if opt.Acked {
			room = min(room, handover.Window-(n-int(acked.Load())))
		}
		// Each session detached holds two descriptors until it is sent: a
		// round takes no more than the budget has room for, and when it has
		// none the hand-over waits for those on their way (or ends at the
		// stall, the sessions staying here).
		room = min(room, handoverFDRoom(p)/fdsPerHandedSession)
		if time.Since(progress) >= handoverProgressEvery {
			p.log.Info().Int("sessions", n).Int64("acked", acked.Load()).Int64("left", active).Int("rounds", rounds).
				Dur("round_avg", roundTime/time.Duration(max(rounds, 1))).Int("room", room).Int("out", len(out)).Msg("hand-over: progress")
			progress, rounds, roundTime = time.Now(), 0, 0
		}
		if room > 0 {
			rounds++
			rs := time.Now()
			turn++ // which loops get the remainder: each in turn, or one that is short of room would starve the others
			for i, l := range loops {
				quota := handover.LoopQuota(room, len(loops), (i+turn)%len(loops))
				if l.Execute(func() { done <- p.handOverOnLoop(l, out, quota, handover.Version(opt.StateVersion)) }) != nil {
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
	if err != nil {
		// The hand-over ends here: a Send blocked on a new process that does
		// not read fails now, and what is still queued is taken back.
		_ = hc.SetWriteDeadline(time.Now())
	}
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
			return n - int(takenBack.Load()), fmt.Errorf("proxy: hand-over: the new process acknowledged %d of %d sessions", h, n)
		}
	}
	if tb := takenBack.Load(); tb > 0 { // the new process did not adopt these: they relay here
		return n - int(tb), fmt.Errorf("proxy: hand-over: the new process did not adopt %d sessions; they were taken back", tb)
	}
	return n, nil
}

// testHookHandOverSend, when a test sets it, runs in HandOver before each
// session is sent, with the duplicate of its client's socket: a seam for
// faults while a session is detached.
var testHookHandOverSend func(client *os.File)

// fdsPerHandedSession is how many descriptors a session holds on its way to
// the new process: the duplicates of its client's and its backend's sockets.
const fdsPerHandedSession = 2

// handoverFDRoom returns the descriptors a hand-over may still hold; a seam
// for tests.
var handoverFDRoom = func(p *Proxy) int { return p.rs.HandoverFDs() }

// handOverOnLoop, on l, detaches up to quota sessions that relay and puts
// them on out, in state message version v; it returns how many it detached.
func (p *Proxy) handOverOnLoop(l *reactor.Loop, out chan<- handed, quota, v int) int {
	n := 0
	l.EachConn(func(c *reactor.Conn) {
		s, ok := c.Value.(*session)
		if n >= quota || !ok || s.client != c || s.keptHere {
			return
		}
		// A session whose login's state the other process cannot take stays.
		if s.state != stRelay || s.clientEOF || s.backendEOF || s.backend == nil || !s.backend.Opened() || c.Closing() || s.backend.Closing() || s.via&viaReframe != 0 || v < handover.StateV2 && handover.NeedsV2(p.loopOf(c).kept.Get(s), s.encrypted) {
			return
		}
		c.PauseRead()
		s.backend.PauseRead()
		if h, ok := s.detach(v); ok {
			reactor.HoldFDs(fdsPerHandedSession) // given back once sent or taken back
			out <- h
			n++
		}
	})
	return n
}

// detach takes both sockets of a relaying session, paused on both sides,
// with what either side has queued or left unread, and its state (version
// v). Its ciphers are read in the same callback: their registers stand
// where its queued and unread bytes begin (handover.Cipher).
func (s *session) detach(v int) (handed, bool) {
	c, b := s.client, s.backend
	st := handoverState{
		Listener: c.Listener(), Listen: s.listenerCfg().Listen, Raw: s.raw, IP: s.ip, Host: s.host, User: s.username, Protocol: s.protocol,
		Group: s.group.name, Backend: s.target.addr, Opened: s.opened, C2S: scannerState(s.c2s.Position()), S2C: scannerState(s.s2c.Position()),
		Login: s.p.loopOf(c).kept.Get(s), Cipher: s.ciphers().HandOver(),
	}
	if s.pp != nil {
		st.Remote = s.pp.src.String()
	}
	if s.ticket != nil {
		st.Cluster = &handoverCluster{Token: s.ticket.Token(), Record: s.ticket.Session().Record()}
	}
	s.state = stHandedOver
	cd, bd, err := reactor.DetachPair(c, b)
	if err != nil {
		s.state = stRelay
		c.ResumeRead()
		b.ResumeRead()
		s.p.log.Warn().Err(err).Str("remote", s.remoteAddr()).Msg("hand-over: cannot detach the session; it stays")
		return handed{}, false
	}
	st.ClientIn, st.BackendIn = cd.Unread, bd.Unread
	st.ToClient, st.ToBackend = cd.Queued, bd.Queued
	s.p.handedOver.Add(1)
	s.p.handedOverQueued.Add(int64(len(cd.Queued) + len(bd.Queued)))
	data, err := handover.Encode(&st, v)
	if err != nil { // cannot happen: handOverOnLoop kept what needs a later version
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
//
// It first waits for the acknowledgements to end, which takes back the
// sessions the new process never touched (HandOverOptions.AckEach).
func (p *Proxy) HandOverLost() {
	p.sentMu.Lock()
	readerDone := p.ackReaderDone
	p.sentMu.Unlock()
	if readerDone != nil {
		select {
		case <-readerDone:
		case <-time.After(handOverLostWait):
			p.log.Warn().Dur("waited", handOverLostWait).Msg("hand-over: the new process's side of the hand-over socket is still open; the sessions on their way stay with it")
		}
	}
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

// handOverLostWait bounds HandOverLost's wait for the acknowledgements to
// end (the socket of a new process that is gone closes with it, at once).
const handOverLostWait = 5 * time.Second

// clearKeptHere lets the sessions an earlier hand-over took back go in the
// next one.
func (p *Proxy) clearKeptHere() {
	p.onEachSession(func(s *session) { s.keptHere = false })
}

// onEachSession runs f on its loop for every session whose client is open,
// loop by loop, and returns once it ran on every loop.
func (p *Proxy) onEachSession(f func(s *session)) {
	for _, l := range p.rs.Loops() {
		done := make(chan struct{})
		if l.Execute(func() {
			defer close(done)
			l.EachConn(func(c *reactor.Conn) {
				if s, ok := c.Value.(*session); ok && s.client == c {
					f(s)
				}
			})
		}) == nil {
			<-done
		}
	}
}

// logLeftBehind logs, for a hand-over that ran out of time, why each
// session still here did not go (at most 20).
func (p *Proxy) logLeftBehind() {
	n := 0
	p.onEachSession(func(s *session) {
		if n++; n > 20 {
			return
		}
		c := s.client
		ev := p.log.Warn().Str("remote", c.RemoteAddr().String()).Int("state", int(s.state)).
			Bool("client_eof", s.clientEOF).Bool("backend_eof", s.backendEOF).
			Int("client_queued", c.OutboundBuffered())
		if s.backend != nil {
			ev = ev.Bool("backend_open", s.backend.Opened()).Int("backend_queued", s.backend.OutboundBuffered())
		}
		ev.Msg("hand-over: session left behind")
	})
}
