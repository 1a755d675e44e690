package proxy

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/tidegate/tidegate/internal/testkit/waitfor"
	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestSessionSize: a session is held for as long as its player plays;
// what only logging in needs belongs in preRelay.
func TestSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > 192 {
		t.Fatalf("session is %d bytes, want at most 192 (one size class): put state a relaying session does not need in preRelay", n)
	}
	if n := unsafe.Sizeof(mc.FrameCounter{}); n > 8 {
		t.Fatalf("mc.FrameCounter is %d bytes, want at most 8 (two per session)", n)
	}
}

// TestRelayingSessionDropsLoginState: a session that relays holds no
// preRelay (handshake, route, status reply), whether its handshake was
// rewritten for the backend (which reads that state when the backend
// opens) or not; one still logging in has it.
func TestRelayingSessionDropsLoginState(t *testing.T) {
	be := startBackend(t, mcbackend.Config{})
	p, addr := startProxy(t, fmt.Sprintf(`
listeners: [{listen: "127.0.0.1:0"}]
routes: [{hosts: [rewritten.example.com], group: main, rewrite_host: "localhost"}]
default_group: main
groups: {main: {backends: [{addr: %q}]}}
`, be))
	for _, host := range []string{"rewritten.example.com", "localhost"} {
		c := dial(t, addr)
		login17(t, c, host, "Steve")
		echo(t, c, []byte("after "+host))
	}
	waiting := dial(t, addr) // a handshake, and no Login Start yet
	if _, err := waiting.Write(handshake(mc.Protocol1_7_10, "localhost", mc.NextStateLogin)); err != nil {
		t.Fatal(err)
	}
	local := waiting.LocalAddr().String()
	waitfor.For(t, "2 relaying sessions and 1 logging in", func() bool {
		relaying, logging := 0, 0
		eachSession(p, func(s *session) {
			switch {
			case s.state == stRelay && s.pre == nil:
				relaying++
			case s.state == stRelay:
				t.Errorf("relaying session of %s keeps its preRelay", s.username)
			case s.state == stLoginStart && s.pre != nil && s.client.RemoteAddr().String() == local:
				logging++
			}
		})
		return relaying == 2 && logging == 1
	})
}

// eachSession calls f on its loop for every session whose client is open.
func eachSession(p *Proxy, f func(*session)) { p.onEachSession(f) }

// oldScanner is the frame scanner as it was before it was 8 bytes, whose
// hand-over form (scannerState) processes of either kind exchange.
type oldScanner struct {
	remaining int
	length    uint32
	shift     uint8
	broken    bool
}

func (f *oldScanner) scan(b []byte) {
	for len(b) > 0 && !f.broken {
		if f.remaining > 0 {
			k := min(f.remaining, len(b))
			f.remaining -= k
			b = b[k:]
			continue
		}
		c := b[0]
		b = b[1:]
		f.length |= uint32(c&0x7f) << f.shift
		f.shift += 7
		if c&0x80 != 0 {
			if f.shift >= 21 {
				f.broken = true
			}
			continue
		}
		f.remaining, f.length, f.shift = int(f.length), 0, 0
	}
}

// TestScannerHandOverForm: cut anywhere in a stream (inside a body, inside
// a length prefix), the scanner's hand-over state is what the older scanner
// reported there, and a scanner made from it (here or from the older one's
// state) counts the rest of the stream as one scanner over all of it does.
func TestScannerHandOverForm(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 5, 130, 1, 70000, 2} {
		stream = append(append(stream, mc.AppendVarInt(nil, int32(n))...), make([]byte, n)...)
	}
	var whole mc.FrameCounter
	want := whole.Count(stream)
	step := 1
	for cut := 0; cut <= len(stream); cut += step {
		if cut > 300 && cut < len(stream)-300 {
			step = 97 // inside the long body: a sample of cuts is enough
		} else {
			step = 1
		}
		var a mc.FrameCounter
		var old oldScanner
		n := a.Count(stream[:cut])
		old.scan(stream[:cut])
		st := scannerState(a.Position())
		oldSt := scannerState{Remaining: old.remaining, Length: old.length, Shift: old.shift, Broken: old.broken}
		if st != oldSt {
			t.Fatalf("cut %d: state %+v, the older scanner's %+v", cut, st, oldSt)
		}
		raw, err := json.Marshal(oldSt)
		if err != nil {
			t.Fatal(err)
		}
		var back scannerState
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		b := mc.FrameCounterAt(mc.FramePosition(back))
		if got := n + b.Count(stream[cut:]); got != want {
			t.Fatalf("cut %d: %d frames across the hand-over, want %d", cut, got, want)
		}
	}
}
