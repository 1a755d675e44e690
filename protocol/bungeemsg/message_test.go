package bungeemsg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// java builds a payload as a plugin's ByteArrayDataOutput does: strings
// with writeUTF, int32 with writeInt, uint16 with writeShort, []byte as is.
func java(t testing.TB, parts ...any) []byte {
	t.Helper()
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			var err error
			if b, err = AppendUTF(b, v); err != nil {
				t.Fatal(err)
			}
		case int32:
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		case uint16:
			b = binary.BigEndian.AppendUint16(b, v)
		case []byte:
			b = append(b, v...)
		default:
			t.Fatalf("java: %T", p)
		}
	}
	return b
}

func TestParseRequest(t *testing.T) {
	data := []byte{1, 2, 3}
	for _, tc := range []struct {
		name string
		in   []byte
		want Msg
	}{
		{"Connect", java(t, "Connect", "lobby"), Msg{Sub: Connect, Server: "lobby"}},
		{"ConnectOther", java(t, "ConnectOther", "Alex", "game"), Msg{Sub: ConnectOther, Player: "Alex", Server: "game"}},
		{"IP", java(t, "IP"), Msg{Sub: IP}},
		{"IPOther", java(t, "IPOther", "Alex"), Msg{Sub: IPOther, Player: "Alex"}},
		{"PlayerCount", java(t, "PlayerCount", "ALL"), Msg{Sub: PlayerCount, Server: All}},
		{"PlayerList", java(t, "PlayerList", "game"), Msg{Sub: PlayerList, Server: "game"}},
		{"GetServers", java(t, "GetServers"), Msg{Sub: GetServers}},
		{"GetServer", java(t, "GetServer"), Msg{Sub: GetServer}},
		{"GetPlayerServer", java(t, "GetPlayerServer", "Alex"), Msg{Sub: GetPlayerServer, Player: "Alex"}},
		{"UUID", java(t, "UUID"), Msg{Sub: UUID}},
		{"UUIDOther", java(t, "UUIDOther", "Alex"), Msg{Sub: UUIDOther, Player: "Alex"}},
		{"ServerIP", java(t, "ServerIP", "lobby"), Msg{Sub: ServerIP, Server: "lobby"}},
		{"Message", java(t, "Message", "ALL", "§ahi"), Msg{Sub: Message, Player: All, Text: "§ahi"}},
		{"MessageRaw", java(t, "MessageRaw", "Alex", `{"text":"hi"}`), Msg{Sub: MessageRaw, Player: "Alex", Text: `{"text":"hi"}`}},
		{"KickPlayer", java(t, "KickPlayer", "Alex", "bye"), Msg{Sub: KickPlayer, Player: "Alex", Text: "bye"}},
		{"KickPlayerRaw", java(t, "KickPlayerRaw", "Alex", `"bye"`), Msg{Sub: KickPlayerRaw, Player: "Alex", Text: `"bye"`}},
		{"Forward", java(t, "Forward", "ONLINE", "my:chan", uint16(3), data), Msg{Sub: Forward, Server: "ONLINE", Channel: "my:chan", Data: data}},
		{"ForwardToPlayer", java(t, "ForwardToPlayer", "Alex", "c", uint16(0)), Msg{Sub: ForwardToPlayer, Player: "Alex", Channel: "c", Data: []byte{}}},
		{"trailing bytes are ignored", java(t, "GetServer", "extra", int32(7)), Msg{Sub: GetServer}},
	} {
		got, err := ParseRequest(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseRequest(% x) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
}

func TestParseRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason error
		says   string
		in     []byte
	}{
		{"empty", ErrShort, "subchannel: length of 2 bytes at offset 0, only 0 left", nil},
		{"one byte", ErrShort, "only 1 left", []byte{0}},
		{"subchannel cut", ErrShort, "subchannel: string of 7 bytes at offset 2, only 3 left", []byte{0, 7, 'C', 'o', 'n'}},
		{"unknown", ErrUnknownSub, `unknown subchannel "Teleport"`, java(t, "Teleport", "x")},
		{"case matters", ErrUnknownSub, `"connect"`, java(t, "connect", "lobby")},
		{"Connect without server", ErrShort, "Connect: server: length", java(t, "Connect")},
		{"server cut", ErrShort, "Connect: server: string of 5 bytes at offset 11, only 2 left", java(t, "Connect", []byte{0, 5, 'l', 'o'})},
		{"bad UTF", ErrBadUTF, "PlayerCount: server: string at offset 15: byte 0xf0 at offset 1", java(t, "PlayerCount", []byte{0, 2, 'a', 0xf0})},
		{"ConnectOther without server", ErrShort, "ConnectOther: server", java(t, "ConnectOther", "Alex")},
		{"Forward data cut", ErrShort, "Forward: data: data of 9 bytes", java(t, "Forward", "ALL", "c", uint16(9), []byte{1})},
		{"Forward negative length", ErrBadLength, "Forward: data: length 0x8000 is a negative short", java(t, "Forward", "ALL", "c", uint16(0x8000))},
		{"too long", ErrTooLong, "payload of 1048577 bytes is over 1048576", make([]byte, MaxPayload+1)},
	} {
		got, err := ParseRequest(tc.in)
		if !is(err, tc.reason) || err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: ParseRequest = %+v, %v; want reason %s saying %q", tc.name, got, err, tc.reason, tc.says)
		}
		if tc.reason != ErrUnknownSub && !reflect.DeepEqual(got, Msg{}) {
			t.Errorf("%s: ParseRequest returned %+v with its error", tc.name, got)
		}
	}
	_, err := ParseRequest(java(t, "Nope"))
	if ErrorReason(fmt.Errorf("outer: %w", err)) != "unknown_sub" || ErrorReason(errors.New("x")) != "other" || ErrorReason(nil) != "" {
		t.Errorf("ErrorReason of a wrapped %v", err)
	}
}

// is reports whether err is of kind want, or nil when want is.
func is(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

// full is a Msg with every field set, for the round trips: each table keeps
// only its subchannel's fields.
func full(s Sub) Msg {
	return Msg{Sub: s, Server: "lobby-1", Player: "Ünïcødé_😀", Text: "a, b\x00c", Channel: "my:chan",
		Data: []byte{0, 1, 2}, UUID: "069a79f444e94726a5befca90e38aaf5", Host: "2001:db8::1", Count: -7, Port: 25565}
}

// keep zeroes m's fields that the subchannel's table does not carry.
func keep(m Msg, fs []field) Msg {
	out := Msg{Sub: m.Sub}
	for _, f := range fs {
		if p := out.str(f); p != nil {
			*p = *m.str(f)
			continue
		}
		switch f {
		case fData:
			out.Data = m.Data
		case fCount:
			out.Count = m.Count
		default:
			out.Port = m.Port
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	answered := 0
	for _, s := range Subs() {
		want := keep(full(s), requestFields[s])
		b, err := AppendRequest([]byte("prefix"), full(s))
		if err != nil || !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("AppendRequest(%s) = % x, %v", s, b, err)
		}
		if got, err := ParseRequest(b[len("prefix"):]); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("request %s: parsed %+v, %v; want %+v", s, got, err, want)
		}
		if !s.Answers() {
			if _, err := AppendResponse(nil, full(s)); !errors.Is(err, ErrNoResponse) {
				t.Errorf("AppendResponse(%s) = %v, want %s", s, err, ErrNoResponse)
			}
			continue
		}
		answered++
		want = keep(full(s), responseFields[s])
		b, err = AppendResponse(nil, full(s))
		if err != nil {
			t.Fatalf("AppendResponse(%s): %v", s, err)
		}
		if got, err := ParseResponse(b); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("response %s: parsed %+v, %v; want %+v", s, got, err, want)
		}
	}
	if answered != 10 {
		t.Errorf("%d subchannels answered, want 10", answered)
	}
}

// The answers byte for byte as a plugin reads them with readUTF, readInt
// and readShort (Velocity's and BungeeCord's are the same).
func TestResponseBytes(t *testing.T) {
	for _, tc := range []struct {
		m    Msg
		want []byte
	}{
		{Msg{Sub: PlayerCount, Server: All, Count: 42}, java(t, "PlayerCount", "ALL", int32(42))},
		{Msg{Sub: PlayerList, Server: "game", Text: JoinNames([]string{"Alex", "Steve"})}, java(t, "PlayerList", "game", "Alex, Steve")},
		{Msg{Sub: GetServers, Text: JoinNames([]string{"lobby", "game"})}, java(t, "GetServers", "lobby, game")},
		{Msg{Sub: GetServer, Server: "lobby"}, java(t, "GetServer", "lobby")},
		{Msg{Sub: GetPlayerServer, Player: "Alex", Server: "game"}, java(t, "GetPlayerServer", "Alex", "game")},
		{Msg{Sub: UUID, UUID: "069a79f444e94726a5befca90e38aaf5"}, java(t, "UUID", "069a79f444e94726a5befca90e38aaf5")},
		{Msg{Sub: UUIDOther, Player: "Alex", UUID: "00"}, java(t, "UUIDOther", "Alex", "00")},
		{Msg{Sub: IP, Host: "192.0.2.7", Port: 51234}, java(t, "IP", "192.0.2.7", int32(51234))},
		{Msg{Sub: IPOther, Player: "Alex", Host: "192.0.2.7", Port: 1}, java(t, "IPOther", "Alex", "192.0.2.7", int32(1))},
		{Msg{Sub: ServerIP, Server: "lobby", Host: "10.0.0.1", Port: 65535}, java(t, "ServerIP", "lobby", "10.0.0.1", uint16(65535))},
	} {
		got, err := AppendResponse(nil, tc.m)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("AppendResponse(%+v) = % x, %v; want % x", tc.m, got, err, tc.want)
		}
	}
}

func TestAppendErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      Msg
		resp   bool
		reason error
	}{
		{"unknown", Msg{}, false, ErrUnknownSub},
		{"out of range", Msg{Sub: numSubs + 3}, false, ErrUnknownSub},
		{"long list", Msg{Sub: PlayerList, Server: "g", Text: strings.Repeat("Alex, ", 12000)}, true, ErrTooLong},
		{"port", Msg{Sub: ServerIP, Port: 70000}, true, ErrBadField},
		{"negative port", Msg{Sub: ServerIP, Port: -1}, true, ErrBadField},
		{"data", Msg{Sub: Forward, Data: make([]byte, MaxData+1)}, false, ErrTooLong},
	} {
		dst := []byte("keep")
		var got []byte
		var err error
		if tc.resp {
			got, err = AppendResponse(dst, tc.m)
		} else {
			got, err = AppendRequest(dst, tc.m)
		}
		if !is(err, tc.reason) || string(got) != "keep" {
			t.Errorf("%s: appended %q, %v; want reason %s and nothing appended", tc.name, got, err, tc.reason)
		}
	}
}

func TestChannelsAndNames(t *testing.T) {
	if Channel(340) != LegacyChannel || Channel(393) != ModernChannel || Channel(767) != ModernChannel {
		t.Error("Channel: wrong name for 1.12.2, 1.13 or 1.21")
	}
	if !IsChannel("BungeeCord") || !IsChannel("bungeecord:main") || IsChannel("bungeecord") || IsChannel("minecraft:brand") {
		t.Error("IsChannel")
	}
	for _, s := range Subs() {
		if SubOf(s.String()) != s {
			t.Errorf("SubOf(%q) = %v", s.String(), SubOf(s.String()))
		}
	}
	if Sub(200).String() != "unknown" || SubOf("unknown") != SubUnknown {
		t.Error("unknown subchannels")
	}
	if got := SplitNames(JoinNames([]string{"a", "b"})); !reflect.DeepEqual(got, []string{"a", "b"}) || SplitNames("") != nil {
		t.Errorf("SplitNames: %q", got)
	}
}
