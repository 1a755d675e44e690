package config

// BungeeChannel is whether a group's backends can ask the proxy through
// the BungeeCord plugin channel ("BungeeCord" before 1.13,
// "bungeecord:main" from 1.13: Connect, PlayerCount, GetServers, ...),
// as server plugins written for BungeeCord and Velocity do
// (session/proxy/bungeechan). It applies to the groups whose logins the
// proxy completes (login: offline or online): those are the sessions
// whose packets the proxy reads. Velocity's bungee-plugin-message-channel
// is on by default too.
type BungeeChannel string

const (
	// BungeeChannelOn: the proxy answers the channel, and its messages
	// from the backend do not reach the client.
	BungeeChannelOn BungeeChannel = "on"
	// BungeeChannelOff: the channel's messages go to the client like any
	// other plugin message.
	BungeeChannelOff BungeeChannel = "off"
)

// BungeeChannelOn reports whether the proxy answers the BungeeCord
// channel for group g's sessions: its bungee_channel is on (the default)
// and the proxy completes its logins.
func (g GroupConfig) BungeeChannelOn() bool {
	return g.BungeeChannel != BungeeChannelOff && g.LoginMode() != LoginTransparent
}

// checkBungeeChannel reports a bungee_channel that is neither on nor off
// under path p.
func checkBungeeChannel(bad func(path, format string, args ...any), p string, g GroupConfig) {
	switch g.BungeeChannel {
	case "", BungeeChannelOn, BungeeChannelOff:
	default:
		bad(p+".bungee_channel", "%q: want on or off", string(g.BungeeChannel))
	}
}
