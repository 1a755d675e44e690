package inspect

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tidegate/tidegate/internal/keyed"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/mc/play"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/proxy/login"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/reframe"
)

// State is the protocol state of a clientbound stream.
type State uint8

// States a Stream follows.
const (
	Play State = iota
	Configuration
)

// String returns the state's name.
func (s State) String() string {
	if s == Configuration {
		return "configuration"
	}
	return "play"
}

// IDs are the clientbound packet IDs of one protocol version a Stream
// and its users read; -1 where the version has none.
type IDs struct {
	Protocol            int32
	PlayDisconnect      int32
	PlayPlugin          int32
	StartConfiguration  int32
	ConfigDisconnect    int32
	ConfigPlugin        int32
	FinishConfiguration int32
	// ChatNBT: text components are network NBT (1.20.3 and later), not JSON.
	ChatNBT bool
}

// IDsOf returns the IDs of protocol v, and false for a version neither
// the configuration-state table (1.20.2+) nor the play table has.
func IDsOf(v int32) (IDs, bool) {
	if p, ok := mc.ConfigPacketsOf(v); ok {
		return IDs{Protocol: v, PlayDisconnect: p.PlayDisconnect, PlayPlugin: p.PlayPluginCB, StartConfiguration: p.StartConfiguration,
			ConfigDisconnect: p.ConfigDisconnect, ConfigPlugin: p.ConfigPluginCB, FinishConfiguration: p.FinishConfigurationCB, ChatNBT: p.ChatNBT}, true
	}
	if p, ok := play.PacketsOf(v); ok {
		return IDs{Protocol: v, PlayDisconnect: p.Disconnect, PlayPlugin: p.PluginCB, StartConfiguration: -1,
			ConfigDisconnect: -1, ConfigPlugin: -1, FinishConfiguration: -1}, true
	}
	return IDs{}, false
}

// Disconnect returns the Disconnect packet's ID in state st.
func (d IDs) Disconnect(st State) int32 {
	if st == Configuration {
		return d.ConfigDisconnect
	}
	return d.PlayDisconnect
}

// Plugin returns the plugin message's ID in state st.
func (d IDs) Plugin(st State) int32 {
	if st == Configuration {
		return d.ConfigPlugin
	}
	return d.PlayPlugin
}

// Frame is a whole frame offered to a User.
type Frame struct {
	State State
	ID    int32
	// Packet is the packet, ID and data, inflated; it aliases the
	// loop's scratch and is valid only during the call.
	Packet []byte
	// IDs are the stream's packet IDs.
	IDs *IDs
}

// Verdict is what a User does with a frame.
type Verdict uint8

// Verdicts.
const (
	Forward  Verdict = iota // not claimed: it goes on to the client
	Drop                    // claimed: it does not reach the client
	DropRest                // claimed, and the stream ends: nothing more of this backend reaches the client
)

// User looks at a stream's frames; its calls run on the loop, during
// Relay.
type User interface {
	// Wants reports whether the user may claim a packet of id in state
	// st: such a frame is held until whole and offered to Claim.
	Wants(st State, id int32) bool
	// Claim is offered each whole frame Wants wanted.
	Claim(f Frame) Verdict
}

// MaxUsers is how many users one stream can have.
const MaxUsers = 4

// Stream is one session's inspection: the backend's framing, where the
// walk stands, and its users.
type Stream struct {
	from      any // the backend connection the walk follows
	ids       IDs
	threshold int // the backend's compression threshold, -1 when off
	state     State
	rest      int  // bytes of a frame forwarded in part still to come
	stopped   bool // a user ended the stream (DropRest)
	users     [MaxUsers]User
	nUsers    int
	stopper   User
}

// IDs returns the stream's packet IDs.
func (s *Stream) IDs() *IDs { return &s.ids }

// State returns the protocol state the stream stands in.
func (s *Stream) State() State { return s.state }

// Users returns the stream's users.
func (s *Stream) Users() []User { return s.users[:s.nUsers] }

// reset starts the stream anew at the start of a backend's stream.
func (s *Stream) reset(ids IDs, threshold int) {
	s.ids, s.threshold, s.rest, s.stopped, s.stopper = ids, threshold, 0, false, nil
	s.state = Play
	if ids.FinishConfiguration >= 0 {
		s.state = Configuration // a 1.20.2+ login goes on in configuration
	}
}

// wants reports whether a user may claim id in the stream's state.
func (s *Stream) wants(id int32) bool {
	for _, u := range s.users[:s.nUsers] {
		if u.Wants(s.state, id) {
			return true
		}
	}
	return false
}

// follow moves the stream's state past a packet of id.
func (s *Stream) follow(id int32) {
	switch {
	case s.state == Configuration && id == s.ids.FinishConfiguration:
		s.state = Play
	case s.state == Play && id == s.ids.StartConfiguration:
		s.state = Configuration
	}
}

// Out is where a stream's forwarded bytes go: the client, encrypted with
// its ciphers (nil: not encrypted), counted as the relay counts, and
// re-framed when Reframe is not Same (its zero value is).
type Out struct {
	Client        Writer
	Ciphers       *login.Ciphers
	S2C           *mc.FrameCounter
	Bytes, Frames *atomic.Int64
	Reframe       reframe.Direction
}

// Writer is where forwarded bytes are written: the client's connection.
type Writer interface{ Write(b []byte) error }

// ErrFrame is the class of Relay's errors for a frame the backend should
// not have sent (a length past the frame limit, a compressed header or
// zlib stream that does not read).
var ErrFrame = errors.New("bad frame from the backend")

// errReframe marks Relay's errors from re-framing a frame for the client.
var errReframe = errors.New("re-framing")

// Reason is the end reason of a session whose Relay failed with err: a
// re-framed session's own reasons (reframe.Reason) for a packet declared
// past the limit or a frame that re-framing could not convert, as the
// relay without inspection counts them; bad_backend_frame otherwise.
func Reason(err error) reasons.Reason {
	switch {
	case mc.ErrorReason(err) == mc.ReasonInflateTooLarge, errors.Is(err, errReframe):
		return reframe.Reason(err)
	}
	return reasons.BadBackendFrame
}

// EndMessage is the log message of a session ended for r (Reason): the
// re-framed relay's own for its reasons, so that an end reads the same
// with inspection or without.
func EndMessage(r reasons.Reason) string {
	if r == reasons.BadBackendFrame {
		return "session closed: its backend sent a frame that does not read"
	}
	return "session closed: a frame could not be re-framed"
}

// Loop is one event loop's inspection: the streams of its sessions by
// key, and its scratch. The zero value is ready; it is used on its loop
// only.
type Loop[K comparable] struct {
	streams keyed.Map[K, *Stream]
	ids     idReader
	codec   reframe.Codec
}

// Start gives session k of protocol ids a stream at the start of its
// backend from's stream, whose compression threshold is threshold (-1:
// off), with users added when k has none yet; one k had is started anew
// for another backend, its users kept, and goes on as it was for the same
// one. It reports false (k has no stream) for no users.
func (l *Loop[K]) Start(k K, from any, ids IDs, threshold int, users ...User) bool {
	s := l.streams.Get(k)
	if s == nil {
		if len(users) == 0 || len(users) > MaxUsers {
			return false
		}
		s = &Stream{}
		s.nUsers = copy(s.users[:], users)
		l.streams.Set(k, s)
	} else if s.from == from {
		return true // relaying the same backend again (a move that failed)
	}
	s.from = from
	s.reset(ids, threshold)
	return true
}

// Ensure is Start with u among k's users: added to the users k's stream
// kept when it is not one of them. It reports false when there is no room
// for u (MaxUsers), the stream left as it was.
func (l *Loop[K]) Ensure(k K, from any, ids IDs, threshold int, u User) bool {
	s := l.streams.Get(k)
	if s == nil {
		return l.Start(k, from, ids, threshold, u)
	}
	if !slices.Contains(s.Users(), u) {
		if s.nUsers == MaxUsers {
			return false
		}
		s.users[s.nUsers] = u
		s.nUsers++
	}
	return l.Start(k, from, ids, threshold)
}

// Get returns k's stream, nil without one.
func (l *Loop[K]) Get(k K) *Stream { return l.streams.Get(k) }

// Stop forgets k's stream.
func (l *Loop[K]) Stop(k K) { l.streams.Delete(k) }

// Relay walks what from, k's backend, has buffered: what no user claims
// goes to out, what a user claims is consumed, a frame held stays in
// from's input. It returns the user that ended the stream (DropRest),
// once; after it everything from sends is dropped. k is the loop's
// scratch compressor, into which claimed frames are inflated. An error
// wraps ErrFrame: what came before the bad frame went on, the rest is
// dropped.
func (l *Loop[K]) Relay(k K, from *reactor.Conn, out *Out, z *mc.Compressor) (User, error) {
	s := l.streams.Get(k)
	buf, _ := from.Peek(-1)
	if s.stopped {
		from.Discard(-1)
		return nil, nil
	}
	n, err := l.walk(s, buf, out, z)
	from.Discard(n)
	if err != nil || s.stopped {
		from.Discard(-1)
	}
	u := s.stopper
	s.stopper = nil
	return u, err
}

// walk goes over buf, forwarding what is not claimed, and returns how
// many bytes it consumed.
func (l *Loop[K]) walk(s *Stream, buf []byte, out *Out, z *mc.Compressor) (int, error) {
	whole := !out.Reframe.Same() // a re-framed stream forwards whole frames only
	off, fwd := 0, 0             // buf[fwd:off] is to be forwarded
	if s.rest > 0 {
		off = min(s.rest, len(buf))
		s.rest -= off
	}
	var err error
	for off < len(buf) && err == nil {
		size, hl, ferr := mc.SplitFrame(buf[off:], mc.MaxFrameLength)
		if ferr != nil {
			err = fmt.Errorf("%w: %w", ErrFrame, ferr)
			break
		}
		complete := size > 0
		if !complete {
			v, k, _ := mc.ReadVarInt(buf[off:])
			if k == 0 || whole {
				break // the length is not all here, or only whole frames go on
			}
			size, hl = k+int(v), k
		}
		body := buf[off+hl : min(off+size, len(buf))]
		if len(body) == 0 && complete {
			off += size // an empty frame, which vanilla skips
			continue
		}
		id, ok, ierr := l.ids.read(body, s.threshold, complete)
		if ierr != nil {
			err = fmt.Errorf("%w: packet %d bytes into a %d-byte frame: %w", ErrFrame, hl, size, ierr)
			break
		}
		if !ok || s.wants(id) {
			if !complete {
				break // held until whole: it may be claimed
			}
			v, cerr := s.claim(id, body, z)
			if cerr != nil {
				err = fmt.Errorf("%w: %w", ErrFrame, cerr)
				break
			}
			if v != Forward {
				ferr := l.forward(buf[fwd:off], out)
				off += size
				fwd = off
				if v == DropRest || ferr != nil {
					return len(buf), ferr
				}
				continue
			}
		}
		s.follow(id)
		if !complete {
			s.rest = size - (len(buf) - off)
			off = len(buf)
			break
		}
		off += size
	}
	if ferr := l.forward(buf[fwd:off], out); ferr != nil && err == nil {
		err = ferr
	}
	return off, err
}

// claim offers a whole frame's packet to the users that want it.
func (s *Stream) claim(id int32, body []byte, z *mc.Compressor) (Verdict, error) {
	packet := body
	if s.threshold >= 0 {
		var err error
		if packet, err = z.Inflate(body, s.threshold, mc.MaxClientboundUncompressed); err != nil {
			return Forward, err
		}
	}
	f := Frame{State: s.state, ID: id, Packet: packet, IDs: &s.ids}
	for _, u := range s.users[:s.nUsers] {
		if !u.Wants(s.state, id) {
			continue
		}
		switch v := u.Claim(f); v {
		case DropRest:
			s.stopped, s.stopper = true, u
			return v, nil
		case Drop:
			return v, nil
		}
	}
	return Forward, nil
}

// forward sends b, frames in the backend's framing, on to the client.
func (l *Loop[K]) forward(b []byte, out *Out) error {
	if len(b) == 0 {
		return nil
	}
	out.Frames.Add(int64(out.S2C.Count(b)))
	out.Bytes.Add(int64(len(b)))
	if out.Reframe.Same() {
		out.Ciphers.Outbound(b, true)
		return out.Client.Write(b)
	}
	for len(b) > 0 {
		conv, n, err := l.codec.Convert(b, out.Reframe, nil)
		if len(conv) > 0 {
			out.Ciphers.Outbound(conv, true)
			_ = out.Client.Write(conv)
		}
		if err != nil {
			return fmt.Errorf("%w: %w: %w", ErrFrame, errReframe, err)
		}
		if n == 0 {
			return nil // not a whole frame: cannot happen, walk gives whole ones
		}
		b = b[n:]
	}
	return nil
}
