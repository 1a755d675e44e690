package inspect

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/testbytes"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/proxy/reframe"
)

// sink collects what a stream forwards.
type sink struct{ b []byte }

func (s *sink) Write(b []byte) error { s.b = append(s.b, b...); return nil }

// user claims the packets of the IDs in want (in any state when st is
// nil) with verdict, and records what it was offered.
type user struct {
	want    map[State][]int32
	verdict Verdict
	claimed [][]byte
	states  []State
}

func (u *user) Wants(st State, id int32) bool {
	for _, w := range u.want[st] {
		if w == id {
			return true
		}
	}
	return false
}

func (u *user) Claim(f Frame) Verdict {
	u.claimed = append(u.claimed, bytes.Clone(f.Packet))
	u.states = append(u.states, f.State)
	return u.verdict
}

// harness is a stream fed in reads, as a connection's input: what a walk
// does not consume stays for the next.
type harness struct {
	l     Loop[int]
	s     *Stream
	out   sink
	fs    mc.FrameCounter
	n     atomic.Int64
	in    []byte
	z     mc.Compressor
	re    reframe.Direction
	err   error
	ended User
}

func newHarness(t testing.TB, v int32, threshold int, u User) *harness {
	t.Helper()
	ids, ok := IDsOf(v)
	if !ok {
		t.Fatalf("no IDs for protocol %d", v)
	}
	h := &harness{}
	if !h.l.Start(1, h, ids, threshold, u) {
		t.Fatal("Start refused a user")
	}
	h.s = h.l.Get(1)
	return h
}

func (h *harness) feed(b []byte) {
	h.in = append(h.in, b...)
	if h.s.stopped {
		h.in = h.in[:0]
		return
	}
	out := Out{Client: &h.out, S2C: &h.fs, Bytes: &h.n, Frames: &h.n, Reframe: h.re}
	n, err := h.l.walk(h.s, h.in, &out, &h.z)
	if err != nil && h.err == nil {
		h.err = err
	}
	if h.s.stopper != nil {
		h.ended, h.s.stopper = h.s.stopper, nil
	}
	if err != nil || h.s.stopped {
		n = len(h.in)
	}
	h.in = h.in[:copy(h.in, h.in[n:])]
}

func framed(th int, packets ...[]byte) []byte { return testbytes.MCFrames(th, packets...) }

// noise is n bytes that do not deflate much.
func noise(n int) string { return string(testbytes.Patterned(n, uint64(n))) }

func packet(id int32, data string) []byte { return append(mc.AppendVarInt(nil, id), data...) }

// TestWalkClaimsAtEverySplit: a stream of play frames with a Disconnect
// in the middle, cut into two reads at every byte, plain and compressed:
// what comes before the Disconnect reaches the client exactly once and
// unchanged, the Disconnect goes to the user whole and inflated, and
// nothing after it is forwarded.
func TestWalkClaimsAtEverySplit(t *testing.T) {
	disc := packet(0x40, string(mc.AppendString(nil, []byte(`{"text":"`+strings.Repeat("bye ", 40)+`"}`))))
	for _, th := range []int{-1, 64} {
		before := framed(th, packet(0x02, "chat"), packet(0x21, strings.Repeat("chunk", 100)), packet(0x00, "ka"))
		stream := append(append(bytes.Clone(before), framed(th, disc)...), framed(th, packet(0x02, "after"))...)
		for cut := 0; cut <= len(stream); cut++ {
			u := &user{want: map[State][]int32{Play: {0x40}}, verdict: DropRest}
			h := newHarness(t, 47, th, u)
			h.feed(stream[:cut])
			h.feed(stream[cut:])
			if h.err != nil || !bytes.Equal(h.out.b, before) || len(u.claimed) != 1 || !bytes.Equal(u.claimed[0], disc) || h.ended != u {
				t.Fatalf("threshold %d, cut at %d: err %v, forwarded %d bytes (want %d), claimed %d, ended %v", th, cut, h.err, len(h.out.b), len(before), len(u.claimed), h.ended)
			}
			if p := h.fs.Position(); p.Remaining != 0 || p.Shift != 0 {
				t.Fatalf("cut at %d: the client's stream stands inside a frame: %+v", cut, p)
			}
		}
	}
}

// TestWalkHoldsOnlyWhatMayBeClaimed: a frame cut by the end of the input
// is forwarded as far as it goes when its ID is one no user wants, held
// whole in the input when it is one a user wants or not readable yet.
func TestWalkHoldsOnlyWhatMayBeClaimed(t *testing.T) {
	big := packet(0x21, noise(3000))
	disc := packet(0x40, noise(3000))
	for _, tc := range []struct {
		name     string
		th       int
		frame    []byte
		cut      int
		held     bool
		reframed bool
	}{
		{"other, plain", -1, framed(-1, big), 10, false, false},
		{"disconnect, plain", -1, framed(-1, disc), 10, true, false},
		{"only its length", -1, framed(-1, big), 1, true, false},
		{"other, compressed", 64, framed(64, big), 60, false, false},
		{"disconnect, compressed", 64, framed(64, disc), 60, true, false},
		{"zlib header only", 64, framed(64, big), 6, true, false},
		{"other, re-framed", 64, framed(64, big), 60, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &user{want: map[State][]int32{Play: {0x40}}, verdict: Drop}
			h := newHarness(t, 47, tc.th, u)
			if tc.reframed {
				h.re = reframe.Clientbound(tc.th, -1)
			}
			h.feed(tc.frame[:tc.cut])
			if held := len(h.in) == tc.cut && len(h.out.b) == 0; held != tc.held || h.err != nil {
				t.Fatalf("held %t (input %d, forwarded %d), want %t; err %v", held, len(h.in), len(h.out.b), tc.held, h.err)
			}
			h.feed(tc.frame[tc.cut:])
			if h.err != nil || len(h.in) != 0 {
				t.Fatalf("err %v, %d bytes left", h.err, len(h.in))
			}
			claimed := len(u.claimed) == 1
			if wantClaim := bytes.Equal(tc.frame, framed(tc.th, disc)); claimed != wantClaim {
				t.Fatalf("claimed %d frames, want the Disconnect only", len(u.claimed))
			}
			if !claimed && !tc.reframed && !bytes.Equal(h.out.b, tc.frame) {
				t.Fatalf("forwarded %d bytes, want the frame's %d unchanged", len(h.out.b), len(tc.frame))
			}
			if tc.reframed {
				if want := framed(-1, big); !bytes.Equal(h.out.b, want) {
					t.Fatalf("re-framed to %d bytes, want %d (uncompressed)", len(h.out.b), len(want))
				}
			}
		})
	}
}

// TestWalkFollowsTheConfigurationState: from 1.20.2 a stream starts in
// configuration, Finish Configuration leads to play and Start
// Configuration back; a user's IDs count in their state only, and Drop
// takes one frame out of the stream.
func TestWalkFollowsTheConfigurationState(t *testing.T) {
	ids, _ := IDsOf(764)
	u := &user{want: map[State][]int32{Configuration: {ids.ConfigPlugin, ids.ConfigDisconnect}, Play: {ids.PlayPlugin}}, verdict: Drop}
	h := newHarness(t, 764, -1, u)
	stream := [][]byte{
		packet(ids.ConfigPlugin, "in config"),    // claimed
		packet(ids.FinishConfiguration, ""),      // to play
		packet(ids.ConfigPlugin, "spawn entity"), // the same ID in play: forwarded
		packet(ids.PlayPlugin, "in play"),        // claimed
		packet(ids.StartConfiguration, ""),       // back to configuration
		packet(ids.ConfigDisconnect, "kick"),     // claimed
	}
	h.feed(framed(-1, stream...))
	if want := framed(-1, stream[1], stream[2], stream[4]); !bytes.Equal(h.out.b, want) || h.err != nil {
		t.Fatalf("forwarded % x, want % x (%v)", h.out.b, want, h.err)
	}
	if len(u.states) != 3 || u.states[0] != Configuration || u.states[1] != Play || u.states[2] != Configuration || h.s.State() != Configuration {
		t.Fatalf("claims in states %v, stream in %v", u.states, h.s.State())
	}
	if n := h.fs.Count(nil); n != 0 || h.n.Load() == 0 {
		t.Fatalf("counters: %d", h.n.Load())
	}
}

// TestWalkViolations: a frame length past the protocol's limit, a
// compressed frame whose header or zlib stream does not read, are errors
// (ErrFrame) after what came before them was forwarded.
func TestWalkViolations(t *testing.T) {
	good := framed(64, packet(0x02, "ok"))
	for _, tc := range []struct {
		name string
		bad  []byte
	}{
		{"length past the limit", []byte{0x80, 0x80, 0x80, 0x80, 0x01}},
		{"data length past 8 MiB", append([]byte{5}, mc.AppendVarInt(nil, 1<<24)...)},
		{"corrupt zlib", []byte{5, 0x50, 0xde, 0xad, 0xbe, 0xef}},
		{"stream too short for an ID", append([]byte{3, 0x50}, 0x78, 0x9c)},
		{"empty after data length", []byte{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 47, 64, &user{want: map[State][]int32{Play: {0x40}}})
			h.feed(append(bytes.Clone(good), tc.bad...))
			if !errors.Is(h.err, ErrFrame) || !bytes.Equal(h.out.b, good) {
				t.Fatalf("err %v, forwarded % x; want ErrFrame after % x", h.err, h.out.b, good)
			}
		})
	}
}

// TestStart: a stream needs a user; a Start for another backend keeps the
// users and starts the walk anew, one for the same backend (a move that
// failed) changes nothing.
func TestStart(t *testing.T) {
	var l Loop[int]
	ids, _ := IDsOf(765)
	if l.Start(1, "a", ids, -1) || l.Get(1) != nil {
		t.Fatal("a stream without users")
	}
	u := &user{}
	l.Start(1, "a", ids, -1, u)
	s := l.Get(1)
	s.state, s.rest = Play, 7
	if !l.Start(1, "a", ids, -1) || s.rest != 7 || s.state != Play {
		t.Fatalf("the same backend again: the stream was reset: %+v", s)
	}
	s.stopped = true
	if !l.Start(1, "b", ids, 64) || l.Get(1) != s || s.rest != 0 || s.stopped || s.state != Configuration || len(s.Users()) != 1 {
		t.Fatalf("restarted stream %+v", s)
	}
	if _, ok := IDsOf(4); ok {
		t.Fatal("IDs for protocol 4")
	}
	l.Stop(1)
	if l.Get(1) != nil {
		t.Fatal("stopped stream still there")
	}
}

// TestWalkAllocatesNothing: a steady stream of plain and compressed play
// frames, none claimed, costs no allocation.
func TestWalkAllocatesNothing(t *testing.T) {
	var in []byte
	for i := range 32 {
		in = append(in, framed(64, packet(int32(i), strings.Repeat("p", 20+i*10)))...)
	}
	h := newHarness(t, 47, 64, &user{want: map[State][]int32{Play: {0x40}}})
	out := Out{Client: &h.out, S2C: &h.fs, Bytes: &h.n, Frames: &h.n}
	h.out.b = make([]byte, 0, 1<<20)
	if allocs := testing.AllocsPerRun(100, func() {
		h.out.b = h.out.b[:0]
		if n, err := h.l.walk(h.s, in, &out, &h.z); n != len(in) || err != nil {
			t.Fatalf("walked %d of %d: %v", n, len(in), err)
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per walk, want 0", allocs)
	}
}

// FuzzWalk: any backend stream, in any reads, at any threshold: no
// panic; without claims what is forwarded is the input unchanged (all of
// it when no user wants anything, all but a held frame when one wants
// every ID); nothing is held past the frame limit.
func FuzzWalk(f *testing.F) {
	f.Add(framed(64, packet(0x40, "bye"), packet(0x21, strings.Repeat("z", 300))), int16(64), uint16(3), true)
	f.Add([]byte{0x80, 0x80, 0x80, 0x80}, int16(-1), uint16(1), false)
	f.Add(framed(-1, packet(0x02, "a")), int16(-1), uint16(0), true)
	f.Fuzz(func(t *testing.T, in []byte, th int16, cut uint16, all bool) {
		want := map[State][]int32{}
		if all {
			var every []int32
			for id := range int32(256) {
				every = append(every, id)
			}
			want[Play] = every
		}
		h := newHarness(t, 47, int(max(th, -1)), &user{want: want, verdict: Forward})
		c := min(int(cut), len(in))
		h.feed(in[:c])
		h.feed(in[c:])
		if len(h.in) > mc.MaxFrameLength+mc.MaxFrameHeaderLen {
			t.Fatalf("%d bytes held", len(h.in))
		}
		if h.err == nil && !bytes.Equal(append(bytes.Clone(h.out.b), h.in...), in) {
			t.Fatalf("forwarded % x and held % x of % x", h.out.b, h.in, in)
		}
	})
}
