package mc

import "testing"

func BenchmarkSplitFrame(b *testing.B) {
	frame := AppendPacket(nil, 0x10, make([]byte, 1000))
	b.ReportAllocs()
	for b.Loop() {
		if n, _, err := SplitFrame(frame, MaxFrameLength); n != len(frame) || err != nil {
			b.Fatal(n, err)
		}
	}
}

func BenchmarkReadVarInt(b *testing.B) {
	in := AppendVarInt(nil, 2097151)
	b.ReportAllocs()
	for b.Loop() {
		if _, n, _ := ReadVarInt(in); n != 3 {
			b.Fatal(n)
		}
	}
}

func BenchmarkParseHandshake(b *testing.B) {
	frame := AppendHandshake(nil, Handshake{ProtocolVersion: 767, Address: []byte("play.example.com\x00FML3\x00"), Port: 25565, NextState: 2})
	body := frame[1:]
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseHandshake(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLoginStart(b *testing.B) {
	body := packet(0, str("Notch"), make([]byte, 16))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLoginStart(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOfflineUUID(b *testing.B) {
	name := []byte("Notch")
	b.ReportAllocs()
	for b.Loop() {
		_ = OfflineUUID(name)
	}
}
