package config

import (
	"encoding/json"
	"fmt"

	"github.com/tidegate/tidegate/session/cluster/clusterconf"
)

// Secrets are redacted by type, not by key name: a configuration field
// that holds a secret is a Secret (all of it secret) or a SecretURL (a URL
// whose userinfo is secret). Both show their redacted form wherever they
// are written — fmt verbs, String, GoString, JSON and text encoding (so
// zerolog, the admin API and error messages) — and only Reveal gives the
// value, for the one place that needs it (the Redis client). They decode
// from YAML as plain strings, ${VAR} placeholders included.

// Redacted is what a secret shows in place of its value.
const Redacted = clusterconf.Redacted

// redactable is what Secret and SecretURL have in common: the configuration
// view and Hash find the secrets of a configuration by this interface.
type redactable interface {
	// Reveal returns the value itself.
	Reveal() string
	// String returns the value as it may be shown.
	String() string
}

// Secret is a configuration string that is never shown: it writes as
// REDACTED when set and as "" when not.
type Secret string

// Reveal returns the secret itself, for the code that uses it; never log
// or show what it returns.
func (s Secret) Reveal() string { return string(s) }

// String returns REDACTED, or "" when the secret is not set.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString returns the redacted form quoted, so that %#v redacts as well.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// Format writes the redacted form under every verb and flag.
func (s Secret) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String()) }

// MarshalText returns the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON returns the redacted form as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// SecretURL is a configuration URL that may carry credentials in its
// userinfo (redis://user:password@host:port/db): it writes with the
// password (or a lone user name, which may be a token) replaced by
// REDACTED, and as REDACTED altogether when it does not parse as a URL
// (see clusterconf.RedactURL).
type SecretURL string

// Reveal returns the URL with its credentials, for the client that
// connects with them; never log or show what it returns.
func (u SecretURL) Reveal() string { return string(u) }

// String returns the URL with its credentials redacted.
func (u SecretURL) String() string { return clusterconf.RedactURL(string(u)) }

// GoString returns the redacted form quoted, so that %#v redacts as well.
func (u SecretURL) GoString() string { return fmt.Sprintf("%q", u.String()) }

// Format writes the redacted form under every verb and flag.
func (u SecretURL) Format(f fmt.State, verb rune) { formatRedacted(f, verb, u.String()) }

// MarshalText returns the redacted form.
func (u SecretURL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// MarshalJSON returns the redacted form as a JSON string.
func (u SecretURL) MarshalJSON() ([]byte, error) { return json.Marshal(u.String()) }

// formatRedacted writes shown to f as fmt would write a string under verb,
// with f's flags, width and precision.
func formatRedacted(f fmt.State, verb rune, shown string) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), shown)
}
