package mc

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUsernamePolicyDefault(t *testing.T) {
	p, err := NewUsernamePolicy("")
	if err != nil {
		t.Fatal(err)
	}
	if p.Pattern() != DefaultUsernamePattern {
		t.Errorf("Pattern() = %q, want the default", p.Pattern())
	}
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"Steve_01", true},
		{"abc", true},
		{"ABCDEFGHIJKLMNOP", true}, // 16
		{"___", true},
		{"", false},
		{"ab", false},                // too short
		{"ABCDEFGHIJKLMNOPQ", false}, // 17
		{"a\nINF x=\x1b[2J<b>", false},
		{"x\x00y", false},
		{"b\x01ob", false},
		{"b?ob", false},
		{"Stève", false},
		{"a b c", false},
		{"a-b-c", false},
		{"abc\x7f", false},
		{"\xff\xfe\xfd", false},
	} {
		if got := p.Allows([]byte(tt.name)); got != tt.ok {
			t.Errorf("Allows(%q) = %v, want %v", tt.name, got, tt.ok)
		}
		if got := ValidVanillaUsername([]byte(tt.name)); got != tt.ok {
			t.Errorf("ValidVanillaUsername(%q) = %v, want %v", tt.name, got, tt.ok)
		}
		err := p.Check([]byte(tt.name))
		if (err == nil) != tt.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrBadUsername) || ErrorReason(err) != ReasonBadUsername {
				t.Errorf("Check(%q) = %v, not ErrBadUsername", tt.name, err)
			}
			if strings.ContainsAny(err.Error(), "\n\x00\x1b\x01\x7f") || !utf8.ValidString(err.Error()) {
				t.Errorf("Check(%q) error %q carries the raw name", tt.name, err)
			}
		}
	}
}

func TestUsernamePolicyCustom(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		name    string
		ok      bool
	}{
		{`^[A-Za-z0-9_.-]{2,16}$`, "ab", true},
		{`^[A-Za-z0-9_.-]{2,16}$`, "a.b-c", true},
		{`^[A-Za-z0-9_.-]{2,16}$`, "a", false},
		{`[a-z]+`, "abc", true},
		{`[a-z]+`, "abc!", false}, // anchored: a partial match is not enough
		{`\p{L}{3,16}`, "Stève", true},
		// Control characters and invalid UTF-8 are refused whatever the pattern.
		{`(?s).+`, "a\nINF x", false},
		{`(?s).+`, "x\x00y", false},
		{`(?s).+`, "x\u0085y", false},
		{`(?s).+`, "\xff\xfe", false},
		{`(?s).+`, "any name", true},
		{`(?s).*`, "", false},
		{`(?s).+`, "ABCDEFGHIJKLMNOPQ", false}, // over MaxUsernameLen
	} {
		p, err := NewUsernamePolicy(tt.pattern)
		if err != nil {
			t.Fatalf("NewUsernamePolicy(%q): %v", tt.pattern, err)
		}
		if got := p.Allows([]byte(tt.name)); got != tt.ok {
			t.Errorf("%q: Allows(%q) = %v, want %v", tt.pattern, tt.name, got, tt.ok)
		}
	}
}

func TestUsernamePolicyBadPattern(t *testing.T) {
	for _, pattern := range []string{`[a-z`, `(?P<x>a`, `a{2000}`, strings.Repeat("a", maxUsernamePatternLen+1)} {
		if p, err := NewUsernamePolicy(pattern); err == nil {
			t.Errorf("NewUsernamePolicy(%.40q) = %v, want an error", pattern, p.Pattern())
		}
	}
}

func TestUsernamePolicyAllocs(t *testing.T) {
	custom, err := NewUsernamePolicy(`^[A-Za-z0-9_.]{3,16}$`)
	if err != nil {
		t.Fatal(err)
	}
	vanilla := DefaultUsernamePolicy()
	names := [][]byte{[]byte("Steve_01"), []byte("a\nINF x=\x1b[2J<b>"), []byte("Stève")}
	for _, p := range []*UsernamePolicy{vanilla, custom} {
		if p == custom && raceEnabled {
			continue // regexp's pooled matchers are dropped at random under -race
		}
		if a := testing.AllocsPerRun(100, func() {
			for _, n := range names {
				_ = p.Allows(n)
				_ = p.Check(names[0])
			}
		}); a != 0 {
			t.Errorf("%q: %v allocs per run, want 0", p.Pattern(), a)
		}
	}
}

// FuzzUsernamePolicy: no input panics; the default policy agrees with its
// regular expression, and no allowed name holds a control character or
// invalid UTF-8.
func FuzzUsernamePolicy(f *testing.F) {
	for _, s := range []string{"Steve_01", "ab", "a\nINF x=\x1b[2J<b>", "x\x00y", "Stève", "ABCDEFGHIJKLMNOPQ", ""} {
		f.Add([]byte(s), `^[A-Za-z0-9_]{3,16}$`)
		f.Add([]byte(s), `(?s).+`)
	}
	vanilla := DefaultUsernamePolicy()
	vanillaRE := regexp.MustCompile(DefaultUsernamePattern)
	f.Fuzz(func(t *testing.T, name []byte, pattern string) {
		if got, want := vanilla.Allows(name), vanillaRE.Match(name); got != want {
			t.Fatalf("default Allows(%q) = %v, regexp says %v", name, got, want)
		}
		p, err := NewUsernamePolicy(pattern)
		if err != nil {
			return
		}
		if !p.Allows(name) {
			if p.Check(name) == nil {
				t.Fatalf("%q: Check(%q) = nil but Allows is false", pattern, name)
			}
			return
		}
		if len(name) == 0 || len(name) > MaxUsernameLen || !utf8.Valid(name) {
			t.Fatalf("%q: allowed %q", pattern, name)
		}
		for _, r := range string(name) {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
				t.Fatalf("%q: allowed %q with control character %U", pattern, name, r)
			}
		}
	})
}

// TestUsernamePolicyOrDefault: a pattern that compiles is used; one that
// does not gives the vanilla policy, never a nil one.
func TestUsernamePolicyOrDefault(t *testing.T) {
	if p := UsernamePolicyOrDefault(`^[a-z.]{1,16}$`); !p.Allows([]byte("a.b")) {
		t.Fatalf("pattern %q refused a.b", p.Pattern())
	}
	p := UsernamePolicyOrDefault(`(`)
	if p == nil || p.Pattern() != DefaultUsernamePolicy().Pattern() || p.Allows([]byte("a.b")) {
		t.Fatalf("an invalid pattern gave %v, want the vanilla policy", p)
	}
}
