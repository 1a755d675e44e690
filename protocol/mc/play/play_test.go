package play

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/textcomp"
)

// row returns the table's row of protocol v.
func row(t testing.TB, v int32) Packets {
	t.Helper()
	p, ok := PacketsOf(v)
	if !ok {
		t.Fatalf("no row for protocol %d", v)
	}
	return p
}

// nbtCompound is a small named compound: {"": {name: "overworld", height: 256, list: [1b, 2b], sub: {}}}.
func nbtCompound() []byte {
	b := []byte{textcomp.TagCompound, 0, 0}
	b = append(b, textcomp.TagString, 0, 4, 'n', 'a', 'm', 'e', 0, 9)
	b = append(b, "overworld"...)
	b = append(b, textcomp.TagInt, 0, 6, 'h', 'e', 'i', 'g', 'h', 't', 0, 0, 1, 0)
	b = append(b, textcomp.TagList, 0, 4, 'l', 'i', 's', 't', textcomp.TagByte, 0, 0, 0, 2, 1, 2)
	b = append(b, textcomp.TagCompound, 0, 3, 's', 'u', 'b', textcomp.TagEnd)
	b = append(b, textcomp.TagLongArray, 0, 1, 'l', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7)
	return append(b, textcomp.TagEnd)
}

// joinGame builds the data of a Join Game of layout l: entity ID 42,
// survival, the overworld, hashed seed 7, a death location from 1.19.
func joinGame(l Layout) []byte {
	b := binary.BigEndian.AppendUint32(nil, 42)
	if l <= Layout1912 {
		b = append(b, 0x08|1) // hardcore creative
		if l == Layout1912 {
			b = binary.BigEndian.AppendUint32(b, uint32(0xffffffff)) // the nether
		} else {
			b = append(b, 0xff)
		}
		b = append(b, 2, 20)
		b = appendString(b, "default")
		if l >= Layout18 {
			b = append(b, 0)
		}
		return b
	}
	b = append(b, 0, 0, 0xff) // not hardcore, survival, no previous
	b = mc.AppendVarInt(b, 2)
	b = appendString(appendString(b, "minecraft:overworld"), "minecraft:the_nether")
	b = append(b, nbtCompound()...) // the codec
	if l >= Layout1193 {
		b = appendString(b, "minecraft:overworld")
	} else {
		b = append(b, nbtCompound()...)
	}
	b = appendString(b, "minecraft:overworld")
	b = binary.BigEndian.AppendUint64(b, 7)
	b = append(b, 20, 10) // max players, view distance
	if l >= Layout118 {
		b = append(b, 8)
	}
	b = append(b, 0, 1, 0, 1) // reduced debug, respawn screen, debug, flat
	if l >= Layout1193 {
		b = append(appendString(append(b, 1), "minecraft:the_end"), 1, 2, 3, 4, 5, 6, 7, 8)
	}
	if l >= Layout120 {
		b = mc.AppendVarInt(b, 300)
	}
	return b
}

// TestParseJoinGameAndRespawn: every row's Join Game decodes to what the
// Respawns need, and the Respawns carry it in the row's format, into
// another dimension and back.
func TestParseJoinGameAndRespawn(t *testing.T) {
	death := append(appendString([]byte{1}, "minecraft:the_end"), 1, 2, 3, 4, 5, 6, 7, 8)
	for _, p := range All() {
		t.Run(p.Release, func(t *testing.T) {
			j, err := ParseJoinGame(p, joinGame(p.Layout))
			if err != nil {
				t.Fatal(err)
			}
			if j.EntityID != 42 {
				t.Errorf("entity ID %d", j.EntityID)
			}
			other, back := AppendRespawn(nil, p, j, true), AppendRespawn(nil, p, j, false)
			var want [2][]byte
			if p.Layout <= Layout1912 {
				if j.Dimension != -1 || j.GameMode != 9 || j.Difficulty != 2 || string(j.LevelType) != "default" {
					t.Errorf("decoded %+v", j)
				}
				for i, dim := range []uint32{0, 0xffffffff} { // the overworld, then the nether again
					w := mc.AppendVarInt(nil, p.Respawn)
					w = binary.BigEndian.AppendUint32(w, dim)
					want[i] = appendString(append(w, 2, 1), "default") // no hardcore bit
				}
			} else {
				if string(j.WorldName) != "minecraft:overworld" || j.HashedSeed != 7 || !j.IsFlat || j.IsDebug || j.PreviousGameMode != 0xff {
					t.Errorf("decoded %+v", j)
				}
				for i, world := range []string{"minecraft:the_nether", "minecraft:overworld"} {
					w := mc.AppendVarInt(nil, p.Respawn)
					if p.Layout >= Layout1193 {
						w = appendString(w, "minecraft:overworld")
					} else {
						w = append(w, nbtCompound()...)
					}
					w = binary.BigEndian.AppendUint64(appendString(w, world), 7)
					w = append(w, 0, 0xff, 0, 1, 0)
					if p.Layout >= Layout1193 {
						w = append(w, death...)
					}
					if p.Layout >= Layout120 {
						w = mc.AppendVarInt(w, 300)
					}
					want[i] = w
				}
			}
			if !bytes.Equal(other, want[0]) || !bytes.Equal(back, want[1]) {
				t.Errorf("respawns\n %x\n %x\nwant\n %x\n %x", other, back, want[0], want[1])
			}
		})
	}
}

// TestParseJoinGameRefusesBadInput: every truncation, a trailing byte, a
// bad boolean, a world count past the packet and bad NBT are errors, never
// a panic.
func TestParseJoinGameRefusesBadInput(t *testing.T) {
	for _, p := range All() {
		good := joinGame(p.Layout)
		for n := range len(good) {
			if _, err := ParseJoinGame(p, good[:n]); err == nil {
				t.Fatalf("%s: %d of %d bytes decoded", p.Release, n, len(good))
			}
		}
		if _, err := ParseJoinGame(p, append(good, 0)); err == nil || !strings.Contains(err.Error(), "after the last field") {
			t.Errorf("%s: a trailing byte: %v", p.Release, err)
		}
	}
	p := row(t, 754)
	bad := append(binary.BigEndian.AppendUint32(nil, 1), 2, 0, 0) // hardcore byte 2
	if _, err := ParseJoinGame(p, bad); err == nil || !strings.Contains(err.Error(), "boolean") {
		t.Errorf("bad boolean: %v", err)
	}
	huge := mc.AppendVarInt(append(binary.BigEndian.AppendUint32(nil, 1), 0, 0, 0), 1<<30)
	if _, err := ParseJoinGame(p, huge); err == nil || !strings.Contains(err.Error(), "world count") {
		t.Errorf("huge world count: %v", err)
	}
	if _, err := ParseJoinGame(row(t, 47), mc.AppendVarInt(binary.BigEndian.AppendUint32(nil, 1)[:4:4], 0)); err == nil || !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated 1.8 join game: %v", err)
	}
}

// TestSkipNamedNBT: tags of every type are skipped whole; lengths past
// the input, negative lengths, unknown types and nesting past the limit
// are refused, and a list of a billion empty elements does not loop.
func TestSkipNamedNBT(t *testing.T) {
	good := nbtCompound()
	if n, err := skipNamedNBT(append(good, 9, 9)); err != nil || n != len(good) {
		t.Fatalf("skip = %d, %v; want %d", n, err, len(good))
	}
	if n, err := skipNamedNBT([]byte{textcomp.TagEnd}); err != nil || n != 1 {
		t.Fatalf("end tag: %d, %v", n, err)
	}
	deep := []byte{textcomp.TagCompound, 0, 0}
	for range maxNBTDepth + 1 {
		deep = append(deep, textcomp.TagCompound, 0, 0)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "ends early"},
		{"byte array too long", []byte{textcomp.TagByteArray, 0, 0, 0x7f, 0xff, 0xff, 0xff}, "ends early"},
		{"negative length", []byte{textcomp.TagIntArray, 0, 0, 0xff, 0xff, 0xff, 0xff}, "negative length"},
		{"list of longs too long", []byte{textcomp.TagList, 0, 0, textcomp.TagLong, 0x10, 0, 0, 0}, "ends early"},
		{"list of compounds too long", []byte{textcomp.TagList, 0, 0, textcomp.TagCompound, 0x7f, 0, 0, 0, 0}, "ends early"},
		{"unknown type", []byte{textcomp.TagCompound, 0, 0, 13, 0, 0}, "unknown"},
		{"too deep", deep, "deeper"},
		{"string too long", []byte{textcomp.TagString, 0, 0, 0, 5, 'a'}, "ends early"},
	} {
		if _, err := skipNamedNBT(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if n, err := skipNamedNBT([]byte{textcomp.TagList, 0, 0, textcomp.TagEnd, 0x40, 0, 0, 0}); err != nil || n != 8 {
		t.Errorf("a list of 2^30 end tags: %d, %v", n, err)
	}
}

// TestResetsAndChat: the title reset, the header and footer reset, chat
// and Disconnect in each form.
func TestResetsAndChat(t *testing.T) {
	comp := TextComponent("hi", "red")
	if want := appendString(nil, `{"text":"hi","color":"red"}`); !bytes.Equal(comp, want) {
		t.Fatalf("component %q", comp)
	}
	for _, tc := range []struct {
		v            int32
		title, chat  string
		headerFooter bool
	}{
		{5, "", "02" + "%x", false},
		{47, "4504", "02%x01", true},
		{340, "4805", "0f%x01", true},
		{754, "4f05", "0e%x01" + strings.Repeat("00", 16), true},
		{758, "1001", "0f%x01" + strings.Repeat("00", 16), true},
		{763, "0e01", "64%x00", true},
	} {
		p := row(t, tc.v)
		title, ok := AppendTitleReset(nil, p)
		if ok != (tc.title != "") || hexOf(title) != tc.title {
			t.Errorf("%d: title reset %x %v, want %s", tc.v, title, ok, tc.title)
		}
		if _, ok := AppendHeaderFooterReset(nil, p); ok != tc.headerFooter {
			t.Errorf("%d: header/footer reset %v", tc.v, ok)
		}
		if got, want := hexOf(AppendChat(nil, p, comp)), strings.Replace(tc.chat, "%x", hexOf(comp), 1); got != want {
			t.Errorf("%d: chat %s, want %s", tc.v, got, want)
		}
		if id, data, err := PacketID(AppendDisconnect(nil, p, comp)); err != nil || id != p.Disconnect || !bytes.Equal(data, comp) {
			t.Errorf("%d: disconnect %d %x %v", tc.v, id, data, err)
		}
	}
	if _, ok := PacketsOf(764); ok {
		t.Error("1.20.2 has a row: it moves through the configuration state")
	}
	if !strings.Contains(Supported(), "1.7.6-1.7.10 (5)") {
		t.Errorf("Supported() = %q", Supported())
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var s strings.Builder
	for _, c := range b {
		s.WriteByte(digits[c>>4])
		s.WriteByte(digits[c&15])
	}
	return s.String()
}

// FuzzParseJoinGame: no input panics, and what decodes re-encodes as
// Respawns without panicking.
func FuzzParseJoinGame(f *testing.F) {
	rows := All()
	for i, p := range rows {
		f.Add(byte(i), joinGame(p.Layout))
	}
	f.Fuzz(func(t *testing.T, r byte, data []byte) {
		p := rows[int(r)%len(rows)]
		j, err := ParseJoinGame(p, data)
		if err != nil {
			return
		}
		AppendRespawn(nil, p, j, true)
		AppendRespawn(nil, p, j, false)
	})
}

// FuzzSkipNamedNBT: no input panics or hangs, and a tag skipped lies
// within the input.
func FuzzSkipNamedNBT(f *testing.F) {
	f.Add(nbtCompound())
	f.Add([]byte{textcomp.TagList, 0, 0, textcomp.TagList, 0, 0, 0, 2, textcomp.TagEnd, 0, 0, 0, 0, textcomp.TagEnd, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := skipNamedNBT(b)
		if err == nil && (n < 1 || n > len(b)) {
			t.Fatalf("skipped %d of %d bytes", n, len(b))
		}
	})
}
