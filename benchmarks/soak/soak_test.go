//go:build linux

package soak

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// The soak runs the real proxy: these tests build the tidegate binary once.
var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildOut  []byte
)

func tidegateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tidegate-soak-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "tidegate")
		cmd := exec.Command("go", "build", "-o", binary, "github.com/tidegate/tidegate/cmd/tidegate")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building tidegate: %v\n%s", buildErr, buildOut)
	}
	return binary
}

// TestMain fails the run when the tests leave goroutines or descriptors
// behind, and removes the binary.
func TestMain(m *testing.M) {
	code := leaktest.MainFDs(m)
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// testLog logs the run's progress into the test's output.
func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: zerolog.TestWriter{T: t}, NoColor: true}).Level(zerolog.InfoLevel)
}

// runSoak runs cfg and returns its result and report.
func runSoak(t *testing.T, cfg Config) (*Result, string) {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := Markdown(res)
	if err != nil {
		t.Fatal(err)
	}
	return res, md
}

// checkPassed fails t unless res passed with every figure tested and the
// steady sessions answered, every answer right.
func checkPassed(t *testing.T, res *Result, md string) {
	t.Helper()
	if !res.OK {
		t.Fatalf("soak failed: %s\n%s", strings.Join(res.Failures, "\n"), md)
	}
	for _, tr := range res.Trends {
		if tr.Skipped != "" {
			t.Errorf("%s segment %d not tested: %s", tr.Figure, tr.Segment, tr.Skipped)
		}
	}
	if res.Steady.Replies == 0 || res.Steady.Wrong != 0 {
		t.Errorf("steady sessions: %+v", res.Steady)
	}
}

// checkSawLeak fails t unless res failed on the descriptors rising.
func checkSawLeak(t *testing.T, res *Result, md string) {
	t.Helper()
	found := false
	for _, f := range res.Failures {
		found = found || strings.HasPrefix(f, FigureFDs+" rose")
	}
	if res.OK || !found {
		t.Fatalf("a leak of %d churn sessions: failures %q, want the descriptors rising\n%s", res.Short[kindChurn].Done, res.Failures, md)
	}
}

// TestSoakShort is the suite's soak: 300 sessions for a minute, sampled
// every 5 s, with three reloads, two backend restarts and a live upgrade
// at 25 s: both processes' segments (five samples each after a 5-s
// warm-up) are tested for trends, and every byte of every session is
// checked.
func TestSoakShort(t *testing.T) {
	cfg := Config{Executable: tidegateBinary(t), Duration: 60 * time.Second, Interval: 5 * time.Second, Warmup: 5 * time.Second,
		Sessions: 300, Hold: 2 * time.Second, ReloadEvery: 15 * time.Second, RestartEvery: 20 * time.Second, UpgradeAt: 25 * time.Second,
		Dir: t.TempDir(), Log: testLog(t)}
	res, md := runSoak(t, cfg)
	checkPassed(t, res, md)
	kinds := map[string]int{}
	for _, e := range res.Events {
		kinds[e.Kind]++
	}
	if kinds["reload"] < 1 || kinds["backend restart"] < 1 || kinds["live upgrade"] != 1 {
		t.Errorf("events %v: want a reload, a backend restart and one live upgrade\n%s", kinds, md)
	}
	for _, k := range shortKinds {
		if res.Short[k].Done == 0 {
			t.Errorf("no %s session went through: %+v", k, res.Short[k])
		}
	}
	t.Logf("\n%s", md)
}

// TestSoakSeesALeak: churn sessions that are never closed (the leak knob)
// hold two descriptors each in the proxy, and the soak fails on it.
func TestSoakSeesALeak(t *testing.T) {
	cfg := Config{Executable: tidegateBinary(t), Duration: 25 * time.Second, Interval: 2 * time.Second, Warmup: 4 * time.Second,
		Sessions: 60, Churn: 20, Hold: time.Second, ReloadEvery: time.Hour, RestartEvery: time.Hour, UpgradeAt: -1,
		Dir: t.TempDir(), Log: testLog(t), leak: true}
	res, md := runSoak(t, cfg)
	checkSawLeak(t, res, md)
}

// shortServerSoak is the suite's soak of serve or push: 200 sessions for
// 24 s, sampled every 3 s after a 6-s warm-up, every byte checked. The
// soaks of serve and push run in parallel, so that the package stays well
// within the suite's 10 minutes under -race on a loaded machine.
func shortServerSoak(t *testing.T, server string) *Result {
	t.Parallel()
	cfg := Config{Executable: tidegateBinary(t), Server: server, Duration: 24 * time.Second, Interval: 3 * time.Second, Warmup: 6 * time.Second,
		Sessions: 200, Hold: 2 * time.Second, Dir: t.TempDir(), Log: testLog(t)}
	res, md := runSoak(t, cfg)
	checkPassed(t, res, md)
	t.Logf("\n%s", md)
	return res
}

// TestSoakServeShort: serve under steady pipelined clients (sha256 per
// connection), churn, stalled readers and half-closes.
func TestSoakServeShort(t *testing.T) {
	res := shortServerSoak(t, ServerServe)
	for _, k := range shortKinds {
		if res.Short[k].Done == 0 {
			t.Errorf("no %s session went through: %+v", k, res.Short[k])
		}
	}
}

// TestSoakPushShort: push under a publisher, steady subscribers, churn and
// slow subscribers.
func TestSoakPushShort(t *testing.T) {
	res := shortServerSoak(t, ServerPush)
	for _, k := range []string{kindChurn, kindStalled} {
		if res.Short[k].Done == 0 {
			t.Errorf("no %s subscriber went through: %+v", k, res.Short[k])
		}
	}
}

// TestSoakServeSeesALeak: serve's churn sessions never closed (the leak
// knob) hold a descriptor each, and the serve soak fails on it.
func TestSoakServeSeesALeak(t *testing.T) {
	t.Parallel()
	cfg := Config{Executable: tidegateBinary(t), Server: ServerServe, Duration: 20 * time.Second, Interval: 2 * time.Second, Warmup: 4 * time.Second,
		Sessions: 60, Churn: 20, Hold: time.Second, Dir: t.TempDir(), Log: testLog(t), leak: true}
	res, md := runSoak(t, cfg)
	checkSawLeak(t, res, md)
}
