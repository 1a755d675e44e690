package mc

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf16"
)

// ping16 is what a 1.6.4 client sends to ping mc.example.com:25565, written
// out byte by byte after wiki.vg's description of the 1.6 ping.
var ping16 = mustHex(
	"fe01fa" + // ping, payload 1, plugin message
		"000b" + "004d0043007c00500069006e00670048006f00730074" + // "MC|PingHost"
		"0023" + // data length: 1 + 2 + 2*14 + 4 = 35
		"4e" + // protocol 78
		"000e" + "006d0063002e006500780061006d0070006c0065002e0063006f006d" + // "mc.example.com"
		"000063dd") // port 25565

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseLegacyPing(t *testing.T) {
	withData := func(dataLen uint16, data ...byte) []byte {
		b := append([]byte(nil), ping16[:legacyPingHeaderLen-2]...)
		b = append(b, byte(dataLen>>8), byte(dataLen))
		return append(b, data...)
	}
	for _, tc := range []struct {
		name   string
		in     []byte
		want   LegacyPing
		n      int
		reason string
	}{
		{"empty: wait", nil, LegacyPing{}, 0, ""},
		{"beta", []byte{0xfe}, LegacyPing{Kind: LegacyPingBeta}, 1, ""},
		{"1.4", []byte{0xfe, 0x01}, LegacyPing{Kind: LegacyPing14}, 2, ""},
		{"1.6", ping16, LegacyPing{Kind: LegacyPing16, Protocol: 78, Host: "mc.example.com", Port: 25565}, len(ping16), ""},
		{"1.6 followed by more", append(bytes.Clone(ping16), 0xff, 0xff), LegacyPing{Kind: LegacyPing16, Protocol: 78, Host: "mc.example.com", Port: 25565}, len(ping16), ""},
		{"1.6 header only: wait", ping16[:3], LegacyPing{}, 0, ""},
		{"1.6 inside the channel: wait", ping16[:12], LegacyPing{}, 0, ""},
		{"1.6 inside the data: wait", ping16[:len(ping16)-1], LegacyPing{}, 0, ""},
		{"1.6 empty host", withData(7, 74, 0, 0, 0, 0, 0x63, 0xdd), LegacyPing{Kind: LegacyPing16, Protocol: 74, Port: 25565}, legacyPingHeaderLen + 7, ""},
		{"1.6 non-ASCII host", AppendLegacyPing(nil, LegacyPing{Kind: LegacyPing16, Protocol: 78, Host: "bücher.example", Port: 1}),
			LegacyPing{Kind: LegacyPing16, Protocol: 78, Host: "bücher.example", Port: 1}, legacyPingHeaderLen + 7 + 28, ""},
		{"not FE", []byte{0x10, 0x00}, LegacyPing{}, 0, ReasonNotLegacyPing},
		{"FE then not 01 (a modern VarInt length)", []byte{0xfe, 0x00, 0x00}, LegacyPing{}, 0, ReasonNotLegacyPing},
		{"FE 01 then not FA", []byte{0xfe, 0x01, 0x00, 0x05}, LegacyPing{}, 0, ReasonNotLegacyPing},
		{"wrong channel length", []byte{0xfe, 0x01, 0xfa, 0x00, 0x0c}, LegacyPing{}, 0, ReasonBadLegacyPing},
		{"wrong channel, seen early", []byte{0xfe, 0x01, 0xfa, 0x00, 0x0b, 0x00, 'M', 0x00, 'X'}, LegacyPing{}, 0, ReasonBadLegacyPing},
		{"data too short", withData(6), LegacyPing{}, 0, ReasonBadLegacyPing},
		{"data too long", withData(7 + 2*256), LegacyPing{}, 0, ReasonBadLegacyPing},
		{"host length disagrees", withData(9, 78, 0, 2, 0, 'a', 0, 0, 0, 1), LegacyPing{}, 0, ReasonBadLegacyPing},
		{"odd data length", withData(8, 78, 0, 0, 0, 0, 0, 0, 1), LegacyPing{}, 0, ReasonBadLegacyPing},
		{"port over 65535", withData(7, 78, 0, 0, 0, 1, 0, 0), LegacyPing{}, 0, ReasonBadLegacyPing},
		{"negative port", withData(7, 78, 0, 0, 0xff, 0xff, 0xff, 0xff), LegacyPing{}, 0, ReasonBadLegacyPing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ParseLegacyPing(tc.in)
			if tc.reason != "" {
				checkReason(t, err, tc.reason)
				if n != 0 || got != (LegacyPing{}) {
					t.Fatalf("result with the error: %+v, %d", got, n)
				}
				return
			}
			if err != nil || n != tc.n || got != tc.want {
				t.Fatalf("ParseLegacyPing(%x) = %+v, %d, %v; want %+v, %d", tc.in, got, n, err, tc.want, tc.n)
			}
		})
	}
}

func TestAppendLegacyPing(t *testing.T) {
	got := AppendLegacyPing(nil, LegacyPing{Kind: LegacyPing16, Protocol: 78, Host: "mc.example.com", Port: 25565})
	if !bytes.Equal(got, ping16) {
		t.Fatalf("AppendLegacyPing = %x\nwant %x", got, ping16)
	}
	if got := AppendLegacyPing([]byte{1}, LegacyPing{Kind: LegacyPingBeta}); !bytes.Equal(got, []byte{1, 0xfe}) {
		t.Fatalf("beta: %x", got)
	}
	if got := AppendLegacyPing(nil, LegacyPing{Kind: LegacyPing14}); !bytes.Equal(got, []byte{0xfe, 0x01}) {
		t.Fatalf("1.4: %x", got)
	}
}

// kickUnits decodes a kick packet by hand, independently of ParseLegacyKick.
func kickUnits(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) < 3 || b[0] != 0xff {
		t.Fatalf("not a kick packet: %x", b)
	}
	n := int(b[1])<<8 | int(b[2])
	if len(b) != 3+2*n {
		t.Fatalf("kick of %d units in %d bytes", n, len(b))
	}
	units := make([]uint16, n)
	for i := range units {
		units[i] = uint16(b[3+2*i])<<8 | uint16(b[4+2*i])
	}
	return string(utf16.Decode(units))
}

func TestAppendLegacyKick(t *testing.T) {
	st := LegacyStatus{Protocol: 78, Version: "1.6.4", MOTD: "§aA §lMinecraft§r Server", Online: 3, Max: 20}
	for _, tc := range []struct {
		name string
		kind LegacyPingKind
		st   LegacyStatus
		want string
	}{
		{"beta strips codes", LegacyPingBeta, st, "A Minecraft Server§3§20"},
		{"1.4", LegacyPing14, st, "§1\x0078\x001.6.4\x00§aA §lMinecraft§r Server\x003\x0020"},
		{"1.6", LegacyPing16, st, "§1\x0078\x001.6.4\x00§aA §lMinecraft§r Server\x003\x0020"},
		{"line breaks and NULs", LegacyPing16, LegacyStatus{Protocol: 764, Version: "1.20\x00.2", MOTD: "one\ntwo\x00\r\nthree", Online: 0, Max: -1},
			"§1\x00764\x001.20.2\x00one two  three\x000\x00-1"},
		{"beta MOTD shortened to 100 units", LegacyPingBeta, LegacyStatus{MOTD: strings.Repeat("x", 200), Online: 1, Max: 2},
			strings.Repeat("x", 96) + "§1§2"},
		{"MOTD shortened to 256 units, not inside a code", LegacyPing14, LegacyStatus{Protocol: 5, Version: "v", MOTD: strings.Repeat("ab", 122) + "§c" + "tail", Online: 1, Max: 2},
			"§1\x005\x00v\x00" + strings.Repeat("ab", 122) + "\x001\x002"},
		{"a character outside the BMP is not cut in half", LegacyPing14, LegacyStatus{Protocol: 5, Version: "v", MOTD: strings.Repeat("a", 242) + "😀😀", Online: 1, Max: 2},
			"§1\x005\x00v\x00" + strings.Repeat("a", 242) + "😀\x001\x002"},
		{"absurd version name: MOTD and name dropped", LegacyPing14, LegacyStatus{Protocol: 5, Version: strings.Repeat("v", 300), MOTD: "m", Online: 1, Max: 2},
			"§1\x005\x00\x00\x001\x002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendLegacyKick([]byte("pre"), tc.kind, tc.st)
			if !bytes.HasPrefix(b, []byte("pre")) {
				t.Fatal("prefix lost")
			}
			got := kickUnits(t, b[3:])
			if got != tc.want {
				t.Fatalf("kick reason %q\nwant %q", got, tc.want)
			}
			limit := maxLegacyKick
			if tc.kind == LegacyPingBeta {
				limit = maxLegacyKickBeta
			}
			if n := len(utf16.Encode([]rune(got))); n > limit {
				t.Fatalf("%d units, over %d", n, limit)
			}
			reason, n, err := ParseLegacyKick(b[3:])
			if err != nil || n != len(b)-3 || reason != got {
				t.Fatalf("ParseLegacyKick = %q, %d, %v", reason, n, err)
			}
		})
	}
}

func TestParseLegacyKick(t *testing.T) {
	kick := AppendLegacyKick(nil, LegacyPing14, LegacyStatus{Protocol: 1, Version: "v", MOTD: "m"})
	for i := 0; i < len(kick); i++ {
		if r, n, err := ParseLegacyKick(kick[:i]); r != "" || n != 0 || err != nil {
			t.Fatalf("prefix %d: %q, %d, %v", i, r, n, err)
		}
	}
	_, _, err := ParseLegacyKick([]byte{0xfe})
	checkReason(t, err, ReasonBadLegacyPing)
}

func TestStripCodes(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"plain":               "plain",
		"§aGreen§r and §lb§r": "Green and b",
		"trailing §":          "trailing ",
		"§§x":                 "x",
		"§é accent":           " accent",
	} {
		if got := StripCodes(in); got != want {
			t.Errorf("StripCodes(%q) = %q, want %q", in, got, want)
		}
	}
}
