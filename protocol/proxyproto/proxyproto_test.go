package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/netip"
	"strings"
	"testing"
)

var sig = string(signature[:])

// v2 builds a v2 header from its version/command and family bytes and the
// block after the length field, whose length it fills in.
func v2(vc, fam byte, block ...[]byte) []byte {
	body := bytes.Join(block, nil)
	b := append([]byte(sig), vc, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func tlv(typ byte, val []byte) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint16(b, uint16(len(val)))
	return append(b, val...)
}

var (
	ipv4Block = []byte{192, 0, 2, 1, 198, 51, 100, 7, 0xC8, 0x22, 0x63, 0xDD} // 51234, 25565
	ipv6Block = append(append(netip.MustParseAddr("2001:db8::1").AsSlice(), netip.MustParseAddr("2001:db8::2").AsSlice()...), 0xC8, 0x22, 0x63, 0xDD)
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// withCRC returns a v2 header with a CRC32C TLV computed over it, and
// corrupt, a copy whose checksum is off by one.
func withCRC() (good, corrupt []byte) {
	h := v2(0x21, 0x11, ipv4Block, tlv(TLVCRC32C, make([]byte, 4)))
	sum := crc32.Checksum(h, crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(h[len(h)-4:], sum)
	bad := bytes.Clone(h)
	bad[len(bad)-1]++
	return h, bad
}

// TestParseHeaders: whole headers decode to these fields and lengths, with
// what follows left alone.
func TestParseHeaders(t *testing.T) {
	crcGood, _ := withCRC()
	for _, tc := range []struct {
		name string
		in   string
		opt  Options
		want Header
		n    int
	}{
		{"v1 tcp4", "PROXY TCP4 192.0.2.1 198.51.100.7 51234 25565\r\n", Options{},
			Header{Version: V1, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565")}, 47},
		{"v1 tcp4 then data", "PROXY TCP4 10.0.0.1 10.0.0.2 0 65535\r\n\x10\x00hello", Options{Versions: V1},
			Header{Version: V1, Family: INet, Transport: Stream, Source: ap("10.0.0.1:0"), Destination: ap("10.0.0.2:65535")}, 38},
		{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 51234 25565\r\n", Options{},
			Header{Version: V1, Family: INet6, Transport: Stream, Source: ap("[2001:db8::1]:51234"), Destination: ap("[2001:db8::2]:25565")}, 48},
		{"v1 tcp6 longest", "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", Options{},
			Header{Version: V1, Family: INet6, Transport: Stream,
				Source: ap("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"), Destination: ap("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")}, 104},
		{"v1 unknown short", "PROXY UNKNOWN\r\nrest", Options{}, Header{Version: V1, Transport: Stream}, 15},
		{"v1 unknown with addresses, ignored", "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", Options{},
			Header{Version: V1, Transport: Stream}, 107},
		{"v2 tcp4", string(v2(0x21, 0x11, ipv4Block)) + "data", Options{},
			Header{Version: V2, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565")}, 28},
		{"v2 udp4", string(v2(0x21, 0x12, ipv4Block)), Options{Versions: V2},
			Header{Version: V2, Family: INet, Transport: Datagram, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565")}, 28},
		{"v2 tcp6", string(v2(0x21, 0x21, ipv6Block)), Options{},
			Header{Version: V2, Family: INet6, Transport: Stream, Source: ap("[2001:db8::1]:51234"), Destination: ap("[2001:db8::2]:25565")}, 52},
		{"v2 tcp4 with TLVs", string(v2(0x21, 0x11, ipv4Block, tlv(TLVNoop, nil), tlv(TLVUniqueID, []byte("abc")))), Options{},
			Header{Version: V2, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565"),
				TLVs: append(tlv(TLVNoop, nil), tlv(TLVUniqueID, []byte("abc"))...)}, 28 + 9},
		{"v2 with a good CRC32C", string(crcGood), Options{},
			Header{Version: V2, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565"),
				TLVs: crcGood[28:]}, 35},
		{"v2 local", string(v2(0x20, 0x00)) + "x", Options{}, Header{Version: V2, Command: Local}, 16},
		{"v2 local ignores family and block", string(v2(0x20, 0xFF, []byte{1, 2, 3})), Options{}, Header{Version: V2, Command: Local}, 19},
		{"v2 unspec", string(v2(0x21, 0x00)), Options{}, Header{Version: V2}, 16},
		{"v2 unspec skips its block unread", string(v2(0x21, 0x01, []byte{0xff, 0xff})), Options{}, Header{Version: V2, Transport: Stream}, 18},
		{"v2 unix: no addresses decoded", string(v2(0x21, 0x31, make([]byte, 216))), Options{},
			Header{Version: V2, Family: Unix, Transport: Stream}, 232},
		{"v2 ipv4, unspecified transport: no addresses", string(v2(0x21, 0x10, ipv4Block)), Options{},
			Header{Version: V2, Family: INet}, 28},
		{"v2 at the length limit", string(v2(0x21, 0x11, ipv4Block, tlv(TLVNoop, make([]byte, 100)))), Options{MaxV2Length: 131},
			Header{Version: V2, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565"),
				TLVs: tlv(TLVNoop, make([]byte, 100))}, 131},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, n, err := Parse([]byte(tc.in), tc.opt)
			if err != nil || n != tc.n {
				t.Fatalf("Parse = %d, %v; want %d, nil", n, err, tc.n)
			}
			if h.Version != tc.want.Version || h.Command != tc.want.Command || h.Family != tc.want.Family || h.Transport != tc.want.Transport ||
				h.Source != tc.want.Source || h.Destination != tc.want.Destination || !bytes.Equal(h.TLVs, tc.want.TLVs) {
				t.Fatalf("header\n got %+v\nwant %+v", h, tc.want)
			}
			// Every proper prefix asks for more, without an error.
			for k := 0; k < n; k++ {
				if _, m, err := Parse([]byte(tc.in[:k]), tc.opt); m != 0 || err != nil {
					t.Fatalf("prefix of %d bytes: %d, %v; want 0, nil", k, m, err)
				}
			}
		})
	}
}

// TestParseErrors: each input is refused with this reason and message, as
// early as the bytes allow (the input is cut where the error shows).
func TestParseErrors(t *testing.T) {
	_, crcBad := withCRC()
	for _, tc := range []struct {
		name   string
		in     string
		opt    Options
		reason string
		msg    string
	}{
		{"http", "GET / HTTP/1.1\r\n", Options{}, ReasonNotProxy, `input "GET / HTTP/1.1\r\n" starts no PROXY header (want v1 or v2)`},
		{"minecraft handshake", "\x10\x00\xfd\x05\tlocalhost", Options{Versions: V2}, ReasonNotProxy, `input "\x10\x00\xfd\x05\tlocalhost" starts no PROXY header (want v2)`},
		{"lower case", "proxy TCP4", Options{}, ReasonNotProxy, `input "proxy TCP4" starts no PROXY header (want v1 or v2)`},
		{"no space after PROXY", "PROXYTCP4", Options{}, ReasonNotProxy, `input "PROXYTCP4" starts no PROXY header (want v1 or v2)`},
		{"v1 where only v2 is accepted", "PROXY ", Options{Versions: V2}, ReasonVersion, `a v1 header ("PROXY"), but only v2 is accepted`},
		{"v2 where only v1 is accepted", sig, Options{Versions: V1}, ReasonVersion, `a v2 header (its signature), but only v1 is accepted`},
		{"v1 unknown protocol", "PROXY UDP4 ", Options{}, ReasonV1Line, `v1: protocol "UDP4 ": want TCP4, TCP6 or UNKNOWN`},
		{"v1 unknown protocol, whole line", "PROXY TCP5\r\n", Options{}, ReasonV1Line, `v1: protocol "TCP5": want TCP4, TCP6 or UNKNOWN`},
		{"v1 UNKNOWNX", "PROXY UNKNOWNX", Options{}, ReasonV1Line, `v1: protocol "UNKNOWNX": want TCP4, TCP6 or UNKNOWN`},
		{"v1 bare LF", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", Options{}, ReasonV1Line, `v1: LF at byte 30 without CR before it`},
		{"v1 CR then not LF", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", Options{}, ReasonV1Line, `v1: CR at byte 30 followed by 0x58, not LF`},
		{"v1 control byte", "PROXY TCP4 1.2.3.4\x00", Options{}, ReasonV1Line, `v1: byte 0x00 at 18 is not printable US-ASCII`},
		{"v1 too few fields", "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", Options{}, ReasonV1Line,
			`v1: 4 fields after "PROXY", want 5 (TCP4 source destination source-port destination-port, one space apart)`},
		{"v1 two spaces", "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", Options{}, ReasonV1Line,
			`v1: 6 fields after "PROXY", want 5 (TCP4 source destination source-port destination-port, one space apart)`},
		{"v1 trailing space", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", Options{}, ReasonV1Line,
			`v1: 6 fields after "PROXY", want 5 (TCP4 source destination source-port destination-port, one space apart)`},
		{"v1 no CRLF in 107 bytes", "PROXY UNKNOWN " + strings.Repeat("f", 93), Options{}, ReasonV1TooLong, `v1: no CRLF in the first 107 bytes`},
		{"v1 CRLF one byte too late", "PROXY UNKNOWN " + strings.Repeat("f", 92) + "\r\n", Options{}, ReasonV1TooLong, `v1: no CRLF in the first 107 bytes`},
		{"v1 leading zero in IPv4", "PROXY TCP4 1.2.3.04 5.6.7.8 1 2\r\n", Options{}, ReasonAddress,
			`v1: source address "1.2.3.04" is not an IPv4 address (dotted decimal, no leading zeros)`},
		{"v1 IPv4 octet over 255", "PROXY TCP4 1.2.3.4 5.6.7.256 1 2\r\n", Options{}, ReasonAddress,
			`v1: destination address "5.6.7.256" is not an IPv4 address (dotted decimal, no leading zeros)`},
		{"v1 IPv4 five parts", "PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", Options{}, ReasonAddress,
			`v1: source address "1.2.3.4.5" is not an IPv4 address (dotted decimal, no leading zeros)`},
		{"v1 IPv6 under TCP4", "PROXY TCP4 ::1 5.6.7.8 1 2\r\n", Options{}, ReasonAddress,
			`v1: source address "::1" is not an IPv4 address (dotted decimal, no leading zeros)`},
		{"v1 IPv4 under TCP6", "PROXY TCP6 1.2.3.4 ::1 1 2\r\n", Options{}, ReasonAddress, `v1: source address "1.2.3.4" is not an IPv6 address`},
		{"v1 IPv6 with a zone", "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", Options{}, ReasonAddress, `v1: source address "fe80::1%eth0" is not an IPv6 address`},
		{"v1 IPv6 too many groups", "PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", Options{}, ReasonAddress,
			`v1: source address "1:2:3:4:5:6:7:8:9" is not an IPv6 address`},
		{"v1 port over 65535", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", Options{}, ReasonPort,
			`v1: source port "65536": want a decimal number 0-65535 without leading zeros`},
		{"v1 port with a leading zero", "PROXY TCP4 1.2.3.4 5.6.7.8 1 025565\r\n", Options{}, ReasonPort,
			`v1: destination port "025565": want a decimal number 0-65535 without leading zeros`},
		{"v1 port not a number", "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n", Options{}, ReasonPort,
			`v1: source port "-1": want a decimal number 0-65535 without leading zeros`},
		{"v2 version 1", sig + "\x11", Options{}, ReasonV2VersionCmd, `v2: version 1 (byte 0x11), want 2`},
		{"v2 command 2", sig + "\x22", Options{}, ReasonV2VersionCmd, `v2: command 2 (byte 0x22), want 0 (LOCAL) or 1 (PROXY)`},
		{"v2 family 4", sig + "\x21\x41\x00\x0c", Options{}, ReasonV2Family, `v2: family byte 0x41: want family 0-3 and transport 0-2`},
		{"v2 transport 3", sig + "\x21\x13\x00\x0c", Options{}, ReasonV2Family, `v2: family byte 0x13: want family 0-3 and transport 0-2`},
		{"v2 IPv4 block too short", sig + "\x21\x11\x00\x08", Options{}, ReasonV2Length, `v2: address block of 8 bytes, want at least 12 for IPv4`},
		{"v2 IPv6 block too short", sig + "\x21\x21\x00\x0c", Options{}, ReasonV2Length, `v2: address block of 12 bytes, want at least 36 for IPv6`},
		{"v2 UNIX block too short", sig + "\x21\x31\x00\x24", Options{}, ReasonV2Length, `v2: address block of 36 bytes, want at least 216 for UNIX`},
		{"v2 over the caller's limit", sig + "\x21\x11\x01\x00", Options{MaxV2Length: 256}, ReasonHeaderTooLarge,
			`v2: header of 272 bytes (16 + 256) exceeds maximum 256`},
		{"v2 local over the caller's limit", sig + "\x20\x00\xff\xff", Options{MaxV2Length: 4096}, ReasonHeaderTooLarge,
			`v2: header of 65551 bytes (16 + 65535) exceeds maximum 4096`},
		{"v2 TLV past the end", string(v2(0x21, 0x11, ipv4Block, []byte{TLVNoop, 0, 5, 1})), Options{}, ReasonTLV,
			`v2: TLV of type 0x04 at offset 28 has 5 bytes, but the header has 1 left`},
		{"v2 TLV header cut", string(v2(0x21, 0x11, ipv4Block, []byte{TLVNoop, 0})), Options{}, ReasonTLV,
			`v2: 2 bytes at offset 28 are too short for a TLV (3 bytes at least)`},
		{"v2 CRC32C of 2 bytes", string(v2(0x21, 0x11, ipv4Block, tlv(TLVCRC32C, []byte{1, 2}))), Options{}, ReasonTLV,
			`v2: CRC32C TLV of 2 bytes, want 4`},
		{"v2 CRC32C mismatch", string(crcBad), Options{}, ReasonChecksum, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, n, err := Parse([]byte(tc.in), tc.opt)
			if err == nil || n != 0 || h.Version != 0 || h.Source.IsValid() || h.TLVs != nil {
				t.Fatalf("Parse(%q) = %+v, %d, %v; want an error", tc.in, h, n, err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason || ErrorReason(err) != tc.reason || !errors.Is(err, &Error{Reason: tc.reason}) {
				t.Fatalf("error %v (%T): want reason %q", err, err, tc.reason)
			}
			if tc.msg != "" && err.Error() != "proxyproto: "+tc.msg {
				t.Fatalf("message\n got %s\nwant proxyproto: %s", err, tc.msg)
			}
			if tc.msg == "" && !strings.Contains(err.Error(), "CRC32C 0x") {
				t.Fatalf("message %s: want both checksums", err)
			}
		})
	}
}

// TestParseWaitsBounded: a prefix waits for more only while it can still
// be a header, and never past the bound that applies.
func TestParseWaitsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		opt  Options
	}{
		{"empty", "", Options{}},
		{"P", "P", Options{}},
		{"PROXY T", "PROXY T", Options{}},
		{"PROXY UNKN", "PROXY UNKN", Options{}},
		{"PROXY UNKNOWN and 92 bytes", "PROXY UNKNOWN " + strings.Repeat("f", 92), Options{}},
		{"v1 line ending in CR", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r", Options{}},
		{"signature start", "\r\n\r", Options{}},
		{"signature", sig, Options{}},
		{"v2 fixed part of a long header", sig + "\x21\x11\xff\xff", Options{}},
	} {
		if _, n, err := Parse([]byte(tc.in), tc.opt); n != 0 || err != nil {
			t.Errorf("%s: Parse = %d, %v; want 0, nil", tc.name, n, err)
		}
	}
}

// TestTLV finds records by type.
func TestTLV(t *testing.T) {
	h, _, err := Parse(v2(0x21, 0x11, ipv4Block, tlv(TLVNoop, []byte{9}), tlv(0x02, []byte("play.example.com")), tlv(0x02, []byte("second"))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := h.TLV(0x02); !ok || string(v) != "play.example.com" {
		t.Errorf("TLV(0x02) = %q, %v", v, ok)
	}
	if v, ok := h.TLV(0x30); ok {
		t.Errorf("TLV(0x30) = %q, true; want none", v)
	}
}

// TestAppend: the encoders' bytes, and that Parse reads them back.
func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        Versions
		src, dst netip.AddrPort
		want     string
		back     Header // what Parse gives for the output
	}{
		{"v1 tcp4", V1, ap("192.0.2.1:51234"), ap("198.51.100.7:25565"), "PROXY TCP4 192.0.2.1 198.51.100.7 51234 25565\r\n",
			Header{Version: V1, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565")}},
		{"v1 mapped pair is tcp4", V1, ap("[::ffff:192.0.2.1]:1"), ap("[::ffff:198.51.100.7]:2"), "PROXY TCP4 192.0.2.1 198.51.100.7 1 2\r\n",
			Header{Version: V1, Family: INet, Transport: Stream, Source: ap("192.0.2.1:1"), Destination: ap("198.51.100.7:2")}},
		{"v1 tcp6 with zone", V1, ap("[fe80::1%eth0]:1"), ap("[2001:db8::2]:2"), "PROXY TCP6 fe80::1 2001:db8::2 1 2\r\n",
			Header{Version: V1, Family: INet6, Transport: Stream, Source: ap("[fe80::1]:1"), Destination: ap("[2001:db8::2]:2")}},
		{"v1 mixed families map the IPv4 one", V1, ap("192.0.2.1:1"), ap("[2001:db8::2]:2"), "PROXY TCP6 ::ffff:c000:201 2001:db8::2 1 2\r\n",
			Header{Version: V1, Family: INet6, Transport: Stream, Source: ap("[::ffff:192.0.2.1]:1"), Destination: ap("[2001:db8::2]:2")}},
		{"v1 unknown", V1, netip.AddrPort{}, ap("198.51.100.7:2"), "PROXY UNKNOWN\r\n", Header{Version: V1, Transport: Stream}},
		{"v2 tcp4", V2, ap("192.0.2.1:51234"), ap("198.51.100.7:25565"), string(v2(0x21, 0x11, ipv4Block)),
			Header{Version: V2, Family: INet, Transport: Stream, Source: ap("192.0.2.1:51234"), Destination: ap("198.51.100.7:25565")}},
		{"v2 tcp6", Any, ap("[2001:db8::1]:51234"), ap("[2001:db8::2]:25565"), string(v2(0x21, 0x21, ipv6Block)),
			Header{Version: V2, Family: INet6, Transport: Stream, Source: ap("[2001:db8::1]:51234"), Destination: ap("[2001:db8::2]:25565")}},
		{"v2 local", V2, ap("192.0.2.1:1"), netip.AddrPort{}, sig + "\x20\x00\x00\x00", Header{Version: V2, Command: Local}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Append([]byte("x"), tc.v, tc.src, tc.dst)
			if string(got[1:]) != tc.want {
				t.Fatalf("Append\n got %q\nwant %q", got[1:], tc.want)
			}
			h, n, err := Parse(got[1:], Options{})
			if err != nil || n != len(tc.want) || h.Version != tc.back.Version || h.Command != tc.back.Command || h.Family != tc.back.Family ||
				h.Transport != tc.back.Transport || h.Source != tc.back.Source || h.Destination != tc.back.Destination {
				t.Fatalf("Parse(Append) = %+v, %d, %v; want %+v", h, n, err, tc.back)
			}
		})
	}
	if got := AppendV2Local(nil); string(got) != sig+"\x20\x00\x00\x00" {
		t.Errorf("AppendV2Local = %q", got)
	}
}

func TestVersionsString(t *testing.T) {
	for v, want := range map[Versions]string{0: "none", V1: "v1", V2: "v2", Any: "v1 or v2"} {
		if got := v.String(); got != want {
			t.Errorf("Versions(%d).String() = %q, want %q", v, got, want)
		}
	}
}

// TestZeroAllocs: a v2 header and a v1 IPv4 line decode without
// allocating, and so do the encoders into a slice with room.
func TestZeroAllocs(t *testing.T) {
	v2h := v2(0x21, 0x21, ipv6Block, tlv(TLVUniqueID, []byte("id")))
	v1h := []byte("PROXY TCP4 192.0.2.1 198.51.100.7 51234 25565\r\n")
	buf := make([]byte, 0, 128)
	src, dst := ap("[2001:db8::1]:51234"), ap("[2001:db8::2]:25565")
	var sink int
	for name, f := range map[string]func(){
		"Parse v2":   func() { _, n, _ := Parse(v2h, Options{}); sink += n },
		"Parse v1":   func() { _, n, _ := Parse(v1h, Options{}); sink += n },
		"Parse more": func() { _, n, _ := Parse(v1h[:20], Options{}); sink += n },
		"AppendV1":   func() { sink += len(AppendV1(buf[:0], src, dst)) },
		"AppendV2":   func() { sink += len(AppendV2(buf[:0], src, dst)) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
	_ = sink
}
