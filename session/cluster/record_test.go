package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	since := time.UnixMilli(1_764_547_200_123)
	for _, s := range []Session{
		{Name: "Steve", UUID: "0123456789abcdef0123456789abcdef", Host: "play.example.com", Backend: "main", Subnet: "192.0.2.0/24", Since: since},
		{Name: "x", Since: since},
		{Name: "Ünïcode_Näme", Host: "h", Backend: "b", Since: since},
	} {
		got, err := ParseRecord(s.Record())
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got != s {
			t.Fatalf("round trip of %+v gave %+v", s, got)
		}
	}
}

func TestRecordNormalizes(t *testing.T) {
	s := Session{Name: "Bad\nName", UUID: "NOT-A-UUID", Host: strings.Repeat("h", 300) + "\x00", Since: time.UnixMicro(1_500_001)}
	got, err := ParseRecord(s.Record())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Bad?Name" || got.UUID != "" || len(got.Host) != maxHostBytes || got.Since.UnixMilli() != 1500 {
		t.Fatalf("normalized %+v", got)
	}
	if up := (Session{Name: "A", UUID: "0123456789ABCDEF0123456789ABCDEF"}).normalize().UUID; up != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("upper-case UUID normalized to %q", up)
	}
}

func TestParseRecordRefuses(t *testing.T) {
	for _, tc := range []struct{ rec, want string }{
		{"", "has 1 fields"},
		{"1\nsteve\n\n\nSteve\nh\nb", "has 7 fields"},
		{"1\nsteve\n\n\nSteve\nh\nb\n1\nextra", "has 9 fields"},
		{"2\nsteve\n\n\nSteve\nh\nb\n1", "format"},
		{"1\nalex\n\n\nSteve\nh\nb\n1", "does not match"},
		{"1\n\n\n\n\nh\nb\n1", "want 1 to 64 bytes"},
		{"1\nsteve\nabc\n\nSteve\nh\nb\n1", "UUID"},
		{"1\nsteve\n0123456789ABCDEF0123456789ABCDEF\n\nSteve\nh\nb\n1", "UUID"},
		{"1\nsteve\n\n\nSteve\nh\nb\n-1", "login time"},
		{"1\nsteve\n\n\nSteve\nh\nb\n+1", "login time"},
		{"1\nsteve\n\n\nSteve\nh\nb\nsoon", "login time"},
		{"1\nsteve\n\n\nSteve\nh\x01\nb\n1", "control character"},
		{"1\nsteve\n\n" + strings.Repeat("s", 65) + "\nSteve\nh\nb\n1", "subnet"},
		{"1\nsteve\n\n\nSteve\n" + strings.Repeat("h", 256) + "\nb\n1", "host or backend"},
		{strings.Repeat("x", 1025), "over 1024"},
	} {
		_, err := ParseRecord(tc.rec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRecord(%.40q) = %v, want an error with %q", tc.rec, err, tc.want)
		}
	}
}

func TestLowerName(t *testing.T) {
	if got := LowerName("NotCH_ÄÖ9"); got != "notch_ÄÖ9" {
		t.Fatalf("LowerName = %q", got)
	}
}

// FuzzParseRecord: any input is parsed or refused without panic, and what
// parses encodes back to the same record.
func FuzzParseRecord(f *testing.F) {
	f.Add((Session{Name: "Steve", UUID: "0123456789abcdef0123456789abcdef", Host: "a", Backend: "b", Subnet: "10.0.0.0/24", Since: time.UnixMilli(5)}).Record())
	f.Add("1\nsteve\n\n\nSteve\nh\nb\n1")
	f.Add("1\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, rec string) {
		s, err := ParseRecord(rec)
		if err != nil {
			return
		}
		if again := s.Record(); again != rec {
			// Leading zeros in the time are the one thing that differs.
			s2, err := ParseRecord(again)
			if err != nil || s2 != s {
				t.Fatalf("record %q parsed to %+v, which encodes to %q (%v)", rec, s, again, err)
			}
		}
	})
}
