package bungeechan

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/logbuf"
	"github.com/tidegate/tidegate/protocol/bungeemsg"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/protocol/mc/play"
	"github.com/tidegate/tidegate/reactor/looptimer"
	"github.com/tidegate/tidegate/session/proxy/config"
	"github.com/tidegate/tidegate/session/proxy/move"
)

// fakeLoop runs what is executed or scheduled on it when the test says.
// Execute may be called from any goroutine (the network's read).
type fakeLoop struct {
	mu     sync.Mutex
	tasks  []func()
	timers []*looptimer.Timer
}

func (l *fakeLoop) Execute(f func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tasks = append(l.tasks, f)
	return nil
}

// queued returns how many tasks wait to run.
func (l *fakeLoop) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tasks)
}
func (l *fakeLoop) Schedule(t *looptimer.Timer, _ time.Duration) {
	l.Stop(t)
	l.timers = append(l.timers, t)
}
func (l *fakeLoop) Stop(t *looptimer.Timer) {
	for i, x := range l.timers {
		if x == t {
			l.timers = append(l.timers[:i], l.timers[i+1:]...)
			return
		}
	}
}

// run runs the tasks and timers due, until there are none.
func (l *fakeLoop) run() {
	for l.queued()+len(l.timers) > 0 {
		l.mu.Lock()
		ts, tm := l.tasks, l.timers
		l.tasks, l.timers = nil, nil
		l.mu.Unlock()
		for _, f := range ts {
			f()
		}
		for _, t := range tm {
			t.F()
		}
	}
}

// fakeSession records what the channel writes and asks.
type fakeSession struct {
	loop       *fakeLoop
	toClient   [][]byte
	toBackend  [][]byte
	fc         [2]mc.FrameCounter // [toClient], inside or between frames (mid)
	kicked     [][]byte           // the packets of Kick
	sentTo     []string
	closed     bool
	sendFailed error
}

func (s *fakeSession) Relaying() bool { return !s.closed }

// mid stands the stream to the client (i 1) or to the backend (0) inside
// a frame, or between frames.
func (s *fakeSession) mid(i int, inside bool) {
	s.fc[i] = mc.FrameCounter{}
	if inside {
		s.fc[i].Count([]byte{5, 0}) // a 5-byte frame's first byte
	}
}
func (s *fakeSession) WriteClient(f []byte)  { s.toClient = append(s.toClient, f) }
func (s *fakeSession) WriteBackend(f []byte) { s.toBackend = append(s.toBackend, f) }
func (s *fakeSession) SendTo(server string, notice []byte) error {
	if notice != nil {
		panic("a notice")
	}
	s.sentTo = append(s.sentTo, server)
	return s.sendFailed
}
func (s *fakeSession) Kick(packet []byte) {
	s.kicked = append(s.kicked, packet)
	s.closed = true
}

type world struct {
	t      *testing.T
	d      *Directory
	log    *logbuf.Buffer
	counts Counts
	k      mc.Compressor
	loops  [2]fakeLoop
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, log: &logbuf.Buffer{}}
	cfg := &config.Config{Groups: map[string]config.GroupConfig{
		"lobby": {Backends: []config.BackendConfig{{Addr: "10.0.0.1:25565"}, {Addr: "10.0.0.2:25565"}}},
		"game":  {Backends: []config.BackendConfig{{Addr: "[::1]:25566"}}},
		"empty": {},
	}}
	w.d = NewDirectory(zerolog.New(w.log), func() *config.Config { return cfg }, nil)
	return w
}

// join adds a player of protocol v whose session runs on loop i.
func (w *world) join(p Player, v int32, i, threshold int) (*User, *fakeSession) {
	pl := &move.Player{Threshold: threshold}
	if cp, ok := mc.ConfigPacketsOf(v); ok {
		pl.Packets = cp
	} else {
		pk, _ := play.PacketsOf(v)
		pl.Play = &pk
	}
	s := &fakeSession{loop: &w.loops[i]}
	u := w.d.Join(Member{Session: s, Loop: s.loop, ToClient: &s.fc[1], ToBackend: &s.fc[0], Player: pl, On: true, ClientThreshold: threshold, BackendThreshold: threshold, Counts: &w.counts, Scratch: &w.k}, p)
	return u, s
}

// plugin is the clientbound plugin message packet a backend of u sends.
func plugin(t *testing.T, u *User, channel string, m bungeemsg.Msg) []byte {
	t.Helper()
	p := mc.AppendString(mc.AppendVarInt(nil, u.pk.CB), []byte(channel))
	p, err := bungeemsg.AppendRequest(p, m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unframe returns the packet of one whole frame in the framing of threshold.
func (w *world) unframe(f []byte, threshold int) []byte {
	w.t.Helper()
	n, hl, err := mc.SplitFrame(f, 0)
	if err != nil || n != len(f) {
		w.t.Fatalf("frame % x: %d bytes, %v", f, n, err)
	}
	if threshold < 0 {
		return f[hl:]
	}
	var k mc.Compressor
	p, err := k.Inflate(f[hl:], threshold, 1<<20)
	if err != nil {
		w.t.Fatal(err)
	}
	return append([]byte(nil), p...)
}

// answer reads a serverbound plugin message frame: its channel and answer.
func (w *world) answer(u *User, f []byte, threshold int) (string, bungeemsg.Msg) {
	w.t.Helper()
	r := mc.NewReader(w.unframe(f, threshold))
	id, _ := r.ReadVarInt()
	ch, err := r.ReadString(100)
	if err != nil || id != u.pk.SB {
		w.t.Fatalf("packet %d (want %d), channel %q, %v", id, u.pk.SB, ch, err)
	}
	m, err := bungeemsg.ParseResponse(r.Rest())
	if err != nil {
		w.t.Fatal(err)
	}
	return string(ch), m
}

func TestUserAnswers(t *testing.T) {
	for _, tc := range []struct {
		v         int32
		threshold int
		channel   string
	}{{764, 256, bungeemsg.ModernChannel}, {767, 0, bungeemsg.ModernChannel}, {340, -1, bungeemsg.LegacyChannel}, {47, 64, bungeemsg.LegacyChannel}} {
		t.Run(fmt.Sprint(tc.v), func(t *testing.T) {
			w := newWorld(t)
			u, s := w.join(alex, tc.v, 0, tc.threshold)
			w.join(steve, tc.v, 1, tc.threshold)
			if !u.Wants(true, u.pk.CB) || u.Wants(false, u.pk.CB) || u.Wants(true, u.pk.CB+1) {
				t.Fatal("Wants")
			}
			for _, q := range []struct {
				in   bungeemsg.Msg
				want bungeemsg.Msg
			}{
				{bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "ALL"}, bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "ALL", Count: 2}},
				{bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "game"}, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "game", Text: "Steve"}},
				{bungeemsg.Msg{Sub: bungeemsg.GetServers}, bungeemsg.Msg{Sub: bungeemsg.GetServers, Text: "empty, game, lobby"}},
				{bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "steve"}, bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "Steve", UUID: undashed(steve.UUID)}},
				{bungeemsg.Msg{Sub: bungeemsg.IP}, bungeemsg.Msg{Sub: bungeemsg.IP, Host: alex.IP, Port: int32(alex.Port)}},
				{bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "game"}, bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "game", Host: "::1", Port: 25566}},
			} {
				s.toBackend = nil
				if !u.Claim(plugin(t, u, tc.channel, q.in)) {
					t.Fatalf("%v not claimed", q.in.Sub)
				}
				if len(s.toBackend) != 1 {
					t.Fatalf("%v: %d frames to the backend", q.in.Sub, len(s.toBackend))
				}
				ch, got := w.answer(u, s.toBackend[0], tc.threshold)
				if ch != tc.channel || !reflect.DeepEqual(got, q.want) {
					t.Errorf("%v: answered on %q: %+v; want %+v", q.in.Sub, ch, got, q.want)
				}
			}
			if w.counts[Answered].Load() != 6 || len(s.toClient) != 0 {
				t.Errorf("answered %d, %d frames to the client", w.counts[Answered].Load(), len(s.toClient))
			}
		})
	}
}

func TestUserClaimsOnlyItsChannel(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	for _, p := range [][]byte{
		mc.AppendString(mc.AppendVarInt(nil, u.pk.CB), []byte("minecraft:brand")),
		mc.AppendString(mc.AppendVarInt(nil, u.pk.CB), []byte("bungeecord")),
		mc.AppendVarInt(nil, u.pk.CB),                                           // no channel
		append(mc.AppendVarInt(nil, u.pk.CB), 0xff),                             // a channel length that does not read
		plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.GetServer})[1:], // another packet ID
	} {
		if u.Claim(p) {
			t.Errorf("claimed % x", p)
		}
	}
	u.Moved("lobby", false) // a group with the channel off
	if u.Wants(true, u.pk.CB) || u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.GetServer})) {
		t.Error("claimed with the channel off")
	}
	if len(s.toBackend)+len(s.toClient) != 0 {
		t.Error("wrote for messages not claimed")
	}
}

func TestUserMalformed(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	bad := append(mc.AppendString(mc.AppendVarInt(nil, u.pk.CB), []byte("bungeecord:main")), 0, 9, 'P', 'l')
	if !u.Claim(bad) {
		t.Fatal("a malformed message on the channel was not claimed: it would reach the client")
	}
	unknown := append(mc.AppendString(mc.AppendVarInt(nil, u.pk.CB), []byte("BungeeCord")), 0, 3, 'F', 'o', 'o')
	fwd := plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.Forward, Server: "ALL", Channel: "x", Data: []byte{1}})
	if !u.Claim(unknown) || !u.Claim(fwd) {
		t.Fatal("not claimed")
	}
	if w.counts[Malformed].Load() != 1 || w.counts[UnknownSub].Load() != 1 || w.counts[Refused].Load() != 1 || len(s.toBackend)+len(s.toClient) != 0 || s.closed {
		t.Errorf("counts %d %d %d, writes %d, closed %v", w.counts[Malformed].Load(), w.counts[UnknownSub].Load(), w.counts[Refused].Load(), len(s.toBackend)+len(s.toClient), s.closed)
	}
	for _, want := range []string{`"outcome":"malformed"`, `"subchannel":"unknown"`, `only 2 left`, `"outcome":"refused"`, `"subchannel":"Forward"`, `"user":"Alex"`} {
		if !strings.Contains(w.log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, w.log.String())
		}
	}
}

// An answer waits for the client's stream to the backend to stand between
// frames; so does a chat message to the client (and for the relay's
// callback to end); a kick closes after its Disconnect.
func TestUserHoldsUntilBoundary(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	st, ss := w.join(steve, 764, 1, 256)
	s.mid(0, true)
	u.Claim(plugin(t, u, "bungeecord:main", bungeemsg.Msg{Sub: bungeemsg.GetServer}))
	if len(s.toBackend) != 0 {
		t.Fatal("an answer went into the middle of a frame")
	}
	w.loops[0].run() // still inside: one try after another, then dropped
	if len(s.toBackend) != 0 || w.counts[Failed].Load() != 1 || len(u.held) != 0 {
		t.Fatalf("after the retries: %d written, %d failed, %d held", len(s.toBackend), w.counts[Failed].Load(), len(u.held))
	}
	s.mid(0, false)
	u.Claim(plugin(t, u, "bungeecord:main", bungeemsg.Msg{Sub: bungeemsg.GetServer}))
	if _, m := w.answer(u, s.toBackend[0], -1); m.Server != "lobby" {
		t.Fatalf("GetServer answered %+v", m)
	}

	ss.mid(1, true)
	u.Claim(plugin(t, u, "bungeecord:main", bungeemsg.Msg{Sub: bungeemsg.Message, Player: "ALL", Text: "§ehello"}))
	if len(s.toClient)+len(ss.toClient) != 0 {
		t.Fatal("a chat message went to a client inside the relay's callback")
	}
	w.loops[0].run()
	for _, f := range w.loops[1].tasks { // Steve's loop gets the message, his stream is inside a frame
		f()
	}
	w.loops[1].tasks = nil
	if len(ss.toClient) != 0 || len(st.held) != 1 {
		t.Fatalf("Steve: %d written, %d held", len(ss.toClient), len(st.held))
	}
	ss.mid(1, false)
	w.loops[1].run()
	want := u.Player.ChatPacket("§ehello")
	if len(s.toClient) != 1 || !bytes.Equal(w.unframe(s.toClient[0], -1), want) {
		t.Errorf("Alex's chat: %q", s.toClient)
	}
	if len(ss.toClient) != 1 || !bytes.Equal(w.unframe(ss.toClient[0], 256), st.Player.ChatPacket("§ehello")) {
		t.Errorf("Steve's chat: %q", ss.toClient)
	}

	u.Claim(plugin(t, u, "bungeecord:main", bungeemsg.Msg{Sub: bungeemsg.KickPlayer, Player: "steve", Text: "bye"}))
	w.loops[1].run()
	if !ss.closed || len(ss.kicked) != 1 || !bytes.Equal(ss.kicked[0], st.Player.KickPacket("bye")) {
		t.Errorf("Steve kicked: closed %v, kicks %q", ss.closed, ss.kicked)
	}
}

func TestUserMovesAndLeaves(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	st, ss := w.join(steve, 764, 1, -1)
	u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "game"}))
	u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.ConnectOther, Player: "STEVE", Server: "lobby"}))
	u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "nowhere"}))
	u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.ConnectOther, Player: "Notch", Server: "lobby"}))
	w.loops[1].run()
	if !reflect.DeepEqual(s.sentTo, []string{"game"}) || !reflect.DeepEqual(ss.sentTo, []string{"lobby"}) {
		t.Errorf("moves asked: Alex %q, Steve %q", s.sentTo, ss.sentTo)
	}
	if w.counts[Acted].Load() != 2 || w.counts[Failed].Load() != 2 {
		t.Errorf("acted %d, failed %d", w.counts[Acted].Load(), w.counts[Failed].Load())
	}
	u.Moved("game", true)
	h := &host{d: w.d, self: u}
	if n, _ := h.Count("game"); n != 2 || h.Self().Server != "game" {
		t.Errorf("after the move: %d on game, Alex on %q", n, h.Self().Server)
	}
	st.Leave()
	if n, _ := h.Count("ALL"); n != 1 || w.d.Players() != 1 {
		t.Errorf("after Steve left: %d players (%d)", n, w.d.Players())
	}
	if _, ok := h.Find("steve"); ok {
		t.Error("Steve is still found")
	}
	w.d.network = func() (int, bool) { return 1234, true }
	if n, _ := h.Count("ALL"); n != 1234 {
		t.Errorf("the network's count: %d", n)
	}
	w.d.network = func() (int, bool) { return 0, false }
	if n, _ := h.Count("ALL"); n != 1 {
		t.Errorf("without the network: %d", n)
	}
}

func TestUserHeldBound(t *testing.T) {
	w := newWorld(t)
	u, s := w.join(alex, 764, 0, -1)
	s.mid(0, true)
	n := 0
	for u.heldLen+200 <= MaxHeldBytes {
		u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.GetServers}))
		n++
	}
	for range 10 {
		u.Claim(plugin(t, u, "BungeeCord", bungeemsg.Msg{Sub: bungeemsg.GetServers}))
	}
	if u.heldLen > MaxHeldBytes || w.counts[Failed].Load() == 0 {
		t.Errorf("held %d bytes, %d failed", u.heldLen, w.counts[Failed].Load())
	}
	s.mid(0, false)
	w.loops[0].run()
	if len(s.toBackend) < n || u.heldLen != 0 {
		t.Errorf("%d written of %d held", len(s.toBackend), n)
	}
}
