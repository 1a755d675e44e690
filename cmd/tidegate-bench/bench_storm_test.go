package main

import (
	"context"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tidegate/tidegate/benchmarks/harness"
)

// fakeBackendEnv, set to an exit status, makes the test binary a backend
// instead (TestMain): it listens on the address in fakeBackendAddrEnv and
// exits with that status on SIGTERM.
const (
	fakeBackendEnv     = "TIDEGATE_BENCH_TEST_FAKE_BACKEND"
	fakeBackendAddrEnv = "TIDEGATE_BENCH_TEST_FAKE_BACKEND_ADDR"
)

func fakeBackend(code string) {
	status, err := strconv.Atoi(code)
	if err != nil {
		os.Exit(100)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv(fakeBackendAddrEnv))
	if err != nil {
		os.Exit(101)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	<-sig
	os.Exit(status)
}

// TestStopEchoBackendFailsOnAFailedBackend: a storm's echo backend that
// stops with a non-zero status (echo-backend's, when it ran out of
// descriptors) fails the storm; one that stops cleanly does not.
func TestStopEchoBackendFailsOnAFailedBackend(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status string
		want   string // in the error; "" for none
	}{
		{"0", ""},
		{"1", "the echo backend failed"},
	} {
		addr, err := harness.FreeAddr("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		p, err := harness.Start(context.Background(), harness.ChildSpec{Name: "fake-backend", Listen: addr, Argv: []string{exe},
			Env: []string{fakeBackendEnv + "=" + tc.status, fakeBackendAddrEnv + "=" + addr}})
		if err != nil {
			t.Fatal(err)
		}
		err = stopEchoBackend(p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("exit %s: %v, want no error", tc.status, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("exit %s: %v, want an error containing %q", tc.status, err, tc.want)
		}
	}
}
