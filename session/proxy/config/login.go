package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Login is who completes a group's logins.
type Login string

// Login modes.
const (
	// LoginTransparent relays the login untouched: the backend logs the
	// player in (the default).
	LoginTransparent Login = "transparent"
	// LoginOffline makes the proxy complete the client's login itself, with
	// the offline-mode UUID of its name, and log the backend in offline
	// carrying the player's identity (groups.NAME.forwarding).
	LoginOffline Login = "offline"
	// LoginOnline authenticates the player at the proxy (online_mode:), then
	// logs the backend in as LoginOffline does, with the authenticated
	// identity.
	LoginOnline Login = "online"
)

// ForwardVelocity is Velocity's modern forwarding: the backend asks for
// the player's identity with a Login Plugin Request and the proxy answers
// it signed with the group's forwarding secret. It needs a login mode other
// than transparent.
const ForwardVelocity Forwarding = "velocity"

// ThresholdBackend is compression_threshold's default: the client is told
// the backend's threshold, so that frames pass unchanged.
const ThresholdBackend = "backend"

// maxSecretBytes bounds a forwarding secret file.
const maxSecretBytes = 4096

// LoginMode returns the group's login mode, LoginTransparent when it sets none.
func (g GroupConfig) LoginMode() Login {
	if g.Login == "" {
		return LoginTransparent
	}
	return g.Login
}

// ForwardingOf returns the forwarding of group g: its own, else the
// top-level forwarding.
func (c *Config) ForwardingOf(g GroupConfig) Forwarding {
	if g.Forwarding != "" {
		return g.Forwarding
	}
	return c.Forwarding
}

// ClientThreshold returns the compression threshold the proxy announces to
// the clients of a terminated login: backend is true for the default, the
// backend's own threshold; otherwise threshold is a number of bytes, or -1
// for off. The setting must have passed the checks.
func (g GroupConfig) ClientThreshold() (threshold int, backend bool) {
	switch g.CompressionThreshold {
	case "", ThresholdBackend:
		return 0, true
	case "off":
		return -1, false
	}
	n, _ := strconv.Atoi(g.CompressionThreshold)
	return n, false
}

// checkLogin reports the problems of group g's login settings under path p.
func (c *Config) checkLogin(bad func(path, format string, args ...any), p string, g GroupConfig) {
	auth := g.LoginMode()
	switch auth {
	case LoginTransparent, LoginOffline, LoginOnline:
	default:
		bad(p+".login", "%q: want transparent, offline or online", g.Login)
	}
	switch fw := c.ForwardingOf(g); fw {
	case ForwardNone, ForwardBungeeCord:
		if g.ForwardingKeyFile != "" || g.ForwardingSecret != "" {
			bad(p+".forwarding_key_file", "only velocity forwarding takes a secret (forwarding is %s)", fw)
		}
	case ForwardVelocity:
		if auth == LoginTransparent {
			bad(p+".forwarding", "velocity forwarding needs the proxy to complete the login: set login: offline")
		}
		switch {
		case g.ForwardingKeyFile == "" && g.ForwardingSecret == "":
			bad(p+".forwarding_key_file", "velocity forwarding needs the file holding its secret (or forwarding_secret)")
		case g.ForwardingKeyFile != "" && g.ForwardingSecret != "" && !g.secretFromFile:
			bad(p+".forwarding_secret", "set the secret once: forwarding_secret or forwarding_key_file, not both")
		}
	default:
		bad(p+".forwarding", "%q: want none, bungeecord or velocity", g.Forwarding)
	}
	switch t := g.CompressionThreshold; t {
	case "", ThresholdBackend, "off":
	default:
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > maxThreshold {
			bad(p+".compression_threshold", "%q: want backend, off or a size in bytes from 0 to %d", t, maxThreshold)
		}
	}
	if g.CompressionThreshold != "" && auth == LoginTransparent {
		bad(p+".compression_threshold", "only a login the proxy completes (login: offline) has a threshold of its own")
	}
}

// maxThreshold is the largest compression threshold: a frame's length.
const maxThreshold = 1<<21 - 1

// readSecrets reads each group's forwarding_key_file, relative to the
// configuration file's directory, and returns its problems. The secret is
// the file's content without surrounding white space, as Velocity's
// forwarding.secret.
func (c *Config) readSecrets() []Problem {
	var ps []Problem
	for name, g := range c.Groups {
		if g.ForwardingKeyFile != "" && g.ForwardingSecret == "" {
			secret, msg := readSecretFile(c.dir, g.ForwardingKeyFile)
			if msg != "" {
				ps = append(ps, Problem{Path: "groups." + name + ".forwarding_key_file", Msg: msg})
			}
			g.ForwardingSecret, g.secretFromFile = secret, true
			c.Groups[name] = g
		}
	}
	return ps
}

// readSecretFile reads a secret from name (relative to dir unless
// absolute); problem says what is wrong with it, without its content.
func readSecretFile(dir, name string) (secret Secret, problem string) {
	path := name
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Sprintf("reading the secret: %v", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxSecretBytes {
		return "", fmt.Sprintf("%s: want a regular file of at most %d bytes (%d bytes, mode %s)", path, maxSecretBytes, st.Size(), st.Mode())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Sprintf("reading the secret: %v", err)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", fmt.Sprintf("%s is empty: the secret must not be", path)
	}
	return Secret(data), ""
}
