package status

import (
	"errors"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
)

// LegacyPingWait is how long a legacy ping whose input stopped at FE or
// FE 01 waits for the rest of a 1.6 ping (1.6 clients write it a few bytes
// at a time) before it is answered as a Beta or 1.4 ping. A variable only
// so that a test can make it long enough to be sure which side of it a
// piece arrived on.
var LegacyPingWait = 50 * time.Millisecond

// LegacyStep is what a session does next with its input that starts with
// 0xFE, a pre-1.7 server list ping (see protocol/mc ParseLegacyPing).
type LegacyStep uint8

// The steps ReadLegacy decides.
const (
	// LegacyModern: not a legacy ping after all but a modern frame whose
	// length starts with 0xFE; the handshake goes on.
	LegacyModern LegacyStep = iota
	// LegacyBad: a bad ping, refused as a bad handshake.
	LegacyBad
	// LegacyMore: not whole, or perhaps the start of a 1.6 ping: wait for more.
	LegacyMore
	// LegacyWhole: a whole ping, to answer.
	LegacyWhole
)

// ReadLegacy decides what to do with buf, a client's input that starts
// with 0xFE, and returns the ping when it is whole (LegacyWhole) and the
// error when it is bad (LegacyBad). With waited (the input stopped for
// LegacyPingWait, or ended) a Beta or 1.4 ping is answered as what it is
// rather than waiting for the rest of a 1.6 ping, and input that is no
// legacy ping is bad: it was read as one before.
func ReadLegacy(buf []byte, waited bool) (LegacyStep, mc.LegacyPing, error) {
	p, n, err := mc.ParseLegacyPing(buf)
	switch {
	case errors.Is(err, mc.ErrNotLegacyPing) && !waited:
		return LegacyModern, p, nil
	case err != nil:
		return LegacyBad, p, err
	case n == 0 || (!waited && p.Kind != mc.LegacyPing16 && n == len(buf)):
		return LegacyMore, p, nil
	}
	return LegacyWhole, p, nil
}
