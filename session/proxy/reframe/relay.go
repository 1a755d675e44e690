package reframe

import (
	"errors"

	"github.com/tidegate/tidegate/internal/keyed"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
)

// Loop is one event loop's re-framing: its Codec and the Pairs of its
// re-framed sessions, keyed by session (a session has no room for them,
// and most sessions need none). It is used on its loop only.
type Loop[K comparable] struct {
	codec Codec
	pairs keyed.Map[K, Pair]
}

// Start gives session k, whose backend login b is done, its Pair when its
// client's threshold differs from its backend's (login.Backend.Thresholds),
// and reports whether it did: the session's frames are then re-framed.
func (l *Loop[K]) Start(k K, b *login.Backend) bool {
	p := NewPair(b.Thresholds())
	if p.Same() {
		return false
	}
	l.pairs.Set(k, p)
	return true
}

// S2C returns session k's clientbound direction; its zero value (Same)
// when k is not re-framed.
func (l *Loop[K]) S2C(k K) Direction { return l.pairs.Get(k).S2C }

// Stop forgets session k.
func (l *Loop[K]) Stop(k K) { l.pairs.Delete(k) }

// Relay relays the whole frames from has buffered to to, re-framed in
// session k's direction (serverbound when fromClient), decrypting what an
// encrypted client sent and encrypting what goes to it with cr (nil: the
// client is not encrypted). It writes in batches of about FlushAt bytes
// and, unless final (from is at its end: what is left would be lost),
// stops consuming once from is paused by flow control: the rest stays in
// from's input and is offered again when from resumes. A frame cut by the
// end of the input stays too. It counts the frames consumed with fs and
// returns the bytes and frames consumed; an error (see Codec.Convert) comes
// after what was converted before it is written.
func (l *Loop[K]) Relay(k K, from, to *reactor.Conn, fromClient bool, cr *login.Ciphers, fs *mc.FrameCounter, final bool) (consumed, frames int, err error) {
	p := l.pairs.Get(k)
	d, dec, enc := p.S2C, (*mc.CFB8)(nil), (*mc.CFB8)(nil)
	if fromClient {
		d = p.C2S
	}
	if cr != nil && fromClient {
		dec = cr.Decrypt
	} else if cr != nil {
		enc = cr.Encrypt
	}
	in, _ := from.Peek(-1)
	for {
		out, n, err := l.codec.Convert(in[consumed:], d, dec)
		if err == nil {
			frames += fs.Count(in[consumed : consumed+n]) // in the clear, as the relay counts
		}
		consumed += n
		if len(out) > 0 {
			if enc != nil {
				enc.XORKeyStream(out, out)
			}
			_ = to.Write(out)
		}
		if err != nil || len(out) < FlushAt || (!final && from.Backpressure()) {
			from.Discard(consumed)
			if !final {
				from.Backpressure()
			}
			return consumed, frames, err
		}
	}
}

// Reason is the end reason of a session Relay failed for with err.
func Reason(err error) reasons.Reason {
	switch {
	case errors.Is(err, ErrTooLarge):
		return reasons.ReframeTooLarge
	case mc.ErrorReason(err) == mc.ReasonInflateTooLarge:
		return reasons.InflateTooLarge
	}
	return reasons.BadCompression
}
