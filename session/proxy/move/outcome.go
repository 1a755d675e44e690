package move

import (
	"errors"
	"sync/atomic"

	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/login"
)

// Outcome is how a move ended, counted per loop: moved, or failed before
// the switch (the player stays) because the new backend was not reachable,
// refused the login (a full server's kick, a forwarding it does not take),
// did not answer in time, or for another reason (another compression
// threshold, the session ended); a move lost after the switch is counted
// by its end reason (move_timeout, move_queue_full, move_lost) as well as
// lost here.
type Outcome uint8

// Outcomes, as counted.
const (
	Moved Outcome = iota
	Unreachable
	Refused
	TimedOut
	OtherFailure
	Lost
	Outcomes
)

var outcomeLabels = [Outcomes]string{"moved", "unreachable", "refused", "timeout", "failed", "lost"}

// String returns the outcome's label.
func (o Outcome) String() string { return outcomeLabels[o] }

// OutcomeOf classifies why a move failed before the switch.
func OutcomeOf(err error) Outcome {
	var le *login.Error
	var de *reactor.DialError
	switch {
	case errors.Is(err, errTimedOut) || errors.As(err, &de) && de.Timeout:
		return TimedOut
	case errors.As(err, &de):
		return Unreachable
	case errors.As(err, &le):
		return Refused
	}
	return OtherFailure
}

// Counts are a loop's moves by outcome.
type Counts [Outcomes]atomic.Int64

// AddTo adds each outcome's count to m under its label.
func (c *Counts) AddTo(m map[string]int64) {
	for o := range Outcomes {
		m[o.String()] += c[o].Load()
	}
}

// errTimedOut is why a move that ran out of time before the switch failed.
var errTimedOut = errors.New("the move timed out")
