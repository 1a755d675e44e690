package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/tidegate/tidegate/protocol/mc"
)

// MaxFaviconBytes bounds status.offline.favicon. Its base64 form goes into
// the status JSON, a string the game reads up to 32767 characters; 20 KiB of
// PNG is 27,308 characters of base64, leaving room for the rest. A 64x64
// icon is usually 2-10 KiB.
const MaxFaviconBytes = 20 << 10

// faviconSize is the favicon's width and height in pixels, as the game
// expects it.
const faviconSize = 64

// maxVersionName bounds status.offline.version_name.
const maxVersionName = 256

// checkStatus reports the problems of the status section through bad.
func (c *Config) checkStatus(bad func(path, format string, args ...any)) {
	st := &c.Status
	switch st.Protocol {
	case StatusProtocolBackend, StatusProtocolClient:
	default:
		bad("status.protocol", "%q: want backend (the backend's version object) or client (each client's own protocol number)", st.Protocol)
	}
	o := &st.Offline
	if o.MOTD != "" {
		validOfflineMessage(bad, "status.offline.motd", o.MOTD)
	}
	switch v := o.VersionName; {
	case strings.TrimSpace(v) == "":
		bad("status.offline.version_name", "%q is blank", v)
	case len(v) > maxVersionName:
		bad("status.offline.version_name", "%d bytes: want at most %d", len(v), maxVersionName)
	case !utf8.ValidString(v):
		bad("status.offline.version_name", "%q is not valid UTF-8", v)
	}
	if o.Protocol < math.MinInt32 || o.Protocol > math.MaxInt32 {
		bad("status.offline.protocol", "%d: want a protocol version number (0 for each client's own, -1 for none)", o.Protocol)
	}
	for _, n := range []struct {
		path string
		v    int
	}{{"status.offline.online", o.Online}, {"status.offline.max", o.Max}} {
		switch {
		case n.v < 0:
			bad(n.path, "%d is negative", n.v)
		case n.v > math.MaxInt32:
			bad(n.path, "%d: want at most %d", n.v, math.MaxInt32)
		}
	}
}

// readFiles reads the files the configuration names, the admin token and
// the favicon, relative to the configuration file's directory, and returns
// their problems.
func (c *Config) readFiles() []Problem {
	var ps []Problem
	if msg := c.Admin.readToken(c.dir); msg != "" {
		ps = append(ps, Problem{Path: "admin.token_file", Msg: msg})
	}
	o := &c.Status.Offline
	o.favicon = ""
	if o.Favicon == "" {
		return ps
	}
	uri, msg := loadFavicon(c.dir, o.Favicon)
	o.favicon = uri
	if msg != "" {
		ps = append(ps, Problem{Path: "status.offline.favicon", Msg: msg})
	}
	return ps
}

// FaviconURI returns the favicon as a data: URI, as Load or Parse read it
// from Favicon; "" when there is none.
func (o OfflineStatusConfig) FaviconURI() string { return o.favicon }

// statusWarnings reports through warn what in the status section is valid
// but likely not meant.
func (c *Config) statusWarnings(warn func(path, format string, args ...any)) {
	if st := c.Status; st.CacheTTL > 0 && st.Timeout >= c.Limits.HandshakeTimeout {
		warn("status.timeout", "%v is not below limits.handshake_timeout %v: a ping waiting for a slow status fetch is closed before it is answered",
			st.Timeout, c.Limits.HandshakeTimeout)
	}
}

// loadFavicon reads the PNG at name (relative to dir unless absolute) and
// returns it as a data: URI, or what is wrong with it.
func loadFavicon(dir, name string) (uri, problem string) {
	path := name
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	data, size, err := readSmallFile(path, MaxFaviconBytes)
	if err != nil {
		return "", fmt.Sprintf("reading the favicon: %v", err)
	}
	if len(data) > MaxFaviconBytes {
		return "", fmt.Sprintf("%q is %d bytes: want a 64x64 PNG of at most %d bytes (it goes into the status JSON as base64, which the game reads up to 32767 characters)",
			name, max(size, int64(len(data))), MaxFaviconBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Sprintf("%q is not a PNG image (%v): want a 64x64 PNG", name, err)
	}
	if cfg.Width != faviconSize || cfg.Height != faviconSize {
		return "", fmt.Sprintf("%q is %dx%d pixels: Minecraft shows a 64x64 PNG; scale it to 64x64", name, cfg.Width, cfg.Height)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		return "", fmt.Sprintf("%q is a damaged PNG (%v): want a 64x64 PNG", name, err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(data), ""
}

// readSmallFile reads the regular file at path, or only its first limit+1
// bytes when it is longer, and returns them and the file's size.
func readSmallFile(path string, limit int64) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	return data, fi.Size(), err
}

// IsChatJSON reports whether a configured text is a chat component in JSON
// rather than text with § codes: it starts with {.
func IsChatJSON(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "{")
}

// checkChatText returns what is wrong with a configured text that is a chat
// component in JSON, or "".
func checkChatText(text string) string {
	if !IsChatJSON(text) {
		return ""
	}
	_, err := mc.LegacyText([]byte(text))
	if err == nil {
		return ""
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "mc: "), "chat component: ")
	if !json.Valid([]byte(text)) {
		msg += " (a value starting with { is read as JSON; otherwise write text with § codes)"
	}
	return "not a valid chat component: " + msg
}
