package mc

import (
	"crypto/hmac"
	"crypto/sha256"
)

// VelocityChannel is the Login Plugin Request channel of Velocity's modern
// forwarding: a backend set up for it asks on this channel, and the proxy
// answers with the signed player info.
const VelocityChannel = "velocity:player_info"

// Modern forwarding versions.
const (
	VelocityDefault     = 1 // address, UUID, name, properties
	VelocityWithKey     = 2 // and the 1.19 chat key
	VelocityWithKeyV2   = 3 // and the 1.19.1 chat key with its holder's UUID
	VelocityLazySession = 4 // as 1; the key comes with the chat session (1.19.3+)
	VelocityMaxVersion  = VelocityLazySession
)

// velocitySigLen is the HMAC-SHA256 signature before the payload.
const velocitySigLen = sha256.Size

// maxVelocityAddress bounds the forwarded client address string.
const maxVelocityAddress = 255

// VelocityInfo is the player info of modern forwarding; the slices alias
// the packet it was parsed from.
type VelocityInfo struct {
	Version    int32
	Address    []byte // the client's IP address, as text
	UUID       [16]byte
	Name       []byte
	Properties []Property
	Key        *PlayerKey // versions 2 and 3
	HasHolder  bool       // version 3: whether Holder is set
	Holder     [16]byte   // version 3: the UUID the key was signed for
}

// ParseVelocityRequest returns the highest forwarding version a backend's
// velocity:player_info request data offers: its one byte, or
// VelocityDefault for empty data.
func ParseVelocityRequest(data []byte) (int32, error) {
	switch {
	case len(data) == 0:
		return VelocityDefault, nil
	case len(data) > 1 || data[0] < VelocityDefault:
		return 0, packetError("velocity forwarding request", ReasonBadForwarding, kindInvalid, "request of length", int64(len(data)), 1)
	}
	return int32(data[0]), nil
}

// VelocityVersionFor picks the forwarding version for a backend that offers
// up to requested, for a client of protocol version v that sent key (nil
// for none) in its Login Start: versions 2 and 3 only for 1.19 and 1.19.1–1.19.2
// clients with a key, 4 from 1.19.3 when offered, otherwise 1.
func VelocityVersionFor(requested, v int32, key *PlayerKey) int32 {
	requested = min(requested, VelocityMaxVersion)
	switch {
	case requested <= VelocityDefault:
	case v >= ProtocolLoginUUIDNoSig:
		if requested >= VelocityLazySession {
			return VelocityLazySession
		}
	case key == nil:
	case v == Protocol1_19:
		return VelocityWithKey
	case v == ProtocolLoginUUIDOptional && requested >= VelocityWithKeyV2:
		return VelocityWithKeyV2
	}
	return VelocityDefault
}

// AppendVelocityResponse appends the data of the Login Plugin Response that
// answers a velocity:player_info request, the HMAC-SHA256 under secret of
// the payload followed by the payload, to dst: VarInt version, String
// address, UUID, String name, the property array and, for versions 2 and 3,
// the chat key (and for 3 the holder's UUID). A version 2 or 3 info
// without a key is written as version 1.
func AppendVelocityResponse(dst, secret []byte, info VelocityInfo) []byte {
	if (info.Version == VelocityWithKey || info.Version == VelocityWithKeyV2) && info.Key == nil {
		info.Version = VelocityDefault
	}
	start := len(dst)
	dst = append(dst, make([]byte, velocitySigLen)...)
	payload := len(dst)
	dst = AppendVarInt(dst, info.Version)
	dst = AppendString(dst, info.Address)
	dst = append(dst, info.UUID[:]...)
	dst = AppendString(dst, info.Name)
	dst = AppendProperties(dst, info.Properties)
	if info.Version == VelocityWithKey || info.Version == VelocityWithKeyV2 {
		dst = appendPlayerKey(dst, info.Key)
		if info.Version == VelocityWithKeyV2 {
			dst = appendBool(dst, info.HasHolder)
			if info.HasHolder {
				dst = append(dst, info.Holder[:]...)
			}
		}
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(dst[payload:])
	mac.Sum(dst[start:start])
	return dst
}

// VerifyVelocityResponse checks the signature of a velocity:player_info
// answer's data under secret, in constant time, and decodes its payload, whose
// version must be at most maxVersion. Errors carry ReasonBadForwarding.
func VerifyVelocityResponse(data, secret []byte, maxVersion int32) (VelocityInfo, error) {
	const packet = "velocity forwarding"
	var info VelocityInfo
	if len(data) < velocitySigLen {
		return info, packetError(packet, ReasonBadForwarding, kindTruncated, "signature", int64(len(data)), velocitySigLen)
	}
	sig, payload := data[:velocitySigLen], data[velocitySigLen:]
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	var sum [sha256.Size]byte
	if !hmac.Equal(mac.Sum(sum[:0]), sig) {
		return info, packetError(packet, ReasonBadForwarding, kindInvalid, "signature for a payload of length", int64(len(payload)), 0)
	}
	fail := func(err error) (VelocityInfo, error) {
		return VelocityInfo{}, relabel(err, packet, ReasonBadForwarding)
	}
	r := NewReader(payload)
	var err error
	if info.Version, err = r.ReadVarInt(); err != nil {
		return fail(err)
	}
	if info.Version < VelocityDefault || info.Version > maxVersion {
		return info, packetError(packet, ReasonBadForwarding, kindTooLarge, "version", int64(info.Version), int64(maxVersion))
	}
	if info.Address, err = r.ReadString(maxVelocityAddress); err != nil {
		return fail(err)
	}
	if info.UUID, err = r.readUUID(); err != nil {
		return fail(err)
	}
	if info.Name, err = r.ReadString(MaxUsernameLen); err != nil {
		return fail(err)
	}
	if info.Properties, err = r.readProperties(); err != nil {
		return fail(err)
	}
	if info.Version == VelocityWithKey || info.Version == VelocityWithKeyV2 {
		if info.Key, err = r.readPlayerKey(); err != nil {
			return fail(err)
		}
		if info.Version == VelocityWithKeyV2 {
			if info.HasHolder, err = r.readBool(); err != nil {
				return fail(err)
			}
			if info.HasHolder {
				if info.Holder, err = r.readUUID(); err != nil {
					return fail(err)
				}
			}
		}
	}
	if n := r.Remaining(); n != 0 {
		return info, packetError(packet, ReasonBadForwarding, kindTrailing, "payload", int64(n), 0)
	}
	return info, nil
}
