package proxyproto

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// Append appends a header of version v (V1, or V2; anything else is
// treated as V2) for a TCP connection from src to dst: see AppendV1 and
// AppendV2.
func Append(b []byte, v Versions, src, dst netip.AddrPort) []byte {
	if v == V1 {
		return AppendV1(b, src, dst)
	}
	return AppendV2(b, src, dst)
}

// AppendV1 appends the v1 line for a TCP connection from src to dst, as
// "PROXY TCP4 192.0.2.1 198.51.100.7 51234 25565\r\n". When either address
// is not valid it appends "PROXY UNKNOWN\r\n", which tells the receiver to
// use the connection's own endpoints. IPv4-mapped IPv6 addresses are
// written as IPv4 when both are; an IPv4 address beside an IPv6 one is
// written in its mapped form. Zones are left out.
func AppendV1(b []byte, src, dst netip.AddrPort) []byte {
	s, d, ok := pair(src, dst)
	if !ok {
		return append(b, "PROXY UNKNOWN\r\n"...)
	}
	if s.Is4() {
		b = append(b, "PROXY TCP4 "...)
	} else {
		b = append(b, "PROXY TCP6 "...)
	}
	b = appendAddr(b, s)
	b = append(b, ' ')
	b = appendAddr(b, d)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(src.Port()), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(dst.Port()), 10)
	return append(b, '\r', '\n')
}

// AppendV2 appends a v2 header: the PROXY command over TCP from src to
// dst, IPv4 when both addresses are IPv4 (or IPv4-mapped), else IPv6; or
// the LOCAL command with no addresses when either is not valid, as for a
// health check. It adds no TLVs.
func AppendV2(b []byte, src, dst netip.AddrPort) []byte {
	b = append(b, signature[:]...)
	s, d, ok := pair(src, dst)
	switch {
	case !ok:
		return append(b, 0x20, 0x00, 0, 0)
	case s.Is4():
		b = append(b, 0x21, byte(INet)<<4|byte(Stream), 0, 12)
		s4, d4 := s.As4(), d.As4()
		b = append(b, s4[:]...)
		b = append(b, d4[:]...)
	default:
		b = append(b, 0x21, byte(INet6)<<4|byte(Stream), 0, 36)
		s16, d16 := s.As16(), d.As16()
		b = append(b, s16[:]...)
		b = append(b, d16[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	return binary.BigEndian.AppendUint16(b, dst.Port())
}

// AppendV2Local appends a v2 LOCAL header, the one a sender puts on its own
// connections (health checks).
func AppendV2Local(b []byte) []byte {
	return AppendV2(b, netip.AddrPort{}, netip.AddrPort{})
}

// pair returns the addresses of src and dst in one family, without zones:
// both IPv4 when both are IPv4 or IPv4-mapped, both IPv6 otherwise. ok is
// false when either is not valid.
func pair(src, dst netip.AddrPort) (s, d netip.Addr, ok bool) {
	if !src.IsValid() || !dst.IsValid() {
		return netip.Addr{}, netip.Addr{}, false
	}
	s, d = src.Addr().Unmap().WithZone(""), dst.Addr().Unmap().WithZone("")
	if s.Is4() && d.Is4() {
		return s, d, true
	}
	return netip.AddrFrom16(s.As16()), netip.AddrFrom16(d.As16()), true
}

// appendAddr writes a in v1's form: dotted decimal for IPv4, and for IPv6
// its compressed hex form, IPv4-mapped ones as ::ffff: and two hex groups
// (not the dotted suffix) so that every receiver reads them.
func appendAddr(b []byte, a netip.Addr) []byte {
	if !a.Is4In6() {
		return a.AppendTo(b)
	}
	v := a.As16()
	b = append(b, "::ffff:"...)
	b = strconv.AppendUint(b, uint64(v[12])<<8|uint64(v[13]), 16)
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(v[14])<<8|uint64(v[15]), 16)
}
