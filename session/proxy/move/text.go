package move

// ChatPacket is the packet that shows text (legacy § formatting) in the
// player's chat, in play.
func (p *Player) ChatPacket(text string) []byte { return p.chat(text, "") }

// KickPacket is the play Disconnect packet with reason text.
func (p *Player) KickPacket(text string) []byte { return p.kick(text) }
