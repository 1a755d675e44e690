package textcomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidegate/tidegate/protocol/mc"
)

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		max            int
		cut            bool
		err            string
	}{
		{name: "string", in: `"Banned!"`, want: "Banned!"},
		{name: "object", in: `{"text":"You are ","extra":[{"text":"banned","color":"red"},"."]}`, want: "You are banned."},
		{name: "extra first", in: `{"extra":["b"],"text":"a"}`, want: "ab"},
		{name: "translate fallback", in: `{"translate":"multiplayer.disconnect.kicked","fallback":"Kicked by an operator"}`, want: "Kicked by an operator"},
		{name: "translate key", in: `{"translate":"multiplayer.disconnect.server_shutdown"}`, want: "multiplayer.disconnect.server_shutdown"},
		{name: "array", in: `["a",{"text":"b"},["c"]]`, want: "abc"},
		{name: "primitive", in: `42`, want: "42"},
		{name: "keybind", in: `{"keybind":"key.jump"}`, want: ""},
		{name: "cut at a rune", in: `"héllo"`, max: 2, want: "h", cut: true},
		{name: "bad json", in: `{"text":`, err: "JSON"},
		{name: "extra not array", in: `{"text":"a","extra":"b"}`, err: "extra is a string"},
		{name: "too deep", in: strings.Repeat("[", 40) + strings.Repeat("]", 40), err: "deeper than 32"},
		{name: "too long", in: `"` + strings.Repeat("a", MaxInput) + `"`, err: "longer than the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 1000
			}
			got, cut, err := JSON([]byte(tc.in), max)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("JSON(%.40q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || cut != tc.cut {
				t.Fatalf("JSON(%q) = %q, cut %t, %v; want %q, cut %t", tc.in, got, cut, err, tc.want, tc.cut)
			}
		})
	}
}

// nbt builds network NBT for the tests.
type nbt struct{ b []byte }

func (n *nbt) tag(t byte, name string) *nbt {
	n.b = append(n.b, t)
	n.b = binary.BigEndian.AppendUint16(n.b, uint16(len(name)))
	n.b = append(n.b, name...)
	return n
}
func (n *nbt) str(s string) *nbt {
	n.b = binary.BigEndian.AppendUint16(n.b, uint16(len(s)))
	n.b = append(n.b, s...)
	return n
}
func (n *nbt) raw(b ...byte) *nbt { n.b = append(n.b, b...); return n }
func (n *nbt) i32(v int32) *nbt   { n.b = binary.BigEndian.AppendUint32(n.b, uint32(v)); return n }

func TestNBT(t *testing.T) {
	p, _ := mc.ConfigPacketsOf(765)
	ours := mc.AppendTextComponent(nil, p, "Kicked: \x00 ünï 😀", "red")
	extraFirst := (&nbt{}).raw(TagCompound).tag(TagList, "extra").raw(TagString).i32(2).str("b").str("c").
		tag(TagString, "text").str("a").tag(TagByte, "bold").raw(1).raw(TagEnd).b
	nested := (&nbt{}).raw(TagCompound).tag(TagString, "text").str("x").tag(TagList, "extra").raw(TagCompound).i32(1).
		tag(TagString, "text").str("y").tag(TagCompound, "hoverEvent").tag(TagIntArray, "ia").i32(2).i32(1).i32(2).raw(TagEnd).raw(TagEnd).raw(TagEnd).b
	translate := (&nbt{}).raw(TagCompound).tag(TagString, "translate").str("k").tag(TagString, "fallback").str("Fell back").raw(TagEnd).b
	deep := (&nbt{}).raw(TagList)
	for range 40 {
		deep.raw(TagList).i32(1)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
		max  int
		cut  bool
		err  string
	}{
		{name: "ours", in: ours, want: "Kicked: \x00 ünï 😀"},
		{name: "string", in: (&nbt{}).raw(TagString).str("plain").b, want: "plain"},
		{name: "extra first", in: extraFirst, want: "abc"},
		{name: "nested, skipped tags", in: nested, want: "xy"},
		{name: "translate", in: translate, want: "Fell back"},
		{name: "list", in: (&nbt{}).raw(TagList, TagString).i32(2).str("a").str("b").b, want: "ab"},
		{name: "number", in: (&nbt{}).raw(TagInt).i32(7).b, want: ""},
		{name: "cut", in: ours, max: 5, want: "Kicke", cut: true},
		{name: "empty", in: nil, err: "ends inside"},
		{name: "truncated", in: ours[:len(ours)-3], err: "ends inside"},
		{name: "unknown tag", in: (&nbt{}).raw(TagCompound).tag(99, "x").b, err: "tag type 99"},
		{name: "negative list", in: (&nbt{}).raw(TagList, TagString).i32(-1).b, err: "negative length"},
		{name: "huge array", in: (&nbt{}).raw(TagCompound).tag(TagLongArray, "a").i32(1 << 30).b, err: "elements"},
		{name: "end list", in: (&nbt{}).raw(TagList, TagEnd).i32(5).b, err: "end tags"},
		{name: "too deep", in: deep.b, err: "deeper than 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 1000
			}
			got, cut, n, err := NBT(tc.in, max)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NBT(% x) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || cut != tc.cut || n != len(tc.in) {
				t.Fatalf("NBT(% x) = %q, cut %t, %d bytes, %v; want %q, cut %t, %d bytes", tc.in, got, cut, n, err, tc.want, tc.cut, len(tc.in))
			}
		})
	}
}

func TestNBTOverMaxInput(t *testing.T) {
	big := (&nbt{}).raw(TagCompound).tag(TagByteArray, "a").i32(MaxInput).raw(make([]byte, MaxInput)...).raw(TagEnd).b
	if _, _, _, err := NBT(big, 10); !errors.Is(err, ErrTooLong) {
		t.Fatalf("a component over MaxInput: %v, want ErrTooLong", err)
	}
}

// FuzzText: no input panics or yields more than max bytes of valid
// UTF-8; a component the proxy writes itself (mc.AppendTextComponent)
// reads back as its text, in both forms.
func FuzzText(f *testing.F) {
	p, _ := mc.ConfigPacketsOf(765)
	f.Add(mc.AppendTextComponent(nil, p, "Banned", "red"), "Banned", uint16(100))
	f.Add([]byte(`{"text":"a","extra":["b"]}`), "x\x00😀", uint16(3))
	f.Add([]byte{TagList, TagCompound, 0x7f, 0xff, 0xff, 0xff}, "", uint16(0))
	f.Fuzz(func(t *testing.T, in []byte, s string, max16 uint16) {
		max := int(max16)
		for _, read := range []func() (string, bool, error){
			func() (string, bool, error) { return JSON(in, max) },
			func() (string, bool, error) {
				s, cut, n, err := NBT(in, max)
				if err == nil && (n < 1 || n > len(in)) {
					t.Fatalf("NBT read %d bytes of %d", n, len(in))
				}
				return s, cut, err
			},
		} {
			if got, _, err := read(); err == nil && (len(got) > max || !utf8.ValidString(got) && utf8.ValidString(string(in))) {
				t.Fatalf("%q: %d bytes of text for max %d", got, len(got), max)
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		for _, rows := range []mc.ConfigPackets{{}, p} {
			c := mc.AppendTextComponent(nil, rows, s, "")
			var got string
			var err error
			if rows.ChatNBT {
				got, _, _, err = NBT(c, 1<<20)
			} else {
				_, k, _ := mc.ReadVarInt(c)
				got, _, err = JSON(c[k:], 1<<20)
			}
			if want := nbtCut(s, rows.ChatNBT); err != nil || got != want {
				t.Fatalf("%q written as %x reads %q, %v", s, c, got, err)
			}
		}
	})
}

// nbtCut is s as AppendTextComponent keeps it: an NBT string holds at
// most 65,535 bytes of modified UTF-8.
func nbtCut(s string, isNBT bool) string {
	if !isNBT {
		return s
	}
	var b bytes.Buffer
	n := 0
	for _, r := range s {
		k := utf8.RuneLen(r)
		switch {
		case r == 0:
			k = 2
		case r > 0xffff:
			k = 6
		}
		if n+k > 65535 {
			break
		}
		n += k
		b.WriteRune(r)
	}
	return b.String()
}
