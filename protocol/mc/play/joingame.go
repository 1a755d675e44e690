package play

import "fmt"

// JoinGame is what a respawn move reads of a server's Join Game: what the
// Respawn packets that follow it need. Byte slices alias the packet.
type JoinGame struct {
	EntityID int32
	GameMode byte // with the hardcore bit before 1.16
	// PreviousGameMode is 1.16+'s (0xff: none).
	PreviousGameMode byte
	// Dimension is the dimension ID before 1.16 (-1 nether, 0 overworld,
	// 1 end).
	Dimension  int32
	Difficulty byte   // before 1.14
	LevelType  []byte // before 1.16: "default", "flat", ...
	// DimensionType is the dimension type: its whole NBT compound
	// (1.16.2-1.18.2) or its identifier (1.19+).
	DimensionType []byte
	WorldName     []byte // 1.16+: the world's identifier, such as minecraft:overworld
	HashedSeed    int64  // 1.15+
	IsDebug       bool   // 1.16+
	IsFlat        bool   // 1.16+
	// Death is 1.19+'s optional death location as on the wire: a boolean,
	// then when true a dimension identifier and a position.
	Death          []byte
	PortalCooldown int32 // 1.20+
}

// ParseJoinGame decodes the data of a Join Game packet (after its ID) in
// the format of p. Every length is checked against what is left of data;
// trailing bytes are refused.
func ParseJoinGame(p Packets, data []byte) (JoinGame, error) {
	r := reader{b: data}
	var j JoinGame
	j.EntityID = r.i32("entity ID")
	if p.Layout <= Layout1912 {
		j.GameMode = r.u8("game mode")
		if p.Layout == Layout1912 {
			j.Dimension = r.i32("dimension")
		} else {
			j.Dimension = int32(int8(r.u8("dimension")))
		}
		j.Difficulty = r.u8("difficulty")
		r.u8("max players")
		j.LevelType = r.str("level type")
		if p.Layout >= Layout18 {
			r.bool("reduced debug info")
		}
	} else {
		r.bool("hardcore")
		j.GameMode = r.u8("game mode")
		j.PreviousGameMode = r.u8("previous game mode")
		n := r.varint("world count")
		if r.err == nil && (n < 0 || int(n) > len(data)) {
			r.fail("world count", fmt.Errorf("%d worlds in %d bytes", n, len(data)))
		}
		for i := int32(0); i < n && r.err == nil; i++ {
			r.str("world name")
		}
		r.nbt("dimension codec")
		if p.Layout >= Layout1193 {
			j.DimensionType = r.str("dimension type")
		} else {
			j.DimensionType = r.nbt("dimension type")
		}
		j.WorldName = r.str("world name")
		j.HashedSeed = r.i64("hashed seed")
		r.varint("max players")
		r.varint("view distance")
		if p.Layout >= Layout118 {
			r.varint("simulation distance")
		}
		r.bool("reduced debug info")
		r.bool("enable respawn screen")
		j.IsDebug = r.bool("is debug")
		j.IsFlat = r.bool("is flat")
		if p.Layout >= Layout1193 {
			j.Death = r.death()
		}
		if p.Layout >= Layout120 {
			j.PortalCooldown = r.varint("portal cooldown")
		}
	}
	if r.err == nil && r.off != len(data) {
		r.fail("end", fmt.Errorf("%d bytes after the last field", len(data)-r.off))
	}
	if r.err != nil {
		return JoinGame{}, fmt.Errorf("join game (protocol %d): %w", p.Protocol, r.err)
	}
	return j, nil
}

// nbt reads a named NBT tag and returns it whole.
func (r *reader) nbt(field string) []byte {
	if r.err != nil {
		return nil
	}
	n, err := skipNamedNBT(r.b[r.off:])
	if err != nil {
		r.fail(field, err)
		return nil
	}
	return r.bytes(field, n)
}

// death reads an optional death location and returns it as on the wire.
func (r *reader) death() []byte {
	at := r.off
	if r.bool("has death location") {
		r.str("death dimension")
		r.bytes("death position", 8)
	}
	if r.err != nil {
		return nil
	}
	return r.b[at:r.off]
}
