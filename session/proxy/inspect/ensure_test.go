package inspect

import (
	"slices"
	"testing"
)

type fakeUser struct{ name string }

func (*fakeUser) Wants(State, int32) bool { return false }
func (*fakeUser) Claim(Frame) Verdict     { return Forward }

// TestEnsure: Ensure starts a stream with its user, adds a user the stream
// lacks to the ones it kept, adds none twice, and refuses past MaxUsers;
// a call for another backend starts the stream anew, one for the same goes on.
func TestEnsure(t *testing.T) {
	var l Loop[int]
	a, b := &fakeUser{"a"}, &fakeUser{"b"}
	ids, _ := IDsOf(764)
	if !l.Ensure(1, "b1", ids, -1, a) || !slices.Equal(l.Get(1).Users(), []User{a}) {
		t.Fatalf("a new stream: %v", l.Get(1))
	}
	l.Get(1).state, l.Get(1).rest = Play, 7
	if !l.Ensure(1, "b1", ids, 64, b) || !slices.Equal(l.Get(1).Users(), []User{a, b}) || l.Get(1).rest != 7 {
		t.Fatalf("b added, the same backend going on: %v, rest %d", l.Get(1).Users(), l.Get(1).rest)
	}
	if !l.Ensure(1, "b2", ids, 64, b) || !slices.Equal(l.Get(1).Users(), []User{a, b}) {
		t.Fatalf("another backend: %v", l.Get(1).Users())
	}
	if s := l.Get(1); s.rest != 0 || s.threshold != 64 || s.state != Configuration {
		t.Errorf("not started anew: rest %d, threshold %d, state %v", s.rest, s.threshold, s.state)
	}
	if !l.Ensure(1, "b1", ids, 64, a) || len(l.Get(1).Users()) != 2 {
		t.Errorf("a added twice: %v", l.Get(1).Users())
	}
	for i := 2; i < MaxUsers; i++ {
		l.Ensure(1, "b1", ids, 64, &fakeUser{})
	}
	if l.Ensure(1, "b1", ids, 64, &fakeUser{"over"}) || len(l.Get(1).Users()) != MaxUsers {
		t.Errorf("past MaxUsers: %d users", len(l.Get(1).Users()))
	}
}
