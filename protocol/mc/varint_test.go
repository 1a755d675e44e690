package mc

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestVarInt(t *testing.T) {
	tests := []struct {
		v   int32
		enc []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{255, []byte{0xff, 0x01}},
		{25565, []byte{0xdd, 0xc7, 0x01}},
		{2097151, []byte{0xff, 0xff, 0x7f}},
		{2097152, []byte{0x80, 0x80, 0x80, 0x01}},
		{math.MaxInt32, []byte{0xff, 0xff, 0xff, 0xff, 0x07}},
		{-1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{math.MinInt32, []byte{0x80, 0x80, 0x80, 0x80, 0x08}},
	}
	for _, tt := range tests {
		if got := AppendVarInt(nil, tt.v); !bytes.Equal(got, tt.enc) {
			t.Errorf("AppendVarInt(%d) = %x, want %x", tt.v, got, tt.enc)
		}
		if got := VarIntLen(tt.v); got != len(tt.enc) {
			t.Errorf("VarIntLen(%d) = %d, want %d", tt.v, got, len(tt.enc))
		}
		// Trailing bytes must not be consumed.
		in := append(append([]byte(nil), tt.enc...), 0xAA, 0xBB)
		v, n, err := ReadVarInt(in)
		if v != tt.v || n != len(tt.enc) || err != nil {
			t.Errorf("ReadVarInt(%x) = %d, %d, %v; want %d, %d, nil", in, v, n, err, tt.v, len(tt.enc))
		}
		// Every strict prefix is incomplete.
		for i := 0; i < len(tt.enc); i++ {
			v, n, err := ReadVarInt(tt.enc[:i])
			if v != 0 || n != 0 || err != nil {
				t.Errorf("ReadVarInt(%x) = %d, %d, %v; want 0, 0, nil", tt.enc[:i], v, n, err)
			}
		}
	}
}

func TestReadVarIntEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		v    int32
		n    int
		err  error
	}{
		{"empty", nil, 0, 0, nil},
		{"truncated", []byte{0x80, 0x80}, 0, 0, nil},
		{"truncated 4", []byte{0xff, 0xff, 0xff, 0xff}, 0, 0, nil},
		{"too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0, 0, ErrVarIntTooLong},
		{"too long exactly 5", []byte{0xff, 0xff, 0xff, 0xff, 0xff}, 0, 0, ErrVarIntTooLong},
		{"non-minimal zero", []byte{0x80, 0x00}, 0, 2, nil},
		{"fifth byte high bits dropped", []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, -1, 5, nil},
	}
	for _, tt := range tests {
		v, n, err := ReadVarInt(tt.in)
		if v != tt.v || n != tt.n || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%s: ReadVarInt(%x) = %d, %d, %v; want %d, %d, %v", tt.name, tt.in, v, n, err, tt.v, tt.n, tt.err)
		}
	}
	_, _, err := ReadVarInt([]byte{0x80, 0x80, 0x80, 0x80, 0x80})
	checkReason(t, err, ReasonVarIntTooLong)
	if got, want := err.Error(), "mc: varint too long"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestVarIntLenAll(t *testing.T) {
	for _, v := range []int32{0, 1, 127, 128, 16383, 16384, 2097151, 2097152, 268435455, 268435456, math.MaxInt32, -1, math.MinInt32} {
		if got, want := VarIntLen(v), len(AppendVarInt(nil, v)); got != want {
			t.Errorf("VarIntLen(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestReaderVarIntErrors(t *testing.T) {
	r := NewReader([]byte{0x80})
	_, err := r.ReadVarInt()
	checkReason(t, err, ReasonTruncated)
	r = NewReader([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80})
	_, err = r.ReadVarInt()
	checkReason(t, err, ReasonVarIntTooLong)
	if r.Remaining() != 6 {
		t.Errorf("Remaining after error = %d, want 6", r.Remaining())
	}
}
