package mc

import "bytes"

// AppendBungeeAddress appends a handshake server address in BungeeCord
// legacy IP forwarding form, host NUL clientIP NUL undashed-UUID, followed
// by NUL propertiesJSON when propertiesJSON is not empty, to dst and returns
// the extended slice. host should not carry a Forge marker or other NUL
// suffix, and propertiesJSON is the game profile's property array, for
// example [{"name":"textures","value":"...","signature":"..."}].
func AppendBungeeAddress(dst []byte, host []byte, clientIP string, uuid [16]byte, propertiesJSON []byte) []byte {
	dst = append(dst, host...)
	dst = append(dst, 0)
	dst = append(dst, clientIP...)
	dst = append(dst, 0)
	dst = AppendUUID(dst, uuid, false)
	if len(propertiesJSON) > 0 {
		dst = append(dst, 0)
		dst = append(dst, propertiesJSON...)
	}
	return dst
}

// ParseBungeeAddress splits a server address in BungeeCord legacy IP
// forwarding form into its parts, which alias addr. ok is false unless addr
// has three or four NUL-separated parts, the way Spigot accepts it, and the
// third is a UUID in 32 hex digits (see ParseUUID); props is empty when
// there is no fourth part.
func ParseBungeeAddress(addr []byte) (host, ip, uuid, props []byte, ok bool) {
	var parts [4][]byte
	n := 0
	for rest := addr; ; n++ {
		if n == len(parts) {
			return nil, nil, nil, nil, false
		}
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			parts[n] = rest
			n++
			break
		}
		parts[n], rest = rest[:i:i], rest[i+1:]
	}
	if n < 3 || len(parts[2]) != 32 {
		return nil, nil, nil, nil, false
	}
	if _, ok := ParseUUID(parts[2]); !ok {
		return nil, nil, nil, nil, false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}
