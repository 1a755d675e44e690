package config

import "testing"

// TestBungeeChannel: bungee_channel is on unless set off, takes on or off
// (unquoted too, which YAML 1.1 would read as booleans), and is on only
// for groups whose logins the proxy completes.
func TestBungeeChannel(t *testing.T) {
	for _, tc := range []struct {
		game string
		on   bool
		want string
	}{
		{`{login: offline, backends: [{addr: "127.0.0.1:3"}]}`, true, ""},
		{`{login: offline, bungee_channel: on, backends: [{addr: "127.0.0.1:3"}]}`, true, ""},
		{`{login: online, bungee_channel: "on", backends: [{addr: "127.0.0.1:3"}]}`, true, ""},
		{`{login: offline, bungee_channel: off, backends: [{addr: "127.0.0.1:3"}]}`, false, ""},
		{`{backends: [{addr: "127.0.0.1:3"}]}`, false, ""},
		{`{login: offline, bungee_channel: yes, backends: [{addr: "127.0.0.1:3"}]}`, false, `groups.game.bungee_channel: "yes": want on or off`},
		{`{login: offline, bungee_channel: true, backends: [{addr: "127.0.0.1:3"}]}`, false, `groups.game.bungee_channel: "true": want on or off`},
	} {
		if cfg := parseGame(t, tc.game, tc.want); tc.want == "" && cfg != nil && cfg.Groups["game"].BungeeChannelOn() != tc.on {
			t.Errorf("%s: on = %v, want %v", tc.game, !tc.on, tc.on)
		}
	}
}
