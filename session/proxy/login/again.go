package login

import "github.com/tidegate/tidegate/protocol/mc"

// Again returns a new login of b's player, to another backend forwarding
// as set says (a move between servers: session/proxy/move). The identity
// is shared, not copied: it is never changed after the first login.
func (b *Backend) Again(set *Settings) *Backend {
	return &Backend{set: set, protocol: b.protocol, name: b.name, uuid: b.uuid, clientIP: b.clientIP,
		key: b.key, props: b.props, propsJSON: b.propsJSON, threshold: -1}
}

// Threshold returns the compression threshold the backend set, -1 while
// it has set none.
func (b *Backend) Threshold() int { return b.threshold }

// Name returns the player's name.
func (b *Backend) Name() string { return string(b.name) }

// AppendOwnLoginStart appends the Login Start frame (plain: it precedes
// Set Compression) that opens this login at a backend: the player's name,
// its UUID where the version has one, never a chat key (AppendLoginStart
// says why).
func (b *Backend) AppendOwnLoginStart(dst []byte) []byte {
	b.packet = mc.AppendLoginStart(b.packet[:0], b.protocol, mc.LoginStart{Name: b.name, UUID: b.uuid, HasUUID: true})
	dst = mc.AppendVarInt(dst, int32(len(b.packet)))
	return append(dst, b.packet...)
}
