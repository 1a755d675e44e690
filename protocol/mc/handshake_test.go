package mc

import (
	"bytes"
	"strings"
	"testing"
)

func TestHandshakeRoundTrip(t *testing.T) {
	addrs := []string{
		"mc.example.com",
		"",
		"Play.Example.COM.",
		"mc.example.com\x00FML\x00",
		"mc.example.com\x00FML2\x00",
		"mc.example.com\x00FML3\x00",
		"mc.example.com\x00FORGE",
		"mc.example.com\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f",
		strings.Repeat("a", 255) + "\x00FML3\x00",
		strings.Repeat("b", MaxHandshakeAddressLen),
	}
	for _, addr := range addrs {
		for _, v := range []int32{Protocol1_7_10, 47, 340, Protocol1_20_2, Protocol1_20_5, 769, -1} {
			for _, state := range []int32{NextStateStatus, NextStateLogin, NextStateTransfer} {
				in := Handshake{ProtocolVersion: v, Address: []byte(addr), Port: 25565, NextState: state}
				frame := AppendHandshake(nil, in)
				b := body(t, frame)
				got, err := ParseHandshake(b)
				if err != nil {
					t.Fatalf("ParseHandshake(%q, %d, %d): %v", addr, v, state, err)
				}
				if got.ProtocolVersion != v || string(got.Address) != addr || got.Port != 25565 || got.NextState != state {
					t.Fatalf("round trip: got %+v, want %+v", got, in)
				}
				if len(addr) > 0 && &got.Address[0] != &b[len(b)-len(addr)-3] {
					t.Fatalf("Address does not alias the body")
				}
			}
		}
	}
}

// TestHandshake1_7_10Forge checks a hand-encoded 1.7.10 legacy Forge
// handshake.
func TestHandshake1_7_10Forge(t *testing.T) {
	addr := "localhost\x00FML\x00"
	frame := []byte{byte(1 + 1 + 1 + len(addr) + 2 + 1), 0x00, 0x05, byte(len(addr))}
	frame = append(frame, addr...)
	frame = append(frame, 0x63, 0xdd, 0x02) // port 25565, login
	h, err := ParseHandshake(body(t, frame))
	if err != nil {
		t.Fatal(err)
	}
	if h.ProtocolVersion != Protocol1_7_10 || string(h.Address) != addr || h.Port != 25565 || h.NextState != NextStateLogin {
		t.Fatalf("got %+v", h)
	}
	if k := ForgeMarker(h.Address); k != ForgeFML {
		t.Fatalf("ForgeMarker = %v, want fml", k)
	}
	host, marker := SplitAddress(h.Address)
	if string(host) != "localhost" || string(marker) != "\x00FML\x00" {
		t.Fatalf("SplitAddress = %q, %q", host, marker)
	}
	if got := AppendHandshake(nil, h); !bytes.Equal(got, frame) {
		t.Fatalf("AppendHandshake = %x, want %x", got, frame)
	}
}

func TestParseHandshakeErrors(t *testing.T) {
	good := func(mod func(*[5][]byte)) []byte {
		f := [5][]byte{varint(0), varint(763), str("mc.example.com"), u16(25565), varint(2)}
		mod(&f)
		return bytes.Join(f[:], nil)
	}
	tests := []struct {
		name   string
		in     []byte
		reason string
		text   string
	}{
		{"empty", nil, ReasonBadHandshake, "mc: handshake: truncated varint: need 1 bytes, have 0"},
		{"wrong id", good(func(f *[5][]byte) { f[0] = varint(0x01) }), ReasonBadHandshake, "mc: handshake: unexpected packet id 0x1, want 0x0"},
		{"legacy ping", []byte{0xfe, 0x01, 0xfa}, ReasonBadHandshake, ""},
		{"id varint too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, ReasonBadHandshake, "mc: handshake: varint longer than 5 bytes"},
		{"next state 0", good(func(f *[5][]byte) { f[4] = varint(0) }), ReasonBadNextState, "mc: handshake: invalid next state 0"},
		{"next state 4", good(func(f *[5][]byte) { f[4] = varint(4) }), ReasonBadNextState, ""},
		{"next state -1", good(func(f *[5][]byte) { f[4] = varint(-1) }), ReasonBadNextState, ""},
		{"address too long", good(func(f *[5][]byte) { f[2] = str(strings.Repeat("a", MaxHandshakeAddressLen+1)) }), ReasonBadHandshake,
			"mc: handshake: string length 1025 exceeds maximum 1024"},
		{"negative address length", good(func(f *[5][]byte) { f[2] = varint(-1) }), ReasonBadHandshake, "mc: handshake: string length -1 is below minimum 0"},
		{"address truncated", good(func(f *[5][]byte) { f[2] = append(varint(20), "short"...); f[3] = nil; f[4] = nil }), ReasonBadHandshake,
			"mc: handshake: truncated string: need 20 bytes, have 5"},
		{"port truncated", good(func(f *[5][]byte) { f[3] = []byte{0x63}; f[4] = nil }), ReasonBadHandshake, "mc: handshake: truncated unsigned short: need 2 bytes, have 1"},
		{"next state missing", good(func(f *[5][]byte) { f[4] = nil }), ReasonBadHandshake, ""},
		{"trailing byte", good(func(f *[5][]byte) { f[4] = []byte{0x02, 0x00} }), ReasonBadHandshake, "mc: handshake: 1 trailing bytes after next state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHandshake(tt.in)
			checkReason(t, err, tt.reason)
			if tt.text != "" && err.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.text)
			}
			if h.Address != nil || h.ProtocolVersion != 0 {
				t.Errorf("partial result %+v returned with error", h)
			}
		})
	}
}

func TestSplitAddress(t *testing.T) {
	tests := []struct{ addr, host, marker string }{
		{"", "", ""},
		{"mc.example.com", "mc.example.com", ""},
		{"mc.example.com\x00FML\x00", "mc.example.com", "\x00FML\x00"},
		{"mc.example.com\x00FML2\x00", "mc.example.com", "\x00FML2\x00"},
		{"mc.example.com\x00FML3\x00", "mc.example.com", "\x00FML3\x00"},
		{"mc.example.com\x00FORGE", "mc.example.com", "\x00FORGE"},
		{"h\x00203.0.113.7\x00abc\x00[]", "h", "\x00203.0.113.7\x00abc\x00[]"},
		{"\x00", "", "\x00"},
	}
	for _, tt := range tests {
		host, marker := SplitAddress([]byte(tt.addr))
		if string(host) != tt.host || string(marker) != tt.marker {
			t.Errorf("SplitAddress(%q) = %q, %q; want %q, %q", tt.addr, host, marker, tt.host, tt.marker)
		}
		if marker == nil {
			t.Errorf("SplitAddress(%q) marker is nil", tt.addr)
		}
		// Appending to host must not overwrite the marker.
		if len(marker) > 0 {
			_ = append(host, 'X')
			if string(marker) != tt.marker {
				t.Errorf("append to host clobbered marker")
			}
		}
	}
}

func TestForgeMarker(t *testing.T) {
	tests := []struct {
		addr string
		want ForgeKind
	}{
		{"mc.example.com", ForgeNone},
		{"mc.example.com\x00FML\x00", ForgeFML},
		{"mc.example.com\x00FML2\x00", ForgeFML2},
		{"mc.example.com\x00FML3\x00", ForgeFML3},
		{"mc.example.com\x00FORGE", ForgeModern},
		{"mc.example.com\x00FORGE1", ForgeModern},
		{"FML.example.com", ForgeNone},
		{"mc.example.com\x00FML", ForgeNone},
		{"mc.example.com\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f", ForgeNone},
	}
	for _, tt := range tests {
		if got := ForgeMarker([]byte(tt.addr)); got != tt.want {
			t.Errorf("ForgeMarker(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	for k := ForgeNone; k <= ForgeModern; k++ {
		if k != ForgeNone && ForgeMarker([]byte("h"+k.Marker())) != k {
			t.Errorf("ForgeMarker(h+%q) != %v", k.Marker(), k)
		}
	}
	names := map[ForgeKind]string{ForgeNone: "none", ForgeFML: "fml", ForgeFML2: "fml2", ForgeFML3: "fml3", ForgeModern: "forge", 99: "unknown"}
	for k, want := range names {
		if k.String() != want {
			t.Errorf("ForgeKind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
	if ForgeKind(99).Marker() != "" {
		t.Errorf("unknown kind has a marker")
	}
}

func TestAppendNormalizedHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{".", ""},
		{"mc.example.com", "mc.example.com"},
		{"MC.Example.COM.", "mc.example.com"},
		{"mc.example.com..", "mc.example.com."},
		{"ÄB", "Äb"}, // only ASCII is folded
		{"127.0.0.1", "127.0.0.1"},
	}
	for _, tt := range tests {
		if got := AppendNormalizedHost(nil, []byte(tt.in)); string(got) != tt.want {
			t.Errorf("AppendNormalizedHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
		in := []byte(tt.in)
		if got := AppendNormalizedHost(in[:0], in); string(got) != tt.want {
			t.Errorf("in place (%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := AppendNormalizedHost([]byte("x:"), []byte("A.")); string(got) != "x:a" {
		t.Errorf("append = %q", got)
	}
}

func TestHasConfigurationState(t *testing.T) {
	for v, want := range map[int32]bool{Protocol1_7_10: false, 763: false, Protocol1_20_2: true, Protocol1_20_5: true, 0x40000090: true} {
		if got := HasConfigurationState(v); got != want {
			t.Errorf("HasConfigurationState(%d) = %v, want %v", v, got, want)
		}
	}
}
