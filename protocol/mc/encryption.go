package mc

import (
	"crypto/sha1"
	"encoding/binary"
)

// The online-mode login: the server sends Encryption Request
// (PacketEncryptionRequest, clientbound 0x01) with its RSA public key and a
// verify token; the client encrypts a fresh 16-byte shared secret and the
// token with that key, tells the session server it joins (see ServerHash)
// and answers Encryption Response (serverbound 0x01); both directions then
// switch to AES/CFB8 keyed by the secret (see NewConnCiphers).

// encryptionResponseID is Encryption Response's packet ID, serverbound 0x01
// in the login state of every version.
const encryptionResponseID = 0x01

// Protocol versions where the encryption packets change.
const (
	encryptionVarIntArrays  = 47  // 1.8: byte arrays are VarInt-prefixed (short-prefixed before)
	encryptionSaltFirst     = 759 // 1.19: the response may carry a salt and signature instead of the token
	encryptionSaltLast      = 760 // 1.19.2; 1.19.3 (761) drops them
	encryptionAuthenticates = Protocol1_20_5
)

// MaxEncryptionArray bounds each byte array of the encryption packets: an
// RSA-4096 public key is about 550 bytes of DER, and what a client sends is
// RSA-encrypted under the server's key (128 bytes for vanilla's RSA-1024)
// or a signature of its own key (256 bytes for vanilla's RSA-2048).
const MaxEncryptionArray = 1024

// MaxServerIDLen is the longest server ID string an Encryption Request may
// carry (vanilla: 20 characters; it sends "" since 1.7).
const MaxServerIDLen = 20

// ReasonBadEncryption labels a malformed Encryption Request or Response.
const ReasonBadEncryption = "bad_encryption"

// ErrBadEncryption matches, with errors.Is, every error of
// ParseEncryptionRequest and ParseEncryptionResponse.
var ErrBadEncryption = sentinel(ReasonBadEncryption, "bad encryption packet")

// EncryptionRequest is the clientbound Encryption Request.
type EncryptionRequest struct {
	// ServerID is "" from 1.7 on.
	ServerID []byte
	// PublicKey is the server's RSA public key, DER-encoded X.509
	// SubjectPublicKeyInfo.
	PublicKey []byte
	// VerifyToken is random bytes the client must send back encrypted.
	VerifyToken []byte
	// ShouldAuthenticate tells a client of 1.20.5 or later whether to call
	// the session server; earlier versions always do, and parse it as true.
	ShouldAuthenticate bool
}

// EncryptionResponse is the serverbound Encryption Response. Its arrays are
// encrypted with the server's public key (RSA PKCS #1 v1.5).
type EncryptionResponse struct {
	// SharedSecret is the encrypted 16-byte AES key.
	SharedSecret []byte
	// VerifyToken is the encrypted verify token; nil when Signed.
	VerifyToken []byte
	// Signed (1.19 to 1.19.2 only): instead of the verify token the client
	// sent Salt and Signature, its chat-signing key's signature of the
	// verify token and the salt.
	Signed    bool
	Salt      int64
	Signature []byte
}

// AppendEncryptionRequest appends a whole Encryption Request frame for
// protocol version v to dst and returns the extended slice.
func AppendEncryptionRequest(dst []byte, v int32, r EncryptionRequest) []byte {
	n := VarIntLen(PacketEncryptionRequest) + VarIntLen(int32(len(r.ServerID))) + len(r.ServerID) +
		encryptionArrayLen(v, r.PublicKey) + encryptionArrayLen(v, r.VerifyToken)
	if v >= encryptionAuthenticates {
		n++
	}
	dst = AppendVarInt(dst, int32(n))
	dst = AppendVarInt(dst, PacketEncryptionRequest)
	dst = AppendString(dst, r.ServerID)
	dst = appendEncryptionArray(dst, v, r.PublicKey)
	dst = appendEncryptionArray(dst, v, r.VerifyToken)
	if v >= encryptionAuthenticates {
		dst = appendBool(dst, r.ShouldAuthenticate)
	}
	return dst
}

// ParseEncryptionRequest decodes an Encryption Request frame body (packet
// ID and data) of protocol version v. Its slices alias body; it does not
// allocate on success.
func ParseEncryptionRequest(body []byte, v int32) (EncryptionRequest, error) {
	const packet = "encryption request"
	var req EncryptionRequest
	r := NewReader(body)
	if err := expectPacketID(&r, packet, PacketEncryptionRequest); err != nil {
		return req, err
	}
	var err error
	if req.ServerID, err = r.ReadString(MaxServerIDLen); err != nil {
		return req, relabel(err, packet, ReasonBadEncryption)
	}
	if req.PublicKey, err = readEncryptionArray(&r, v, packet, "public key"); err != nil {
		return req, err
	}
	if req.VerifyToken, err = readEncryptionArray(&r, v, packet, "verify token"); err != nil {
		return req, err
	}
	req.ShouldAuthenticate = true
	if v >= encryptionAuthenticates {
		if req.ShouldAuthenticate, err = readBool(&r, packet, "should authenticate"); err != nil {
			return req, err
		}
	}
	return req, noTrailing(&r, packet, "encryption request")
}

// AppendEncryptionResponse appends a whole Encryption Response frame for
// protocol version v to dst and returns the extended slice. Signed is
// written only for 1.19 to 1.19.2; other versions always carry the token.
func AppendEncryptionResponse(dst []byte, v int32, e EncryptionResponse) []byte {
	salted := v >= encryptionSaltFirst && v <= encryptionSaltLast
	n := VarIntLen(encryptionResponseID) + encryptionArrayLen(v, e.SharedSecret)
	switch {
	case salted && e.Signed:
		n += 1 + 8 + encryptionArrayLen(v, e.Signature)
	case salted:
		n += 1 + encryptionArrayLen(v, e.VerifyToken)
	default:
		n += encryptionArrayLen(v, e.VerifyToken)
	}
	dst = AppendVarInt(dst, int32(n))
	dst = AppendVarInt(dst, encryptionResponseID)
	dst = appendEncryptionArray(dst, v, e.SharedSecret)
	if salted {
		dst = appendBool(dst, !e.Signed) // "has verify token"
		if e.Signed {
			dst = binary.BigEndian.AppendUint64(dst, uint64(e.Salt))
			return appendEncryptionArray(dst, v, e.Signature)
		}
	}
	return appendEncryptionArray(dst, v, e.VerifyToken)
}

// ParseEncryptionResponse decodes an Encryption Response frame body
// (packet ID and data) of protocol version v. Its slices alias body; it
// does not allocate on success.
func ParseEncryptionResponse(body []byte, v int32) (EncryptionResponse, error) {
	const packet = "encryption response"
	var e EncryptionResponse
	r := NewReader(body)
	if err := expectPacketID(&r, packet, encryptionResponseID); err != nil {
		return e, err
	}
	var err error
	if e.SharedSecret, err = readEncryptionArray(&r, v, packet, "shared secret"); err != nil {
		return e, err
	}
	if v >= encryptionSaltFirst && v <= encryptionSaltLast {
		hasToken, err := readBool(&r, packet, "has verify token")
		if err != nil {
			return e, err
		}
		if !hasToken {
			e.Signed = true
			if e.Salt, err = r.ReadInt64(); err != nil {
				return e, relabel(err, packet, ReasonBadEncryption)
			}
			if e.Signature, err = readEncryptionArray(&r, v, packet, "signature"); err != nil {
				return e, err
			}
			return e, noTrailing(&r, packet, "signature")
		}
	}
	if e.VerifyToken, err = readEncryptionArray(&r, v, packet, "verify token"); err != nil {
		return e, err
	}
	return e, noTrailing(&r, packet, "verify token")
}

func expectPacketID(r *Reader, packet string, want int32) error {
	id, err := r.ReadVarInt()
	if err != nil {
		return relabel(err, packet, ReasonBadEncryption)
	}
	if id != want {
		return packetError(packet, ReasonBadEncryption, kindUnexpected, "packet id", int64(id), int64(want))
	}
	return nil
}

func noTrailing(r *Reader, packet, field string) error {
	if n := r.Remaining(); n != 0 {
		return packetError(packet, ReasonBadEncryption, kindTrailing, field, int64(n), 0)
	}
	return nil
}

// readEncryptionArray reads a byte array prefixed by its length, a short
// before 1.8 and a VarInt since.
func readEncryptionArray(r *Reader, v int32, packet, field string) ([]byte, error) {
	var n int64
	if v < encryptionVarIntArrays {
		u, err := r.ReadUint16()
		if err != nil {
			return nil, relabel(err, packet, ReasonBadEncryption)
		}
		n = int64(int16(u)) // Java's readShort: signed
	} else {
		l, err := r.ReadVarInt()
		if err != nil {
			return nil, relabel(err, packet, ReasonBadEncryption)
		}
		n = int64(l)
	}
	if n < 0 {
		return nil, packetError(packet, ReasonBadEncryption, kindTooSmall, field+" length", n, 0)
	}
	if n > MaxEncryptionArray {
		return nil, packetError(packet, ReasonBadEncryption, kindTooLarge, field+" length", n, MaxEncryptionArray)
	}
	b, err := r.ReadBytes(int(n))
	if err != nil {
		return nil, relabel(err, packet, ReasonBadEncryption)
	}
	return b, nil
}

func encryptionArrayLen(v int32, b []byte) int {
	if v < encryptionVarIntArrays {
		return 2 + len(b)
	}
	return VarIntLen(int32(len(b))) + len(b)
}

func appendEncryptionArray(dst []byte, v int32, b []byte) []byte {
	if v < encryptionVarIntArrays {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(b)))
	} else {
		dst = AppendVarInt(dst, int32(len(b)))
	}
	return append(dst, b...)
}

func readBool(r *Reader, packet, field string) (bool, error) {
	b, err := r.ReadBytes(1)
	if err != nil {
		return false, relabel(err, packet, ReasonBadEncryption)
	}
	if b[0] > 1 {
		return false, packetError(packet, ReasonBadEncryption, kindInvalid, field, int64(b[0]), 0)
	}
	return b[0] == 1, nil
}

// AppendServerHash appends the server hash of an online-mode login to dst
// and returns the extended slice: the SHA-1 of the server ID, the shared
// secret (unencrypted) and the server's public key (DER), printed as
// Minecraft prints it, as a signed (two's complement) hexadecimal number in
// lower case without leading zeros. The client sends it to the session
// server's join, the server to hasJoined, as serverId.
func AppendServerHash(dst []byte, serverID, sharedSecret, publicKey []byte) []byte {
	h := sha1.New()
	h.Write(serverID)
	h.Write(sharedSecret)
	h.Write(publicKey)
	var sum [sha1.Size]byte
	h.Sum(sum[:0])
	return appendSignedHex(dst, sum)
}

// appendSignedHex appends d, a big-endian two's complement number, in
// hexadecimal with a minus sign when negative, as Java's
// new BigInteger(d).toString(16) does.
func appendSignedHex(dst []byte, d [sha1.Size]byte) []byte {
	if d[0]&0x80 != 0 {
		dst = append(dst, '-')
		carry := byte(1) // negate: invert and add one
		for i := len(d) - 1; i >= 0; i-- {
			d[i] = ^d[i] + carry
			if d[i] != 0 {
				carry = 0
			}
		}
	}
	leading := true
	for _, c := range d {
		for _, nibble := range [2]byte{c >> 4, c & 0x0f} {
			if leading && nibble == 0 {
				continue
			}
			leading = false
			dst = append(dst, hexDigits[nibble])
		}
	}
	if leading {
		dst = append(dst, '0')
	}
	return dst
}
