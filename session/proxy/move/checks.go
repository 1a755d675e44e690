package move

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Session is what Check reads of a session asked to move.
type Session struct {
	Terminated bool // the proxy completed its login
	Protocol   int32
	Player     *Player // nil until it relays
	Relaying   bool    // in play, relaying, not half-closed
	Framed     bool    // its frame counters follow both streams
	Reframed   bool    // its client and backend compress at different thresholds (session/proxy/reframe)
}

// Check says why a session cannot be moved, nil when it can.
func Check(s Session) error {
	switch {
	case !s.Terminated:
		return errors.New("its login is relayed untouched (login: transparent): only a login the proxy completes can be moved")
	case !mc.HasConfigurationState(s.Protocol) && !supportedPlay(s.Protocol):
		return fmt.Errorf("protocol %d: %w", s.Protocol, ErrTooOld)
	case s.Player == nil || !s.Relaying:
		return errors.New("it is not in play, or its relay is half-closed")
	case s.Player.Move != nil:
		return errors.New("it is already being moved")
	case !s.Framed:
		return errors.New("its relay lost the frames")
	case s.Reframed:
		// A move hands the client's framing to the new backend unchanged;
		// re-framing state is not carried over to it yet.
		return errors.New("its client and backend compress at different thresholds (re-framed): such a session cannot be moved yet")
	}
	return nil
}

// GoneKick is the play Disconnect packet for a player whose backend
// ended and whom no fallback took in (err: why the last one did not).
func GoneKick(p *Player, err error) []byte {
	return p.kick("The server went away and no other took you in: " + Why(err))
}

// FallbackNotice is the chat component a player moved off a backend that
// ended reads: from the group it was on, to the one it is moved to.
func FallbackNotice(p *Player, from, to string) []byte {
	return mc.AppendTextComponent(nil, p.Packets, "The server you were on ("+from+") went away: you are now on "+to, "yellow")
}
