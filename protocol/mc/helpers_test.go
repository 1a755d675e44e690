package mc

import (
	"errors"
	"testing"
)

// checkReason fails t unless err is a *ProtocolError with the given reason
// that also matches the corresponding sentinel with errors.Is.
func checkReason(t *testing.T, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want reason %q", reason)
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *ProtocolError", err, err)
	}
	if pe.Reason != reason {
		t.Fatalf("reason = %q (%v), want %q", pe.Reason, err, reason)
	}
	if got := ErrorReason(err); got != reason {
		t.Fatalf("ErrorReason = %q, want %q", got, reason)
	}
	if !errors.Is(err, &ProtocolError{Reason: reason}) {
		t.Fatalf("errors.Is(%v, reason %q) = false", err, reason)
	}
}

// body strips the frame header from a whole frame, failing t unless frame
// is exactly one frame.
func body(t testing.TB, frame []byte) []byte {
	t.Helper()
	n, h, err := SplitFrame(frame, MaxFrameLength)
	if err != nil || n != len(frame) {
		t.Fatalf("SplitFrame(%x) = %d, %d, %v; want %d, _, nil", frame, n, h, err, len(frame))
	}
	return frame[h:n]
}

// packet builds a frame body from a packet ID and fields already encoded.
func packet(id int32, fields ...[]byte) []byte {
	b := AppendVarInt(nil, id)
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func varint(v int32) []byte { return AppendVarInt(nil, v) }

func str(s string) []byte { return AppendString(nil, []byte(s)) }

func u16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }
