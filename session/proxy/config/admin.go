package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Token files: the smallest token taken (a shorter one is guessed), and
// how much of the file is read.
const (
	MinTokenLength = 16
	maxTokenBytes  = 4096
)

// SecretFile is the name of a file whose content is a secret (the admin
// token): the name is shown as it is, wherever it is written, and the
// content, which Load reads into a Secret, never. It is a type of its own,
// beside Secret and SecretURL, so that a key that names a secret's file is
// seen to have been thought about.
type SecretFile string

// Reveal returns the file name.
func (f SecretFile) Reveal() string { return string(f) }

// String returns the file name: it is not the secret.
func (f SecretFile) String() string { return string(f) }

// Token returns the token read from TokenFile, "" when none is set.
func (a AdminConfig) Token() Secret { return a.token }

// check reports through bad what is wrong in the admin section.
func (a AdminConfig) check(bad func(path, format string, args ...any)) {
	for i, h := range a.AllowedHosts {
		path := fmt.Sprintf("admin.allowed_hosts[%d]", i)
		switch _, _, err := net.SplitHostPort(h); {
		case strings.TrimSpace(h) == "":
			bad(path, "is empty: want a host name or address, as a Host header names it")
		case strings.ContainsAny(h, " \t/@*"):
			bad(path, "%q: want a host name or address (no scheme, path, user or wildcard)", h)
		case err == nil:
			bad(path, "%q has a port: want the name alone (the port is not compared)", h)
		}
	}
}

// readToken reads the token from TokenFile, relative to dir unless
// absolute, and returns what is wrong with it ("" when it is read or
// none is set).
func (a *AdminConfig) readToken(dir string) string {
	a.token = ""
	if a.TokenFile == "" {
		return ""
	}
	path := string(a.TokenFile)
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	data, _, err := readSmallFile(path, maxTokenBytes)
	if err != nil {
		return fmt.Sprintf("reading the token: %v", err)
	}
	if fi, err := os.Stat(path); err != nil {
		return fmt.Sprintf("reading the token: %v", err)
	} else if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Sprintf("%s has mode %#o: other users may read or change the token; chmod 600 %s (owned by the user the proxy runs as)", path, perm, path)
	}
	token := strings.TrimSpace(string(data))
	switch {
	case len(data) > maxTokenBytes:
		return fmt.Sprintf("%s is over %d bytes: want one token on one line", path, maxTokenBytes)
	case token == "":
		return fmt.Sprintf("%s is empty: write a token of at least %d characters in it (e.g. openssl rand -hex 32 > %s)", path, MinTokenLength, path)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return fmt.Sprintf("%s holds spaces, several lines or characters outside printable ASCII: want one token on one line, as an Authorization header carries it", path)
	case len(token) < MinTokenLength:
		return fmt.Sprintf("%s holds a token of %d characters: want at least %d (e.g. openssl rand -hex 32 > %s)", path, len(token), MinTokenLength, path)
	}
	a.token = Secret(token)
	return ""
}
