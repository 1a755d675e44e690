package budgetload

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidegate/tidegate/internal/testkit/standin"
)

// TestMain lets the test binary stand in for `tidegate proxy` when Run
// starts it as the proxy under test (EXE proxy --config F).
func TestMain(m *testing.M) {
	if code, ok := standin.Run(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestPlateauEndsAfterStableFor(t *testing.T) {
	p := Plateau{StableFor: time.Second, MinStep: 10, Frac: 0.01}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for i, s := range []struct {
		at   int
		v    int64
		done bool
	}{
		{0, 100, false}, {500, 200, false}, {1000, 205, false}, // 205 is within the step of 200
		{1400, 209, false}, {1500, 300, false}, {2400, 290, false}, {2500, 305, true},
	} {
		if got := p.Add(ms(s.at), s.v); got != s.done {
			t.Errorf("sample %d (%d at %dms): stable %v, want %v", i, s.v, s.at, got, s.done)
		}
	}
	if p.Peak() != 305 {
		t.Errorf("peak %d, want 305", p.Peak())
	}
}

func TestParseAndFormatSize(t *testing.T) {
	for in, want := range map[string]int64{"1000": 1000, "16KiB": 16 << 10, "256MiB": 256 << 20, "1GiB": 1 << 30, " 64 G": 64 << 30, "8M": 8 << 20} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1TiB", "x", "99999999999GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
	for n, want := range map[int64]string{256 << 20: "256MiB", 1 << 30: "1GiB", 64 << 30: "64GiB", 1000: "1000", 3 << 10: "3KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	if got, err := ParseSizes("256MiB, 1GiB,,64GiB"); err != nil || len(got) != 3 || got[2] != 64<<30 {
		t.Errorf("ParseSizes: %v, %v", got, err)
	}
}

func TestVerdictAndSummary(t *testing.T) {
	ok := Trial{Budget: 256 << 20, Sessions: 4, Verified: 4, BaselineRSS: 20 << 20, PeakRSS: 300 << 20, Drain: time.Second}
	over := ok
	over.PeakRSS = 400 << 20 // over 256 + 64 MiB: a finding, not a failure
	bad := ok
	bad.Verified, bad.ErrorCount, bad.Errors = 3, 1, []string{"session 2: SHA-256 differs"}
	bad.PeakRSS = 5000 << 20 // a trial that lost a byte: its figures must not count
	broken := Trial{Budget: 1 << 30, Sessions: 4, Err: "proxy did not start"}
	if f := ok.Failures(); len(f) != 0 || !ok.WithinBound() {
		t.Errorf("ok trial: failures %v, within %v", f, ok.WithinBound())
	}
	if f := over.Failures(); len(f) != 0 || over.WithinBound() {
		t.Errorf("over trial: failures %v, within %v", f, over.WithinBound())
	}
	if f := bad.Failures(); len(f) != 2 {
		t.Errorf("bad trial: failures %v, want 2", f)
	}
	if f := broken.Failures(); len(f) != 2 {
		t.Errorf("broken trial: failures %v, want 2 (the error and 0 of 4 verified)", f)
	}
	s := Summarize([]Trial{ok, broken, over, bad})
	if len(s) != 2 || s[0].Budget != 256<<20 || s[1].Budget != 1<<30 {
		t.Fatalf("summaries %+v: want 256MiB then 1GiB", s)
	}
	if s[0].Trials != 3 || s[0].Within != 1 || s[0].Failed != 1 || s[0].Verified != 11 || s[0].Sessions != 12 {
		t.Errorf("256MiB summary %+v", s[0])
	}
	if s[0].Peak.Median != 350 || s[0].Peak.N != 2 || s[0].Peak.Max != 400 || s[0].Growth.Min != 280 {
		t.Errorf("256MiB peak %+v growth %+v", s[0].Peak, s[0].Growth)
	}
	if s[1].Failed != 1 || s[1].Peak.N != 0 {
		t.Errorf("1GiB summary %+v", s[1])
	}
	if err := Failed([]Trial{ok, over}); err != nil {
		t.Errorf("Failed: %v", err)
	}
	if err := Failed([]Trial{ok, bad}); err == nil || !strings.Contains(err.Error(), "trial 2 (budget 256MiB)") {
		t.Errorf("Failed: %v", err)
	}
	var b strings.Builder
	if err := WriteTable(&b, []Trial{ok, over}); err != nil || !strings.Contains(b.String(), "| 256MiB | 320 MiB | 20 [20–20] | 350 [300–400] |") {
		t.Errorf("table %v:\n%s", err, b.String())
	}
}

func TestVerifyCatchesEachMismatch(t *testing.T) {
	errs := &errList{}
	b := &backend{got: map[uint64]stream{}}
	sent := make([]stream, 5)
	for i := range sent {
		sent[i] = stream{n: 100, sum: [32]byte{byte(i)}}
		b.got[uint64(i)] = sent[i]
	}
	g := b.got[1]
	g.n = 99
	b.got[1] = g
	g = b.got[2]
	g.sum[1] = 1
	b.got[2] = g
	delete(b.got, 3)
	sent[4].err = fmt.Errorf("client: session 4 writing: broken pipe")
	if n := verify(sent, b, errs); n != 1 {
		t.Errorf("verified %d, want 1", n)
	}
	if errs.n != 4 {
		t.Errorf("%d errors %q, want 4", errs.n, errs.first)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{{Budget: 1 << 19}, {Budget: 1 << 20, Sessions: -1}, {Budget: 1 << 20, HeapProfile: "x"}} {
		if err := c.defaults(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestFloodThroughProxy floods 20 sessions × 1 MiB through a proxy with
// the smallest budget and checks every byte arrives.
func TestFloodThroughProxy(t *testing.T) {
	tr := Run(context.Background(), Config{Budget: 1 << 20, Sessions: 20, Bytes: 1 << 20, Loops: 2,
		Sample: 50 * time.Millisecond, StableFor: 400 * time.Millisecond, FloodTimeout: 10 * time.Second, DrainTimeout: 30 * time.Second})
	if f := tr.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if tr.Verified != 20 || tr.BaselineRSS <= 0 || tr.PeakRSS < tr.BaselineRSS || tr.SentAtPlateau <= 0 {
		t.Errorf("trial %+v", tr)
	}
}
