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
