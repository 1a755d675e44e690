// Package clusterconf checks the settings that name a cluster: the proxy's
// ID and the Redis URL. The cluster client and the proxy's configuration
// both apply these checks; this package keeps them apart from the client's
// runtime, so that a configuration can be checked without it.
package clusterconf

import (
	"fmt"
	"net/url"
	"regexp"

	"github.com/redis/go-redis/v9"
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckID returns what is wrong with a proxy ID, or "".
func CheckID(id string) string {
	if !idPattern.MatchString(id) {
		return fmt.Sprintf("%q: want 1 to 64 letters, digits, '.', '_' or '-'", id)
	}
	return ""
}

// CheckURL returns what is wrong with a Redis URL, or "". The URL is shown
// with its password redacted.
func CheckURL(raw string) string {
	shown := raw
	if u, err := url.Parse(raw); err == nil {
		shown = u.Redacted()
	}
	if _, err := redis.ParseURL(raw); err != nil {
		return fmt.Sprintf("%q: %v (want redis://host:port/db, rediss:// or unix://)", shown, err)
	}
	return ""
}
