package mc

import (
	"bytes"
	"errors"
	"testing"
)

func TestSplitFrame(t *testing.T) {
	big := make([]byte, 300)
	tests := []struct {
		name      string
		in        []byte
		maxLen    int
		frameLen  int
		headerLen int
		reason    string
	}{
		{"empty input", nil, 0, 0, 0, ""},
		{"zero length frame", []byte{0x00}, 0, 1, 1, ""},
		{"zero length then more", []byte{0x00, 0x01, 0x00}, 0, 1, 1, ""},
		{"one byte body", []byte{0x01, 0x00}, 0, 2, 1, ""},
		{"complete with trailing", []byte{0x02, 0x01, 0x02, 0x03}, 0, 3, 1, ""},
		{"incomplete body", []byte{0x05, 0x00, 0x01}, 0, 0, 0, ""},
		{"incomplete header", []byte{0x80}, 0, 0, 0, ""},
		{"incomplete header 2", []byte{0xff, 0xff}, 0, 0, 0, ""},
		{"two byte header", append([]byte{0xac, 0x02}, big...), 0, 302, 2, ""},
		{"max length header only", []byte{0xff, 0xff, 0x7f}, 0, 0, 0, ""},
		{"header too long", []byte{0x80, 0x80, 0x80, 0x00}, 0, 0, 0, ReasonVarIntTooLong},
		{"header too long early", []byte{0xff, 0xff, 0xff}, 0, 0, 0, ReasonVarIntTooLong},
		{"over maxLen", []byte{0x0b}, 10, 0, 0, ReasonFrameTooLarge},
		{"at maxLen incomplete", []byte{0x0a}, 10, 0, 0, ""},
		{"maxLen above protocol max clamps", []byte{0xff, 0xff, 0x7f}, 1 << 30, 0, 0, ""},
		{"negative maxLen means default", []byte{0x01, 0x00}, -5, 2, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, h, err := SplitFrame(tt.in, tt.maxLen)
			if tt.reason != "" {
				checkReason(t, err, tt.reason)
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if n != tt.frameLen || h != tt.headerLen {
				t.Fatalf("SplitFrame = %d, %d; want %d, %d", n, h, tt.frameLen, tt.headerLen)
			}
		})
	}
}

func TestSplitFrameErrorText(t *testing.T) {
	// 3000000 needs a 4-byte VarInt, so use a small maxLen to get the
	// frame_too_large text with a large value instead.
	_, _, err := SplitFrame(AppendVarInt(nil, 2000000), 1000)
	if got, want := err.Error(), "mc: frame length 2000000 exceeds maximum 1000"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("errors.Is(%v, ErrFrameTooLarge) = false", err)
	}
	_, _, err = SplitFrame(AppendVarInt(nil, 3000000), 0)
	if got, want := err.Error(), "mc: frame length varint longer than 3 bytes"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrVarIntTooLong) || errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
}

// TestSplitFrameStream feeds a stream of frames of assorted sizes one byte
// at a time, and split at every position, and checks that the frames come
// out intact.
func TestSplitFrameStream(t *testing.T) {
	var stream []byte
	var want [][]byte
	for _, size := range []int{0, 1, 2, 126, 127, 128, 129, 300, 16384, 5} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + size)
		}
		start := len(stream)
		stream = AppendVarInt(stream, int32(size))
		stream = append(stream, data...)
		want = append(want, stream[start:])
	}
	split := func(buf []byte) (frames [][]byte, rest []byte) {
		for {
			n, h, err := SplitFrame(buf, 0)
			if err != nil {
				t.Fatalf("SplitFrame: %v", err)
			}
			if n == 0 {
				return frames, buf
			}
			if h < 1 || h > MaxFrameHeaderLen || n < h {
				t.Fatalf("SplitFrame = %d, %d", n, h)
			}
			frames = append(frames, buf[:n])
			buf = buf[n:]
		}
	}
	check := func(got [][]byte) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %d frames, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
	}

	// Byte at a time.
	var got [][]byte
	var buf []byte
	for _, c := range stream {
		buf = append(buf, c)
		var f [][]byte
		f, buf = split(buf)
		for _, fr := range f {
			got = append(got, append([]byte(nil), fr...))
		}
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left over", len(buf))
	}
	check(got)

	// Two reads, split at every position.
	for cut := 0; cut <= len(stream); cut++ {
		f1, rest := split(stream[:cut])
		// rest is a suffix of stream[:cut]; continue from it with the
		// remaining bytes appended.
		f2, rest := split(stream[cut-len(rest):])
		if len(rest) != 0 {
			t.Fatalf("cut %d: %d bytes left over", cut, len(rest))
		}
		check(append(f1, f2...))
	}
}

func TestAppendPacket(t *testing.T) {
	frame := AppendPacket([]byte{0xEE}, 0x03, []byte{0x80, 0x02})
	if want := []byte{0xEE, 0x03, 0x03, 0x80, 0x02}; !bytes.Equal(frame, want) {
		t.Fatalf("AppendPacket = %x, want %x", frame, want)
	}
	id, data, err := ParsePacketID(body(t, frame[1:]))
	if id != 3 || !bytes.Equal(data, []byte{0x80, 0x02}) || err != nil {
		t.Fatalf("ParsePacketID = %d, %x, %v", id, data, err)
	}
	// A large packet ID takes several bytes.
	frame = AppendPacket(nil, 300, []byte("x"))
	id, data, err = ParsePacketID(body(t, frame))
	if id != 300 || string(data) != "x" || err != nil {
		t.Fatalf("ParsePacketID = %d, %q, %v", id, data, err)
	}
	_, _, err = ParsePacketID(nil)
	checkReason(t, err, ReasonTruncated)
	_, _, err = ParsePacketID([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x00})
	checkReason(t, err, ReasonVarIntTooLong)
}

func TestParseCompressedHeader(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		length int32
		n      int
		reason string
	}{
		{"uncompressed", []byte{0x00, 0x05, 0xAA}, 0, 1, ""},
		{"compressed", append(varint(300), 0x78, 0x9c), 300, 2, ""},
		{"at cap", varint(MaxUncompressedLength), MaxUncompressedLength, 4, ""},
		{"over cap", varint(MaxUncompressedLength + 1), 0, 0, ReasonBadCompression},
		{"negative", varint(-1), 0, 0, ReasonBadCompression},
		{"empty", nil, 0, 0, ReasonBadCompression},
		{"truncated", []byte{0x80}, 0, 0, ReasonBadCompression},
		{"too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, ReasonBadCompression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, n, err := ParseCompressedHeader(tt.in)
			if tt.reason != "" {
				checkReason(t, err, tt.reason)
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if l != tt.length || n != tt.n {
				t.Fatalf("ParseCompressedHeader = %d, %d; want %d, %d", l, n, tt.length, tt.n)
			}
		})
	}
	_, _, err := ParseCompressedHeader(varint(MaxUncompressedLength + 1))
	if got, want := err.Error(), "mc: compressed frame: data length 8388609 exceeds maximum 8388608"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// The sentinel itself must not be modified by relabelling.
	ParseCompressedHeader([]byte{0x80, 0x80, 0x80, 0x80, 0x80})
	if ErrVarIntTooLong.Reason != ReasonVarIntTooLong || ErrVarIntTooLong.Packet != "" {
		t.Fatalf("sentinel modified: %+v", ErrVarIntTooLong)
	}
}
