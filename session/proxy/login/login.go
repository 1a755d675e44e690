// Package login is the proxy's side of a login it completes itself
// (login: offline): the backend login carrying the player's identity, and
// the client's Set Compression and Login Success.
//
// The proxy relays the client's handshake (rewritten for bungeecord
// forwarding) and a Login Start of its own (AppendLoginStart) to the
// backend, then reads the backend's
// answers with a Backend: Set Compression, a Login Plugin Request it
// answers (velocity:player_info, signed, for velocity forwarding; any other
// channel as not understood), Disconnect, and Login Success. Only then is
// the client told its compression threshold (the backend's, or the
// group's compression_threshold) and sent a Login Success of the proxy's
// own, with the offline-mode UUID: with equal thresholds on both sides
// every later frame passes unchanged, so the relay stays the transparent
// one (and a terminated session in play can be handed over like any
// other); with unequal ones the relay re-frames (session/proxy/reframe). A 1.20.2+ client's Login Acknowledged is then relayed to
// the backend, which waits for it, and the configuration state with it.
//
// A Backend is a pure state machine over buffered bytes, run on the
// session's loop: no goroutine, no socket.
package login

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// MaxBackendPacket bounds a backend's login packet once inflated: a
// disconnect reason is the largest a backend sends in login.
const MaxBackendPacket = 1 << 20

// Settings are a group's terminated-login settings, made once per
// configuration.
type Settings struct {
	Forwarding config.Forwarding
	Secret     []byte // velocity forwarding
	// Threshold is the client's compression threshold when FollowBackend
	// is false (-1: off); frames are re-framed when the backend's differs.
	Threshold     int
	FollowBackend bool
	// Online: the client is authenticated first (login: online).
	Online bool
}

// NewSettings returns the settings of group g of cfg, or nil when the
// group's logins are relayed untouched.
func NewSettings(cfg *config.Config, g config.GroupConfig) *Settings {
	mode := g.LoginMode()
	if mode == config.LoginTransparent {
		return nil
	}
	th, follow := g.ClientThreshold()
	return &Settings{Forwarding: cfg.ForwardingOf(g), Secret: []byte(g.ForwardingSecret.Reveal()), Threshold: th, FollowBackend: follow, Online: mode == config.LoginOnline}
}

// Failure kinds, the detail label of an Error.
const (
	KindRefused        = "backend_refused"       // the backend sent Disconnect
	KindOnlineMode     = "backend_online_mode"   // the backend asked for encryption
	KindNotSetUp       = "forwarding_not_set_up" // the backend did not ask for velocity forwarding, or asked for it unasked
	KindBadPacket      = "bad_backend_packet"    // malformed, oversized or out-of-place
	KindClosed         = "backend_closed"        // the backend closed before Login Success
	textNotSetUp       = "The server behind the proxy is not set up for the proxy's player forwarding"
	textOnlineMode     = "The server behind the proxy is in online mode; it must be offline behind the proxy"
	textBadBackend     = "The server behind the proxy sent a malformed login"
	textBackendClosed  = "The server behind the proxy closed the connection"
	maxDisconnectQuote = 256
)

// Error is why a backend login failed: Kind is a stable label, Text what
// the player reads (RefusedJSON, for KindRefused, the backend's own
// reason), and Err the cause for the log.
type Error struct {
	Kind        string
	Text        string
	RefusedJSON []byte
	Err         error
}

func (e *Error) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(kind, text string, err error) *Error { return &Error{Kind: kind, Text: text, Err: err} }

// Closed returns the Error for a backend that closed before Login Success.
func Closed() *Error {
	return fail(KindClosed, textBackendClosed, errors.New("the backend closed the connection during the login"))
}

// Backend is one player's login to a backend.
type Backend struct {
	set       *Settings
	protocol  int32
	name      []byte
	uuid      [16]byte
	clientIP  string
	key       *mc.PlayerKey
	props     []mc.Property // the authenticated profile's (online.go)
	propsJSON []byte
	threshold int // the backend's; -1 until Set Compression
	asked     bool
	out       []byte // to the backend
	client    []byte // to the client
	packet    []byte

	// Login plugin channels relayed to the client (plugin.go).
	relay        bool
	pending      []int32 // relayed requests' message IDs, unanswered
	pendingBytes int
	held         []byte // an incomplete frame of the client's
	successHeld  bool   // the backend's Login Success came with requests unanswered
	done         bool
}

// NewBackend starts the backend login of the player whose Login Start body
// (ID and data) a client of protocol version v sent from clientIP. The
// name and key are copied.
func NewBackend(set *Settings, v int32, loginStart []byte, clientIP string) (*Backend, error) {
	ls, err := mc.ParseLoginStartAt(loginStart, v)
	if err != nil {
		return nil, fmt.Errorf("login start of protocol %d: %w", v, err)
	}
	b := &Backend{set: set, protocol: v, name: append([]byte(nil), ls.Name...), clientIP: clientIP, threshold: -1, relay: true}
	b.uuid = mc.OfflineUUID(b.name)
	if ls.Key != nil {
		b.key = &mc.PlayerKey{Expiry: ls.Key.Expiry, PublicKey: append([]byte(nil), ls.Key.PublicKey...), Signature: append([]byte(nil), ls.Key.Signature...)}
	}
	return b, nil
}

// UUID returns the player's UUID: the offline-mode one, or the
// authenticated one (Authenticated).
func (b *Backend) UUID() [16]byte { return b.uuid }

// AppendLoginStart appends, in place of the client's Login Start frame at
// the start of clientInput, the backend's own to dst, and returns the
// extended slice and the bytes of clientInput it replaces (the client's
// frame). The backend's carries the player's name, the authenticated
// profile's in online mode (a client may type it in another case), its
// UUID where the version has one, and never the client's 1.19-1.19.2 chat
// key: an offline backend checks that key against the UUID it works out
// itself, or against Mojang's signature (node-minecraft-protocol's server
// refuses the login), and velocity forwarding carries it signed instead.
// A nil Backend (a relayed login) or an input without a whole frame
// appends and replaces nothing.
func (b *Backend) AppendLoginStart(dst, clientInput []byte) ([]byte, int) {
	if b == nil {
		return dst, 0
	}
	n, _, err := mc.SplitFrame(clientInput, mc.MaxFrameLength)
	if err != nil || n == 0 {
		return dst, 0 // read whole before the backend was dialled: not reached
	}
	return b.AppendOwnLoginStart(dst), n
}

// Feed consumes the backend's login frames in in and returns the bytes
// consumed, what to send the backend, and what to send the client: the
// login plugin requests relayed to it (plugin.go) and, once Login Success
// was consumed and nothing relayed is unanswered, what finishes the
// client's login (see AppendClientLogin; LoggedIn then reports true):
// in[consumed:] is then the start of the backend's configuration or play
// stream, to relay. A Login Success that came with requests unanswered is
// held (FeedClient finishes the login) and Feed consumes nothing more. The
// results are valid until the next call of Feed or FeedClient; k is the
// loop's scratch compressor. A failure is an *Error.
func (b *Backend) Feed(in []byte, k *mc.Compressor) (consumed int, toBackend, toClient []byte, err error) {
	b.out, b.client = b.out[:0], b.client[:0]
	for {
		if b.successHeld || b.done {
			return consumed, b.out, b.toClient(), nil
		}
		frameLen, hl, err := mc.SplitFrame(in[consumed:], mc.MaxFrameLength)
		if err != nil {
			return consumed, b.out, nil, fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login frame: %w", err))
		}
		if frameLen == 0 {
			return consumed, b.out, b.toClient(), nil
		}
		body := in[consumed+hl : consumed+frameLen]
		consumed += frameLen
		if len(body) == 0 {
			continue
		}
		if b.threshold >= 0 {
			if body, err = k.Inflate(body, 0, MaxBackendPacket); err != nil {
				return consumed, b.out, nil, fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login frame: %w", err))
			}
		}
		done, err := b.handle(body, k)
		switch {
		case err != nil:
			return consumed, b.out, nil, err
		case done && len(b.pending) > 0:
			b.successHeld = true
		case done:
			return consumed, b.out, b.finish(k), nil
		}
	}
}

// toClient returns what Feed has for the client, nil when nothing.
func (b *Backend) toClient() []byte {
	if len(b.client) == 0 {
		return nil
	}
	return b.client
}

// DisconnectFrame returns the login Disconnect frame for the player of a
// failed backend login err: the backend's own reason when it refused,
// else what went wrong; nil when there is nothing to say.
func DisconnectFrame(err error) []byte {
	var le *Error
	switch {
	case !errors.As(err, &le):
		return nil
	case le.RefusedJSON != nil:
		return mc.AppendLoginDisconnect(nil, le.RefusedJSON)
	case le.Text != "":
		return mc.AppendLoginDisconnect(nil, []byte(`{"text":"`+le.Text+`"}`))
	}
	return nil
}

// handle handles one backend login packet.
func (b *Backend) handle(body []byte, k *mc.Compressor) (done bool, err error) {
	id, data, err := mc.ParsePacketID(body)
	if err != nil {
		return false, fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login packet id: %w", err))
	}
	switch id {
	case mc.PacketLoginDisconnect:
		reason, err := mc.ParseLoginDisconnect(body)
		if err != nil {
			return false, fail(KindBadPacket, textBadBackend, fmt.Errorf("backend disconnect: %w", err))
		}
		e := fail(KindRefused, "", fmt.Errorf("the backend refused the login: %.*s", maxDisconnectQuote, reason))
		e.RefusedJSON = append([]byte(nil), reason...)
		return false, e
	case mc.PacketEncryptionRequest:
		return false, fail(KindOnlineMode, textOnlineMode, errors.New("the backend sent Encryption Request: it is in online mode (set online-mode=false behind the proxy)"))
	case mc.PacketSetCompression:
		th, err := mc.ParseSetCompression(body)
		if err != nil {
			return false, fail(KindBadPacket, textBadBackend, err)
		}
		b.threshold = max(int(th), -1)
		return false, nil
	case mc.PacketLoginPluginRequest:
		return false, b.pluginRequest(body, k)
	case mc.PacketLoginSuccess:
		if b.set.Forwarding == config.ForwardVelocity && !b.asked {
			if !mc.LoginLayoutOf(b.protocol).PluginMessages {
				return false, fail(KindNotSetUp, textNotSetUp, fmt.Errorf("velocity forwarding needs 1.13 or later, the client speaks protocol %d: the backend cannot ask for it", b.protocol))
			}
			return false, fail(KindNotSetUp, textNotSetUp, errors.New("the backend sent Login Success without asking for velocity forwarding: it is not set up for modern forwarding"))
		}
		if _, err := mc.ParseLoginSuccess(body, b.protocol); err != nil {
			return false, fail(KindBadPacket, textBadBackend, err)
		}
		return true, nil
	}
	return false, fail(KindBadPacket, textBadBackend, fmt.Errorf("backend login packet 0x%02x (%d bytes of data) has no place in the login", id, len(data)))
}

// pluginRequest answers a Login Plugin Request: velocity:player_info with
// the signed player info when the group forwards that way; any other
// channel is relayed to the client (plugin.go), or, where it cannot be,
// answered as not understood, as a vanilla client does.
func (b *Backend) pluginRequest(body []byte, k *mc.Compressor) error {
	pr, err := mc.ParsePluginRequest(body)
	if err != nil {
		return fail(KindBadPacket, textBadBackend, err)
	}
	resp := mc.PluginResponse{MessageID: pr.MessageID}
	if string(pr.Channel) != mc.VelocityChannel && b.relays() {
		return b.relayRequest(pr, body)
	}
	if string(pr.Channel) == mc.VelocityChannel {
		if b.set.Forwarding != config.ForwardVelocity || len(b.set.Secret) == 0 {
			return fail(KindNotSetUp, textNotSetUp, fmt.Errorf("the backend asks for velocity forwarding, the group forwards %s", b.set.Forwarding))
		}
		requested, err := mc.ParseVelocityRequest(pr.Data)
		if err != nil {
			return fail(KindBadPacket, textBadBackend, err)
		}
		info := mc.VelocityInfo{
			Version: mc.VelocityVersionFor(requested, b.protocol, b.key),
			Address: []byte(b.clientIP), UUID: b.uuid, Name: b.name, Properties: b.props, Key: b.key,
		}
		resp.Successful = true
		resp.Data = mc.AppendVelocityResponse(nil, b.set.Secret, info)
		b.asked = true
	}
	b.packet = mc.AppendPluginResponse(b.packet[:0], resp)
	b.out = k.AppendFrame(b.out, b.packet, b.threshold)
	return nil
}

// AppendClientLogin appends what finishes the client's login to dst: Set
// Compression with the client's threshold (when it compresses and the
// version has it), then Login Success with the offline-mode UUID, in the
// framing that follows. The client's threshold is the backend's with
// compression_threshold: backend, else the group's own; when the two
// differ the session's frames are re-framed (Thresholds,
// session/proxy/reframe).
func (b *Backend) AppendClientLogin(dst []byte, k *mc.Compressor) ([]byte, error) {
	client, _ := b.Thresholds()
	if client >= 0 {
		b.packet = mc.AppendSetCompression(b.packet[:0], int32(client))
		dst = k.AppendFrame(dst, b.packet, -1) // the last plain frame
	}
	b.packet = mc.AppendLoginSuccess(b.packet[:0], b.protocol, mc.LoginSuccess{UUID: b.uuid, Name: b.name, Properties: b.props})
	return k.AppendFrame(dst, b.packet, client), nil
}

// Thresholds returns the compression thresholds of the client's side and
// of the backend's (-1: off), as they stand after the backend's login: the
// client's is the backend's with compression_threshold: backend, else the
// group's own, and off for a version without Set Compression.
func (b *Backend) Thresholds() (client, backend int) {
	client = b.threshold
	if !b.set.FollowBackend {
		client = b.set.Threshold
	}
	if !mc.LoginLayoutOf(b.protocol).Compression {
		client = -1
	}
	return max(client, -1), b.threshold
}
