package mc

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// DefaultUsernamePattern is the names a vanilla server accepts: 3 to 16
// ASCII letters, digits and underscores.
const DefaultUsernamePattern = `^[A-Za-z0-9_]{3,16}$`

// maxUsernamePatternLen bounds a configured pattern, so that a mistake
// cannot make a huge automaton.
const maxUsernamePatternLen = 1024

// UsernamePolicy decides which Login Start names are let through. Whatever
// its pattern, a name must be 1 to MaxUsernameLen bytes of valid UTF-8
// without control characters, so that no name can forge a log line, a
// terminal escape or a key; the pattern then must match the whole name.
// The default pattern is checked without the regexp engine. A policy is
// immutable and safe for concurrent use.
type UsernamePolicy struct {
	pattern string
	re      *regexp.Regexp // nil for DefaultUsernamePattern
}

// NewUsernamePolicy compiles pattern, a regular expression (RE2 syntax)
// that the whole name must match; "" stands for DefaultUsernamePattern.
func NewUsernamePolicy(pattern string) (*UsernamePolicy, error) {
	if pattern == "" || pattern == DefaultUsernamePattern {
		return &UsernamePolicy{pattern: DefaultUsernamePattern}, nil
	}
	if len(pattern) > maxUsernamePatternLen {
		return nil, fmt.Errorf("mc: username pattern of %d bytes is longer than %d", len(pattern), maxUsernamePatternLen)
	}
	// Compiled alone first so that an error quotes the operator's text.
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, fmt.Errorf("mc: username pattern %q: %w", pattern, err)
	}
	// Anchored around the whole, so that an unanchored pattern cannot let
	// through any name that merely contains a match.
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("mc: username pattern %q: %w", pattern, err)
	}
	return &UsernamePolicy{pattern: pattern, re: re}, nil
}

// DefaultUsernamePolicy returns the policy of DefaultUsernamePattern.
func DefaultUsernamePolicy() *UsernamePolicy {
	return &UsernamePolicy{pattern: DefaultUsernamePattern}
}

// Pattern returns the policy's regular expression.
func (p *UsernamePolicy) Pattern() string { return p.pattern }

// Allows reports whether name may log in. It does not allocate.
func (p *UsernamePolicy) Allows(name []byte) bool {
	if len(name) == 0 || len(name) > MaxUsernameLen {
		return false
	}
	if p.re == nil {
		return ValidVanillaUsername(name)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	if !utf8.Valid(name) || !p.re.Match(name) {
		return false
	}
	// C1 controls (U+0080 to U+009F) act as terminal escapes too.
	for _, r := range string(name) {
		if r >= 0x80 && r <= 0x9f {
			return false
		}
	}
	return true
}

// Check returns nil if the policy allows name, or an error wrapping
// ErrBadUsername that quotes the name (Go syntax, so control characters
// show escaped) and the pattern. Only a refusal allocates.
func (p *UsernamePolicy) Check(name []byte) error {
	if p.Allows(name) {
		return nil
	}
	return fmt.Errorf("mc: login start: username %q does not match %q: %w", name, p.pattern, ErrBadUsername)
}

// ValidVanillaUsername reports whether name matches DefaultUsernamePattern:
// 3 to 16 bytes, each an ASCII letter, digit or underscore.
func ValidVanillaUsername(name []byte) bool {
	if len(name) < 3 || len(name) > 16 {
		return false
	}
	for _, c := range name {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		default:
			return false
		}
	}
	return true
}

// UsernamePolicyOrDefault compiles pattern as NewUsernamePolicy does, for
// a pattern a configuration check has already accepted; were it not, the
// vanilla policy, the strictest, stands in.
func UsernamePolicyOrDefault(pattern string) *UsernamePolicy {
	if p, err := NewUsernamePolicy(pattern); err == nil {
		return p
	}
	return DefaultUsernamePolicy()
}
