package mc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"
)

// FuzzParseLegacyPing: any input gives a ping, a wait or an error with a
// legacy reason; a 1.6 ping re-encodes to the bytes it came from; a wait
// and the two short forms are prefixes of something ParseLegacyPing would
// take whole.
func FuzzParseLegacyPing(f *testing.F) {
	for _, s := range [][]byte{nil, {0xfe}, {0xfe, 0x01}, {0xfe, 0x01, 0xfa}, {0xfe, 0x00}, {0x10, 0x00}, ping16,
		ping16[:20], AppendLegacyPing(nil, LegacyPing{Kind: LegacyPing16, Host: "ü😀", Port: 65535})} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, n, err := ParseLegacyPing(b)
		if err != nil {
			if r := ErrorReason(err); (r != ReasonNotLegacyPing && r != ReasonBadLegacyPing) || n != 0 || p != (LegacyPing{}) {
				t.Fatalf("ParseLegacyPing(%x) = %+v, %d, %v", b, p, n, err)
			}
			_ = err.Error()
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("n = %d for %d bytes", n, len(b))
		}
		switch {
		case n == 0:
			if p != (LegacyPing{}) || (len(b) > 0 && b[0] != LegacyPingID) || len(b) > legacyPingHeaderLen+7+2*MaxLegacyPingHostLen {
				t.Fatalf("wait on %x with %+v", b, p)
			}
		case p.Kind == LegacyPingBeta:
			if n != 1 {
				t.Fatalf("beta took %d bytes", n)
			}
		case p.Kind == LegacyPing14:
			if n != 2 || !bytes.Equal(b[:2], []byte{0xfe, 0x01}) {
				t.Fatalf("1.4 from %x", b)
			}
		case p.Kind == LegacyPing16:
			if len(utf16.Encode([]rune(p.Host))) > MaxLegacyPingHostLen {
				t.Fatalf("host of %d units", len(utf16.Encode([]rune(p.Host))))
			}
			re := AppendLegacyPing(nil, p)
			// The host went through UTF-16 decoding, which replaces lone
			// surrogates; compare by decoding again.
			p2, n2, err2 := ParseLegacyPing(re)
			if err2 != nil || n2 != len(re) || p2 != p {
				t.Fatalf("round trip of %+v: %+v, %d, %v", p, p2, n2, err2)
			}
			if !strings.ContainsRune(p.Host, 0xFFFD) && !bytes.Equal(re, b[:n]) {
				t.Fatalf("re-encoded %x, input %x", re, b[:n])
			}
		default:
			t.Fatalf("kind %v", p.Kind)
		}
	})
}

// FuzzParseLegacyKick: any input gives a reason, a wait or an error; a
// reason re-encodes to the bytes it came from when it is valid UTF-16.
func FuzzParseLegacyKick(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xff, 0x00, 0x00})
	f.Add(AppendLegacyKick(nil, LegacyPing16, LegacyStatus{Protocol: 78, Version: "1.6.4", MOTD: "§aHi", Online: 1, Max: 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		reason, n, err := ParseLegacyKick(b)
		if err != nil {
			if ErrorReason(err) != ReasonBadLegacyPing || n != 0 || reason != "" {
				t.Fatalf("ParseLegacyKick(%x) = %q, %d, %v", b, reason, n, err)
			}
			return
		}
		if n == 0 {
			if reason != "" {
				t.Fatalf("wait with %q", reason)
			}
			return
		}
		if n < 3 || n > len(b) || (n-3)%2 != 0 {
			t.Fatalf("n = %d of %d", n, len(b))
		}
		if !strings.ContainsRune(reason, 0xFFFD) {
			re := appendUTF16([]byte{LegacyKickID}, utf16.Encode([]rune(reason)))
			if !bytes.Equal(re, b[:n]) {
				t.Fatalf("re-encoded %x, input %x", re, b[:n])
			}
		}
	})
}

// FuzzAppendLegacyKick: any status encodes to a kick the client reads whole,
// within its length limit, whose fields split back.
func FuzzAppendLegacyKick(f *testing.F) {
	f.Add(uint8(1), int32(78), "1.6.4", "§aA Minecraft Server", int64(3), int64(20))
	f.Add(uint8(3), int32(-1), "", strings.Repeat("😀", 200), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, kind uint8, proto int32, version, motd string, online, maxPlayers int64) {
		k := LegacyPingKind(kind%3 + 1)
		b := AppendLegacyKick(nil, k, LegacyStatus{Protocol: proto, Version: version, MOTD: motd, Online: online, Max: maxPlayers})
		reason, n, err := ParseLegacyKick(b)
		if err != nil || n != len(b) {
			t.Fatalf("ParseLegacyKick = %q, %d, %v", reason, n, err)
		}
		units := len(utf16.Encode([]rune(reason)))
		if k == LegacyPingBeta {
			parts := strings.Split(reason, "§")
			if units > maxLegacyKickBeta || len(parts) != 3 {
				t.Fatalf("beta reason %q (%d units)", reason, units)
			}
			return
		}
		parts := strings.Split(reason, "\x00")
		if units > maxLegacyKick || len(parts) != 6 || parts[0] != "§1" {
			t.Fatalf("reason %q (%d units)", reason, units)
		}
	})
}

// FuzzLegacyText: any input gives text or a ReasonBadChat error; valid JSON
// strings come back unchanged.
func FuzzLegacyText(f *testing.F) {
	for _, s := range []string{`"plain"`, `{"text":"a","color":"red","extra":["b",{"text":"c","bold":true}]}`,
		`[{"text":"a","color":"#123456"},"b"]`, `{"translate":"k","fallback":"f"}`, `[[[]]]`, `{"text":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		text, err := LegacyText(b)
		if err != nil {
			if ErrorReason(err) != ReasonBadChat || text != "" {
				t.Fatalf("LegacyText(%q) = %q, %v", b, text, err)
			}
			return
		}
		var s string
		if json.Unmarshal(b, &s) == nil && text != s {
			t.Fatalf("string %q rendered as %q", s, text)
		}
	})
}

// FuzzStatusJSON: ParseStatusJSON and SplitStatusJSON agree on what is a
// status object, and a split status re-parses with the protocol and online
// count put in and everything else as it was.
func FuzzStatusJSON(f *testing.F) {
	for _, s := range []string{vanillaStatus, `{}`, `{"version":null}`, `{"players":{"online":1}}`, `[]`, `{"version":1}`, `{`} {
		f.Add([]byte(s), int64(-1))
		f.Add([]byte(s), int64(7))
	}
	f.Fuzz(func(t *testing.T, b []byte, online int64) {
		st, err := ParseStatusJSON(b)
		if err != nil {
			if ErrorReason(err) != ReasonBadStatusJSON {
				t.Fatalf("ParseStatusJSON: %v", err)
			}
			return
		}
		head, tail, err := SplitStatusJSON(b, online)
		if err != nil {
			t.Fatalf("ParseStatusJSON took %q, SplitStatusJSON refused it: %v", b, err)
		}
		js := append(append(bytes.Clone(head), "-12"...), tail...)
		st2, err := ParseStatusJSON(js)
		if err != nil {
			t.Fatalf("split status %s does not parse: %v", js, err)
		}
		want := st
		want.Protocol = -12
		if online >= 0 {
			want.Online = online
		}
		if st2.VersionName != want.VersionName || st2.Protocol != want.Protocol || st2.Online != want.Online ||
			st2.Max != want.Max || !bytes.Equal(st2.Description, want.Description) {
			t.Fatalf("split status %s reads %+v, want %+v", js, st2, want)
		}
	})
}
