package move

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckRefuses names why each kind of session cannot be moved, and lets
// a movable one through.
func TestCheckRefuses(t *testing.T) {
	movable := Session{Terminated: true, Protocol: 764, Player: &Player{}, Relaying: true, Framed: true}
	tests := []struct {
		name string
		edit func(*Session)
		want string // in the error; "" for none
	}{
		{"movable", func(*Session) {}, ""},
		{"transparent", func(s *Session) { s.Terminated = false }, "relayed untouched"},
		{"before 1.20.2", func(s *Session) { s.Protocol = 107 }, "protocol 107"}, // 1.9: no respawn row
		{"respawn sequence", func(s *Session) { s.Protocol = 763 }, ""},
		{"not relaying", func(s *Session) { s.Relaying = false }, "not in play"},
		{"already moving", func(s *Session) { s.Player = &Player{Move: &Move{}} }, "already being moved"},
		{"frames lost", func(s *Session) { s.Framed = false }, "lost the frames"},
		{"re-framed", func(s *Session) { s.Reframed = true }, "re-framed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := movable
			tt.edit(&s)
			err := Check(s)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Check: %v, want one saying %q", err, tt.want)
			}
			if tt.name == "before 1.20.2" && !errors.Is(err, ErrTooOld) {
				t.Fatalf("Check: %v, want ErrTooOld", err)
			}
		})
	}
}
