package bungeemsg

import (
	"errors"
	"reflect"
	"testing"
)

func seeds(f *testing.F) {
	f.Helper()
	for _, s := range Subs() {
		b, _ := AppendRequest(nil, full(s))
		f.Add(b)
		if s.Answers() {
			b, _ = AppendResponse(nil, full(s))
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 7, 'C', 'o', 'n', 'n', 'e', 'c', 't', 0, 3, 0xed, 0xa0, 0xbd})
	f.Add([]byte{0, 7, 'F', 'o', 'r', 'w', 'a', 'r', 'd', 0, 0, 0, 0, 0x80, 0})
}

// FuzzParseRequest: no input panics; an error leaves no message (but the
// subchannel for an unknown one); a message written again reads back the
// same, and its strings are no longer than the input.
func FuzzParseRequest(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseRequest(b)
		if err != nil {
			if ErrorReason(err) == "other" || !reflect.DeepEqual(m, Msg{}) {
				t.Fatalf("ParseRequest(% x) = %+v, %v", b, m, err)
			}
			return
		}
		if n := len(m.Server) + len(m.Player) + len(m.Text) + len(m.Channel) + len(m.Data); n > len(b) {
			t.Fatalf("ParseRequest(% x): %d bytes of fields from %d of input", b, n, len(b))
		}
		again, err := AppendRequest(nil, m)
		if err != nil {
			t.Fatalf("AppendRequest(%+v): %v", m, err)
		}
		m2, err := ParseRequest(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip of % x: %+v, then %+v, %v", b, m, m2, err)
		}
	})
}

// FuzzParseResponse: as FuzzParseRequest, for the answers a fake backend
// reads.
func FuzzParseResponse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseResponse(b)
		if err != nil {
			if ErrorReason(err) == "other" {
				t.Fatalf("ParseResponse(% x): %v", b, err)
			}
			return
		}
		again, err := AppendResponse(nil, m)
		if err != nil {
			t.Fatalf("AppendResponse(%+v): %v", m, err)
		}
		if m2, err := ParseResponse(again); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip of % x: %+v, then %+v, %v", b, m, m2, err)
		}
	})
}

// FuzzUTF: decoding never panics nor grows its input, and what it decodes
// is written back to bytes that decode to the same string.
func FuzzUTF(f *testing.F) {
	for _, v := range utfVectors {
		f.Add(v.java[2:])
	}
	f.Add([]byte{0xed, 0xa0, 0xbd, 'z', 0xc0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeModified(b)
		if err != nil {
			if !errors.Is(err, ErrBadUTF) {
				t.Fatalf("decodeModified(% x): %v", b, err)
			}
			return
		}
		if len(s) > len(b) {
			t.Fatalf("decodeModified(% x) = %d bytes", b, len(s))
		}
		enc, err := AppendUTF(nil, s)
		if err != nil {
			t.Fatalf("AppendUTF(%q): %v", s, err)
		}
		if s2, err := decodeModified(enc[2:]); err != nil || s2 != s {
			t.Fatalf("% x decoded %q, wrote % x, decoded %q, %v", b, s, enc, s2, err)
		}
	})
}
