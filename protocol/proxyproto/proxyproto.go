package proxyproto

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// Versions is a set of protocol versions; a Header's Version is one of them.
type Versions uint8

// Protocol versions.
const (
	V1  Versions = 1 << iota // the text line "PROXY TCP4 ...\r\n"
	V2                       // the binary header after a 12-byte signature
	Any = V1 | V2
)

// String returns "v1", "v2", "v1 or v2", or "none".
func (v Versions) String() string {
	switch v & Any {
	case V1:
		return "v1"
	case V2:
		return "v2"
	case Any:
		return "v1 or v2"
	}
	return "none"
}

// Command is what a header says of its connection.
type Command uint8

// Commands.
const (
	// Proxy: the connection is relayed for a client; the header carries
	// the original endpoints (when it knows them: see Header.Source).
	Proxy Command = iota
	// Local (v2 only): the sender opened the connection for itself, as for
	// a health check; the real endpoints of the connection stand.
	Local
)

// Family is the address family a header names.
type Family uint8

// Address families (the high nibble of the v2 family byte).
const (
	Unspec Family = 0 // unknown or unsupported: v1 UNKNOWN, v2 AF_UNSPEC
	INet   Family = 1 // IPv4: v1 TCP4, v2 AF_INET
	INet6  Family = 2 // IPv6: v1 TCP6, v2 AF_INET6
	Unix   Family = 3 // v2 AF_UNIX, whose addresses are paths and not decoded
)

// Transport is the socket type a header names.
type Transport uint8

// Transports (the low nibble of the v2 family byte).
const (
	UnspecTransport Transport = 0
	Stream          Transport = 1 // TCP, or a UNIX stream socket; v1 is always Stream
	Datagram        Transport = 2 // UDP, or a UNIX datagram socket
)

// Header is one decoded PROXY header.
type Header struct {
	Version   Versions // V1 or V2
	Command   Command
	Family    Family
	Transport Transport
	// Source and Destination are the client's address and the address it
	// connected to. They are valid (IsValid) only for a Proxy command over
	// IPv4 or IPv6 with a stream or datagram transport; otherwise the
	// receiver uses the connection's own endpoints, as the protocol says.
	// IPv4 addresses are 4-byte addresses (Is4); no address has a zone.
	Source, Destination netip.AddrPort
	// TLVs are a v2 header's type-length-value records after the
	// addresses, in wire form; they alias the input given to Parse. Every
	// record fits in the header (Parse checked), and a CRC32C record
	// matched. Use TLV to find one.
	TLVs []byte
}

// TLV returns the value of the first record of type typ in h.TLVs.
func (h *Header) TLV(typ byte) ([]byte, bool) {
	for b := h.TLVs; len(b) >= 3; {
		n := 3 + int(binary.BigEndian.Uint16(b[1:3]))
		if n > len(b) {
			return nil, false
		}
		if b[0] == typ {
			return b[3:n], true
		}
		b = b[n:]
	}
	return nil, false
}

// Sizes and bounds.
const (
	// MaxV1Length is the longest v1 line, CRLF included:
	// "PROXY UNKNOWN " and two IPv6 addresses and ports.
	MaxV1Length = 107
	// V2HeaderLength is the fixed part of a v2 header: signature,
	// version and command, family, length.
	V2HeaderLength = 16
	// MaxV2Length is the longest v2 header the length field allows.
	MaxV2Length = V2HeaderLength + 0xFFFF
)

// TLV types of the protocol that this package reads.
const (
	TLVCRC32C   = 0x03 // CRC32C of the whole header, verified by Parse
	TLVNoop     = 0x04 // padding
	TLVUniqueID = 0x05 // the sender's identifier of the connection
)

// Options say what Parse accepts.
type Options struct {
	// Versions accepted; 0 means Any.
	Versions Versions
	// MaxV2Length bounds a whole v2 header; 0 (or anything larger) means
	// MaxV2Length, the protocol's own bound. The bound is checked once the
	// 16-byte fixed part, which holds the length, has arrived.
	MaxV2Length int
}

// signature starts every v2 header.
var signature = [12]byte{'\r', '\n', '\r', '\n', 0, '\r', '\n', 'Q', 'U', 'I', 'T', '\n'}

// Signature returns the 12 bytes that start every v2 header.
func Signature() [12]byte { return signature }

// v1Prefix starts every v1 header.
const v1Prefix = "PROXY "

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Parse decodes the PROXY header at the start of buf, which holds what has
// arrived of a connection so far. It returns:
//
//   - n > 0 and the header when buf starts with a whole valid header of n
//     bytes; what follows it is the connection's data;
//   - n == 0 and a nil error when buf is a proper prefix of a header that
//     may still be valid: call again with more input;
//   - an *Error as soon as buf cannot start a valid, accepted header.
//
// A caller that waits for more holds at most MaxV1Length bytes of a v1
// header, or the accepted length of a v2 one (known from its 16th byte).
func Parse(buf []byte, opt Options) (h Header, n int, err error) {
	vs := opt.Versions & Any
	if vs == 0 {
		vs = Any
	}
	switch {
	case len(buf) == 0:
		return Header{}, 0, nil
	case hasPrefix(buf, signature[:]):
		if vs&V2 == 0 {
			return Header{}, 0, errorf(ReasonVersion, "a v2 header (its signature), but only %s is accepted", vs)
		}
		return parseV2(buf, opt.MaxV2Length)
	case hasPrefix(buf, []byte(v1Prefix)):
		if vs&V1 == 0 {
			return Header{}, 0, errorf(ReasonVersion, "a v1 header (%q), but only %s is accepted", "PROXY", vs)
		}
		return parseV1(buf)
	}
	return Header{}, 0, errorf(ReasonNotProxy, "input %s starts no PROXY header (want %s)", quoteStart(buf), vs)
}

// hasPrefix reports whether buf and prefix agree on their common length.
func hasPrefix(buf, prefix []byte) bool {
	n := min(len(buf), len(prefix))
	return string(buf[:n]) == string(prefix[:n])
}

// parseV1 decodes a v1 line; buf starts with (a prefix of) "PROXY ".
func parseV1(buf []byte) (Header, int, error) {
	end := -1
	for i := 0; i < len(buf) && i < MaxV1Length; i++ {
		switch c := buf[i]; {
		case c == '\r':
			if i+2 > MaxV1Length {
				return Header{}, 0, errorf(ReasonV1TooLong, "v1: no CRLF in the first %d bytes", MaxV1Length)
			}
			if i+1 == len(buf) {
				return Header{}, 0, nil // the LF may follow
			}
			if buf[i+1] != '\n' {
				return Header{}, 0, errorf(ReasonV1Line, "v1: CR at byte %d followed by 0x%02x, not LF", i, buf[i+1])
			}
			end = i + 2
		case c == '\n':
			return Header{}, 0, errorf(ReasonV1Line, "v1: LF at byte %d without CR before it", i)
		case c < 0x20 || c > 0x7e:
			return Header{}, 0, errorf(ReasonV1Line, "v1: byte 0x%02x at %d is not printable US-ASCII", c, i)
		}
		if end > 0 {
			break
		}
	}
	if end < 0 {
		if len(buf) >= MaxV1Length {
			return Header{}, 0, errorf(ReasonV1TooLong, "v1: no CRLF in the first %d bytes", MaxV1Length)
		}
		if len(buf) > len(v1Prefix) && !validV1Start(buf[len(v1Prefix):]) {
			return Header{}, 0, errorf(ReasonV1Line, "v1: protocol %s: want TCP4, TCP6 or UNKNOWN", quoteStart(buf[len(v1Prefix):]))
		}
		return Header{}, 0, nil
	}
	line := buf[len(v1Prefix) : end-2]
	var f [6][]byte
	nf := 0
	for start, i := 0, 0; i <= len(line); i++ {
		if i < len(line) && line[i] != ' ' {
			continue
		}
		if nf < len(f) {
			f[nf] = line[start:i]
		}
		nf++
		start = i + 1
	}
	h := Header{Version: V1, Command: Proxy, Transport: Stream}
	switch string(f[0]) {
	case "UNKNOWN":
		// The rest of the line is to be ignored.
		return h, end, nil
	case "TCP4":
		h.Family = INet
	case "TCP6":
		h.Family = INet6
	default:
		return Header{}, 0, errorf(ReasonV1Line, "v1: protocol %q: want TCP4, TCP6 or UNKNOWN", f[0])
	}
	if nf != 5 {
		return Header{}, 0, errorf(ReasonV1Line, "v1: %d fields after %q, want 5 (%s source destination source-port destination-port, one space apart)", nf, "PROXY", f[0])
	}
	src, err := v1Addr(f[1], h.Family, "source")
	if err != nil {
		return Header{}, 0, err
	}
	dst, err := v1Addr(f[2], h.Family, "destination")
	if err != nil {
		return Header{}, 0, err
	}
	sp, err := v1Port(f[3], "source")
	if err != nil {
		return Header{}, 0, err
	}
	dp, err := v1Port(f[4], "destination")
	if err != nil {
		return Header{}, 0, err
	}
	h.Source, h.Destination = netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp)
	return h, end, nil
}

// validV1Start reports whether b, the bytes after "PROXY " of an
// incomplete line, can start one of the protocol names.
func validV1Start(b []byte) bool {
	if hasPrefix(b, []byte("TCP4 ")) || hasPrefix(b, []byte("TCP6 ")) {
		return true
	}
	const unknown = "UNKNOWN"
	return hasPrefix(b, []byte(unknown)) && (len(b) <= len(unknown) || b[len(unknown)] == ' ')
}

// v1Addr parses a v1 address of family fam: dotted decimal without leading
// zeros for IPv4, RFC 4291 text without a zone for IPv6.
func v1Addr(b []byte, fam Family, which string) (netip.Addr, error) {
	if fam == INet {
		if a, ok := parseIPv4(b); ok {
			return a, nil
		}
		return netip.Addr{}, errorf(ReasonAddress, "v1: %s address %q is not an IPv4 address (dotted decimal, no leading zeros)", which, b)
	}
	for _, c := range b {
		if !(c == ':' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return netip.Addr{}, errorf(ReasonAddress, "v1: %s address %q is not an IPv6 address", which, b)
		}
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || !a.Is6() {
		return netip.Addr{}, errorf(ReasonAddress, "v1: %s address %q is not an IPv6 address", which, b)
	}
	return a, nil
}

// parseIPv4 parses exactly four decimal numbers 0-255 without leading
// zeros, one dot apart.
func parseIPv4(b []byte) (netip.Addr, bool) {
	var a [4]byte
	part, digits, v := 0, 0, 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || part > 3 {
				return netip.Addr{}, false
			}
			a[part] = byte(v)
			part, digits, v = part+1, 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || (digits == 1 && v == 0) {
			return netip.Addr{}, false
		}
		v = v*10 + int(c-'0')
		digits++
		if v > 255 {
			return netip.Addr{}, false
		}
	}
	if part != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(a), true
}

// v1Port parses a decimal port 0-65535 without leading zeros.
func v1Port(b []byte, which string) (uint16, error) {
	v := 0
	ok := len(b) > 0 && len(b) <= 5 && (b[0] != '0' || len(b) == 1)
	for _, c := range b {
		if c < '0' || c > '9' {
			ok = false
			break
		}
		v = v*10 + int(c-'0')
	}
	if !ok || v > 0xFFFF {
		return 0, errorf(ReasonPort, "v1: %s port %q: want a decimal number 0-65535 without leading zeros", which, b)
	}
	return uint16(v), nil
}

// addrLen is the address block length of each v2 family.
var addrLen = [4]int{Unspec: 0, INet: 12, INet6: 36, Unix: 216}

var familyNames = [4]string{Unspec: "AF_UNSPEC", INet: "IPv4", INet6: "IPv6", Unix: "UNIX"}

// parseV2 decodes a v2 header; buf starts with (a prefix of) the signature.
func parseV2(buf []byte, maxLen int) (Header, int, error) {
	if maxLen <= 0 || maxLen > MaxV2Length {
		maxLen = MaxV2Length
	}
	if len(buf) <= 12 {
		return Header{}, 0, nil
	}
	vc := buf[12]
	if vc>>4 != 2 {
		return Header{}, 0, errorf(ReasonV2VersionCmd, "v2: version %d (byte 0x%02x), want 2", vc>>4, vc)
	}
	h := Header{Version: V2}
	switch vc & 0x0F {
	case 0:
		h.Command = Local
	case 1:
		h.Command = Proxy
	default:
		return Header{}, 0, errorf(ReasonV2VersionCmd, "v2: command %d (byte 0x%02x), want 0 (LOCAL) or 1 (PROXY)", vc&0x0F, vc)
	}
	if len(buf) < V2HeaderLength {
		return Header{}, 0, nil
	}
	fb := buf[13]
	length := int(binary.BigEndian.Uint16(buf[14:16]))
	total := V2HeaderLength + length
	if total > maxLen {
		return Header{}, 0, errorf(ReasonHeaderTooLarge, "v2: header of %d bytes (16 + %d) exceeds maximum %d", total, length, maxLen)
	}
	if h.Command == Local {
		// The block is skipped whole, the family ignored, as the
		// protocol says; the real endpoints stand.
		if len(buf) < total {
			return Header{}, 0, nil
		}
		return h, total, nil
	}
	fam, tr := Family(fb>>4), Transport(fb&0x0F)
	if fam > Unix || tr > Datagram {
		return Header{}, 0, errorf(ReasonV2Family, "v2: family byte 0x%02x: want family 0-3 and transport 0-2", fb)
	}
	h.Family, h.Transport = fam, tr
	need := addrLen[fam]
	if length < need {
		return Header{}, 0, errorf(ReasonV2Length, "v2: address block of %d bytes, want at least %d for %s", length, need, familyNames[fam])
	}
	if len(buf) < total {
		return Header{}, 0, nil
	}
	if fam == Unspec {
		// Nothing in the block is to be read: the real endpoints stand.
		return h, total, nil
	}
	body := buf[V2HeaderLength:total]
	if tr != UnspecTransport {
		switch fam {
		case INet:
			h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(body[0:4])), binary.BigEndian.Uint16(body[8:10]))
			h.Destination = netip.AddrPortFrom(netip.AddrFrom4([4]byte(body[4:8])), binary.BigEndian.Uint16(body[10:12]))
		case INet6:
			h.Source = netip.AddrPortFrom(netip.AddrFrom16([16]byte(body[0:16])), binary.BigEndian.Uint16(body[32:34]))
			h.Destination = netip.AddrPortFrom(netip.AddrFrom16([16]byte(body[16:32])), binary.BigEndian.Uint16(body[34:36]))
		}
	}
	tlvs := body[need:]
	if err := checkTLVs(buf[:total], V2HeaderLength+need); err != nil {
		return Header{}, 0, err
	}
	if len(tlvs) > 0 {
		h.TLVs = tlvs
	}
	return h, total, nil
}

// checkTLVs walks the TLVs of header hdr, which start at off: each must fit,
// and a CRC32C record must match the header.
func checkTLVs(hdr []byte, off int) error {
	for i := off; i < len(hdr); {
		if len(hdr)-i < 3 {
			return errorf(ReasonTLV, "v2: %d bytes at offset %d are too short for a TLV (3 bytes at least)", len(hdr)-i, i)
		}
		typ, n := hdr[i], int(binary.BigEndian.Uint16(hdr[i+1:i+3]))
		if i+3+n > len(hdr) {
			return errorf(ReasonTLV, "v2: TLV of type 0x%02x at offset %d has %d bytes, but the header has %d left", typ, i, n, len(hdr)-i-3)
		}
		if typ == TLVCRC32C {
			if n != 4 {
				return errorf(ReasonTLV, "v2: CRC32C TLV of %d bytes, want 4", n)
			}
			at := i + 3
			want := binary.BigEndian.Uint32(hdr[at : at+4])
			sum := crc32.Update(0, castagnoli, hdr[:at])
			sum = crc32.Update(sum, castagnoli, []byte{0, 0, 0, 0})
			sum = crc32.Update(sum, castagnoli, hdr[at+4:])
			if sum != want {
				return errorf(ReasonChecksum, "v2: CRC32C 0x%08x in the header, computed 0x%08x", want, sum)
			}
		}
		i += 3 + n
	}
	return nil
}
