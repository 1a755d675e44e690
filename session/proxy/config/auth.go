package config

import (
	"net/url"
	"time"
)

// DefaultSessionServer is Mojang's session server, auth.session_server's
// default.
const DefaultSessionServer = "https://sessionserver.mojang.com"

// AuthConfig is how the proxy authenticates the logins of groups with
// login: online: one key pair and one pool of session server calls for the
// whole proxy.
type AuthConfig struct {
	// SessionServer is the session server's base URL (http or https).
	SessionServer string `yaml:"session_server"`
	// PreventProxyConnections passes the client's address to hasJoined, so
	// that the session server refuses a player whose join came from another
	// address (Velocity's prevent-client-proxy-connections).
	PreventProxyConnections bool `yaml:"prevent_proxy_connections"`
	// Timeout bounds one login's authentication, its wait for a worker
	// included; EncryptionTimeout bounds the client's Encryption Response.
	Timeout           time.Duration `yaml:"timeout"`
	EncryptionTimeout time.Duration `yaml:"encryption_timeout"`
	// Workers is how many session server calls run at once, Queue how many
	// more logins may wait for one.
	Workers int `yaml:"workers"`
	Queue   int `yaml:"queue"`
}

// defaultAuthConfig is online_mode: as a file that leaves it out gets it.
func defaultAuthConfig() AuthConfig {
	return AuthConfig{SessionServer: DefaultSessionServer, Timeout: 5 * time.Second, EncryptionTimeout: 5 * time.Second, Workers: 32, Queue: 1024}
}

// OnlineGroups reports whether any group has login: online.
func (c *Config) OnlineGroups() bool {
	for _, g := range c.Groups {
		if g.LoginMode() == LoginOnline {
			return true
		}
	}
	return false
}

// checkAuth reports the problems of online_mode:.
func (c *Config) checkAuth(bad func(path, format string, args ...any)) {
	a := c.Auth
	if u, err := url.Parse(a.SessionServer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		bad("online_mode.session_server", "%q: want an http or https base URL without a query", a.SessionServer)
	}
	if a.Timeout <= 0 {
		bad("online_mode.timeout", "%v must be positive", a.Timeout)
	}
	if a.EncryptionTimeout <= 0 {
		bad("online_mode.encryption_timeout", "%v must be positive", a.EncryptionTimeout)
	}
	if a.Workers < 1 || a.Workers > 1024 {
		bad("online_mode.workers", "%d: want 1 to 1024", a.Workers)
	}
	if a.Queue < 1 || a.Queue > 1<<20 {
		bad("online_mode.queue", "%d: want 1 to 1048576", a.Queue)
	}
}
