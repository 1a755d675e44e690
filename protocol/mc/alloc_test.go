package mc

import "testing"

var (
	allocHandshake  = AppendHandshake(nil, Handshake{ProtocolVersion: 767, Address: []byte("mc.example.com\x00FML3\x00"), Port: 25565, NextState: 2})
	allocLoginStart = packet(0, str("Notch"), make([]byte, 16))
)

func TestZeroAllocs(t *testing.T) {
	hsBody := allocHandshake[1:]
	frames := append(append([]byte(nil), allocHandshake...), AppendPacket(nil, 0, allocLoginStart[1:])...)
	var sink int
	scratch := make([]byte, 0, 64)
	tests := map[string]func(){
		"SplitFrame": func() {
			n, h, _ := SplitFrame(frames, MaxFrameLength)
			sink += n + h
		},
		"SplitFrame incomplete": func() {
			n, h, _ := SplitFrame(frames[:5], MaxFrameLength)
			sink += n + h
		},
		"ReadVarInt": func() {
			v, n, _ := ReadVarInt([]byte{0xff, 0xff, 0xff, 0xff, 0x07})
			sink += int(v) + n
		},
		"ReadVarInt too long": func() {
			_, n, _ := ReadVarInt([]byte{0xff, 0xff, 0xff, 0xff, 0xff})
			sink += n
		},
		"ParseHandshake": func() {
			h, _ := ParseHandshake(hsBody)
			sink += len(h.Address)
		},
		"ParseLoginStart": func() {
			name, _ := ParseLoginStart(allocLoginStart)
			sink += len(name)
		},
		"ParseCompressedHeader": func() {
			l, n, _ := ParseCompressedHeader([]byte{0xac, 0x02, 0x78})
			sink += int(l) + n
		},
		"ParsePing": func() {
			v, _ := ParsePing([]byte{1, 0, 0, 0, 0, 0, 0, 0, 7})
			sink += int(v)
		},
		"SplitAddress+ForgeMarker+AppendNormalizedHost": func() {
			h, _ := ParseHandshake(hsBody)
			host, _ := SplitAddress(h.Address)
			sink += int(ForgeMarker(h.Address))
			sink += len(AppendNormalizedHost(scratch[:0], host))
		},
		"ParseBungeeAddress": func() {
			_, _, u, _, _ := ParseBungeeAddress([]byte("h\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f"))
			sink += len(u)
		},
		"OfflineUUID+AppendUUID": func() {
			u := OfflineUUID([]byte("Notch"))
			sink += len(AppendUUID(scratch[:0], u, true))
		},
		"Append into capacity": func() {
			b := AppendHandshake(scratch[:0], Handshake{ProtocolVersion: 767, Address: []byte("mc.example.com"), Port: 25565, NextState: 2})
			b = AppendPong(b[:0], 42)
			b = AppendStatusResponse(b[:0], []byte(`{"a":1}`))
			b = AppendLoginDisconnect(b[:0], []byte(`{"text":"x"}`))
			sink += len(b)
		},
	}
	for name, f := range tests {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
	_ = sink
}
