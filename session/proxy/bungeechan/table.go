package bungeechan

import (
	"net/netip"

	"github.com/tidegate/tidegate/internal/keyed"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/inspect"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// Table holds the Users of a loop's sessions, by session, and counts
// their messages; its zero value is empty and ready. It is used on its
// loop only (Counts may be read from any goroutine).
type Table[K comparable] struct {
	keyed.Map[K, *User]
	Counts Counts
}

// Where is a session as Keep finds it at the start of a backend's stream.
type Where struct {
	Loop Loop // the session's
	From any  // the backend's connection (inspect.Loop.Start)
	// S2C and C2S count the frames the relay writes to the client and to
	// the backend.
	S2C, C2S *mc.FrameCounter
	Name     string         // the player's
	Client   netip.AddrPort // the client's address (the PROXY header's, if any)
	Group    string         // the group it is on
	On       bool           // the group has the channel on (config.GroupConfig.BungeeChannelOn)
}

// Keep runs at the start of each backend's stream of session k, whose
// movable player is pl (nil: not movable, and not answered): k joins d at
// the first, its User is told the group it moved to at the next, and while
// its group has the channel on the User is one of l's users of k. It
// reports whether k's stream has the User. z is the loop's scratch.
func (t *Table[K]) Keep(d *Directory, l *inspect.Loop[K], k K, s Session, pl *move.Player, w Where, z *mc.Compressor) bool {
	if pl == nil {
		return false
	}
	u := t.Get(k)
	if u == nil {
		client, backend := pl.Login.Thresholds()
		u = d.Join(Member{Session: s, Loop: w.Loop, ToClient: w.S2C, ToBackend: w.C2S, Player: pl, On: w.On, ClientThreshold: client, BackendThreshold: backend, Counts: &t.Counts, Scratch: z},
			Player{Name: w.Name, UUID: pl.Login.UUID(), IP: w.Client.Addr().Unmap().String(), Port: int(w.Client.Port()), Server: w.Group})
		t.Set(k, u)
	} else {
		u.Moved(w.Group, w.On)
	}
	if !w.On {
		return false
	}
	ids, _ := inspect.IDsOf(pl.Handshake.ProtocolVersion)
	return l.Ensure(k, w.From, ids, u.BackendThreshold, (*inspectUser)(u))
}

// Leave takes k's User, if any, out of its directory as k ends.
func (t *Table[K]) Leave(k K) {
	if u := t.Get(k); u != nil {
		u.Leave()
		t.Delete(k)
	}
}

// inspectUser is a User as its session's inspection sees it.
type inspectUser User

// Wants: a plugin message in play.
func (u *inspectUser) Wants(st inspect.State, id int32) bool {
	return (*User)(u).Wants(st == inspect.Play, id)
}

// Claim drops the channel's messages, which Claim handles.
func (u *inspectUser) Claim(f inspect.Frame) inspect.Verdict {
	if (*User)(u).Claim(f.Packet) {
		return inspect.Drop
	}
	return inspect.Forward
}
