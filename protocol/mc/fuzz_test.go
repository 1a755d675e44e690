package mc

import (
	"bytes"
	"math"
	"testing"
)

func FuzzReadVarInt(f *testing.F) {
	for _, s := range [][]byte{
		nil, {0x00}, {0x7f}, {0x80, 0x01}, {0xff, 0x01}, {0xff, 0xff, 0x7f},
		{0xff, 0xff, 0xff, 0xff, 0x07}, {0xff, 0xff, 0xff, 0xff, 0x0f}, {0xff, 0xff, 0xff, 0xff, 0x7f},
		{0x80, 0x80}, {0x80, 0x80, 0x80, 0x80, 0x80}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, {0x80, 0x00, 0xaa},
	} {
		f.Add(s, int32(len(s)*1000-1))
	}
	f.Add([]byte{0x01}, int32(math.MinInt32))
	f.Add([]byte{0x01}, int32(math.MaxInt32))
	f.Fuzz(func(t *testing.T, b []byte, w int32) {
		// Encoding any value round-trips.
		enc := AppendVarInt(nil, w)
		if len(enc) != VarIntLen(w) || len(enc) > MaxVarIntLen {
			t.Fatalf("AppendVarInt(%d) = %x, VarIntLen %d", w, enc, VarIntLen(w))
		}
		if v, n, err := ReadVarInt(enc); v != w || n != len(enc) || err != nil {
			t.Fatalf("ReadVarInt(AppendVarInt(%d)) = %d, %d, %v", w, v, n, err)
		}

		v, n, err := ReadVarInt(b)
		if n < 0 || n > len(b) || n > MaxVarIntLen {
			t.Fatalf("n = %d out of range for %d bytes", n, len(b))
		}
		cont := 0 // leading bytes with the continuation bit
		for cont < len(b) && b[cont] >= 0x80 {
			cont++
		}
		switch {
		case err != nil:
			if err != ErrVarIntTooLong || n != 0 || v != 0 || cont < MaxVarIntLen {
				t.Fatalf("ReadVarInt(%x) = %d, %d, %v", b, v, n, err)
			}
		case n == 0:
			if v != 0 || cont != len(b) || len(b) >= MaxVarIntLen {
				t.Fatalf("ReadVarInt(%x) = %d, 0, nil but input is not a short prefix", b, v)
			}
		default:
			if cont != n-1 {
				t.Fatalf("ReadVarInt(%x) consumed %d bytes, VarInt ends at %d", b, n, cont+1)
			}
			re := AppendVarInt(nil, v)
			if len(re) > n {
				t.Fatalf("re-encoding %d is longer (%d) than input (%d)", v, len(re), n)
			}
			if len(re) == n && n < MaxVarIntLen && !bytes.Equal(re, b[:n]) {
				t.Fatalf("minimal encoding %x re-encodes as %x", b[:n], re)
			}
		}
	})
}

func FuzzSplitFrame(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte{0x00}, 0)
	f.Add([]byte{0x02, 0x00, 0x01, 0x03}, 0)
	f.Add([]byte{0x0b, 0x00}, 10)
	f.Add([]byte{0x80, 0x01}, 1000)
	f.Add([]byte{0xff, 0xff, 0x7f}, MaxFrameLength)
	f.Add([]byte{0xff, 0xff, 0xff, 0x01}, 0)
	f.Add(allocHandshake, 0)
	f.Add(AppendPacket(nil, 1, make([]byte, 200)), 150)
	f.Fuzz(func(t *testing.T, b []byte, maxLen int) {
		limit := maxLen
		if limit <= 0 || limit > MaxFrameLength {
			limit = MaxFrameLength
		}
		n, h, err := SplitFrame(b, maxLen)
		if n < 0 || n > len(b) || h < 0 || h > MaxFrameHeaderLen || (n == 0) != (h == 0) {
			t.Fatalf("SplitFrame(%x, %d) = %d, %d, %v", b, maxLen, n, h, err)
		}
		v, vn, verr := ReadVarInt(b)
		switch {
		case err != nil:
			if n != 0 {
				t.Fatalf("frame %d returned with error %v", n, err)
			}
			switch ErrorReason(err) {
			case ReasonVarIntTooLong:
				if len(b) < MaxFrameHeaderLen || b[0] < 0x80 || b[1] < 0x80 || b[2] < 0x80 {
					t.Fatalf("header %x reported too long", b)
				}
			case ReasonFrameTooLarge:
				if verr != nil || vn == 0 || vn > MaxFrameHeaderLen || int(v) <= limit {
					t.Fatalf("length %d (%d bytes) reported over %d", v, vn, limit)
				}
			default:
				t.Fatalf("unexpected error %v", err)
			}
		case n == 0:
			if vn != 0 && vn+int(v) <= len(b) && vn <= MaxFrameHeaderLen {
				t.Fatalf("whole frame of %d+%d bytes in %d reported incomplete", vn, v, len(b))
			}
		default:
			if vn != h || int(v) != n-h || int(v) > limit {
				t.Fatalf("SplitFrame = %d, %d; ReadVarInt = %d, %d", n, h, v, vn)
			}
			// Exactly the frame still splits the same way, and no strict
			// prefix of it is a frame.
			if n2, h2, err2 := SplitFrame(b[:n], maxLen); n2 != n || h2 != h || err2 != nil {
				t.Fatalf("SplitFrame(frame) = %d, %d, %v", n2, h2, err2)
			}
			for i := 0; i < n; i++ {
				if n2, h2, err2 := SplitFrame(b[:i], maxLen); n2 != 0 || h2 != 0 || err2 != nil {
					t.Fatalf("SplitFrame(prefix %d) = %d, %d, %v", i, n2, h2, err2)
				}
			}
			// Re-framing the body gives the same body back.
			re := AppendVarInt(nil, int32(n-h))
			re = append(re, b[h:n]...)
			if n2, h2, err2 := SplitFrame(re, maxLen); n2 != len(re) || !bytes.Equal(re[h2:n2], b[h:n]) || err2 != nil {
				t.Fatalf("re-framed body does not split back")
			}
		}
	})
}

func FuzzParseHandshake(f *testing.F) {
	for _, addr := range []string{"", "localhost", "mc.example.com\x00FML\x00", "mc.example.com\x00FML2\x00",
		"mc.example.com\x00FML3\x00", "MC.example.com.\x00FORGE", "h\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f\x00[]"} {
		for _, v := range []int32{Protocol1_7_10, Protocol1_20_5} {
			f.Add(AppendHandshake(nil, Handshake{ProtocolVersion: v, Address: []byte(addr), Port: 25565, NextState: 2})[1:])
		}
	}
	f.Add([]byte{0x00, 0x05, 0x09, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't', 0x63, 0xdd, 0x04})
	f.Add([]byte{0x00, 0x80, 0x80, 0x80, 0x80, 0x80})
	f.Add([]byte{0xfe, 0x01, 0xfa})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHandshake(b)
		if err != nil {
			if r := ErrorReason(err); r != ReasonBadHandshake && r != ReasonBadNextState {
				t.Fatalf("reason %q for %v", r, err)
			}
			if h.Address != nil || h.ProtocolVersion != 0 || h.Port != 0 || h.NextState != 0 {
				t.Fatalf("partial result with error: %+v", h)
			}
			_ = err.Error()
			return
		}
		if h.NextState < 1 || h.NextState > 3 || len(h.Address) > MaxHandshakeAddressLen {
			t.Fatalf("accepted %+v", h)
		}
		// Address is the sub-slice of b right after its length prefix.
		_, n1, _ := ReadVarInt(b)
		_, n2, _ := ReadVarInt(b[n1:])
		_, n3, _ := ReadVarInt(b[n1+n2:])
		off := n1 + n2 + n3
		if off+len(h.Address) > len(b) || !bytes.Equal(h.Address, b[off:off+len(h.Address)]) ||
			(len(h.Address) > 0 && &h.Address[0] != &b[off]) {
			t.Fatalf("Address %q is not b[%d:]", h.Address, off)
		}
		// Round trip.
		frame := AppendHandshake(nil, h)
		fn, fh, ferr := SplitFrame(frame, 0)
		if ferr != nil || fn != len(frame) {
			t.Fatalf("re-encoded handshake does not frame: %v", ferr)
		}
		if fn-fh > len(b) {
			t.Fatalf("re-encoded body %d bytes, input %d", fn-fh, len(b))
		}
		h2, err := ParseHandshake(frame[fh:])
		if err != nil || h2.ProtocolVersion != h.ProtocolVersion || !bytes.Equal(h2.Address, h.Address) ||
			h2.Port != h.Port || h2.NextState != h.NextState {
			t.Fatalf("round trip: %+v, %v; want %+v", h2, err, h)
		}
		checkAddress(t, h.Address)
	})
}

// FuzzAddress exercises the server address helpers on arbitrary input.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"", "\x00", "mc.example.com", "A.B.\x00FML\x00", "h\x00FML2\x00", "h\x00FML3\x00", "h\x00FORGE",
		"h\x00203.0.113.7\x00b50ad385829d3141a2167e7d7539ba7f", "h\x00::1\x00B50AD385829D3141A2167E7D7539BA7F\x00[]",
		"h\x00ip\x00b50ad385829d3141a2167e7d7539ba7f\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkAddress)
}

func checkAddress(t *testing.T, addr []byte) {
	host, marker := SplitAddress(addr)
	if len(host)+len(marker) != len(addr) || bytes.IndexByte(host, 0) >= 0 || (len(marker) > 0 && marker[0] != 0) {
		t.Fatalf("SplitAddress(%q) = %q, %q", addr, host, marker)
	}
	if k := ForgeMarker(addr); k != ForgeNone && !bytes.Contains(marker, []byte(k.Marker())) {
		t.Fatalf("ForgeMarker(%q) = %v", addr, k)
	}
	norm := AppendNormalizedHost(nil, host)
	if len(norm) > len(host) || len(norm) < len(host)-1 || !bytes.EqualFold(norm, bytes.TrimSuffix(host, []byte("."))) {
		t.Fatalf("AppendNormalizedHost(%q) = %q", host, norm)
	}
	for _, c := range norm {
		if 'A' <= c && c <= 'Z' {
			t.Fatalf("AppendNormalizedHost(%q) = %q keeps upper case", host, norm)
		}
	}
	h, ip, id, props, ok := ParseBungeeAddress(addr)
	if !ok {
		if h != nil || ip != nil || id != nil || props != nil {
			t.Fatal("parts returned with !ok")
		}
		return
	}
	u, uok := ParseUUID(id)
	if !uok || len(id) != 32 {
		t.Fatalf("ParseBungeeAddress accepted uuid %q", id)
	}
	re := AppendBungeeAddress(nil, h, string(ip), u, props)
	h2, ip2, id2, props2, ok2 := ParseBungeeAddress(re)
	if !ok2 || !bytes.Equal(h, h2) || !bytes.Equal(ip, ip2) || !bytes.EqualFold(id, id2) || !bytes.Equal(props, props2) {
		t.Fatalf("Bungee round trip of %q gave %q", addr, re)
	}
}

func FuzzParseLoginStart(f *testing.F) {
	uuid := OfflineUUID([]byte("Notch"))
	f.Add(packet(0, str("Notch")))
	f.Add(packet(0, str("Notch"), uuid[:]))
	f.Add(packet(0, str("Notch"), []byte{0x01}, uuid[:]))
	f.Add(packet(0, str("abcdefghijklmnopq")))
	f.Add(packet(0, str("")))
	f.Add(packet(0, varint(-1)))
	f.Add(packet(1, str("Notch")))
	f.Add([]byte{0x00, 0x05, 'N', 'o'})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := ParseLoginStart(b)
		if err != nil {
			if ErrorReason(err) != ReasonBadLoginStart || name != nil {
				t.Fatalf("ParseLoginStart = %q, %v", name, err)
			}
			_ = err.Error()
			return
		}
		if len(name) < 1 || len(name) > MaxUsernameLen {
			t.Fatalf("accepted name %q", name)
		}
		_, n1, _ := ReadVarInt(b)
		_, n2, _ := ReadVarInt(b[n1:])
		if off := n1 + n2; off+len(name) > len(b) || &name[0] != &b[off] {
			t.Fatalf("name %q does not alias b[%d:]", name, off)
		}
		re := packet(PacketLoginStart, AppendString(nil, name), b[n1+n2+len(name):])
		if name2, err := ParseLoginStart(re); err != nil || !bytes.Equal(name2, name) {
			t.Fatalf("round trip: %q, %v", name2, err)
		}
		if u := OfflineUUID(name); u[6]>>4 != 3 || u[8]>>6 != 2 {
			t.Fatalf("OfflineUUID(%q) = %x", name, u)
		}
	})
}

func FuzzParseCompressedHeader(f *testing.F) {
	for _, s := range [][]byte{nil, {0x00, 0x01}, {0xac, 0x02, 0x78, 0x9c}, varint(MaxUncompressedLength),
		varint(MaxUncompressedLength + 1), varint(-1), {0x80}, {0x80, 0x80, 0x80, 0x80, 0x80}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, n, err := ParseCompressedHeader(b)
		if err != nil {
			if ErrorReason(err) != ReasonBadCompression || l != 0 || n != 0 {
				t.Fatalf("ParseCompressedHeader = %d, %d, %v", l, n, err)
			}
			_ = err.Error()
			return
		}
		v, vn, _ := ReadVarInt(b)
		if n < 1 || n > len(b) || n > MaxVarIntLen || l < 0 || l > MaxUncompressedLength || l != v || n != vn {
			t.Fatalf("ParseCompressedHeader(%x) = %d, %d", b, l, n)
		}
	})
}

// FuzzLoginStartUUID: any body and version is decoded or refused without
// panic; a UUID found in a 1.20.2 body is the 16 bytes after the name.
func FuzzLoginStartUUID(f *testing.F) {
	uuid := OfflineUUID([]byte("Notch"))
	f.Add(packet(0, str("Notch"), uuid[:]), int32(764))
	f.Add(packet(0, str("Notch"), []byte{0x01}, uuid[:]), int32(761))
	f.Add(packet(0, str("Notch"), []byte{0x01}, make([]byte, 8), varint(2), []byte{1, 2}, varint(1), []byte{3}, []byte{0x01}, uuid[:]), int32(760))
	f.Add(packet(0, str("Notch"), []byte{0x00}), int32(761))
	f.Add(packet(0, str("Notch")), int32(5))
	f.Fuzz(func(t *testing.T, b []byte, v int32) {
		u, ok := LoginStartUUID(b, v)
		if !ok {
			return
		}
		if u == [16]byte{} {
			t.Fatal("the nil UUID was returned as a UUID")
		}
		name, err := ParseLoginStart(b)
		if err != nil {
			t.Fatalf("UUID %x from a body ParseLoginStart refuses: %v", u, err)
		}
		if v >= ProtocolLoginUUID {
			_, n1, _ := ReadVarInt(b)
			_, n2, _ := ReadVarInt(b[n1:])
			if off := n1 + n2 + len(name); !bytes.Equal(b[off:off+16], u[:]) {
				t.Fatalf("UUID %x is not the 16 bytes after the name in %x", u, b)
			}
		}
	})
}
