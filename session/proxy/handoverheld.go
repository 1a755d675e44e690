package proxy

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/tidegate/tidegate/reactor"
)

// Holding a session until the new process acknowledges it: with
// HandOverOptions.AckEach, the new process acknowledges each session by its
// place in the order sent, adopted or not, and it writes that
// acknowledgement before it reads or writes either of the session's
// sockets. This process keeps its duplicates of both sockets until then,
// so a session the new process did not adopt (its descriptor limit, say)
// comes back here whole, and so do the sessions it never acknowledged when
// its side of the hand-over socket ends (it exited, or was killed): every
// acknowledgement it wrote is read before that end, so those it did not
// write are of sessions it never touched.
//
// What cannot come back is a session sent to a new process that is alive
// but does not acknowledge it (it stalls): it may still adopt the session
// later, and two processes relaying one socket would corrupt the stream.
// Those are let go when this side closes the hand-over socket, as before.

// heldVerdict is what becomes of a held session.
type heldVerdict int8

const (
	stillHeld    heldVerdict = iota // no word yet
	adoptedThere                    // the new process has it: this process lets its copies go
	takeBackHere                    // the new process never touched it: this process adopts it again
)

// heldSession is one session sent, or being sent, and not yet settled.
type heldSession struct {
	h       handed
	sending bool        // its Send has not returned: its files are in use
	verdict heldVerdict // what an acknowledgement or the end said while it was sending
}

// heldSessions are the sessions on their way, by place.
type heldSessions struct {
	mu    sync.Mutex
	next  int64
	m     map[int64]*heldSession
	ended heldVerdict // set once the acknowledgements ended: what becomes of the rest
}

func newHeldSessions() *heldSessions { return &heldSessions{m: map[int64]*heldSession{}} }

// sending records h as about to be sent and returns its place.
func (hs *heldSessions) sending(h handed) int64 {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	place := hs.next
	hs.next++
	hs.m[place] = &heldSession{h: h, sending: true}
	return place
}

// sent settles the Send of place: a failed one takes it back (the new
// process got no whole message, so it cannot adopt it); a sent one stays
// held unless a verdict came while it was sending.
func (hs *heldSessions) sent(place int64, ok bool) (handed, heldVerdict) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	e := hs.m[place]
	v := e.verdict
	switch {
	case !ok:
		v = takeBackHere
	case v == stillHeld:
		v = hs.ended
	}
	if v == stillHeld {
		e.sending = false
		return handed{}, stillHeld
	}
	delete(hs.m, place)
	return e.h, v
}

// acked settles place as the new process's acknowledgement says; a session
// still being sent is settled by its sender.
func (hs *heldSessions) acked(place int64, adopted bool) (handed, heldVerdict) {
	v := takeBackHere
	if adopted {
		v = adoptedThere
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	e, ok := hs.m[place]
	if !ok {
		return handed{}, stillHeld
	}
	if e.sending {
		e.verdict = v
		return handed{}, stillHeld
	}
	delete(hs.m, place)
	return e.h, v
}

// end settles every session left once the acknowledgements end with v;
// the ones still being sent are their senders' to settle.
func (hs *heldSessions) end(v heldVerdict) []handed {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.ended = v
	var out []handed
	for place, e := range hs.m {
		if !e.sending {
			out = append(out, e.h)
			delete(hs.m, place)
		}
	}
	return out
}

// endVerdict is what becomes of the sessions still held when the
// acknowledgements end with err: the new process's end of the socket
// closed (io.EOF, or ECONNRESET when it closed with messages unread) means
// it adopts nothing more, so the rest come back; anything else (this side
// closed it, or garbage came) says nothing of what it will still adopt,
// so the rest are let go.
func endVerdict(err error) heldVerdict {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return takeBackHere
	}
	return adoptedThere
}

// settle does what v says with h.
func (p *Proxy) settle(h handed, v heldVerdict, takenBack *atomic.Int64) {
	switch v {
	case adoptedThere:
		p.letGo(h)
	case takeBackHere:
		if p.takeBack(h) {
			takenBack.Add(1)
		}
	}
}

// letGo lets this process's copies of a session the new process has go:
// its ticket is remembered for HandOverLost.
func (p *Proxy) letGo(h handed) {
	if h.ticket != nil {
		p.sentMu.Lock()
		p.sentTickets = append(p.sentTickets, h.ticket)
		p.sentMu.Unlock()
	}
	h.client.Close()
	h.backend.Close()
	reactor.HoldFDs(-fdsPerHandedSession)
}

// takeBack adopts a session the new process does not have here again, as
// the new process would have (adopt closes the files); it stays here for
// the rest of this hand-over. A session that cannot be taken back (its
// peer reset it meanwhile) leaves the network's state too.
func (p *Proxy) takeBack(h handed) bool {
	err := p.adopt(h.state, []*os.File{h.client, h.backend}, nil, true)
	reactor.HoldFDs(-fdsPerHandedSession)
	if err != nil {
		if h.ticket != nil {
			p.cluster.Release(h.ticket)
		}
		p.log.Warn().Err(err).Msg("hand-over: a session the new process does not have could not be taken back either; it is lost")
		return false
	}
	p.handedOver.Add(-1)
	return true
}
