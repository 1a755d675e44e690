package mc

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseLoginStart(t *testing.T) {
	uuid := OfflineUUID([]byte("Notch"))
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"name only (1.7-1.18)", packet(0, str("Notch")), "Notch"},
		{"1.19 no signature", packet(0, str("Notch"), []byte{0x00}), "Notch"},
		{"1.19.3 optional uuid", packet(0, str("Notch"), []byte{0x01}, uuid[:]), "Notch"},
		{"1.20.2 uuid", packet(0, str("Notch"), uuid[:]), "Notch"},
		{"one char", packet(0, str("a")), "a"},
		{"sixteen chars", packet(0, str("abcdefghijklmnop"), uuid[:]), "abcdefghijklmnop"},
	}
	for _, tt := range tests {
		got, err := ParseLoginStart(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: ParseLoginStart = %q, %v; want %q", tt.name, got, err, tt.want)
		}
		if cap(got) != len(got) {
			t.Errorf("%s: username capacity %d exceeds length %d", tt.name, cap(got), len(got))
		}
	}
}

func TestParseLoginStartErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		text string
	}{
		{"empty", nil, "mc: login start: truncated varint: need 1 bytes, have 0"},
		{"wrong id", packet(1, str("Notch")), "mc: login start: unexpected packet id 0x1, want 0x0"},
		{"no name", packet(0), "mc: login start: truncated varint: need 1 bytes, have 0"},
		{"empty name", packet(0, str("")), "mc: login start: username length 0 is below minimum 1"},
		{"name too long", packet(0, str(strings.Repeat("a", 17))), "mc: login start: string length 17 exceeds maximum 16"},
		{"negative length", packet(0, varint(-3)), "mc: login start: string length -3 is below minimum 0"},
		{"name truncated", packet(0, varint(5), []byte("Not")), "mc: login start: truncated string: need 5 bytes, have 3"},
		{"varint too long", packet(0, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), "mc: login start: varint longer than 5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, err := ParseLoginStart(tt.in)
			checkReason(t, err, ReasonBadLoginStart)
			if err.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.text)
			}
			if name != nil {
				t.Errorf("name = %q with error", name)
			}
		})
	}
}

func TestSetCompression(t *testing.T) {
	for _, th := range []int32{-1, 0, 256, 1 << 20} {
		frame := AppendPacket(nil, PacketSetCompression, varint(th))
		got, err := ParseSetCompression(body(t, frame))
		if got != th || err != nil {
			t.Errorf("ParseSetCompression(%d) = %d, %v", th, got, err)
		}
	}
	for name, in := range map[string][]byte{
		"empty":     nil,
		"wrong id":  packet(PacketLoginSuccess, varint(256)),
		"missing":   packet(PacketSetCompression),
		"trailing":  packet(PacketSetCompression, varint(256), []byte{0}),
		"too long":  packet(PacketSetCompression, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}),
		"truncated": packet(PacketSetCompression, []byte{0x80}),
	} {
		_, err := ParseSetCompression(in)
		t.Run(name, func(t *testing.T) { checkReason(t, err, ReasonBadSetCompression) })
	}
}

func TestAppendLoginDisconnect(t *testing.T) {
	reason := []byte(`{"text":"Server is full"}`)
	frame := AppendLoginDisconnect(nil, reason)
	r := NewReader(body(t, frame))
	id, err := r.ReadVarInt()
	if err != nil || id != PacketLoginDisconnect {
		t.Fatalf("id = %d, %v", id, err)
	}
	s, err := r.ReadString(1 << 20)
	if err != nil || !bytes.Equal(s, reason) || r.Remaining() != 0 {
		t.Fatalf("reason = %q, %v, remaining %d", s, err, r.Remaining())
	}
}

func TestLoginStartUUID(t *testing.T) {
	u := OfflineUUID([]byte("Notch"))
	sig := append(append(append(make([]byte, 8), varint(2)...), 1, 2), append(varint(1), 3)...)
	for _, tc := range []struct {
		name string
		body []byte
		v    int32
		ok   bool
	}{
		{"1.20.2", packet(0, str("Notch"), u[:]), 764, true},
		{"1.21 truncated", packet(0, str("Notch"), u[:15]), 767, false},
		{"1.19.3 with", packet(0, str("Notch"), []byte{1}, u[:]), 761, true},
		{"1.19.3 without", packet(0, str("Notch"), []byte{0}), 761, false},
		{"1.19.3 bad flag", packet(0, str("Notch"), []byte{2}, u[:]), 761, false},
		{"1.19.1 signed", packet(0, str("Notch"), []byte{1}, sig, []byte{1}, u[:]), 760, true},
		{"1.19.1 unsigned", packet(0, str("Notch"), []byte{0}, []byte{1}, u[:]), 760, true},
		{"1.19.1 huge key", packet(0, str("Notch"), []byte{1}, make([]byte, 8), varint(1<<20)), 760, false},
		{"1.19", packet(0, str("Notch"), []byte{0}), 759, false},
		{"1.7.10", packet(0, str("Notch")), 5, false},
		{"wrong packet", packet(1, str("Notch"), u[:]), 764, false},
		{"nil UUID", packet(0, str("Notch"), make([]byte, 16)), 764, false},
	} {
		got, ok := LoginStartUUID(tc.body, tc.v)
		if ok != tc.ok || (ok && got != u) {
			t.Errorf("%s: LoginStartUUID = %x, %v; want ok %v", tc.name, got, ok, tc.ok)
		}
	}
}
