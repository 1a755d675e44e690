package bungeechan

import (
	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// Packets are a version's plugin message (custom_payload) packet IDs in
// play: clientbound, which the backend asks on, and serverbound, which
// the proxy answers with.
type Packets struct{ CB, SB int32 }

// PacketsOf returns the play plugin message IDs of a movable player's
// version.
func PacketsOf(p *move.Player) Packets {
	if p.Play != nil {
		return Packets{CB: p.Play.PluginCB, SB: p.Play.PluginSB}
	}
	return Packets{CB: p.Packets.PlayPluginCB, SB: p.Packets.PlayPluginSB}
}

// maxChannel bounds a plugin channel's name in bytes (32,767 characters of
// up to 3 bytes): a longer one is not the BungeeCord channel.
const maxChannel = 3 * 32767

// Claim reads a clientbound play packet (its ID, then its data): ok when
// it is a plugin message on the BungeeCord channel, in either name, with
// the channel's name and the message's payload (aliasing packet).
func Claim(packet []byte, pk Packets) (channel string, payload []byte, ok bool) {
	r := mc.NewReader(packet)
	id, err := r.ReadVarInt()
	if err != nil || id != pk.CB {
		return "", nil, false
	}
	ch, err := r.ReadString(maxChannel)
	if err != nil || !bungeemsg.IsChannel(string(ch)) {
		return "", nil, false
	}
	return string(ch), r.Rest(), true
}

// AppendAnswer appends to dst the serverbound plugin message frame on
// channel carrying payload, in the backend's framing (threshold: its
// compression threshold, -1 when off). k is the loop's scratch.
func AppendAnswer(dst []byte, pk Packets, channel string, payload []byte, threshold int, k *mc.Compressor) []byte {
	packet := mc.AppendString(mc.AppendVarInt(make([]byte, 0, 8+len(channel)+len(payload)), pk.SB), []byte(channel))
	return k.AppendFrame(dst, append(packet, payload...), threshold)
}
