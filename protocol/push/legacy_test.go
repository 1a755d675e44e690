package push

import (
	"bytes"
	"errors"
	"testing"
)

func TestLegacyFrameRoundTrip(t *testing.T) {
	topic := []byte("prices")
	evs := [][]byte{AppendEvent(nil, OpNext, []byte("hello")), AppendEvent(nil, OpHeartbeat, nil), AppendEvent(nil, OpNext, []byte{})}
	frame := AppendFrame(nil, topic, evs...)
	want := []byte{0, 0, 0, byte(2 + len(topic) + 10 + 5 + 5), 1, byte(len(topic))}
	if !bytes.HasPrefix(frame, append(want, topic...)) {
		t.Fatalf("frame header %x, want prefix %x", frame[:12], want)
	}
	for cut := 0; cut < len(frame); cut++ {
		if _, _, err := DecodeFrame(frame[:cut], DefaultMaxFrame); !errors.Is(err, ErrIncomplete) {
			t.Fatalf("DecodeFrame of %d/%d bytes = %v, want ErrIncomplete", cut, len(frame), err)
		}
	}
	f, n, err := DecodeFrame(append(frame, 0xEE), DefaultMaxFrame)
	if err != nil || n != len(frame) || !bytes.Equal(f.Topic, topic) {
		t.Fatalf("DecodeFrame = %q, %d, %v", f.Topic, n, err)
	}
	var ops []byte
	var payloads []string
	for rest := f.Events; len(rest) > 0; {
		op, p, r, err := NextEvent(rest)
		if err != nil {
			t.Fatalf("NextEvent: %v", err)
		}
		ops, payloads, rest = append(ops, op), append(payloads, string(p)), r
	}
	if !bytes.Equal(ops, []byte{OpNext, OpHeartbeat, OpNext}) || payloads[0] != "hello" || payloads[1] != "" || payloads[2] != "" {
		t.Fatalf("events ops %v payloads %q", ops, payloads)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
	}{
		{"too large", []byte{0, 0, 1, 0, 1, 0}},
		{"shorter than header", []byte{0, 0, 0, 1, 1}},
		{"bad version", []byte{0, 0, 0, 2, 2, 0}},
		{"name past end", []byte{0, 0, 0, 3, 1, 5, 'a'}},
		{"name too long", append([]byte{0, 0, 0, 129, 1, 127}, make([]byte, 127)...)},
	}
	for _, tc := range cases {
		if _, _, err := DecodeFrame(tc.b, 255); err == nil || errors.Is(err, ErrIncomplete) {
			t.Errorf("%s: DecodeFrame(%x) = %v, want a frame error", tc.name, tc.b, err)
		}
	}
	for _, ev := range [][]byte{{0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 9, 1}} {
		if _, _, _, err := NextEvent(ev); err == nil {
			t.Errorf("NextEvent(%x) accepted", ev)
		}
	}
}
