package bungeechan

import (
	"testing"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
)

// FuzzClaim: no clientbound packet panics the User or its Directory; a
// packet is claimed only on the BungeeCord channel; every answer is one
// serverbound plugin message frame on the request's channel whose payload
// reads back as an answer; nothing goes to the client but whole frames.
func FuzzClaim(f *testing.F) {
	for _, s := range bungeemsg.Subs() {
		m := bungeemsg.Msg{Sub: s, Server: "game", Player: "Steve", Text: `{"text":"x"}`, Channel: "c", Data: []byte{1}}
		b, _ := bungeemsg.AppendRequest(nil, m)
		f.Add(append(mc.AppendString(mc.AppendVarInt(nil, 0x18), []byte("bungeecord:main")), b...))
		m.Server, m.Player = "ALL", "ALL"
		b, _ = bungeemsg.AppendRequest(nil, m)
		f.Add(append(mc.AppendString(mc.AppendVarInt(nil, 0x18), []byte("BungeeCord")), b...))
	}
	f.Add([]byte{0x18, 0x0a, 'B', 'u', 'n', 'g', 'e', 'e', 'C', 'o', 'r', 'd', 0xff})
	f.Fuzz(func(t *testing.T, packet []byte) {
		w := newWorld(t)
		u, s := w.join(alex, 764, 0, 32)
		_, ss := w.join(steve, 764, 1, 32)
		channel, _, isOurs := Claim(packet, u.pk)
		if got := u.Claim(packet); got != isOurs {
			t.Fatalf("Claim = %v, the packet is the channel's: %v", got, isOurs)
		}
		w.loops[0].run()
		w.loops[1].run()
		for _, fr := range s.toBackend {
			r := mc.NewReader(w.unframe(fr, 32))
			id, _ := r.ReadVarInt()
			ch, err := r.ReadString(100)
			if err != nil || id != u.pk.SB || string(ch) != channel {
				t.Fatalf("answer: packet %d, channel %q (asked on %q), %v", id, ch, channel, err)
			}
			if _, err := bungeemsg.ParseResponse(r.Rest()); err != nil {
				t.Fatalf("answer % x: %v", r.Rest(), err)
			}
		}
		for _, fr := range append(s.toClient, ss.toClient...) {
			w.unframe(fr, 32)
		}
	})
}
