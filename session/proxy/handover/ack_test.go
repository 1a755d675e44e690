package handover

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/tidegate/tidegate/reactor/handoverwire"
)

// TestPendingSettlesEachOnce: whatever order a session's send, its
// acknowledgement and the end of the acknowledgements come in, it is
// settled once, as the first word about it says; and its descriptors are
// never given up while its send runs.
func TestPendingSettlesEachOnce(t *testing.T) {
	type step func(p *Pending[string], place int64) (string, Verdict)
	send := func(ok bool) step {
		return func(p *Pending[string], place int64) (string, Verdict) { return p.sent(place, ok) }
	}
	ack := func(adopted bool) step {
		return func(p *Pending[string], place int64) (string, Verdict) { return p.acked(place, adopted) }
	}
	end := func(v Verdict) step {
		return func(p *Pending[string], _ int64) (string, Verdict) {
			if items := p.end(v); len(items) == 1 {
				return items[0], v
			}
			return "", Waiting
		}
	}
	for _, tc := range []struct {
		name  string
		hold  bool
		steps []step
		want  []Verdict // what each step settles
	}{
		{"sent, then adopted", true, []step{send(true), ack(true)}, []Verdict{Waiting, Adopted}},
		{"sent, then refused", true, []step{send(true), ack(false)}, []Verdict{Waiting, TakeBack}},
		{"adopted while sending", true, []step{ack(true), send(true)}, []Verdict{Waiting, Adopted}},
		{"refused while sending", true, []step{ack(false), send(true)}, []Verdict{Waiting, TakeBack}},
		{"send failed", true, []step{send(false), ack(true)}, []Verdict{TakeBack, Waiting}},
		{"sent, then the new process ended", true, []step{send(true), end(TakeBack)}, []Verdict{Waiting, TakeBack}},
		{"ended while sending", true, []step{end(TakeBack), send(true)}, []Verdict{Waiting, TakeBack}},
		{"let go while sending", true, []step{end(Adopted), send(true)}, []Verdict{Waiting, Adopted}},
		{"acknowledged, then ended", true, []step{send(true), ack(true), end(TakeBack)}, []Verdict{Waiting, Adopted, Waiting}},
		{"without hold, sent is adopted", false, []step{send(true), ack(false), end(TakeBack)}, []Verdict{Adopted, Waiting, Waiting}},
		{"without hold, a failed send is taken back", false, []step{send(false)}, []Verdict{TakeBack}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New[string](tc.hold)
			place := p.sending("session")
			for i, s := range tc.steps {
				item, v := s(p, place)
				if v != tc.want[i] {
					t.Fatalf("step %d settled %v, want %v", i, v, tc.want[i])
				}
				if v != Waiting && item != "session" {
					t.Fatalf("step %d settled %q, want the session", i, item)
				}
			}
		})
	}
}

// TestEndVerdict: only the new process's end of the socket closing brings
// the sessions still waiting back.
func TestEndVerdict(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Verdict
	}{
		{io.EOF, TakeBack},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, TakeBack},
		{net.ErrClosed, Adopted},
		{errors.New("handoverwire: handover message of 4294967295 bytes is over the bound"), Adopted},
	} {
		if got := EndVerdict(tc.err); got != tc.want {
			t.Errorf("EndVerdict(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestAckerToAnOldProcessThatDoesNotRead: acknowledgements to an old
// process that never reads them fill the socket; the take-over waits at
// most ackWriteWait once, then writes no more, rather than for good.
func TestAckerToAnOldProcessThatDoesNotRead(t *testing.T) {
	ackWriteWait = 50 * time.Millisecond
	t.Cleanup(func() { ackWriteWait = 10 * time.Second })
	hc, other, err := handoverwire.NewPair()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	defer other.Close() // open and never read: an old process that does not read acknowledgements
	a := NewAcker(hc)
	start := time.Now()
	for place := range int64(100_000) { // far more than a socket buffer holds
		a.Ack(place, true)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("100,000 acknowledgements to a process that does not read took %s", took)
	}
	if !a.failed {
		t.Fatal("the acknowledgements all fitted in the socket; the test did not fill it")
	}
}
