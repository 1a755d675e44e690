package login

import (
	"bytes"

	"github.com/tidegate/tidegate/protocol/mc"
)

// Rewrite is how a handshake toward a backend differs from the client's.
type Rewrite struct {
	// Host replaces the host of the address (its Forge marker kept); nil
	// keeps the client's.
	Host []byte
	Port uint16 // replaces the port; 0 keeps it
	// Bungee puts the address in BungeeCord legacy forwarding form,
	// host\0clientIP\0uuid, with the offline-mode UUID of the player. The
	// form has no room for a Forge marker: a legacy Forge client's
	// (\0FML\0) becomes the property forgeClient=true, as BungeeCord
	// sends it; a later marker is not carried.
	Bungee bool
	// UUID, when set, is the player's UUID for Bungee in place of the
	// offline-mode one, and Properties the profile's properties as JSON.
	UUID       *[16]byte
	Properties []byte
}

// AppendHandshake appends the handshake frame to send the backend in place
// of hs to dst, building the address in addr (both may be scratch space
// reused across calls), and returns both extended slices.
func AppendHandshake(dst, addr []byte, hs mc.Handshake, rw Rewrite, clientIP, username string) (frame, address []byte) {
	host, marker := mc.SplitAddress(hs.Address)
	if rw.Host != nil {
		host = rw.Host
		if rw.Port != 0 {
			hs.Port = rw.Port
		}
	}
	if rw.Bungee {
		uuid := mc.OfflineUUID([]byte(username))
		if rw.UUID != nil {
			uuid = *rw.UUID
		}
		props := rw.Properties
		if bytes.HasPrefix(marker, legacyForge) {
			props = withForgeClient(props)
		}
		addr = mc.AppendBungeeAddress(addr, host, clientIP, uuid, props)
	} else {
		addr = append(append(addr, host...), marker...)
	}
	hs.Address = addr
	return mc.AppendHandshake(dst, hs), addr
}

// legacyForge is the marker a 1.7.10-1.12 Forge client puts after the host.
var legacyForge = []byte("\x00FML\x00")

// forgeClientProperty is the profile property that tells a backend behind
// BungeeCord forwarding that the player runs legacy Forge.
const forgeClientProperty = `{"name":"forgeClient","value":"true"}`

// withForgeClient returns the properties JSON array props (empty: none)
// with the forgeClient property added.
func withForgeClient(props []byte) []byte {
	if len(props) < 2 || props[len(props)-1] != ']' {
		return []byte("[" + forgeClientProperty + "]")
	}
	out := append([]byte(nil), props[:len(props)-1]...)
	if len(bytes.TrimSpace(out)) > 1 { // not []
		out = append(out, ',')
	}
	return append(append(out, forgeClientProperty...), ']')
}
