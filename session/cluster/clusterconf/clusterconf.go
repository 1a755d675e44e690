// Package clusterconf checks the settings that name a cluster: the proxy's
// ID and the Redis URL. The cluster client and the proxy's configuration
// both apply these checks; this package keeps them apart from the client's
// runtime, so that a configuration can be checked without it.
package clusterconf

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

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
// as RedactURL gives it, and the parser's message without the URL it
// quotes, so that the text holds no credentials.
func CheckURL(raw string) string {
	_, err := redis.ParseURL(raw)
	if err == nil {
		return ""
	}
	// url.Parse's errors quote the whole URL, credentials included; what
	// it found wrong is in Err.
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Sprintf("%q: %v (want redis://host:port/db, rediss:// or unix://)", RedactURL(raw), err)
}

// Redacted is what a URL's credentials show in place of their value.
const Redacted = "REDACTED"

// RedactURL returns raw with the credentials of its userinfo replaced by
// Redacted: the password, or the user name when it comes alone (a token, in
// some schemes). A raw that does not parse as a URL, or that has opaque
// text where the host goes, gives Redacted, since where its secret is
// cannot be told; "" stays "".
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || (u.Scheme == "" && strings.Contains(raw, "@")) {
		return Redacted
	}
	if u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	} else {
		u.User = url.User(Redacted)
	}
	return u.String()
}
