package main

import (
	"io"
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/golden"
)

// captureStdout returns what print wrote to standard output.
func captureStdout(t *testing.T, print func()) []byte {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	print()
	os.Stdout = saved
	w.Close()
	return <-done
}

// TestHandshakeReportGolden renders two targets' storms over two repeats,
// one of which errored, as bench handshake prints them.
func TestHandshakeReportGolden(t *testing.T) {
	var trials [4]handshakeTrial
	for i := range trials {
		golden.Fill(&trials[i])
		trials[i].Target, trials[i].Repeat, trials[i].Error = []string{"tidegate", "haproxy"}[i%2], i/2, ""
		trials[i].AcceptedPerSec += float64(100 * i)
	}
	trials[3].Error = "dial: connection refused"
	trials[1].ProxyCPUUsPerLogin = 0
	sums := summarizeHandshakes([]string{"tidegate", "haproxy"}, trials[:])
	sums[0].SyscallsPerLogin = 41.5
	out := captureStdout(t, func() { printHandshakes(trials[:], sums) })
	golden.Check(t, "handshake.md", out)
}
