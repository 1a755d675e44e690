package fdlimit

import (
	"math"
	"strings"
	"testing"
)

// The holders of the three tools that check their sessions.
var (
	stormClient = Holder{Name: "this client", PerSession: 1, Reserve: 64}
	upgradeTool = Holder{Name: "this tool", PerSession: 2, Holds: "its client socket and the echo backend's", Reserve: 64}
	upgradeProx = Holder{Name: "the proxy", PerSession: 2, Reserve: 200}
	playersProx = Holder{Name: "a proxy", PerSession: 2, Holds: "client and backend", Reserve: 704}
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sessions int
		limit    uint64
		holders  []Holder
		want     []string // in the error; none: no error
	}{
		{"storm fits", 1000, 1064, []Holder{stormClient}, nil},
		{"storm one over", 1001, 1064, []Holder{stormClient},
			[]string{"1001 sessions need about 1065 descriptors in this client, 1 per session + 64, over the descriptor limit of 1064: at most 1000 sessions fit; fix it"}},
		{"upgrade fits both", 9000, 20000, []Holder{upgradeTool, upgradeProx}, nil},
		{"upgrade: the proxy runs out first", 9950, 20000, []Holder{upgradeTool, upgradeProx},
			[]string{"about 20100 descriptors in the proxy, 2 per session + 200", "at most 9900 sessions fit"}},
		{"upgrade: both run out, the first is named", 10000, 20000, []Holder{upgradeTool, upgradeProx},
			[]string{"about 20064 descriptors in this tool, 2 per session (its client socket and the echo backend's) + 64", "at most 9900 sessions fit"}},
		{"players", 9648, 20000, []Holder{playersProx}, nil},
		{"players one over", 9649, 20000, []Holder{playersProx}, []string{"in a proxy, 2 per session (client and backend) + 704", "at most 9648 sessions fit"}},
		{"the reserve alone is over", 1, 100, []Holder{playersProx}, []string{"at most 0 sessions fit"}},
		{"no limit", 1 << 30, math.MaxUint64, []Holder{stormClient, playersProx}, nil},
		{"no holders", 1 << 30, 1, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.sessions, tc.limit, "fix it", tc.holders...)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("%v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range append(tc.want, "; fix it") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestMost(t *testing.T) {
	for _, tc := range []struct {
		limit   uint64
		holders []Holder
		want    int
	}{
		{1064, []Holder{stormClient}, 1000},
		{20000, []Holder{upgradeTool, upgradeProx}, 9900},
		{20000, []Holder{upgradeProx, upgradeTool}, 9900},
		{20001, []Holder{playersProx}, 9648},
		{10, []Holder{playersProx}, 0},
		{math.MaxUint64, []Holder{{PerSession: 1}}, math.MaxInt64},
		{100, []Holder{{Name: "per session nothing", Reserve: 10}}, 0},
	} {
		if got := Most(tc.limit, tc.holders...); got != tc.want {
			t.Errorf("Most(%d, %+v) = %d, want %d", tc.limit, tc.holders, got, tc.want)
		}
	}
}

// TestReadAndRaise: the limit read is a real one, and after Raise the soft
// limit is the hard one.
func TestReadAndRaise(t *testing.T) {
	lim, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if lim.Soft == 0 || lim.Soft > lim.Hard {
		t.Fatalf("limit %+v: want 0 < soft <= hard", lim)
	}
	raised, err := Raise()
	if err != nil {
		t.Fatal(err)
	}
	if raised.Soft != raised.Hard || raised.Hard != lim.Hard {
		t.Fatalf("after Raise %+v, before %+v: want soft = hard, the hard limit unchanged", raised, lim)
	}
	if again, err := Read(); err != nil || again != raised {
		t.Fatalf("Read after Raise: %+v, %v; want %+v", again, err, raised)
	}
}
