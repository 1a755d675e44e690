package bungeemsg

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Java's DataOutput.writeUTF of each string, as the JDK writes it.
var utfVectors = []struct {
	s    string
	java []byte
}{
	{"", []byte{0, 0}},
	{"Connect", append([]byte{0, 7}, "Connect"...)},
	{"a\x00b", []byte{0, 4, 'a', 0xc0, 0x80, 'b'}},          // U+0000 in two bytes
	{"é", []byte{0, 2, 0xc3, 0xa9}},                         // U+00E9
	{"€", []byte{0, 3, 0xe2, 0x82, 0xac}},                   // U+20AC
	{"😀", []byte{0, 6, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80}}, // U+1F600 as the surrogates D83D DE00
	{"x😀y", []byte{0, 8, 'x', 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80, 'y'}},
}

func TestAppendUTFMatchesJava(t *testing.T) {
	for _, v := range utfVectors {
		got, err := AppendUTF([]byte{0xaa}, v.s)
		if err != nil || !bytes.Equal(got, append([]byte{0xaa}, v.java...)) {
			t.Errorf("AppendUTF(%q) = % x, %v; want aa % x", v.s, got, err, v.java)
		}
		r := reader{p: v.java}
		s, err := r.utf()
		if err != nil || s != v.s || r.off != len(v.java) {
			t.Errorf("reading % x = %q (offset %d), %v; want %q", v.java, s, r.off, err, v.s)
		}
	}
}

func TestDecodeModified(t *testing.T) {
	for _, tc := range []struct {
		in     []byte
		want   string
		reason error
	}{
		{in: []byte{'a', 0, 'b'}, want: "a\x00b"},            // one-byte NUL, which DataInput accepts
		{in: []byte{0xc0, 0xa9}, want: ")"},                  // an overlong form, which DataInput accepts
		{in: []byte{0xed, 0xa0, 0xbd}, want: "\uFFFD"},       // a high surrogate alone at the end
		{in: []byte{0xed, 0xa0, 0xbd, 'z'}, want: "\uFFFDz"}, // a high surrogate not followed by a low one
		{in: []byte{0xed, 0xb8, 0x80}, want: "\uFFFD"},       // a low surrogate alone
		{in: []byte{0xed, 0xa0, 0xbd, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80}, want: "\uFFFD😀"},
		{in: []byte{0xf0, 0x9f, 0x98, 0x80}, reason: ErrBadUTF}, // four-byte UTF-8 is not modified UTF-8
		{in: []byte{'a', 0xc3}, reason: ErrBadUTF},
		{in: []byte{0xc3, 'a'}, reason: ErrBadUTF},
		{in: []byte{0xe2, 0x82}, reason: ErrBadUTF},
		{in: []byte{0xe2, 0x82, 'a'}, reason: ErrBadUTF},
		{in: []byte{0x80}, reason: ErrBadUTF},
		{in: []byte{0xff}, reason: ErrBadUTF},
	} {
		got, err := decodeModified(tc.in)
		if !is(err, tc.reason) || got != tc.want {
			t.Errorf("decodeModified(% x) = %q, %v; want %q, reason %q", tc.in, got, err, tc.want, tc.reason)
		}
		if len(got) > len(tc.in) {
			t.Errorf("decodeModified(% x) = %d bytes, more than its input", tc.in, len(got))
		}
	}
}

func TestAppendUTFBounds(t *testing.T) {
	if got, err := AppendUTF(nil, strings.Repeat("a", MaxUTF)); err != nil || len(got) != MaxUTF+2 {
		t.Fatalf("AppendUTF of %d ASCII bytes: %d bytes, %v", MaxUTF, len(got), err)
	}
	for _, s := range []string{strings.Repeat("a", MaxUTF+1), strings.Repeat("é", MaxUTF/2+1), strings.Repeat("\x00", MaxUTF/2+1)} {
		dst := []byte{1, 2}
		got, err := AppendUTF(dst, s)
		if !errors.Is(err, ErrTooLong) || len(got) != 2 {
			t.Errorf("AppendUTF of %d bytes = %d bytes, %v; want it refused, nothing appended", len(s), len(got), err)
		}
	}
	// Bytes that are not UTF-8 go out as U+FFFD.
	got, _ := AppendUTF(nil, "a\xffb")
	if want := []byte{0, 5, 'a', 0xef, 0xbf, 0xbd, 'b'}; !bytes.Equal(got, want) {
		t.Errorf("AppendUTF(\"a\\xffb\") = % x, want % x", got, want)
	}
}
