package mcbackend

import (
	"sync/atomic"
	"time"

	"github.com/tidegate/tidegate/internal/delayq"
	"github.com/tidegate/tidegate/reactor"
)

// maxHeldBytes is how much echo a connection may hold under ReplyDelay
// before the backend stops reading it; it reads again once half is written.
const maxHeldBytes = 1 << 20

// delayer holds the play echoes of one loop's connections for
// Config.ReplyDelay. Each connection keeps its held bytes in a delayq.Queue;
// the loop keeps a list of (connection, due time) in the order pushed,
// which is also due order since every hold is the same. One goroutine per
// loop sleeps on a precise timer until the oldest entry is due and then
// runs flush on the loop, which writes everything due.
type delayer struct {
	l    *reactor.Loop
	base time.Time
	hold time.Duration

	marks []dueMark // loop only
	mhead int

	next    atomic.Int64  // due time of marks[mhead], 0 when there is none
	wake    chan struct{} // marks became non-empty
	flushed chan struct{} // flush ran
	flushFn func()
	sl      *delayq.Sleeper
	lc      *loopCounters
}

// dueMark says that s holds bytes due at due.
type dueMark struct {
	s   *session
	due int64
}

// newDelayer starts the loop's waker goroutine, which ends with the server.
func newDelayer(l *reactor.Loop, hold time.Duration, lc *loopCounters, done <-chan struct{}) (*delayer, error) {
	sl, err := delayq.NewSleeper()
	if err != nil {
		return nil, err
	}
	d := &delayer{l: l, base: time.Now(), hold: hold, sl: sl, lc: lc,
		wake: make(chan struct{}, 1), flushed: make(chan struct{}, 1)}
	d.flushFn = d.flush
	go d.run(done)
	return d, nil
}

func (d *delayer) now() int64 { return int64(time.Since(d.base)) }

// run wakes the loop whenever held bytes fall due.
func (d *delayer) run(done <-chan struct{}) {
	defer d.sl.Close()
	for {
		due := d.next.Load()
		if due == 0 {
			select {
			case <-d.wake:
				continue
			case <-done:
				return
			}
		}
		if d.sl.SleepUntil(d.base.Add(time.Duration(due))) != nil {
			return
		}
		if d.l.Execute(d.flushFn) != nil {
			return // the server is stopping
		}
		select {
		case <-d.flushed:
		case <-done:
			return
		}
	}
}

// hold queues p, echo bytes of s, for the hold. It runs on the loop.
func (d *delayer) push(s *session, p []byte) {
	if len(p) == 0 {
		return
	}
	now := d.now()
	if s.held == nil {
		s.held, _ = delayq.New(d.hold) // d.hold > 0: no error
	}
	s.held.Push(now, p)
	due := now + int64(d.hold)
	if n := len(d.marks); n > d.mhead && d.marks[n-1].s == s && d.marks[n-1].due == due {
		return
	}
	d.marks = append(d.marks, dueMark{s: s, due: due})
	if len(d.marks)-d.mhead == 1 {
		d.next.Store(due)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	if s.held.Len() > maxHeldBytes && !s.heldPause {
		s.heldPause = true
		s.c.PauseRead()
	}
}

// flush writes every held byte that is due, on the loop.
func (d *delayer) flush() {
	now := d.now()
	for d.mhead < len(d.marks) && d.marks[d.mhead].due <= now {
		m := d.marks[d.mhead]
		d.marks[d.mhead] = dueMark{}
		d.mhead++
		s := m.s
		out := s.held.Due(now)
		if len(out) == 0 {
			continue // written with an earlier mark
		}
		d.lc.heldWrites.Add(1)
		d.lc.heldLateNs.Add(now - m.due)
		if s.c.Write(out) != nil {
			s.held.Take(s.held.Len()) // closed: drop what it held
			continue
		}
		s.held.Take(len(out))
		s.c.Backpressure()
		if s.heldPause && s.held.Len() <= maxHeldBytes/2 {
			s.heldPause = false
			s.c.ResumeRead()
		}
	}
	if d.mhead == len(d.marks) {
		d.marks, d.mhead = d.marks[:0], 0
		d.next.Store(0)
	} else {
		if d.mhead > len(d.marks)/2 {
			n := copy(d.marks, d.marks[d.mhead:])
			clear(d.marks[n:])
			d.marks, d.mhead = d.marks[:n], 0
		}
		d.next.Store(d.marks[d.mhead].due)
	}
	select {
	case d.flushed <- struct{}{}:
	default:
	}
}

// holdEmitter is the emitter of a play echo under ReplyDelay: the bytes go
// into the connection's held queue instead of the loop's batch.
type holdEmitter struct {
	d *delayer
	s *session
}

func (e holdEmitter) Copy(p []byte) { e.d.push(e.s, p) }
func (e holdEmitter) Add(p []byte)  { e.d.push(e.s, p) }
