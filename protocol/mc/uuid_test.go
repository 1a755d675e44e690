package mc

import (
	"strings"
	"testing"
)

func TestOfflineUUID(t *testing.T) {
	tests := []struct{ name, want string }{
		{"Notch", "b50ad385-829d-3141-a216-7e7d7539ba7f"},
		{"jeb_", ""},
		{"", ""},
		{strings.Repeat("x", 50), ""},
		{strings.Repeat("x", 51), ""},
		{strings.Repeat("y", 1000), ""},
	}
	for _, tt := range tests {
		u := OfflineUUID([]byte(tt.name))
		s := string(AppendUUID(nil, u, true))
		if tt.want != "" && s != tt.want {
			t.Errorf("OfflineUUID(%q) = %s, want %s", tt.name, s, tt.want)
		}
		if u[6]>>4 != 3 || u[8]>>6 != 2 {
			t.Errorf("OfflineUUID(%q) = %s: wrong version or variant", tt.name, s)
		}
	}
	// The buffered and streaming paths agree at the boundary.
	a := OfflineUUID([]byte(strings.Repeat("x", 50)))
	b := OfflineUUID([]byte(strings.Repeat("x", 51)))
	if a == b {
		t.Error("distinct names share a UUID")
	}
}

func TestUUIDFormatParse(t *testing.T) {
	u := OfflineUUID([]byte("Notch"))
	if got := string(AppendUUID([]byte("id="), u, false)); got != "id=b50ad385829d3141a2167e7d7539ba7f" {
		t.Errorf("AppendUUID undashed = %s", got)
	}
	for _, s := range []string{
		"b50ad385-829d-3141-a216-7e7d7539ba7f",
		"b50ad385829d3141a2167e7d7539ba7f",
		"B50AD385-829D-3141-A216-7E7D7539BA7F",
	} {
		got, ok := ParseUUID([]byte(s))
		if !ok || got != u {
			t.Errorf("ParseUUID(%q) = %x, %v", s, got, ok)
		}
	}
	for _, s := range []string{
		"",
		"b50ad385-829d-3141-a216-7e7d7539ba7",
		"b50ad385829d3141a2167e7d7539ba7f0",
		"b50ad385+829d-3141-a216-7e7d7539ba7f",
		"b50ad385-829d-3141-a216-7e7d7539ba-f",
		"b50ad385829d3141a2167e7d7539ba-f",
		"g50ad385829d3141a2167e7d7539ba7f",
		"-50ad385829d3141a2167e7d7539ba7f---",
	} {
		if got, ok := ParseUUID([]byte(s)); ok || got != ([16]byte{}) {
			t.Errorf("ParseUUID(%q) = %x, %v; want failure", s, got, ok)
		}
	}
}
