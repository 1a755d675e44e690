package login

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Login plugin channels (Forge's fml:loginwrapper and fml:handshake,
// Fabric's networking API, a plugin's own) at a login the proxy completes:
// the backend's Login Plugin Requests on any channel but
// velocity:player_info, which the proxy answers itself, are relayed to the
// client (1.13 and later), under their own message IDs, and the client's
// Login Plugin Responses back to the backend. The client's side of the
// login is plain (uncompressed) until its Login Success, so requests go to
// it in that framing and its answers are re-framed for the backend's
// threshold. Only answers to a request relayed and not yet answered may
// come from the client before its Login Success: anything else (a second
// answer, a Login Acknowledged ahead of its Login Success, any other
// packet) ends the login as a protocol error. A backend that sends Login
// Success while a relayed request is unanswered has its Login Success held
// until the client has answered them all, so the client's answers reach the
// backend in the login state and in the framing it reads them in.

// Bounds of the relayed login channels.
const (
	// MaxPluginResponse bounds a client's Login Plugin Response, as vanilla
	// servers do (1 MiB of data).
	MaxPluginResponse = 1<<20 + 16
	// MaxPendingRequests bounds the backend's relayed requests awaiting an
	// answer, and MaxPendingBytes their size together: past either the
	// backend's login fails (KindBadPacket).
	MaxPendingRequests = 1024
	MaxPendingBytes    = 16 << 20
)

// ErrClientPacket is the cause of a ClientError: the client sent a packet
// it must not before its Login Success.
var ErrClientPacket = errors.New("client login packet")

// ClientError is why what a client sent before its Login Success was
// refused (see FeedClient).
type ClientError struct{ Err error }

func (e *ClientError) Error() string { return e.Err.Error() }
func (e *ClientError) Unwrap() error { return e.Err }

// relays reports whether the backend's plugin requests on other channels
// than velocity:player_info go to the client: at the first login of a
// client of 1.13 or later (a move's client is past its login and cannot
// answer; Again turns it off).
func (b *Backend) relays() bool {
	return b.relay && mc.LoginLayoutOf(b.protocol).PluginMessages
}

// relayRequest passes the backend's request pr (body is the whole packet)
// to the client, in its plain framing.
func (b *Backend) relayRequest(pr mc.PluginRequest, body []byte) error {
	if slices.Contains(b.pending, pr.MessageID) {
		return fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login plugin request %d on %q: a request with that id is still unanswered", pr.MessageID, pr.Channel))
	}
	if len(b.pending) >= MaxPendingRequests || b.pendingBytes+len(body) > MaxPendingBytes {
		return fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login plugin request %d on %q: %d requests (%d bytes) unanswered, at most %d (%d bytes)",
			pr.MessageID, pr.Channel, len(b.pending), b.pendingBytes, MaxPendingRequests, MaxPendingBytes))
	}
	b.pending = append(b.pending, pr.MessageID)
	b.pendingBytes += len(body)
	b.client = mc.AppendVarInt(b.client, int32(len(body)))
	b.client = append(b.client, body...)
	return nil
}

// Awaiting reports how many relayed requests the client has not answered.
func (b *Backend) Awaiting() int { return len(b.pending) }

// SuccessHeld reports whether the backend's Login Success is held for the
// client's answers to relayed requests.
func (b *Backend) SuccessHeld() bool { return b.successHeld }

// LoggedIn reports whether the client's login is finished: Feed or
// FeedClient returned what finishes it.
func (b *Backend) LoggedIn() bool { return b.done }

// FeedClient consumes what the client sent before its Login Success, in
// (in the clear; it may alias a read buffer: it is copied when a frame is
// incomplete), and returns what to send the backend (the client's answers
// in the backend's framing) and, when the last answer frees a Login Success
// the backend sent early, what finishes the client's login, to send it
// (LoggedIn then reports true). The results are valid until the next call
// of FeedClient or Feed; k is the loop's scratch compressor. A failure is a
// *ClientError, or an *Error for a backend's login that cannot finish.
func (b *Backend) FeedClient(in []byte, k *mc.Compressor) (toBackend, toClient []byte, err error) {
	b.out, b.client = b.out[:0], b.client[:0]
	if len(b.held) > 0 {
		b.held = append(b.held, in...)
		in = b.held
	}
	off := 0
	for off < len(in) {
		if len(b.pending) == 0 {
			return b.out, nil, &ClientError{fmt.Errorf("%w: %d bytes before the client's Login Success, with no login plugin request to answer", ErrClientPacket, len(in)-off)}
		}
		n, hl, err := mc.SplitFrame(in[off:], MaxPluginResponse)
		if err != nil {
			return b.out, nil, &ClientError{fmt.Errorf("client login frame: %w", err)}
		}
		if n == 0 {
			break
		}
		if err := b.answer(in[off+hl:off+n], k); err != nil {
			return b.out, nil, err
		}
		off += n
	}
	b.held = append(b.held[:0], in[off:]...)
	if len(b.pending) == 0 && b.successHeld {
		if len(b.held) > 0 {
			return b.out, nil, &ClientError{fmt.Errorf("%w: %d bytes past the client's last login plugin response", ErrClientPacket, len(b.held))}
		}
		b.successHeld = false
		return b.out, b.finish(k), nil
	}
	return b.out, nil, nil
}

// answer passes one client packet, body, to the backend: a Login Plugin
// Response to a relayed request, and nothing else.
func (b *Backend) answer(body []byte, k *mc.Compressor) error {
	id, _, err := mc.ParsePacketID(body)
	if err != nil {
		return &ClientError{fmt.Errorf("client login packet id: %w", err)}
	}
	if id != mc.PacketLoginPluginResponse {
		return &ClientError{fmt.Errorf("%w 0x%02x before the client's Login Success (%d login plugin requests unanswered)", ErrClientPacket, id, len(b.pending))}
	}
	resp, err := mc.ParsePluginResponse(body)
	if err != nil {
		return &ClientError{err}
	}
	i := slices.Index(b.pending, resp.MessageID)
	if i < 0 {
		return &ClientError{fmt.Errorf("%w: login plugin response %d answers no request relayed to the client", ErrClientPacket, resp.MessageID)}
	}
	b.pending = slices.Delete(b.pending, i, i+1)
	if len(b.pending) == 0 {
		b.pendingBytes = 0
	}
	b.out = k.AppendFrame(b.out, body, b.threshold)
	return nil
}

// finish returns what finishes the client's login, after whatever b.client
// holds (relayed requests), and marks the login done.
func (b *Backend) finish(k *mc.Compressor) []byte {
	b.done = true
	b.client, _ = b.AppendClientLogin(b.client, k)
	return b.client
}
