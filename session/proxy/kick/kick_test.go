package kick

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/mc/play"
	"github.com/tidegate/tidegate/session/proxy/inspect"
	"github.com/tidegate/tidegate/session/proxy/move"
)

func TestReason(t *testing.T) {
	p765, _ := mc.ConfigPacketsOf(765)
	nbt := mc.AppendTextComponent(mc.AppendVarInt(nil, 0x1b), p765, "Server closed", "red")
	js := func(s string) []byte { return mc.AppendString(mc.AppendVarInt(nil, 0x40), []byte(s)) }
	for _, tc := range []struct {
		name    string
		packet  []byte
		nbt     bool
		want    string
		wantErr string
	}{
		{"json", js(`{"text":"Kicked","extra":[" by Op"]}`), false, "Kicked by Op", ""},
		{"json string", js(`"plain"`), false, "plain", ""},
		{"nbt", nbt, true, "Server closed", ""},
		{"cut", js(`"` + strings.Repeat("é", 200) + `"`), false, strings.Repeat("é", MaxReason/2) + "…", ""},
		{"no id", nil, false, "", "ends before its ID"},
		{"bad string length", append(mc.AppendVarInt(nil, 0x40), 0x7f, 'x'), false, "", "string of 127 bytes"},
		{"bad json", js(`{"text":`), false, "", "JSON"},
		{"trailing nbt", append(bytes.Clone(nbt), 1, 2), true, "", "bytes after the reason"},
		{"varint too long", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false, "", "disconnect of 6 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Reason(tc.packet, tc.nbt)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Reason = %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Reason = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzReason: no packet panics, and a reason is valid UTF-8 of at most
// MaxReason bytes and the cut mark.
func FuzzReason(f *testing.F) {
	p765, _ := mc.ConfigPacketsOf(765)
	f.Add(mc.AppendTextComponent(mc.AppendVarInt(nil, 0x1b), p765, "bye", ""), true)
	f.Add(mc.AppendString(mc.AppendVarInt(nil, 0x40), []byte(`{"text":"bye"}`)), false)
	f.Fuzz(func(t *testing.T, packet []byte, nbt bool) {
		r, err := Reason(packet, nbt)
		if err == nil && (len(r) > MaxReason+len("…") || !utf8.ValidString(r) && utf8.Valid(packet)) {
			t.Fatalf("reason of %d bytes: %q", len(r), r)
		}
	})
}

// host records what a Player asks of its session.
type host struct {
	closed, moving bool
	sent           []string
	refuse         map[string]error
	kicked         []byte
}

func (h *host) CloseBackend() { h.closed = true }
func (h *host) Moving() bool  { return h.moving }
func (h *host) SendTo(g string, notice []byte) error {
	if err := h.refuse[g]; err != nil {
		return err
	}
	h.sent = append(h.sent, g+": "+string(notice))
	return nil
}
func (h *host) Kick(packet []byte) { h.kicked = packet }

func player(t *testing.T, v int32) (*Player, *Counts) {
	t.Helper()
	pl := &move.Player{Handshake: mc.Handshake{ProtocolVersion: v}}
	if pk, ok := mc.ConfigPacketsOf(v); ok {
		pl.Packets = pk
	} else if pp, ok := play.PacketsOf(v); ok {
		pl.Play = &pp
	}
	var c Counts
	return NewPlayer(pl, "Steve", &c, zerolog.Nop()), &c
}

// kick has p claim a Disconnect with reason at protocol 47.
func kick(t *testing.T, p *Player, reason string) []byte {
	t.Helper()
	ids, _ := inspect.IDsOf(47)
	pk := mc.AppendString(mc.AppendVarInt(nil, 0x40), []byte(`{"text":"`+reason+`"}`))
	if !p.Wants(inspect.Play, 0x40) || p.Wants(inspect.Play, 0x02) || p.Wants(inspect.Configuration, 0x40) {
		t.Fatal("Wants: the play Disconnect only")
	}
	if v := p.Claim(inspect.Frame{State: inspect.Play, ID: 0x40, Packet: pk, IDs: &ids}); v != inspect.DropRest {
		t.Fatalf("verdict %v", v)
	}
	return pk
}

// TestKickFallsBackInOrder: the first fallback that takes the player is
// used, with the reason in the notice; a move that fails tries the next;
// when none is left the client gets the backend's own Disconnect.
func TestKickFallsBackInOrder(t *testing.T) {
	p, c := player(t, 47)
	h := &host{refuse: map[string]error{"lobby": errors.New("no backend up")}}
	pk := kick(t, p, "Flying")
	now := time.Unix(1000, 0)
	p.Kicked(h, Where{Group: "game", Backend: "10.0.0.1:25565", Fallback: []string{"lobby", "limbo", "hub"}}, now)
	if !h.closed || len(h.sent) != 1 || !strings.HasPrefix(h.sent[0], "limbo: ") || !strings.Contains(h.sent[0], "You were kicked from game (Flying): you are now on limbo") {
		t.Fatalf("closed %t, sent %q", h.closed, h.sent)
	}
	if !p.MoveFailed(h, errors.New("refused")) || len(h.sent) != 2 || !strings.HasPrefix(h.sent[1], "hub: ") {
		t.Fatalf("after a failed move: sent %q", h.sent)
	}
	if !p.MoveFailed(h, errors.New("refused")) || !bytes.Equal(h.kicked, pk) {
		t.Fatalf("no fallback left: kicked %q, want the backend's %q", h.kicked, pk)
	}
	if c[NoneTook].Load() != 1 || c[Moved].Load() != 0 || p.MoveFailed(h, nil) {
		t.Fatalf("counts %d moved, %d none took; a move failing with no kick pending handled", c[Moved].Load(), c[NoneTook].Load())
	}
}

// TestKickChainIsBounded: a player kicked again is not sent to a group
// that kicked them in the chain, and gets the kick after MaxHops moves;
// a kick long after the last starts a new chain.
func TestKickChainIsBounded(t *testing.T) {
	p, c := player(t, 47)
	now := time.Unix(1000, 0)
	groups := []string{"a", "b", "c", "d", "e"}
	for i := range MaxHops {
		h := &host{}
		kick(t, p, "again")
		from := groups[i]
		p.Kicked(h, Where{Group: from, Fallback: groups}, now)
		if len(h.sent) != 1 || !strings.HasPrefix(h.sent[0], groups[i+1]+": ") {
			t.Fatalf("hop %d from %s: sent %q, want the first group that did not kick", i, from, h.sent)
		}
		p.Landed(groups[i+1])
		now = now.Add(time.Second)
	}
	h := &host{}
	pk := kick(t, p, "once more")
	p.Kicked(h, Where{Group: groups[MaxHops], Fallback: groups}, now)
	if len(h.sent) != 0 || !bytes.Equal(h.kicked, pk) || c[HopLimit].Load() != 1 || c[Moved].Load() != MaxHops {
		t.Fatalf("past the hop limit: sent %q, kicked %t; counts moved %d, hop_limit %d", h.sent, h.kicked != nil, c[Moved].Load(), c[HopLimit].Load())
	}
	h = &host{}
	kick(t, p, "later")
	p.Kicked(h, Where{Group: "a", Fallback: []string{"b"}}, now.Add(ChainWindow+time.Second))
	if len(h.sent) != 1 {
		t.Fatalf("a new chain: sent %q", h.sent)
	}
}

// TestKickDuringAMove: a kick while a move is in flight waits for that
// move: it landing counts the kick as moved, it failing tries the
// fallbacks.
func TestKickDuringAMove(t *testing.T) {
	p, c := player(t, 47)
	h := &host{moving: true}
	kick(t, p, "mid-move")
	p.Kicked(h, Where{Group: "game", Fallback: []string{"lobby"}}, time.Unix(1, 0))
	if !h.closed || len(h.sent) != 0 {
		t.Fatalf("closed %t, sent %q: the move in flight decides", h.closed, h.sent)
	}
	h.moving = false
	if !p.MoveFailed(h, errors.New("down")) || len(h.sent) != 1 {
		t.Fatalf("the move failed: sent %q", h.sent)
	}
	p.Landed("lobby")
	if c[Moved].Load() != 1 {
		t.Fatalf("moved %d", c[Moved].Load())
	}
}

// TestEndedFallsBack: a backend that went away (no Disconnect) moves the
// player told the server went away; with no fallback nothing is tried;
// with none taking them the client reads why.
func TestEndedFallsBack(t *testing.T) {
	p, c := player(t, 47)
	h := &host{}
	if p.Ended(h, Where{Group: "game"}, time.Unix(1, 0)) {
		t.Fatal("Ended without a fallback")
	}
	if !p.Ended(h, Where{Group: "game", Fallback: []string{"lobby"}}, time.Unix(1, 0)) || len(h.sent) != 1 || !strings.Contains(h.sent[0], "went away") {
		t.Fatalf("sent %q", h.sent)
	}
	if !p.MoveFailed(h, errors.New("down")) || h.kicked == nil || !bytes.Contains(h.kicked, []byte("no other took you in")) {
		t.Fatalf("kicked %q", h.kicked)
	}
	if c[Moved].Load()+c[NoneTook].Load() != 0 {
		t.Fatal("a backend that went away is not a kick")
	}
	var nilPlayer *Player
	nilPlayer.Landed("x")
	if nilPlayer.MoveFailed(h, nil) || Of(nil) != nil {
		t.Fatal("nil Player")
	}
}
