// Package handover keeps a live upgrade's hand-over honest about what
// the new process has: the acknowledgements it sends back (Ack, written by
// an Acker), and, in the old process, the sessions sent and not yet
// settled (Pending) with what becomes of each (Verdict).
//
// With per-session acknowledgements, the new process acknowledges each
// session by its place in the order sent, adopted or not, and it writes
// that acknowledgement before it reads or writes either of the session's
// sockets. The old process keeps its duplicates of both sockets until
// then, so a session the new process did not adopt (its descriptor limit,
// say) comes back whole, and so do the sessions it never acknowledged when
// its side of the hand-over socket ends (it exited, or was killed): every
// acknowledgement it wrote is read before that end, so those it did not
// write are of sessions it never touched.
//
// What cannot come back is a session sent to a new process that is alive
// but does not acknowledge it (it stalls, or answers garbage): it may still
// adopt the session later, and two processes relaying one socket would
// corrupt the stream. Those are let go when the old side closes the
// hand-over socket.
package handover

import (
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidegate/tidegate/reactor/handoverwire"
)

// Ack is what the new process sends back: how many sessions it has handled
// (adopted or lost) so far and, from processes that acknowledge each,
// which one this is.
type Ack struct {
	Handled int64 `json:"handled"`
	// Place, when set, names the one session this acknowledges by its
	// place in the order sent (from 0), and Adopted says whether it was
	// adopted. Older processes send counts only.
	Place   *int64 `json:"place,omitempty"`
	Adopted bool   `json:"adopted,omitempty"`
}

// Verdict is what becomes of a session sent.
type Verdict int8

const (
	// Waiting: no word yet; the old process keeps it.
	Waiting Verdict = iota
	// Adopted: the new process has it; the old one lets its copies go.
	Adopted
	// TakeBack: the new process never touched it; the old one adopts it
	// again.
	TakeBack
)

// entry is one session sent, or being sent, and not yet settled.
type entry[T any] struct {
	item    T
	sending bool    // its send has not returned: its descriptors are in use
	verdict Verdict // what an acknowledgement or the end said while it was sending
}

// Pending are the sessions on their way, by place.
type Pending[T any] struct {
	hold  bool
	mu    sync.Mutex
	next  int64
	m     map[int64]*entry[T]
	ended Verdict // set once the acknowledgements ended: what becomes of the rest
}

// New returns an empty Pending. With hold, a session sent waits for its
// acknowledgement; without, it is Adopted once sent.
func New[T any](hold bool) *Pending[T] {
	return &Pending[T]{hold: hold, m: map[int64]*entry[T]{}}
}

// sending records item as about to be sent and returns its place.
func (p *Pending[T]) sending(item T) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	place := p.next
	p.next++
	p.m[place] = &entry[T]{item: item, sending: true}
	return place
}

// sent settles the send of place: a failed one is taken back (the new
// process got no whole message, so it cannot adopt it); a sent one waits
// unless a verdict came while it was sending.
func (p *Pending[T]) sent(place int64, ok bool) (T, Verdict) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[place]
	v := e.verdict
	switch {
	case !ok:
		v = TakeBack
	case !p.hold:
		v = Adopted
	case v == Waiting:
		v = p.ended
	}
	if v == Waiting {
		e.sending = false
		var none T
		return none, Waiting
	}
	delete(p.m, place)
	return e.item, v
}

// acked settles place as an acknowledgement says; a session still being
// sent is settled by its sender.
func (p *Pending[T]) acked(place int64, adopted bool) (T, Verdict) {
	v := TakeBack
	if adopted {
		v = Adopted
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var none T
	e, ok := p.m[place]
	if !ok || !p.hold {
		return none, Waiting
	}
	if e.sending {
		e.verdict = v
		return none, Waiting
	}
	delete(p.m, place)
	return e.item, v
}

// end settles every session left once the acknowledgements end with v;
// the ones still being sent are their senders' to settle.
func (p *Pending[T]) end(v Verdict) []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = v
	var out []T
	for place, e := range p.m {
		if !e.sending {
			out = append(out, e.item)
			delete(p.m, place)
		}
	}
	return out
}

// EndVerdict is what becomes of the sessions still waiting when the
// acknowledgements end with err: the new process's end of the socket
// closed (io.EOF, or ECONNRESET when it closed with messages unread) means
// it adopts nothing more, so the rest come back; anything else (this side
// closed it, or garbage came) says nothing of what it will still adopt,
// so the rest are let go.
func EndVerdict(err error) Verdict {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return TakeBack
	}
	return Adopted
}

// SendAll sends the sessions of in with send, in order, until in is closed.
// Once a send fails, failed runs and every session after it is taken back
// unsent. settle gets each session whose verdict is known, from here or
// from ReadAcks. It returns the send's error, if one failed.
func (p *Pending[T]) SendAll(in <-chan T, send func(T) error, failed func(), settle func(T, Verdict)) error {
	var err error
	for item := range in {
		if err != nil {
			settle(item, TakeBack)
			continue
		}
		place := p.sending(item)
		if err = send(item); err != nil {
			failed()
		}
		if item, v := p.sent(place, err == nil); v != Waiting {
			settle(item, v)
		}
	}
	return err
}

// ReadAcks reads the acknowledgements on hc until it ends, keeping the
// highest count in handled and waking wake at each; with hold it settles
// the session each names, and at the end the rest by EndVerdict. It
// returns why hc ended.
func (p *Pending[T]) ReadAcks(hc *handoverwire.Conn, handled *atomic.Int64, wake chan<- struct{}, settle func(T, Verdict)) error {
	for {
		data, files, err := hc.Recv()
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			v := EndVerdict(err)
			for _, item := range p.end(v) {
				settle(item, v)
			}
			return err
		}
		var a Ack
		if json.Unmarshal(data, &a) != nil {
			continue
		}
		if a.Place != nil {
			if item, v := p.acked(*a.Place, a.Adopted); v != Waiting {
				settle(item, v)
			}
		}
		if a.Handled > handled.Load() {
			handled.Store(a.Handled)
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// Acker writes the new process's acknowledgements, one at a time.
type Acker struct {
	hc      *handoverwire.Conn
	mu      sync.Mutex
	handled int64
	failed  bool
}

// NewAcker returns an Acker writing on hc.
func NewAcker(hc *handoverwire.Conn) *Acker { return &Acker{hc: hc} }

// ackWriteWait bounds the write of one acknowledgement: an old process
// too old to read them (one that did not ask for them) lets the socket
// fill, and must not hold the take-over for good; a current one reads them
// at once. A variable for tests.
var ackWriteWait = 10 * time.Second

// Ack tells the old process what became of the session at place; it
// returns once written (or once the old process is gone, or does not read
// them: it needs no more).
func (a *Acker) Ack(place int64, adopted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handled++
	if a.failed {
		return
	}
	data, _ := json.Marshal(Ack{Handled: a.handled, Place: &place, Adopted: adopted})
	_ = a.hc.SetWriteDeadline(time.Now().Add(ackWriteWait))
	if a.hc.Send(data) != nil {
		a.failed = true
	}
}
