package config

import (
	"strings"
	"testing"
)

// TestFallbackChecks: a fallback list names other groups whose logins the
// proxy completes, each once, from a group whose logins it completes.
func TestFallbackChecks(t *testing.T) {
	for _, tc := range []struct{ game, want string }{
		{"{login: offline, fallback: [lobby], backends: [{addr: \"127.0.0.1:3\"}]}", ""},
		{"{login: offline, fallback: [game], backends: [{addr: \"127.0.0.1:3\"}]}", "groups.game.fallback[0]: \"game\" is this group"},
		{"{login: offline, fallback: [nope], backends: [{addr: \"127.0.0.1:3\"}]}", "groups.game.fallback[0]: no group \"nope\""},
		{"{login: offline, fallback: [lobby, lobby], backends: [{addr: \"127.0.0.1:3\"}]}", "groups.game.fallback[1]: \"lobby\" is listed twice"},
		{"{login: offline, fallback: [plain], backends: [{addr: \"127.0.0.1:3\"}]}", "groups.game.fallback[0]: group \"plain\" relays its logins untouched"},
		{"{fallback: [lobby], backends: [{addr: \"127.0.0.1:3\"}]}", "groups.game.fallback: moving players needs the proxy to complete the login"},
	} {
		parseGame(t, tc.game, tc.want)
	}
}

// parseGame parses a configuration with the groups lobby (login: offline),
// plain (transparent) and game, whose value is game: it reports an error
// that is not want ("": none), and returns the configuration.
func parseGame(t *testing.T, game, want string) *Config {
	t.Helper()
	const groups = `
listeners: [{listen: "127.0.0.1:0"}]
default_group: game
groups:
  lobby: {login: offline, backends: [{addr: "127.0.0.1:1"}]}
  plain: {backends: [{addr: "127.0.0.1:2"}]}
`
	cfg, _, err := Parse("test.yaml", []byte(groups+"  game: "+game+"\n"))
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", game, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want %q", game, err, want)
	}
	return cfg
}
