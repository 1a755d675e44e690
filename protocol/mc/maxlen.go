package mc

// MaxHandshakeBody is the largest handshake body ParseHandshake accepts:
// packet ID, protocol version, the address (MaxHandshakeAddressLen) with
// its length, port and next state, each VarInt at its widest (5 bytes). A
// frame that declares more cannot be a handshake, so a reader need not
// wait for it.
const MaxHandshakeBody = 5 + 5 + 5 + MaxHandshakeAddressLen + 2 + 5

// MaxLoginStartBody is the largest Login Start body of any version: packet
// ID, the name (MaxUsernameLen) with its length, then at most the signature
// data of 1.19 to 1.19.2 (a flag, an expiry, a public key and a signature
// of maxLoginSigBytes each with their lengths) and a UUID with its flag,
// each VarInt at its widest.
const MaxLoginStartBody = 5 + 5 + MaxUsernameLen + 1 + 8 + 2*(5+maxLoginSigBytes) + 1 + 16
