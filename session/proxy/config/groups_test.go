package config

import (
	"maps"
	"testing"
)

// TestRoutedGroups: minecraft listeners route to default_group and the
// routes' groups (checked by status), raw listeners to their own group
// (by tcp, unless a minecraft listener routes there too); a group no
// listener reaches is left out.
func TestRoutedGroups(t *testing.T) {
	cfg, _, err := Parse("proxy.yaml", []byte(`
listeners:
  - {listen: "127.0.0.1:0"}
  - {listen: "127.0.0.1:1", mode: raw, group: raw}
  - {listen: "127.0.0.1:2", mode: raw, group: both}
default_group: lobby
routes: [{hosts: [a.example], group: both}]
groups:
  lobby: {backends: [{addr: "127.0.0.1:1"}]}
  raw: {backends: [{addr: "127.0.0.1:2"}]}
  both: {backends: [{addr: "127.0.0.1:3"}]}
  idle: {backends: [{addr: "127.0.0.1:4"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ProbeKind{"lobby": ProbeStatus, "raw": ProbeTCP, "both": ProbeStatus}
	if got := cfg.RoutedGroups(); !maps.Equal(got, want) {
		t.Fatalf("RoutedGroups() = %v, want %v", got, want)
	}
	cfg.Listeners = cfg.Listeners[1:] // raw only: routes and default_group carry nothing
	want = map[string]ProbeKind{"raw": ProbeTCP, "both": ProbeTCP}
	if got := cfg.RoutedGroups(); !maps.Equal(got, want) {
		t.Fatalf("raw listeners only: RoutedGroups() = %v, want %v", got, want)
	}
}

// TestOfflineTexts: a group's offline_message stands for both texts;
// without it the status answer takes status.offline.motd, and both fall
// back to health.offline_message.
func TestOfflineTexts(t *testing.T) {
	var c Config
	c.Probes.OfflineMessage = "health"
	own := GroupConfig{OfflineMessage: "own"}
	for _, tc := range []struct {
		motd     string
		gc       GroupConfig
		msg, mot string
	}{
		{"", GroupConfig{}, "health", "health"},
		{"motd", GroupConfig{}, "health", "motd"},
		{"motd", own, "own", "own"},
		{"", own, "own", "own"},
	} {
		c.Status.Offline.MOTD = tc.motd
		if msg, motd := c.OfflineMessage(tc.gc), c.OfflineMOTD(tc.gc); msg != tc.msg || motd != tc.mot {
			t.Errorf("motd %q, group %q: message %q, MOTD %q; want %q, %q", tc.motd, tc.gc.OfflineMessage, msg, motd, tc.msg, tc.mot)
		}
	}
}
