package mc

import (
	"testing"
)

func TestBungeeAddressRoundTrip(t *testing.T) {
	uuid := OfflineUUID([]byte("Notch"))
	props := []byte(`[{"name":"textures","value":"e3t9","signature":"c2ln"}]`)
	tests := []struct {
		host  string
		ip    string
		props []byte
		want  string
	}{
		{"mc.example.com", "203.0.113.7", nil, "mc.example.com\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f"},
		{"mc.example.com", "2001:db8::1", props, "mc.example.com\x002001:db8::1\x00b50ad385829d3141a2167e7d7539ba7f\x00" + string(props)},
		{"", "127.0.0.1", []byte{}, "\x00127.0.0.1\x00b50ad385829d3141a2167e7d7539ba7f"},
	}
	for _, tt := range tests {
		addr := AppendBungeeAddress(nil, []byte(tt.host), tt.ip, uuid, tt.props)
		if string(addr) != tt.want {
			t.Fatalf("AppendBungeeAddress = %q, want %q", addr, tt.want)
		}
		host, ip, id, p, ok := ParseBungeeAddress(addr)
		if !ok || string(host) != tt.host || string(ip) != tt.ip || string(p) != string(tt.props) {
			t.Fatalf("ParseBungeeAddress(%q) = %q, %q, %q, %q, %v", addr, host, ip, id, p, ok)
		}
		if u, ok := ParseUUID(id); !ok || u != uuid {
			t.Fatalf("uuid = %q", id)
		}
		// It survives a handshake round trip and is not taken for Forge.
		h, err := ParseHandshake(body(t, AppendHandshake(nil, Handshake{ProtocolVersion: 767, Address: addr, Port: 25565, NextState: 2})))
		if err != nil || string(h.Address) != string(addr) || ForgeMarker(h.Address) != ForgeNone {
			t.Fatalf("handshake round trip: %v", err)
		}
	}
}

func TestParseBungeeAddressRejects(t *testing.T) {
	for _, addr := range []string{
		"",
		"mc.example.com",
		"mc.example.com\x00FML\x00",
		"mc.example.com\x00FML2\x00",
		"mc.example.com\x00203.0.113.7",
		"mc.example.com\x00203.0.113.7\x00b50ad385-829d-3141-a216-7e7d7539ba7f",
		"mc.example.com\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7",
		"mc.example.com\x00203.0.113.7\x00x50ad385829d3141a2167e7d7539ba7f",
		"mc.example.com\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f\x00[]\x00extra",
	} {
		if _, _, _, _, ok := ParseBungeeAddress([]byte(addr)); ok {
			t.Errorf("ParseBungeeAddress(%q) ok", addr)
		}
	}
}
