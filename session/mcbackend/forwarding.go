package mcbackend

import (
	"errors"
	"fmt"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Forwarding is what the backend expects of a proxy in front of it, as a
// Paper or Spigot server behind a proxy does.
type Forwarding uint8

// Forwarding modes.
const (
	// ForwardNone takes the player as Login Start names them.
	ForwardNone Forwarding = iota
	// ForwardBungeeCord requires the handshake address in BungeeCord
	// legacy form, host\0clientIP\0uuid, and takes the UUID from it.
	ForwardBungeeCord
	// ForwardVelocity asks for the player on velocity:player_info after
	// Login Start and takes the UUID and name from the answer, whose
	// HMAC-SHA256 must verify under Config.ForwardingSecret.
	ForwardVelocity
)

// ParseForwarding parses none, bungeecord or velocity.
func ParseForwarding(s string) (Forwarding, error) {
	switch s {
	case "", "none":
		return ForwardNone, nil
	case "bungeecord":
		return ForwardBungeeCord, nil
	case "velocity":
		return ForwardVelocity, nil
	}
	return 0, fmt.Errorf("forwarding %q: want none, bungeecord or velocity", s)
}

// The disconnect reasons a backend refusing the forwarding sends, those of
// Spigot and Paper.
const (
	bungeeRefusal   = `{"text":"If you wish to use IP forwarding, please enable it in your BungeeCord config as well!"}`
	velocityRefusal = `{"text":"Unable to verify player details"}`
	velocityNoProxy = `{"text":"This server requires you to connect with Velocity."}`
)

// velocityMessageID is the message ID of the backend's velocity:player_info request.
const velocityMessageID = 1

// startForwarded begins the login of a player named in Login Start under
// the configured forwarding: it returns true when the login waits for the
// proxy's answer (velocity), after sending the request.
func (m *machine) startForwarded(out emitter) (wait bool, err error) {
	switch m.cfg.forwarding {
	case ForwardBungeeCord:
		if !m.bungeeOK {
			return false, m.refuse(out, bungeeRefusal, errors.New("handshake address not in BungeeCord forwarding form"))
		}
	case ForwardVelocity:
		req := mc.PluginRequest{MessageID: velocityMessageID, Channel: []byte(mc.VelocityChannel), Data: []byte{mc.VelocityMaxVersion}}
		m.emit(out, mc.AppendPluginRequest(m.codec.packet[:0], req))
		m.phase = phaseForwarding
		return true, nil
	}
	return false, nil
}

// forwarded takes the proxy's answer to the velocity:player_info request.
func (m *machine) forwarded(body []byte, out emitter) error {
	pr, err := mc.ParsePluginResponse(body)
	if err != nil || pr.MessageID != velocityMessageID {
		return m.refuse(out, velocityRefusal, fmt.Errorf("answer to the velocity request: %v (message id %d)", err, pr.MessageID))
	}
	if !pr.Successful {
		return m.refuse(out, velocityNoProxy, errors.New("the client did not understand velocity:player_info: no proxy in front"))
	}
	info, err := mc.VerifyVelocityResponse(pr.Data, m.cfg.secret, mc.VelocityMaxVersion)
	if err != nil {
		return m.refuse(out, velocityRefusal, err)
	}
	m.uuid = info.UUID
	m.nameLen = uint8(copy(m.name[:], info.Name))
	m.counters.forwarded.Add(1)
	m.finishLogin(out)
	return nil
}

// refuse sends the login Disconnect reasonJSON and fails the connection
// with ReasonBadForwarding.
func (m *machine) refuse(out emitter, reasonJSON string, err error) error {
	m.emit(out, mc.AppendString(mc.AppendVarInt(m.codec.packet[:0], mc.PacketLoginDisconnect), []byte(reasonJSON)))
	return badInput(ReasonBadForwarding, fmt.Errorf("forwarding refused: %w", err))
}
