package inspect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/reasons"
	"github.com/tidegate/tidegate/session/proxy/reframe"
)

// TestReason: an inspected session ends with the re-framed relay's reasons
// for what re-framing refuses, and bad_backend_frame for the rest.
func TestReason(t *testing.T) {
	var r idReader
	_, _, declared := r.read(mc.AppendVarInt(nil, mc.MaxClientboundUncompressed+1), 256, true)
	for _, tc := range []struct {
		name string
		err  error
		want reasons.Reason
	}{
		{"declared past the limit", fmt.Errorf("%w: %w", ErrFrame, declared), reasons.InflateTooLarge},
		{"re-framing: too large", fmt.Errorf("%w: %w: %w", ErrFrame, errReframe, reframe.ErrTooLarge), reasons.ReframeTooLarge},
		{"re-framing: bad zlib", fmt.Errorf("%w: %w: %w", ErrFrame, errReframe, errors.New("zlib: invalid header")), reasons.BadCompression},
		{"a frame that does not read", fmt.Errorf("%w: packet ID: %w", ErrFrame, errors.New("varint too long")), reasons.BadBackendFrame},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if msg := EndMessage(tc.want); (tc.want == reasons.BadBackendFrame) != (msg == "session closed: its backend sent a frame that does not read") {
			t.Errorf("%s: message %q", tc.name, msg)
		}
	}
	if declared == nil {
		t.Fatal("a data length past the limit read")
	}
}
