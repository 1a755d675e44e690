package mcload

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tidegate/tidegate/benchmarks/peers"
	"github.com/tidegate/tidegate/internal/testkit/testproxy"
	"github.com/tidegate/tidegate/reactor"
	"github.com/tidegate/tidegate/session/mcbackend"
)

func startProxyAndBackend(t *testing.T, maxSessions int) string {
	t.Helper()
	be, err := mcbackend.New(mcbackend.Config{Reactor: reactor.Config{Addrs: []string{"tcp://127.0.0.1:0"}, Loops: 1, Logger: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Start(); err != nil {
		t.Fatal(err)
	}
	ba, _ := be.Addr(0)
	yaml := peers.TidegateConfig(peers.RelayConfig{Listen: "127.0.0.1:0", Backend: ba.String(), Cores: 1, Sessions: 1}, false)
	yaml = strings.Replace(yaml, "max_sessions: 257", "max_sessions: "+itoa(maxSessions), 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		be.Stop(ctx)
	})
	return testproxy.Start(t, yaml)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestHandshakeStormAllAccepted(t *testing.T) {
	addr := startProxyAndBackend(t, 1000)
	res, err := Handshake(context.Background(), HandshakeConfig{Addr: addr, Count: 60, Parallel: 6})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 60 || res.Failed != 0 || res.P99Ms <= 0 || res.P50Ms > res.P99Ms {
		t.Fatalf("result %+v", res)
	}
}

func TestHandshakeCountsRefusalsByReason(t *testing.T) {
	// A server that refuses every login with a Disconnect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			msg := `{"text":"Server is full"}`
			c.Write(append([]byte{byte(2 + len(msg)), 0x00, byte(len(msg))}, msg...))
			c.Close()
		}
	}()
	res, err := Handshake(context.Background(), HandshakeConfig{Addr: ln.Addr().String(), Count: 10, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 0 || res.Failed != 10 || res.Rejections["disconnect: Server is full"] != 10 {
		t.Fatalf("result %+v", res)
	}
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	res, _ = Handshake(context.Background(), HandshakeConfig{Addr: deadAddr, Count: 3, Parallel: 1})
	if res.Rejections["connect: refused"] != 3 {
		t.Fatalf("refused connects: %+v", res.Rejections)
	}
}

func TestWorkerHoldsAndChecksSessions(t *testing.T) {
	addr := startProxyAndBackend(t, 1000)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- RunWorker(context.Background(), WorkerConfig{Addr: addr, Count: 20, Parallel: 4,
			Sources: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2")}}, inR, outW)
		outW.Close()
	}()
	dec := json.NewDecoder(outR)
	var ready, checked WorkerReport
	if err := dec.Decode(&ready); err != nil {
		t.Fatal(err)
	}
	if ready.Phase != "ready" || ready.OK != 20 || ready.Failed != 0 {
		t.Fatalf("ready %+v", ready)
	}
	io.WriteString(inW, "check\n")
	if err := dec.Decode(&checked); err != nil {
		t.Fatal(err)
	}
	if checked.Phase != "checked" || checked.OK != 20 {
		t.Fatalf("checked %+v", checked)
	}
	inW.Close()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestWorkerReportsRefusedSessions(t *testing.T) {
	addr := startProxyAndBackend(t, 5) // max_sessions 5: the rest are refused
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- RunWorker(context.Background(), WorkerConfig{Addr: addr, Count: 8, Parallel: 1}, inR, outW)
		outW.Close()
	}()
	var ready WorkerReport
	if err := json.NewDecoder(outR).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	if ready.OK != 5 || ready.Failed != 3 {
		t.Fatalf("ready %+v, want 5 sessions and 3 refused", ready)
	}
	inW.Close()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestBeforeProfilePath(t *testing.T) {
	for in, want := range map[string]string{
		"heap.pb.gz":         "heap-before.pb.gz",
		"/tmp/x/after.pprof": "/tmp/x/after-before.pprof",
		"/tmp/x.d/heap":      "/tmp/x.d/heap-before",
		".hidden":            ".hidden-before",
	} {
		if got := BeforeProfilePath(in); got != want {
			t.Errorf("BeforeProfilePath(%q) = %q, want %q", in, got, want)
		}
	}
}
