package cluster

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Session is what a proxy publishes of one logged-in player.
type Session struct {
	// Name is the user name of Login Start, as the client sent it.
	Name string
	// UUID is the player's UUID as 32 lower-case hex digits, or "" when
	// Login Start did not carry one (before 1.19.3).
	UUID string
	// Host is the virtual host the player connected to.
	Host string
	// Backend is where the session is: the group's name at login, then
	// the group a move took it to (Client.Moved).
	Backend string
	// Subnet is the client's subnet for the network-wide session cap, ""
	// when that cap is off.
	Subnet string
	// Since is when the login was accepted.
	Since time.Time
}

// Bounds of a record's fields, in bytes, and of a whole record.
const (
	maxNameBytes   = 64 // 16 characters of up to 4 bytes
	maxHostBytes   = 255
	maxSubnetBytes = 64
	maxRecordBytes = 1024
	recordFields   = 8
	recordVersion  = "1"
)

// LowerName is the form of a user name that duplicate logins are keyed by:
// ASCII letters lower-cased (as the Lua scripts in Redis do), other bytes
// as they are.
func LowerName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// clean bounds a field to n bytes and replaces the bytes the record format
// reserves (control characters, the separator among them) with '?'.
func clean(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// normalize returns s as it is stored: fields bounded and cleaned, the UUID
// dropped unless it is 32 hex digits, Since in whole milliseconds.
func (s Session) normalize() Session {
	s.Name = clean(s.Name, maxNameBytes)
	s.Host = clean(s.Host, maxHostBytes)
	s.Backend = clean(s.Backend, maxHostBytes)
	s.Subnet = clean(s.Subnet, maxSubnetBytes)
	s.UUID = strings.ToLower(s.UUID)
	if !validUUID(s.UUID) {
		s.UUID = ""
	}
	s.Since = time.UnixMilli(s.Since.UnixMilli())
	return s
}

func validUUID(u string) bool {
	if len(u) != 32 {
		return false
	}
	_, err := hex.DecodeString(u)
	return err == nil && strings.ToLower(u) == u
}

// Record encodes a normalized session as it is stored in Redis: eight
// fields separated by newlines, "1" (the format), the lower-cased name, the
// UUID, the subnet, the name, the host, the backend and the login time in
// Unix milliseconds. The scripts in Redis read the first four.
func (s Session) Record() string {
	s = s.normalize()
	var b strings.Builder
	b.Grow(64 + len(s.Name)*2 + len(s.Host) + len(s.Backend) + len(s.Subnet))
	for i, f := range []string{recordVersion, LowerName(s.Name), s.UUID, s.Subnet, s.Name, s.Host, s.Backend} {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f)
	}
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(s.Since.UnixMilli(), 10))
	return b.String()
}

// ParseRecord decodes a record read from Redis (see Session.Record). It
// refuses, naming the field, a record over 1 KiB, one with another number
// of fields or format, a lower-cased name that does not match the name, a
// malformed UUID or login time, and fields past their bounds.
func ParseRecord(rec string) (Session, error) {
	if len(rec) > maxRecordBytes {
		return Session{}, fmt.Errorf("cluster: session record of %d bytes, over %d", len(rec), maxRecordBytes)
	}
	f := strings.SplitN(rec, "\n", recordFields+1)
	if len(f) != recordFields {
		return Session{}, fmt.Errorf("cluster: session record %.64q has %d fields, want %d", rec, len(f), recordFields)
	}
	if f[0] != recordVersion {
		return Session{}, fmt.Errorf("cluster: session record format %.16q, want %s", f[0], recordVersion)
	}
	s := Session{Name: f[4], UUID: f[2], Subnet: f[3], Host: f[5], Backend: f[6]}
	switch {
	case s.Name == "" || len(s.Name) > maxNameBytes:
		return Session{}, fmt.Errorf("cluster: session record name %.80q: want 1 to %d bytes", s.Name, maxNameBytes)
	case f[1] != LowerName(s.Name):
		return Session{}, fmt.Errorf("cluster: session record key name %.80q does not match name %q", f[1], s.Name)
	case s.UUID != "" && !validUUID(s.UUID):
		return Session{}, fmt.Errorf("cluster: session record UUID %.40q: want 32 lower-case hex digits or nothing", s.UUID)
	case len(s.Subnet) > maxSubnetBytes:
		return Session{}, fmt.Errorf("cluster: session record subnet of %d bytes, over %d", len(s.Subnet), maxSubnetBytes)
	case len(s.Host) > maxHostBytes || len(s.Backend) > maxHostBytes:
		return Session{}, fmt.Errorf("cluster: session record host or backend over %d bytes", maxHostBytes)
	}
	for _, field := range f[1:7] {
		if clean(field, len(field)) != field {
			return Session{}, fmt.Errorf("cluster: session record field %.80q has a control character", field)
		}
	}
	ms, err := strconv.ParseInt(f[7], 10, 64)
	if err != nil || ms < 0 || strings.TrimLeft(f[7], "0123456789") != "" {
		return Session{}, fmt.Errorf("cluster: session record login time %.24q is not Unix milliseconds", f[7])
	}
	s.Since = time.UnixMilli(ms)
	return s, nil
}
