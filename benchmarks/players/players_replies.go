package players

// This file holds how a players phase checks the replies it reads: each
// session's bytes buffered until a whole frame is there, then compared
// with what its sender sent and timed.

import (
	"fmt"

	"github.com/tidegate/tidegate/benchmarks/mcclient"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// replyBuffer holds the reply bytes of one session not yet checked. Only
// the goroutine reading the session uses it.
type replyBuffer struct {
	small, buf []byte
	large      *[]byte // buf, while a frame longer than small is read
	n          int     // bytes in buf
	scratch    []byte  // the expected frame of a check
	// lat is where the session's round trips are recorded.
	lat *latencyShard
}

// newReplyBuffer returns the buffer of a session whose replies start with
// leftover and whose round trips go to lat: the first consume takes start
// bytes, which are in it.
func newReplyBuffer(leftover []byte, lat *latencyShard) (rb *replyBuffer, start int) {
	rb = &replyBuffer{small: make([]byte, max(smallReadBuffer, len(leftover))), lat: lat}
	rb.buf = rb.small
	return rb, copy(rb.buf, leftover)
}

// replyReaders read the sessions' replies (players_read_*.go).
type replyReaders interface {
	// stop ends reading and waits until no reader runs.
	stop()
}

// space returns where the next read goes: after the bytes held, in a large
// buffer from the pool while a frame longer than the small one is read, in
// the small one again once the large one holds no more than fits there.
func (ph *playersPhase) space(rb *replyBuffer) []byte {
	if v, h, _ := mc.ReadVarInt(rb.buf[:rb.n]); h > 0 && h+int(v) > len(rb.buf) {
		rb.large = ph.largeBuffers.Get().(*[]byte)
		rb.n = copy(*rb.large, rb.buf[:rb.n])
		rb.buf = *rb.large
	} else if rb.large != nil && rb.n <= len(rb.small) {
		rb.n = copy(rb.small, rb.buf[:rb.n])
		rb.buf = rb.small
		ph.largeBuffers.Put(rb.large)
		rb.large = nil
	}
	return rb.buf[rb.n:]
}

// consume checks the whole frames among the m bytes just read into
// space(rb) at now, and keeps the rest. It returns false when the stream
// cannot be split into frames any more, which fails the phase.
func (ph *playersPhase) consume(pl *player, rb *replyBuffer, m int, now int64) bool {
	pl.recvBytes.Add(int64(m))
	rb.n += m
	pos := 0
	for {
		frameLen, headerLen, err := mc.SplitFrame(rb.buf[pos:rb.n], ph.p.maxReplyBody())
		if err != nil {
			pl.broken.Store(true)
			ph.fail(fmt.Errorf("session %d, reply to frame %d: %w: %w", pl.id, pl.recv.Load(), mcclient.ErrFramingLost, err))
			return false
		}
		if frameLen == 0 {
			break
		}
		ph.check(pl, rb, rb.buf[pos+headerLen:pos+frameLen], now)
		pos += frameLen
	}
	rb.n = copy(rb.buf, rb.buf[pos:rb.n])
	return true
}

// readFailed ends the phase for a connection that ended or failed while
// replies were due (at the phase's end that is expected).
func (ph *playersPhase) readFailed(pl *player, err error) {
	if ph.closing.Load() {
		return
	}
	pl.broken.Store(true)
	if len(pl.lastOther) > 0 {
		// A proxy's kick (Disconnect) is one of its own frames: say it.
		err = fmt.Errorf("%w (the proxy's last own frame: packet 0x%02x, %q)", err, pl.lastOther[0], pl.lastOther[1:])
	}
	ph.fail(fmt.Errorf("session %d: reading the reply to frame %d: %w", pl.id, pl.recv.Load(), err))
}

// check checks one reply of pl, received at now, and records its round
// trip in rb.lat when its frame was due in the measured interval; rb.scratch
// holds the expected frame.
func (ph *playersPhase) check(pl *player, rb *replyBuffer, body []byte, now int64) {
	want := pl.recv.Load()
	if ph.p.Modern && len(body) > 0 && body[0] != ph.k.echoID && body[0] != mcbackend.ChunkRequestPacketID {
		// A packet of the server's own in play (Gate's channel
		// registration, say): not a reply. Skipping it hides nothing, as a
		// reply missing for it shows as lost or unanswered.
		ph.others.Add(1)
		pl.lastOther = append(pl.lastOther[:0], body[:min(len(body), 120)]...)
		return
	}
	session, seq, sent, ok := ph.k.replyFields(body)
	switch {
	case !ok || session != pl.id:
		ph.count(&ph.corrupted, 1, fmt.Errorf("session %d, reply to frame %d: not a reply of this session (%d bytes, session field %d)",
			pl.id, want, len(body), session))
		pl.recv.Store(want + 1)
		return
	case seq < want:
		ph.count(&ph.duplicated, 1, fmt.Errorf("session %d: reply to frame %d again, after that to frame %d", pl.id, seq, want-1))
		return
	case seq >= pl.sent.Load():
		ph.count(&ph.corrupted, 1, fmt.Errorf("session %d: reply to frame %d, which was not sent (%d sent)", pl.id, seq, pl.sent.Load()))
		pl.recv.Store(want + 1)
		return
	case seq > want:
		ph.count(&ph.lost, int64(seq-want), fmt.Errorf("session %d: reply to frame %d where frame %d's was due (%d missing)",
			pl.id, seq, want, seq-want))
	}
	pl.recv.Store(seq + 1)
	chunk, scratch, err := ph.k.verify(body, session, seq, sent, rb.scratch)
	rb.scratch = scratch
	if err != nil {
		ph.count(&ph.corrupted, 1, err)
		return
	}
	if ph.measured(session, seq) {
		rb.lat.record(now-sent, chunk)
	}
}
