package bungeechan

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidegate/tidegate/protocol/bungeemsg"
)

// fakeHost is a network of two servers and three players, recording what
// is asked of it.
type fakeHost struct {
	calls []string
	fail  error
}

var (
	alex  = Player{Name: "Alex", UUID: [16]byte{0x06, 0x9a, 0x79, 0xf4, 15: 0xf5}, IP: "192.0.2.7", Port: 51234, Server: "lobby"}
	steve = Player{Name: "Steve", UUID: [16]byte{1, 2, 3}, IP: "2001:db8::9", Port: 40000, Server: "game"}
	herob = Player{Name: "Herobrine", UUID: [16]byte{9}, IP: "198.51.100.1", Port: 1, Server: "game"}
)

func (f *fakeHost) Self() Player      { return alex }
func (f *fakeHost) Servers() []string { return []string{"lobby", "game"} }
func (f *fakeHost) ServerAddr(s string) (string, int, bool) {
	switch s {
	case "lobby":
		return "10.0.0.1", 25565, true
	case "game":
		return "::1", 25566, true
	}
	return "", 0, false
}
func (f *fakeHost) Count(s string) (int, bool) { n, ok := f.Names(s); return len(n), ok }
func (f *fakeHost) Names(s string) ([]string, bool) {
	switch s {
	case bungeemsg.All:
		return []string{"Alex", "Herobrine", "Steve"}, true
	case "lobby":
		return []string{"Alex"}, true
	case "game":
		return []string{"Herobrine", "Steve"}, true
	}
	return nil, false
}
func (f *fakeHost) Find(name string) (Player, bool) {
	for _, p := range []Player{alex, steve, herob} {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Player{}, false
}
func (f *fakeHost) do(what string, args ...any) error {
	f.calls = append(f.calls, fmt.Sprint(append([]any{what}, args...)...))
	return f.fail
}
func (f *fakeHost) Send(p, s string) error { return f.do("send ", p, " ", s) }
func (f *fakeHost) Chat(p, t string) error { return f.do("chat ", p, " ", t) }
func (f *fakeHost) Kick(p, r string) error { return f.do("kick ", p, " ", r) }

func req(t *testing.T, m bungeemsg.Msg) []byte {
	t.Helper()
	b, err := bungeemsg.AppendRequest(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHandle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      bungeemsg.Msg
		outcome Outcome
		answer  *bungeemsg.Msg
		calls   []string
	}{
		{"Connect", bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "game"}, Acted, nil, []string{"send Alex game"}},
		{"ConnectOther", bungeemsg.Msg{Sub: bungeemsg.ConnectOther, Player: "Steve", Server: "lobby"}, Acted, nil, []string{"send Steve lobby"}},
		{"IP", bungeemsg.Msg{Sub: bungeemsg.IP}, Answered, &bungeemsg.Msg{Sub: bungeemsg.IP, Host: "192.0.2.7", Port: 51234}, nil},
		{"IPOther", bungeemsg.Msg{Sub: bungeemsg.IPOther, Player: "steve"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.IPOther, Player: "Steve", Host: "2001:db8::9", Port: 40000}, nil},
		{"IPOther nobody", bungeemsg.Msg{Sub: bungeemsg.IPOther, Player: "Notch"}, Unanswered, nil, nil},
		{"PlayerCount ALL", bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "ALL"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "ALL", Count: 3}, nil},
		{"PlayerCount game", bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "game"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "game", Count: 2}, nil},
		{"PlayerCount no such server", bungeemsg.Msg{Sub: bungeemsg.PlayerCount, Server: "nope"}, Unanswered, nil, nil},
		{"PlayerList ALL", bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL", Text: "Alex, Herobrine, Steve"}, nil},
		{"PlayerList game", bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "game"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "game", Text: "Herobrine, Steve"}, nil},
		{"GetServers", bungeemsg.Msg{Sub: bungeemsg.GetServers}, Answered, &bungeemsg.Msg{Sub: bungeemsg.GetServers, Text: "lobby, game"}, nil},
		{"GetServer", bungeemsg.Msg{Sub: bungeemsg.GetServer}, Answered, &bungeemsg.Msg{Sub: bungeemsg.GetServer, Server: "lobby"}, nil},
		{"GetPlayerServer", bungeemsg.Msg{Sub: bungeemsg.GetPlayerServer, Player: "HEROBRINE"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.GetPlayerServer, Player: "Herobrine", Server: "game"}, nil},
		{"UUID", bungeemsg.Msg{Sub: bungeemsg.UUID}, Answered, &bungeemsg.Msg{Sub: bungeemsg.UUID, UUID: "069a79f40000000000000000000000f5"}, nil},
		{"UUIDOther", bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "Steve"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "Steve", UUID: "01020300000000000000000000000000"}, nil},
		{"UUIDOther nobody", bungeemsg.Msg{Sub: bungeemsg.UUIDOther, Player: "x"}, Unanswered, nil, nil},
		{"ServerIP", bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "game"}, Answered, &bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "game", Host: "::1", Port: 25566}, nil},
		{"ServerIP no such server", bungeemsg.Msg{Sub: bungeemsg.ServerIP, Server: "x"}, Unanswered, nil, nil},
		{"Message ALL", bungeemsg.Msg{Sub: bungeemsg.Message, Player: "ALL", Text: "§ahi"}, Acted, nil, []string{"chat ALL §ahi"}},
		{"MessageRaw", bungeemsg.Msg{Sub: bungeemsg.MessageRaw, Player: "Steve", Text: `{"text":"hi","color":"red"}`}, Acted, nil, []string{"chat Steve §chi"}},
		{"MessageRaw not JSON", bungeemsg.Msg{Sub: bungeemsg.MessageRaw, Player: "Steve", Text: `{"text":`}, Failed, nil, nil},
		{"KickPlayer", bungeemsg.Msg{Sub: bungeemsg.KickPlayer, Player: "Steve", Text: "bye"}, Acted, nil, []string{"kick Steve bye"}},
		{"KickPlayerRaw", bungeemsg.Msg{Sub: bungeemsg.KickPlayerRaw, Player: "Steve", Text: `"bye"`}, Acted, nil, []string{"kick Steve bye"}},
		{"Forward", bungeemsg.Msg{Sub: bungeemsg.Forward, Server: "ALL", Channel: "c", Data: []byte{1}}, Refused, nil, nil},
		{"ForwardToPlayer", bungeemsg.Msg{Sub: bungeemsg.ForwardToPlayer, Player: "Steve", Channel: "c"}, Refused, nil, nil},
	} {
		h := &fakeHost{}
		r := Handle(h, req(t, tc.in), []byte("dst"))
		if r.Outcome != tc.outcome || !reflect.DeepEqual(h.calls, tc.calls) {
			t.Errorf("%s: outcome %v (%v), calls %q; want %v, %q", tc.name, r.Outcome, r.Err, h.calls, tc.outcome, tc.calls)
		}
		if (r.Err != nil) != (tc.outcome >= Failed) {
			t.Errorf("%s: outcome %v with error %v", tc.name, r.Outcome, r.Err)
		}
		if tc.answer == nil {
			if r.Answer != nil {
				t.Errorf("%s: answered % x", tc.name, r.Answer)
			}
			continue
		}
		got, err := bungeemsg.ParseResponse(r.Answer)
		if err != nil || !reflect.DeepEqual(got, *tc.answer) {
			t.Errorf("%s: answer %+v, %v; want %+v", tc.name, got, err, *tc.answer)
		}
	}
}

func TestHandleBadInput(t *testing.T) {
	h := &fakeHost{}
	for _, tc := range []struct {
		name    string
		in      []byte
		outcome Outcome
		err     error
	}{
		{"empty", nil, Malformed, bungeemsg.ErrShort},
		{"cut", req(t, bungeemsg.Msg{Sub: bungeemsg.ConnectOther, Player: "Steve"})[:14], Malformed, bungeemsg.ErrShort},
		{"unknown", req(t, bungeemsg.Msg{Sub: bungeemsg.GetServer})[:2], Malformed, bungeemsg.ErrShort},
		{"unknown subchannel", []byte{0, 3, 'F', 'o', 'o'}, UnknownSub, bungeemsg.ErrUnknownSub},
		{"bad utf", []byte{0, 1, 0xff}, Malformed, bungeemsg.ErrBadUTF},
	} {
		r := Handle(h, tc.in, nil)
		if r.Outcome != tc.outcome || !errors.Is(r.Err, tc.err) || r.Answer != nil {
			t.Errorf("%s: %v, %v, % x; want %v, %v", tc.name, r.Outcome, r.Err, r.Answer, tc.outcome, tc.err)
		}
	}
	if len(h.calls) != 0 {
		t.Errorf("bad input acted: %q", h.calls)
	}
	h.fail = errors.New("no such server")
	if r := Handle(h, req(t, bungeemsg.Msg{Sub: bungeemsg.Connect, Server: "x"}), nil); r.Outcome != Failed || r.Err != h.fail {
		t.Errorf("a failed Connect: %v, %v", r.Outcome, r.Err)
	}
}

// A PlayerList too long for writeUTF is not answered, and says why.
func TestHandleAnswerTooLong(t *testing.T) {
	r := Handle(&longHost{}, req(t, bungeemsg.Msg{Sub: bungeemsg.PlayerList, Server: "ALL"}), nil)
	if r.Outcome != Failed || !errors.Is(r.Err, bungeemsg.ErrTooLong) || r.Answer != nil {
		t.Errorf("%v, %v, %d bytes", r.Outcome, r.Err, len(r.Answer))
	}
}

type longHost struct{ fakeHost }

func (longHost) Names(string) ([]string, bool) {
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("player_%07d", i)
	}
	return names, true
}

func TestSplitPort(t *testing.T) {
	for in, want := range map[string]struct {
		h string
		p int
	}{"10.0.0.1:25565": {"10.0.0.1", 25565}, "[::1]:25566": {"::1", 25566}, "mc.example:1": {"mc.example", 1},
		"nohost": {"nohost", 0}, "h:99999": {"h", 0}, "h:x": {"h", 0}} {
		if h, p := splitPort(in); h != want.h || p != want.p {
			t.Errorf("splitPort(%q) = %q, %d; want %q, %d", in, h, p, want.h, want.p)
		}
	}
}
