package mc

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestProtocolErrorMatching(t *testing.T) {
	_, err := ParseHandshake(packet(0, varint(763), str("h"), u16(1), varint(9)))
	wrapped := fmt.Errorf("conn 7: %w", err)
	if !errors.Is(wrapped, ErrBadNextState) {
		t.Error("errors.Is(wrapped, ErrBadNextState) = false")
	}
	if errors.Is(wrapped, ErrBadHandshake) {
		t.Error("errors.Is(wrapped, ErrBadHandshake) = true")
	}
	var pe *ProtocolError
	if !errors.As(wrapped, &pe) || pe.Reason != ReasonBadNextState || pe.Packet != "handshake" || pe.Field != "next state" || pe.Value != 9 {
		t.Errorf("errors.As gave %+v", pe)
	}
	if got := ErrorReason(wrapped); got != ReasonBadNextState {
		t.Errorf("ErrorReason(wrapped) = %q", got)
	}
	if got := ErrorReason(nil); got != "" {
		t.Errorf("ErrorReason(nil) = %q", got)
	}
	if got := ErrorReason(io.EOF); got != "other" {
		t.Errorf("ErrorReason(io.EOF) = %q", got)
	}
}

func TestSentinels(t *testing.T) {
	sentinels := []*ProtocolError{
		ErrVarIntTooLong, ErrFrameTooLarge, ErrTruncated, ErrStringTooLong, ErrNegativeLength,
		ErrBadHandshake, ErrBadNextState, ErrBadLoginStart, ErrBadPing, ErrBadSetCompression, ErrBadCompression,
		ErrNotLegacyPing, ErrBadLegacyPing, ErrBadStatusJSON, ErrBadChat, ErrBadUsername,
	}
	seen := map[string]bool{}
	for _, s := range sentinels {
		if s.Reason == "" || seen[s.Reason] {
			t.Errorf("sentinel %v has empty or duplicate reason %q", s, s.Reason)
		}
		seen[s.Reason] = true
		if len(s.Error()) <= len("mc: ") {
			t.Errorf("sentinel %q has no text", s.Reason)
		}
		for _, o := range sentinels {
			if errors.Is(s, o) != (s == o) {
				t.Errorf("errors.Is(%q, %q) = %v", s.Reason, o.Reason, !(s == o))
			}
		}
	}
}
