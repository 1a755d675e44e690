package status

import (
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
)

// TestReadLegacy: a lone FE or FE 01 waits for the rest of a 1.6 ping
// until the wait is over, when it is answered as a Beta or 1.4 ping; a
// whole 1.6 ping is answered at once, a part of one waits, a modern frame
// goes back to the handshake unless the input was already read as a ping,
// and a malformed 1.6 ping is bad.
func TestReadLegacy(t *testing.T) {
	ping16 := mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Protocol: 78, Host: "lobby.example", Port: 25565})
	bad16 := append([]byte{}, ping16...)
	bad16[4] = 0x7f // the channel name's length, now far past the input
	for _, tc := range []struct {
		name   string
		in     []byte
		waited bool
		want   LegacyStep
		kind   mc.LegacyPingKind
	}{
		{"beta", []byte{0xfe}, false, LegacyMore, 0},
		{"beta waited", []byte{0xfe}, true, LegacyWhole, mc.LegacyPingBeta},
		{"1.4", []byte{0xfe, 0x01}, false, LegacyMore, 0},
		{"1.4 waited", []byte{0xfe, 0x01}, true, LegacyWhole, mc.LegacyPing14},
		{"1.6 whole", ping16, false, LegacyWhole, mc.LegacyPing16},
		{"1.6 part", ping16[:10], false, LegacyMore, 0},
		{"1.6 part waited", ping16[:10], true, LegacyMore, 0},
		{"modern frame", []byte{0xfe, 0x05}, false, LegacyModern, 0},
		{"modern frame after a wait", []byte{0xfe, 0x05}, true, LegacyBad, 0},
		{"bad 1.6", bad16, false, LegacyBad, 0},
	} {
		step, p, err := ReadLegacy(tc.in, tc.waited)
		if step != tc.want || (step == LegacyWhole && p.Kind != tc.kind) || (step == LegacyBad) != (err != nil) {
			t.Errorf("%s: step %d, kind %v, %v; want step %d, kind %v", tc.name, step, p.Kind, err, tc.want, tc.kind)
		}
	}
}

// FuzzReadLegacy: whatever the input, ReadLegacy does not panic, returns
// an error exactly when the input is bad, and answers only a ping that
// mc.ParseLegacyPing reads whole.
func FuzzReadLegacy(f *testing.F) {
	for _, s := range [][]byte{{0xfe}, {0xfe, 0x01}, {0xfe, 0x01, 0xfa}, {0xfe, 0x05},
		mc.AppendLegacyPing(nil, mc.LegacyPing{Kind: mc.LegacyPing16, Host: "h", Port: 1})} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, waited bool) {
		step, p, err := ReadLegacy(b, waited)
		if (step == LegacyBad) != (err != nil) {
			t.Fatalf("ReadLegacy(%x, %v): step %d with error %v", b, waited, step, err)
		}
		if step == LegacyWhole {
			if q, n, err := mc.ParseLegacyPing(b); err != nil || n == 0 || q != p {
				t.Fatalf("ReadLegacy(%x, %v) answers %+v; ParseLegacyPing: %+v, %d, %v", b, waited, p, q, n, err)
			}
		}
	})
}
