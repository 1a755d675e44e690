package proxyproto

import (
	"bytes"
	"net/netip"
	"testing"
)

// FuzzParse: no input panics; a result is a whole header within its bound,
// a wait for more that the bound allows, or an error; every proper prefix
// of a header waits for more; a decoded header encodes to one that decodes
// to the same addresses.
func FuzzParse(f *testing.F) {
	crcGood, crcBad := withCRC()
	for _, s := range [][]byte{
		nil, []byte("P"), []byte("PROXY "), []byte("PROXY TCP4 192.0.2.1 198.51.100.7 51234 25565\r\nGET"),
		[]byte("PROXY TCP6 2001:db8::1 ::ffff:1.2.3.4 1 2\r\n"), []byte("PROXY UNKNOWN\r\n"),
		[]byte("PROXY TCP4 1.2.3.04 5.6.7.8 1 2\r\n"), []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"),
		v2(0x21, 0x11, ipv4Block), v2(0x21, 0x21, ipv6Block, tlv(TLVNoop, []byte{1, 2})), v2(0x20, 0x00),
		v2(0x21, 0x31, make([]byte, 216)), v2(0x21, 0x11, ipv4Block, []byte{4, 0, 9}), crcGood, crcBad,
		[]byte(sig + "\x21\x11\xff\xff"),
	} {
		f.Add(s, uint8(0), uint16(0))
		f.Add(s, uint8(V1), uint16(100))
		f.Add(s, uint8(V2), uint16(30))
	}
	f.Fuzz(func(t *testing.T, b []byte, vs uint8, maxLen uint16) {
		opt := Options{Versions: Versions(vs), MaxV2Length: int(maxLen)}
		limit := int(maxLen)
		if limit == 0 || limit > MaxV2Length {
			limit = MaxV2Length
		}
		h, n, err := Parse(b, opt)
		switch {
		case err != nil:
			if n != 0 || h.Version != 0 || ErrorReason(err) == "other" {
				t.Fatalf("Parse(%q) = %+v, %d, %v", b, h, n, err)
			}
			return
		case n == 0:
			if h.Version != 0 {
				t.Fatalf("Parse(%q) waits but returned %+v", b, h)
			}
			if len(b) >= MaxV1Length && bytes.HasPrefix(b, []byte(v1Prefix)) || len(b) >= max(limit, V2HeaderLength) && bytes.HasPrefix(b, signature[:]) {
				t.Fatalf("Parse(%q) waits with %d bytes, past the bound", b, len(b))
			}
			return
		}
		if n > len(b) || (h.Version == V1 && n > MaxV1Length) || (h.Version == V2 && n > limit) {
			t.Fatalf("Parse(%q) = %d bytes", b, n)
		}
		for k := 0; k < n; k++ {
			if _, m, err := Parse(b[:k], opt); m != 0 || err != nil {
				t.Fatalf("prefix %q of header %q: %d, %v; want 0, nil", b[:k], b[:n], m, err)
			}
		}
		if h2, m, err := Parse(b[:n], opt); m != n || err != nil || h2.Source != h.Source || h2.Destination != h.Destination {
			t.Fatalf("header alone %q: %+v, %d, %v", b[:n], h2, m, err)
		}
		if h.Source.IsValid() != h.Destination.IsValid() || h.Source.Addr().Zone() != "" {
			t.Fatalf("Parse(%q) addresses %v %v", b, h.Source, h.Destination)
		}
		if !h.Source.IsValid() {
			return
		}
		for _, v := range []Versions{V1, V2} {
			enc := Append(nil, v, h.Source, h.Destination)
			h2, m, err := Parse(enc, Options{})
			if err != nil || m != len(enc) || h2.Command != Proxy ||
				unmapped(h2.Source) != unmapped(h.Source) || unmapped(h2.Destination) != unmapped(h.Destination) {
				t.Fatalf("%s re-encoding of %v -> %v: %q decodes to %+v, %d, %v", v, h.Source, h.Destination, enc, h2, m, err)
			}
		}
	})
}

func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
