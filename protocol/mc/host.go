package mc

import "bytes"

// SplitAddress splits a handshake server address at its first NUL byte into
// the host and the suffix starting at that NUL (a Forge marker or forwarding
// data), which is kept intact. marker is empty when there is no NUL. Both
// alias addr.
func SplitAddress(addr []byte) (host, marker []byte) {
	i := bytes.IndexByte(addr, 0)
	if i < 0 {
		return addr, addr[len(addr):]
	}
	return addr[:i:i], addr[i:]
}

// AppendNormalizedHost appends host to dst with ASCII letters lower-cased
// and one trailing dot (as sent by clients that resolved an SRV record or
// were given a fully qualified name) removed, and returns the extended
// slice. It does not allocate when dst has enough capacity; dst may be
// host[:0] to normalize in place.
func AppendNormalizedHost(dst, host []byte) []byte {
	if n := len(host); n > 0 && host[n-1] == '.' {
		host = host[:n-1]
	}
	for _, c := range host {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// ForgeKind classifies the Forge marker in a handshake server address.
type ForgeKind uint8

// Forge markers, by the client generation that sends them.
const (
	ForgeNone   ForgeKind = iota // vanilla or unknown
	ForgeFML                     // "\x00FML\x00": legacy Forge, 1.7.10–1.12.2
	ForgeFML2                    // "\x00FML2\x00": Forge 1.13 up to 1.18.1
	ForgeFML3                    // "\x00FML3\x00": Forge 1.18.2 up to 1.20.1
	ForgeModern                  // "\x00FORGE" (possibly followed by a version): Forge 1.20.2+
)

var forgeMarkers = [...]string{
	ForgeNone:   "",
	ForgeFML:    "\x00FML\x00",
	ForgeFML2:   "\x00FML2\x00",
	ForgeFML3:   "\x00FML3\x00",
	ForgeModern: "\x00FORGE",
}

var forgeNames = [...]string{
	ForgeNone:   "none",
	ForgeFML:    "fml",
	ForgeFML2:   "fml2",
	ForgeFML3:   "fml3",
	ForgeModern: "forge",
}

// Marker returns the marker string k's clients append to the server
// address, or "" for ForgeNone.
func (k ForgeKind) Marker() string {
	if int(k) < len(forgeMarkers) {
		return forgeMarkers[k]
	}
	return ""
}

// String returns a short lower-case name for k, usable as a metrics label.
func (k ForgeKind) String() string {
	if int(k) < len(forgeNames) {
		return forgeNames[k]
	}
	return "unknown"
}

// ForgeMarker reports which Forge marker, if any, a handshake server
// address carries after its host.
func ForgeMarker(addr []byte) ForgeKind {
	_, m := SplitAddress(addr)
	if len(m) == 0 {
		return ForgeNone
	}
	for k := ForgeFML; k <= ForgeModern; k++ {
		if bytes.Contains(m, []byte(forgeMarkers[k])) {
			return k
		}
	}
	return ForgeNone
}
