package mc

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestStatusResponse(t *testing.T) {
	for _, json := range []string{`{}`, `{"description":{"text":"hi"}}`, strings.Repeat("x", 40000)} {
		frame := AppendStatusResponse([]byte("prefix"), []byte(json))
		if !bytes.HasPrefix(frame, []byte("prefix")) {
			t.Fatal("prefix lost")
		}
		id, data, err := ParsePacketID(body(t, frame[6:]))
		if err != nil || id != PacketStatusResponse {
			t.Fatalf("id = %d, %v", id, err)
		}
		r := NewReader(data)
		s, err := r.ReadString(math.MaxInt32)
		if err != nil || string(s) != json || r.Remaining() != 0 {
			t.Fatalf("json round trip failed: %v", err)
		}
	}
}

func TestPingPong(t *testing.T) {
	for _, v := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1700000000000} {
		pong := AppendPong(nil, v)
		if len(pong) != 10 || pong[0] != 9 || pong[1] != PacketPong {
			t.Fatalf("AppendPong(%d) = %x", v, pong)
		}
		// A ping has the same layout with ID 0x01.
		got, err := ParsePing(body(t, pong))
		if got != v || err != nil {
			t.Fatalf("ParsePing = %d, %v; want %d", got, err, v)
		}
	}
	want := []byte{0x09, 0x01, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00}
	if got := AppendPong(nil, 1700000000000); !bytes.Equal(got, want) {
		t.Fatalf("AppendPong = %x, want %x", got, want)
	}
	for name, in := range map[string][]byte{
		"empty":     nil,
		"request":   {0x00},
		"truncated": {0x01, 1, 2, 3},
		"trailing":  {0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9},
	} {
		_, err := ParsePing(in)
		t.Run(name, func(t *testing.T) { checkReason(t, err, ReasonBadPing) })
	}
}
